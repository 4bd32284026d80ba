// Waiting for something another process or a timer brings about (an upstream seeing a request, a row
// reaching the store), polled, failing with a clear message after a bound rather than hanging the suite.

/** Resolves once `what` holds, polling every `everyMs`; throws after `timeoutMs`. */
export async function until(what: () => boolean | Promise<boolean>, timeoutMs = 4_000, everyMs = 10): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await what())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what.toString().slice(0, 120)}`);
    await Bun.sleep(everyMs);
  }
}
