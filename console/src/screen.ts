import { h, notice } from './dom.js';

/** A screen: draws itself into the container and again every `everyMs`; the returned function stops it. */
export interface Screen {
  title: string;
  everyMs: number;
  /** Controls that stay while the content is redrawn (date fields); optional. */
  toolbar?: (redraw: () => void) => HTMLElement;
  draw: () => Promise<HTMLElement>;
}

export function mount(screen: Screen, container: HTMLElement): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const content = h('div', { 'aria-live': 'polite' });
  const redraw = async () => {
    clearTimeout(timer);
    try {
      const drawn = await screen.draw();
      if (!stopped) content.replaceChildren(drawn);
    } catch (error) {
      if (!stopped) content.replaceChildren(notice((error as Error).message, 'error'));
    }
    if (!stopped) timer = setTimeout(() => void redraw(), screen.everyMs);
  };
  container.replaceChildren(h('h1', {}, screen.title), ...(screen.toolbar ? [screen.toolbar(() => void redraw())] : []), content);
  void redraw();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
