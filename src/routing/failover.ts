// The attempt loop: one request tried on a pool's lanes in weighted order until one answers, bounded by
// max_hops and timeout_secs, with each failure classified (architecture.md, "Failure classes decide
// failover"). It knows nothing of HTTP: an attempt is a callback that returns an answer or a
// classified failure plus how to relay it. Failover happens only before the answer's first byte; a
// stream that breaks later settles its ticket as broken (counted, never retried).
import type { FailureClass, IrError } from "../ir/index.ts";
import type { Breaker, BreakerFault } from "./breaker.ts";
import type { Lane } from "./lane.ts";
import { weightedOrder, type Pool, type PoolMember } from "./pool.ts";
import type { LaneCounters, RoutingState } from "./state.ts";

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
  /** When the request's `failover.timeout_secs` runs out (routing clock, ms): reading a whole answer stops there. */
  readonly deadline?: number;
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
  /** The first pool's members in the order a routing policy (a gate hook) chose; unnamed members are not tried. */
  readonly order?: readonly PoolMember[];
}

const HARD_DOWN: ReadonlySet<FailureClass> = new Set(["credential", "quota"]);

/** Routes through a pool (and its fallback pools); a direct route passes a one-lane pool named after the lane-default cell. */
export function route<R>(first: Pool, options: RouteOptions<R>): Promise<Routed<R>> {
  const run = new RouteRun(first, options);
  // The first attempt goes out without an async frame of its own: most requests need no other, and
  // each async level costs a resumption when the upstream answers (docs/performance.md).
  const candidate = run.next();
  if (!candidate) return run.rest();
  const ticket = run.begin(candidate);
  let attempt: Promise<AttemptResult<R>>;
  try {
    attempt = options.attempt(candidate.lane, ticket);
  } catch (error) {
    ticket.released();
    throw error;
  }
  return attempt.then(
    (result) => run.judge(candidate, ticket, result) ?? run.rest(),
    (error: unknown) => {
      ticket.released();
      throw error;
    },
  );
}

interface Candidate {
  readonly lane: Lane;
  readonly counters: LaneCounters;
  readonly breaker: Breaker;
  /** Whether this request is its half-open cell's one probe (only the probe's end frees the probe slot). */
  readonly probe: boolean;
}

/** One request's way through its pool and any fallback pools. */
class RouteRun<R> {
  private lastFailure: Extract<Routed<R>, { kind: "relay" }> | undefined;
  private hops = 0;
  private pendingFailover: FailoverReason | undefined;
  /** After a context-length overflow, only lanes with a larger window are worth a try. */
  private minWindow = -1;
  private visited: Set<string> | undefined;
  /** The soonest cooldown end among the pools passed through, for an exhausted answer's Retry-After. */
  private soonestMs = Infinity;
  private order: readonly PoolMember[];
  private index = 0;
  private deadline: number;

  constructor(
    private pool: Pool,
    private readonly options: RouteOptions<R>,
  ) {
    const clock = options.state.clock;
    this.order = options.order ?? weightedOrder(pool.members, clock.random);
    this.deadline = clock.now() + pool.failover.timeout_secs * 1000;
  }

  /** The next member of the current pool that may take the request now, in weighted order. */
  next(): Candidate | undefined {
    const { pool, options } = this;
    const { state } = options;
    while (this.index < this.order.length) {
      const lane = this.order[this.index++]!.lane;
      if (this.hops >= pool.failover.max_hops || state.clock.now() >= this.deadline) return undefined;
      if (this.minWindow >= 0 && (lane.contextWindow ?? 0) <= this.minWindow) continue;
      const counters = state.lane(lane.name);
      if (!counters.hasRoom(lane)) continue;
      const breaker = state.cell(pool.name, lane.name, pool.breaker);
      if (breaker.admit()) return { lane, counters, breaker, probe: breaker.state === "half_open" };
    }
    return undefined;
  }

  /** Everything after the first attempt: further members, exhaustion, fallback pools. */
  async rest(): Promise<Routed<R>> {
    const { options } = this;
    const { state } = options;
    for (;;) {
      const pool = this.pool;
      for (let candidate = this.next(); candidate; candidate = this.next()) {
        const verdict = await this.tryCandidate(candidate);
        if (verdict) return verdict;
      }
      const tried = this.hops > 0 || this.minWindow >= 0;
      // Nothing could be tried at all: least_bad serves the member whose cooldown ends first anyway.
      const least = !tried && pool.onExhausted === "least_bad" ? leastBad(pool, state) : undefined;
      if (least) {
        least.breaker.force();
        return (await this.tryCandidate({ ...least, counters: state.lane(least.lane.name), probe: least.breaker.state !== "closed" })) ?? this.lastFailure!;
      }
      // Every lane tried failed, or none could be tried: a fallback pool (loop-guarded) may still serve.
      this.soonestMs = Math.min(this.soonestMs, soonestCooldownMs(pool, state));
      const fallback = fallbackOf(pool);
      const next = fallback === undefined ? undefined : options.poolNamed(fallback);
      (this.visited ??= new Set()).add(pool.name);
      if (next && !this.visited.has(next.name)) {
        this.pool = next;
        this.hops = 0;
        this.minWindow = -1;
        this.order = weightedOrder(next.members, state.clock.random);
        this.index = 0;
        this.deadline = state.clock.now() + next.failover.timeout_secs * 1000;
        continue;
      }
      // Retry-After: the soonest cooldown end in any pool of the chain (a cap or a probe in flight clears soon too).
      return this.lastFailure ?? { kind: "exhausted", retryAfterSecs: this.soonestMs === Infinity ? 1 : Math.max(1, Math.ceil(this.soonestMs / 1000)) };
    }
  }

  private async tryCandidate(candidate: Candidate): Promise<Routed<R> | undefined> {
    const ticket = this.begin(candidate);
    let result: AttemptResult<R>;
    try {
      result = await this.options.attempt(candidate.lane, ticket);
    } catch (error) {
      ticket.released();
      throw error;
    }
    return this.judge(candidate, ticket, result);
  }

  begin({ lane, counters, breaker, probe }: Candidate): Ticket {
    const routing = this.options.counters;
    const pool = this.pool.name;
    this.hops += 1;
    if (this.pendingFailover) routing.failover(pool, this.pendingFailover);
    this.pendingFailover = undefined;
    routing.attempt(pool, lane.name);
    counters.inflight += 1;
    counters.admitted += 1;
    return new Ticket(counters, breaker, pool, lane.name, routing, probe, this.deadline);
  }

  /** What one attempt's result means for the request: an answer to give, or undefined to go on. */
  judge({ lane, counters, breaker }: Candidate, ticket: Ticket, result: AttemptResult<R>): Routed<R> | undefined {
    if (result.ok) {
      if (!result.settlesLater) ticket.ok();
      return { kind: "answer", value: result.value };
    }
    ticket.released();
    // The client left before an answer: nobody to fail over for, and nothing learned about the lane.
    if (result.cause === "client_gone") return { kind: "relay", value: result.relay(), failure: "caller" };
    const routing = this.options.counters;
    const pool = this.pool.name;
    const failure = result.error.failure ?? "transient";
    if (failure === "caller") {
      // The upstream answered, and it was the request's fault: the lane is fine.
      breaker.success();
      return { kind: "relay", value: result.relay(), failure };
    }
    if (failure === "context_length") {
      // The lane answered; the request was too long for it. No fault, but a probe has settled.
      breaker.success();
      routing.failure(pool, lane.name, "context_length");
      this.minWindow = Math.max(this.minWindow, lane.contextWindow ?? 0);
      this.lastFailure = { kind: "relay", value: result.relay(), failure };
      return undefined;
    }
    counters.err += 1;
    const hardDown = HARD_DOWN.has(failure);
    routing.failure(pool, lane.name, hardDown ? "hard_down" : "transient_upstream");
    const fault: BreakerFault = hardDown
      ? { kind: "hard_down", reason: `${failure === "credential" ? "auth" : "billing"}: ${result.error.message}`.slice(0, 200) }
      : { kind: "transient", retryAfterSecs: result.error.retryAfterSecs };
    if (breaker.failure(fault)) routing.trip(pool, lane.name);
    this.lastFailure = { kind: "relay", value: result.relay(), failure };
    // A credential fault is the operator's to fix: the caller hears it rather than a lane it did not pick.
    if (failure === "credential") return this.lastFailure;
    this.pendingFailover = hardDown ? "hard_down" : result.cause === "timeout" || result.cause === "connect" ? result.cause : "transient_upstream";
    return undefined;
  }
}

function fallbackOf(pool: Pool): string | undefined {
  return pool.onExhausted.startsWith("fallback_pool:") ? pool.onExhausted.slice("fallback_pool:".length) : undefined;
}

/** The member whose cooldown ends first (concurrency and budget still apply: they are hard limits). */
function leastBad(pool: Pool, state: RoutingState): { lane: Lane; breaker: Breaker } | undefined {
  let best: { lane: Lane; breaker: Breaker } | undefined;
  for (const { lane } of pool.members) {
    if (!state.lane(lane.name).hasRoom(lane)) continue;
    const breaker = state.cell(pool.name, lane.name, pool.breaker);
    if (!best || breaker.cooldownUntil < best.breaker.cooldownUntil) best = { lane, breaker };
  }
  return best;
}

/** Milliseconds until the soonest member cooldown of the pool ends (Infinity when none is cooling). */
function soonestCooldownMs(pool: Pool, state: RoutingState): number {
  let soonest = Infinity;
  for (const { lane } of pool.members) {
    const remaining = state.cell(pool.name, lane.name, pool.breaker).cooldownRemainingMs();
    if (remaining > 0) soonest = Math.min(soonest, remaining);
  }
  return soonest;
}

/** Settles an attempt once: the lane's slot is freed, and its breaker and ok/err counters told how it went. */
class Ticket implements LaneTicket {
  private settled = false;

  constructor(
    private readonly counters: LaneCounters,
    private readonly breaker: Breaker,
    private readonly pool: string,
    private readonly lane: string,
    private readonly routing: RoutingCounters,
    private readonly probe: boolean,
    readonly deadline: number,
  ) {}

  ok(): void {
    if (!this.settle()) return;
    this.counters.ok += 1;
    this.breaker.success();
  }

  broke(error: IrError): void {
    if (!this.settle()) return;
    this.counters.err += 1;
    this.routing.failure(this.pool, this.lane, "transient_upstream");
    if (this.breaker.failure({ kind: "transient", retryAfterSecs: error.retryAfterSecs })) this.routing.trip(this.pool, this.lane);
  }

  released(): void {
    if (this.settle() && this.probe) this.breaker.abandon();
  }

  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.counters.inflight -= 1;
    return true;
  }
}
