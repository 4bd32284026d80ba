// route(), the attempt loop: weighted selection, the failure classes of the spec's "Upstream error
// handling", failover bounds, on_exhausted actions, lane tickets and the single-flight half-open probe
// under concurrent requests. Attempts are callbacks; the clock and random source are fake.
import { describe, expect, test } from "bun:test";
import type { FailureClass } from "../../../src/ir/index.ts";
import { HARD_DOWN_MS } from "../../../src/routing/breaker.ts";
import { route, type AttemptResult, type LaneTicket, type Routed } from "../../../src/routing/failover.ts";
import type { Lane } from "../../../src/routing/lane.ts";
import type { Pool } from "../../../src/routing/pool.ts";
import { RoutingState } from "../../../src/routing/state.ts";
import { answered, deferred, failed, fakeClock, lane, pool, recorder, upstreamError } from "./fakes.ts";

type Outcome = AttemptResult<string> | Promise<AttemptResult<string>> | ((ticket: LaneTicket) => AttemptResult<string> | Promise<AttemptResult<string>>);

/**
 * The engine over some pools. The random source is fixed at 0.5 unless a test says otherwise: equal
 * weights then draw equal keys, so the order is the members' config order, and every jitter factor is 1.
 */
function setup(...pools: Pool[]) {
  const clock = fakeClock();
  clock.fix(0.5);
  const state = new RoutingState(clock);
  const rec = recorder();
  const byName = new Map(pools.map((p) => [p.name, p]));
  const calls: string[] = [];
  const tickets: LaneTicket[] = [];
  const scripted = new Map<string, Outcome[]>();
  const send = (via: Pool = pools[0]!): Promise<Routed<string>> =>
    route(via, {
      state,
      counters: rec.counters,
      poolNamed: (name) => byName.get(name),
      attempt: (l: Lane, ticket: LaneTicket) => {
        calls.push(l.name);
        tickets.push(ticket);
        const next = scripted.get(l.name)?.shift() ?? answered(l.name);
        return Promise.resolve(typeof next === "function" ? next(ticket) : next);
      },
    });
  return {
    clock,
    state,
    rec,
    calls,
    tickets,
    send,
    /** What the next attempts on a lane return, in order (then: an answer). */
    on: (laneName: string, ...outcomes: Outcome[]) => void scripted.set(laneName, [...(scripted.get(laneName) ?? []), ...outcomes]),
    cell: (p: Pool, l: Lane) => state.cell(p.name, l.name, p.breaker),
    counters: (l: Lane) => state.lane(l.name),
  };
}

/** Trips a cell Open (consecutive failures), as earlier requests would have. */
function tripOpen(t: ReturnType<typeof setup>, p: Pool, l: Lane): void {
  const cell = t.cell(p, l);
  while (cell.state === "closed") cell.failure({ kind: "transient" });
}

/** One attempt was made, on `l`, and nothing was held against it: cell Closed, no streak or cooldown, no ok or err. */
function expectNothingJudged(t: ReturnType<typeof setup>, p: Pool, l: Lane): void {
  expect(t.calls).toEqual([l.name]);
  expect(t.rec.events).toEqual([`attempt ${p.name} ${l.name}`]);
  const cell = t.cell(p, l);
  expect([cell.state, cell.streak, cell.cooldownRemainingMs()]).toEqual(["closed", 0, 0]);
  const c = t.counters(l);
  expect([c.inflight, c.ok, c.err]).toEqual([0, 0, 0]);
}

const relay = (value: string, failure: FailureClass): Routed<string> => ({ kind: "relay", value, failure });
const answer = (laneName: string): Routed<string> => ({ kind: "answer", value: `answer ${laneName}` });

describe("selection", () => {
  test("the first member answers: one attempt, the ticket settles ok, nothing else happens", async () => {
    const a = lane("a");
    const chat = pool("chat", [a, lane("b")]);
    const t = setup(chat);
    expect(await t.send()).toEqual(answer("a"));
    expect(t.calls).toEqual(["a"]);
    expect(t.rec.events).toEqual(["attempt chat a"]);
    const c = t.counters(a);
    expect([c.inflight, c.ok, c.err, c.admitted]).toEqual([0, 1, 0, 1]);
  });

  test("the first pick follows the weights of the injected random source", async () => {
    const chat = pool("chat", [
      [lane("a"), 3],
      [lane("b"), 1],
    ]);
    const t = setup(chat);
    t.clock.fix(undefined); // the seeded source
    for (let i = 0; i < 4000; i++) await t.send();
    const share = t.calls.filter((n) => n === "a").length / 4000;
    expect(Math.abs(share - 0.75)).toBeLessThan(0.025);
  });

  test("a one-member pool routes without a draw", async () => {
    const t = setup(pool("solo", [lane("a")]));
    const before = t.clock.draws;
    await t.send();
    expect(t.clock.draws).toBe(before);
  });

  test("a lane at max_concurrent (in flight across all pools) is skipped until a request ends", async () => {
    const a = lane("a", { maxConcurrent: 1 });
    const chat = pool("chat", [a, lane("b")]);
    const batch = pool("batch", [a]);
    const t = setup(chat, batch);
    t.on("a", answered("a", true)); // a stream, still being read
    expect(await t.send(batch)).toEqual(answer("a"));
    expect(t.counters(a).inflight).toBe(1);
    expect(await t.send(chat)).toEqual(answer("b"));
    t.tickets[0]!.ok();
    expect(t.counters(a).inflight).toBe(0);
    expect(await t.send(chat)).toEqual(answer("a"));
  });

  test("a lane past its max_requests lifetime budget (across all pools) is skipped for good", async () => {
    const a = lane("a", { maxRequests: 2 });
    const chat = pool("chat", [a, lane("b")]);
    const batch = pool("batch", [a]);
    const t = setup(chat, batch);
    await t.send(batch);
    await t.send(chat);
    expect(t.counters(a).admitted).toBe(2);
    expect(await t.send(chat)).toEqual(answer("b"));
    expect(await t.send(batch)).toEqual({ kind: "exhausted", retryAfterSecs: 1 });
    expect(t.calls).toEqual(["a", "a", "b"]);
  });

  test("a cell cooling down is skipped; cells are per (pool, lane), so the lane still serves another pool", async () => {
    const a = lane("a");
    const chat = pool("chat", [a, lane("b")]);
    const batch = pool("batch", [a, lane("c")]);
    const t = setup(chat, batch);
    t.on("a", failed("a", "transient"));
    expect(await t.send(chat)).toEqual(answer("b"));
    expect(t.cell(chat, a).cooldownRemainingMs()).toBe(1_000);
    expect(await t.send(chat)).toEqual(answer("b"));
    expect(await t.send(batch)).toEqual(answer("a"));
    t.clock.advance(1_000);
    expect(await t.send(chat)).toEqual(answer("a"));
    expect(t.calls).toEqual(["a", "b", "b", "a", "a"]);
  });

  test("an Open cell is skipped", async () => {
    const a = lane("a");
    const chat = pool("chat", [a, lane("b")]);
    const t = setup(chat);
    tripOpen(t, chat, a);
    expect(await t.send()).toEqual(answer("b"));
    expect(t.calls).toEqual(["b"]);
  });
});

describe("failure classes (spec: Upstream error handling)", () => {
  test("a client's bad request is relayed verbatim, does not penalise the lane, and does not fail over", async () => {
    const a = lane("a");
    const chat = pool("chat", [a, lane("b")]);
    const t = setup(chat);
    // An earlier failure left a streak: the caller fault shows the lane answering, so it clears it.
    t.cell(chat, a).failure({ kind: "transient" });
    t.clock.advance(1_000);
    t.on("a", failed("a", "caller"));
    expect(await t.send()).toEqual(relay("relay a caller", "caller"));
    expectNothingJudged(t, chat, a);
  });

  test("a caller fault never trips the lane, however many", async () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup(chat);
    for (let i = 0; i < 20; i++) t.on("a", failed("a", "caller"));
    for (let i = 0; i < 20; i++) expect((await t.send()).kind).toBe("relay");
    expect(t.cell(chat, a).state).toBe("closed");
    expect(t.calls).toHaveLength(20);
  });

  test("a context-length overflow fails over to a larger-context lane without recording a fault", async () => {
    const small = lane("small", { contextWindow: 8_000 });
    const chat = pool("chat", [small, lane("same", { contextWindow: 8_000 }), lane("unknown"), lane("big", { contextWindow: 32_000 })]);
    const t = setup(chat);
    t.on("small", failed("small", "context_length"));
    expect(await t.send()).toEqual(answer("big"));
    expect(t.calls).toEqual(["small", "big"]);
    const cell = t.cell(chat, small);
    expect([cell.state, cell.streak, cell.cooldownRemainingMs()]).toEqual(["closed", 0, 0]);
    expect(t.counters(small).err).toBe(0);
    expect(t.counters(small).inflight).toBe(0);
    expect(t.rec.events).toEqual(["attempt chat small", "failure chat small context_length", "attempt chat big"]);
  });

  test("context length: each overflow raises the bar (only a lane larger than every one tried)", async () => {
    const chat = pool("chat", [lane("s", { contextWindow: 8_000 }), lane("m", { contextWindow: 16_000 }), lane("m2", { contextWindow: 16_000 }), lane("l", { contextWindow: 64_000 })]);
    const t = setup(chat);
    t.on("s", failed("s", "context_length"));
    t.on("m", failed("m", "context_length"));
    expect(await t.send()).toEqual(answer("l"));
    expect(t.calls).toEqual(["s", "m", "l"]);
  });

  test("context length: with no larger lane the caller gets the overflow error", async () => {
    const big = lane("big", { contextWindow: 32_000 });
    const chat = pool("chat", [big, lane("small", { contextWindow: 8_000 }), lane("unknown")]);
    const t = setup(chat);
    t.on("big", failed("big", "context_length"));
    expect(await t.send()).toEqual(relay("relay big context_length", "context_length"));
    expect(t.calls).toEqual(["big"]);
    expect(t.cell(chat, big).state).toBe("closed");
  });

  test("an auth failure benches the lane (30 minutes) and is relayed to the caller, with no failover", async () => {
    const a = lane("a");
    const chat = pool("chat", [a, lane("b")]);
    const t = setup(chat);
    t.on("a", failed("a", "credential", "upstream", { message: "invalid x-api-key" }));
    expect(await t.send()).toEqual(relay("relay a credential", "credential"));
    expect(t.calls).toEqual(["a"]);
    const cell = t.cell(chat, a);
    expect([cell.state, cell.cooldownRemainingMs(), cell.deadReason]).toEqual(["open", HARD_DOWN_MS, "auth: invalid x-api-key"]);
    expect(t.rec.events).toEqual(["attempt chat a", "failure chat a hard_down", "trip chat a"]);
    expect(t.counters(a).err).toBe(1);
    // Benched: the next request skips it.
    expect(await t.send()).toEqual(answer("b"));
  });

  test("a billing failure benches the lane and fails over to another member", async () => {
    const a = lane("a");
    const chat = pool("chat", [a, lane("b")]);
    const t = setup(chat);
    t.on("a", failed("a", "quota", "upstream", { message: "insufficient_quota" }));
    expect(await t.send()).toEqual(answer("b"));
    expect(t.calls).toEqual(["a", "b"]);
    const cell = t.cell(chat, a);
    expect([cell.state, cell.cooldownRemainingMs(), cell.deadReason]).toEqual(["open", HARD_DOWN_MS, "billing: insufficient_quota"]);
    expect(t.rec.events).toEqual(["attempt chat a", "failure chat a hard_down", "trip chat a", "failover chat hard_down", "attempt chat b"]);
  });

  test("a long dead reason is cut to 200 characters", async () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup(chat);
    t.on("a", failed("a", "quota", "upstream", { message: "x".repeat(500) }));
    await t.send();
    expect(t.cell(chat, a).deadReason).toHaveLength(200);
  });

  test("a rate limit counts a breaker failure with its Retry-After as the cooldown floor, and fails over", async () => {
    const a = lane("a");
    const chat = pool("chat", [a, lane("b")]);
    const t = setup(chat);
    t.on("a", failed("a", "rate_limit", "upstream", { retryAfterSecs: 20 }));
    expect(await t.send()).toEqual(answer("b"));
    const cell = t.cell(chat, a);
    expect([cell.state, cell.streak, cell.cooldownRemainingMs()]).toEqual(["closed", 1, 20_000]);
    expect(t.counters(a).err).toBe(1);
    expect(t.rec.events).toEqual(["attempt chat a", "failure chat a transient_upstream", "failover chat transient_upstream", "attempt chat b"]);
  });

  test("transient failures fail over with the reason of their cause; an unclassified error counts as transient", async () => {
    for (const [cause, failure, reason] of [
      ["timeout", "transient", "timeout"],
      ["connect", "transient", "connect"],
      ["upstream", "transient", "transient_upstream"],
      ["upstream", undefined, "transient_upstream"],
      ["timeout", "rate_limit", "timeout"],
    ] as const) {
      const a = lane("a");
      const chat = pool("chat", [a, lane("b")]);
      const t = setup(chat);
      t.on("a", failed("a", failure, cause));
      expect(await t.send()).toEqual(answer("b"));
      expect(t.rec.of("failover")).toEqual([`failover chat ${reason}`]);
      expect(t.rec.of("failure")).toEqual(["failure chat a transient_upstream"]);
      expect(t.cell(chat, a).streak).toBe(1);
    }
  });

  test("a client gone before the answer is relayed and nothing is judged", async () => {
    const a = lane("a");
    const chat = pool("chat", [a, lane("b")]);
    const t = setup(chat);
    t.on("a", failed("a", "transient", "client_gone"));
    expect(await t.send()).toEqual(relay("relay a transient", "caller"));
    expectNothingJudged(t, chat, a);
  });

  test("a failover is counted when the next hop starts, so a last member's failure counts none", async () => {
    const a = lane("a");
    const t = setup(pool("solo", [a]));
    t.on("a", failed("a", "transient"));
    expect(await t.send()).toEqual(relay("relay a transient", "transient"));
    expect(t.rec.of("failover")).toEqual([]);
  });

  test("every tried member failed: the caller gets the last failure", async () => {
    const chat = pool("chat", [lane("a"), lane("b")]);
    const t = setup(chat);
    t.on("a", failed("a", "transient"));
    t.on("b", failed("b", "rate_limit"));
    expect(await t.send()).toEqual(relay("relay b rate_limit", "rate_limit"));
    expect(t.calls).toEqual(["a", "b"]);
  });
});

describe("bounds: failover.max_hops and failover.timeout_secs", () => {
  test("at most max_hops lanes are tried", async () => {
    const names = ["a", "b", "c", "d", "e"];
    const chat = pool("chat", names.map((n) => lane(n)), { failover: { max_hops: 3, timeout_secs: 120 } });
    const t = setup(chat);
    for (const n of names) t.on(n, failed(n, "transient"));
    expect(await t.send()).toEqual(relay("relay c transient", "transient"));
    expect(t.calls).toEqual(["a", "b", "c"]);
    expect(t.rec.of("failover")).toHaveLength(2);
  });

  test("max_hops 1: no failover at all", async () => {
    const chat = pool("chat", [lane("a"), lane("b")], { failover: { max_hops: 1, timeout_secs: 120 } });
    const t = setup(chat);
    t.on("a", failed("a", "quota"));
    expect(await t.send()).toEqual(relay("relay a quota", "quota"));
    expect(t.calls).toEqual(["a"]);
  });

  test("no new hop starts after timeout_secs", async () => {
    const chat = pool("chat", ["a", "b", "c"].map((n) => lane(n)), { failover: { max_hops: 10, timeout_secs: 120 } });
    const t = setup(chat);
    const slowFailure = (n: string) => () => {
      t.clock.advance(70_000);
      return failed(n, "transient", "timeout");
    };
    for (const n of ["a", "b", "c"]) t.on(n, slowFailure(n));
    // a: 0-70 s; b starts at 70 s (< 120) and ends at 140 s; c would start past the deadline.
    expect(await t.send()).toEqual(relay("relay b transient", "transient"));
    expect(t.calls).toEqual(["a", "b"]);
  });

  test("the deadline is timeout_secs after the request began: a hop starting exactly at it is refused", async () => {
    const chat = pool("chat", [lane("a"), lane("b")], { failover: { max_hops: 10, timeout_secs: 5 } });
    const t = setup(chat);
    t.on("a", () => {
      t.clock.advance(5_000);
      return failed("a", "transient");
    });
    expect((await t.send()).kind).toBe("relay");
    expect(t.calls).toEqual(["a"]);
  });
});

describe("on_exhausted (nothing could be tried)", () => {
  test("reject: exhausted, Retry-After = seconds to the soonest member cooldown end, rounded up", async () => {
    const [a, b] = [lane("a"), lane("b")];
    const chat = pool("chat", [a, b]);
    const t = setup(chat);
    tripOpen(t, chat, a); // 15 s
    t.cell(chat, b).failure({ kind: "hard_down", reason: "auth: x" }); // 30 min
    t.clock.advance(2_500);
    expect(await t.send()).toEqual({ kind: "exhausted", retryAfterSecs: 13 });
    expect(t.calls).toEqual([]);
    expect(t.rec.events).toEqual([]);
  });

  test("status_503 is the same as reject", async () => {
    const a = lane("a");
    const chat = pool("chat", [a], { onExhausted: "status_503" });
    const t = setup(chat);
    tripOpen(t, chat, a);
    expect(await t.send()).toEqual({ kind: "exhausted", retryAfterSecs: 15 });
  });

  test("Retry-After is at least 1: under a second left, or nothing cooling (lanes at their caps)", async () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup(chat);
    t.cell(chat, a).failure({ kind: "transient" }); // 1 s short cooldown
    t.clock.advance(800);
    expect(await t.send()).toEqual({ kind: "exhausted", retryAfterSecs: 1 });
    const capped = lane("capped", { maxConcurrent: 0 });
    const u = setup(pool("full", [capped]));
    expect(await u.send()).toEqual({ kind: "exhausted", retryAfterSecs: 1 });
  });

  test("a short cooldown with a Retry-After counts toward the soonest end", async () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup(chat);
    t.cell(chat, a).failure({ kind: "transient", retryAfterSecs: 42 });
    expect(await t.send()).toEqual({ kind: "exhausted", retryAfterSecs: 42 });
  });

  test("least_bad: the member whose cooldown ends first is tried anyway, as its cell's probe", async () => {
    const [a, b, c] = [lane("a"), lane("b"), lane("c")];
    const chat = pool("chat", [a, b, c], { onExhausted: "least_bad" });
    const t = setup(chat);
    t.cell(chat, a).failure({ kind: "hard_down", reason: "billing: x" }); // 30 min
    t.clock.advance(1_000);
    tripOpen(t, chat, b); // ends at +16 s
    t.cell(chat, c).failure({ kind: "transient", retryAfterSecs: 60 }); // ends at +61 s
    expect(await t.send()).toEqual(answer("b"));
    expect(t.calls).toEqual(["b"]);
    expect(t.cell(chat, b).state).toBe("closed");
    expect(t.rec.events).toEqual(["attempt chat b"]);
  });

  test("least_bad: a failure of that member is relayed", async () => {
    const a = lane("a");
    const chat = pool("chat", [a], { onExhausted: "least_bad" });
    const t = setup(chat);
    tripOpen(t, chat, a);
    t.on("a", failed("a", "transient"));
    expect(await t.send()).toEqual(relay("relay a transient", "transient"));
    expect(t.cell(chat, a).state).toBe("open");
    expect(t.cell(chat, a).cooldownRemainingMs()).toBe(30_000); // a failed probe escalates
  });

  test("least_bad does not override the hard limits (max_concurrent, max_requests)", async () => {
    const a = lane("a", { maxRequests: 0 });
    const t = setup(pool("chat", [a], { onExhausted: "least_bad" }));
    expect(await t.send()).toEqual({ kind: "exhausted", retryAfterSecs: 1 });
    expect(t.calls).toEqual([]);
  });

  test("least_bad is for when nothing could be tried: when every member tried failed, the last failure is relayed", async () => {
    const a = lane("a");
    const t = setup(pool("chat", [a], { onExhausted: "least_bad" }));
    t.on("a", failed("a", "transient"));
    expect(await t.send()).toEqual(relay("relay a transient", "transient"));
    expect(t.calls).toEqual(["a"]);
  });

  test("fallback_pool:<name> continues in that pool when nothing could be tried", async () => {
    const a = lane("a");
    const chat = pool("chat", [a], { onExhausted: "fallback_pool:backup" });
    const backup = pool("backup", [lane("b")]);
    const t = setup(chat, backup);
    tripOpen(t, chat, a);
    expect(await t.send()).toEqual(answer("b"));
    expect(t.rec.events).toEqual(["attempt backup b"]);
  });

  test("fallback_pool: also after every member tried failed, with hops counted afresh", async () => {
    const chat = pool("chat", [lane("a")], { onExhausted: "fallback_pool:backup", failover: { max_hops: 1, timeout_secs: 120 } });
    const backup = pool("backup", [lane("b")], { failover: { max_hops: 1, timeout_secs: 120 } });
    const t = setup(chat, backup);
    t.on("a", failed("a", "transient"));
    expect(await t.send()).toEqual(answer("b"));
    expect(t.calls).toEqual(["a", "b"]);
    expect(t.rec.of("failover").map((e) => e.split(" ")[2])).toEqual(["transient_upstream"]);
  });

  test("fallback_pool: a chain is followed, and a loop is guarded; Retry-After is the soonest over every pool passed", async () => {
    const [a, b, c] = [lane("a"), lane("b"), lane("c")];
    const one = pool("one", [a], { onExhausted: "fallback_pool:two" });
    const two = pool("two", [b], { onExhausted: "fallback_pool:three" });
    const three = pool("three", [c], { onExhausted: "fallback_pool:one" });
    const t = setup(one, two, three);
    t.cell(one, a).failure({ kind: "transient", retryAfterSecs: 40 });
    t.cell(two, b).failure({ kind: "transient", retryAfterSecs: 20 });
    t.cell(three, c).failure({ kind: "transient", retryAfterSecs: 30 });
    expect(await t.send()).toEqual({ kind: "exhausted", retryAfterSecs: 20 });
    expect(t.calls).toEqual([]);
  });

  test("fallback_pool: a fallback that cannot serve either relays the last failure of the chain", async () => {
    const [a, b] = [lane("a"), lane("b")];
    const chat = pool("chat", [a], { onExhausted: "fallback_pool:backup" });
    const backup = pool("backup", [b]);
    const t = setup(chat, backup);
    tripOpen(t, backup, b);
    t.on("a", failed("a", "rate_limit"));
    expect(await t.send()).toEqual(relay("relay a rate_limit", "rate_limit"));
  });

  test("fallback_pool: an unknown pool name ends as exhausted", async () => {
    const a = lane("a");
    const chat = pool("chat", [a], { onExhausted: "fallback_pool:nowhere" });
    const t = setup(chat);
    tripOpen(t, chat, a);
    expect(await t.send()).toEqual({ kind: "exhausted", retryAfterSecs: 15 });
  });
});

describe("lane tickets", () => {
  test("a stream settles later: in flight until ok(), which counts an ok and a breaker success", async () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup(chat);
    t.cell(chat, a).failure({ kind: "transient" });
    t.clock.advance(1_000);
    t.on("a", answered("a", true));
    expect(await t.send()).toEqual(answer("a"));
    const c = t.counters(a);
    expect([c.inflight, c.ok, t.cell(chat, a).streak]).toEqual([1, 0, 1]);
    t.tickets[0]!.ok();
    expect([c.inflight, c.ok, c.err, t.cell(chat, a).streak]).toEqual([0, 1, 0, 0]);
  });

  test("broke(): err +1, a transient_upstream failure, a breaker failure that may trip", async () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup(chat);
    for (let i = 0; i < 3; i++) t.on("a", answered("a", true));
    for (let i = 0; i < 3; i++) await t.send();
    expect(t.counters(a).inflight).toBe(3);
    t.tickets[0]!.broke(upstreamError("transient"));
    t.tickets[1]!.broke(upstreamError("transient"));
    expect(t.cell(chat, a).state).toBe("closed");
    t.tickets[2]!.broke(upstreamError("transient", { retryAfterSecs: 90 }));
    expect(t.cell(chat, a).state).toBe("open");
    expect(t.cell(chat, a).cooldownRemainingMs()).toBe(90_000);
    expect([t.counters(a).inflight, t.counters(a).err, t.counters(a).ok]).toEqual([0, 3, 0]);
    expect(t.rec.events.slice(3)).toEqual(["failure chat a transient_upstream", "failure chat a transient_upstream", "failure chat a transient_upstream", "trip chat a"]);
  });

  test("released(): nothing judged, the slot is freed", async () => {
    const a = lane("a", { maxConcurrent: 1 });
    const chat = pool("chat", [a]);
    const t = setup(chat);
    t.on("a", answered("a", true));
    await t.send();
    expect(await t.send()).toEqual({ kind: "exhausted", retryAfterSecs: 1 });
    t.tickets[0]!.released();
    const c = t.counters(a);
    expect([c.inflight, c.ok, c.err, t.cell(chat, a).streak]).toEqual([0, 0, 0, 0]);
    expect(t.rec.events).toEqual(["attempt chat a"]);
    expect(await t.send()).toEqual(answer("a"));
  });

  test("a ticket settles once: in flight goes down exactly once, the first verdict stands", async () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup(chat);
    t.on("a", answered("a", true));
    await t.send();
    const ticket = t.tickets[0]!;
    ticket.ok();
    ticket.broke(upstreamError("transient"));
    ticket.released();
    ticket.ok();
    const c = t.counters(a);
    expect([c.inflight, c.ok, c.err, c.admitted]).toEqual([0, 1, 0, 1]);
  });

  test("every failed attempt's ticket is settled by the loop (nothing left in flight)", async () => {
    const names = ["a", "b", "c", "d"];
    const chat = pool("chat", names.map((n) => lane(n)), { failover: { max_hops: 4, timeout_secs: 120 } });
    const t = setup(chat);
    t.on("a", failed("a", "transient"));
    t.on("b", failed("b", "context_length"));
    t.on("c", failed("c", "quota"));
    t.on("d", failed("d", "caller"));
    await t.send();
    for (const n of names) expect(t.state.lane(n).inflight).toBe(0);
  });

  test("an attempt that rejects (first or later hop) frees its slot and the error propagates, unjudged", async () => {
    const [a, b] = [lane("a"), lane("b")];
    const t = setup(pool("chat", [a, b]));
    t.on("a", Promise.reject(new Error("boom")));
    expect(t.send()).rejects.toThrow("boom");
    await Promise.resolve();
    expect(t.counters(a).inflight).toBe(0);
    const u = setup(pool("chat", [a, b]));
    u.on("a", failed("a", "transient"));
    u.on("b", Promise.reject(new Error("later")));
    await expect(u.send()).rejects.toThrow("later");
    expect([u.counters(a).inflight, u.counters(b).inflight, u.counters(b).err]).toEqual([0, 0, 0]);
  });

  test("an attempt that throws synchronously frees its slot", async () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const state = new RoutingState(fakeClock());
    const attempt = () => {
      throw new Error("sync");
    };
    let caught: unknown;
    try {
      await route(chat, { state, counters: recorder().counters, poolNamed: () => undefined, attempt });
    } catch (error) {
      caught = error;
    }
    expect((caught as Error).message).toBe("sync");
    expect(state.lane("a").inflight).toBe(0);
  });
});

describe("half-open: a single probe under concurrent requests", () => {
  /** A pool whose first lane is Open with its cooldown over; attempts on that lane wait until settled, the others answer. */
  function openWithPending(members: Lane[]) {
    const chat = pool("chat", members);
    const t = setup(chat);
    const first = members[0]!;
    tripOpen(t, chat, first);
    t.clock.advance(15_000);
    const pending: ((r: AttemptResult<string>) => void)[] = [];
    for (let i = 0; i < 10; i++) {
      t.on(first.name, () => {
        const d = deferred<AttemptResult<string>>();
        pending.push(d.resolve);
        return d.promise;
      });
    }
    return { t, chat, pending };
  }

  test("of several requests at once only one reaches the half-open lane; the others go elsewhere", async () => {
    const [a, b] = [lane("a"), lane("b")];
    const { t, chat, pending } = openWithPending([a, b]);
    const requests = [1, 2, 3, 4, 5].map(() => t.send());
    expect(t.calls).toEqual(["a", "b", "b", "b", "b"]);
    expect(t.cell(chat, a).state).toBe("half_open");
    expect(t.cell(chat, a).available()).toBe(false);
    expect(pending).toHaveLength(1);
    pending[0]!(answered("a"));
    expect((await Promise.all(requests)).map((r) => (r.kind === "answer" ? r.value : r.kind))).toEqual(["answer a", "answer b", "answer b", "answer b", "answer b"]);
    expect(t.cell(chat, a).state).toBe("closed");
    // Closed again: several at once may all go to it.
    t.calls.length = 0;
    const more = [t.send(), t.send()];
    expect(t.calls).toEqual(["a", "a"]);
    for (const settle of pending.slice(1)) settle(answered("a"));
    await Promise.all(more);
  });

  test("a one-lane pool: the others are refused at once (Retry-After 1: a probe is in flight) while the probe is pending", async () => {
    const a = lane("a");
    const { t, pending } = openWithPending([a]);
    const probe = t.send();
    const others = await Promise.all([t.send(), t.send(), t.send()]);
    const exhausted: Routed<string> = { kind: "exhausted", retryAfterSecs: 1 };
    expect(others).toEqual([exhausted, exhausted, exhausted]);
    expect(t.calls).toEqual(["a"]);
    pending[0]!(answered("a"));
    expect(await probe).toEqual(answer("a"));
  });

  test("a failed probe re-opens the cell with an escalated cooldown; waiting requests never reached it", async () => {
    const [a, b] = [lane("a"), lane("b")];
    const { t, chat, pending } = openWithPending([a, b]);
    const requests = [t.send(), t.send(), t.send()];
    pending[0]!(failed("a", "transient"));
    expect((await Promise.all(requests)).map((r) => r.kind)).toEqual(["answer", "answer", "answer"]);
    expect(t.calls).toEqual(["a", "b", "b", "b"]); // the probe's request failed over to b
    const cell = t.cell(chat, a);
    expect([cell.state, cell.cooldownRemainingMs()]).toEqual(["open", 30_000]);
    expect(t.rec.of("trip")).toEqual(["trip chat a"]);
  });

  test("the probe's client left: the slot is free and the next request is the probe", async () => {
    const a = lane("a");
    const { t, chat, pending } = openWithPending([a]);
    const probe = t.send();
    pending[0]!(failed("a", "transient", "client_gone"));
    expect((await probe).kind).toBe("relay");
    expect(t.cell(chat, a).state).toBe("half_open");
    expect(t.cell(chat, a).available()).toBe(true);
    const next = t.send();
    expect(t.calls).toEqual(["a", "a"]);
    pending[1]!(answered("a"));
    expect(await next).toEqual(answer("a"));
    expect(t.cell(chat, a).state).toBe("closed");
  });

  test("a probe that is a stream holds the slot until the stream ends", async () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup(chat);
    tripOpen(t, chat, a);
    t.clock.advance(15_000);
    t.on("a", answered("a", true));
    expect(await t.send()).toEqual(answer("a"));
    expect(t.cell(chat, a).state).toBe("half_open");
    expect(await t.send()).toEqual({ kind: "exhausted", retryAfterSecs: 1 });
    t.tickets[0]!.ok();
    expect(t.cell(chat, a).state).toBe("closed");
    expect(await t.send()).toEqual(answer("a"));
  });

  test("a request admitted before the trip that ends without a verdict does not free the probe's slot", async () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup(chat);
    t.on("a", answered("a", true)); // a long stream, admitted while Closed
    await t.send();
    tripOpen(t, chat, a); // other requests' failures
    t.clock.advance(15_000);
    const probe = deferred<AttemptResult<string>>();
    t.on("a", () => probe.promise);
    const probing = t.send();
    expect(t.cell(chat, a).state).toBe("half_open");
    t.tickets[0]!.released(); // the old stream's client left
    expect(t.cell(chat, a).available()).toBe(false);
    expect(await t.send()).toEqual({ kind: "exhausted", retryAfterSecs: 1 });
    expect(t.calls).toEqual(["a", "a"]);
    probe.resolve(answered("a"));
    await probing;
  });

  test("several requests in flight that all fail trip the cell once, at the base cooldown", async () => {
    const a = lane("a");
    const chat = pool("chat", [a]);
    const t = setup(chat);
    const gates = [1, 2, 3, 4, 5].map(() => deferred<AttemptResult<string>>());
    for (const g of gates) t.on("a", () => g.promise);
    const requests = gates.map(() => t.send());
    expect(t.calls).toHaveLength(5);
    for (const g of gates) g.resolve(failed("a", "transient"));
    await Promise.all(requests);
    expect(t.rec.of("trip")).toEqual(["trip chat a"]);
    expect(t.cell(chat, a).cooldownRemainingMs()).toBe(15_000);
  });
});
