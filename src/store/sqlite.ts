// The embedded store: one sqlite file in WAL mode (readers never wait for the writer), migrated at open.
import { Database } from "bun:sqlite";
import { mkdirSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { MIGRATIONS, type Migration } from "./migrations.ts";
import { StoreOpenError, type AppliedMigration, type Store } from "./store.ts";

export { StoreOpenError };

export class SqliteStore implements Store {
  readonly module = "sqlite";
  readonly path: string;
  /** Whether this open created the file: a new store is made only where none exists (the boot logs it). */
  readonly created: boolean;
  readonly #db: Database;

  private constructor(path: string, db: Database, created: boolean) {
    this.path = path;
    this.#db = db;
    this.created = created;
  }

  /** The open database, for the sqlite implementations of the governance stores (keys, groups, ledger, audit). */
  get database(): Database {
    return this.#db;
  }

  /**
   * Opens and migrates; creates the file only when there is none. A file that is there but is not a
   * usable store (zero length, not sqlite, a page that fails `PRAGMA quick_check`) is refused rather than
   * started over as an empty store, which would silently forget every key, budget and audit entry.
   * A newer schema than this build knows is refused too.
   */
  static open(path: string, migrations: readonly Migration[] = MIGRATIONS, now = () => Math.floor(Date.now() / 1000)): SqliteStore {
    const created = path !== ":memory:" && existingSize(path) === undefined;
    if (existingSize(path) === 0) throw new StoreOpenError(`store ${path} is an empty file (zero length), not a store; restore it from a backup, or remove it to start a new empty store`);
    let db: Database;
    try {
      if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
      db = new Database(path, { create: created || path === ":memory:", strict: true });
    } catch (error) {
      throw new StoreOpenError(`cannot open sqlite store ${path}: ${(error as Error).message}`);
    }
    try {
      db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;");
      if (!created) quickCheck(db, path);
    } catch (error) {
      db.close();
      if (error instanceof StoreOpenError) throw error;
      const message = (error as Error).message;
      throw new StoreOpenError(/not a database/i.test(message) ? `store ${path} is not a sqlite database (${message})` : `cannot open sqlite store ${path}: ${message}`);
    }
    const store = new SqliteStore(path, db, created);
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

/** The file's size, or undefined when there is none. */
function existingSize(path: string): number | undefined {
  if (path === ":memory:") return undefined;
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}

/** sqlite's own page and index check, without the slower cross-checks of integrity_check (~0.2 s per million ledger rows). */
function quickCheck(db: Database, path: string): void {
  const rows = db.query("PRAGMA quick_check(3)").all() as { quick_check: string }[];
  const problems = rows.map((r) => r.quick_check.replace(/\s*\n\s*/g, " ")).filter((r) => r !== "ok");
  if (problems.length > 0) throw new StoreOpenError(`store ${path} is corrupt (sqlite quick_check: ${problems.join("; ")}); restore it from a backup`);
}
