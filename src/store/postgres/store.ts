// The fleet's store on PostgreSQL (design/replicas.md): opened by every replica of a fleet against one
// database and schema. Opening connects (connect.ts), creates the schema if absent, migrates under an
// advisory lock (replicas booting together migrate once: the others wait, then find nothing to do),
// refuses a schema newer than the build, and checks that the fleet shares one signing key.
import type { SQL } from "bun";
import type { Migration } from "../migrations.ts";
import { StoreOpenError, type AppliedMigration, type Store } from "../store.ts";
import { connect, describeStore, type PostgresTarget } from "./connect.ts";
import { PG_MIGRATIONS } from "./migrations.ts";

/** pg_advisory_lock key of the migration lock: one number per schema, so fleets in two schemas do not wait on each other. */
function migrationLockKey(schema: string): bigint {
  const digest = new Bun.CryptoHasher("sha256").update(`gateway-migrate:${schema}`).digest();
  return digest.readBigInt64BE(0);
}

/** What the store keeps of auth.signing_key: a hash, never the key (a replica with another key is refused). */
export function signingKeyFingerprint(signingKey: string): string {
  return new Bun.CryptoHasher("sha256").update(`gateway-signing-key:${signingKey}`).digest("hex");
}

export interface PostgresOpenOptions {
  /** auth.signing_key: the first replica records its fingerprint, the others must match it. */
  readonly signingKey: string;
  readonly migrations?: readonly Migration[];
  /** Unix seconds, for schema_migrations.applied_at. */
  readonly now?: () => number;
}

export class PostgresStore implements Store {
  readonly module = "postgres";
  /** `store postgres (user@host:port/db)`, as every line about this store names it. */
  readonly name: string;

  private constructor(
    readonly sql: SQL,
    readonly schema: string,
    name: string,
  ) {
    this.name = name;
  }

  static async open(target: PostgresTarget, options: PostgresOpenOptions): Promise<PostgresStore> {
    const sql = await connect(target);
    const store = new PostgresStore(sql, target.schema, describeStore(target.url));
    try {
      await store.#migrate(options.migrations ?? PG_MIGRATIONS, options.now ?? (() => Math.floor(Date.now() / 1000)));
      await store.#checkSigningKey(options.signingKey);
    } catch (error) {
      await sql.close().catch(() => {});
      if (error instanceof StoreOpenError) throw error;
      throw new StoreOpenError(`${store.name}: cannot migrate: ${(error as Error).message}`);
    }
    return store;
  }

  async #migrate(migrations: readonly Migration[], now: () => number): Promise<void> {
    const known = Math.max(0, ...migrations.map((m) => m.version));
    const sorted = [...migrations].sort((a, b) => a.version - b.version);
    // One connection holds the lock for the whole run; a session lock is freed if this process dies.
    const conn = await this.sql.reserve();
    try {
      // A migration may rebuild a large table, and a replica waits on the lock for the one migrating.
      await conn.unsafe("SET statement_timeout = 0");
      await conn.unsafe(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(this.schema)}`);
      await conn`SELECT pg_advisory_lock(${migrationLockKey(this.schema)})`;
      try {
        await conn.unsafe("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)");
        const current = Number((await conn`SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations`)[0].version);
        if (current > known) throw new StoreOpenError(`${this.name}: the schema is at version ${current}, newer than this build knows (${known}); run a newer gateway`);
        for (const migration of sorted) {
          if (migration.version <= current) continue;
          await conn.begin(async (tx) => {
            await tx.unsafe(migration.sql);
            await tx`INSERT INTO schema_migrations (version, name, applied_at) VALUES (${migration.version}, ${migration.name}, ${now()})`;
          });
        }
      } finally {
        await conn`SELECT pg_advisory_unlock(${migrationLockKey(this.schema)})`.catch(() => {});
        await conn.unsafe("RESET statement_timeout").catch(() => {});
      }
    } finally {
      conn.release();
    }
  }

  /** The first replica records the key's fingerprint; a replica with another key stops its boot here. */
  async #checkSigningKey(signingKey: string): Promise<void> {
    const fingerprint = signingKeyFingerprint(signingKey);
    await this.sql`INSERT INTO meta (key, value) VALUES ('signing_key_fingerprint', ${fingerprint}) ON CONFLICT (key) DO NOTHING`;
    const stored = await this.getMeta("signing_key_fingerprint");
    if (stored !== fingerprint) {
      throw new StoreOpenError(`${this.name}: auth.signing_key differs from the one this fleet's store was first opened with; every replica of a fleet needs the same auth.signing_key`);
    }
  }

  async schemaVersion(): Promise<number> {
    return Number((await this.sql`SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations`)[0].version);
  }

  async appliedMigrations(): Promise<readonly AppliedMigration[]> {
    const rows = await this.sql`SELECT version, name, applied_at FROM schema_migrations ORDER BY version`;
    return rows.map((r: { version: number; name: string; applied_at: string | number }) => ({ version: Number(r.version), name: r.name, applied_at: Number(r.applied_at) }));
  }

  async getMeta(key: string): Promise<string | undefined> {
    const rows = await this.sql`SELECT value FROM meta WHERE key = ${key}`;
    return rows[0]?.value;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.sql`INSERT INTO meta (key, value) VALUES (${key}, ${value}) ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
  }

  async close(): Promise<void> {
    await this.sql.close();
  }
}

/** A schema name as an SQL identifier (config limits it to plain names; quoting keeps case as given). */
function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
