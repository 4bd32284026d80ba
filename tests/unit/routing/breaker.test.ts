// The breaker of one (pool, lane) cell against the spec's state table "Circuit breaker (per pool and
// lane)" and the Limits rows for breaker, cooldown and hard-down, on a fake clock and a seeded random.
import { describe, expect, test } from "bun:test";
import { Breaker, HARD_DOWN_MS } from "../../../src/routing/breaker.ts";
import type { BreakerSettings } from "../../../src/routing/pool.ts";
import { fakeClock, SETTINGS } from "./fakes.ts";

const FAIL = { kind: "transient" } as const;

/** A breaker whose jitter factor is exactly 1 (random 0.5) unless the test says otherwise. */
function setup(settings: Partial<BreakerSettings> = {}, seed = 7) {
  const clock = fakeClock(seed);
  clock.fix(0.5);
  const breaker = new Breaker({ ...SETTINGS, ...settings }, clock);
  return { clock, breaker, remaining: () => breaker.cooldownRemainingMs() };
}

/** Fails the cell consecutive_n times, waiting out each short cooldown, so it trips Open. */
function trip(t: ReturnType<typeof setup>, n = SETTINGS.consecutive_n): boolean[] {
  const tripped: boolean[] = [];
  for (let i = 0; i < n; i++) {
    t.clock.advance(t.remaining());
    tripped.push(t.breaker.failure(FAIL));
  }
  return tripped;
}

/** Waits out the Open cooldown and admits the one probe. */
function halfOpen(t: ReturnType<typeof setup>): void {
  t.clock.advance(t.remaining());
  expect(t.breaker.admit()).toBe(true);
  expect(t.breaker.state).toBe("half_open");
}

describe("a fresh cell", () => {
  test("is Closed, available and admits any number of requests", () => {
    const { breaker } = setup();
    expect([breaker.state, breaker.streak, breaker.cooldownUntil, breaker.deadReason]).toEqual(["closed", 0, 0, undefined]);
    for (let i = 0; i < 10; i++) expect(breaker.admit()).toBe(true);
    expect(breaker.available()).toBe(true);
    expect(breaker.state).toBe("closed");
  });
});

describe("Closed --upstream failure, trip condition met--> Open (lane skipped during selection)", () => {
  test("consecutive_n failures in a row trip; only the tripping failure reports a trip", () => {
    const t = setup();
    expect(trip(t)).toEqual([false, false, true]);
    expect(t.breaker.state).toBe("open");
    expect(t.breaker.streak).toBe(3);
    expect(t.remaining()).toBeCloseTo(15_000, 6);
    expect(t.breaker.available()).toBe(false);
    expect(t.breaker.admit()).toBe(false);
    expect(t.breaker.state).toBe("open");
  });

  test("consecutive_n is a setting", () => {
    const t = setup({ consecutive_n: 5, min_requests: 1000 });
    expect(trip(t, 5)).toEqual([false, false, false, false, true]);
  });

  test("a success clears the streak, so failures around it do not add up", () => {
    const t = setup({ min_requests: 1000 });
    trip(t, 2);
    t.breaker.success();
    expect(t.breaker.streak).toBe(0);
    expect(trip(t, 2)).toEqual([false, false]);
    expect(t.breaker.state).toBe("closed");
  });

  test("error_rate: trips once the failed share of the window's outcomes reaches the rate", () => {
    const t = setup({ consecutive_n: 100 });
    // ok, fail, ok, fail: 4 outcomes < min_requests (5), no trip whatever the share.
    t.breaker.success();
    expect(t.breaker.failure(FAIL)).toBe(false);
    t.breaker.success();
    expect(t.breaker.failure(FAIL)).toBe(false);
    // 5th outcome: 3 failed of 5 = 0.6 >= 0.5.
    t.clock.advance(t.remaining());
    expect(t.breaker.failure(FAIL)).toBe(true);
    expect(t.breaker.state).toBe("open");
  });

  test("error_rate: a share exactly at the threshold trips, one below does not", () => {
    const t = setup({ consecutive_n: 100 });
    for (let i = 0; i < 3; i++) t.breaker.success();
    expect(trip(t, 2)).toEqual([false, false]); // 2 of 5 = 0.4
    expect(trip(t, 1)).toEqual([true]); // 3 of 6 = 0.5
  });

  test("error_rate: never before min_requests outcomes, even when all of them failed", () => {
    const t = setup({ consecutive_n: 100, min_requests: 5 });
    expect(trip(t, 4)).toEqual([false, false, false, false]);
    expect(t.breaker.state).toBe("closed");
    expect(trip(t, 1)).toEqual([true]);
  });

  test("error_rate: outcomes older than window_secs no longer count", () => {
    // 6 successes, then fail fail ok fail fail: within the window that is 4 of 11 (no trip) ...
    const within = setup({ consecutive_n: 100 });
    for (let i = 0; i < 6; i++) within.breaker.success();
    within.clock.advance(50_000); // + 6 s of short cooldowns: inside window_secs less one bucket (60 s / 20)
    const script = (t: ReturnType<typeof setup>) => {
      const tripped = [...trip(t, 2)];
      t.breaker.success();
      return [...tripped, ...trip(t, 2)];
    };
    expect(script(within)).toEqual([false, false, false, false]);
    // ... but once the successes have left the window it is 4 of 5.
    const after = setup({ consecutive_n: 100 });
    for (let i = 0; i < 6; i++) after.breaker.success();
    after.clock.advance(63_000); // window_secs plus one bucket: gone
    expect(script(after)).toEqual([false, false, false, true]);
  });

  test("a changed window_secs starts the window afresh; the same settings object keeps it", () => {
    const t = setup({ consecutive_n: 100 });
    for (let i = 0; i < 4; i++) t.breaker.success();
    t.breaker.reconfigure({ ...SETTINGS, consecutive_n: 100, window_secs: 30 });
    expect(trip(t, 4)).toEqual([false, false, false, false]); // 4 failures alone: < min_requests
    expect(trip(t, 1)).toEqual([true]);
  });

  test("a config swap keeps the cell's state", () => {
    const t = setup();
    trip(t);
    t.breaker.reconfigure({ ...SETTINGS, base_cooldown_secs: 1 });
    expect(t.breaker.state).toBe("open");
    expect(t.remaining()).toBeCloseTo(15_000, 6);
  });

  test("Retry-After is a floor on the Open cooldown, even above max_cooldown_secs", () => {
    const t = setup();
    trip(t, 2);
    t.clock.advance(t.remaining());
    expect(t.breaker.failure({ kind: "transient", retryAfterSecs: 500 })).toBe(true);
    expect(t.remaining()).toBe(500_000);
  });

  test("a Retry-After below the cooldown changes nothing", () => {
    const t = setup();
    trip(t, 2);
    t.clock.advance(t.remaining());
    t.breaker.failure({ kind: "transient", retryAfterSecs: 3 });
    expect(t.remaining()).toBeCloseTo(15_000, 6);
  });

  test("failures of requests still in flight when the cell tripped neither trip it again nor escalate", () => {
    // Five requests admitted while Closed all fail at once: one trip, the base cooldown.
    const t = setup();
    const tripped = [1, 2, 3, 4, 5].map(() => t.breaker.failure(FAIL));
    expect(tripped).toEqual([false, false, true, false, false]);
    expect(t.breaker.state).toBe("open");
    expect(t.remaining()).toBeCloseTo(15_000, 6);
    // The next trip (a failed probe) is the first escalation.
    halfOpen(t);
    t.breaker.failure(FAIL);
    expect(t.remaining()).toBeCloseTo(30_000, 6);
  });

  test("a late failure while Open still honours its Retry-After as a floor", () => {
    const t = setup();
    trip(t);
    t.breaker.failure({ kind: "transient", retryAfterSecs: 40 });
    expect(t.breaker.state).toBe("open");
    expect(t.remaining()).toBe(40_000);
  });
});

describe("Closed --single upstream failure, trip not met--> Closed (short cooldown armed; lane briefly skipped)", () => {
  test("the cell stays Closed and refuses selection until the short cooldown ends", () => {
    const t = setup();
    expect(t.breaker.failure(FAIL)).toBe(false);
    expect(t.breaker.state).toBe("closed");
    expect(t.breaker.streak).toBe(1);
    expect(t.remaining()).toBeCloseTo(1_000, 6);
    expect(t.breaker.available()).toBe(false);
    expect(t.breaker.admit()).toBe(false);
    t.clock.advance(999);
    expect(t.breaker.admit()).toBe(false);
    t.clock.advance(1);
    expect(t.breaker.available()).toBe(true);
    expect(t.breaker.admit()).toBe(true);
    expect(t.breaker.state).toBe("closed");
  });

  test("the short cooldown is 1 s doubled per failure in the streak, capped at base_cooldown_secs", () => {
    const t = setup({ consecutive_n: 100, min_requests: 1000, base_cooldown_secs: 15 });
    const cooldowns: number[] = [];
    for (let i = 0; i < 7; i++) {
      t.clock.advance(t.remaining());
      t.breaker.failure(FAIL);
      cooldowns.push(Math.round(t.remaining()));
    }
    expect(cooldowns).toEqual([1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000]);
    expect(t.breaker.state).toBe("closed");
  });

  test("a success ends the short cooldown and the next failure starts again at 1 s", () => {
    const t = setup({ consecutive_n: 100, min_requests: 1000 });
    trip(t, 3);
    expect(Math.round(t.remaining())).toBe(4_000);
    t.breaker.success();
    expect(t.remaining()).toBe(0);
    t.breaker.failure(FAIL);
    expect(Math.round(t.remaining())).toBe(1_000);
  });

  test("jitter: the short cooldown stays within +/-10% and uses both sides of it", () => {
    const clock = fakeClock(2024);
    const factors: number[] = [];
    for (let streak = 1; streak <= 6; streak++) {
      for (let i = 0; i < 300; i++) {
        const breaker = new Breaker({ ...SETTINGS, consecutive_n: 100, min_requests: 1000 }, clock);
        for (let k = 0; k < streak; k++) breaker.failure(FAIL);
        factors.push(breaker.cooldownRemainingMs() / Math.min(1000 * 2 ** (streak - 1), 15_000));
      }
    }
    expect(Math.min(...factors)).toBeGreaterThanOrEqual(0.9);
    expect(Math.max(...factors)).toBeLessThanOrEqual(1.1);
    expect(Math.min(...factors)).toBeLessThan(0.91);
    expect(Math.max(...factors)).toBeGreaterThan(1.09);
  });

  test("jitter bounds at the extremes of the random source", () => {
    const low = setup();
    low.clock.fix(0);
    low.breaker.failure(FAIL);
    expect(low.remaining()).toBeCloseTo(900, 6);
    const high = setup();
    high.clock.fix(0.999_999);
    high.breaker.failure(FAIL);
    expect(high.remaining()).toBeLessThan(1_100);
    expect(high.remaining()).toBeGreaterThan(1_099.99);
  });

  test("Retry-After is a floor on the short cooldown, even above base_cooldown_secs", () => {
    const t = setup({ base_cooldown_secs: 15 });
    t.breaker.failure({ kind: "transient", retryAfterSecs: 60 });
    expect(t.breaker.state).toBe("closed");
    expect(t.remaining()).toBe(60_000);
  });

  test("a Retry-After below the short cooldown changes nothing; a fractional one is honoured", () => {
    const t = setup();
    t.breaker.failure({ kind: "transient", retryAfterSecs: 0.5 });
    expect(t.remaining()).toBeCloseTo(1_000, 6);
    const u = setup();
    u.breaker.failure({ kind: "transient", retryAfterSecs: 2.5 });
    expect(u.remaining()).toBe(2_500);
  });

  test("a short cooldown never shortens one already armed", () => {
    const t = setup();
    t.breaker.failure({ kind: "transient", retryAfterSecs: 30 });
    t.breaker.failure(FAIL); // 2 s, less than the 30 s still to go
    expect(t.remaining()).toBe(30_000);
  });
});

describe("Closed --hard-down fault (billing/quota or auth)--> Open (30 minutes, sticky, not permanent)", () => {
  test("always opens for exactly 30 minutes with the reason, whatever the trip settings and the jitter", () => {
    for (const r of [0, 0.5, 0.999]) {
      const t = setup({ consecutive_n: 100, min_requests: 1000 });
      t.clock.fix(r);
      expect(t.breaker.failure({ kind: "hard_down", reason: "auth: invalid key" })).toBe(true);
      expect(t.breaker.state).toBe("open");
      expect(t.remaining()).toBe(HARD_DOWN_MS);
      expect(HARD_DOWN_MS).toBe(30 * 60 * 1000);
      expect(t.breaker.deadReason).toBe("auth: invalid key");
    }
  });

  test("the lane is skipped for the 30 minutes, then half-opens like any other cell", () => {
    const t = setup();
    t.breaker.failure({ kind: "hard_down", reason: "billing: insufficient_quota" });
    t.clock.advance(HARD_DOWN_MS - 1);
    expect(t.breaker.available()).toBe(false);
    expect(t.breaker.admit()).toBe(false);
    t.clock.advance(1);
    expect(t.breaker.admit()).toBe(true);
    expect(t.breaker.state).toBe("half_open");
    t.breaker.success();
    expect([t.breaker.state, t.breaker.deadReason]).toEqual(["closed", undefined]);
  });

  test("a hard-down fault during a probe re-opens for 30 minutes", () => {
    const t = setup();
    trip(t);
    halfOpen(t);
    expect(t.breaker.failure({ kind: "hard_down", reason: "auth: revoked" })).toBe(true);
    expect([t.breaker.state, t.remaining(), t.breaker.deadReason]).toEqual(["open", HARD_DOWN_MS, "auth: revoked"]);
    expect(t.breaker.available()).toBe(false);
  });

  test("a later transient trip replaces the dead reason", () => {
    const t = setup();
    t.breaker.failure({ kind: "hard_down", reason: "auth: invalid key" });
    t.clock.advance(HARD_DOWN_MS);
    t.breaker.admit();
    t.breaker.failure(FAIL);
    expect(t.breaker.state).toBe("open");
    expect(t.breaker.deadReason).toBeUndefined();
  });
});

describe("Open --cooldown expires and next selection attempt--> HalfOpen (exactly one probe)", () => {
  test("available() tells but changes nothing; admit() half-opens and takes the one probe slot", () => {
    const t = setup();
    trip(t);
    t.clock.advance(t.remaining() - 1);
    expect(t.breaker.available()).toBe(false);
    expect(t.breaker.admit()).toBe(false);
    t.clock.advance(1);
    expect(t.breaker.available()).toBe(true);
    expect(t.breaker.state).toBe("open");
    expect(t.breaker.admit()).toBe(true);
    expect(t.breaker.state).toBe("half_open");
    // Single flight: everyone else is refused until the probe settles, however long it takes.
    for (let i = 0; i < 5; i++) {
      t.clock.advance(60_000);
      expect(t.breaker.available()).toBe(false);
      expect(t.breaker.admit()).toBe(false);
    }
    expect(t.breaker.state).toBe("half_open");
  });

  test("a probe whose client left frees the slot: the next caller is the probe", () => {
    const t = setup();
    trip(t);
    halfOpen(t);
    t.breaker.abandon();
    expect(t.breaker.state).toBe("half_open");
    expect(t.breaker.available()).toBe(true);
    expect(t.breaker.admit()).toBe(true);
    expect(t.breaker.admit()).toBe(false);
  });

  test("force() (least_bad) sends a request to a cooling Open cell as its probe; a Closed cell stays Closed", () => {
    const t = setup();
    trip(t);
    t.breaker.force();
    expect(t.breaker.state).toBe("half_open");
    expect(t.breaker.admit()).toBe(false);
    t.breaker.success();
    expect(t.breaker.state).toBe("closed");
    const c = setup();
    c.breaker.failure(FAIL);
    c.breaker.force();
    expect(c.breaker.state).toBe("closed");
  });
});

describe("HalfOpen --probe succeeds--> Closed (streak and error window cleared)", () => {
  test("closes with streak, cooldown and probe slot cleared", () => {
    const t = setup();
    trip(t);
    halfOpen(t);
    t.breaker.success();
    expect([t.breaker.state, t.breaker.streak, t.remaining()]).toEqual(["closed", 0, 0]);
    expect(t.breaker.available()).toBe(true);
    expect(t.breaker.admit()).toBe(true);
    expect(t.breaker.admit()).toBe(true);
  });

  test("the error window is cleared: the failures that tripped it no longer count", () => {
    const t = setup({ consecutive_n: 100 });
    expect(trip(t, 5)).toEqual([false, false, false, false, true]); // error_rate trip
    halfOpen(t);
    t.breaker.success();
    // Four failures alone are below min_requests: nothing from before the close is left in the window.
    expect(trip(t, 4)).toEqual([false, false, false, false]);
    expect(t.breaker.state).toBe("closed");
  });

  test("escalation is cleared: the next trip starts again at base_cooldown_secs", () => {
    const t = setup();
    trip(t);
    halfOpen(t);
    t.breaker.failure(FAIL); // 30 s
    halfOpen(t);
    t.breaker.success();
    trip(t);
    expect(t.remaining()).toBeCloseTo(15_000, 6);
  });
});

describe("HalfOpen --probe fails--> Open (escalated cooldown)", () => {
  test("one failed probe re-opens, whatever the trip settings", () => {
    const t = setup({ consecutive_n: 100 });
    trip(t, 5);
    halfOpen(t);
    expect(t.breaker.failure(FAIL)).toBe(true);
    expect(t.breaker.state).toBe("open");
    expect(t.breaker.available()).toBe(false);
  });

  test("the Open cooldown doubles from base_cooldown_secs per trip, up to max_cooldown_secs", () => {
    const t = setup({ base_cooldown_secs: 15, max_cooldown_secs: 120 });
    trip(t);
    const cooldowns = [Math.round(t.remaining())];
    for (let i = 0; i < 5; i++) {
      halfOpen(t);
      t.breaker.failure(FAIL);
      cooldowns.push(Math.round(t.remaining()));
    }
    expect(cooldowns).toEqual([15_000, 30_000, 60_000, 120_000, 120_000, 120_000]);
  });

  test("the cap need not be a power-of-two multiple of the base", () => {
    const t = setup({ base_cooldown_secs: 10, max_cooldown_secs: 25 });
    trip(t);
    const cooldowns = [Math.round(t.remaining())];
    for (let i = 0; i < 2; i++) {
      halfOpen(t);
      t.breaker.failure(FAIL);
      cooldowns.push(Math.round(t.remaining()));
    }
    expect(cooldowns).toEqual([10_000, 20_000, 25_000]);
  });

  test("jitter: every Open cooldown stays within +/-10% of its step and uses both sides", () => {
    const clock = fakeClock(99);
    const factors: number[] = [];
    for (let i = 0; i < 400; i++) {
      const breaker = new Breaker(SETTINGS, clock);
      for (const step of [15_000, 30_000, 60_000, 120_000, 120_000]) {
        if (breaker.state === "closed") while (breaker.state === "closed") breaker.failure(FAIL);
        else {
          clock.advance(breaker.cooldownRemainingMs());
          breaker.admit();
          breaker.failure(FAIL);
        }
        factors.push(breaker.cooldownRemainingMs() / step);
      }
    }
    expect(Math.min(...factors)).toBeGreaterThanOrEqual(0.9);
    expect(Math.max(...factors)).toBeLessThanOrEqual(1.1);
    expect(Math.min(...factors)).toBeLessThan(0.905);
    expect(Math.max(...factors)).toBeGreaterThan(1.095);
    const mean = factors.reduce((a, b) => a + b, 0) / factors.length;
    expect(Math.abs(mean - 1)).toBeLessThan(0.01);
  });

  test("Retry-After is a floor on the escalated cooldown, even above max_cooldown_secs", () => {
    const t = setup();
    trip(t);
    halfOpen(t);
    t.breaker.failure({ kind: "transient", retryAfterSecs: 300 });
    expect(t.remaining()).toBe(300_000);
  });

  test("a failed probe frees the probe slot for the next half-open", () => {
    const t = setup();
    trip(t);
    halfOpen(t);
    t.breaker.failure(FAIL);
    halfOpen(t);
    expect(t.breaker.admit()).toBe(false);
  });
});

describe("Open or Closed --successful active health probe--> Closed", () => {
  test("close() from Open clears state, cooldown, streak, dead reason and escalation", () => {
    const t = setup();
    t.breaker.failure({ kind: "hard_down", reason: "auth: invalid key" });
    t.breaker.close();
    expect([t.breaker.state, t.breaker.streak, t.remaining(), t.breaker.deadReason]).toEqual(["closed", 0, 0, undefined]);
    expect(t.breaker.admit()).toBe(true);
    trip(t);
    expect(t.remaining()).toBeCloseTo(15_000, 6);
  });

  test("close() from an escalated Open: the next trip is back at the base cooldown", () => {
    const t = setup();
    trip(t);
    halfOpen(t);
    t.breaker.failure(FAIL);
    expect(t.remaining()).toBeCloseTo(30_000, 6);
    t.breaker.close();
    trip(t);
    expect(t.remaining()).toBeCloseTo(15_000, 6);
  });

  test("close() from Closed with a short cooldown ends it and clears the streak and window", () => {
    const t = setup({ consecutive_n: 100 });
    trip(t, 4);
    expect(t.remaining()).toBeGreaterThan(0);
    t.breaker.close();
    expect([t.breaker.state, t.breaker.streak, t.remaining()]).toEqual(["closed", 0, 0]);
    expect(trip(t, 4)).toEqual([false, false, false, false]);
  });

  test("close() from HalfOpen frees the probe slot", () => {
    const t = setup();
    trip(t);
    halfOpen(t);
    t.breaker.close();
    expect(t.breaker.admit()).toBe(true);
    expect(t.breaker.admit()).toBe(true);
  });
});
