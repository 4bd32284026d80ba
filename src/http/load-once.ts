// A piece loaded on first use (a router behind import()): kept once it has loaded, forgotten when loading
// failed, so the next caller tries again instead of meeting the same rejection for the life of the process.
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
}
