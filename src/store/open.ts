// The boot's store, whichever module the config names: sqlite's file (locked to this process) or the
// fleet's PostgreSQL (loaded only then). Answers the concerns governance is handed, how log lines name the
// store, and, for a fleet, how this replica hears the others' changes.
import type { StoreSettings } from "../config/snapshot.ts";
import type { ReplicaInfo, ReplicaRegistry } from "./postgres/replicas.ts";
import type { SpoolEvents, SpoolingLedger } from "./postgres/spool.ts";
import type { StoreSet } from "./set.ts";
import { sqliteStores } from "./set.ts";
import { SqliteStore } from "./sqlite.ts";

export interface OpenedStore {
  readonly stores: StoreSet;
  /** The sqlite path, or `store postgres (user@host:port/db)`: what log lines name. */
  readonly label: string;
  /** A new sqlite file was made (the boot says so). */
  readonly created: boolean;
  /** Whether this process is the store's only user (sqlite): run state and unsaved rows are kept per store. */
  readonly single: boolean;
  /** A fleet's: starts hearing other replicas' changes; answers the stop. */
  readonly listen?: (changed: (resources: readonly string[]) => void, resubscribed: () => void) => Promise<() => Promise<void>>;
  /** This replica's id in the fleet (a fleet's store only). */
  readonly replicaId?: string;
  /** A fleet's: the ledger through this replica's metering spool (its lock taken: throws StoreOpenError naming it). */
  readonly spool?: (events: SpoolEvents) => SpoolingLedger;
  /** A fleet's: this replica's entry in the replicas table, registered once its listener is up. */
  readonly registry?: (self: Omit<ReplicaInfo, "id">, configVersion: () => number, failed: (error: unknown) => void) => ReplicaRegistry;
}

/** Throws StoreOpenError naming the store when it cannot be used. `path` is the sqlite path already resolved. */
export async function openStore(settings: StoreSettings, path: string, signingKey: string | undefined): Promise<OpenedStore> {
  if (settings.module === "sqlite") {
    const store = SqliteStore.open(path, undefined, undefined, { lock: true });
    return { stores: sqliteStores(store), label: path, created: store.created, single: true };
  }
  const [{ PostgresStore }, { postgresStores }, { listenForChanges }, { ReplicaRegistry: Registry }, { SpoolingLedger: Spooling }] = await Promise.all([
    import("./postgres/store.ts"),
    import("./postgres/set.ts"),
    import("./postgres/changes.ts"),
    import("./postgres/replicas.ts"),
    import("./postgres/spool.ts"),
  ]);
  const store = await PostgresStore.open(
    { url: settings.url.reveal(), schema: settings.schema, poolSize: settings.poolSize, connectTimeoutSecs: settings.connectTimeoutSecs },
    { signingKey: signingKey ?? "" },
  );
  const replicaId = `replica_${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}`;
  const stores = postgresStores(store, replicaId);
  return {
    stores,
    label: store.name,
    created: false,
    single: false,
    replicaId,
    listen: (changed, resubscribed) => listenForChanges(store.sql, replicaId, changed, resubscribed),
    spool: (events) => Spooling.open(stores.ledger, store.sql, settings.spoolPath, events),
    registry: (self, configVersion, failed) => new Registry(store.sql, { ...self, id: replicaId }, configVersion, failed, () => stores.limits.alive()),
  };
}
