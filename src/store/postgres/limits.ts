// The fleet's limit counters in PostgreSQL (limits-schema.ts holds the function). What one event-loop turn
// asks for goes as one batch (one statement, one round trip, one transaction): the requests that ended
// since the last batch are settled in it, then the new ones admitted; the next batch waits for the one in
// flight, so under load a batch grows instead of a queue of hot-row locks (group commit), and a replica
// never holds its rows from two transactions at once. Settlements the database refuses are kept and sent
// again every second, so no lease stays held by a live replica. A batch unanswered within RESERVE_MS fails
// its requests (the store counts as unavailable); if it lands later, what it took is given back.
import type { SQL } from "bun";
import type { CounterAnswer, CounterPlan, CounterRequest, LimitCounters, Settlement } from "../limit-counters.ts";
import { GONE_AFTER_SECS } from "./replicas.ts";

/** How long a request waits for its reservation before the store counts as unavailable. */
export const RESERVE_MS = 1_000;
const RETRY_MS = 1_000;
/** How long ended requests wait for a batch of admissions to ride with before they go alone. */
const SETTLE_ALONE_MS = 10;
/**
 * Cut off from the database this long (no heartbeat), a replica may have been taken for gone and what it
 * held freed by the others: its next batch frees the rest itself, and its requests then in flight give
 * nothing back. Two seconds short of the others' judgement, for the time a heartbeat's answer travels.
 */
const ORPHANED_MS = (GONE_AFTER_SECS - 2) * 1000;
/** Settlements kept while the database is away; past it the oldest are dropped (their leases are freed once this replica is gone). */
const UNSETTLED_MAX = 100_000;

export class TimedOut extends Error {
  constructor() {
    super(`no answer within ${RESERVE_MS} ms`);
  }
}

interface Asked {
  readonly plan: CounterPlan;
  readonly request: CounterRequest;
  readonly resolve: (answer: CounterAnswer) => void;
  readonly reject: (error: unknown) => void;
}

type Counts = readonly [number, number, number];
interface RawAnswer {
  readonly a: (true | [Exclude<CounterAnswer, { ok: true }>["why"], number])[];
  readonly b: Counts[];
}

export class PgLimitCounters implements LimitCounters {
  /** Requests admitted in an earlier epoch hold nothing any more (freed as this replica's, above). */
  #epoch = 0;
  /** When a heartbeat last reached the database; undefined until the replica is registered. */
  #alive: number | undefined;
  /** Silent long enough to have been taken for gone: the next batch frees what this replica held first. */
  #orphaned = false;
  #asked: Asked[] = [];
  #ended: Settlement[] = [];
  /** A batch is out: the next one gathers what is asked meanwhile. */
  #sending = false;
  #scheduled = false;
  #retry: ReturnType<typeof setTimeout> | undefined;
  #idle: (() => void)[] = [];
  #alone: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly sql: SQL,
    private readonly replicaId: string,
  ) {}

  reserve(plan: CounterPlan, request: CounterRequest): Promise<CounterAnswer> {
    return new Promise<CounterAnswer>((resolve, reject) => {
      this.#asked.push({ plan, request, resolve, reject });
      this.#schedule();
    });
  }

  /** The replica's heartbeat reached the database (replicas.ts). */
  alive(): void {
    const now = performance.now();
    // A heartbeat back after a long silence: the others may have freed what this replica held meanwhile.
    if (this.#alive !== undefined && now - this.#alive > ORPHANED_MS) this.#orphaned = true;
    this.#alive = now;
  }

  settle(settlement: Settlement): void {
    if (settlement.held === null && settlement.tokens === 0 && settlement.spendMicros === 0 && !settlement.requests) return;
    this.#ended.push(settlement);
    this.#rideOrGoAlone();
  }

  /** Settlements ride with the next admissions; alone only once none came for SETTLE_ALONE_MS, so a request never waits behind a batch that only settles. */
  #rideOrGoAlone(): void {
    this.#alone ??= setTimeout(() => {
      this.#alone = undefined;
      this.#schedule();
    }, SETTLE_ALONE_MS);
    this.#alone.unref?.();
  }

  async probe(): Promise<void> {
    await this.sql`SELECT 1`;
  }

  /** Frees what replicas gone for `goneAfterSecs` held; answers how many holdings rows. */
  async freeGone(goneAfterSecs: number): Promise<number> {
    const rows = await this.sql`SELECT gateway_free_gone(${goneAfterSecs}) AS n`;
    return Number(rows[0].n);
  }

  /** Waits until every settlement asked for is written or kept for a retry (a stop calls it before the store closes). */
  drain(): Promise<void> {
    if (!this.#sending && this.#ended.length === 0) return Promise.resolve();
    this.#schedule();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Batches go out after the turn's I/O callbacks, so every request of the turn is in them. */
  #schedule(): void {
    if (this.#scheduled || this.#sending) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (!this.#sending && (this.#asked.length > 0 || this.#ended.length > 0)) void this.#send();
    });
  }

  async #send(): Promise<void> {
    clearTimeout(this.#alone);
    this.#alone = undefined;
    const asked = this.#asked;
    const ended = this.#ended;
    this.#asked = [];
    this.#ended = [];
    this.#sending = true;
    if (this.#alive !== undefined && performance.now() - this.#alive > ORPHANED_MS) this.#orphaned = true;
    const reset = this.#orphaned;
    if (reset) this.#epoch += 1;
    const epoch = this.#epoch;
    const batch = new Batch();
    // Given back per bucket and per count, and usage per bucket: one row write each, whatever the batch's size.
    const reserved = new Map<number, [number, number]>();
    const slots = new Map<number, number>();
    const usage = new Map<number, [number, number, number, number]>();
    for (const { plan, starts, tokens, spendMicros, held, requests = 0 } of ended) {
      const at = batch.buckets(plan, starts, undefined);
      if (held !== null && held.epoch === epoch) {
        for (const ix of at) {
          const sum = reserved.get(ix) ?? [0, 0];
          sum[0] += held.tokens;
          sum[1] += held.spendMicros;
          reserved.set(ix, sum);
        }
        for (const [group, pool] of plan.caps) {
          const ix = batch.cap(group, pool);
          slots.set(ix, (slots.get(ix) ?? 0) + 1);
        }
      }
      if (tokens === 0 && spendMicros === 0 && requests === 0) continue;
      at.forEach((ix, i) => {
        const sum = usage.get(ix);
        if (!sum) usage.set(ix, [starts[i]!, requests, tokens, spendMicros]);
        else {
          sum[0] = Math.max(sum[0], starts[i]!);
          sum[1] += requests;
          sum[2] += tokens;
          sum[3] += spendMicros;
        }
      });
    }
    const endedFlat: number[] = [reserved.size];
    for (const [ix, [tokens, spend]] of reserved) endedFlat.push(ix, tokens, spend);
    endedFlat.push(slots.size);
    for (const [ix, n] of slots) endedFlat.push(ix, n);
    endedFlat.push(usage.size);
    for (const [ix, [start, requests, tokens, spend]] of usage) endedFlat.push(ix, start, requests, tokens, spend);
    const local: number[][] = [];
    const reqs: number[] = [];
    for (const { plan, request } of asked) {
      const at = batch.buckets(plan, request.starts, request.initial);
      local.push(at);
      reqs.push(plan.checks.length);
      for (const [b, r, t, s] of plan.checks) reqs.push(at[b]!, r ?? -1, t ?? -1, s ?? -1);
      reqs.push(plan.caps.length);
      for (const [group, pool, cap] of plan.caps) reqs.push(batch.cap(group, pool), cap);
      reqs.push(at.length, ...at, request.feeMicros, request.tokens, request.spendMicros);
    }
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      for (const a of asked) a.reject(new TimedOut());
      // A database that stopped answering does not hold up the next batch (another connection may answer).
      this.#done();
    }, RESERVE_MS);
    try {
      const { keys, numbers } = batch;
      const rows = await this.sql`SELECT gateway_reserve(${texts(keys[0])}::text::text[], ${texts(keys[1])}::text::text[], ${texts(keys[2])}::text::text[], ${array(numbers)}::text::bigint[],
        ${texts(batch.caps[0])}::text::text[], ${texts(batch.caps[1])}::text::text[], ${array(endedFlat)}::text::bigint[], ${array(reqs)}::text::bigint[], ${asked.length}, ${this.replicaId}, ${reset}) AS r`;
      if (reset) {
        this.#orphaned = false;
        this.#alive = performance.now();
      }
      const raw = rows[0].r as RawAnswer;
      asked.forEach((a, i) => {
        const verdict = raw.a[i]!;
        if (verdict !== true) return a.resolve({ ok: false, why: verdict[0], index: verdict[1] });
        const held = a.plan.holds ? { tokens: a.request.tokens, spendMicros: a.request.spendMicros, epoch } : null;
        // Refused to the caller already: what it took is given back with the next batch.
        if (late) return held !== null && this.settle({ plan: a.plan, starts: a.request.starts, tokens: 0, spendMicros: 0, held });
        a.resolve({ ok: true, counts: local[i]!.map((ix) => raw.b[ix]!), held });
      });
    } catch (error) {
      if (!late) for (const a of asked) a.reject(error);
      this.#keep(ended);
    } finally {
      clearTimeout(timer);
      if (!late) this.#done();
    }
  }

  #done(): void {
    this.#sending = false;
    const settling = this.#ended.length > 0 && this.#retry === undefined;
    if (this.#asked.length > 0 || (settling && this.#idle.length > 0)) return this.#schedule();
    if (settling) return this.#rideOrGoAlone();
    for (const resolve of this.#idle.splice(0)) resolve();
  }

  /** Settlements the database did not take: tried again in RETRY_MS, the oldest dropped past UNSETTLED_MAX. */
  #keep(ended: Settlement[]): void {
    this.#ended = ended.concat(this.#ended);
    if (this.#ended.length > UNSETTLED_MAX) this.#ended.splice(0, this.#ended.length - UNSETTLED_MAX);
    for (const resolve of this.#idle.splice(0)) resolve();
    this.#retry ??= setTimeout(() => {
      this.#retry = undefined;
      this.#schedule();
    }, RETRY_MS);
    this.#retry.unref?.();
  }
}

/** A batch's buckets and concurrency counts, each once, numbered in the order first named; as columns. */
class Batch {
  /** Group, window and pool of each bucket. */
  readonly keys: [string[], string[], string[]] = [[], [], []];
  /** Per bucket: window start, and the counts that start it if the store has not seen it. */
  readonly numbers: number[] = [];
  /** Group and pool of each concurrency count. */
  readonly caps: [string[], string[]] = [[], []];
  readonly #bucketAt = new Map<string, number>();
  readonly #capAt = new Map<string, number>();

  /** The plan's buckets' numbers in the batch; `initial`: a new request's counts for a bucket the store has not seen. */
  buckets(plan: CounterPlan, starts: readonly number[], initial: CounterRequest["initial"] | undefined): number[] {
    return plan.bucketIds.map((id, i) => {
      let ix = this.#bucketAt.get(id);
      if (ix === undefined) {
        this.#bucketAt.set(id, (ix = this.keys[0].length));
        const [group, window, pool] = plan.buckets[i]!;
        this.keys[0].push(group);
        this.keys[1].push(window);
        this.keys[2].push(pool);
        this.numbers.push(starts[i]!, ...(initial?.[i] ?? [0, 0, 0]));
      }
      return ix;
    });
  }

  cap(group: string, pool: string): number {
    const id = `${group}\u0000${pool}`;
    let ix = this.#capAt.get(id);
    if (ix === undefined) {
      this.#capAt.set(id, (ix = this.caps[0].length));
      this.caps[0].push(group);
      this.caps[1].push(pool);
    }
    return ix;
  }
}

/** A PostgreSQL array literal of texts, each quoted (group names may hold any printable character). */
const texts = (values: readonly string[]) => `{${values.map((v) => `"${v.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`).join(",")}}`;
/** A PostgreSQL array literal of numbers. */
const array = (values: readonly number[]) => `{${values.join(",")}}`;
