// A request body read within a deadline, on either plane: a body that never finishes (headers and one
// byte) otherwise held its connection, and on the data plane its concurrency slot, for as long as the
// client liked (limits.body_read_timeout_secs).

/** Raised when the deadline passes first; the answer is 408 and the connection is closed. */
export class BodyReadTimeout extends Error {}

interface PendingRead {
  readonly until: number;
  readonly reject: (error: BodyReadTimeout) => void;
}

/**
 * Reads still waiting for their bytes. One sweep every SWEEP_MS gives up those past their deadline,
 * instead of a timer per request (a setTimeout, its clearTimeout and a Promise.race cost about 1 µs a
 * request, on every request, for a deadline almost none reach).
 */
const pending = new Set<PendingRead>();
const SWEEP_MS = 100;
let sweeper: Timer | undefined;

function sweep(): void {
  const now = Date.now();
  for (const read of pending) {
    if (read.until > now) continue;
    pending.delete(read);
    read.reject(new BodyReadTimeout());
  }
  if (pending.size === 0) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

/**
 * The whole body, or BodyReadTimeout once `timeoutMs` has passed (give or take one sweep). The read is
 * given up on the deadline; it fails later, when its connection closes, and that is already answered.
 */
export function readWithin(request: Request, timeoutMs: number): Promise<Uint8Array>;
export function readWithin(request: Request, timeoutMs: number, as: "text"): Promise<string>;
export function readWithin(request: Request, timeoutMs: number, as?: "text"): Promise<Uint8Array | string> {
  return new Promise<Uint8Array | string>((resolve, reject) => {
    const read: PendingRead = { until: Date.now() + timeoutMs, reject };
    pending.add(read);
    sweeper ??= setInterval(sweep, SWEEP_MS);
    (as === "text" ? request.text() : request.bytes()).then(
      (bytes) => {
        pending.delete(read);
        resolve(bytes);
      },
      (error: unknown) => {
        pending.delete(read);
        reject(error);
      },
    );
  });
}

export const bodyReadTimeoutMessage = (timeoutMs: number) => `The request body was not received within ${timeoutMs / 1000} s (limits.body_read_timeout_secs).`;
