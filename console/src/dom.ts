// Elements built from text only (never HTML strings): nothing an API answer holds can become markup.
type Child = Node | string | number | null | undefined | false;
type Attributes = Record<string, string | number | boolean | ((event: Event) => void) | undefined>;

export function h(tag: string, attributes: Attributes = {}, ...children: (Child | Child[])[]): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === 'object' ? child : String(child));
  }
  return element;
}

const dateTime = new Intl.DateTimeFormat('de-DE', { dateStyle: 'short', timeStyle: 'medium', timeZone: 'Europe/Berlin' });
export const when = (iso: string | null | undefined) => (iso ? dateTime.format(new Date(iso)) : '–');
export const euro = (cents: number | null | undefined) =>
  cents === null || cents === undefined ? '–' : (cents / 100).toLocaleString('de-DE', { style: 'currency', currency: 'EUR' });

/** Today as `YYYY-MM-DD` in Berlin, the office's day. */
export function berlinToday(): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Berlin', year: 'numeric', month: '2-digit', day: '2-digit' }).format(
    new Date(),
  );
}

export const table = (head: string[], rows: Child[][], label: string) =>
  h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { 'aria-label': label },
      h('thead', {}, h('tr', {}, ...head.map((cell) => h('th', { scope: 'col' }, cell)))),
      h('tbody', {}, ...rows.map((row) => h('tr', {}, ...row.map((cell) => h('td', {}, cell))))),
    ),
  );

export const notice = (text: string, kind: 'info' | 'error' = 'info') =>
  h('p', { class: `notice ${kind === 'error' ? 'error' : ''}`, role: kind === 'error' ? 'alert' : 'status' }, text);
