import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/temp.ts";
import { MIGRATIONS, type Migration } from "../../src/store/migrations.ts";
import { SqliteStore, StoreOpenError } from "../../src/store/sqlite.ts";

const freshPath = () => join(tempDir("gw-store-"), "nested", "gateway.db");
const clock = () => 1_800_000_000;

describe("sqlite store", () => {
  test("a new store applies every migration, records each, and runs in WAL mode", async () => {
    const path = freshPath();
    const store = SqliteStore.open(path, MIGRATIONS, clock);
    expect(await store.schemaVersion()).toBe(Math.max(...MIGRATIONS.map((m) => m.version)));
    expect(await store.appliedMigrations()).toEqual(MIGRATIONS.map((m) => ({ version: m.version, name: m.name, applied_at: 1_800_000_000 })));
    await store.close();
    const raw = new Database(path);
    expect((raw.query("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
    raw.close();
  });

  test("reopening applies only the new migrations and keeps the data", async () => {
    const path = freshPath();
    const v1: Migration[] = [{ version: 1, name: "meta", sql: "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;" }];
    const first = SqliteStore.open(path, v1, () => 100);
    await first.setMeta("instance", "abc");
    await first.close();

    const v2: Migration[] = [...v1, { version: 2, name: "things", sql: "CREATE TABLE things (id INTEGER PRIMARY KEY);" }];
    const second = SqliteStore.open(path, v2, () => 200);
    expect(await second.appliedMigrations()).toEqual([
      { version: 1, name: "meta", applied_at: 100 },
      { version: 2, name: "things", applied_at: 200 },
    ]);
    expect(await second.getMeta("instance")).toBe("abc");
    await second.close();
  });

  test("a failing migration rolls back whole and leaves the earlier version", async () => {
    const path = freshPath();
    const migrations: Migration[] = [
      MIGRATIONS[0]!,
      { version: 2, name: "broken", sql: "CREATE TABLE half (id INTEGER); THIS IS NOT SQL;" },
    ];
    expect(() => SqliteStore.open(path, migrations, clock)).toThrow(StoreOpenError);
    const raw = new Database(path);
    expect((raw.query("SELECT MAX(version) AS v FROM schema_migrations").get() as { v: number }).v).toBe(1);
    expect(raw.query("SELECT name FROM sqlite_master WHERE name = 'half'").all()).toEqual([]);
    raw.close();
  });

  test("a store from a newer build is refused, untouched", async () => {
    const path = freshPath();
    const future: Migration[] = [...MIGRATIONS, { version: 999, name: "future", sql: "CREATE TABLE future (id INTEGER);" }];
    await SqliteStore.open(path, future, clock).close();
    expect(() => SqliteStore.open(path, MIGRATIONS, clock)).toThrow(/schema version 999, newer than this build knows/);
  });

  test("an unopenable path is a StoreOpenError naming it", () => {
    expect(() => SqliteStore.open("/proc/definitely/not/here.db")).toThrow(/cannot open sqlite store \/proc\/definitely\/not\/here.db/);
  });

  test("a store is created only where no file exists; a zero-length file is refused, not taken for a new store", async () => {
    const path = freshPath();
    const first = SqliteStore.open(path, MIGRATIONS, clock);
    expect(first.created).toBe(true);
    await first.close();
    const again = SqliteStore.open(path, MIGRATIONS, clock);
    expect(again.created).toBe(false);
    await again.close();
    writeFileSync(path, "");
    expect(() => SqliteStore.open(path, MIGRATIONS, clock)).toThrow(/is an empty file \(zero length\)/);
    expect(statSync(path).size).toBe(0);
  });

  test("meta values overwrite", async () => {
    const store = SqliteStore.open(":memory:");
    expect(await store.getMeta("k")).toBeUndefined();
    await store.setMeta("k", "1");
    await store.setMeta("k", "2");
    expect(await store.getMeta("k")).toBe("2");
    await store.close();
  });

  test("a held store refuses a second holder until the first closes; readers are not held up", async () => {
    const path = freshPath();
    const first = SqliteStore.open(path, MIGRATIONS, clock, { lock: true });
    await first.setMeta("k", "1");
    expect(() => SqliteStore.open(path, MIGRATIONS, clock, { lock: true })).toThrow(`store ${path} is in use by another running gateway (it holds ${path}.lock)`);
    const reader = new Database(path, { readonly: true });
    expect(reader.query("SELECT value FROM meta WHERE key = 'k'").get()).toEqual({ value: "1" });
    reader.close();
    await first.close();
    const second = SqliteStore.open(path, MIGRATIONS, clock, { lock: true });
    expect(await second.getMeta("k")).toBe("1");
    await second.close();
  });
});
