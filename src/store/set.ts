// One store's concerns as governance uses them: the interfaces of keys, groups, ledger and audit, built
// over the configured database. The boot opens a store and hands governance its set, so nothing above
// src/store knows which database keeps the rows (architecture principle 11).
import type { AuditStore } from "./audit.ts";
import { SqliteAuditStore } from "./audit.ts";
import { auditHeadPath } from "./audit-head.ts";
import type { GroupStore } from "./groups.ts";
import { SqliteGroupStore } from "./groups.ts";
import type { KeyStore } from "./keys.ts";
import { SqliteKeyStore } from "./keys.ts";
import type { LedgerStore } from "./ledger.ts";
import type { LimitCounters } from "./limit-counters.ts";
import type { ConfigVersionStore } from "./config-versions.ts";
import { SqliteLedgerStore } from "./ledger.ts";
import type { SqliteStore } from "./sqlite.ts";
import type { Store } from "./store.ts";

export interface StoreSet {
  /** Migrations, meta, close. */
  readonly store: Store;
  readonly audit: AuditStore;
  readonly keys: KeyStore;
  readonly groups: GroupStore;
  readonly ledger: LedgerStore;
  /** A fleet's shared limit counters; a single process counts in memory (none). */
  readonly limits?: LimitCounters;
  /** A fleet's config versions; a single process keeps its own in memory (none). */
  readonly configVersions?: ConfigVersionStore;
  /** What log lines name: the sqlite path, or `store postgres (user@host:port/db)`. */
  readonly label: string;
}

/** The embedded store's set; its audit head anchor sits beside the file (none for :memory:). */
export function sqliteStores(store: SqliteStore): StoreSet {
  return {
    store,
    audit: new SqliteAuditStore(store.database, auditHeadPath(store.path)),
    keys: new SqliteKeyStore(store.database),
    groups: new SqliteGroupStore(store.database),
    ledger: new SqliteLedgerStore(store.database, store.reader),
    label: store.path,
  };
}
