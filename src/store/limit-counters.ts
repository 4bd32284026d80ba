// A fleet's limit counters (design/replicas.md, "Limits: exact for the fleet"): where admission takes its
// reservation when several replicas share the limits. sqlite has none: one process counts in memory
// (governance/limits.ts). The plan's shape is the contract of the store's gateway_reserve function.

/** Why a reservation was refused, and which check (the plan's order) or concurrency cap (sorted) refused it. */
export type CounterRefusal = "budget" | "budget_held" | "requests" | "tokens" | "tokens_held" | "concurrent";

/** One (group, window, pool) bucket's key; pool "" for a cap on every pool. */
export type BucketKey = readonly [group: string, window: string, pool: string];

/** Everything one (group, pool) pair is held to, as the store reads it: built once per plan, not per request. */
export interface CounterPlan {
  /** {b: bucket keys sorted, c: [[bucket index, requests, tokens, budget micros]] in check order, k: [[group, pool, cap]] sorted}. */
  readonly json: string;
  /** The buckets, sorted as in json (the order rows are locked in, so two admissions never deadlock). */
  readonly buckets: readonly BucketKey[];
  /** Whether a request holds something until it ends (a concurrency cap or a token or budget cap). */
  readonly leases: boolean;
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
  | { readonly ok: true; readonly counts: readonly (readonly [number, number, number])[]; readonly lease: string | null }
  | { readonly ok: false; readonly why: CounterRefusal; readonly index: number };

export interface Settlement {
  readonly plan: CounterPlan;
  /** The window start per bucket when the request ended. */
  readonly starts: readonly number[];
  readonly tokens: number;
  readonly spendMicros: number;
  readonly lease: string | null;
}

export interface LimitCounters {
  /** One round trip, all or none; rejects when the store cannot be reached within its bound. */
  reserve(plan: CounterPlan, request: CounterRequest): Promise<CounterAnswer>;
  /** The request ended: real usage in, the reservation and lease out. Off the request's path; retried until written. */
  settle(settlement: Settlement): void;
  /** Waits for the settlements under way; a stop calls it before the store closes. */
  drain(): Promise<void>;
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
  const index = new Map(buckets.map((key, i) => [id(key), i]));
  const bucketOf = checks.map((check) => index.get(id(check.bucket))!);
  const capOrder = caps.map((_, i) => i).sort((a, b) => compare(`${caps[a]![0]}\u0000${caps[a]![1]}`, `${caps[b]![0]}\u0000${caps[b]![1]}`));
  const json = JSON.stringify({
    b: buckets,
    c: checks.map((check, i) => [bucketOf[i], check.requests, check.tokens, check.budgetMicros]),
    k: capOrder.map((i) => caps[i]),
  });
  const leases = caps.length > 0 || checks.some((c) => c.tokens !== null || c.budgetMicros !== null);
  return { plan: { json, buckets, leases }, bucketOf, capOrder };
}

/** Code-unit order, the same on every replica whatever its locale. */
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
