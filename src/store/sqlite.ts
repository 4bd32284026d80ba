// The embedded store: one sqlite file in WAL mode (readers never wait for the writer), migrated at open.
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { MIGRATIONS, type Migration } from "./migrations.ts";
import type { AppliedMigration, Store } from "./store.ts";

export class StoreOpenError extends Error {}

export class SqliteStore implements Store {
  readonly module = "sqlite";
  readonly path: string;
  readonly #db: Database;

  private constructor(path: string, db: Database) {
    this.path = path;
    this.#db = db;
  }

  /** Opens (creating if needed) and migrates. A newer schema than this build knows is refused. */
  /** The open database, for the sqlite implementations of the governance stores (keys, groups, ledger, audit). */
  get database(): Database {
    return this.#db;
  }

  static open(path: string, migrations: readonly Migration[] = MIGRATIONS, now = () => Math.floor(Date.now() / 1000)): SqliteStore {
    let db: Database;
    try {
      if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
      db = new Database(path, { create: true, strict: true });
      db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;");
    } catch (error) {
      throw new StoreOpenError(`cannot open sqlite store ${path}: ${(error as Error).message}`);
    }
    const store = new SqliteStore(path, db);
    try {
      store.#migrate(migrations, now);
    } catch (error) {
      db.close();
      throw error instanceof StoreOpenError ? error : new StoreOpenError(`cannot migrate sqlite store ${path}: ${(error as Error).message}`);
    }
    return store;
  }

  #migrate(migrations: readonly Migration[], now: () => number): void {
    this.#db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT;`);
    const current = this.#currentVersion();
    const known = Math.max(0, ...migrations.map((m) => m.version));
    if (current > known) {
      throw new StoreOpenError(`store ${this.path} is at schema version ${current}, newer than this build knows (${known}); run a newer gateway`);
    }
    const record = this.#db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (migration.version <= current) continue;
      this.#db.transaction(() => {
        this.#db.exec(migration.sql);
        record.run(migration.version, migration.name, now());
      })();
    }
  }

  #currentVersion(): number {
    const row = this.#db.query("SELECT MAX(version) AS version FROM schema_migrations").get() as { version: number | null };
    return row.version ?? 0;
  }

  async schemaVersion(): Promise<number> {
    return this.#currentVersion();
  }

  async appliedMigrations(): Promise<readonly AppliedMigration[]> {
    return this.#db.query("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").all() as AppliedMigration[];
  }

  async getMeta(key: string): Promise<string | undefined> {
    const row = this.#db.query("SELECT value FROM meta WHERE key = ?").get(key) as { value: string } | null;
    return row?.value;
  }

  async setMeta(key: string, value: string): Promise<void> {
    this.#db.query("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value").run(key, value);
  }

  async close(): Promise<void> {
    // Fold the WAL back into the main file so a stopped gateway leaves one self-contained file.
    try {
      this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE);");
    } finally {
      this.#db.close();
    }
  }
}
