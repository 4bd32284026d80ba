// Limits exact for a fleet (design/replicas.md, "Limits: exact for the fleet"): admission takes a
// reservation in the shared counters (one round trip, every bucket and concurrency cap up the chain, all
// or none) instead of this process's memory; the request's end settles it off the response path. The
// refusals are the single process's, word for word (limits.ts). When the store cannot answer within its
// bound, store.settings.on_unavailable decides: fail_closed refuses 503 `store unavailable`, fail_open
// admits unchecked and charges the request to the counters once the store is back.
import { irError, type IrError } from "../ir/index.ts";
import { counterPlan, type CounterPlan, type Held, type LimitCounters } from "../store/limit-counters.ts";
import { NO_RESERVATION, type Reservation } from "./estimate.ts";
import { Admission, concurrencyRefusal, windowRefusal, type AdmitResult, type Admitter, type Bucket, type Plan, type Pricing } from "./limits.ts";
import { tokensOf, type TokenTiers } from "./rate-card.ts";
import { windowStart } from "./windows.ts";

/** The plan as the shared counters read it, and the buckets in the store's (sorted) order. */
interface FleetPlan {
  readonly counters: CounterPlan;
  readonly buckets: readonly Bucket[];
  /** The plan's concurrency caps in the store's order. */
  readonly capOrder: readonly number[];
}

/** How often an unreachable store is tried again. */
const PROBE_MS = 1_000;

export const STORE_UNAVAILABLE: IrError = irError("overloaded", "store unavailable: the limits cannot be checked; retry after 1 s.", { status: 503, retryAfterSecs: 1 });

export class FleetAdmitter implements Admitter {
  #unavailable = false;

  constructor(
    private readonly counters: LimitCounters,
    private readonly onUnavailable: "fail_closed" | "fail_open",
    /** Told when reservations start failing and when they answer again. */
    private readonly changed: (unavailable: boolean, error?: unknown) => void = () => {},
  ) {}

  /** The last reservation could not reach the store, and it has not answered since. */
  get unavailable(): boolean {
    return this.#unavailable;
  }

  /** Outage begins: told once, and the store is tried every second until it answers, traffic or not. */
  #down(error: unknown): void {
    this.#unavailable = true;
    this.changed(true, error);
    // One probe at a time: a database that neither answers nor refuses must not gather a probe a second.
    let probing = false;
    const probe = setInterval(() => {
      if (!this.#unavailable) return clearInterval(probe);
      if (probing) return;
      probing = true;
      this.counters.probe().then(
        () => {
          clearInterval(probe);
          if (this.#unavailable) this.#up();
        },
        () => (probing = false),
      );
    }, PROBE_MS);
    probe.unref?.();
  }

  #up(): void {
    this.#unavailable = false;
    this.changed(false);
  }

  async admit(plan: Plan, pricing: Pricing, estimate: (() => Reservation) | undefined, now: number): Promise<AdmitResult> {
    const fleet = fleetPlan(plan);
    for (const bucket of plan.buckets) bucket.roll(now);
    const reservation = plan.reserves && estimate ? estimate() : NO_RESERVATION;
    const starts = fleet.buckets.map((bucket) => bucket.start);
    let answer;
    try {
      answer = await this.counters.reserve(fleet.counters, {
        starts,
        initial: fleet.buckets.map((b) => [b.requests, b.tokens, b.spendMicros] as const),
        feeMicros: Math.round((pricing.per_request_fee ?? 0) * 1_000_000),
        tokens: reservation.tokens,
        spendMicros: reservation.spendMicros,
      });
    } catch (error) {
      if (!this.#unavailable) this.#down(error);
      if (this.onUnavailable === "fail_closed") return { ok: false, error: STORE_UNAVAILABLE };
      // fail_open: admitted unchecked; the request, its fee and its usage are charged once the store is back.
      return { ok: true, admission: new FleetAdmission(plan, now, NO_RESERVATION, fleet, this.counters, null, Math.round((pricing.per_request_fee ?? 0) * 1_000_000)) };
    }
    if (this.#unavailable) this.#up();
    if (!answer.ok) {
      if (answer.why === "concurrent") return { ok: false, error: concurrencyRefusal(plan.caps[fleet.capOrder[answer.index]!]!) };
      return { ok: false, error: windowRefusal(answer.why, plan.checks[answer.index]!, now) };
    }
    // The fleet's counts, for this replica's views (rate_headroom, budget_remaining).
    answer.counts.forEach(([requests, tokens, spend], i) => {
      const bucket = fleet.buckets[i]!;
      bucket.requests = requests;
      bucket.tokens = tokens;
      bucket.spendMicros = spend;
    });
    return { ok: true, admission: new FleetAdmission(plan, now, reservation, fleet, this.counters, answer.held) };
  }
}

function fleetPlan(plan: Plan): FleetPlan {
  if (plan.fleet) return plan.fleet as FleetPlan;
  const { plan: counters, bucketOf, capOrder } = counterPlan(
    plan.checks.map(({ group, limit }) => ({
      bucket: [group, limit.window, limit.pool ?? ""] as const,
      requests: limit.requests ?? null,
      tokens: limit.tokens ?? null,
      budgetMicros: limit.budget_cents == null ? null : limit.budget_cents * 1_000_000,
    })),
    plan.caps.map((cap) => [cap.group, cap.pool ?? "", cap.cap] as const),
  );
  const buckets: Bucket[] = [];
  plan.checks.forEach((check, i) => (buckets[bucketOf[i]!] = check.bucket));
  const fleet: FleetPlan = { counters, buckets, capOrder };
  plan.fleet = fleet;
  return fleet;
}

/** A request admitted by the fleet's counters: its usage is summed here and written once, when it ends. */
class FleetAdmission extends Admission {
  #tokens = 0;
  #spend = 0;
  #ended = false;
  /** Admitted unchecked (fail_open): the request itself is still to be counted. */
  #requests: number;

  constructor(
    plan: Plan,
    admittedAt: number,
    reservation: Reservation,
    private readonly fleet: FleetPlan,
    private readonly counters: LimitCounters,
    private readonly held: Held | null,
    /** Set when admitted unchecked: its fee, charged with the request when it ends. */
    uncheckedFee?: number,
  ) {
    super(plan, admittedAt, reservation);
    this.#requests = uncheckedFee === undefined ? 0 : 1;
    this.#spend = uncheckedFee ?? 0;
  }

  override charge(tiers: TokenTiers, spend: number, now: number): void {
    this.#tokens += tokensOf(tiers);
    this.#spend += spend;
    // Usage reported after the end (rare) is written on its own.
    if (this.#ended) this.#settle(null, now);
  }

  override end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#settle(this.held, Date.now());
  }

  #settle(held: Held | null, now: number): void {
    if (held === null && this.#tokens === 0 && this.#spend === 0 && this.#requests === 0) return;
    const starts = this.fleet.buckets.map((bucket) => windowStart(bucket.window, now));
    this.counters.settle({ plan: this.fleet.counters, starts, tokens: this.#tokens, spendMicros: this.#spend, held, requests: this.#requests });
    this.#tokens = 0;
    this.#spend = 0;
    this.#requests = 0;
  }
}
