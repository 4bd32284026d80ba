// GET /usage/series and /usage/today read from a ledger of ~1 M rows (no HTTP around them): sqlite in a
// file and PostgreSQL started as the tests start it. The rows are per-second sums of 300 keys in 12
// groups over 8 models, spread evenly over the last 30 days, so a range reads its share of them (1h
// ~1.4 k rows, 24h ~33 k, 7d ~233 k, 30d all). Each read is timed as the view does it (both queries and
// the pricing), median and max of 5 after one warm-up; the plans say which index serves them.
//
//   npx bun bench/usage-series.ts             # ~2 min; --rows N to change the ledger's size
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { readSeries, USAGE_RANGES, type UsageRange } from "../src/governance/usage-series.ts";
import { SqliteLedgerStore, type LedgerRow, type LedgerStore } from "../src/store/ledger.ts";
import type { LedgerDimension } from "../src/store/ledger-series.ts";
import { namedSumsSql } from "../src/store/ledger-series.ts";
import { PgLedgerStore } from "../src/store/postgres/ledger.ts";
import { PostgresStore } from "../src/store/postgres/store.ts";
import { SqliteStore } from "../src/store/sqlite.ts";
import { startPostgres } from "../tests/support/postgres.ts";

const ROWS = Number(process.argv[process.argv.indexOf("--rows") + 1] ?? 0) || 1_000_000;
const NOW = Date.now();
const MODELS = Array.from({ length: 8 }, (_, i) => `model-${i}`);
const pricing = { rate_card: Object.fromEntries(MODELS.map((m, i) => [m, { input: 0.5 + i, output: 1.5 + 2 * i, cache_read: 0.05 }])), per_request_fee: 0.001 };

/** Row i of the ledger: evenly spread back from NOW over 30 days, keys and models cycling at different rates. */
function rowAt(i: number): LedgerRow {
  const key = i % 300;
  return {
    ts: Math.floor((NOW - (i * 30 * 86_400_000) / ROWS) / 1000) * 1000,
    key_id: `key_${String(key).padStart(26, "0")}`,
    group_name: key % 25 === 0 ? null : `team-${key % 12}`,
    pool: "chat",
    model: MODELS[(i * 7) % MODELS.length]!,
    requests: 1 + (i % 3),
    input: 200 + (i % 997),
    output: 50 + (i % 331),
    cache_read: i % 5 === 0 ? 128 : 0,
    cache_creation: 0,
  };
}

async function fill(ledger: LedgerStore): Promise<number> {
  const started = performance.now();
  for (let at = 0; at < ROWS; at += 5_000) {
    const batch: LedgerRow[] = [];
    for (let i = at; i < Math.min(ROWS, at + 5_000); i++) batch.push(rowAt(i));
    await ledger.append(batch);
  }
  return (performance.now() - started) / 1000;
}

async function timed(read: () => Promise<unknown>): Promise<string> {
  await read();
  const ms: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await read();
    ms.push(performance.now() - started);
  }
  ms.sort((a, b) => a - b);
  return `${ms[2]!.toFixed(1)} / ${ms[4]!.toFixed(1)} ms`;
}

async function measure(name: string, ledger: LedgerStore, plan: (sql: string) => Promise<string>): Promise<void> {
  console.log(`\n${name}: median / max of 5 reads`);
  console.log(`| range | by model | by key | by group | series, points (by key) |`);
  console.log(`|---|---|---|---|---|`);
  for (const range of Object.keys(USAGE_RANGES) as UsageRange[]) {
    const cells: string[] = [];
    for (const by of ["model", "key", "group"] as LedgerDimension[]) cells.push(await timed(() => readSeries(ledger, pricing, by, range, NOW)));
    const view = await readSeries(ledger, pricing, "key", range, NOW);
    cells.push(`${view.series.length}, ${view.series.reduce((n, s) => n + s.points.length, 0)}`);
    console.log(`| ${range} | ${cells.join(" | ")} |`);
  }
  const midnight = NOW - (NOW % 86_400_000);
  console.log(`today (the ledger's sums since 00:00 UTC): ${await timed(() => ledger.sums({ from: midnight }))}`);
  // The plan of the 1h read with its two times written in (the only parameters it has).
  const sql = namedSumsSql({ from: NOW - 3_600_000, to: NOW, by: "key" }, (v) => String(v));
  console.log(`plan of the 1h read: ${await plan(sql)}`);
}

const dir = mkdtempSync(join(tmpdir(), "bench-usage-series-"));
const lite = SqliteStore.open(join(dir, "gateway.db"));
const liteLedger = new SqliteLedgerStore(lite.database);
console.log(`sqlite: ${ROWS} rows written in ${(await fill(liteLedger)).toFixed(1)} s`);
await measure("sqlite", liteLedger, async (sql) => (lite.database.query(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join("; "));
lite.close();

const pg = await startPostgres({ dir: mkdtempSync(join(tmpdir(), "bench-usage-series-pg-")) });
try {
  const store = await PostgresStore.open({ url: await pg.createDatabase("usage"), schema: "public", poolSize: 4, connectTimeoutSecs: 5 }, { signingKey: "bench".repeat(10) });
  const pgLedger = new PgLedgerStore(store.sql);
  console.log(`\npostgres: ${ROWS} rows written in ${(await fill(pgLedger)).toFixed(1)} s`);
  await store.sql.unsafe("ANALYZE ledger");
  await measure("postgres", pgLedger, async (sql) => ((await store.sql.unsafe(`EXPLAIN ${sql}`)) as { "QUERY PLAN": string }[]).map((r) => r["QUERY PLAN"].trim()).join("; "));
  await store.close();
} finally {
  await pg.stop();
}
