// Tables of API-created groups (migration 4) and the metering ledger (migration 5).
import type { Migration } from "./migrations.ts";

export const GROUP_MIGRATIONS: readonly Migration[] = [
  {
    version: 4,
    name: "groups",
    // limits and child_default are LimitView arrays as JSON: they are read whole, never queried into.
    sql: `CREATE TABLE groups (
  name TEXT PRIMARY KEY,
  parent TEXT,
  enabled INTEGER NOT NULL DEFAULT 1,
  limits TEXT NOT NULL DEFAULT '[]',
  child_default TEXT,
  created_at INTEGER NOT NULL
) STRICT;`,
  },
  {
    version: 5,
    name: "ledger",
    // Sum rows: admitted requests and tokens by tier of one key, group, pool and model within one second
    // (the metering queue adds them up before a batch is written); spend is derived at read time from
    // the rate card. ts is epoch milliseconds (whole seconds), so windows can be summed back at boot.
    sql: `CREATE TABLE ledger (
  id INTEGER PRIMARY KEY,
  ts INTEGER NOT NULL,
  key_id TEXT NOT NULL,
  group_name TEXT,
  pool TEXT NOT NULL,
  model TEXT NOT NULL,
  requests INTEGER NOT NULL,
  input INTEGER NOT NULL,
  output INTEGER NOT NULL,
  cache_read INTEGER NOT NULL,
  cache_creation INTEGER NOT NULL
) STRICT;
CREATE INDEX ledger_by_time ON ledger (ts);
CREATE INDEX ledger_by_key ON ledger (key_id, ts);
CREATE INDEX ledger_by_group ON ledger (group_name, ts);`,
  },
];
