// The store holds what must survive a restart: keys, groups, ledger, audit, config versions and the
// config overlay. Callers see only this interface, so a server database can replace the embedded
// sqlite one without touching them; hence every method is async even where sqlite is not.

/** A store that cannot be used as it is (unopenable, not a store, a row that does not parse): the boot stops naming it. */
export class StoreOpenError extends Error {}

export interface AppliedMigration {
  readonly version: number;
  readonly name: string;
  /** Unix seconds. */
  readonly applied_at: number;
}

export interface Store {
  /** `sqlite`, later others. */
  readonly module: string;
  /** Highest applied migration number. */
  schemaVersion(): Promise<number>;
  appliedMigrations(): Promise<readonly AppliedMigration[]>;
  /** Small durable facts about this store (its id, when it was created). */
  getMeta(key: string): Promise<string | undefined>;
  setMeta(key: string, value: string): Promise<void>;
  close(): Promise<void>;
}
