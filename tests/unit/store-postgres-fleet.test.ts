// What replicas share through the postgres store, against a real PostgreSQL (Debian's, started here), each
// "replica" its own store and audit log on one database: one gap-free audit chain however they interleave,
// a change's key or group rows committed with its entry or not at all, and rows read back as sqlite's.
import { describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { AuditLog, verifyAudit } from "../../src/governance/audit.ts";
import type { KeyRecord } from "../../src/store/keys.ts";
import type { LedgerRow } from "../../src/store/ledger.ts";
import { APPEND_LOCK, PgAuditStore } from "../../src/store/postgres/audit.ts";
import { PgGroupStore } from "../../src/store/postgres/groups.ts";
import { PgKeyStore } from "../../src/store/postgres/keys.ts";
import { PgLedgerStore } from "../../src/store/postgres/ledger.ts";
import { PostgresStore } from "../../src/store/postgres/store.ts";
import { usePostgres } from "../support/postgres.ts";

const KEY = "k".repeat(48);
const server = usePostgres("pg-fleet-");

/** `n` replicas' stores on one fresh database. */
async function replicas(database: string, n: number, statementTimeoutMs?: number) {
  const url = await server().createDatabase(database);
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const store = await PostgresStore.open({ url, schema: "public", poolSize: 4, connectTimeoutSecs: 5, ...(statementTimeoutMs && { statementTimeoutMs }) }, { signingKey: KEY });
      const audit = new PgAuditStore(store.sql);
      return { store, audit, log: new AuditLog(audit, () => 1_800_000_000_000 + i), keys: new PgKeyStore(store.sql), groups: new PgGroupStore(store.sql) };
    }),
  );
}

const key = (id: string, createdAt: number): KeyRecord => ({
  id,
  name: `key ${id}`,
  subject: "dev@example.com",
  tokenHash: "ab".repeat(32),
  allowedPools: ["default"],
  group: null,
  labels: { team: "infra", "ünï": "cödé" },
  enabled: true,
  createdAt,
  expiresAt: createdAt + 86_400_000,
  revokedAt: null,
  deletedAt: null,
  awsAccessKeyId: null,
});

describe("postgres fleet store", () => {
  test("three replicas appending at once make one gap-free chain that verifies on each", async () => {
    const fleet = await replicas("chain", 3);
    try {
      await Promise.all(fleet.map((r, i) => Promise.all(Array.from({ length: 20 }, (_, j) => r.log.record({ action: "thing.create", resource: `thing:${i}-${j}`, outcome: "applied", principal: "admin" })))));
      const all = await fleet[0]!.audit.forward(0, 1000);
      expect(all.map((e) => e.seq)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
      expect(new Set(all.map((e) => e.resource)).size).toBe(60);
      for (let i = 1; i < all.length; i++) expect(all[i]!.prev_hash).toBe(all[i - 1]!.hash);
      for (const r of fleet) expect(await verifyAudit(r.audit)).toMatchObject({ ok: true, checked: 60 });
      // Whichever replica appends next continues the one chain.
      await fleet[1]!.log.record({ action: "thing.delete", resource: "thing:0-0", outcome: "applied", principal: "admin" });
      expect((await fleet[2]!.audit.last())!.seq).toBe(61);
    } finally {
      await Promise.all(fleet.map((r) => r.store.close()));
    }
  }, 60_000);

  test("a key written by a change commits with its entry and reads back on another replica as it was", async () => {
    const [a, b] = await replicas("keys_commit", 2);
    try {
      const record = key("k-1", 1_800_000_000_123);
      await a!.log.commit({ action: "key.create", resource: "key:k-1", principal: "admin" }, () => ({ write: () => a!.keys.insert(record), apply: () => undefined }));
      expect(await b!.keys.all()).toEqual([record]);
      const revoked = { ...record, revokedAt: 1_800_000_001_000, enabled: false };
      await b!.log.commit({ action: "key.revoke", resource: "key:k-1", principal: "admin" }, () => ({ write: () => b!.keys.update(revoked), apply: () => undefined }));
      expect(await a!.keys.all()).toEqual([revoked]);
      expect(await a!.keys.byIds(["k-1", "k-none"])).toEqual([revoked]);
      expect(await a!.keys.byIds([])).toEqual([]);
      expect((await a!.audit.page(10)).map((e) => [e.seq, e.action])).toEqual([
        [2, "key.revoke"],
        [1, "key.create"],
      ]);
    } finally {
      await Promise.all([a!.store.close(), b!.store.close()]);
    }
  }, 60_000);

  test("a change whose write fails stores neither its rows nor its entry; the refusal is audited and no seq is lost", async () => {
    const [a] = await replicas("keys_rollback", 1);
    try {
      const first = key("k-dup", 1_800_000_000_000);
      await a!.log.commit({ action: "key.create", resource: "key:k-dup", principal: "admin" }, () => ({ write: () => a!.keys.insert(first), apply: () => undefined }));
      let applied = false;
      const failing = a!.log.commit({ action: "key.create", resource: "key:k-two", principal: "admin" }, () => ({
        write: () => {
          a!.keys.insert(key("k-two", 1_800_000_000_500));
          a!.keys.insert(first); // the same id again: the transaction fails at this row
        },
        apply: () => {
          applied = true;
        },
      }));
      await expect(failing).rejects.toThrow("not applied");
      expect(applied).toBe(false);
      expect((await a!.keys.all()).map((k) => k.id)).toEqual(["k-dup"]);
      const entries = await a!.audit.forward(0, 10);
      expect(entries.map((e) => [e.seq, e.action, e.outcome])).toEqual([
        [1, "key.create", "applied"],
        [2, "key.create", "rejected"],
      ]);
      expect(await verifyAudit(a!.audit)).toMatchObject({ ok: true, checked: 2 });
    } finally {
      await a!.store.close();
    }
  }, 60_000);

  test("groups: insert, update and delete ride their change's transaction; limits read back whole", async () => {
    const [a, b] = await replicas("groups", 2);
    try {
      const group = { name: "team-a", parent: null, enabled: true, limits: [{ window: "hour", tokens: 1000 }], child_default: [{ window: "minute", requests: 3 }], createdAt: 1_800_000_000 } as never;
      await a!.log.commit({ action: "group.create", resource: "group:team-a", principal: "admin" }, () => ({ write: () => a!.groups.insert(group), apply: () => undefined }));
      expect(await b!.groups.all()).toEqual([group]);
      const disabled = { ...(group as object), enabled: false } as never;
      await b!.log.commit({ action: "group.update", resource: "group:team-a", principal: "admin" }, () => ({ write: () => b!.groups.update(disabled), apply: () => undefined }));
      expect(await a!.groups.all()).toEqual([disabled]);
      await a!.log.commit({ action: "group.delete", resource: "group:team-a", principal: "admin" }, () => ({ write: () => a!.groups.delete("team-a"), apply: () => undefined }));
      expect(await b!.groups.all()).toEqual([]);
    } finally {
      await Promise.all([a!.store.close(), b!.store.close()]);
    }
  }, 60_000);

  test("an append waiting on a lock held elsewhere fails after the statement timeout instead of hanging, and loses no seq", async () => {
    const [a] = await replicas("stuck", 1, 500);
    const other = new SQL(server().url("stuck"), { max: 1 });
    const held = await other.reserve();
    try {
      await a!.log.record({ action: "thing.create", resource: "thing:1", outcome: "applied", principal: "admin" });
      // The lock every append takes, held by another session (a stuck replica's transaction would do the same).
      await held`SELECT pg_advisory_lock(${APPEND_LOCK})`;
      const started = Date.now();
      await expect(a!.log.record({ action: "thing.create", resource: "thing:2", outcome: "applied", principal: "admin" })).rejects.toThrow("statement timeout");
      expect(Date.now() - started).toBeLessThan(5_000);
      await held`SELECT pg_advisory_unlock(${APPEND_LOCK})`;
      await a!.log.record({ action: "thing.create", resource: "thing:3", outcome: "applied", principal: "admin" });
      expect((await a!.audit.forward(0, 10)).map((e) => [e.seq, e.resource])).toEqual([
        [1, "thing:1"],
        [2, "thing:3"],
      ]);
    } finally {
      held.release();
      await other.close();
      await a!.store.close();
    }
  }, 60_000);

  test("a postgres store write outside a change's transaction is refused at once", async () => {
    const [a] = await replicas("outside", 1);
    try {
      expect(() => a!.keys.insert(key("k-x", 1))).toThrow("a postgres key write outside a change's audit transaction");
      expect(await a!.keys.all()).toEqual([]);
    } finally {
      await a!.store.close();
    }
  }, 60_000);
});

describe("postgres fleet ledger", () => {
  const row = (over: Partial<LedgerRow>): LedgerRow => ({ ts: 1_800_000_000_000, key_id: "k-1", group_name: "team-a", pool: "default", model: "gpt", requests: 1, input: 10, output: 5, cache_read: 0, cache_creation: 0, ...over });

  test("batches from every replica sum the same on each, filtered as sqlite's are", async () => {
    const fleet = await replicas("ledger", 3);
    try {
      const ledgers = fleet.map((r) => new PgLedgerStore(r.store.sql));
      await Promise.all(ledgers.map((l, i) => l.append(Array.from({ length: 50 }, (_, j) => row({ ts: 1_800_000_000_000 + j * 1000, key_id: `k-${j % 2}`, model: i === 0 ? "gpt" : "claude", input: 2 ** 33 + j, group_name: j % 5 === 0 ? null : "team-a" })))));
      const all = await ledgers[0]!.sums({});
      for (const l of ledgers.slice(1)) expect(await l.sums({})).toEqual(all);
      const total = all.reduce((n, s) => n + s.requests, 0);
      expect(total).toBe(150);
      // Sums past 2^32 come back exact, as numbers.
      const k0gpt = all.find((s) => s.key_id === "k-0" && s.model === "gpt")!;
      expect(k0gpt.input).toBe(Array.from({ length: 25 }, (_, j) => 2 ** 33 + 2 * j).reduce((a, b) => a + b, 0));
      expect(typeof k0gpt.input).toBe("number");
      expect((await ledgers[1]!.sums({ key: "k-1", from: 1_800_000_010_000, to: 1_800_000_020_000 })).reduce((n, s) => n + s.requests, 0)).toBe(15);
      expect((await ledgers[2]!.sums({ groups: ["team-a"] })).reduce((n, s) => n + s.requests, 0)).toBe(120);
      expect(await ledgers[2]!.sums({ groups: [] })).toEqual([]);
      expect(await ledgers[2]!.sums({ pool: "other" })).toEqual([]);
    } finally {
      await Promise.all(fleet.map((r) => r.store.close()));
    }
  }, 60_000);
});
