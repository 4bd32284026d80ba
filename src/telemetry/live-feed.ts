// The admin plane's live events (GET /events, design/console.md): each finished request's record and
// each breaker cell's change, as server-sent events to at most MAX_LIVE_STREAMS readers. Nothing is
// serialized while nobody reads. A reader that falls MAX_QUEUED_EVENTS behind gets `event: overflow`
// and is closed (it re-reads GET /requests and reconnects): a slow console never holds the gateway's memory.
import type { BreakerState } from "../routing/breaker.ts";
import type { PushOut } from "../http/push-stream.ts";
import { isoTime } from "./iso-time.ts";
import type { RequestRecord } from "./records.ts";

export const MAX_LIVE_STREAMS = 16;
export const MAX_QUEUED_EVENTS = 1000;
export const KEEPALIVE_MS = 15_000;

const KEEPALIVE = ": keepalive\n\n";
const OVERFLOW = `event: overflow\ndata: ${JSON.stringify({ message: `more than ${MAX_QUEUED_EVENTS} events waited for this reader; re-read GET /requests and reconnect` })}\n\n`;

/** One reader's stream: frames wait here while its connection's buffer is full, up to the bound. */
export class LiveReader {
  #out: PushOut | undefined;
  readonly #queue: string[] = [];
  #blocked = false;
  #closed = false;

  constructor(private readonly gone: (reader: LiveReader) => void) {}

  /** The client started reading: what waited goes out, and the stream stays open until closed. */
  attach(out: PushOut): void {
    if (this.#closed) return out.end();
    this.#out = out;
    // A first line, so the client sees the stream open before any event.
    this.#write(": connected\n\n");
    this.#flush();
  }

  send(frame: string): void {
    if (this.#closed) return;
    if (this.#out === undefined || this.#blocked || this.#queue.length > 0) {
      if (this.#queue.length >= MAX_QUEUED_EVENTS) return this.#overflow();
      this.#queue.push(frame);
      return;
    }
    this.#write(frame);
  }

  /** Ends the stream (shutdown, overflow); the client left is `left`. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue.length = 0;
    this.#out?.end();
    this.gone(this);
  }

  /** The client went away: nothing more is written. */
  left(): void {
    this.#out = undefined;
    this.close();
  }

  #overflow(): void {
    this.#queue.length = 0;
    // Bun buffers what the full connection cannot take yet; the overflow event goes after what it holds.
    this.#out?.write(OVERFLOW);
    this.close();
  }

  #write(frame: string): void {
    if (this.#out!.write(frame)) return;
    this.#blocked = true;
    this.#out!.onDrain(() => {
      this.#blocked = false;
      this.#flush();
    });
  }

  #flush(): void {
    while (!this.#closed && !this.#blocked && this.#queue.length > 0) this.#write(this.#queue.shift()!);
  }
}

export class LiveFeed {
  readonly #readers = new Set<LiveReader>();
  #keepalive: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly keepaliveMs = KEEPALIVE_MS) {}

  get readers(): number {
    return this.#readers.size;
  }

  /** A new reader, or undefined when MAX_LIVE_STREAMS are open. */
  open(): LiveReader | undefined {
    if (this.#readers.size >= MAX_LIVE_STREAMS) return undefined;
    const reader = new LiveReader((r) => this.#forget(r));
    this.#readers.add(reader);
    // Idle proxies and load balancers cut a silent connection; the timer runs only while someone reads.
    if (this.#keepalive === undefined) {
      this.#keepalive = setInterval(() => this.#broadcast(KEEPALIVE), this.keepaliveMs);
      this.#keepalive.unref();
    }
    return reader;
  }

  /** A request ended (TelemetryHub.finished). */
  request(record: RequestRecord): void {
    if (this.#readers.size > 0) this.#broadcast(`event: request\ndata: ${JSON.stringify(record)}\n\n`);
  }

  /** A breaker cell changed state (RoutingState.onBreakerChange). */
  breaker(pool: string, lane: string, state: BreakerState, nowMs: number): void {
    if (this.#readers.size > 0) this.#broadcast(`event: breaker\ndata: ${JSON.stringify({ pool, lane, state, ts: isoTime(nowMs) })}\n\n`);
  }

  /** Shutdown: every stream ends now, so draining the admin listener does not wait on them. */
  closeAll(): void {
    for (const reader of [...this.#readers]) reader.close();
  }

  #broadcast(frame: string): void {
    for (const reader of this.#readers) reader.send(frame);
  }

  #forget(reader: LiveReader): void {
    this.#readers.delete(reader);
    if (this.#readers.size === 0 && this.#keepalive !== undefined) {
      clearInterval(this.#keepalive);
      this.#keepalive = undefined;
    }
  }
}
