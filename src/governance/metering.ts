// Metering: admission through the group limits, charging of each answer's usage, the ledger rows of
// both (queued and written in batches by a timer, never on the request's own path), and per-key totals
// for the gateway_key_* series. One object per process, shared by every request.
//
// A batch is written at most FLUSH_MS after its first row, so a crash (kill -9) loses at most that much
// metering. A batch the store refuses (disk full, I/O error) is kept in memory and retried every
// RETRY_MS; while writes fail the store is `unavailable` (/healthz says degraded). Past
// `store.settings.max_unsaved_rows` kept rows, `store.settings.on_unavailable` decides: fail_closed
// (default) refuses metered requests with 503 "store unavailable", fail_open serves them and drops the
// rows past the bound, counting them.
import type { IngressPrincipal } from "../auth/ingress-chain.ts";
import type { ConfigHolder } from "../config/snapshot.ts";
import { irError, type IrError, type IrUsage } from "../ir/index.ts";
import { estimateTokens } from "../ir/estimate.ts";
import type { Pool } from "../routing/pool.ts";
import type { LedgerRow, LedgerStore } from "../store/ledger.ts";
import type { Logger } from "../telemetry/logger.ts";
import { InputScales, OutputEstimates, requestedMaxOutput, reservationFor } from "./estimate.ts";
import type { Admission, LimitEngine } from "./limits.ts";
import { spendMicros, tiersOf, tokensOf, ZERO_TIERS, type TokenTiers } from "./rate-card.ts";

/** The one hook the data plane calls for an admitted request: usage when known, end when over. */
export interface RequestMeter {
  /** The answer's usage, from the lane `model` (alias) that served it; later reports add to earlier ones. Answers its charge (micro cost units). */
  usage(usage: IrUsage, model: string): number;
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
  /** `store.settings.on_unavailable` (boot-scoped, as `store` is). */
  readonly onUnavailable?: "fail_closed" | "fail_open";
  /** `store.settings.max_unsaved_rows`. */
  readonly maxUnsavedRows?: number;
}

/** What admission reads of the request to estimate its reservation. */
export interface RequestShape {
  readonly pool: Pool;
  readonly body: Record<string, unknown>;
  /** Content-Length; undefined for a chunked body. */
  readonly bodyBytes: number | undefined;
}

const NO_METER: MeterResult = Object.freeze({ ok: true, meter: undefined });
const BATCH_ROWS = 512;
/** The crash window: rows of requests that ended in the last FLUSH_MS may be lost to a kill -9. */
export const FLUSH_MS = 100;
/** What a crash may lose, as the boot line and docs/operations.md state it: FLUSH_MS plus a write's time, with room. */
export const METERING_AT_RISK_MS = 200;
export const RETRY_MS = 1000;
const STORE_FULL = irError("overloaded", "store unavailable: metering cannot be saved; retry after 1 s.", { status: 503, retryAfterSecs: 1 });

class Meter implements RequestMeter {
  constructor(
    private readonly metering: Metering,
    private readonly principal: IngressPrincipal,
    private readonly pool: string,
    private readonly admission: Admission | undefined,
    private readonly totals: KeyTotals,
    /** The body's size in tokens, which the answer's input teaches the pool's input scale; 0 when unknown. */
    private readonly sizeTokens: number,
  ) {}

  usage(usage: IrUsage, model: string): number {
    const tiers = tiersOf(usage);
    const tokens = tokensOf(tiers);
    if (tokens === 0) return 0;
    const spend = spendMicros(this.metering.pricing(), model, tiers, 0);
    const now = this.metering.now();
    this.admission?.charge(tiers, spend, now);
    if (this.admission) {
      if (tiers.output > 0) this.metering.outputs.observe(this.pool, tiers.output);
      const input = tiers.input + tiers.cache_read + tiers.cache_creation;
      if (input > 0 && this.sizeTokens > 0) this.metering.inputScales.observe(this.pool, input / this.sizeTokens);
    }
    this.totals.tokens += tokens;
    this.totals.spendMicros += spend;
    this.metering.add(now, this.principal.id, this.principal.group ?? null, this.pool, model, 0, tiers);
    return spend;
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

function sum(row: Mutable<LedgerRow>, requests: number, tiers: TokenTiers): void {
  row.requests += requests;
  row.input += tiers.input;
  row.output += tiers.output;
  row.cache_read += tiers.cache_read;
  row.cache_creation += tiers.cache_creation;
}

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
  /** The row the last add summed into, while it is still pending (flush lets go of it). */
  #last: Mutable<LedgerRow> | undefined;
  #rebound: LedgerRow[] = [];
  #rows = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> = Promise.resolve();
  /** Rows taken from the queue and not yet in the store: the batch being written, or kept after a failed write. */
  #outbox: LedgerRow[] = [];
  #unavailable = false;
  #retry: ReturnType<typeof setTimeout> | undefined;
  readonly outputs = new OutputEstimates();
  readonly inputScales = new InputScales();
  readonly #keptMax: number;

  constructor(deps: MeteringDeps) {
    this.#deps = deps;
    this.#keptMax = deps.maxUnsavedRows ?? 100_000;
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
  admit(principal: IngressPrincipal, pool: string, model: string, shape?: RequestShape): MeterResult | Promise<MeterResult> {
    if (principal.module !== "keys" && (principal.group === undefined || principal.group === null)) return NO_METER;
    // Past the bound a served request's rows could not be kept: refused unless the operator chose fail_open.
    if (this.#unavailable && this.#outbox.length + this.#rows >= this.#keptMax && this.#deps.onUnavailable !== "fail_open") return { ok: false, error: STORE_FULL };
    const group = principal.group ?? null;
    const now = this.now();
    if (group === null) return this.#admitted(principal, group, pool, model, shape, now, undefined);
    const estimate = shape && (() => reservationFor(this.pricing(), shape.pool, shape.body, shape.bodyBytes, requestedMaxOutput(shape.body) ?? this.outputs.of(pool), this.inputScales.of(pool)));
    const admitted = this.#deps.limits.admit(group, pool, this.pricing(), estimate, now);
    // A fleet's limited chain waits for its reservation in the shared counters; everything else answers now.
    if (admitted instanceof Promise) return admitted.then((result) => (result.ok ? this.#admitted(principal, group, pool, model, shape, now, result.admission) : result));
    if (!admitted.ok) return admitted;
    return this.#admitted(principal, group, pool, model, shape, now, admitted.admission);
  }

  #admitted(principal: IngressPrincipal, group: string | null, pool: string, model: string, shape: RequestShape | undefined, now: number, admission: Admission | undefined): MeterResult {
    const totals = this.totalsOf(principal.id, group, principal.labels ?? {});
    totals.spendMicros += spendMicros(this.pricing(), model, ZERO_TIERS, 1);
    this.add(now, principal.id, group, pool, model, 1, ZERO_TIERS);
    // Learnt from every grouped request (not only those a token cap reserves for), so a cap set later starts near.
    const sizeTokens = admission ? admission.sizeTokens || (shape?.bodyBytes ? estimateTokens(shape.bodyBytes) : 0) : 0;
    return { ok: true, meter: new Meter(this, principal, pool, admission, totals, sizeTokens) };
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
    this.add(row.ts, row.key_id, row.group_name, row.pool, row.model, row.requests, row);
  }

  /** queue's work without the row object: a request's rows are usually summed into one already held. */
  add(ts: number, keyId: string, group: string | null, pool: string, model: string, requests: number, tiers: TokenTiers): void {
    const second = ts - (ts % 1000);
    // A busy key's requests mostly land on the row the last one did: summed there without the four lookups.
    const last = this.#last;
    if (last !== undefined && last.ts === second && last.key_id === keyId && last.pool === pool && last.model === model && last.group_name === group) return sum(last, requests, tiers);
    const byKey = nested(this.#pending, second);
    const byPool = nested(byKey, keyId);
    const byModel = nested(byPool, pool);
    const held = byModel.get(model);
    if (held && held.group_name === group) {
      this.#last = held;
      return sum(held, requests, tiers);
    }
    const row = { ts: second, key_id: keyId, group_name: group, pool, model, requests, input: tiers.input, output: tiers.output, cache_read: tiers.cache_read, cache_creation: tiers.cache_creation };
    // A key re-bound to another group within the second keeps its rows apart.
    if (held) this.#rebound.push(row);
    else byModel.set(model, row);
    this.#last = row;
    this.#rows += 1;
    // While the store refuses writes only the retry timer writes, the kept rows and these together.
    if (this.#unavailable) return;
    if (this.#rows >= BATCH_ROWS) void this.flush();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => void this.flush(), this.#deps.flushMs ?? FLUSH_MS);
      // A pending batch must not keep a stopping process alive; shutdown flushes it.
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  /** Writes what is queued (and what earlier writes could not); resolves when that write is over. */
  flush(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#rows > 0) {
      const rows = this.#outbox;
      rows.push(...this.#rebound);
      for (const byKey of this.#pending.values()) for (const byPool of byKey.values()) for (const byModel of byPool.values()) rows.push(...byModel.values());
      this.#pending = new Map();
      // Taken to be written: never summed into again.
      this.#last = undefined;
      this.#rebound = [];
      this.#rows = 0;
    }
    if (this.#outbox.length === 0) return this.#writing;
    this.#writing = this.#writing.then(() => this.#write());
    return this.#writing;
  }

  /** Whether the last ledger write (or a fleet's last reservation) failed, until one succeeds: /healthz says degraded. */
  get unavailable(): boolean {
    return this.#unavailable || this.#deps.limits.unavailable || this.#deps.ledger.unavailable === true;
  }

  /** Rows the store has not taken yet (a stop with some left is not a clean one). */
  get keptRows(): number {
    return this.#outbox.length;
  }

  /** Rows of served requests not yet in the store: kept in memory, or in a fleet's spool. */
  get unsavedRows(): number {
    return this.#outbox.length + (this.#deps.ledger.spooledRows ?? 0);
  }

  async #write(): Promise<void> {
    const rows = this.#outbox;
    if (rows.length === 0) return;
    // Rows queued while this write runs go to a fresh outbox; on failure both are kept, oldest first.
    this.#outbox = [];
    try {
      await this.#deps.ledger.append(rows);
    } catch (error) {
      this.#outbox = rows.concat(this.#outbox);
      this.#failed(error);
      return;
    }
    if (this.#unavailable) {
      this.#unavailable = false;
      if (this.#retry !== undefined) clearTimeout(this.#retry);
      this.#retry = undefined;
      this.#deps.logger.warn("store available again: kept metering written", { rows: rows.length });
    }
  }

  #failed(error: unknown): void {
    if (!this.#unavailable) {
      this.#unavailable = true;
      this.#deps.logger.warn("store unavailable: ledger write failed; rows kept in memory and retried", { rows: this.#outbox.length, kept_max: this.#keptMax, on_unavailable: this.#deps.onUnavailable ?? "fail_closed", error });
    }
    const over = this.#outbox.length - this.#keptMax;
    // fail_closed admits nothing past the bound, so only requests already in flight add to it: all kept.
    if (over > 0 && this.#deps.onUnavailable === "fail_open") {
      this.#outbox.length = this.#keptMax;
      this.#deps.logger.error("store unavailable: metering rows past the bound dropped", { rows: over, kept_max: this.#keptMax });
    }
    if (this.#retry === undefined) {
      this.#retry = setTimeout(() => {
        this.#retry = undefined;
        void this.flush();
      }, RETRY_MS);
      (this.#retry as { unref?: () => void }).unref?.();
    }
  }
}
