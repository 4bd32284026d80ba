// Reading an upstream answer whole (a non-stream answer, an error body, a probe's answer) within bounds:
// `limits.max_upstream_response_bytes`, counted after decompression, and the request's deadline. Streams
// are never read whole; they are relayed as they come.
import type * as Zlib from "node:zlib";
import type { BodySink, UpstreamBody } from "./body.ts";
import { CLIENT_GONE, isUpstreamTimeout, transportCause, type UpstreamAnswer, type UpstreamFault } from "./upstream.ts";
import { zlib } from "./zlib.ts";

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
 * The answer's body as bytes, taken piece by piece as the upstream client hands them over, so that neither
 * a huge answer nor a trickling one holds the request: past `maxBytes` or the deadline the read stops and
 * the upstream connection is dropped. An answer that was already here whole when its headers were comes
 * back at once, without a promise. The deadline is looked at as each piece arrives, and by one timer only
 * when the body is still arriving; silence between pieces is also bounded by the socket idle timer
 * (upstream_request_timeout_secs). An answer still in its Content-Encoding (`encoded`) is inflated here,
 * to at most `maxBytes`.
 */
export function readAnswer(answer: UpstreamAnswer, bounds: AnswerBounds): AnswerRead | Promise<AnswerRead> {
  // A declared size over the cap is refused before a byte is read.
  const declared = Number(answer.headers.get("content-length") ?? 0);
  if (declared > bounds.maxBytes) return drop(answer.body, tooLarge(bounds.maxBytes));
  const coding = answer.encoded ? answer.headers.get("content-encoding") : null;
  const plain = coding === null || coding === "" || coding === "identity";
  const whole = new WholeRead(answer.body, bounds, plain ? undefined : coding!.trim().toLowerCase());
  answer.body.pipe(whole);
  return whole.result ?? whole.later();
}

/** Collects a body's pieces within the bounds; `result` is set once it is over (at once, for an answer already here). */
class WholeRead implements BodySink {
  result: AnswerRead | Promise<AnswerRead> | undefined;
  private readonly chunks: Uint8Array[] = [];
  private total = 0;
  private settle: ((read: AnswerRead | Promise<AnswerRead>) => void) | undefined;
  private timer: Timer | undefined;

  constructor(
    private readonly body: UpstreamBody,
    private readonly bounds: AnswerBounds,
    private readonly coding: string | undefined,
  ) {}

  chunk(bytes: Uint8Array): void {
    if (this.result) return;
    this.total += bytes.byteLength;
    if (this.total > this.bounds.maxBytes) return this.finish(drop(this.body, tooLarge(this.bounds.maxBytes)));
    this.chunks.push(bytes);
    if (this.bounds.now() > this.bounds.deadline) this.finish(drop(this.body, PAST_DEADLINE));
  }

  end(): void {
    if (this.result) return;
    const { chunks, total } = this;
    const bytes = chunks.length === 1 ? chunks[0]! : chunks.length === 0 ? EMPTY : Buffer.concat(chunks, total);
    this.finish(this.coding === undefined ? { ok: true, bytes } : inflate(bytes, this.coding, this.bounds.maxBytes));
  }

  fail(error: Error): void {
    if (!this.result) this.finish(readFailure(error, this.bounds));
  }

  /** A body still arriving: its result, with the request's deadline as a timer (a stall after the headers). */
  later(): Promise<AnswerRead> {
    const wait = this.bounds.deadline - this.bounds.now();
    if (wait <= 0) {
      this.finish(drop(this.body, PAST_DEADLINE));
      return Promise.resolve(PAST_DEADLINE);
    }
    if (wait < MAX_TIMER_MS) this.timer = setTimeout(() => this.finish(drop(this.body, PAST_DEADLINE)), wait);
    return new Promise<AnswerRead>((resolve) => (this.settle = resolve));
  }

  private finish(read: AnswerRead | Promise<AnswerRead>): void {
    if (this.result) return;
    this.result = read;
    clearTimeout(this.timer);
    this.chunks.length = 0;
    this.settle?.(read);
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

/** The content codings an upstream may answer in (what the upstream client asks for, and zstd). */
const INFLATERS: Readonly<Record<string, (zlib: typeof Zlib) => Inflater>> = {
  gzip: (zlib) => [zlib.gunzipSync, zlib.gunzip],
  "x-gzip": (zlib) => [zlib.gunzipSync, zlib.gunzip],
  deflate: (zlib) => [zlib.inflateSync, zlib.inflate],
  br: (zlib) => [zlib.brotliDecompressSync, zlib.brotliDecompress],
  zstd: (zlib) => [zlib.zstdDecompressSync, zlib.zstdDecompress],
};

/**
 * Below this compressed size an answer is inflated on the spot (a few µs; at most about 8 MB out, deflate's
 * ratio being at most ~1:1032); larger ones on the thread pool, so a bomb never blocks the event loop.
 */
const SYNC_INFLATE_BYTES = 8192;

async function inflate(bytes: Uint8Array, coding: string, maxBytes: number): Promise<AnswerRead> {
  const inflaterOf = Object.hasOwn(INFLATERS, coding) ? INFLATERS[coding] : undefined;
  if (!inflaterOf) return { ok: false, reason: "unreadable", message: `the upstream's answer is in a content encoding the gateway does not read (${/^[a-z0-9-]{1,20}$/.test(coding) ? coding : "unrecognised"})` };
  const inflater = inflaterOf(zlib());
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
function drop(body: UpstreamBody, fault: UpstreamFault): UpstreamFault {
  body.cancel();
  return fault;
}
