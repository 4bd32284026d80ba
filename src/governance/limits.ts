// Group limits on the hot path, all in memory: a request is admitted only when every limit of its group
// and of each ancestor (AND) has room. Counters live in buckets keyed by (group, window, pool), so the
// several caps of one window (requests, tokens, budget) share one count, and a count survives edits of
// the caps and config swaps. Admission is by reservation (replicas.md "Limits: exact for the fleet"):
// requests and the per-request fee count at once (failures are not refunded); the request's token
// estimate and its cost are reserved, and a bucket admits while settled + reserved is below its cap.
// Real usage replaces the estimate as it is reported, and what is left of it is released when the
// request ends. Concurrency slots are held until the request ends.
import type { GroupRecord } from "../store/groups.ts";
import { irError, type IrError } from "../ir/index.ts";
import { tokensOf, type TokenTiers } from "./rate-card.ts";
import { NO_RESERVATION, type Reservation } from "./estimate.ts";
import { secondsUntilEnd, windowEnd, windowStart, type LimitWindow } from "./windows.ts";
import type { GatewayConfig } from "../config/schema.ts";

export interface WindowLimit {
  readonly window: LimitWindow;
  readonly requests?: number | null;
  readonly tokens?: number | null;
  readonly budget_cents?: number | null;
  readonly pool?: string | null;
}
export interface ConcurrentLimit {
  readonly concurrent: number;
  readonly pool?: string | null;
}
/** gaps.md's LimitView: a windowed bucket or a concurrency cap. */
export type Limit = WindowLimit | ConcurrentLimit;

export const isWindowLimit = (limit: Limit): limit is WindowLimit => "window" in limit;

/** A group of the merged tree (config file and API), as enforcement sees it. */
export interface GroupNode extends Omit<GroupRecord, "createdAt"> {
  /** Config-file groups are read-only through the API. */
  readonly source: "config" | "api";
}

/** Counts of one (group, window, pool) in its current window. */
export class Bucket {
  start = 0;
  end = 0;
  requests = 0;
  tokens = 0;
  spendMicros = 0;
  /** Held by requests in flight; not reset by a roll-over, as their usage lands in the new window. */
  reservedTokens = 0;
  reservedSpendMicros = 0;

  constructor(readonly window: LimitWindow) {}

  /** Starts a new window when `now` has left the current one. */
  roll(now: number): void {
    if (now < this.end) return;
    this.start = windowStart(this.window, now);
    this.end = windowEnd(this.window, now);
    this.requests = 0;
    this.tokens = 0;
    this.spendMicros = 0;
  }
}

export class ConcurrencyCounter {
  inflight = 0;
}

export interface WindowCheck {
  readonly group: string;
  readonly limit: WindowLimit;
  readonly bucket: Bucket;
}
export interface ConcurrencyCheck {
  readonly group: string;
  readonly cap: number;
  readonly counter: ConcurrencyCounter;
  readonly pool: string | null;
}

/** Everything one (group, pool) pair is held to, resolved once per tree and pool. */
export interface Plan {
  /** Why nothing is admitted: a frozen group up the chain, or a group that no longer exists. */
  readonly refusal: IrError | undefined;
  readonly checks: readonly WindowCheck[];
  /** Distinct buckets of the checks: each counted once however many caps read it. */
  readonly buckets: readonly Bucket[];
  readonly caps: readonly ConcurrencyCheck[];
  /** Some check caps tokens or budget: only then is an estimate worth making. */
  readonly reserves: boolean;
  /** The fleet's own form of the plan (fleet-limits.ts), made on its first use. */
  fleet?: unknown;
}

/**
 * Where admissions are decided when not in this process's memory: a fleet's shared counters
 * (fleet-limits.ts). Handed only plans that hold the request to something.
 */
export interface Admitter {
  /** The last admission could not reach where it is decided. */
  readonly unavailable: boolean;
  admit(plan: Plan, pricing: Pricing, estimate: (() => Reservation) | undefined, now: number): Promise<AdmitResult>;
}

export type Pricing = Pick<GatewayConfig, "rate_card" | "per_request_fee">;

/** One admitted request's hold on its limits. */
export class Admission {
  #ended = false;
  /** What is left of the reservation: usage reported so far has replaced the rest. */
  #tokens: number;
  #spend: number;
  /** The body's size in tokens the reservation was made from; 0 when nothing was reserved. */
  readonly sizeTokens: number;

  constructor(
    protected readonly plan: Plan,
    private readonly admittedAt: number,
    reservation: Reservation,
  ) {
    this.#tokens = reservation.tokens;
    this.#spend = reservation.spendMicros;
    this.sizeTokens = reservation.sizeTokens ?? 0;
  }

  /** Charges the answer's tokens and their spend to every bucket of the chain, in place of as much of the estimate. */
  charge(tiers: TokenTiers, spend: number, now: number): void {
    const tokens = tokensOf(tiers);
    const freedTokens = Math.min(this.#tokens, tokens);
    const freedSpend = Math.min(this.#spend, spend);
    this.#tokens -= freedTokens;
    this.#spend -= freedSpend;
    for (const bucket of this.plan.buckets) {
      bucket.roll(now);
      // A window that rolled over since admission starts clean; the tokens belong to the new one.
      bucket.tokens += tokens;
      bucket.spendMicros += spend;
      bucket.reservedTokens -= freedTokens;
      bucket.reservedSpendMicros -= freedSpend;
    }
  }

  /** Frees the concurrency slots and the rest of the reservation; once, whatever ends the request (answer, error, client gone). */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const cap of this.plan.caps) cap.counter.inflight -= 1;
    if (this.#tokens === 0 && this.#spend === 0) return;
    for (const bucket of this.plan.buckets) {
      bucket.reservedTokens -= this.#tokens;
      bucket.reservedSpendMicros -= this.#spend;
    }
    this.#tokens = 0;
    this.#spend = 0;
  }

  get startedAt(): number {
    return this.admittedAt;
  }
}

export type AdmitResult = { readonly ok: true; readonly admission: Admission } | { readonly ok: false; readonly error: IrError };

const UNLIMITED: Plan = Object.freeze({ refusal: undefined, checks: [], buckets: [], caps: [], reserves: false });

export class LimitEngine {
  readonly #buckets = new Map<string, Bucket>();
  readonly #counters = new Map<string, ConcurrencyCounter>();
  #tree: ReadonlyMap<string, GroupNode> | undefined;
  /** Plans by group then pool, built on first use and dropped whenever the tree changes. */
  #plans = new Map<string, Map<string, Plan>>();

  /** `tree` answers the same map until groups or the config change: one identity check per request. */
  constructor(
    private readonly now: () => number,
    private readonly tree: () => ReadonlyMap<string, GroupNode>,
    /** A fleet's: the shared counters decide (one round trip); none: this process's memory does. */
    private readonly admitter?: Admitter,
  ) {}

  private current(): ReadonlyMap<string, GroupNode> {
    const tree = this.tree();
    if (tree !== this.#tree) {
      this.#tree = tree;
      this.#plans = new Map();
    }
    return tree;
  }

  /**
   * Admission of one request of `group` to `pool`, counting it in every bucket when admitted and
   * reserving `estimate()` (called only when a token or budget cap needs it) until the request ends.
   * `now`: the caller's reading of the clock, when it has one (one per request).
   */
  admit(group: string, pool: string, pricing: Pricing, estimate?: () => Reservation, now = this.now()): AdmitResult | Promise<AdmitResult> {
    if (this.admitter) {
      const plan = this.plan(group, pool);
      if (!plan.refusal && plan !== UNLIMITED) return this.admitter.admit(plan, pricing, estimate, now);
    }
    return this.admitHere(group, pool, pricing, estimate, now);
  }

  /** The fleet's counters could not be reached by the last admission that needed them. */
  get unavailable(): boolean {
    return this.admitter?.unavailable ?? false;
  }

  /** admit() by this process's memory alone (a single process, or a fleet's chain with no limit). */
  admitHere(group: string, pool: string, pricing: Pricing, estimate?: () => Reservation, now = this.now()): AdmitResult {
    const plan = this.plan(group, pool);
    if (plan.refusal) return { ok: false, error: plan.refusal };
    for (const bucket of plan.buckets) bucket.roll(now);
    // Budget first: an exhausted budget outlasts any rate window, so it is the answer worth giving.
    for (const check of plan.checks) {
      const { limit, bucket } = check;
      if (limit.budget_cents == null) continue;
      const cap = limit.budget_cents * 1_000_000;
      if (bucket.spendMicros >= cap) return { ok: false, error: windowRefusal("budget", check, now) };
      if (bucket.spendMicros + bucket.reservedSpendMicros >= cap) return { ok: false, error: windowRefusal("budget_held", check, now) };
    }
    for (const check of plan.checks) {
      const { limit, bucket } = check;
      if (limit.requests != null && bucket.requests >= limit.requests) return { ok: false, error: windowRefusal("requests", check, now) };
      if (limit.tokens != null && bucket.tokens + bucket.reservedTokens >= limit.tokens) {
        return { ok: false, error: windowRefusal(bucket.tokens >= limit.tokens ? "tokens" : "tokens_held", check, now) };
      }
    }
    for (const cap of plan.caps) {
      if (cap.counter.inflight >= cap.cap) return { ok: false, error: concurrencyRefusal(cap) };
    }
    const fee = Math.round((pricing.per_request_fee ?? 0) * 1_000_000);
    const reservation = plan.reserves && estimate ? estimate() : NO_RESERVATION;
    for (const bucket of plan.buckets) {
      bucket.requests += 1;
      bucket.spendMicros += fee;
      bucket.reservedTokens += reservation.tokens;
      bucket.reservedSpendMicros += reservation.spendMicros;
    }
    for (const cap of plan.caps) cap.counter.inflight += 1;
    return { ok: true, admission: new Admission(plan, now, reservation) };
  }

  /**
   * The fraction left of the tightest requests or tokens cap up the chain (KeyMeteringView.rate_headroom),
   * over every pool's caps; null when the chain has none.
   */
  rateHeadroom(group: string): number | null {
    const now = this.now();
    let least: number | null = null;
    for (const { limit, bucket } of this.allChecks(group)) {
      bucket.roll(now);
      for (const [cap, used] of [
        [limit.requests, bucket.requests],
        [limit.tokens, bucket.tokens],
      ] as const) {
        if (cap == null) continue;
        const left = cap === 0 ? 0 : Math.min(1, Math.max(0, (cap - used) / cap));
        least = least === null ? left : Math.min(least, left);
      }
    }
    return least;
  }

  /** The least budget left up the chain in micro-units (floored at 0); null when no budget caps it. */
  budgetRemainingMicros(group: string): number | null {
    const now = this.now();
    let least: number | null = null;
    for (const { limit, bucket } of this.allChecks(group)) {
      if (limit.budget_cents == null) continue;
      bucket.roll(now);
      const left = Math.max(0, limit.budget_cents * 1_000_000 - bucket.spendMicros);
      least = least === null ? left : Math.min(least, left);
    }
    return least;
  }

  /** Sets a bucket's counts for the current window (boot: restored from the ledger). */
  restore(group: string, window: LimitWindow, pool: string | null, counts: { requests: number; tokens: number; spendMicros: number }): void {
    const bucket = this.bucket(group, window, pool ?? null);
    bucket.roll(this.now());
    bucket.requests = counts.requests;
    bucket.tokens = counts.tokens;
    bucket.spendMicros = counts.spendMicros;
  }

  /** Requests of `group` (its own caps, any pool) in flight now. */
  inflight(group: string, pool: string | null): number {
    return this.#counters.get(counterKey(group, pool))?.inflight ?? 0;
  }

  private plan(group: string, pool: string): Plan {
    this.current();
    let byPool = this.#plans.get(group);
    if (!byPool) this.#plans.set(group, (byPool = new Map()));
    let plan = byPool.get(pool);
    if (!plan) byPool.set(pool, (plan = this.buildPlan(group, pool)));
    return plan;
  }

  private buildPlan(group: string, pool: string): Plan {
    const chain = this.chain(group);
    if (chain.length === 0) return { ...UNLIMITED, refusal: irError("permission", `The key's group ${group} does not exist.`) };
    const frozen = chain.find((node) => !node.enabled);
    if (frozen) return { ...UNLIMITED, refusal: irError("permission", `Group ${frozen.name} is frozen (enabled: false); requests through it are refused.`) };
    const checks: WindowCheck[] = [];
    const caps: ConcurrencyCheck[] = [];
    for (const node of chain) {
      for (const limit of node.limits) {
        if (limit.pool != null && limit.pool !== pool) continue;
        if (isWindowLimit(limit)) checks.push({ group: node.name, limit, bucket: this.bucket(node.name, limit.window, limit.pool ?? null) });
        else caps.push({ group: node.name, cap: limit.concurrent, counter: this.counter(node.name, limit.pool ?? null), pool: limit.pool ?? null });
      }
    }
    if (checks.length === 0 && caps.length === 0) return UNLIMITED;
    const reserves = checks.some((c) => c.limit.tokens != null || c.limit.budget_cents != null);
    return { refusal: undefined, checks, buckets: [...new Set(checks.map((c) => c.bucket))], caps, reserves };
  }

  /** Every windowed cap up the chain whatever its pool (views, not admission). */
  private allChecks(group: string): WindowCheck[] {
    return this.chain(group).flatMap((node) =>
      node.limits.filter(isWindowLimit).map((limit) => ({ group: node.name, limit, bucket: this.bucket(node.name, limit.window, limit.pool ?? null) })),
    );
  }

  /** The group and its ancestors, nearest first; a parent cycle (config checks refuse one) stops the walk. */
  chain(group: string): GroupNode[] {
    const tree = this.current();
    const chain: GroupNode[] = [];
    const seen = new Set<string>();
    for (let node = tree.get(group); node && !seen.has(node.name); node = node.parent === null ? undefined : tree.get(node.parent)) {
      seen.add(node.name);
      chain.push(node);
    }
    return chain;
  }

  private bucket(group: string, window: LimitWindow, pool: string | null): Bucket {
    const key = `${group}\u0000${window}\u0000${pool ?? ""}`;
    let bucket = this.#buckets.get(key);
    if (!bucket) this.#buckets.set(key, (bucket = new Bucket(window)));
    return bucket;
  }

  private counter(group: string, pool: string | null): ConcurrencyCounter {
    const key = counterKey(group, pool);
    let counter = this.#counters.get(key);
    if (!counter) this.#counters.set(key, (counter = new ConcurrencyCounter()));
    return counter;
  }
}

const counterKey = (group: string, pool: string | null) => `${group}\u0000${pool ?? ""}`;
const poolNote = (limit: { pool?: string | null }) => (limit.pool != null ? ` in pool ${limit.pool}` : "");

/** Why a windowed cap refuses: spent, or held by the reservations of requests in flight. */
export type WindowRefusal = "budget" | "budget_held" | "requests" | "tokens" | "tokens_held";

/** The refusal of one windowed cap, in the words a client reads (the same from memory and from a fleet's counters). */
export function windowRefusal(why: WindowRefusal, check: WindowCheck, now: number): IrError {
  const { group: owner, limit } = check;
  switch (why) {
    case "budget":
      return irError("insufficient_quota", `Group ${owner} has used its ${limit.window} budget of ${limit.budget_cents} cents${poolNote(limit)}.`, { code: "insufficient_quota" });
    case "budget_held":
      return irError("rate_limit", `Group ${owner}'s ${limit.window} budget of ${limit.budget_cents} cents${poolNote(limit)} is held by requests in flight; retry after 1 s.`, { retryAfterSecs: 1 });
    case "requests":
      return spentRefusal(owner, limit, `${limit.requests} requests`, now);
    case "tokens":
      return spentRefusal(owner, limit, `${limit.tokens} tokens`, now);
    case "tokens_held":
      return irError("rate_limit", `Group ${owner}'s ${limit.tokens} tokens per ${limit.window}${poolNote(limit)} are held by requests in flight; retry after 1 s.`, { retryAfterSecs: 1 });
  }
}

export const concurrencyRefusal = (cap: ConcurrencyCheck): IrError => irError("rate_limit", `Group ${cap.group} allows ${cap.cap} requests in flight at once.`, { retryAfterSecs: 1 });

/** A spent requests or tokens cap: Retry-After is the window's end; a `total` window never frees, so it has none. */
function spentRefusal(owner: string, limit: WindowLimit, allowance: string, now: number): IrError {
  if (limit.window === "total") return irError("rate_limit", `Group ${owner} allows ${allowance} in total${poolNote(limit)}; a total window does not reset.`);
  const retryAfterSecs = secondsUntilEnd(limit.window, now);
  return irError("rate_limit", `Group ${owner} allows ${allowance} per ${limit.window}${poolNote(limit)}; retry after ${retryAfterSecs} s.`, { retryAfterSecs });
}
