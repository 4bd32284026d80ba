// Reading an upstream answer whole (a non-stream answer, an error body, a probe's answer) within bounds:
// `limits.max_upstream_response_bytes`, counted after decompression, and the request's deadline. Streams
// are never read whole; they are relayed as they come.
import type * as Zlib from "node:zlib";
import { CLIENT_GONE, isUpstreamTimeout, transportCause, type UpstreamFault } from "./upstream.ts";

export interface AnswerBounds {
  /** `limits.max_upstream_response_bytes`: the most bytes read, before and after decompression. */
  readonly maxBytes: number;
  /** The request's deadline (`failover.timeout_secs`) on `now`'s clock; Infinity = none. */
  readonly deadline: number;
  readonly now: () => number;
  readonly clientSignal: AbortSignal;
}

export type AnswerRead = { readonly ok: true; readonly bytes: Uint8Array } | UpstreamFault;

/**
 * The answer's body as bytes, read piece by piece so that neither a huge answer nor a trickling one holds
 * the request: past `maxBytes` or the deadline the read stops and the upstream connection is dropped. The
 * deadline is looked at as each piece arrives (no timer per request); silence between pieces is already
 * bounded by the socket idle timer (upstream_request_timeout_secs). `encoded`: the body is still in its
 * Content-Encoding (callUpstream's `whole`), and is inflated here, to at most `maxBytes`.
 */
export function readAnswer(response: Response, bounds: AnswerBounds, encoded: boolean): AnswerRead | Promise<AnswerRead> {
  // A declared size over the cap is refused before a byte is read.
  const declared = Number(response.headers.get("content-length") ?? 0);
  if (declared > bounds.maxBytes) return drop(response, tooLarge(bounds.maxBytes));
  const coding = encoded ? response.headers.get("content-encoding") : null;
  const plain = coding === null || coding === "" || coding === "identity";
  // The common answer: a declared size within the cap, no encoding, and already here when the headers
  // were (Bun.peek sees the read settled at once): taken as it is, without a promise to wait for. Its
  // `body` is never touched (making the ReadableStream and a reader cost about 2 µs an answer). Anything
  // else, including a declared body still arriving, is read piece by piece.
  if (plain && declared > 0) {
    const whole = response.bytes();
    if (Bun.peek.status(whole) === "fulfilled") return { ok: true, bytes: Bun.peek(whole) as Uint8Array };
    return settleBounded(whole, bounds);
  }
  return readPieces(response, bounds, plain ? undefined : coding!.trim().toLowerCase());
}

/** The answer piece by piece, stopping at the cap or the deadline; `coding`: its Content-Encoding, if any. */
async function readPieces(response: Response, bounds: AnswerBounds, coding: string | undefined): Promise<AnswerRead> {
  const body = response.body;
  if (!body) return { ok: true, bytes: EMPTY };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > bounds.maxBytes) return drop(reader, tooLarge(bounds.maxBytes));
      chunks.push(value);
      if (bounds.now() > bounds.deadline) return drop(reader, PAST_DEADLINE);
    }
  } catch (error) {
    return readFailure(error, bounds);
  }
  const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  return coding === undefined ? { ok: true, bytes } : inflate(bytes, coding, bounds.maxBytes);
}

/**
 * A declared body (within the cap, so the read cannot outgrow it) still arriving: awaited against the
 * request's deadline. A read overtaken by the deadline is left to finish or to meet the socket's idle
 * timer (upstream_request_timeout_secs); its memory is bounded by the cap.
 */
async function settleBounded(whole: Promise<Uint8Array>, bounds: AnswerBounds): Promise<AnswerRead> {
  const wait = bounds.deadline - bounds.now();
  if (wait <= 0) {
    whole.catch(() => {});
    return PAST_DEADLINE;
  }
  let timer: Timer | undefined;
  const late = new Promise<typeof PAST_DEADLINE>((resolve) => {
    timer = setTimeout(() => resolve(PAST_DEADLINE), Math.min(wait, MAX_TIMER_MS));
  });
  try {
    const first = await Promise.race([whole, late]);
    if (first instanceof Uint8Array) return { ok: true, bytes: first };
    whole.catch(() => {});
    return first;
  } catch (error) {
    return readFailure(error, bounds);
  } finally {
    clearTimeout(timer);
  }
}

/** Why a read of the answer failed, in the gateway's own words. */
function readFailure(error: unknown, bounds: AnswerBounds): UpstreamFault {
  if (bounds.clientSignal.aborted) return CLIENT_GONE;
  if (isUpstreamTimeout(error)) return { ok: false, reason: "timeout", message: "the upstream stopped answering" };
  return { ok: false, reason: "cut_short", message: `the upstream's answer was cut short: ${transportCause(error)}` };
}

/** setTimeout's own bound (a larger delay fires at once); a deadline past it is as good as none. */
const MAX_TIMER_MS = 2 ** 31 - 1;

type Limit = { maxOutputLength: number };
type Inflater = readonly [sync: (buffer: Uint8Array, options: Limit) => Buffer, async: (buffer: Uint8Array, options: Limit, done: (error: Error | null, result: Buffer) => void) => void];

/**
 * The content codings an upstream may answer in (what Bun's fetch asks for). node:zlib is loaded by the
 * first compressed answer, not at start: importing it cost every cold start ~1.5 ms and ~2 MB resident.
 */
const INFLATERS: Readonly<Record<string, (zlib: typeof Zlib) => Inflater>> = {
  gzip: (zlib) => [zlib.gunzipSync, zlib.gunzip],
  "x-gzip": (zlib) => [zlib.gunzipSync, zlib.gunzip],
  deflate: (zlib) => [zlib.inflateSync, zlib.inflate],
  br: (zlib) => [zlib.brotliDecompressSync, zlib.brotliDecompress],
  zstd: (zlib) => [zlib.zstdDecompressSync, zlib.zstdDecompress],
};
let zlibModule: typeof Zlib | undefined;

/**
 * Below this compressed size an answer is inflated on the spot (a few µs; at most about 8 MB out, deflate's
 * ratio being at most ~1:1032); larger ones on the thread pool, so a bomb never blocks the event loop.
 */
const SYNC_INFLATE_BYTES = 8192;

async function inflate(bytes: Uint8Array, coding: string, maxBytes: number): Promise<AnswerRead> {
  const inflaterOf = Object.hasOwn(INFLATERS, coding) ? INFLATERS[coding] : undefined;
  if (!inflaterOf) return { ok: false, reason: "unreadable", message: `the upstream's answer is in a content encoding the gateway does not read (${/^[a-z0-9-]{1,20}$/.test(coding) ? coding : "unrecognised"})` };
  const inflater = inflaterOf((zlibModule ??= require("node:zlib") as typeof Zlib));
  const options = { maxOutputLength: maxBytes };
  try {
    const out = bytes.byteLength <= SYNC_INFLATE_BYTES ? inflater[0](bytes, options) : await new Promise<Buffer>((resolve, reject) => inflater[1](bytes, options, (error, result) => (error ? reject(error) : resolve(result))));
    return { ok: true, bytes: out };
  } catch (error) {
    if ((error as { code?: unknown }).code === "ERR_BUFFER_TOO_LARGE") return tooLarge(maxBytes);
    return { ok: false, reason: "unreadable", message: `the upstream's answer could not be decompressed (${coding})` };
  }
}

const EMPTY = new Uint8Array(0);

/** Decodes answers read as bytes (one decoder: it holds no state between calls). */
export const utf8 = new TextDecoder();

const PAST_DEADLINE: UpstreamFault = { ok: false, reason: "timeout", message: "the upstream's answer was still arriving at the request's deadline (failover.timeout_secs)" };

function tooLarge(max: number): UpstreamFault {
  collectSoon();
  return { ok: false, reason: "too_large", message: `the upstream's answer is larger than limits.max_upstream_response_bytes (${max} bytes)` };
}

let collecting = false;
/**
 * A too-large answer leaves up to the cap in dropped buffers, which the collector counts too late: four
 * such answers in a row grew RSS by about 4x the cap. One full collection once the read has returned
 * (about 3 ms, on this rare path only) lets the next answer reuse that memory.
 */
function collectSoon(): void {
  if (collecting) return;
  collecting = true;
  setImmediate(() => {
    collecting = false;
    Bun.gc(true);
  });
}

/** Stops reading (which closes the upstream connection) and answers with the fault. */
function drop(source: { cancel(): Promise<void> } | Response, fault: UpstreamFault): UpstreamFault {
  const stream = source instanceof Response ? source.body : source;
  stream?.cancel().catch(() => {});
  return fault;
}
