// The attempt loop: one request tried on a pool's lanes in weighted order until one answers, bounded by
// max_hops and timeout_secs, with each failure classified (architecture.md, "Failure classes decide
// failover"). It knows nothing of HTTP: an attempt is a callback that returns an answer or a
// classified failure plus how to relay it. Failover happens only before the answer's first byte; a
// stream that breaks later settles its ticket as broken (counted, never retried).
import type { FailureClass, IrError } from "../ir/index.ts";
import type { Breaker } from "./breaker.ts";
import type { Lane } from "./lane.ts";
import { weightedOrder, type Pool } from "./pool.ts";
import type { RoutingState } from "./state.ts";

/** Why a request moved to another lane (gateway_failovers_total `reason`). */
export type FailoverReason = "timeout" | "connect" | "transient_upstream" | "hard_down";
/** What a failure did to its lane (gateway_upstream_failures_total `disposition`). */
export type Disposition = "transient_upstream" | "hard_down" | "context_length";

export interface RoutingCounters {
  attempt(pool: string, lane: string): void;
  failure(pool: string, lane: string, disposition: Disposition): void;
  trip(pool: string, lane: string): void;
  failover(pool: string, reason: FailoverReason): void;
}

/** How an attempt's answer ends, told once: whole, broken after its first byte, or abandoned by the client. */
export interface LaneTicket {
  ok(): void;
  broke(error: IrError): void;
  released(): void;
}

export type AttemptResult<R> =
  /** `settlesLater`: a stream, which settles the ticket itself when it ends. */
  | { readonly ok: true; readonly value: R; readonly settlesLater?: boolean }
  /** `cause` tells a connect error and a timeout (no HTTP answer) from an upstream's error answer. */
  | { readonly ok: false; readonly error: IrError; readonly cause: "timeout" | "connect" | "upstream" | "client_gone"; relay(): R };

export type Attempt<R> = (lane: Lane, ticket: LaneTicket) => Promise<AttemptResult<R>>;

export type Routed<R> =
  | { readonly kind: "answer"; readonly value: R }
  /** An upstream failure given to the caller: a caller fault, a credential fault, or no lane left. */
  | { readonly kind: "relay"; readonly value: R; readonly failure: FailureClass }
  /** No member could be tried; retry after the soonest cooldown. */
  | { readonly kind: "exhausted"; readonly retryAfterSecs: number };

export interface RouteOptions<R> {
  readonly state: RoutingState;
  readonly counters: RoutingCounters;
  /** The pool by name (for `fallback_pool:`). */
  readonly poolNamed: (name: string) => Pool | undefined;
  readonly attempt: Attempt<R>;
}

const HARD_DOWN: ReadonlySet<FailureClass> = new Set(["credential", "quota"]);

/** Routes through a pool (and its fallback pools); a direct route passes a one-lane pool and the lane-default cell. */
export async function route<R>(first: Pool, options: RouteOptions<R>, cellName?: string): Promise<Routed<R>> {
  const { state, counters } = options;
  const clock = state.clock;
  const visited = new Set<string>();
  let pool: Pool | undefined = first;
  let lastFailure: Extract<Routed<R>, { kind: "relay" }> | undefined;
  while (pool && !visited.has(pool.name)) {
    visited.add(pool.name);
    const cell = cellName ?? pool.name;
    const deadline = clock.now() + pool.failover.timeout_secs * 1000;
    let hops = 0;
    let pendingFailover: FailoverReason | undefined;
    /** After a context-length overflow, only lanes with a larger window are worth a try. */
    let minWindow = -1;
    const tried = new Set<string>();

    const tryLane = async (lane: Lane, breaker: Breaker): Promise<Routed<R> | "next"> => {
      hops += 1;
      tried.add(lane.name);
      if (pendingFailover) counters.failover(pool!.name, pendingFailover);
      pendingFailover = undefined;
      counters.attempt(pool!.name, lane.name);
      const laneCounters = state.lane(lane.name);
      laneCounters.inflight += 1;
      laneCounters.admitted += 1;
      const ticket = ticketFor(lane, breaker, pool!.name, options);
      let result: AttemptResult<R>;
      try {
        result = await options.attempt(lane, ticket);
      } catch (error) {
        ticket.released();
        throw error;
      }
      if (result.ok) {
        if (!result.settlesLater) ticket.ok();
        return { kind: "answer", value: result.value };
      }
      ticket.released();
      // The client left before an answer: nobody to fail over for, and nothing learned about the lane.
      if (result.cause === "client_gone") return { kind: "relay", value: result.relay(), failure: "caller" };
      const failure = result.error.failure ?? "transient";
      if (failure === "caller") {
        // The upstream answered, and it was the request's fault: the lane is fine.
        breaker.success();
        return { kind: "relay", value: result.relay(), failure };
      }
      if (failure === "context_length") {
        // The lane answered; the request was too long for it. No fault, but a probe has settled.
        breaker.success();
        counters.failure(pool!.name, lane.name, "context_length");
        minWindow = Math.max(minWindow, lane.contextWindow ?? 0);
        lastFailure = { kind: "relay", value: result.relay(), failure };
        return "next";
      }
      laneCounters.err += 1;
      const hardDown = HARD_DOWN.has(failure);
      counters.failure(pool!.name, lane.name, hardDown ? "hard_down" : "transient_upstream");
      const tripped = breaker.failure(hardDown ? { kind: "hard_down", reason: `${failure === "credential" ? "auth" : "billing"}: ${result.error.message}`.slice(0, 200) } : { kind: "transient", retryAfterSecs: result.error.retryAfterSecs });
      if (tripped) counters.trip(pool!.name, lane.name);
      lastFailure = { kind: "relay", value: result.relay(), failure };
      // A credential fault is the operator's to fix: the caller hears it rather than a lane it did not pick.
      if (failure === "credential") return lastFailure;
      pendingFailover = hardDown ? "hard_down" : result.cause === "timeout" || result.cause === "connect" ? result.cause : "transient_upstream";
      return "next";
    };

    for (const member of weightedOrder(pool.members, clock.random)) {
      if (hops >= pool.failover.max_hops || clock.now() >= deadline) break;
      const { lane } = member;
      if (minWindow >= 0 && (lane.contextWindow ?? 0) <= minWindow) continue;
      if (!state.lane(lane.name).hasRoom(lane)) continue;
      const breaker = state.cell(cell, lane.name, pool.breaker);
      if (!breaker.admit()) continue;
      const outcome = await tryLane(lane, breaker);
      if (outcome !== "next") return outcome;
    }
    if (hops > 0 || minWindow >= 0) {
      // Every lane tried failed (or none was larger): a fallback pool may still serve; else the caller hears why.
      const fallback = fallbackOf(pool);
      if (fallback) {
        pool = options.poolNamed(fallback);
        continue;
      }
      return lastFailure!;
    }
    // Nothing could be tried at all: the pool is exhausted.
    if (pool.onExhausted === "least_bad") {
      const least = leastBad(pool, cell, state);
      if (least) {
        least.breaker.force();
        const outcome = await tryLane(least.lane, least.breaker);
        return outcome === "next" ? lastFailure! : outcome;
      }
    }
    const fallback = fallbackOf(pool);
    if (fallback) {
      pool = options.poolNamed(fallback);
      continue;
    }
    return { kind: "exhausted", retryAfterSecs: soonestRetrySecs(pool, cell, state) };
  }
  return lastFailure ?? { kind: "exhausted", retryAfterSecs: 1 };
}

function fallbackOf(pool: Pool): string | undefined {
  return pool.onExhausted.startsWith("fallback_pool:") ? pool.onExhausted.slice("fallback_pool:".length) : undefined;
}

/** The member whose cooldown ends first (concurrency and budget still apply: they are hard limits). */
function leastBad(pool: Pool, cell: string, state: RoutingState): { lane: Lane; breaker: Breaker } | undefined {
  let best: { lane: Lane; breaker: Breaker } | undefined;
  for (const { lane } of pool.members) {
    if (!state.lane(lane.name).hasRoom(lane)) continue;
    const breaker = state.cell(cell, lane.name, pool.breaker);
    if (!best || breaker.cooldownUntil < best.breaker.cooldownUntil) best = { lane, breaker };
  }
  return best;
}

/** Seconds until the soonest member cooldown ends, at least 1 (a cap or a probe in flight clears soon too). */
function soonestRetrySecs(pool: Pool, cell: string, state: RoutingState): number {
  let soonest = Infinity;
  for (const { lane } of pool.members) {
    const remaining = state.cell(cell, lane.name, pool.breaker).cooldownRemainingMs();
    if (remaining > 0) soonest = Math.min(soonest, remaining);
  }
  return soonest === Infinity ? 1 : Math.max(1, Math.ceil(soonest / 1000));
}

/** Settles an attempt once: the lane's slot is freed, and its breaker and ok/err counters told how it went. */
function ticketFor<R>(lane: Lane, breaker: Breaker, pool: string, options: RouteOptions<R>): LaneTicket {
  const counters = options.state.lane(lane.name);
  let settled = false;
  const settle = () => {
    if (settled) return false;
    settled = true;
    counters.inflight -= 1;
    return true;
  };
  return {
    ok() {
      if (!settle()) return;
      counters.ok += 1;
      breaker.success();
    },
    broke(error) {
      if (!settle()) return;
      counters.err += 1;
      options.counters.failure(pool, lane.name, "transient_upstream");
      if (breaker.failure({ kind: "transient", retryAfterSecs: error.retryAfterSecs })) options.counters.trip(pool, lane.name);
    },
    released() {
      if (settle()) breaker.abandon();
    },
  };
}
