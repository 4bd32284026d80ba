// The fleet's limit counters in PostgreSQL (limits-schema.ts holds the functions): a reservation is one
// statement, bounded at RESERVE_MS; settlements are written off the request's path, retried every
// second while the database refuses them, so no lease is left held by a live replica.
import type { SQL } from "bun";
import type { CounterAnswer, CounterPlan, CounterRequest, LimitCounters, Settlement } from "../limit-counters.ts";

/** How long a request waits for its reservation before the store counts as unavailable. */
export const RESERVE_MS = 1_000;
const RETRY_MS = 1_000;
/** Settlements kept while the database is away; past it the oldest are dropped (their leases freed when the replica is gone). */
const UNSETTLED_MAX = 100_000;

export class TimedOut extends Error {
  constructor() {
    super(`no answer within ${RESERVE_MS} ms`);
  }
}

export class PgLimitCounters implements LimitCounters {
  #leases = 0;
  #unsettled: string[] = [];
  readonly #writing = new Set<Promise<void>>();
  #retry: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly sql: SQL,
    private readonly replicaId: string,
  ) {}

  reserve(plan: CounterPlan, request: CounterRequest): Promise<CounterAnswer> {
    const lease = plan.leases ? `${this.replicaId}:${++this.#leases}` : null;
    const req = JSON.stringify({
      st: request.starts,
      in: request.initial,
      fee: request.feeMicros,
      rt: request.tokens,
      rs: request.spendMicros,
      l: lease,
      r: this.replicaId,
      now: Math.floor(Date.now() / 1000),
    });
    let late = false;
    const query = this.sql`SELECT gateway_reserve(${plan.json}::text::jsonb, ${req}::text::jsonb) AS a`.then((rows: { a: RawAnswer }[]) => {
      const a = rows[0]!.a;
      // Refused to the caller already: what it took is given back at once.
      if (late && a.ok && lease !== null) this.settle({ plan, starts: request.starts, tokens: 0, spendMicros: 0, lease });
      return a.ok ? ({ ok: true, counts: a.b, lease } as const) : ({ ok: false, why: a.why, index: a.i } as const);
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        late = true;
        reject(new TimedOut());
      }, RESERVE_MS);
    });
    return Promise.race([query, bound]).finally(() => clearTimeout(timer));
  }

  settle(settlement: Settlement): void {
    const body = JSON.stringify({
      b: settlement.plan.buckets.map((key, i) => [...key, settlement.starts[i]]),
      t: settlement.tokens,
      s: settlement.spendMicros,
      l: settlement.lease,
    });
    this.#write(body);
  }

  /** Frees the leases of replicas gone for `goneAfterSecs`; answers how many. */
  async freeGone(goneAfterSecs: number): Promise<number> {
    const rows = await this.sql`SELECT gateway_free_gone(${goneAfterSecs}) AS n`;
    return Number(rows[0].n);
  }

  /** Settlements waiting for the database. */
  get unsettled(): number {
    return this.#unsettled.length;
  }

  /** Waits for the settlements under way (a stop writes them before the store closes). */
  async drain(): Promise<void> {
    while (this.#writing.size > 0) await Promise.all(this.#writing);
  }

  #write(body: string): void {
    const writing: Promise<void> = this.sql`SELECT gateway_settle(${body}::text::jsonb)`.then(
      () => {},
      () => this.#keep(body),
    );
    this.#writing.add(writing);
    void writing.finally(() => this.#writing.delete(writing));
  }

  #keep(body: string): void {
    this.#unsettled.push(body);
    if (this.#unsettled.length > UNSETTLED_MAX) this.#unsettled.shift();
    this.#retry ??= setTimeout(() => {
      this.#retry = undefined;
      for (const kept of this.#unsettled.splice(0)) this.#write(kept);
    }, RETRY_MS);
    this.#retry.unref?.();
  }
}

type RawAnswer = { ok: true; b: [number, number, number][] } | { ok: false; why: Exclude<CounterAnswer, { ok: true }>["why"]; i: number };
