// Test doubles for the routing engine: a fake clock with a seeded random source (mulberry32), lanes and
// pools as plain objects, a RoutingCounters recorder, scripted attempts and deferred promises.
import type { ResolvedProvider } from "../../../src/providers/provider.ts";
import { irError, type FailureClass, type IrError } from "../../../src/ir/index.ts";
import type { AttemptResult, RoutingCounters } from "../../../src/routing/failover.ts";
import type { Lane } from "../../../src/routing/lane.ts";
import type { BreakerSettings, Pool } from "../../../src/routing/pool.ts";

/** The spec's defaults (Limits table). */
export const SETTINGS: BreakerSettings = { error_rate: 0.5, window_secs: 60, min_requests: 5, consecutive_n: 3, base_cooldown_secs: 15, max_cooldown_secs: 120 };

/** A small seeded PRNG, uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface FakeClock {
  now(): number;
  random(): number;
  advance(ms: number): void;
  /** Every later draw returns this value (undefined: back to the seeded source). */
  fix(value: number | undefined): void;
  /** The next draws, in order, before the fixed value or the seeded source. */
  script(...values: number[]): void;
  /** How many draws were made. */
  readonly draws: number;
}

/** `now` and `random` are closures: the engine passes `clock.random` around unbound. */
export function fakeClock(seed = 42, start = 1_000_000): FakeClock {
  const seeded = mulberry32(seed);
  const queue: number[] = [];
  let t = start;
  let fixed: number | undefined;
  let draws = 0;
  return {
    now: () => t,
    random: () => {
      draws += 1;
      if (queue.length > 0) return queue.shift()!;
      return fixed ?? seeded();
    },
    advance: (ms) => void (t += ms),
    fix: (value) => void (fixed = value),
    script: (...values) => void queue.push(...values),
    get draws() {
      return draws;
    },
  };
}

export const provider = (name = "p") => ({ name }) as unknown as ResolvedProvider;

export function lane(name: string, extra: Partial<Omit<Lane, "name">> = {}): Lane {
  return { name, provider: provider(), upstreamModel: `${name}-upstream`, contextWindow: null, maxConcurrent: null, maxRequests: null, ...extra };
}

export function pool(name: string, members: readonly (Lane | readonly [Lane, number])[], extra: Partial<Omit<Pool, "name" | "members">> = {}): Pool {
  return {
    name,
    members: members.map((m) => ("name" in m ? { lane: m, weight: 1 } : { lane: m[0], weight: m[1] })),
    breaker: SETTINGS,
    failover: { max_hops: 3, timeout_secs: 120 },
    onExhausted: "reject",
    hooks: [],
    implicit: false,
    ...extra,
  };
}

/** RoutingCounters that write one line per call. */
export function recorder() {
  const events: string[] = [];
  const counters: RoutingCounters = {
    attempt: (pool, lane) => void events.push(`attempt ${pool} ${lane}`),
    failure: (pool, lane, disposition) => void events.push(`failure ${pool} ${lane} ${disposition}`),
    trip: (pool, lane) => void events.push(`trip ${pool} ${lane}`),
    failover: (pool, reason) => void events.push(`failover ${pool} ${reason}`),
  };
  return { events, counters, of: (kind: string) => events.filter((e) => e.startsWith(`${kind} `)) };
}

export type Cause = "timeout" | "connect" | "upstream" | "client_gone";

export function upstreamError(failure: FailureClass | undefined, extra: Partial<IrError> = {}): IrError {
  return irError("api_error", `upstream said ${failure ?? "nothing"}`, { failure, ...extra });
}

/** A failed attempt on `laneName` whose relay value names the lane and the failure. */
export function failed(laneName: string, failure: FailureClass | undefined, cause: Cause = "upstream", extra: Partial<IrError> = {}): AttemptResult<string> {
  return { ok: false, error: upstreamError(failure, extra), cause, relay: () => `relay ${laneName} ${failure ?? "-"}` };
}

export const answered = (laneName: string, settlesLater = false): AttemptResult<string> => ({ ok: true, value: `answer ${laneName}`, settlesLater });

export function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ([resolve, reject] = [res, rej]));
  return { promise, resolve, reject };
}
