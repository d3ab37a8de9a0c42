import chromium from '@sparticuz/chromium';
import puppeteer from 'puppeteer-core';

/** Headless Chromium from the @sparticuz/chromium package, profile in `userDataDir`. */
export async function launchChromium(userDataDir: string) {
  return puppeteer.launch({
    executablePath: await chromium.executablePath(),
    headless: true,
    // The machine may have no network and run as root: nothing reaches out, no sandbox.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${userDataDir}`,
    ],
  });
}
