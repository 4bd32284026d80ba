// The fleet's metering ledger in PostgreSQL: every replica's batches in one table (one multi-row insert
// per batch), so the usage views sum the same rows on every replica (design/replicas.md, "What the fleet shares").
import type { SQL, TransactionSQL } from "bun";
import type { LedgerQuery, LedgerRow, LedgerStore, LedgerSum } from "../ledger.ts";
import { namedSumsSql, stepSumsSql, type LedgerNamedSum, type LedgerSeriesQuery, type LedgerStepQuery, type LedgerStepSum } from "../ledger-series.ts";
import { numbers } from "./writes.ts";

const SUMMED = ["requests", "input", "output", "cache_read", "cache_creation"] as const;
const STEP_SUMMED = ["t", ...SUMMED] as const;
const SUMS_WITH_LAST = [...SUMMED, "last_ts"] as const;

export class PgLedgerStore implements LedgerStore {
  constructor(private readonly sql: SQL) {}

  append(rows: readonly LedgerRow[]): Promise<void> {
    return this.appendIn(this.sql, rows);
  }

  /** The batch as one multi-row insert, through `sql` (a transaction's, for the spool's replay). */
  async appendIn(sql: SQL | TransactionSQL, rows: readonly LedgerRow[]): Promise<void> {
    if (rows.length === 0) return;
    const values = rows.map((r) => ({ ts: r.ts, key_id: r.key_id, group_name: r.group_name, pool: r.pool, model: r.model, requests: r.requests, input: r.input, output: r.output, cache_read: r.cache_read, cache_creation: r.cache_creation }));
    await sql`INSERT INTO ledger ${sql(values)}`;
  }

  async sums(query: LedgerQuery): Promise<LedgerSum[]> {
    if (query.groups !== undefined && query.groups.length === 0) return [];
    const where: string[] = [];
    const args: (string | number | readonly string[])[] = [];
    const arg = (value: string | number | readonly string[]) => (args.push(value), `$${args.length}`);
    if (query.from !== undefined) where.push(`ts >= ${arg(query.from)}`);
    if (query.to !== undefined) where.push(`ts < ${arg(query.to)}`);
    if (query.key !== undefined) where.push(`key_id = ${arg(query.key)}`);
    if (query.pool !== undefined) where.push(`pool = ${arg(query.pool)}`);
    if (query.groups !== undefined) where.push(`group_name = ANY(${arg(query.groups)}::text[])`);
    const rows = await this.sql.unsafe(
      `SELECT key_id, model, SUM(requests) AS requests, SUM(input) AS input, SUM(output) AS output, SUM(cache_read) AS cache_read, SUM(cache_creation) AS cache_creation, MAX(ts) AS last_ts
FROM ledger ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} GROUP BY key_id, model`,
      args as unknown[],
    );
    return rows.map((row: LedgerSum) => numbers(row, SUMS_WITH_LAST));
  }

  async namedSums(query: LedgerSeriesQuery): Promise<LedgerNamedSum[]> {
    const args: (string | number)[] = [];
    const rows = await this.sql.unsafe(namedSumsSql(query, (v) => (args.push(v), `$${args.length}`)), args);
    return rows.map((row: LedgerNamedSum) => numbers(row, SUMMED));
  }

  async stepSums(query: LedgerStepQuery): Promise<LedgerStepSum[]> {
    const args: (string | number)[] = [];
    const rows = await this.sql.unsafe(stepSumsSql(query, (v) => (args.push(v), `$${args.length}`)), args);
    return rows.map((row: LedgerStepSum) => numbers(row, STEP_SUMMED));
  }
}
