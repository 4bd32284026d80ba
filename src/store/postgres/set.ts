// The fleet store's concerns as governance uses them (store/set.ts), over one PostgresStore's pool.
import type { StoreSet } from "../set.ts";
import { PgAuditStore } from "./audit.ts";
import { PgGroupStore } from "./groups.ts";
import { PgKeyStore } from "./keys.ts";
import { PgLedgerStore } from "./ledger.ts";
import { PgLimitCounters } from "./limits.ts";
import { PgConfigVersions } from "./config-versions.ts";
import type { PostgresStore } from "./store.ts";

/** `replicaId`: the changes this replica applies are announced to the others under it (changes.ts). */
export function postgresStores(store: PostgresStore, replicaId: string): StoreSet & { readonly limits: PgLimitCounters; readonly ledger: PgLedgerStore } {
  return {
    store,
    audit: new PgAuditStore(store.sql, replicaId),
    keys: new PgKeyStore(store.sql),
    groups: new PgGroupStore(store.sql),
    ledger: new PgLedgerStore(store.sql),
    limits: new PgLimitCounters(store.sql, replicaId),
    configVersions: new PgConfigVersions(store.sql),
    label: store.name,
  };
}
