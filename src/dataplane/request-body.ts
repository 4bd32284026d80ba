// A model request's body, read once: within the body-read deadline, under the size limit (serve.ts),
// then bounded in nesting before JSON.parse sees it. Each refusal is an IR error the caller's protocol
// encodes.
import { jsonTooDeep, TOO_DEEP_MESSAGE } from "../http/json-depth.ts";
import { BodyTooLargeError } from "../http/serve.ts";
import { irError, type IrError } from "../ir/index.ts";

export type Refusal = { ok: false; error: IrError };
export type BodyRead = { ok: true; body: Record<string, unknown> } | Refusal;

const notAnObject = (): Refusal => ({ ok: false, error: irError("invalid_request", "The request body must be a JSON object.") });
const tooDeep: Refusal = { ok: false, error: irError("invalid_request", TOO_DEEP_MESSAGE) };
const unreadable = (error: unknown): Refusal => (error instanceof BodyTooLargeError ? { ok: false, error: irError("request_too_large", error.message) } : notAnObject());
const asObject = (body: unknown): BodyRead => (typeof body === "object" && body !== null && !Array.isArray(body) ? { ok: true, body: body as Record<string, unknown> } : notAnObject());
const decoder = new TextDecoder();

/** Raised by the body-read deadline; the answer is 408 and the connection is closed. */
class BodyReadTimeout extends Error {}

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
 * The whole body, within `limits.body_read_timeout_secs` (give or take one sweep): a body that never
 * finishes (headers and one byte) held its concurrency slot for as long as the client liked. On the
 * deadline the read is given up (the connection is closed with the 408), so the slot comes back.
 */
function readBytes(request: Request, timeoutMs: number): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    const read: PendingRead = { until: Date.now() + timeoutMs, reject };
    pending.add(read);
    sweeper ??= setInterval(sweep, SWEEP_MS);
    request.bytes().then(
      (bytes) => {
        pending.delete(read);
        resolve(bytes);
      },
      (error: unknown) => {
        // A read given up at its deadline fails later, when its connection closes: already answered.
        pending.delete(read);
        reject(error);
      },
    );
  });
}

type BytesRead = { ok: true; bytes: Uint8Array } | Refusal;

/** The body's bytes, or the caller error to answer with (over the size limit, or too slow). */
export async function readBody(request: Request, timeoutMs: number): Promise<BytesRead> {
  try {
    return { ok: true, bytes: await readBytes(request, timeoutMs) };
  } catch (error) {
    if (error instanceof BodyReadTimeout) return { ok: false, error: irError("timeout", `The request body was not received within ${timeoutMs / 1000} s (limits.body_read_timeout_secs).`, { status: 408 }) };
    return unreadable(error);
  }
}

/** The bytes as a JSON object, or the 400 to answer with; their nesting is bounded before JSON.parse sees them. */
export function parseBody(bytes: Uint8Array): BodyRead {
  if (jsonTooDeep(bytes)) return tooDeep;
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(bytes));
  } catch {
    return notAnObject();
  }
  return asObject(parsed);
}
