/** A single process's admission answers at once; a promise here means it went to a store it should not have. */
export function settled<T>(result: T | Promise<T>): T {
  if (result instanceof Promise) throw new Error("expected an answer at once, got a promise");
  return result;
}
