import { createRoot } from 'react-dom/client';
import { App } from './App';
import './styles.css';

// The app shell's cache: the app opens without network once it was opened online.
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.register('./sw.js').catch((error) => console.warn('service worker not registered', error));
}

createRoot(document.getElementById('root')!).render(<App />);
