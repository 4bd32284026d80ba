// The group service over a real (in-memory) sqlite store: the merged tree, validation, the admin verbs
// with their audit records, the mint rules, the ledger's round trip and the usage views it feeds.
import { beforeEach, describe, expect, test } from "bun:test";
import { loadConfigText } from "../../../src/config/load.ts";
import { ConfigHolder } from "../../../src/config/snapshot.ts";
import { GroupService } from "../../../src/governance/groups.ts";
import { LimitEngine } from "../../../src/governance/limits.ts";
import { Metering } from "../../../src/governance/metering.ts";
import type { AuditRecord } from "../../../src/governance/types.ts";
import { recordingSink } from "../../support/audit-sink.ts";
import { UsageService, resolvedBuckets, type KeyInfo } from "../../../src/governance/usage.ts";
import { GatewayError } from "../../../src/http/errors.ts";
import { SqliteGroupStore } from "../../../src/store/groups.ts";
import { SqliteLedgerStore } from "../../../src/store/ledger.ts";
import { SqliteStore } from "../../../src/store/sqlite.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { settled } from "../../support/settled.ts";

const CONFIG = `
providers:
  local: {protocol: mock}
models:
  m1: {provider: local}
pools:
  chat: {members: [{model: m1}]}
rate_card:
  m1: {input: 1000, output: 2000}
per_request_fee: 0.01
groups:
  eng:
    limits: [{window: day, budget_cents: 50}, {window: minute, requests: 3}]
    child_default: [{window: minute, requests: 2}]
  eng-team: {parent: eng}
`;

function holderOf(yaml: string): ConfigHolder {
  const loaded = loadConfigText(yaml, "t.yaml", { env: {} });
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  return new ConfigHolder(loaded.snapshot);
}

const logger = createLogger({ level: "error", write: () => {} });

function setup(bound: Set<string> = new Set()) {
  const store = SqliteStore.open(":memory:");
  const holder = holderOf(CONFIG);
  const audit: AuditRecord[] = [];
  const clock = { now: Date.parse("2025-06-30T12:00:30Z") };
  const deps = { holder, store: new SqliteGroupStore(store.database), audit: recordingSink(audit), logger, now: () => clock.now, hasBoundKeys: (name: string) => bound.has(name) };
  const groups = new GroupService(deps);
  const limits = new LimitEngine(() => clock.now, () => groups.tree());
  const ledger = new SqliteLedgerStore(store.database);
  const metering = new Metering({ holder, limits, ledger, logger, now: () => clock.now, flushMs: 60_000 });
  const keys = new Map<string, KeyInfo>([["key_a", { name: "alice", group: "eng-alice", labels: { team: "eng" } }], ["key_b", { name: null, group: null, labels: {} }]]);
  const usage = new UsageService({ holder, groups, limits, metering, ledger, keyLookup: (id) => keys.get(id), now: () => clock.now });
  return { store, groups, audit, deps, limits, metering, usage, clock, ledger };
}

async function rejection(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe("groups", () => {
  let s: ReturnType<typeof setup>;
  beforeEach(() => (s = setup()));

  test("config groups and API groups form one tree; API groups survive a reload from the store", async () => {
    await s.groups.create({ name: "ml", limits: [{ window: "hour", tokens: 1000 }] }, "admin");
    expect([...s.groups.tree().keys()]).toEqual(["eng", "eng-team", "ml"]);
    expect(s.groups.get("eng")!.source).toBe("config");
    const again = new GroupService(s.deps);
    await again.load();
    expect(again.get("ml")).toEqual({ name: "ml", parent: null, enabled: true, limits: [{ window: "hour", tokens: 1000 }], child_default: null, source: "api" });
    expect(s.audit).toEqual([{ action: "group.create", resource: "group:ml", principal: "admin", outcome: "applied" }]);
  });

  test("create refuses a duplicate (409), an unknown parent (400), an unknown pool (400), an empty windowed limit (400); each audited as rejected", async () => {
    expect((await rejection(s.groups.create({ name: "eng" }, "admin"))).status).toBe(409);
    expect((await rejection(s.groups.create({ name: "x", parent: "nope" }, "admin"))).status).toBe(400);
    expect((await rejection(s.groups.create({ name: "x", limits: [{ window: "day", requests: 1, pool: "nope" }] }, "admin"))).message).toContain("unknown pool");
    expect((await rejection(s.groups.create({ name: "x", limits: [{ window: "day" }] }, "admin"))).message).toContain("needs requests, tokens or budget_cents");
    expect(s.audit.map((r) => r.outcome)).toEqual(["rejected", "rejected", "rejected", "rejected"]);
    expect(s.groups.exists("x")).toBe(false);
  });

  test("patch is three-state and persists; config groups are read-only (409)", async () => {
    await s.groups.create({ name: "ml", parent: "eng", limits: [{ concurrent: 2 }], child_default: [{ window: "day", requests: 9 }] }, "admin");
    const frozen = await s.groups.update("ml", { enabled: false }, "admin");
    expect(frozen.enabled).toBe(false);
    expect(frozen.limits).toEqual([{ concurrent: 2 }]);
    const cleared = await s.groups.update("ml", { limits: null, child_default: null }, "admin");
    expect(cleared.limits).toEqual([]);
    expect(cleared.child_default).toBeNull();
    expect((await rejection(s.groups.update("ml", { enabled: null }, "admin"))).status).toBe(400);
    expect((await rejection(s.groups.update("eng", { enabled: false }, "admin"))).status).toBe(409);
    expect((await rejection(s.groups.update("nope", {}, "admin"))).status).toBe(404);
    const stored = await new SqliteGroupStore(s.store.database).all();
    expect(stored[0]).toMatchObject({ name: "ml", parent: "eng", enabled: false, limits: [], child_default: null });
  });

  test("delete refuses while children or bound keys exist, and config groups", async () => {
    const bound = new Set<string>();
    s = setup(bound);
    await s.groups.create({ name: "a" }, "admin");
    await s.groups.create({ name: "b", parent: "a" }, "admin");
    expect((await rejection(s.groups.delete("a", "admin"))).message).toContain("child groups (b)");
    bound.add("b");
    expect((await rejection(s.groups.delete("b", "admin"))).message).toContain("keys bound");
    bound.clear();
    await s.groups.delete("b", "admin");
    await s.groups.delete("a", "admin");
    expect(s.groups.exists("a")).toBe(false);
    expect((await rejection(s.groups.delete("eng", "admin"))).status).toBe(409);
    expect(await new SqliteGroupStore(s.store.database).all()).toEqual([]);
  });

  test("subtree holds the group and every descendant", async () => {
    await s.groups.create({ name: "eng-alice", parent: "eng-team" }, "admin");
    expect(s.groups.subtree("eng").sort()).toEqual(["eng", "eng-alice", "eng-team"]);
    expect(s.groups.subtree("eng-team").sort()).toEqual(["eng-alice", "eng-team"]);
  });
});

describe("mint rules", () => {
  test("bind existing; 400 without parent; 409 on parent mismatch; provision a leaf with the nearest child_default", async () => {
    const s = setup();
    expect(await s.groups.resolveForMint("eng-team", null, "admin")).toEqual({ ok: true, provisioned: false });
    expect(await s.groups.resolveForMint("eng-team", "eng", "admin")).toEqual({ ok: true, provisioned: false });
    expect(await s.groups.resolveForMint("ghost", null, "admin")).toMatchObject({ ok: false, code: "invalid_request" });
    expect(await s.groups.resolveForMint("eng-team", "other", "admin")).toMatchObject({ ok: false, code: "conflict" });
    expect(await s.groups.resolveForMint("ghost", "nope", "admin")).toMatchObject({ ok: false, code: "invalid_request" });
    // eng-team has no child_default: eng's (the nearest ancestor's) applies.
    expect(await s.groups.resolveForMint("eng-bob", "eng-team", "k1")).toEqual({ ok: true, provisioned: true });
    expect(s.groups.get("eng-bob")).toMatchObject({ parent: "eng-team", limits: [{ window: "minute", requests: 2 }], child_default: null, source: "api" });
    expect(s.audit.at(-1)).toEqual({ action: "group.create", resource: "group:eng-bob", principal: "k1", outcome: "applied" });
  });
});

describe("ledger and usage views", () => {
  test("rows written in a batch come back as sums per key and model", async () => {
    const s = setup();
    await s.ledger.append([
      { ts: 1000, key_id: "k", group_name: "g", pool: "p", model: "m", requests: 1, input: 0, output: 0, cache_read: 0, cache_creation: 0 },
      { ts: 2000, key_id: "k", group_name: "g", pool: "p", model: "m", requests: 0, input: 5, output: 6, cache_read: 7, cache_creation: 8 },
      { ts: 3000, key_id: "j", group_name: null, pool: "q", model: "n", requests: 1, input: 1, output: 1, cache_read: 0, cache_creation: 0 },
    ]);
    // last_ts: the newest row summed (a key's last use).
    expect(await s.ledger.sums({ key: "k" })).toEqual([{ key_id: "k", model: "m", requests: 1, input: 5, output: 6, cache_read: 7, cache_creation: 8, last_ts: 2000 }]);
    expect(await s.ledger.sums({ from: 2000, to: 3000 })).toEqual([{ key_id: "k", model: "m", requests: 0, input: 5, output: 6, cache_read: 7, cache_creation: 8, last_ts: 2000 }]);
    expect((await s.ledger.sums({ groups: ["g"], pool: "q" })).length).toBe(0);
  });

  test("queued rows of one second, key, pool, model and group are written as one sum row; others stay apart", async () => {
    const s = setup();
    const row = { key_id: "k", group_name: "g", pool: "p", model: "m", requests: 1, input: 2, output: 3, cache_read: 4, cache_creation: 5 };
    s.metering.queue({ ...row, ts: 10_100 });
    s.metering.queue({ ...row, ts: 10_900, requests: 0 });
    s.metering.queue({ ...row, ts: 11_000 }); // the next second
    s.metering.queue({ ...row, ts: 10_500, model: "n" });
    s.metering.queue({ ...row, ts: 10_500, group_name: "h" }); // re-bound within the second
    await s.metering.flush();
    const rows = s.store.database.query("SELECT ts, key_id, group_name, model, requests, input, output, cache_read, cache_creation FROM ledger ORDER BY ts, model, group_name").all();
    expect(rows).toEqual([
      { ts: 10_000, key_id: "k", group_name: "g", model: "m", requests: 1, input: 4, output: 6, cache_read: 8, cache_creation: 10 },
      { ts: 10_000, key_id: "k", group_name: "h", model: "m", requests: 1, input: 2, output: 3, cache_read: 4, cache_creation: 5 },
      { ts: 10_000, key_id: "k", group_name: "g", model: "n", requests: 1, input: 2, output: 3, cache_read: 4, cache_creation: 5 },
      { ts: 11_000, key_id: "k", group_name: "g", model: "m", requests: 1, input: 2, output: 3, cache_read: 4, cache_creation: 5 },
    ]);
  });

  test("a row taken by a flush is never summed into again; the same key and second after it is a row of its own", async () => {
    const s = setup();
    const row = { key_id: "k", group_name: "g", pool: "p", model: "m", requests: 1, input: 2, output: 3, cache_read: 4, cache_creation: 5 };
    s.metering.queue({ ...row, ts: 20_100 });
    s.metering.queue({ ...row, ts: 20_200 });
    const writing = s.metering.flush();
    // Queued while the batch before is being written: the written row must not change under it.
    s.metering.queue({ ...row, ts: 20_300 });
    s.metering.queue({ ...row, ts: 20_400, group_name: "h" }); // re-bound: apart
    s.metering.queue({ ...row, ts: 20_500, group_name: "h" }); // summed with the re-bound one
    await writing;
    await s.metering.flush();
    const rows = s.store.database.query("SELECT ts, group_name, requests, input FROM ledger ORDER BY rowid").all();
    expect(rows).toEqual([
      { ts: 20_000, group_name: "g", requests: 2, input: 4 },
      { ts: 20_000, group_name: "h", requests: 2, input: 4 },
      { ts: 20_000, group_name: "g", requests: 1, input: 2 },
    ]);
  });

  test("metered requests add up in every view, priced with the current rate card, and survive a restart", async () => {
    const s = setup();
    await s.groups.resolveForMint("eng-alice", "eng", "admin");
    const principal = { id: "key_a", module: "keys", group: "eng-alice", labels: { team: "eng" } };
    for (let i = 0; i < 2; i++) {
      const admitted = settled(s.metering.admit(principal, "chat", "m1"));
      if (!admitted.ok || !admitted.meter) throw new Error("refused");
      admitted.meter.usage({ inputNoCache: 1000, inputCacheRead: 0, inputCacheWrite: 0, output: 500, outputReasoning: 0 }, "m1");
      admitted.meter.end();
    }
    const ungrouped = settled(s.metering.admit({ id: "key_b", module: "keys", group: null }, "chat", "m1"));
    expect(ungrouped.ok).toBe(true);
    // Each request: 1000*1000 + 500*2000 = 2_000_000 micros of tokens, plus the 0.01 fee = 10_000 micros.
    const usage = await s.usage.groupUsage("eng");
    expect(usage.buckets).toEqual([
      { window: "day", requests: 2, tokens: 3000, spend_cents: 4, requests_cap: null, tokens_cap: null, budget_cap: 50, budget_remaining_cents: 46 },
      { window: "minute", requests: 2, tokens: 3000, spend_cents: 4, requests_cap: 3, tokens_cap: null, budget_cap: null },
    ]);
    expect(await s.usage.keyMetering("key_a")).toMatchObject({ group: "eng-alice", spend_cents: 4, tokens: 3000, requests: 2, budget_period: "total", window_start: 0 });
    // eng-alice's own cap is 2 a minute (eng's child_default): both used.
    expect((await s.usage.keyMetering("key_a")).rate_headroom).toBe(0);
    const rows = (await s.usage.keyUsage(undefined, undefined)).items;
    expect(rows.map((r) => [r.id, r.name, r.requests, r.spend_micros])).toEqual([
      ["key_a", "alice", 2, 4_020_000],
      ["key_b", null, 1, 10_000],
    ]);
    expect(rows[0]).toMatchObject({ tokens_input: 2000, tokens_output: 1000, tokens_cache_read: 0, tokens_cache_creation: 0 });

    // A restart within the same minute: counts come back from the ledger, so the minute cap still holds.
    const restarted = setup();
    const again = new GroupService({ ...restarted.deps, store: new SqliteGroupStore(s.store.database) });
    await again.load();
    const limits = new LimitEngine(() => s.clock.now, () => again.tree());
    const metering = new Metering({ holder: s.deps.holder, limits, ledger: s.ledger, logger, now: () => s.clock.now });
    const usage2 = new UsageService({ holder: s.deps.holder, groups: again, limits, metering, ledger: s.ledger, keyLookup: () => undefined, now: () => s.clock.now });
    await usage2.restore();
    expect(settled(metering.admit(principal, "chat", "m1")).ok).toBe(false);
    expect(metering.keyTotals().get("key_a")).toMatchObject({ tokens: 3000, spendMicros: 4_020_000 });
  });

  test("resolved buckets merge the caps of one (window, pool) in first-seen order", () => {
    expect(resolvedBuckets([{ window: "day", requests: 5 }, { concurrent: 3 }, { window: "minute", tokens: 9 }, { window: "day", budget_cents: 7, requests: 4 }])).toEqual([
      { window: "day", pool: null, requests_cap: 4, tokens_cap: null, budget_cap: 7 },
      { window: "minute", pool: null, requests_cap: null, tokens_cap: 9, budget_cap: null },
    ]);
  });
});
