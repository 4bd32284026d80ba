// A replica's metering spool (design/replicas.md, "Database unreachable"): a ledger batch the database
// refuses goes to `store.settings.spool_path` as one line {id, rows}, fsynced before the write counts as
// done, and from then on every batch follows it there, in order, until the spool is replayed: every
// second while the database is away, and at boot. Each batch is written to the ledger in one transaction
// with its id in `spooled_batches`, so a batch replayed twice (a crash between the commit and the spool's
// trim) is written once. A line torn by a crash (never fsynced) is skipped: its requests are the crash
// window's, as with sqlite. One live process per spool file (its lock beside it).
import type { SQL } from "bun";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { LedgerQuery, LedgerRow, LedgerStore, LedgerSum } from "../ledger.ts";
import { fsPromises } from "../fs-promises.ts";
import { lockStore, type StoreLock } from "../lock.ts";
import type { LedgerNamedSum, LedgerSeriesQuery, LedgerStepQuery, LedgerStepSum } from "../ledger-series.ts";
import type { PgLedgerStore } from "./ledger.ts";

const REPLAY_MS = 1_000;

interface SpooledBatch {
  readonly id: string;
  readonly rows: readonly LedgerRow[];
}

export interface SpoolEvents {
  /** The first batch went to the spool (the database refused it). */
  spooling(error: unknown): void;
  /** The spool was written to the database and emptied. */
  replayed(batches: number, rows: number): void;
}

export class SpoolingLedger implements LedgerStore {
  #rows = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** File operations one at a time: an append never lands in the middle of a replay's trim. */
  #turn: Promise<unknown> = Promise.resolve();
  readonly #lock: StoreLock;

  private constructor(
    private readonly inner: PgLedgerStore,
    private readonly sql: SQL,
    private readonly path: string,
    private readonly events: SpoolEvents,
  ) {
    this.#lock = lockStore(path, { name: "metering spool", opening: "metering spool", setting: "store.settings.spool_path" });
    // Boot: what an earlier run left (written by the replay the boot starts).
    this.#rows = existsSync(path) ? batchesIn(readFileSync(path)).batches.reduce((n, b) => n + b.rows.length, 0) : 0;
    if (this.#rows > 0) this.#schedule(0);
  }

  /** Takes the spool's lock (a second live process on it is refused naming it) and counts what it holds. Throws StoreOpenError. */
  static open(inner: PgLedgerStore, sql: SQL, path: string, events: SpoolEvents): SpoolingLedger {
    return new SpoolingLedger(inner, sql, path, events);
  }

  /** Rows spooled and not yet in the database. */
  get spooledRows(): number {
    return this.#rows;
  }

  /** While something waits in the spool the store counts as unavailable. */
  get unavailable(): boolean {
    return this.#rows > 0;
  }

  async append(rows: readonly LedgerRow[]): Promise<void> {
    if (rows.length === 0) return;
    if (this.#rows === 0) {
      try {
        return await this.inner.append(rows);
      } catch (error) {
        this.events.spooling(error);
      }
    }
    // Behind what is spooled already, so the ledger's order holds; a disk that refuses too throws (the metering keeps the rows in memory).
    await this.#inTurn(() => appendBatch(this.path, { id: crypto.randomUUID(), rows }));
    this.#rows += rows.length;
    this.#schedule(REPLAY_MS);
  }

  sums(query: LedgerQuery): Promise<LedgerSum[]> {
    return this.inner.sums(query);
  }

  namedSums(query: LedgerSeriesQuery): Promise<LedgerNamedSum[]> {
    return this.inner.namedSums(query);
  }

  stepSums(query: LedgerStepQuery): Promise<LedgerStepSum[]> {
    return this.inner.stepSums(query);
  }

  /** Writes every spooled batch to the database, exactly once each, then empties the spool. Throws when the database refuses. */
  replay(): Promise<void> {
    return this.#inTurn(async () => {
      const { batches, bytes } = existsSync(this.path) ? batchesIn(await fsPromises().readFile(this.path)) : { batches: [], bytes: 0 };
      if (batches.length === 0) return;
      for (const batch of batches) {
        await this.sql.begin(async (tx) => {
          const fresh = await tx`INSERT INTO spooled_batches (id, written_at) VALUES (${batch.id}, ${Date.now()}) ON CONFLICT (id) DO NOTHING RETURNING id`;
          if (fresh.length === 1) await this.inner.appendIn(tx, batch.rows);
        });
      }
      await trim(this.path, bytes);
      const rows = batches.reduce((n, b) => n + b.rows.length, 0);
      this.#rows = Math.max(0, this.#rows - rows);
      this.events.replayed(batches.length, rows);
    });
  }

  /**
   * This replica's run state, beside its spool (a fleet's store is shared, so it is kept here, per
   * replica): answers whether the run before it did not stop cleanly, and marks this one running.
   */
  markRunning(): { unclean: boolean; lastWrittenAt: null } {
    const marker = `${this.path}.running`;
    const unclean = existsSync(marker);
    writeFileSync(marker, `${JSON.stringify({ pid: process.pid, started_at: Date.now() })}\n`, { mode: 0o600 });
    return { unclean, lastWrittenAt: null };
  }

  /** A clean stop: the next boot has nothing to warn of. */
  markStopped(): void {
    rmSync(`${this.path}.running`, { force: true });
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#lock.release();
  }

  #schedule(ms: number): void {
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.replay().then(
        () => {
          if (this.#rows > 0) this.#schedule(0);
        },
        () => this.#schedule(REPLAY_MS),
      );
    }, ms);
    this.#timer.unref?.();
  }

  #inTurn<T>(step: () => Promise<T>): Promise<T> {
    const run = this.#turn.then(step);
    this.#turn = run.catch(() => undefined);
    return run;
  }
}

/** The whole lines of a spool's bytes, and how many bytes they take (a torn last line is left out of both). */
function batchesIn(bytes: Uint8Array): { batches: SpooledBatch[]; bytes: number } {
  const batches: SpooledBatch[] = [];
  const decoder = new TextDecoder();
  let at = 0;
  for (let end = bytes.indexOf(10, at); end !== -1; end = bytes.indexOf(10, at)) {
    const line = decoder.decode(bytes.subarray(at, end));
    at = end + 1;
    try {
      const batch = JSON.parse(line) as SpooledBatch;
      if (typeof batch.id === "string" && Array.isArray(batch.rows)) batches.push(batch);
    } catch {
      // A line a crash cut short: its rows were never acknowledged.
    }
  }
  return { batches, bytes: at };
}

async function appendBatch(path: string, batch: SpooledBatch): Promise<void> {
  const file = await fsPromises().open(path, "a", 0o600);
  try {
    await file.write(`${JSON.stringify(batch)}\n`);
    await file.datasync();
  } finally {
    await file.close();
  }
}

/** Drops the first `bytes` (the batches just written), keeping what was appended since, atomically. */
async function trim(path: string, bytes: number): Promise<void> {
  const { readFile, writeFile, rename, open } = fsPromises();
  const rest = (await readFile(path)).subarray(bytes);
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, rest, { mode: 0o600 });
  const file = await open(temporary, "r");
  await file.datasync().finally(() => file.close());
  await rename(temporary, path);
}
