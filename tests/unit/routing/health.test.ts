// Active health probes: which lanes are probed when, and what a successful probe does to the breakers.
import { describe, expect, test } from "bun:test";
import type { ResolvedProvider } from "../../../src/providers/provider.ts";
import { HealthProber } from "../../../src/routing/health.ts";
import type { Lane } from "../../../src/routing/lane.ts";
import type { BreakerSettings } from "../../../src/routing/pool.ts";
import { LANE_DEFAULT_CELL, RoutingState } from "../../../src/routing/state.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";

const SETTINGS: BreakerSettings = { error_rate: 0.5, window_secs: 60, min_requests: 5, consecutive_n: 3, base_cooldown_secs: 15, max_cooldown_secs: 120 };

function provider(name: string, health: ResolvedProvider["health"], key = true): ResolvedProvider {
  return { name, protocol: "openai", baseUrl: "http://x", origin: "http://x", apiKey: key ? ({ reveal: () => "k" } as ResolvedProvider["apiKey"]) : undefined, headers: {}, query: {}, queryString: "", health, region: undefined, aws: undefined, latencyMs: 0 };
}
const lane = (name: string, p: ResolvedProvider): Lane => ({ name, provider: p, upstreamModel: name, contextWindow: null, maxConcurrent: null, maxRequests: null });

function setup(providers: ResolvedProvider[], answer = true) {
  let now = 1_000_000;
  const clock = { now: () => now, random: () => 0.5 };
  const state = new RoutingState(clock);
  const lanes = new Map(providers.flatMap((p) => [lane(`${p.name}-a`, p), lane(`${p.name}-b`, p)]).map((l) => [l.name, l] as const));
  const probed: string[] = [];
  const prober = new HealthProber(() => ({ providers: new Map(providers.map((p) => [p.name, p])), lanes }), state, async (l, timeoutMs) => {
    probed.push(`${l.name}@${timeoutMs}`);
    return answer;
  }, createLogger({ level: "error" }));
  return { state, prober, probed, advance: (ms: number) => (now += ms), tick: () => Promise.all(prober.tick()) };
}

describe("health probes", () => {
  test("active: the first tick is skipped, then every lane of the provider each interval, with its timeout", async () => {
    const t = setup([provider("p", { mode: "active", interval_secs: 30, timeout_secs: 5 })]);
    await t.tick();
    expect(t.probed).toEqual([]);
    t.advance(29_000);
    await t.tick();
    expect(t.probed).toEqual([]);
    t.advance(1_000);
    await t.tick();
    expect(t.probed).toEqual(["p-a@5000", "p-b@5000"]);
    t.advance(1_000);
    await t.tick();
    expect(t.probed).toHaveLength(2);
    t.advance(29_000);
    await t.tick();
    expect(t.probed).toHaveLength(4);
  });

  test("intervals and timeouts below 1 s are floored at 1 s", async () => {
    const t = setup([provider("p", { mode: "active", interval_secs: 0.1, timeout_secs: 0.2 })]);
    await t.tick();
    t.advance(500);
    await t.tick();
    expect(t.probed).toEqual([]);
    t.advance(500);
    await t.tick();
    expect(t.probed).toEqual(["p-a@1000", "p-b@1000"]);
  });

  test("none probes nothing; a provider without a key is skipped", async () => {
    const t = setup([provider("off", { mode: "none", interval_secs: 1, timeout_secs: 1 }), provider("keyless", { mode: "active", interval_secs: 1, timeout_secs: 1 }, false)]);
    for (let i = 0; i < 5; i++) {
      await t.tick();
      t.advance(1_000);
    }
    expect(t.probed).toEqual([]);
  });

  test("dead: only lanes with a tripped cell; a success closes every cell of the lane and counts one ok", async () => {
    const t = setup([provider("p", { mode: "dead", interval_secs: 10, timeout_secs: 2 })]);
    const pooled = t.state.cell("chat", "p-a", SETTINGS);
    const direct = t.state.cell(LANE_DEFAULT_CELL, "p-a", SETTINGS);
    for (let i = 0; i < 3; i++) pooled.failure({ kind: "transient" });
    direct.failure({ kind: "hard_down", reason: "auth: invalid key" });
    expect([pooled.state, direct.state]).toEqual(["open", "open"]);
    await t.tick();
    t.advance(10_000);
    await t.tick();
    expect(t.probed).toEqual(["p-a@2000"]);
    expect([pooled.state, direct.state]).toEqual(["closed", "closed"]);
    expect(direct.deadReason).toBeUndefined();
    expect(pooled.streak).toBe(0);
    expect(t.state.lane("p-a").ok).toBe(1);
  });

  test("a failed probe changes nothing", async () => {
    const t = setup([provider("p", { mode: "dead", interval_secs: 10, timeout_secs: 2 })], false);
    const cell = t.state.cell("chat", "p-b", SETTINGS);
    for (let i = 0; i < 3; i++) cell.failure({ kind: "transient" });
    await t.tick();
    t.advance(10_000);
    await t.tick();
    expect(t.probed).toEqual(["p-b@2000"]);
    expect(cell.state).toBe("open");
    expect(t.state.lane("p-b").ok).toBe(0);
  });
});
