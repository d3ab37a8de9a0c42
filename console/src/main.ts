import { completeSignIn, currentUser, signIn, signOut } from './auth.js';
import { h, notice } from './dom.js';
import { mount, type Screen } from './screen.js';
import { deliveriesScreen } from './screens/deliveries.js';
import { devicesScreen } from './screens/devices.js';
import { erpScreen } from './screens/erp.js';
import { reviewsScreen } from './screens/reviews.js';
import { toursScreen } from './screens/tours.js';

const screens: Record<string, () => Screen> = {
  '#pruefungen': reviewsScreen,
  '#touren': toursScreen,
  '#zustellungen': deliveriesScreen,
  '#erp': erpScreen,
  '#geraete': devicesScreen,
};

const main = document.getElementById('main')!;
const signOutButton = document.getElementById('sign-out')!;
let stop = () => undefined as void;

function show() {
  stop();
  const hash = screens[location.hash] ? location.hash : '#pruefungen';
  for (const link of Array.from(document.querySelectorAll('nav a'))) {
    if (link.getAttribute('href') === hash) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const screen = screens[hash]();
  document.title = `${screen.title} – Tourline Büro`;
  stop = mount(screen, main);
}

function signedOut(text: string) {
  stop();
  document.getElementById('user')!.textContent = '';
  signOutButton.hidden = true;
  main.replaceChildren(
    h('h1', {}, 'Tourline Büro'),
    notice(text),
    h('p', {}, h('button', { type: 'button', onclick: () => void signIn('#pruefungen') }, 'Anmelden')),
  );
}

async function start() {
  try {
    if (!(await completeSignIn())) return void (await signIn());
  } catch (error) {
    return signedOut((error as Error).message);
  }
  document.getElementById('user')!.textContent = `Angemeldet: ${currentUser()}`;
  signOutButton.hidden = false;
  signOutButton.addEventListener('click', () => {
    signOut();
    signedOut('Abgemeldet.');
  });
  window.addEventListener('hashchange', show);
  show();
}

void start();
