/**
 * Work left running that stopping must wait for: a completion's ERP write-back after the
 * request's answer (so that a write-back the ERP may already have taken is also recorded before
 * the database goes), a scheduled import.
 */
export interface BackgroundWork {
  /** Keeps `work` until it settles and hands it back; it handles its own errors. */
  add<T>(work: Promise<T>): Promise<T>;
  /** Resolves once everything added so far has settled. */
  settled(): Promise<void>;
}

export function createBackgroundWork(): BackgroundWork {
  const running = new Set<Promise<unknown>>();
  return {
    add(work) {
      running.add(work);
      const remove = () => {
        running.delete(work);
      };
      work.then(remove, remove);
      return work;
    },
    async settled() {
      await Promise.allSettled(running);
    },
  };
}
