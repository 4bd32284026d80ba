// Admission by reservation with a fake clock (issue 22 class 5): a bucket admits while settled + reserved
// is below its cap, usage replaces the estimate, the end of a request frees what is left of it, a
// roll-over keeps reservations of requests in flight, a total window's refusal has no Retry-After; the
// estimates themselves; and metering's ledger writes when the store refuses them (class 8).
import { describe, expect, test } from "bun:test";
import { DEFAULT_OUTPUT_ESTIMATE, InputScales, OutputEstimates, requestedMaxOutput, reservationFor } from "../../../src/governance/estimate.ts";
import { LimitEngine, type GroupNode, type Limit } from "../../../src/governance/limits.ts";
import { Metering } from "../../../src/governance/metering.ts";
import { estimateTokens } from "../../../src/ir/estimate.ts";
import { loadConfigText } from "../../../src/config/load.ts";
import { ConfigHolder } from "../../../src/config/snapshot.ts";
import type { LedgerRow, LedgerStore } from "../../../src/store/ledger.ts";
import type { Pool } from "../../../src/routing/pool.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { settled } from "../../support/settled.ts";

const at = (iso: string) => Date.parse(iso);
const FREE = { rate_card: {}, per_request_fee: 0 };
const tiers = (input: number, output: number) => ({ input, output, cache_read: 0, cache_creation: 0 });

function engine(limits: Limit[], start = "2025-03-14T15:09:00Z") {
  const groups = new Map<string, GroupNode>([["team", { name: "team", parent: null, enabled: true, limits, child_default: null, source: "api" }]]);
  const clock = { now: at(start) };
  return { clock, limits: new LimitEngine(() => clock.now, () => groups) };
}

const reserve = (tokens: number, spendMicros = 0) => () => ({ tokens, spendMicros });

function admitted(result: ReturnType<LimitEngine["admitHere"]>) {
  if (!result.ok) throw new Error(`refused: ${result.error.message}`);
  return result.admission;
}

describe("a token cap admits while settled + reserved is below it", () => {
  test("reservations of requests in flight refuse the next one, with Retry-After 1 s", () => {
    const { limits } = engine([{ window: "minute", tokens: 100 }]);
    admitted(limits.admitHere("team", "chat", FREE, reserve(40)));
    admitted(limits.admitHere("team", "chat", FREE, reserve(40)));
    admitted(limits.admitHere("team", "chat", FREE, reserve(40)));
    const refused = limits.admitHere("team", "chat", FREE, reserve(40));
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.error.kind).toBe("rate_limit");
    expect(refused.error.retryAfterSecs).toBe(1);
    expect(refused.error.message).toContain("held by requests in flight");
  });

  test("usage replaces the estimate, and the end frees the rest", () => {
    const { clock, limits } = engine([{ window: "minute", tokens: 100 }]);
    const a = admitted(limits.admitHere("team", "chat", FREE, reserve(60)));
    admitted(limits.admitHere("team", "chat", FREE, reserve(40)));
    expect(limits.admitHere("team", "chat", FREE, reserve(30)).ok).toBe(false);
    // a used 10 of its 60: 10 settled + 50 still reserved by a until it ends + 40 = 100.
    a.charge(tiers(4, 6), 0, clock.now);
    expect(limits.admitHere("team", "chat", FREE, reserve(30)).ok).toBe(false);
    a.end();
    a.end();
    // 10 settled + 40 reserved: room for two more of 30 (50, then 80, below 100), not a third.
    admitted(limits.admitHere("team", "chat", FREE, reserve(30)));
    admitted(limits.admitHere("team", "chat", FREE, reserve(30)));
    expect(limits.admitHere("team", "chat", FREE, reserve(30)).ok).toBe(false);
  });

  test("usage beyond the estimate is charged in full; a request that failed frees its whole reservation", () => {
    const { clock, limits } = engine([{ window: "minute", tokens: 100 }]);
    const a = admitted(limits.admitHere("team", "chat", FREE, reserve(20)));
    const b = admitted(limits.admitHere("team", "chat", FREE, reserve(50)));
    a.charge(tiers(30, 40), 0, clock.now);
    a.end();
    b.end();
    // 70 settled, nothing reserved.
    expect(limits.rateHeadroom("team")).toBeCloseTo(0.3);
    admitted(limits.admitHere("team", "chat", FREE, reserve(50)));
  });

  test("the settled count alone at the cap refuses until the window ends", () => {
    const { clock, limits } = engine([{ window: "minute", tokens: 100 }], "2025-03-14T15:09:40Z");
    const a = admitted(limits.admitHere("team", "chat", FREE, reserve(10)));
    a.charge(tiers(50, 50), 0, clock.now);
    a.end();
    const refused = limits.admitHere("team", "chat", FREE, reserve(10));
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.error.retryAfterSecs).toBe(20);
  });

  test("a roll-over keeps the reservations of requests in flight; their usage lands in the new window", () => {
    const { clock, limits } = engine([{ window: "minute", tokens: 100 }], "2025-03-14T15:09:59Z");
    const a = admitted(limits.admitHere("team", "chat", FREE, reserve(100)));
    clock.now = at("2025-03-14T15:10:00Z");
    expect(limits.admitHere("team", "chat", FREE, reserve(20)).ok).toBe(false);
    a.charge(tiers(40, 0), 0, clock.now);
    a.end();
    expect(limits.rateHeadroom("team")).toBeCloseTo(0.6);
  });

  test("an empty bucket admits one request whatever its estimate", () => {
    const { limits } = engine([{ window: "hour", tokens: 100 }]);
    admitted(limits.admitHere("team", "chat", FREE, reserve(5000)));
    expect(limits.admitHere("team", "chat", FREE, reserve(1)).ok).toBe(false);
  });

  test("no estimate is made for a chain without token or budget caps", () => {
    const { limits } = engine([{ window: "minute", requests: 5 }, { concurrent: 2 }]);
    admitted(
      limits.admitHere("team", "chat", FREE, () => {
        throw new Error("estimated");
      }),
    );
  });
});

describe("a budget cap reserves the estimate's cost", () => {
  test("cost in flight refuses with Retry-After 1 s; spent budget answers insufficient_quota", () => {
    const { clock, limits } = engine([{ window: "day", budget_cents: 1 }]);
    const a = admitted(limits.admitHere("team", "chat", FREE, reserve(10, 600_000)));
    const b = admitted(limits.admitHere("team", "chat", FREE, reserve(10, 400_000)));
    const held = limits.admitHere("team", "chat", FREE, reserve(10, 1));
    expect(held.ok || held.error.retryAfterSecs).toBe(1);
    a.charge(tiers(5, 5), 100_000, clock.now);
    a.end();
    // 100k settled + 400k reserved.
    const c = admitted(limits.admitHere("team", "chat", FREE, reserve(10, 400_000)));
    b.charge(tiers(5, 5), 1_000_000, clock.now);
    b.end();
    c.end();
    const spent = limits.admitHere("team", "chat", FREE, reserve(10, 1));
    expect(spent.ok || spent.error.kind).toBe("insufficient_quota");
  });
});

describe("a total window never frees", () => {
  test("its refusals carry no Retry-After and say so", () => {
    const { clock, limits } = engine([{ window: "total", requests: 1 }, { window: "total", tokens: 1000 }]);
    admitted(limits.admitHere("team", "chat", FREE));
    const refused = limits.admitHere("team", "chat", FREE);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.error.retryAfterSecs).toBeUndefined();
    expect(refused.error.message).toBe("Group team allows 1 requests in total; a total window does not reset.");
    const tokens = engine([{ window: "total", tokens: 10 }]);
    const a = admitted(tokens.limits.admitHere("team", "chat", FREE, reserve(5)));
    a.charge(tiers(10, 0), 0, clock.now);
    a.end();
    const spent = tokens.limits.admitHere("team", "chat", FREE, reserve(5));
    expect(spent.ok || spent.error.retryAfterSecs).toBeUndefined();
  });
});

describe("estimates", () => {
  test("4 characters a token, rounded up; nothing for nothing", () => {
    expect(estimateTokens(0)).toBe(0);
    expect(estimateTokens(4)).toBe(1);
    expect(estimateTokens(5)).toBe(2);
    expect(estimateTokens(4000)).toBe(1000);
  });

  test("the requested maximum output in each protocol's spelling", () => {
    expect(requestedMaxOutput({ max_completion_tokens: 50, max_tokens: 9 })).toBe(50);
    expect(requestedMaxOutput({ max_tokens: 9 })).toBe(9);
    expect(requestedMaxOutput({ max_output_tokens: 7 })).toBe(7);
    expect(requestedMaxOutput({ generationConfig: { maxOutputTokens: 8 } })).toBe(8);
    expect(requestedMaxOutput({ inferenceConfig: { maxTokens: 6 } })).toBe(6);
    expect(requestedMaxOutput({})).toBeUndefined();
    expect(requestedMaxOutput({ max_tokens: -5 })).toBeUndefined();
    expect(requestedMaxOutput({ max_tokens: "9" })).toBeUndefined();
    expect(requestedMaxOutput({ max_tokens: 1e300 })).toBe(2 ** 31 - 1);
  });

  test("without a maximum: the default until the pool answers, then up at once and down slowly", () => {
    const outputs = new OutputEstimates();
    expect(outputs.of("chat")).toBe(DEFAULT_OUTPUT_ESTIMATE);
    outputs.observe("chat", 100);
    expect(outputs.of("chat")).toBe(100);
    outputs.observe("chat", 400);
    expect(outputs.of("chat")).toBe(400);
    outputs.observe("chat", 0);
    expect(outputs.of("chat")).toBe(375);
    expect(outputs.of("other")).toBe(DEFAULT_OUTPUT_ESTIMATE);
  });

  test("cost at the dearest lane of the pool; input from the declared size, else the parsed body's", () => {
    const lane = (name: string) => ({ lane: { name } }) as Pool["members"][number];
    const pool = { members: [lane("cheap"), lane("dear"), lane("unpriced")] } as unknown as Pool;
    const pricing = { rate_card: { cheap: { input: 1, output: 2 }, dear: { input: 3, output: 15, cache_creation: 3.75 } } };
    expect(reservationFor(pricing, pool, {}, 400, 100)).toEqual({ tokens: 200, spendMicros: 100 * 3.75 + 100 * 15, sizeTokens: 100 });
    expect(reservationFor(pricing, pool, { a: "xxxx" }, undefined, 0).tokens).toBe(3);
    // The pool's input scale multiplies the size (its tokens and their cost); the size is kept as it was.
    expect(reservationFor(pricing, pool, {}, 400, 100, 2.5)).toEqual({ tokens: 350, spendMicros: Math.round(250 * 3.75 + 100 * 15), sizeTokens: 100 });
  });

  test("the input scale per pool: upstream input per token of size, up at once and down by 1/16 of the gap", () => {
    const scales = new InputScales();
    expect(scales.of("chat")).toBe(1);
    scales.observe("chat", 50 / 19);
    expect(scales.of("chat")).toBe(50 / 19);
    scales.observe("chat", 50 / 19 - 1.6);
    expect(scales.of("chat")).toBeCloseTo(50 / 19 - 0.1);
    expect(scales.of("other")).toBe(1);
    // Never below 1 (the body's size at 4 bytes a token): a media-heavy body counted as a few tokens does not shrink it.
    for (let i = 0; i < 200; i++) scales.observe("chat", 0.01);
    expect(scales.of("chat")).toBeCloseTo(1);
    expect(scales.of("chat")).toBeGreaterThanOrEqual(1);
  });
});

describe("ledger writes the store refuses", () => {
  const CONFIG = `auth: {chain: [keys], signing_key: {env: GW_KEY}}\ngroups: {team: {limits: [{window: day, requests: 100}]}}\n`;

  function setup(onUnavailable: "fail_closed" | "fail_open") {
    const loaded = loadConfigText(CONFIG, "t.yaml", { env: { GW_KEY: "unit-reservation-signing-key-1" } });
    if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
    const holder = new ConfigHolder(loaded.snapshot);
    const groups = new Map<string, GroupNode>([["team", { name: "team", parent: null, enabled: true, limits: [{ window: "day", requests: 100 }], child_default: null, source: "config" }]]);
    const clock = { now: at("2025-03-14T15:09:00Z") };
    const limits = new LimitEngine(() => clock.now, () => groups);
    const written: LedgerRow[] = [];
    const store = { full: false };
    const ledger: LedgerStore = {
      append: async (rows) => {
        if (store.full) throw new Error("database or disk is full");
        written.push(...rows);
      },
      sums: async () => [],
      namedSums: async () => [],
      stepSums: async () => [],
    };
    const metering = new Metering({ holder, limits, ledger, logger: createLogger({ level: "error", write: () => {} }), now: () => clock.now, flushMs: 60_000, onUnavailable, maxUnsavedRows: 2 });
    const key = (id: string) => ({ id, module: "keys", group: "team" }) as const;
    return { metering, written, store, clock, key };
  }

  test("fail_closed: rows are kept and retried; past the bound metered requests are refused 503 store unavailable; all rows written once after", async () => {
    const { metering, written, store, clock, key } = setup("fail_closed");
    store.full = true;
    expect(settled(metering.admit(key("a"), "chat", "m")).ok).toBe(true);
    await metering.flush();
    expect(metering.unavailable).toBe(true);
    expect(metering.keptRows).toBe(1);
    clock.now += 1000;
    expect(settled(metering.admit(key("a"), "chat", "m")).ok).toBe(true);
    const refused = settled(metering.admit(key("b"), "chat", "m"));
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.error).toMatchObject({ kind: "overloaded", status: 503, retryAfterSecs: 1 });
    await metering.flush();
    expect(metering.keptRows).toBe(2);
    store.full = false;
    await metering.flush();
    expect(metering.unavailable).toBe(false);
    expect(metering.keptRows).toBe(0);
    expect(written.map((r) => [r.key_id, r.ts, r.requests])).toEqual([
      ["a", at("2025-03-14T15:09:00Z"), 1],
      ["a", at("2025-03-14T15:09:01Z"), 1],
    ]);
    expect(settled(metering.admit(key("b"), "chat", "m")).ok).toBe(true);
  });

  test("fail_open: past the bound requests are served and the rows past it dropped", async () => {
    const { metering, store, clock, key } = setup("fail_open");
    store.full = true;
    for (const id of ["a", "b", "c"]) {
      expect(settled(metering.admit(key(id), "chat", "m")).ok).toBe(true);
      clock.now += 1000;
    }
    await metering.flush();
    expect(metering.keptRows).toBe(2);
    expect(settled(metering.admit(key("d"), "chat", "m")).ok).toBe(true);
  });
});
