// The metering ledger: what each key's admitted requests used, by group, pool and model. Written in
// batches off the request path; read by the usage views, which price it with the current rate card.
import type { Database } from "bun:sqlite";
import type { TokenTiers } from "../governance/rate-card.ts";
import { namedSumsSql, stepSumsSql, type LedgerNamedSum, type LedgerSeriesQuery, type LedgerStepQuery, type LedgerStepSum } from "./ledger-series.ts";
import type { ReadWorker } from "./read-worker.ts";
import type { Store } from "./store.ts";

export interface LedgerRow extends TokenTiers {
  /** Epoch milliseconds. */
  readonly ts: number;
  readonly key_id: string;
  readonly group_name: string | null;
  readonly pool: string;
  readonly model: string;
  /** Requests admitted (a queued admission is 1, a usage report 0; a written row holds the second's sum). */
  readonly requests: number;
}

/** Sums of matching rows per (key, model): the model prices the tokens, the key groups the rows. */
export interface LedgerSum extends TokenTiers {
  readonly key_id: string;
  readonly model: string;
  readonly requests: number;
  /** Epoch milliseconds of the newest row summed (a key's last use). */
  readonly last_ts?: number;
}

export interface LedgerQuery {
  /** Epoch milliseconds, inclusive. */
  readonly from?: number;
  /** Epoch milliseconds, exclusive. */
  readonly to?: number;
  readonly key?: string;
  /** Rows of any of these groups. */
  readonly groups?: readonly string[];
  readonly pool?: string;
}

/** `boot`: a read before the listeners are up, which nothing waits behind (sqlite: on the main thread, no worker started). */
export interface LedgerReadOptions {
  readonly boot?: boolean;
}

export interface LedgerStore {
  append(rows: readonly LedgerRow[]): Promise<void>;
  sums(query: LedgerQuery, options?: LedgerReadOptions): Promise<LedgerSum[]>;
  /** GET /usage/series: a range's sums per (name, key, model), to choose the series and price their totals. */
  namedSums(query: LedgerSeriesQuery): Promise<LedgerNamedSum[]>;
  /** GET /usage/series: a range's sums per (step, kept name or null, model), the series' points. */
  stepSums(query: LedgerStepQuery): Promise<LedgerStepSum[]>;
  /** A fleet's spool (postgres/spool.ts): rows taken but not yet in the database. */
  readonly spooledRows?: number;
  /** Whether the store is refusing the ledger's writes (rows wait in the spool). */
  readonly unavailable?: boolean;
}

export class SqliteLedgerStore implements LedgerStore {
  /** `reader`: where the views' reads run off the main thread (read-worker.ts); none for `:memory:`, read here. */
  constructor(
    private readonly db: Database,
    private readonly reader?: ReadWorker,
  ) {}

  #all<T>(sql: string, args: readonly (string | number)[], options: LedgerReadOptions = {}): Promise<T[]> {
    if (this.reader && !options.boot) return this.reader.all<T>(sql, args);
    return Promise.resolve(this.db.query(sql).all(...args) as T[]);
  }

  async append(rows: readonly LedgerRow[]): Promise<void> {
    // db.query keeps the compiled statement: a batch goes out every 100 ms while requests are metered.
    const insert = this.db.query(
      "INSERT INTO ledger (ts, key_id, group_name, pool, model, requests, input, output, cache_read, cache_creation) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    const written = this.db.query("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    this.db.transaction(() => {
      for (const r of rows) insert.run(r.ts, r.key_id, r.group_name, r.pool, r.model, r.requests, r.input, r.output, r.cache_read, r.cache_creation);
      // With the rows, so after a crash the boot line can say from when metering may be missing.
      written.run(LEDGER_WRITTEN_AT, String(Date.now()));
    })();
  }

  async sums(query: LedgerQuery, options?: LedgerReadOptions): Promise<LedgerSum[]> {
    const where: string[] = [];
    const args: (string | number)[] = [];
    if (query.from !== undefined) where.push("ts >= ?"), args.push(query.from);
    if (query.to !== undefined) where.push("ts < ?"), args.push(query.to);
    if (query.key !== undefined) where.push("key_id = ?"), args.push(query.key);
    if (query.pool !== undefined) where.push("pool = ?"), args.push(query.pool);
    if (query.groups !== undefined) {
      if (query.groups.length === 0) return [];
      where.push(`group_name IN (${query.groups.map(() => "?").join(", ")})`);
      args.push(...query.groups);
    }
    const sql = `SELECT key_id, model, SUM(requests) AS requests, SUM(input) AS input, SUM(output) AS output, SUM(cache_read) AS cache_read, SUM(cache_creation) AS cache_creation, MAX(ts) AS last_ts
FROM ledger ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} GROUP BY key_id, model`;
    return this.#all<LedgerSum>(sql, args, options);
  }

  async namedSums(query: LedgerSeriesQuery): Promise<LedgerNamedSum[]> {
    const args: (string | number)[] = [];
    return this.#all<LedgerNamedSum>(namedSumsSql(query, (v) => (args.push(v), "?")), args);
  }

  async stepSums(query: LedgerStepQuery): Promise<LedgerStepSum[]> {
    const args: (string | number)[] = [];
    return this.#all<LedgerStepSum>(stepSumsSql(query, (v) => (args.push(v), "?")), args);
  }
}

const LEDGER_WRITTEN_AT = "ledger_written_at";
/** "running" from boot until a graceful stop writes "stopped": found "running" at boot, the last run crashed. */
const RUN_STATE = "run_state";

/**
 * Boot: whether the previous run over this store stopped without its last ledger batch (a crash or
 * kill -9), and when a batch was last written; then marks this run as running.
 */
export async function markRunning(store: Store): Promise<{ unclean: boolean; lastWrittenAt: number | null }> {
  const unclean = (await store.getMeta(RUN_STATE)) === "running";
  const written = await store.getMeta(LEDGER_WRITTEN_AT);
  await store.setMeta(RUN_STATE, "running");
  // A hand-edited value is not a time: the boot line then names none rather than failing.
  const at = Number(written);
  return { unclean, lastWrittenAt: written === undefined || !Number.isFinite(at) || Math.abs(at) > 8.64e15 ? null : at };
}

/** A graceful stop, after the last ledger batch is written. */
export const markStopped = (store: Store) => store.setMeta(RUN_STATE, "stopped");

/** Rows a graceful stop could not write because the store refused them (they are lost), for the next boot's line. */
const UNSAVED_AT_STOP = "ledger_unsaved_at_stop";

/** A stop with rows the store refused: noted if the store takes this one small write (the run stays unclean either way). */
export async function markUnsaved(store: Store, rows: number): Promise<void> {
  await store.setMeta(UNSAVED_AT_STOP, String(rows)).catch(() => {});
}

/** Boot: the rows the previous run's stop could not write (0 for none), then forgotten. */
export async function takeUnsaved(store: Store): Promise<number> {
  const rows = Number((await store.getMeta(UNSAVED_AT_STOP)) ?? 0);
  if (rows !== 0) await store.setMeta(UNSAVED_AT_STOP, "0");
  return Number.isSafeInteger(rows) && rows > 0 ? rows : 0;
}
