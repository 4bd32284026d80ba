// The embedded store: one sqlite file in WAL mode (readers never wait for the writer), migrated at open.
import { Database } from "bun:sqlite";
import { closeSync, mkdirSync, openSync, readSync, statSync, type Stats } from "node:fs";
import { dirname } from "node:path";
import { MIGRATIONS, type Migration } from "./migrations.ts";
import { lockStore, type StoreLock } from "./lock.ts";
import { ReadWorker } from "./read-worker.ts";
import { StoreOpenError, type AppliedMigration, type Store } from "./store.ts";

export { StoreOpenError };

export interface OpenOptions {
  /** Hold the store's lock (lock.ts) while open: the gateway's run does; reading tools and tests need not. */
  readonly lock?: boolean;
}

export class SqliteStore implements Store {
  readonly module = "sqlite";
  readonly path: string;
  /** Whether this open created the file: a new store is made only where none exists (the boot logs it). */
  readonly created: boolean;
  readonly #db: Database;

  readonly #lock: StoreLock | undefined;
  /** The views' long reads; its worker starts on the first of them. A `:memory:` database is this connection's alone. */
  readonly reader: ReadWorker | undefined;

  private constructor(path: string, db: Database, created: boolean, lock: StoreLock | undefined) {
    this.path = path;
    this.#db = db;
    this.created = created;
    this.#lock = lock;
    this.reader = path === ":memory:" ? undefined : new ReadWorker(path);
  }

  /** The open database, for the sqlite implementations of the governance stores (keys, groups, ledger, audit). */
  get database(): Database {
    return this.#db;
  }

  /**
   * Opens and migrates; creates the file only when there is none. A file that is there but is not a
   * usable store (a directory, zero length, cut short, not sqlite, another application's sqlite file, a
   * page that fails `PRAGMA quick_check`, a table missing) is refused rather than started over as an
   * empty store, which would silently forget every key, budget and audit entry. A newer schema than this
   * build knows is refused too.
   */
  static open(path: string, migrations: readonly Migration[] = MIGRATIONS, now = () => Math.floor(Date.now() / 1000), options: OpenOptions = {}): SqliteStore {
    const existing = existingFile(path);
    const created = path !== ":memory:" && existing === undefined;
    if (existing) refuseUnusableFile(path, existing);
    let db: Database;
    let lock: StoreLock | undefined;
    try {
      if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    } catch (error) {
      throw new StoreOpenError(`cannot open sqlite store ${path}: ${(error as Error).message}`);
    }
    // Taken before the store is read or written: a second process must not mark the first's run unclean.
    if (options.lock && path !== ":memory:") lock = lockStore(path);
    try {
      db = new Database(path, { create: created || path === ":memory:", strict: true });
    } catch (error) {
      lock?.release();
      throw new StoreOpenError(`cannot open sqlite store ${path}: ${(error as Error).message}`);
    }
    try {
      db.exec("PRAGMA busy_timeout = 5000;");
      // Read-only checks first: a file that is refused is left byte for byte as it was.
      if (!created) quickCheck(db, path);
      if (!created && path !== ":memory:") refuseForeignDatabase(db, path);
      db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
    } catch (error) {
      db.close();
      lock?.release();
      if (error instanceof StoreOpenError) throw error;
      const message = (error as Error).message;
      if (/not a database/i.test(message)) throw new StoreOpenError(`store ${path} is not a sqlite database (${message})`);
      if (/malformed|corrupt/i.test(message)) throw new StoreOpenError(`store ${path} is corrupt (sqlite: ${message}); restore it from a backup`);
      throw new StoreOpenError(`cannot open sqlite store ${path}: ${message}`);
    }
    const store = new SqliteStore(path, db, created, lock);
    try {
      store.#migrate(migrations, now);
      store.#checkTables(migrations);
    } catch (error) {
      db.close();
      lock?.release();
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

  /** Every table the migrations create is there: a dropped one is named here, not met as a stack trace mid-boot. */
  #checkTables(migrations: readonly Migration[]): void {
    const present = new Set((this.#db.query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name));
    const missing = migrations.flatMap((m) => [...m.sql.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?(\w+)/gi)].map((match) => match[1]!)).filter((table) => !present.has(table));
    if (missing.length > 0) {
      throw new StoreOpenError(`store ${this.path} is at schema version ${this.#currentVersion()} but has no table ${missing.join(", ")}; restore it from a backup`);
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
    // The worker's connection first: a read it holds open would keep the checkpoint from emptying the WAL.
    await this.reader?.close();
    // Fold the WAL back into the main file so a stopped gateway leaves one self-contained file.
    try {
      this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE);");
    } finally {
      this.#db.close();
      // After the last write: a POST /restart successor starts only once this process lets go.
      this.#lock?.release();
    }
  }
}

/** What is at the path, or undefined when nothing is (then a new store is made). */
function existingFile(path: string): Stats | undefined {
  if (path === ":memory:") return undefined;
  try {
    return statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new StoreOpenError(`cannot open sqlite store ${path}: ${(error as Error).message}`);
  }
}

const SQLITE_MAGIC = "SQLite format 3\0";

/**
 * Refuses what is there but cannot be a store before sqlite opens it: a directory, a file this process
 * cannot read and write, a zero-length file, and a sqlite file cut short (its main file is always whole
 * pages, so a size that is not is a truncated copy or a disk that lost its tail).
 */
function refuseUnusableFile(path: string, stats: Stats): void {
  if (stats.isDirectory()) throw new StoreOpenError(`store ${path} is a directory, not a store file; point store.settings.path at a file`);
  // A pipe would hang the read below; a device is no store either.
  if (!stats.isFile()) throw new StoreOpenError(`store ${path} is not a regular file (a device, pipe or socket); point store.settings.path at a file`);
  if (stats.size === 0) throw new StoreOpenError(`store ${path} is an empty file (zero length), not a store; restore it from a backup, or remove it to start a new empty store`);
  const header = Buffer.alloc(100);
  let read: number;
  try {
    const fd = openSync(path, "r+");
    try {
      read = readSync(fd, header, 0, header.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    throw new StoreOpenError(`store ${path} cannot be read and written by this process (${(error as Error).message})`);
  }
  // Not sqlite at all: sqlite's own open says so ("not a sqlite database"). A prefix of the magic is a cut one.
  const seen = Math.min(read, SQLITE_MAGIC.length);
  if (header.toString("latin1", 0, seen) !== SQLITE_MAGIC.slice(0, seen)) return;
  const raw = header.readUInt16BE(16);
  const pageSize = raw === 1 ? 65536 : raw;
  if (read < header.length || pageSize < 512 || stats.size % pageSize !== 0) {
    const shape = read < header.length ? "shorter than a sqlite header" : `not a whole number of ${pageSize}-byte pages`;
    throw new StoreOpenError(`store ${path} is truncated (${stats.size} bytes, ${shape}); restore it from a backup`);
  }
}

/** A sqlite file of another application: the gateway's tables are not added to it, nor is it taken for a new store. */
function refuseForeignDatabase(db: Database, path: string): void {
  const tables = (db.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
  if (tables.includes("schema_migrations")) return;
  const holds = tables.length === 0 ? "it has no tables" : `it holds ${tables.slice(0, 5).join(", ")}${tables.length > 5 ? ", ..." : ""}`;
  throw new StoreOpenError(`store ${path} is a sqlite database but not a gateway store (no schema_migrations table; ${holds}); point store.settings.path at the gateway's store, or move this file away`);
}

/** sqlite's own page and index check, without the slower cross-checks of integrity_check (~0.2 s per million ledger rows). */
function quickCheck(db: Database, path: string): void {
  const rows = db.query("PRAGMA quick_check(3)").all() as { quick_check: string }[];
  const problems = rows.map((r) => r.quick_check.replace(/\s*\n\s*/g, " ")).filter((r) => r !== "ok");
  if (problems.length > 0) throw new StoreOpenError(`store ${path} is corrupt (sqlite quick_check: ${problems.join("; ")}); restore it from a backup`);
}
