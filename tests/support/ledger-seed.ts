// A large metering ledger written straight into a stopped gateway's sqlite file, for what must be read
// over many rows (tests/e2e/usage-read-worker.test.ts, bench/usage-series-stall.ts): one row a second
// each of 300 keys in 12 groups over 8 models, evenly spread back from `now` over 29 days, so each range
// of GET /usage/series reads its share and the 30-day range reads them all.
import { Database } from "bun:sqlite";

export const SEEDED_KEYS = 300;

/** Inserts `rows` ledger rows, each one request; the gateway must not hold the file. */
export function seedLedger(path: string, rows: number, now = Date.now()): void {
  const db = new Database(path);
  try {
    db.run(
      `WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n < ${rows - 1})
       INSERT INTO ledger (ts, key_id, group_name, pool, model, requests, input, output, cache_read, cache_creation)
       SELECT (${now} - n * ${Math.floor((29 * 86_400_000) / rows)}) / 1000 * 1000, 'key_' || (n % ${SEEDED_KEYS}), 'team-' || (n % 12), 'chat', 'model-' || (n * 7 % 8), 1, 200 + n % 997, 50 + n % 331, 0, 0 FROM i`,
    );
  } finally {
    db.close();
  }
}
