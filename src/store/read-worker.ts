// The usage views' long ledger reads, off the main thread: bun:sqlite is synchronous, so a 30-day sum
// over a large ledger run where the data plane runs would hold every request for its seconds. One Worker,
// started on the first such read, opens the same file read-only (the store is in WAL mode, so it reads
// beside the writer without waiting for it) and answers one query at a time; the main thread only posts
// the SQL and awaits the rows. The same file is the worker's entry point (scripts/compile.ts lists it).
import { Database } from "bun:sqlite";
import { BUILD_TARGET } from "../version.ts";

/** Reads waiting behind the one running; past it a read is refused rather than queued without end. */
export const MAX_QUEUED_READS = 8;
/** A read (its wait in the queue included) that takes longer fails; the 30-day read of 1 M rows takes 5-9 s. */
export const READ_TIMEOUT_MS = 30_000;
/** How long the stop waits for the worker's thread before the store closes anyway. */
const CLOSE_WAIT_MS = 1_000;

/** Why a read was not answered: too many waiting, too slow, or the store is closing. */
export class ReadRefused extends Error {
  constructor(
    readonly reason: "busy" | "timeout" | "closed",
    message: string,
  ) {
    super(message);
  }
}

type Arg = string | number;
interface Read {
  readonly id: number;
  readonly sql: string;
  readonly args: readonly Arg[];
  readonly resolve: (rows: unknown[]) => void;
  readonly reject: (error: Error) => void;
  timer?: ReturnType<typeof setTimeout>;
}
type Answer = { id: number; rows: unknown[] } | { id: number; error: string };

// Compiled, the worker is the bundle's other entry point, named relative to the bundle's root (src/);
// from source it is this file.
const ENTRY = BUILD_TARGET === "source" ? new URL("./read-worker.ts", import.meta.url).href : "./store/read-worker.ts";

export class ReadWorker {
  #worker: Worker | undefined;
  /** A worker terminated mid-read: sqlite cannot be interrupted, so its thread ends when the query does. */
  #stopping: Promise<void> | undefined;
  #running: Read | undefined;
  readonly #queue: Read[] = [];
  #nextId = 0;
  #closed = false;

  constructor(
    readonly path: string,
    private readonly limits = { queued: MAX_QUEUED_READS, timeoutMs: READ_TIMEOUT_MS },
  ) {}

  /** The rows of one query, read on the worker's connection. */
  all<T>(sql: string, args: readonly Arg[]): Promise<T[]> {
    if (this.#closed) return Promise.reject(new ReadRefused("closed", "the store is closing"));
    if (this.#stopping) return Promise.reject(new ReadRefused("busy", `a ledger read that took longer than ${this.limits.timeoutMs / 1000} s is still being stopped; retry later`));
    if (this.#queue.length >= this.limits.queued) return Promise.reject(new ReadRefused("busy", `${this.#queue.length} ledger reads are already waiting; retry later`));
    return new Promise<T[]>((resolve, reject) => {
      const read: Read = { id: this.#nextId++, sql, args, resolve: resolve as (rows: unknown[]) => void, reject };
      read.timer = setTimeout(() => this.#timedOut(read), this.limits.timeoutMs);
      this.#queue.push(read);
      this.#pump();
    });
  }

  /** Refuses what waits, stops the worker; the store closes after this. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const read of this.#queue.splice(0)) this.#settle(read, new ReadRefused("closed", "the store is closing"));
    if (this.#running) this.#settle(this.#running, new ReadRefused("closed", "the store is closing"));
    this.#running = undefined;
    if (this.#worker) this.#terminate(this.#worker);
    if (this.#stopping) await Promise.race([this.#stopping, Bun.sleep(CLOSE_WAIT_MS)]);
  }

  #pump(): void {
    if (this.#running || this.#stopping || this.#closed) return;
    const read = this.#queue.shift();
    if (!read) return;
    this.#running = read;
    (this.#worker ??= this.#start()).postMessage({ id: read.id, sql: read.sql, args: read.args });
  }

  #start(): Worker {
    const worker = new Worker(ENTRY, { smol: true });
    worker.unref();
    worker.postMessage({ path: this.path });
    worker.onmessage = (event: MessageEvent<Answer>) => {
      const read = this.#running;
      if (worker !== this.#worker || !read || read.id !== event.data.id) return;
      this.#running = undefined;
      this.#settle(read, "error" in event.data ? new Error(event.data.error) : undefined, "rows" in event.data ? event.data.rows : undefined);
      this.#pump();
    };
    worker.onerror = (event) => {
      // The worker itself failed (not a query: those answer with an error): the next read starts another.
      event.preventDefault();
      if (worker !== this.#worker) return;
      this.#worker = undefined;
      const read = this.#running;
      this.#running = undefined;
      if (read) this.#settle(read, new Error(`the ledger read worker failed: ${event.message}`));
      this.#pump();
    };
    return worker;
  }

  #terminate(worker: Worker): void {
    this.#worker = undefined;
    this.#stopping = new Promise<void>((ended) => worker.addEventListener("close", () => ended())).then(() => {
      this.#stopping = undefined;
      this.#pump();
    });
    worker.terminate();
  }

  #timedOut(read: Read): void {
    const error = new ReadRefused("timeout", `the ledger read took longer than ${this.limits.timeoutMs / 1000} s and was stopped`);
    const queued = this.#queue.indexOf(read);
    if (queued !== -1) this.#queue.splice(queued, 1);
    else if (read === this.#running && this.#worker) {
      this.#running = undefined;
      this.#terminate(this.#worker);
    }
    this.#settle(read, error);
  }

  #settle(read: Read, error: Error | undefined, rows: unknown[] = []): void {
    clearTimeout(read.timer);
    if (error) read.reject(error);
    else read.resolve(rows);
  }
}

// The worker's side: one read-only connection, one query per message, in order.
if (!Bun.isMainThread) {
  let db: Database | Error = new Error("the store was not named");
  addEventListener("message", (event) => {
    const message = (event as MessageEvent<{ path: string } | { id: number; sql: string; args: Arg[] }>).data;
    if ("path" in message) {
      try {
        db = new Database(message.path, { readonly: true, strict: true });
        db.exec("PRAGMA busy_timeout = 5000;");
      } catch (error) {
        db = error as Error; // answered to every read, so each fails with sqlite's reason
      }
      return;
    }
    try {
      if (db instanceof Error) throw db;
      postMessage({ id: message.id, rows: db.query(message.sql).all(...message.args) } satisfies Answer);
    } catch (error) {
      postMessage({ id: message.id, error: `cannot read the store: ${(error as Error).message}` } satisfies Answer);
    }
  });
}
