// The ledger read behind GET /usage/series, one SQL text for both stores: sqlite and PostgreSQL differ
// here only in how a parameter is written. Both reads are a range of `ts`, so ledger_by_time serves them.
import type { TokenTiers } from "../governance/rate-card.ts";

/** What a series is named by: the row's model, key id, or group (a key without one is named ''). */
export type LedgerDimension = "model" | "key" | "group";

const DIMENSION_SQL: Record<LedgerDimension, string> = { model: "model", key: "key_id", group: "COALESCE(group_name, '')" };

/** Sums of [from, to) per (name, key, model): priced per (key, model) like every other usage view. */
export interface LedgerNamedSum extends TokenTiers {
  readonly name: string;
  readonly key_id: string;
  readonly model: string;
  readonly requests: number;
}

/** Sums of one step per (name, model); `name` null for every name not kept (the view's "(other)"). */
export interface LedgerStepSum extends TokenTiers {
  /** Epoch milliseconds: the step's start. */
  readonly t: number;
  readonly name: string | null;
  readonly model: string;
  readonly requests: number;
}

export interface LedgerSeriesQuery {
  /** Epoch milliseconds, inclusive. */
  readonly from: number;
  /** Epoch milliseconds, exclusive. */
  readonly to: number;
  readonly by: LedgerDimension;
  /** Only this key's rows (one key's usage over time). */
  readonly keyId?: string;
}

export interface LedgerStepQuery extends LedgerSeriesQuery {
  /** Milliseconds; steps start at multiples of it. */
  readonly step: number;
  /** The names summed on their own (at most the view's 20); the rest are summed together. */
  readonly keep: readonly string[];
}

const SUMS = "SUM(requests) AS requests, SUM(input) AS input, SUM(output) AS output, SUM(cache_read) AS cache_read, SUM(cache_creation) AS cache_creation";

/** The key filter, written after the range so parameters keep their textual order (sqlite's `?`). */
const ofKey = (query: LedgerSeriesQuery, param: Param) => (query.keyId === undefined ? "" : ` AND key_id = ${param(query.keyId)}`);

/** `param(value)` writes one parameter in the store's syntax and returns its placeholder. */
type Param = (value: string | number) => string;

export function namedSumsSql(query: LedgerSeriesQuery, param: Param): string {
  const name = DIMENSION_SQL[query.by];
  return `SELECT ${name} AS name, key_id, model, ${SUMS} FROM ledger WHERE ts >= ${param(query.from)} AND ts < ${param(query.to)}${ofKey(query, param)} GROUP BY ${name}, key_id, model`;
}

export function stepSumsSql(query: LedgerStepQuery, param: Param): string {
  // The step is one of the view's fixed steps, written as a literal so both stores divide integers.
  if (!Number.isSafeInteger(query.step) || query.step <= 0) throw new Error(`not a step: ${query.step}`);
  const name = DIMENSION_SQL[query.by];
  const kept = query.keep.length === 0 ? "NULL" : `CASE WHEN ${name} IN (${query.keep.map((k) => param(k)).join(", ")}) THEN ${name} END`;
  // GROUP BY by position: the kept names' parameters are written once, which sqlite's `?` needs.
  return `SELECT ts - ts % ${query.step} AS t, ${kept} AS name, model, ${SUMS} FROM ledger WHERE ts >= ${param(query.from)} AND ts < ${param(query.to)}${ofKey(query, param)} GROUP BY 1, 2, 3`;
}
