// The gateway's own HTTP/1.1 client for upstream calls, over Bun.connect. Bun's fetch hands a body out as a
// ReadableStream, and any JS relay of one cost >= 1.4x a bare proxy per streamed request; here the socket's
// data callback cuts the body out of each read and pushes the pieces straight to the body's sink (body.ts),
// with no stream object, copy or promise per piece.
//
// Connections come from one keep-alive pool per origin (http1-pool.ts). Silence is bounded by one shared
// sweep there rather than a timer per call: a call costs a field write per socket read, and a bound of
// 2 s fires within about 2.75 s. A client abort closes the connection at once.
// Errors carry what upstream.ts's transportCause and isUpstreamTimeout read: a `code`, or the name
// "TimeoutError"; they are never worded here for a client.
import type * as Zlib from "node:zlib";
import { zlib } from "./zlib.ts";
import type { BodySink, UpstreamBody } from "./body.ts";
import { badResponse, Framing, type Head, type HeaderList, MAX_HEAD_BYTES, parseHead } from "./http1-head.ts";
import { type Carried, clock, type Conn, coded, connect, destroy, type Origin, originFor, release } from "./http1-pool.ts";
import type { PoolSettings } from "./upstream.ts";

export interface Http1Call {
  /** Absolute http:// or https:// URL, path and query included. */
  readonly url: string;
  /** Request headers; host, content-length, accept-encoding and connection are the client's own (ignored here). */
  readonly headers: Record<string, string>;
  /**
   * Headers of this call only (a client's forwarded `anthropic-version`), checked on every call; `headers`
   * stays one object per provider, written once. A name `headers` has wins.
   */
  readonly extra?: Record<string, string>;
  readonly body: string;
  /** The client's: once aborted, the next sweep (250 ms) closes the connection (never reused) and rejects the call or fails the body. */
  readonly signal: AbortSignal;
  /** The longest the upstream may stay silent: before the head and between the bytes of the body. */
  readonly timeoutMs: number;
  /** The origin's pool, fixed by the first call to the origin (boot-scoped settings). */
  readonly pool: PoolSettings;
  /** true (streams): a Content-Encoding is decoded as pieces arrive; false: left for the caller (answer.ts, within its cap). */
  readonly decode: boolean;
}

export interface Http1Answer {
  readonly status: number;
  /** Names as received, read in any case. When the body is decoded here, content-encoding and content-length are removed. */
  readonly headers: HeaderList;
  readonly body: UpstreamBody;
  /** The body is still in its Content-Encoding (`headers` names it). */
  readonly encoded: boolean;
}

/** Sends a POST and resolves with the answer's head once it has come (interim 1xx answers skipped). */
export function send(call: Http1Call): Promise<Http1Answer> {
  const url = call.url;
  const at = pathStart(url);
  let origin: Origin;
  try {
    origin = originFor(url.slice(0, at), call.pool);
  } catch (error) {
    return Promise.reject(error);
  }
  if (call.signal.aborted) return Promise.reject(aborted());
  const path = at === url.length ? "/" : url.charCodeAt(at) === 0x3f ? `/${url.slice(at)}` : url.slice(at);
  const lines = headerLines(call.headers);
  if (lines instanceof Error) return Promise.reject(lines);
  let head = `POST ${origin.target}${path} HTTP/1.1\r\n${origin.hostLine}${lines}`;
  const extra = call.extra;
  if (extra !== undefined) {
    for (const name in extra) {
      if (Object.hasOwn(call.headers, name) || ownHeader(name)) continue;
      const value = extra[name]!;
      if (!TOKEN.test(name) || UNSAFE_VALUE.test(value)) return Promise.reject(invalidHeader(name));
      head += `${name}: ${value}\r\n`;
    }
  }
  const bodyBytes = Buffer.byteLength(call.body);
  head += `content-length: ${bodyBytes}${call.decode ? IDENTITY : CODINGS}`;
  const exchange = new Exchange(call, origin, head + call.body, Buffer.byteLength(head) + bodyBytes);
  const conn = origin.idle.pop();
  if (conn === undefined) exchange.conn = connect(origin, exchange);
  else {
    conn.idle = false;
    exchange.start(conn);
  }
  return exchange.answer;
}

/**
 * The header lines of a request's headers, checked. A provider's own headers are one object for all its
 * calls (dataplane/upstream-call.ts ownKeyHeaders), so they are checked and written once, not per call.
 */
function headerLines(headers: Record<string, string>): string | Error {
  const known = writtenHeaders.get(headers);
  if (known !== undefined) return known;
  let lines = "";
  for (const name in headers) {
    const value = headers[name]!;
    if (ownHeader(name)) continue;
    if (!TOKEN.test(name) || UNSAFE_VALUE.test(value)) return invalidHeader(name);
    lines += `${name}: ${value}\r\n`;
  }
  writtenHeaders.set(headers, lines);
  return lines;
}
const writtenHeaders = new WeakMap<Record<string, string>, string>();

const invalidHeader = (name: string) => Object.assign(new TypeError(`request header ${JSON.stringify(name)} has a name or value HTTP cannot carry`), { code: "ERR_INVALID_HEADER" });

const IDENTITY = "\r\naccept-encoding: identity\r\n\r\n";
const CODINGS = "\r\naccept-encoding: gzip, deflate, br\r\n\r\n";
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const UNSAFE_VALUE = /[\0\r\n]/;
const CRLF2 = "\r\n\r\n";

/** Headers this client writes itself (framing, the connection, what codings it takes): a caller's are dropped. */
function ownHeader(name: string): boolean {
  switch (name.length) {
    case 4:
      return name.toLowerCase() === "host";
    case 10: {
      const lower = name.toLowerCase();
      return lower === "connection" || lower === "keep-alive";
    }
    case 14:
      return name.toLowerCase() === "content-length";
    case 15:
      return name.toLowerCase() === "accept-encoding";
    case 17:
      return name.toLowerCase() === "transfer-encoding";
    default:
      return false;
  }
}

/** Where the path starts in an absolute URL: after `scheme://authority`. */
function pathStart(url: string): number {
  const from = url.indexOf("//") + 2;
  let at = url.indexOf("/", from);
  const query = url.indexOf("?", from);
  if (query !== -1 && (at === -1 || query < at)) at = query;
  return at === -1 ? url.length : at;
}

function aborted(): Error {
  return Object.assign(new Error("the client went away"), { name: "AbortError", code: "ABORT_ERR" });
}

// ---- one request and its answer

const enum Phase {
  Head,
  Body,
  Done,
}

/** Where a chunked body's parser stands between two reads. */
const enum Chunk {
  Size,
  Extension,
  SizeLf,
  Data,
  DataCr,
  DataLf,
  TrailerStart,
  Trailer,
  TrailerLf,
  EndLf,
}

/** The longest chunk-size line and the most trailer bytes read (a peer could otherwise stream an endless line). */
const MAX_LINE = 4096;
const MAX_SIZE_DIGITS = 12;
/** The most bytes queued for a body nobody takes yet before its socket is paused. */
const MAX_HELD = 64 * 1024;
/** Interim (1xx) answers taken before the real one: a peer could otherwise send them forever, never silent. */
const MAX_INTERIM = 8;

type Decoder = Zlib.Inflate | Zlib.Gunzip | Zlib.BrotliDecompress | Zlib.ZstdDecompress;
/** A stream's content codings, decoded as the pieces come (node:zlib loaded by the first: zlib.ts). */
const DECODERS: Readonly<Record<string, () => Decoder>> = {
  gzip: () => zlib().createGunzip(),
  "x-gzip": () => zlib().createGunzip(),
  deflate: () => zlib().createInflate(),
  br: () => zlib().createBrotliDecompress(),
  zstd: () => zlib().createZstdDecompress(),
};

/** One request and its answer; the answer's body is this object (no closure or stream per request). */
class Exchange implements UpstreamBody, Carried {
  readonly answer: Promise<Http1Answer>;
  private resolveAnswer!: (answer: Http1Answer) => void;
  private rejectAnswer!: (error: Error) => void;
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  private readonly decode: boolean;
  conn: Conn | undefined = undefined;
  private phase = Phase.Head;
  /** Bytes of the request not yet taken by the socket (a large body). */
  private unsent: Uint8Array | undefined = undefined;
  private written = 0;
  private retried = false;
  private gotBytes = false;
  private interim = 0;
  private headBuf: Buffer | undefined = undefined;
  private framing = Framing.None;
  /** Bytes left: of the body (Length) or of the current chunk (Chunked); the size being read (Chunk.Size). */
  private left = 0;
  private chunk = Chunk.Size;
  private line = 0;
  private keepAlive = false;
  // The body's consumer side.
  paused = false;
  private pending: Uint8Array[] | undefined = undefined;
  /** Bytes queued since a read last found the queue empty (before pipe): bounded by MAX_HELD. */
  private held = 0;
  private waiter: PromiseWithResolvers<Uint8Array | null> | undefined = undefined;
  private sink: BodySink | undefined = undefined;
  private ended = false;
  private failed: Error | undefined = undefined;
  private cancelled = false;
  private decoder: ReturnType<(typeof DECODERS)[string]> | undefined = undefined;

  constructor(
    call: Http1Call,
    private readonly origin: Origin,
    /** Kept until the answer starts (a retry sends it again), then let go: it may be megabytes. */
    private request: string | undefined,
    private readonly requestBytes: number,
  ) {
    this.signal = call.signal;
    this.timeoutMs = call.timeoutMs;
    this.decode = call.decode;
    this.answer = new Promise<Http1Answer>((resolve, reject) => {
      this.resolveAnswer = resolve;
      this.rejectAnswer = reject;
    });
  }

  start(conn: Conn): void {
    conn.ex = this;
    this.conn = conn;
    conn.lastActive = clock;
    this.write(conn);
  }

  /** Writes the request (all of it at once where the socket takes it; the rest on drain). */
  write(conn: Conn): void {
    const socket = conn.socket!;
    if (this.unsent === undefined) {
      if (this.written > 0) return;
      const wrote = socket.write(this.request!);
      if (wrote === this.requestBytes) {
        this.written = wrote;
        return;
      }
      this.unsent = Buffer.from(this.request!).subarray(Math.max(wrote, 0));
    } else {
      const wrote = socket.write(this.unsent);
      if (wrote > 0) this.unsent = this.unsent.subarray(wrote);
    }
    this.written = this.requestBytes - this.unsent.byteLength;
    if (this.unsent.byteLength === 0) this.unsent = undefined;
  }

  /** The client went away: the sweep saw its signal aborted. */
  clientLeft(): void {
    this.abandon(aborted());
  }

  /** Gives the exchange up with `error`: the connection is reset, the answer or the body fails. */
  abandon(error: Error): void {
    const conn = this.conn;
    this.conn = undefined;
    if (conn !== undefined) destroy(conn);
    if (this.phase === Phase.Head) this.failHead(error);
    else if (this.phase === Phase.Body) {
      this.phase = Phase.Done;
      this.fail(error);
    }
  }

  /** The connection closed (or never opened) while it carried this exchange. */
  closed(conn: Conn, error: Error | undefined): void {
    this.conn = undefined;
    if (this.phase === Phase.Head) {
      // A pooled connection the server had closed: nothing of the answer came, so the request is sent once more on a new one.
      if (!this.gotBytes && conn.used > 0 && !this.retried && conn.error === undefined) {
        this.retried = true;
        this.unsent = undefined;
        this.written = 0;
        this.conn = connect(this.origin, this);
        return;
      }
      this.failHead(error ?? coded("ECONNRESET", "the upstream closed the connection before answering"));
    } else if (this.phase === Phase.Body) {
      if (this.framing === Framing.UntilClose && error === undefined) this.complete(false);
      else {
        this.phase = Phase.Done;
        this.fail(error ?? coded("ECONNRESET", "the upstream closed the connection before the answer's end"));
      }
    }
  }

  /** A read from the socket. */
  received(conn: Conn, data: Buffer): void {
    this.gotBytes = true;
    if (this.phase === Phase.Body) return this.parseBody(data, 0);
    if (this.phase === Phase.Done) return destroy(conn);
    let buf = data;
    let from = 0;
    if (this.headBuf !== undefined) {
      from = Math.max(0, this.headBuf.byteLength - 3);
      buf = Buffer.concat([this.headBuf, data]);
      this.headBuf = undefined;
    }
    for (;;) {
      const end = buf.indexOf(CRLF2, from);
      if (end === -1 || end > MAX_HEAD_BYTES) {
        if (buf.byteLength > MAX_HEAD_BYTES) return this.abandon(badResponse(`head larger than ${MAX_HEAD_BYTES} bytes`));
        this.headBuf = buf;
        return;
      }
      const head = parseHead(buf.toString("latin1", 0, end));
      if (head instanceof Error) return this.abandon(head);
      if (head.status >= 200) {
        this.startBody(head);
        return this.parseBody(buf, end + 4);
      }
      // An interim answer (100 Continue, 103 Early Hints) precedes the real one; 101 would switch protocols, never asked for.
      if (head.status === 101) return this.abandon(badResponse("an unasked protocol switch (101)"));
      if (++this.interim > MAX_INTERIM) return this.abandon(badResponse(`more than ${MAX_INTERIM} interim answers`));
      buf = buf.subarray(end + 4);
      from = 0;
      if (buf.byteLength === 0) return;
    }
  }

  private startBody(head: Head): void {
    this.phase = Phase.Body;
    this.request = undefined;
    this.framing = head.framing;
    this.left = head.framing === Framing.Length ? head.length : 0;
    this.keepAlive = head.keepAlive;
    let encoded = head.coding !== "" && head.framing !== Framing.None;
    if (encoded && this.decode) {
      const make = DECODERS[head.coding];
      if (make !== undefined) {
        this.decoder = this.decoding(make(), head.coding);
        head.headers.delete("content-encoding");
        head.headers.delete("content-length");
        encoded = false;
      }
    }
    this.resolveAnswer({ status: head.status, headers: head.headers, body: this, encoded });
  }

  /** A decoder between the socket and the consumer (a stream the upstream compressed though asked not to). */
  private decoding(decoder: NonNullable<Exchange["decoder"]>, coding: string) {
    decoder.on("data", (piece: Uint8Array) => this.deliver(piece));
    decoder.on("end", () => this.finish());
    decoder.on("error", () => this.abandonBody(badResponse(`a body that does not decode as ${coding}`)));
    return decoder;
  }

  private abandonBody(error: Error): void {
    if (this.phase === Phase.Body) return this.abandon(error);
    this.fail(error);
  }

  /** Cuts the body's pieces out of `data` from `i` by the answer's framing. */
  private parseBody(data: Buffer, i: number): void {
    const n = data.byteLength;
    switch (this.framing) {
      case Framing.None:
        return this.complete(i < n);
      case Framing.Length: {
        if (i >= n) return;
        const take = Math.min(this.left, n - i);
        this.piece(i === 0 && take === n ? data : data.subarray(i, i + take));
        this.left -= take;
        if (this.left === 0) this.complete(i + take < n);
        return;
      }
      case Framing.UntilClose:
        if (i < n) this.piece(i === 0 ? data : data.subarray(i));
        return;
      case Framing.Chunked:
        return this.parseChunks(data, i);
    }
  }

  /**
   * The chunks' data in one read are handed out as one piece: a sink call per chunk cost more than putting
   * them together, and a backpressure pause takes effect at the next read. They are put together in place,
   * each moved down over the framing before it (the read's buffer is this exchange's alone), so no new
   * buffer is made: joining them into one cost a 4-8 KiB allocation on a stream whose events came at once.
   */
  private parseChunks(data: Buffer, i: number): void {
    const n = data.byteLength;
    /** The data of this read's chunks so far, moved together at [outStart, outEnd). */
    let outStart = -1;
    let outEnd = -1;
    while (i < n) {
      const c = data[i]!;
      switch (this.chunk) {
        case Chunk.Data: {
          const take = Math.min(this.left, n - i);
          if (outStart === -1) outStart = outEnd = i;
          else if (outEnd !== i) data.copyWithin(outEnd, i, i + take);
          outEnd += take;
          i += take;
          this.left -= take;
          if (this.left === 0) this.chunk = Chunk.DataCr;
          continue;
        }
        case Chunk.Size: {
          const digit = hex(c);
          if (digit >= 0) {
            if (++this.line > MAX_SIZE_DIGITS) return this.abandon(badResponse("chunk size too large"));
            this.left = this.left * 16 + digit;
          } else if (this.line === 0) return this.abandon(badResponse("bad chunk size"));
          else if (c === 0x0d) this.chunk = Chunk.SizeLf;
          else if (c === 0x3b || c === 0x20 || c === 0x09) this.chunk = Chunk.Extension;
          else return this.abandon(badResponse("bad chunk size"));
          break;
        }
        case Chunk.Extension:
          if (c === 0x0d) this.chunk = Chunk.SizeLf;
          else if (++this.line > MAX_LINE) return this.abandon(badResponse("chunk extension too long"));
          break;
        case Chunk.SizeLf:
          if (c !== 0x0a) return this.abandon(badResponse("chunk size line without CRLF"));
          this.line = 0;
          this.chunk = this.left === 0 ? Chunk.TrailerStart : Chunk.Data;
          break;
        case Chunk.DataCr:
          if (c !== 0x0d) return this.abandon(badResponse("chunk data longer than its size"));
          this.chunk = Chunk.DataLf;
          break;
        case Chunk.DataLf:
          if (c !== 0x0a) return this.abandon(badResponse("chunk data without CRLF"));
          this.chunk = Chunk.Size;
          break;
        case Chunk.TrailerStart:
          this.chunk = c === 0x0d ? Chunk.EndLf : Chunk.Trailer;
          if (++this.line > MAX_LINE) return this.abandon(badResponse("trailers too long"));
          break;
        case Chunk.Trailer:
          if (c === 0x0d) this.chunk = Chunk.TrailerLf;
          if (++this.line > MAX_LINE) return this.abandon(badResponse("trailers too long"));
          break;
        case Chunk.TrailerLf:
          if (c !== 0x0a) return this.abandon(badResponse("trailer without CRLF"));
          this.chunk = Chunk.TrailerStart;
          break;
        case Chunk.EndLf:
          if (c !== 0x0a) return this.abandon(badResponse("chunked body without its last CRLF"));
          if (outStart !== -1) this.piece(data.subarray(outStart, outEnd));
          return this.complete(i + 1 < n);
      }
      i++;
    }
    if (outStart !== -1) this.piece(data.subarray(outStart, outEnd));
  }

  private piece(bytes: Uint8Array): void {
    if (this.decoder !== undefined) this.decoder.write(bytes);
    else this.deliver(bytes);
  }

  /** The framing ended: the connection goes back to the pool (or is closed), and the body ends. */
  private complete(extra: boolean): void {
    this.phase = Phase.Done;
    const conn = this.conn;
    this.conn = undefined;
    if (conn !== undefined) {
      if (this.paused) conn.socket?.resume();
      release(conn, this.keepAlive && !extra && this.unsent === undefined);
    }
    if (this.decoder !== undefined) this.decoder.end();
    else this.finish();
  }

  private failHead(error: Error): void {
    if (this.phase !== Phase.Head) return;
    this.phase = Phase.Done;
    this.rejectAnswer(error);
  }

  private deliver(piece: Uint8Array): void {
    // Pieces held back (before pipe, or while paused) go first.
    if (this.sink !== undefined && this.pending === undefined) this.sink.chunk(piece);
    else if (this.waiter !== undefined) {
      const waiter = this.waiter;
      this.waiter = undefined;
      waiter.resolve(piece);
    } else if (!this.cancelled) {
      (this.pending ??= []).push(piece);
      // Nobody takes pieces yet (before pipe, or between reads): past a bound the socket waits rather than
      // the queue growing; under it (a stream's first events) no pause and resume is paid.
      if (this.sink === undefined && (this.held += piece.byteLength) > MAX_HELD) this.pause();
    }
  }

  private finish(): void {
    if (this.ended || this.failed !== undefined || this.cancelled) return;
    this.ended = true;
    if (this.sink !== undefined && this.pending === undefined) this.sink.end();
    else if (this.waiter !== undefined) this.waiter.resolve(null);
  }

  private fail(error: Error): void {
    if (this.ended || this.failed !== undefined || this.cancelled) return;
    this.failed = error;
    this.decoder?.destroy();
    // A broken body is broken at once: what was held back is dropped.
    if (this.sink !== undefined) {
      this.pending = undefined;
      this.sink.fail(error);
    }
    else if (this.waiter !== undefined) this.waiter.reject(error);
  }

  // ---- UpstreamBody

  read(): Promise<Uint8Array | null> {
    const pending = this.pending;
    if (pending !== undefined && pending.length > 0) return Promise.resolve(pending.shift()!);
    if (this.failed !== undefined) return Promise.reject(this.failed);
    if (this.ended || this.cancelled) return Promise.resolve(null);
    this.waiter = Promise.withResolvers();
    this.held = 0;
    this.resume();
    return this.waiter.promise;
  }

  pipe(sink: BodySink): void {
    this.sink = sink;
    if (this.failed !== undefined) {
      this.pending = undefined;
      return sink.fail(this.failed);
    }
    // Paused only by deliver's hold (a consumer pauses after pipe): resume flushes.
    if (this.paused) this.resume();
    else this.flush();
  }

  /** Hands the held-back pieces to the sink until it pauses; then the end, if it came. */
  private flush(): void {
    const pending = this.pending;
    const sink = this.sink;
    if (sink === undefined) return;
    if (pending !== undefined) {
      while (pending.length > 0 && !this.paused) sink.chunk(pending.shift()!);
      if (pending.length > 0 || this.sink === undefined) return;
      this.pending = undefined;
    }
    if (this.ended) sink.end();
  }

  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.conn?.socket?.pause();
    this.decoder?.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    const conn = this.conn;
    if (conn !== undefined) {
      conn.lastActive = clock;
      conn.socket?.resume();
    }
    this.decoder?.resume();
    this.flush();
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.sink = undefined;
    this.pending = undefined;
    if (this.phase !== Phase.Done) {
      this.phase = Phase.Done;
      const conn = this.conn;
      this.conn = undefined;
      if (conn !== undefined) destroy(conn);
    }
    this.decoder?.destroy();
    this.waiter?.resolve(null);
    this.waiter = undefined;
  }
}

function hex(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1;
}
