// A fleet's limit counters (design/replicas.md, "Limits: exact for the fleet"): where admission takes its
// reservation when several replicas share the limits. sqlite has none: one process counts in memory
// (governance/limits.ts).

/** Why a reservation was refused, and which check (the plan's order) or concurrency cap (sorted) refused it. */
export type CounterRefusal = "budget" | "budget_held" | "requests" | "tokens" | "tokens_held" | "concurrent";

/** One (group, window, pool) bucket's key; pool "" for a cap on every pool. */
export type BucketKey = readonly [group: string, window: string, pool: string];

/** Everything one (group, pool) pair is held to, as the store reads it: built once per plan, not per request. */
export interface CounterPlan {
  /** The buckets, sorted by key. */
  readonly buckets: readonly BucketKey[];
  /** `buckets` joined, for a batch's lookups. */
  readonly bucketIds: readonly string[];
  /** [bucket index, requests cap, tokens cap, budget micros cap] in the order a single process checks them. */
  readonly checks: readonly (readonly [number, number | null, number | null, number | null])[];
  /** [group, pool, cap], sorted by key. */
  readonly caps: readonly (readonly [string, string, number])[];
  /** Whether a request holds something until it ends (a concurrency slot, a token or budget reservation). */
  readonly holds: boolean;
}

export interface CounterRequest {
  /** The current window's start per bucket (epoch ms), in the plan's order. */
  readonly starts: readonly number[];
  /** A bucket the store has not seen starts from these counts [requests, tokens, spend micros] (the ledger's, at boot). */
  readonly initial: readonly (readonly [number, number, number])[];
  readonly feeMicros: number;
  readonly tokens: number;
  readonly spendMicros: number;
}

export type CounterAnswer =
  | { readonly ok: true; readonly counts: readonly (readonly [number, number, number])[]; readonly held: Held | null }
  | { readonly ok: false; readonly why: CounterRefusal; readonly index: number };

/** What an admitted request holds until it ends: its reservation, a slot of each concurrency cap, and the store's mark of when. */
export interface Held {
  readonly tokens: number;
  readonly spendMicros: number;
  readonly epoch: number;
}

export interface Settlement {
  readonly plan: CounterPlan;
  /** The window start per bucket when the request ended. */
  readonly starts: readonly number[];
  /** Real usage. */
  readonly tokens: number;
  readonly spendMicros: number;
  /** What the request held, given back; null when it held nothing (or only usage is reported). */
  readonly held: Held | null;
  /** Requests to count (admitted unchecked while the store was away: fail_open charges them on its return). */
  readonly requests?: number;
}

export interface LimitCounters {
  /** One round trip, all or none; rejects when the store cannot be reached within its bound. */
  reserve(plan: CounterPlan, request: CounterRequest): Promise<CounterAnswer>;
  /** The request ended: real usage in, the reservation and lease out. Off the request's path; retried until written. */
  settle(settlement: Settlement): void;
  /** Waits for the settlements under way; a stop calls it before the store closes. */
  drain(): Promise<void>;
  /** Resolves when the store answers (a cheap statement): how an outage is seen to end without traffic. */
  probe(): Promise<void>;
}

export interface PlanCheck {
  readonly bucket: BucketKey;
  readonly requests: number | null;
  readonly tokens: number | null;
  readonly budgetMicros: number | null;
}

/** The plan the store reads, from the checks in their order and the concurrency caps ([group, pool, cap]). */
export function counterPlan(checks: readonly PlanCheck[], caps: readonly (readonly [string, string, number])[]): { plan: CounterPlan; bucketOf: readonly number[]; capOrder: readonly number[] } {
  const id = (key: BucketKey) => key.join("\u0000");
  const unique = new Map<string, BucketKey>();
  for (const check of checks) unique.set(id(check.bucket), check.bucket);
  const buckets = [...unique.values()].sort((a, b) => compare(id(a), id(b)));
  const bucketIds = buckets.map(id);
  const bucketOf = checks.map((check) => bucketIds.indexOf(id(check.bucket)));
  const capOrder = caps.map((_, i) => i).sort((a, b) => compare(`${caps[a]![0]}\u0000${caps[a]![1]}`, `${caps[b]![0]}\u0000${caps[b]![1]}`));
  const sortedCaps = capOrder.map((i) => caps[i]!);
  const holds = caps.length > 0 || checks.some((c) => c.tokens !== null || c.budgetMicros !== null);
  const plan: CounterPlan = {
    buckets,
    bucketIds,
    checks: checks.map((check, i) => [bucketOf[i]!, check.requests, check.tokens, check.budgetMicros] as const),
    caps: sortedCaps,
    holds,
  };
  return { plan, bucketOf, capOrder };
}

/** Code-unit order, the same on every replica whatever its locale. */
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
