// The sqlite store's numbered migrations in PostgreSQL's dialect (design/replicas.md, "Boot"): the same
// numbers, names, tables and columns, so a fleet's schema_migrations reads like a single process's. They
// are derived from ../migrations.ts, never written twice, by the few rules the two dialects differ in;
// a migration using anything else is refused here, at load, rather than half-applied to a fleet.
import { MIGRATIONS, type Migration } from "../migrations.ts";
import { LIMIT_COUNTS_MIGRATION } from "./limits-schema.ts";
import { LIMIT_MIGRATION } from "./limits-schema-8.ts";

/**
 * sqlite -> PostgreSQL: STRICT tables are plain tables; INTEGER (sqlite's 64-bit integer: epoch
 * milliseconds, token sums) is BIGINT; a row id sqlite assigns itself (`id INTEGER PRIMARY KEY`, written
 * without a value) is BIGSERIAL. An audit `seq` is always written explicitly, so it stays a plain key.
 */
export function toPostgres(migration: Migration): Migration {
  const sql = migration.sql
    .replace(/\)\s*STRICT;/g, ");")
    .replace(/\bid INTEGER PRIMARY KEY\b/g, "id BIGSERIAL PRIMARY KEY")
    .replace(/\bINTEGER\b/g, "BIGINT");
  const unknown = /\b(AUTOINCREMENT|WITHOUT ROWID|PRAGMA|BLOB|REAL|STRICT)\b/i.exec(sql);
  if (unknown) throw new Error(`migration ${migration.version} (${migration.name}) uses ${unknown[1]}, which has no PostgreSQL rule in store/postgres/migrations.ts`);
  return { ...migration, sql };
}

/** A fleet's own tables, numbered in the range src/store/migrations.ts reserves for them. */
export const FLEET_MIGRATIONS: readonly Migration[] = [
  {
    version: 7,
    name: "replicas",
    // Times are the database's clock (epoch seconds), so replicas with skewed clocks agree on who is gone.
    sql: `CREATE TABLE replicas (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  listen TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  last_seen BIGINT NOT NULL,
  version TEXT NOT NULL,
  config_version BIGINT NOT NULL
);`,
  },
  LIMIT_MIGRATION,
  {
    version: 9,
    name: "fleet config versions",
    // base and overlay as JSON text: values the config took from the environment are stored as ${VAR}.
    sql: `CREATE TABLE config_versions (
  version BIGINT PRIMARY KEY,
  ts BIGINT NOT NULL,
  principal TEXT NOT NULL,
  summary TEXT NOT NULL,
  base TEXT NOT NULL,
  overlay TEXT NOT NULL
);`,
  },
  {
    version: 10,
    name: "spooled batches",
    // The ids of metering batches replayed from a replica's spool: each is written once however often replayed.
    sql: `CREATE TABLE spooled_batches (
  id TEXT PRIMARY KEY,
  written_at BIGINT NOT NULL
);`,
  },
  LIMIT_COUNTS_MIGRATION,
];

export const PG_MIGRATIONS: readonly Migration[] = [...MIGRATIONS.map(toPostgres), ...FLEET_MIGRATIONS];
