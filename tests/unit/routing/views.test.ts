// What operators see of the routing state: /stats (statsView), /healthz (anyLaneUsable) and the
// gateway_lane_state gauge (laneStates: Closed=0, HalfOpen=1, Open=2).
import { describe, expect, test } from "bun:test";
import { HARD_DOWN_MS } from "../../../src/routing/breaker.ts";
import type { Lane } from "../../../src/routing/lane.ts";
import type { Pool } from "../../../src/routing/pool.ts";
import { LANE_DEFAULT_CELL, RoutingState } from "../../../src/routing/state.ts";
import { anyLaneUsable, laneStates, statsView } from "../../../src/routing/views.ts";
import { fakeClock, lane, pool, SETTINGS } from "./fakes.ts";

function setup(lanes: Lane[], pools: Pool[]) {
  const clock = fakeClock();
  clock.fix(0.5);
  const state = new RoutingState(clock);
  const view = { lanes: new Map(lanes.map((l) => [l.name, l])), pools: new Map(pools.map((p) => [p.name, p])), laneDefaults: { breaker: SETTINGS } };
  return {
    clock,
    state,
    view,
    stats: () => statsView(view, state),
    laneView: (name: string) => statsView(view, state).lanes.find((l) => l.lane === name)!,
    direct: (l: Lane) => state.cell(LANE_DEFAULT_CELL, l.name, SETTINGS),
    cell: (p: Pool, l: Lane) => state.cell(p.name, l.name, p.breaker),
    gauge: () => [...laneStates(view, state)].map(({ labels, value }) => `${labels.pool}/${labels.lane}=${value}`),
  };
}

const trip = (cell: { state: string; failure(f: { kind: "transient" }): boolean }) => {
  while (cell.state === "closed") cell.failure({ kind: "transient" });
};

describe("statsView", () => {
  test("a lane without traffic: a fresh Closed cell, its caps as configured", () => {
    const a = lane("a", { maxConcurrent: 4, maxRequests: 100 });
    const b = lane("b");
    const t = setup([a, b], [pool("chat", [[a, 2], b])]);
    expect(t.stats()).toEqual({
      lanes: [
        { lane: "a", model: "a-upstream", provider: "p", max_concurrent: 4, inflight: 0, free_slots: 4, ok: 0, err: 0, usable: true, dead: false, dead_reason: null, state: "closed", cooldown_remaining_s: 0, streak: 0, budget: 100 },
        { lane: "b", model: "b-upstream", provider: "p", max_concurrent: null, inflight: 0, free_slots: null, ok: 0, err: 0, usable: true, dead: false, dead_reason: null, state: "closed", cooldown_remaining_s: 0, streak: 0, budget: null },
      ],
      pools: {
        chat: {
          on_exhausted: "reject",
          members: [
            { lane: "a", weight: 2, usable: true, state: "closed", cooldown_remaining_s: 0, streak: 0 },
            { lane: "b", weight: 1, usable: true, state: "closed", cooldown_remaining_s: 0, streak: 0 },
          ],
        },
      },
    });
  });

  test("implicit one-lane pools are not listed under pools", () => {
    const a = lane("a");
    const t = setup([a], [pool("a", [a], { implicit: true }), pool("chat", [a])]);
    expect(Object.keys(t.stats().pools)).toEqual(["chat"]);
  });

  test("counters: in flight, free slots, ok, err and the remaining budget (never below 0)", () => {
    const a = lane("a", { maxConcurrent: 3, maxRequests: 5 });
    const t = setup([a], []);
    Object.assign(t.state.lane("a"), { inflight: 1, ok: 7, err: 2, admitted: 3 });
    expect(t.laneView("a")).toMatchObject({ inflight: 1, free_slots: 2, ok: 7, err: 2, budget: 2, usable: true });
    Object.assign(t.state.lane("a"), { inflight: 4, admitted: 9 });
    expect(t.laneView("a")).toMatchObject({ free_slots: 0, budget: 0, usable: false });
  });

  test("a lane at its cap or past its budget is not usable", () => {
    const a = lane("a", { maxConcurrent: 1 });
    const b = lane("b", { maxRequests: 1 });
    const t = setup([a, b], [pool("chat", [a, b])]);
    t.state.lane("a").inflight = 1;
    t.state.lane("b").admitted = 1;
    const { lanes, pools } = t.stats();
    expect(lanes.map((l) => l.usable)).toEqual([false, false]);
    expect(pools.chat!.members.map((m) => m.usable)).toEqual([false, false]);
  });

  test("the lane's own state is its lane-default cell (direct routes); a pool's cell shows under the pool", () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup([a], [chat]);
    trip(t.cell(chat, a));
    expect(t.laneView("a")).toMatchObject({ state: "closed", usable: true, streak: 0, cooldown_remaining_s: 0 });
    expect(t.stats().pools.chat!.members[0]).toMatchObject({ state: "open", usable: false, streak: 3, cooldown_remaining_s: 15 });
    t.direct(a).failure({ kind: "transient" });
    expect(t.laneView("a")).toMatchObject({ state: "closed", usable: false, streak: 1, cooldown_remaining_s: 1 });
  });

  test("cooldown_remaining_s is rounded up to a tenth of a second", () => {
    const a = lane("a");
    const t = setup([a], []);
    t.direct(a).failure({ kind: "transient", retryAfterSecs: 12.345 });
    expect(t.laneView("a").cooldown_remaining_s).toBe(12.4);
    t.clock.advance(12_300);
    expect(t.laneView("a").cooldown_remaining_s).toBe(0.1);
    t.clock.advance(45);
    expect(t.laneView("a").cooldown_remaining_s).toBe(0);
  });

  test("a hard-down fault in any cell marks the lane dead with its reason, until that cell closes", () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup([a], [chat]);
    const cell = t.cell(chat, a);
    cell.failure({ kind: "hard_down", reason: "billing: insufficient_quota" });
    expect(t.laneView("a")).toMatchObject({ dead: true, dead_reason: "billing: insufficient_quota", state: "closed", usable: true });
    t.clock.advance(HARD_DOWN_MS);
    expect(t.laneView("a").dead).toBe(true); // still Open until a request half-opens it
    cell.admit();
    expect(cell.state).toBe("half_open");
    expect(t.laneView("a").dead).toBe(true);
    cell.success();
    expect(t.laneView("a")).toMatchObject({ dead: false, dead_reason: null });
  });

  test("an ordinary trip is not dead", () => {
    const a = lane("a");
    const t = setup([a], []);
    trip(t.direct(a));
    expect(t.laneView("a")).toMatchObject({ state: "open", dead: false, dead_reason: null, usable: false });
  });

  test("a half-open cell with its probe in flight is not usable; once the probe is free it is", () => {
    const a = lane("a");
    const t = setup([a], []);
    const cell = t.direct(a);
    trip(cell);
    t.clock.advance(15_000);
    expect(t.laneView("a")).toMatchObject({ state: "open", usable: true, cooldown_remaining_s: 0 });
    cell.admit();
    expect(t.laneView("a")).toMatchObject({ state: "half_open", usable: false });
    cell.abandon();
    expect(t.laneView("a")).toMatchObject({ state: "half_open", usable: true });
  });
});

describe("anyLaneUsable (/healthz)", () => {
  test("true with fresh state; false with no pools at all", () => {
    const a = lane("a");
    expect(anyLaneUsable(setup([a], [pool("chat", [a])]).view, new RoutingState(fakeClock()))).toBe(true);
    const t = setup([a], []);
    expect(anyLaneUsable(t.view, t.state)).toBe(false);
  });

  test("false when every pool member is cooling, Open or at its cap; true again when one is free", () => {
    const [a, b] = [lane("a"), lane("b", { maxConcurrent: 1 })];
    const chat = pool("chat", [a, b]);
    const t = setup([a, b], [chat]);
    trip(t.cell(chat, a));
    t.state.lane("b").inflight = 1;
    expect(anyLaneUsable(t.view, t.state)).toBe(false);
    t.state.lane("b").inflight = 0;
    expect(anyLaneUsable(t.view, t.state)).toBe(true);
    t.cell(chat, b).failure({ kind: "transient" });
    expect(anyLaneUsable(t.view, t.state)).toBe(false);
    t.clock.advance(15_000);
    expect(anyLaneUsable(t.view, t.state)).toBe(true);
  });

  test("a lane usable through another pool's cell counts", () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const batch = pool("batch", [a]);
    const t = setup([a], [chat, batch]);
    trip(t.cell(chat, a));
    expect(anyLaneUsable(t.view, t.state)).toBe(true);
    trip(t.cell(batch, a));
    expect(anyLaneUsable(t.view, t.state)).toBe(false);
  });
});

describe("laneStates (gateway_lane_state)", () => {
  test("every (pool, member) cell of the config, Closed=0 HalfOpen=1 Open=2, then the lane-default cells in use", () => {
    const [a, b] = [lane("a"), lane("b")];
    const chat = pool("chat", [a, b]);
    const implicitA = pool("a", [a], { implicit: true });
    const t = setup([a, b], [chat, implicitA]);
    expect(t.gauge()).toEqual(["chat/a=0", "chat/b=0", "a/a=0"]);
    trip(t.cell(chat, a));
    t.cell(chat, b).failure({ kind: "hard_down", reason: "auth: x" });
    t.clock.advance(HARD_DOWN_MS);
    t.cell(chat, b).admit();
    trip(t.direct(b));
    expect(t.gauge()).toEqual(["chat/a=2", "chat/b=1", "a/a=0", `${LANE_DEFAULT_CELL}/b=2`]);
    t.cell(chat, b).success();
    t.direct(a);
    expect(t.gauge()).toEqual(["chat/a=2", "chat/b=0", "a/a=0", `${LANE_DEFAULT_CELL}/a=0`, `${LANE_DEFAULT_CELL}/b=2`]);
  });
});
