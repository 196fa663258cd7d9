/**
 * `make`, run on the first ask and its result kept for every later one; a `make` that fails is run
 * again on the next ask (a credential file fixed, a library's endpoint back). The credential kinds
 * make their libraries' clients this way, on a host's first call rather than at start.
 */
export function madeOnce<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | null = null;
  return () =>
    (made ??= make().catch((error: unknown) => {
      made = null;
      throw error;
    }));
}
