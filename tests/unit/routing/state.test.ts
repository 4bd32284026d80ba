// RoutingState and LaneCounters: per-lane counters shared by every pool, one breaker per (pool, lane).
import { describe, expect, test } from "bun:test";
import { LANE_DEFAULT_CELL, LaneCounters, RoutingState } from "../../../src/routing/state.ts";
import { fakeClock, lane, SETTINGS } from "./fakes.ts";

describe("LaneCounters.hasRoom", () => {
  test("no caps: always room", () => {
    const counters = new LaneCounters();
    counters.inflight = 1e6;
    counters.admitted = 1e9;
    expect(counters.hasRoom(lane("a"))).toBe(true);
  });

  test("max_concurrent caps the requests in flight", () => {
    const counters = new LaneCounters();
    const capped = lane("a", { maxConcurrent: 2 });
    expect(counters.hasRoom(capped)).toBe(true);
    counters.inflight = 1;
    expect(counters.hasRoom(capped)).toBe(true);
    counters.inflight = 2;
    expect(counters.hasRoom(capped)).toBe(false);
    counters.inflight = 1;
    expect(counters.hasRoom(capped)).toBe(true);
  });

  test("max_requests is a lifetime budget of admitted requests: finishing one gives nothing back", () => {
    const counters = new LaneCounters();
    const budgeted = lane("a", { maxRequests: 2 });
    counters.admitted = 1;
    expect(counters.hasRoom(budgeted)).toBe(true);
    counters.admitted = 2;
    counters.inflight = 0;
    expect(counters.hasRoom(budgeted)).toBe(false);
  });

  test("a cap of 0 never has room", () => {
    expect(new LaneCounters().hasRoom(lane("a", { maxConcurrent: 0 }))).toBe(false);
    expect(new LaneCounters().hasRoom(lane("a", { maxRequests: 0 }))).toBe(false);
  });
});

describe("RoutingState", () => {
  test("one counters object per lane name, starting at zero", () => {
    const state = new RoutingState(fakeClock());
    const a = state.lane("a");
    expect([a.inflight, a.ok, a.err, a.admitted]).toEqual([0, 0, 0, 0]);
    expect(state.lane("a")).toBe(a);
    expect(state.lane("b")).not.toBe(a);
  });

  test("one breaker per (pool, lane): a lane tripped in one pool is Closed in another", () => {
    const state = new RoutingState(fakeClock());
    const chat = state.cell("chat", "a", SETTINGS);
    expect(state.cell("chat", "a", SETTINGS)).toBe(chat);
    const batch = state.cell("batch", "a", SETTINGS);
    expect(batch).not.toBe(chat);
    expect(state.cell("chat", "b", SETTINGS)).not.toBe(chat);
    chat.failure({ kind: "hard_down", reason: "auth: x" });
    expect([chat.state, batch.state]).toEqual(["open", "closed"]);
  });

  test("cellsOf lists a lane's cells by pool name, the lane-default cell among them; none for a lane without traffic", () => {
    const state = new RoutingState(fakeClock());
    expect(state.cellsOf("a").size).toBe(0);
    const chat = state.cell("chat", "a", SETTINGS);
    const direct = state.cell(LANE_DEFAULT_CELL, "a", SETTINGS);
    expect([...state.cellsOf("a")]).toEqual([
      ["chat", chat],
      [LANE_DEFAULT_CELL, direct],
    ]);
    expect(LANE_DEFAULT_CELL.startsWith("(")).toBe(true);
  });

  test("cells run on the state's clock", () => {
    const clock = fakeClock();
    clock.fix(0.5);
    const state = new RoutingState(clock);
    const cell = state.cell("chat", "a", SETTINGS);
    cell.failure({ kind: "transient" });
    expect(cell.cooldownUntil).toBe(clock.now() + 1_000);
    clock.advance(1_000);
    expect(cell.available()).toBe(true);
  });

  test("a config swap reconfigures the cell in place: its state is kept, the new settings apply", () => {
    const clock = fakeClock();
    clock.fix(0.5);
    const state = new RoutingState(clock);
    const cell = state.cell("chat", "a", SETTINGS);
    cell.failure({ kind: "transient" });
    const swapped = { ...SETTINGS, consecutive_n: 2 };
    expect(state.cell("chat", "a", swapped)).toBe(cell);
    expect(cell.streak).toBe(1);
    clock.advance(cell.cooldownRemainingMs());
    expect(cell.failure({ kind: "transient" })).toBe(true);
  });
});

describe("RoutingState.onBreakerChange", () => {
  test("told each change of a cell's state with its pool and lane, once per change, and not while unset", () => {
    const clock = fakeClock();
    const state = new RoutingState(clock);
    const changes: string[] = [];
    const cell = state.cell("chat", "gpt", { ...SETTINGS, consecutive_n: 2 });
    // Unset: changes happen without anyone told.
    cell.failure({ kind: "transient" });
    cell.success();
    state.onBreakerChange = (pool, lane, to) => changes.push(`${pool}/${lane}:${to}`);
    cell.failure({ kind: "transient" });
    expect(changes).toEqual([]); // below the trip: still closed
    clock.advance(60_000);
    cell.failure({ kind: "transient" });
    expect(changes).toEqual(["chat/gpt:open"]);
    cell.failure({ kind: "transient" }); // one more outcome while open: no change
    clock.advance(600_000);
    expect(cell.admit()).toBe(true);
    cell.success();
    cell.success();
    expect(changes).toEqual(["chat/gpt:open", "chat/gpt:half_open", "chat/gpt:closed"]);
    state.cell(LANE_DEFAULT_CELL, "gpt", SETTINGS).failure({ kind: "hard_down", reason: "credential" });
    expect(changes.at(-1)).toBe("(direct)/gpt:open");
  });
});
