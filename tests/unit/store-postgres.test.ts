// The postgres store's boot against a real PostgreSQL (Debian's package, started here): replicas booting
// together on one empty database migrate once, the tables are the sqlite store's, a newer schema and
// another signing key are refused naming the store, bad credentials and an unreachable server stop the
// boot with a line that names user, host, port and database but never the password.
import { describe, expect, test } from "bun:test";
import { MIGRATIONS } from "../../src/store/migrations.ts";
import { describeStore } from "../../src/store/postgres/connect.ts";
import { FLEET_MIGRATIONS, PG_MIGRATIONS, toPostgres } from "../../src/store/postgres/migrations.ts";
import { PostgresStore, signingKeyFingerprint } from "../../src/store/postgres/store.ts";
import { StoreOpenError } from "../../src/store/store.ts";
import { usePostgres } from "../support/postgres.ts";

const KEY = "k".repeat(48);
const server = usePostgres("pg-store-");

const target = (url: string, schema = "public") => ({ url, schema, poolSize: 4, connectTimeoutSecs: 5 });

/** The error a rejected promise carries, or a failure naming what resolved instead. */
async function refusal(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a refusal, but it opened");
}

describe("postgres store: boot", () => {
  test("three replicas booting at once on an empty database migrate once", async () => {
    const url = await server().createDatabase("boot_three");
    const stores = await Promise.all([1, 2, 3].map(() => PostgresStore.open(target(url), { signingKey: KEY })));
    try {
      const applied = await stores[0]!.appliedMigrations();
      expect(applied.map((m) => [m.version, m.name])).toEqual(PG_MIGRATIONS.map((m) => [m.version, m.name]));
      const counts = await server().sql("SELECT version, count(*)::int AS n FROM schema_migrations GROUP BY version ORDER BY version", "boot_three");
      expect(counts).toEqual(PG_MIGRATIONS.map((m) => ({ version: m.version, n: 1 })));
      for (const store of stores) expect(await store.schemaVersion()).toBe(Math.max(...PG_MIGRATIONS.map((m) => m.version)));
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
    // A later boot finds nothing to do and keeps what is there.
    const again = await PostgresStore.open(target(url), { signingKey: KEY });
    await again.setMeta("probe", "kept");
    await again.close();
    const third = await PostgresStore.open(target(url), { signingKey: KEY });
    expect(await third.getMeta("probe")).toBe("kept");
    expect((await third.appliedMigrations()).length).toBe(PG_MIGRATIONS.length);
    await third.close();
  }, 60_000);

  test("the tables and columns are the sqlite store's, migration for migration", async () => {
    // sqlite's migrations, then the fleet's own, numbered past them.
    expect(PG_MIGRATIONS.map((m) => [m.version, m.name])).toEqual([...MIGRATIONS, ...FLEET_MIGRATIONS].map((m) => [m.version, m.name]));
    expect(Math.min(...FLEET_MIGRATIONS.map((m) => m.version))).toBeGreaterThan(Math.max(...MIGRATIONS.map((m) => m.version)));
    const url = await server().createDatabase("same_tables");
    const store = await PostgresStore.open(target(url), { signingKey: KEY });
    await store.close();
    const { Database } = await import("bun:sqlite");
    const lite = new Database(":memory:");
    for (const m of MIGRATIONS) lite.exec(m.sql);
    const liteTables = (lite.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
    for (const table of liteTables) {
      const liteColumns = (lite.query(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name).sort();
      const pgColumns = ((await server().sql(`SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = '${table}'`, "same_tables")) as { column_name: string }[]).map((c) => c.column_name).sort();
      expect({ table, columns: pgColumns }).toEqual({ table, columns: liteColumns });
    }
    lite.close();
  }, 60_000);

  test("a named schema is created and holds the tables", async () => {
    const url = await server().createDatabase("named_schema");
    const store = await PostgresStore.open(target(url, "gw_fleet"), { signingKey: KEY });
    await store.close();
    const rows = (await server().sql("SELECT table_name FROM information_schema.tables WHERE table_schema = 'gw_fleet' ORDER BY table_name", "named_schema")) as { table_name: string }[];
    expect(rows.map((r) => r.table_name)).toEqual(["audit", "config_versions", "groups", "keys", "ledger", "limit_counts", "limit_holdings", "meta", "replicas", "schema_migrations", "spooled_batches"]);
  }, 60_000);

  test("a schema newer than the build is refused, naming the store and both versions", async () => {
    const url = await server().createDatabase("newer_schema");
    await (await PostgresStore.open(target(url), { signingKey: KEY })).close();
    await server().sql("INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'from_the_future', 0)", "newer_schema");
    const error = await refusal(PostgresStore.open(target(url), { signingKey: KEY }));
    expect(error).toBeInstanceOf(StoreOpenError);
    expect(error.message).toBe(`store postgres (gateway@127.0.0.1:${server().port}/newer_schema): the schema is at version 99, newer than this build knows (${Math.max(...PG_MIGRATIONS.map((m) => m.version))}); run a newer gateway`);
  }, 60_000);

  test("a replica with another signing key is refused naming auth.signing_key; the key itself is never stored", async () => {
    const url = await server().createDatabase("signing_key");
    await (await PostgresStore.open(target(url), { signingKey: KEY })).close();
    const error = await refusal(PostgresStore.open(target(url), { signingKey: "z".repeat(48) }));
    expect(error.message).toContain("auth.signing_key");
    expect(error.message).not.toContain("z".repeat(48));
    const meta = (await server().sql("SELECT key, value FROM meta", "signing_key")) as { key: string; value: string }[];
    expect(meta).toEqual([{ key: "signing_key_fingerprint", value: signingKeyFingerprint(KEY) }]);
    expect(JSON.stringify(meta)).not.toContain(KEY);
  }, 60_000);

  test("refused credentials stop at once with a line that names the store but not the password", async () => {
    const url = await server().createDatabase("bad_password");
    const wrong = url.replace(encodeURIComponent(server().password), "not-the-password-123");
    const started = Date.now();
    const error = await refusal(PostgresStore.open({ ...target(wrong), connectTimeoutSecs: 30 }, { signingKey: KEY }));
    expect(Date.now() - started).toBeLessThan(10_000); // not retried for 30 s
    expect(error.message).toBe(`store postgres (gateway@127.0.0.1:${server().port}/bad_password): authentication failed`);
    expect(error.message).not.toContain("not-the-password-123");
  }, 60_000);

  test("an unreachable server is retried for connect_timeout_secs, then named", async () => {
    const dead = `postgres://gateway:${encodeURIComponent(server().password)}@127.0.0.1:1/nowhere`;
    const started = Date.now();
    const error = await refusal(PostgresStore.open({ ...target(dead), connectTimeoutSecs: 2 }, { signingKey: KEY }));
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(1_000);
    expect(took).toBeLessThan(8_000);
    expect(error.message).toStartWith("store postgres (gateway@127.0.0.1:1/nowhere): unreachable");
    expect(error.message).not.toContain(server().password);
  }, 60_000);

  test("a migration in sqlite's dialect alone is refused at load, not half-applied", () => {
    expect(toPostgres({ version: 1, name: "t", sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL) STRICT;" }).sql).toBe("CREATE TABLE t (id BIGSERIAL PRIMARY KEY, n BIGINT NOT NULL);");
    expect(() => toPostgres({ version: 9, name: "blob", sql: "CREATE TABLE b (x BLOB) STRICT;" })).toThrow("migration 9 (blob) uses BLOB");
  });

  test("describeStore names user, host, port and database only", () => {
    expect(describeStore("postgres://svc:s3cr%40t@db.internal:6432/fleet?sslmode=require")).toBe("store postgres (svc@db.internal:6432/fleet)");
    expect(describeStore("postgres://svc:pw@db.internal/fleet")).toBe("store postgres (svc@db.internal:5432/fleet)");
    expect(describeStore("not a url")).toBe("store postgres (an unparsable URL)");
  });
});
