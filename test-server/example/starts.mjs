/* global console, performance, setTimeout */
// Start times in one process, as the package README gives them: `node starts.mjs` in a project
// that installed the package. Ten starts with a test of a second in between (the next database
// loads meanwhile), then ten back to back, then five side by side.
import { startTestServer } from '@tourline/test-server';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function timedStart() {
  const started = performance.now();
  const tourline = await startTestServer();
  return { tourline, ms: Math.round(performance.now() - started) };
}

const withTests = [];
for (let i = 0; i < 10; i++) {
  const { tourline, ms } = await timedStart();
  withTests.push(ms);
  await sleep(1000);
  await tourline.close();
}
const backToBack = [];
for (let i = 0; i < 10; i++) {
  const { tourline, ms } = await timedStart();
  backToBack.push(ms);
  await tourline.close();
}
const started = performance.now();
const five = await Promise.all(Array.from({ length: 5 }, () => startTestServer()));
const sideBySide = Math.round(performance.now() - started);
await Promise.all(five.map((tourline) => tourline.close()));
console.log(JSON.stringify({ withTests, backToBack, sideBySide }));
