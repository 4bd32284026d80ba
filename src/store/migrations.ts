// Numbered schema migrations. Each runs once, in order, inside a transaction with its bookkeeping row,
// so a crash mid-migration leaves the schema at the previous version. Append; never edit a shipped one.
// Each concern keeps its tables beside its own store code; the numbers are reserved here:
// 1 meta; 2-3 keys and audit (keys-schema.ts); 4-5 groups and the metering ledger (groups-schema.ts);
// 6 the audit entry's credential (keys-schema.ts); 7 a fleet's replicas (postgres only:
// postgres/migrations.ts); 8 a fleet's limit counters (postgres/limits-schema-8.ts); 9 a fleet's config
// versions, 10 a fleet's spooled metering batches (postgres/migrations.ts); 11 a fleet's limit counters
// in two tables (postgres/limits-schema.ts). The next migration of both stores is 12.
import { GROUP_MIGRATIONS } from "./groups-schema.ts";
import { AUDIT_CREDENTIAL, KEY_MIGRATIONS } from "./keys-schema.ts";

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "meta",
    sql: `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;`,
  },
  ...KEY_MIGRATIONS,
  ...GROUP_MIGRATIONS,
  AUDIT_CREDENTIAL,
];
