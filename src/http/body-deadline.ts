// A request body read within a deadline, on either plane: a body that never finishes (headers and one
// byte) otherwise held its connection, and on the data plane its concurrency slot, for as long as the
// client liked (limits.body_read_timeout_secs).

/** Raised when the deadline passes first; the answer is 408 and the connection is closed. */
export class BodyReadTimeout extends Error {}

/** The whole body, or BodyReadTimeout; the read is given up on the deadline (its connection then closes). */
export async function readWithin(request: Request, timeoutMs: number): Promise<Uint8Array> {
  const read = request.bytes();
  let timer: Timer | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BodyReadTimeout()), timeoutMs);
  });
  try {
    return await Promise.race([read, deadline]);
  } finally {
    clearTimeout(timer);
    read.catch(() => {}); // a read abandoned at the deadline fails later, when its connection closes
  }
}

export const bodyReadTimeoutMessage = (timeoutMs: number) => `The request body was not received within ${timeoutMs / 1000} s (limits.body_read_timeout_secs).`;
