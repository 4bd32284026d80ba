// Metering: admission through the group limits, charging of each answer's usage, the ledger rows of
// both (queued and written in batches by a timer, never on the request's own path), and per-key totals
// for the gateway_key_* series. One object per process, shared by every request.
import type { IngressPrincipal } from "../auth/ingress-chain.ts";
import type { ConfigHolder } from "../config/snapshot.ts";
import type { IrError, IrUsage } from "../ir/index.ts";
import type { LedgerRow, LedgerStore } from "../store/ledger.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { Admission, LimitEngine } from "./limits.ts";
import { spendMicros, tiersOf, tokensOf, ZERO_TIERS } from "./rate-card.ts";

/** The one hook the data plane calls for an admitted request: usage when known, end when over. */
export interface RequestMeter {
  /** The answer's usage, from the lane `model` (alias) that served it; later reports add to earlier ones. */
  usage(usage: IrUsage, model: string): void;
  /** The request is over (answered, failed, or the client left): concurrency slots are freed. Idempotent. */
  end(): void;
  /** The answer is a stream: the request ends when the stream settles, not when the answer is handed out. */
  deferEnd(): void;
  /** The answer (or error) is handed out: ends the request unless a stream holds it. */
  answered(): void;
}

export type MeterResult = { readonly ok: true; readonly meter: RequestMeter | undefined } | { readonly ok: false; readonly error: IrError };

/** Per key, since boot (restored from the ledger): what gateway_key_spend_cents and _tokens_total show. */
export interface KeyTotals {
  tokens: number;
  spendMicros: number;
  group: string | null;
  labels: Readonly<Record<string, string>>;
}

export interface MeteringDeps {
  readonly holder: ConfigHolder;
  readonly limits: LimitEngine;
  readonly ledger: LedgerStore;
  readonly logger: Logger;
  /** Epoch milliseconds. */
  readonly now: () => number;
  /** How long a ledger row may wait in memory before its batch is written. */
  readonly flushMs?: number;
}

const NO_METER: MeterResult = Object.freeze({ ok: true, meter: undefined });
const BATCH_ROWS = 512;

class Meter implements RequestMeter {
  constructor(
    private readonly metering: Metering,
    private readonly principal: IngressPrincipal,
    private readonly pool: string,
    private readonly admission: Admission | undefined,
    private readonly totals: KeyTotals,
  ) {}

  usage(usage: IrUsage, model: string): void {
    const tiers = tiersOf(usage);
    const tokens = tokensOf(tiers);
    if (tokens === 0) return;
    const spend = spendMicros(this.metering.pricing(), model, tiers, 0);
    const now = this.metering.now();
    this.admission?.charge(tiers, spend, now);
    this.totals.tokens += tokens;
    this.totals.spendMicros += spend;
    this.metering.queue({ ts: now, key_id: this.principal.id, group_name: this.principal.group ?? null, pool: this.pool, model, requests: 0, ...tiers });
  }

  end(): void {
    this.admission?.end();
  }

  #deferred = false;
  deferEnd(): void {
    this.#deferred = true;
  }

  answered(): void {
    if (!this.#deferred) this.end();
  }
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function nested<K, V extends Map<unknown, unknown>>(map: Map<K, V>, key: K): V {
  let inner = map.get(key);
  if (inner === undefined) map.set(key, (inner = new Map() as V));
  return inner;
}

export class Metering {
  readonly #deps: MeteringDeps;
  readonly #keys = new Map<string, KeyTotals>();
  /** Second -> key -> pool -> model -> the sum row. */
  #pending = new Map<number, Map<string, Map<string, Map<string, Mutable<LedgerRow>>>>>();
  #rebound: LedgerRow[] = [];
  #rows = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> = Promise.resolve();

  constructor(deps: MeteringDeps) {
    this.#deps = deps;
  }

  now(): number {
    return this.#deps.now();
  }

  pricing() {
    return this.#deps.holder.current.config;
  }

  /**
   * Admission of one request to `pool` for `model` (as the caller named it). A key's requests are metered
   * whether or not it has a group; other principals (static tokens, the open door) are not.
   */
  admit(principal: IngressPrincipal, pool: string, model: string): MeterResult {
    if (principal.module !== "keys" && (principal.group === undefined || principal.group === null)) return NO_METER;
    let admission: Admission | undefined;
    const group = principal.group ?? null;
    if (group !== null) {
      const admitted = this.#deps.limits.admit(group, pool, this.pricing());
      if (!admitted.ok) return admitted;
      admission = admitted.admission;
    }
    const now = this.now();
    const totals = this.totalsOf(principal.id, group, principal.labels ?? {});
    totals.spendMicros += spendMicros(this.pricing(), model, ZERO_TIERS, 1);
    this.queue({ ts: now, key_id: principal.id, group_name: group, pool, model, requests: 1, ...ZERO_TIERS });
    return { ok: true, meter: new Meter(this, principal, pool, admission, totals) };
  }

  totalsOf(id: string, group: string | null, labels: Readonly<Record<string, string>>): KeyTotals {
    let totals = this.#keys.get(id);
    if (!totals) this.#keys.set(id, (totals = { tokens: 0, spendMicros: 0, group, labels }));
    else {
      // The key may have been re-bound or relabelled since: the series follow its present state.
      totals.group = group;
      totals.labels = labels;
    }
    return totals;
  }

  /** Every key metered since boot (and restored at boot). */
  keyTotals(): ReadonlyMap<string, KeyTotals> {
    return this.#keys;
  }

  /**
   * Rows of the same second, key, pool, model and group are added into one before they are written: the
   * ledger keeps sums, so a busy key costs the store a row a second per model, not two per request.
   * Nested maps keyed by the row's own strings: no key string is built per request.
   */
  queue(row: LedgerRow): void {
    const second = row.ts - (row.ts % 1000);
    const byKey = nested(this.#pending, second);
    const byPool = nested(byKey, row.key_id);
    const byModel = nested(byPool, row.pool);
    const held = byModel.get(row.model);
    if (held && held.group_name === row.group_name) {
      held.requests += row.requests;
      held.input += row.input;
      held.output += row.output;
      held.cache_read += row.cache_read;
      held.cache_creation += row.cache_creation;
      return;
    }
    // A key re-bound to another group within the second keeps its rows apart.
    if (held) this.#rebound.push({ ...row, ts: second });
    else byModel.set(row.model, { ...row, ts: second });
    if (++this.#rows >= BATCH_ROWS) void this.flush();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => void this.flush(), this.#deps.flushMs ?? 1000);
      // A pending batch must not keep a stopping process alive; shutdown flushes it.
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /** Writes what is queued; resolves when every row queued before the call is in the store. */
  flush(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#rows === 0) return this.#writing;
    const rows: LedgerRow[] = [...this.#rebound];
    for (const byKey of this.#pending.values()) for (const byPool of byKey.values()) for (const byModel of byPool.values()) rows.push(...byModel.values());
    this.#pending = new Map();
    this.#rebound = [];
    this.#rows = 0;
    this.#writing = this.#writing.then(() =>
      this.#deps.ledger.append(rows).catch((error: unknown) => {
        this.#deps.logger.error("ledger write failed; these rows are lost", { rows: rows.length, error });
      }),
    );
    return this.#writing;
  }
}
