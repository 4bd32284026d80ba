// GET /usage/series and /usage/today over both ledgers (sqlite, and a real PostgreSQL): the range's fixed
// steps and their alignment, the top 20 series by spend (ties: tokens, then name) with the rest summed as
// "(other)", rows outside the range left out, and spend priced exactly as GET /usage/keys prices the
// same rows (fractional rates and a per-request fee, so a second pricing would show).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadConfigText } from "../../src/config/load.ts";
import { ConfigHolder } from "../../src/config/snapshot.ts";
import { GroupService } from "../../src/governance/groups.ts";
import { LimitEngine } from "../../src/governance/limits.ts";
import { Metering } from "../../src/governance/metering.ts";
import { centsOf } from "../../src/governance/rate-card.ts";
import { MAX_SERIES, seriesWindow, USAGE_RANGES, type UsageRange } from "../../src/governance/usage-series.ts";
import { UsageService } from "../../src/governance/usage.ts";
import { SqliteGroupStore } from "../../src/store/groups.ts";
import { SqliteLedgerStore, type LedgerRow, type LedgerStore } from "../../src/store/ledger.ts";
import { PgLedgerStore } from "../../src/store/postgres/ledger.ts";
import { PostgresStore } from "../../src/store/postgres/store.ts";
import { ReadWorker } from "../../src/store/read-worker.ts";
import { SqliteStore } from "../../src/store/sqlite.ts";
import { GatewayError } from "../../src/http/errors.ts";
import { tempDir } from "../support/temp.ts";
import { join } from "node:path";
import { createLogger } from "../../src/telemetry/logger.ts";
import { recordingSink } from "../support/audit-sink.ts";
import { usePostgres } from "../support/postgres.ts";

const CONFIG = `
providers:
  local: {protocol: mock}
models:
  m1: {provider: local}
  m2: {provider: local}
pools:
  chat: {members: [{model: m1}]}
rate_card:
  m1: {input: 1000, output: 2000}
  m2: {input: 0.37, output: 1.13, cache_read: 0.05, cache_creation: 0.41}
per_request_fee: 0.013
`;

const NOW = Date.parse("2025-06-30T12:07:30Z");
const logger = createLogger({ level: "error", write: () => {} });

function usageOver(ledger: LedgerStore): UsageService {
  const loaded = loadConfigText(CONFIG, "t.yaml", { env: {} });
  if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
  const holder = new ConfigHolder(loaded.snapshot);
  const store = SqliteStore.open(":memory:");
  const groups = new GroupService({ holder, store: new SqliteGroupStore(store.database), audit: recordingSink([]), logger, now: () => NOW, hasBoundKeys: () => false });
  const limits = new LimitEngine(() => NOW, () => groups.tree());
  const metering = new Metering({ holder, limits, ledger, logger, now: () => NOW, flushMs: 60_000 });
  return new UsageService({ holder, groups, limits, metering, ledger, keyLookup: () => undefined, now: () => NOW });
}

const row = (ts: number, key: string, group: string | null, model: string, requests: number, input: number, output: number, cache_read = 0, cache_creation = 0): LedgerRow => ({
  ts,
  key_id: key,
  group_name: group,
  pool: "chat",
  model,
  requests,
  input,
  output,
  cache_read,
  cache_creation,
});

/**
 * 25 keys in the last hour, key_NN spending more as NN grows, over two models and three groups (one key
 * bound to none). key_20 and key_21 tie on spend and differ in tokens (key_21 has more, so comes first);
 * key_04 and key_05 tie on both at the 20th place (key_04 is kept by name, key_05 joins "(other)").
 * Plus rows before the hour and yesterday, which the 1h series must leave out.
 */
function ledgerRows(): LedgerRow[] {
  const rows: LedgerRow[] = [];
  const hour = seriesWindow("1h", NOW);
  for (let i = 0; i < 25; i++) {
    const key = `key_${String(i).padStart(2, "0")}`;
    const group = i === 7 ? null : `g${i % 3}`;
    const n = 40 * ((i === 5 ? 4 : i) + 1);
    const [input, output] = i === 20 ? [0, 2400] : i === 21 ? [4800, 0] : [n, n];
    rows.push(row(hour.from * 1000 + 61_000, key, group, "m1", 1, input, output));
    // The first step and the one in progress, on the other model with every tier: the same for every key.
    rows.push(row(hour.from * 1000 + 5_000, key, group, "m2", 2, 1003, 333, 77, 5));
    rows.push(row(NOW - 1_000, key, group, "m2", 1, 7, 3));
  }
  rows.push(row(hour.from * 1000 - 1_000, "key_24", "g0", "m1", 5, 100000, 100000));
  rows.push(row(NOW - 86_400_000, "key_24", "g0", "m1", 9, 100000, 100000));
  return rows;
}

function suite(name: string, open: () => Promise<{ ledger: LedgerStore; close: () => Promise<void> }>) {
  describe(`usage series (${name})`, () => {
    let usage: UsageService;
    let close: () => Promise<void>;
    const rows = ledgerRows();
    beforeAll(async () => {
      const opened = await open();
      close = opened.close;
      await opened.ledger.append(rows);
      usage = usageOver(opened.ledger);
    }, 60_000);
    afterAll(() => close?.());

    test("by key: the top 20 by spend, ties by tokens then name, the rest as (other); totals as GET /usage/keys prices them", async () => {
      const view = await usage.series("key", "1h");
      const window = seriesWindow("1h", NOW);
      expect(view).toMatchObject({ by: "key", range: "1h", step_secs: 60, from: window.from, to: window.to });
      const byKey = new Map((await usage.keyUsage(window.from, window.to)).items.map((r) => [r.id, r]));
      const expected = [...byKey.values()].map((r) => ({
        name: r.id,
        total: { requests: r.requests, tokens: r.tokens_input + r.tokens_output + r.tokens_cache_read + r.tokens_cache_creation, spend_cents: centsOf(r.spend_micros) },
        micros: r.spend_micros,
      }));
      expected.sort((a, b) => b.micros - a.micros || b.total.tokens - a.total.tokens || (a.name < b.name ? -1 : 1));
      expect(view.series.length).toBe(MAX_SERIES + 1);
      expect(view.series.slice(0, MAX_SERIES).map((s) => ({ name: s.name, total: s.total }))).toEqual(expected.slice(0, MAX_SERIES).map(({ name, total }) => ({ name, total })));
      // The ties resolve as documented: equal spend, more tokens first; equal both, by name.
      const order = view.series.map((s) => s.name);
      expect(order.slice(0, 2)).toEqual(["key_21", "key_20"]);
      expect(order[MAX_SERIES - 1]).toBe("key_04");
      const rest = expected.slice(MAX_SERIES);
      expect(rest.map((r) => r.name)).toEqual(["key_05", "key_03", "key_02", "key_01", "key_00"]);
      expect(view.series[MAX_SERIES]).toEqual({
        name: "(other)",
        total: { requests: rest.reduce((n, r) => n + r.total.requests, 0), tokens: rest.reduce((n, r) => n + r.total.tokens, 0), spend_cents: centsOf(rest.reduce((n, r) => n + r.micros, 0)) },
        points: expect.any(Array),
      });
      // The row before the hour is not in key_24's total.
      expect(view.series.find((s) => s.name === "key_24")!.total.requests).toBe(4);
    });

    test("points: aligned to the step, inside the range, empty steps left out, adding up to the totals", async () => {
      for (const by of ["model", "key", "group"] as const) {
        const view = await usage.series(by, "1h");
        for (const s of view.series) {
          expect(s.points.length).toBeGreaterThan(0);
          for (const p of s.points) {
            expect(p.t % view.step_secs).toBe(0);
            expect(p.t).toBeGreaterThanOrEqual(view.from);
            expect(p.t).toBeLessThan(view.to);
          }
          expect(s.points.map((p) => p.t)).toEqual([...new Set(s.points.map((p) => p.t))].sort((a, b) => a - b));
          expect(s.points.reduce((n, p) => n + p.requests, 0)).toBe(s.total.requests);
          expect(s.points.reduce((n, p) => n + p.tokens, 0)).toBe(s.total.tokens);
          // Each point's cents are rounded down on their own, so they may fall short of the total's.
          expect(s.points.reduce((n, p) => n + p.spend_cents, 0)).toBeLessThanOrEqual(s.total.spend_cents);
        }
        // Three steps hold rows: the hour's first, its second, and the one in progress.
        expect(new Set(view.series.flatMap((s) => s.points.map((p) => p.t)))).toEqual(new Set([view.from, view.from + 60, view.to - 60]));
      }
    });

    test("by model and by group: every row of the range once; a key bound to no group is (no group)", async () => {
      const keys = await usage.keyUsage(seriesWindow("1h", NOW).from, seriesWindow("1h", NOW).to);
      const all = { requests: keys.items.reduce((n, r) => n + r.requests, 0), micros: keys.items.reduce((n, r) => n + r.spend_micros, 0) };
      const models = await usage.series("model", "1h");
      expect(models.series.map((s) => s.name).sort()).toEqual(["m1", "m2"]);
      expect(models.series.reduce((n, s) => n + s.total.requests, 0)).toBe(all.requests);
      // Priced per (key, model) like /usage/keys: within a cent per series of the keys' sum.
      const cents = models.series.reduce((n, s) => n + s.total.spend_cents, 0);
      expect(cents).toBeLessThanOrEqual(centsOf(all.micros));
      expect(cents).toBeGreaterThan(centsOf(all.micros) - models.series.length);
      const groups = await usage.series("group", "1h");
      expect(groups.series.map((s) => s.name).sort()).toEqual(["(no group)", "g0", "g1", "g2"]);
      expect(groups.series.find((s) => s.name === "(no group)")!.total.requests).toBe(4);
      expect(groups.series.reduce((n, s) => n + s.total.requests, 0)).toBe(all.requests);
    });

    test("one key's usage over time (key_id): only its rows, by model, adding up to its own total", async () => {
      const window = seriesWindow("1h", NOW);
      const own = (await usage.keyUsage(window.from, window.to)).items.find((r) => r.id === "key_21")!;
      const view = await usage.series("model", "1h", "key_21");
      expect(view.series.reduce((n, s) => n + s.total.requests, 0)).toBe(own.requests);
      expect(view.series.reduce((n, s) => n + s.total.tokens, 0)).toBe(own.tokens_input + own.tokens_output + own.tokens_cache_read + own.tokens_cache_creation);
      const everyone = await usage.series("model", "1h");
      expect(view.series.reduce((n, s) => n + s.total.requests, 0)).toBeLessThan(everyone.series.reduce((n, s) => n + s.total.requests, 0));
      expect((await usage.series("key", "1h", "key_21")).series.map((s) => s.name)).toEqual(["key_21"]);
      expect((await usage.series("model", "1h", "no-such-key")).series).toEqual([]);
      // GET /usage/keys: each key's last use in the range, the second of its newest ledger row.
      const inRange = rows.filter((r) => r.key_id === "key_21" && r.ts >= window.from * 1000 && r.ts < window.to * 1000);
      expect(own.last_used_at).toBe(Math.floor(Math.max(...inRange.map((r) => r.ts)) / 1000));
    });

    test("longer ranges hold the earlier rows; two reads agree", async () => {
      const day = await usage.series("key", "24h");
      expect(day.step_secs).toBe(900);
      const key24 = day.series.find((s) => s.name === "key_24")!;
      expect(key24.total.requests).toBe(4 + 5);
      const week = await usage.series("key", "7d");
      expect(week.series.find((s) => s.name === "key_24")!.total.requests).toBe(4 + 5 + 9);
      expect(await usage.series("key", "7d")).toEqual(week);
    });

    test("today: since 00:00 UTC, every key and model", async () => {
      const midnight = Date.parse("2025-06-30T00:00:00Z");
      const today = await usage.today();
      const keys = await usage.keyUsage(midnight / 1000, undefined);
      expect(today).toEqual({
        from: midnight / 1000,
        requests: keys.items.reduce((n, r) => n + r.requests, 0),
        tokens: keys.items.reduce((n, r) => n + r.tokens_input + r.tokens_output + r.tokens_cache_read + r.tokens_cache_creation, 0),
        spend_cents: centsOf(keys.items.reduce((n, r) => n + r.spend_micros, 0)),
      });
      expect(today.requests).toBe(rows.filter((r) => r.ts >= midnight).reduce((n, r) => n + r.requests, 0));
    });
  });
}

describe("series windows", () => {
  test("each range's fixed step, at most 200 points, aligned, ending with the step in progress", () => {
    expect(Object.fromEntries(Object.entries(USAGE_RANGES).map(([r, v]) => [r, v.step_secs]))).toEqual({ "1h": 60, "24h": 900, "7d": 3600, "30d": 21600 });
    for (const range of Object.keys(USAGE_RANGES) as UsageRange[]) {
      const w = seriesWindow(range, NOW);
      expect((w.to - w.from) / w.step_secs).toBeLessThanOrEqual(200);
      expect(w.to - w.from).toBe(USAGE_RANGES[range].secs);
      expect(w.from % w.step_secs).toBe(0);
      expect(w.to * 1000).toBeGreaterThan(NOW);
      expect((w.to - w.step_secs) * 1000).toBeLessThanOrEqual(NOW);
      // Anywhere in the same step, the same window; the next step moves it by one step.
      const stepStart = (w.to - w.step_secs) * 1000;
      expect(seriesWindow(range, stepStart)).toEqual(w);
      expect(seriesWindow(range, w.to * 1000 - 1)).toEqual(w);
      expect(seriesWindow(range, w.to * 1000).from).toBe(w.from + w.step_secs);
    }
  });
});

suite("sqlite", async () => {
  const store = SqliteStore.open(":memory:");
  return { ledger: new SqliteLedgerStore(store.database), close: async () => store.close() };
});

// The gateway's own shape: a file store, its views' reads on the read worker's connection.
suite("sqlite, read on its worker", async () => {
  const store = SqliteStore.open(join(tempDir("gw-usage-series-"), "gateway.db"));
  return { ledger: new SqliteLedgerStore(store.database, store.reader), close: async () => store.close() };
});

describe("a read the worker refuses", () => {
  test("with the queue full it is a 429, past its time a 503, each with Retry-After and the reason", async () => {
    const store = SqliteStore.open(join(tempDir("gw-usage-series-"), "gateway.db"));
    const reader = new ReadWorker(store.path, { queued: 1, timeoutMs: 200 });
    const usage = usageOver(new SqliteLedgerStore(store.database, reader));
    // One read running, one waiting: the queue is full.
    const slow = reader.all("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 6000000) SELECT count(*) FROM c", []).catch(() => undefined);
    const waiting = usage.today().catch((e: unknown) => e);
    const busy = (await usage.series("key", "30d").catch((e: unknown) => e)) as GatewayError;
    expect(busy).toBeInstanceOf(GatewayError);
    expect({ code: busy.code, status: busy.status, retry: busy.headers["retry-after"] }).toEqual({ code: "rate_limited", status: 429, retry: "5" });
    expect(busy.message).toBe("usage read refused: 1 ledger reads are already waiting; retry later");
    const late = (await waiting) as GatewayError;
    expect({ status: late.status, retry: late.headers["retry-after"] }).toEqual({ status: 503, retry: "5" });
    expect(late.message).toBe("usage read refused: the ledger read took longer than 0.2 s and was stopped; choose a shorter range");
    await slow;
    await reader.close();
    await store.close();
  });
});

const server = usePostgres("pg-usage-series-");
suite("postgres", async () => {
  const url = await server().createDatabase("usage_series");
  const store = await PostgresStore.open({ url, schema: "public", poolSize: 2, connectTimeoutSecs: 5 }, { signingKey: "k".repeat(48) });
  return { ledger: new PgLedgerStore(store.sql), close: () => store.close() };
});
