// The usage views (GET /keys/{id}/usage, /groups/{name}/usage, /usage/keys, /usage/series, /usage/today),
// derived at read time from the ledger and the current rate card; the boot-time restore of the limit
// counters and key totals from the same ledger; and the gateway_key_* series.
import type { ConfigHolder } from "../config/snapshot.ts";
import { GatewayError } from "../http/errors.ts";
import type { LedgerReadOptions, LedgerStore, LedgerSum } from "../store/ledger.ts";
import { ReadRefused } from "../store/read-worker.ts";
import type { MetricsRegistry } from "../telemetry/metrics.ts";
import type { GroupService } from "./groups.ts";
import { isWindowLimit, type Limit, type LimitEngine } from "./limits.ts";
import type { KeyTotals, Metering } from "./metering.ts";
import { centsOf, spendMicros, tokensOf } from "./rate-card.ts";
import type { LedgerDimension } from "../store/ledger-series.ts";
import { readSeries, type UsageRange } from "./usage-series.ts";
import { windowStart, type LimitWindow } from "./windows.ts";

/** What the usage views need of a key; `name` null once the key is deleted (tombstoned). */
export interface KeyInfo {
  readonly name: string | null;
  readonly group: string | null;
  readonly labels: Readonly<Record<string, string>>;
}
export type KeyLookup = (id: string) => KeyInfo | undefined;

/** One enforcement bucket of a group: the caps of its limits that share a (window, pool). */
export interface ResolvedBucket {
  readonly window: LimitWindow;
  readonly pool: string | null;
  readonly requests_cap: number | null;
  readonly tokens_cap: number | null;
  readonly budget_cap: number | null;
}

const tighter = (a: number | null, b: number | null | undefined) => (b == null ? a : a === null ? b : Math.min(a, b));

/** A group's own windowed limits merged by (window, pool), in the order each first appears. */
export function resolvedBuckets(limits: readonly Limit[]): ResolvedBucket[] {
  const out: ResolvedBucket[] = [];
  for (const limit of limits) {
    if (!isWindowLimit(limit)) continue;
    const pool = limit.pool ?? null;
    const at = out.findIndex((b) => b.window === limit.window && b.pool === pool);
    const base = at === -1 ? { window: limit.window, pool, requests_cap: null, tokens_cap: null, budget_cap: null } : out[at]!;
    const merged = { ...base, requests_cap: tighter(base.requests_cap, limit.requests), tokens_cap: tighter(base.tokens_cap, limit.tokens), budget_cap: tighter(base.budget_cap, limit.budget_cents) };
    if (at === -1) out.push(merged);
    else out[at] = merged;
  }
  return out;
}

export interface UsageDeps {
  readonly holder: ConfigHolder;
  readonly groups: GroupService;
  readonly limits: LimitEngine;
  readonly metering: Metering;
  readonly ledger: LedgerStore;
  readonly keyLookup: KeyLookup;
  /** Epoch milliseconds. */
  readonly now: () => number;
}

interface Totals {
  requests: number;
  tokens: number;
  spendMicros: number;
}

export class UsageService {
  constructor(private readonly deps: UsageDeps) {}

  private totals(sums: readonly LedgerSum[]): Totals {
    const pricing = this.deps.holder.current.config;
    const totals: Totals = { requests: 0, tokens: 0, spendMicros: 0 };
    for (const s of sums) {
      totals.requests += s.requests;
      totals.tokens += tokensOf(s);
      totals.spendMicros += spendMicros(pricing, s.model, s, s.requests);
    }
    return totals;
  }

  /** Ledger sums after every queued row is written, so a view includes the requests just served. */
  private async sums(query: Parameters<LedgerStore["sums"]>[0], options?: LedgerReadOptions): Promise<LedgerSum[]> {
    await this.deps.metering.flush();
    return viewRead(this.deps.ledger.sums(query, options));
  }

  async groupUsage(name: string) {
    const group = this.deps.groups.get(name);
    if (!group) throw new GatewayError("not_found", `no group ${name}`);
    const now = this.deps.now();
    const members = this.deps.groups.subtree(name);
    const buckets = [];
    for (const b of resolvedBuckets(group.limits)) {
      const t = this.totals(await this.sums({ from: windowStart(b.window, now), groups: members, ...(b.pool !== null && { pool: b.pool }) }));
      const spendCents = centsOf(t.spendMicros);
      buckets.push({
        window: b.window,
        ...(b.pool !== null && { pool: b.pool }),
        requests: t.requests,
        tokens: t.tokens,
        spend_cents: spendCents,
        requests_cap: b.requests_cap,
        tokens_cap: b.tokens_cap,
        budget_cap: b.budget_cap,
        ...(b.budget_cap !== null && { budget_remaining_cents: Math.max(0, b.budget_cap - spendCents) }),
      });
    }
    return { group: name, enabled: group.enabled, buckets, as_of: Math.floor(now / 1000) };
  }

  async keyMetering(id: string) {
    const key = this.deps.keyLookup(id);
    if (!key) throw new GatewayError("not_found", `no key ${id}`);
    const t = this.totals(await this.sums({ key: id }));
    return {
      id,
      budget_period: "total" as const,
      window_start: 0,
      as_of: Math.floor(this.deps.now() / 1000),
      group: key.group,
      spend_cents: centsOf(t.spendMicros),
      tokens: t.tokens,
      requests: t.requests,
      rate_headroom: key.group === null ? null : this.deps.limits.rateHeadroom(key.group),
    };
  }

  /** KeyUsageView rows of [fromSecs, toSecs), by spend_micros descending. */
  async keyUsage(fromSecs: number | undefined, toSecs: number | undefined) {
    if (fromSecs !== undefined && toSecs !== undefined && fromSecs > toSecs) throw new GatewayError("invalid_request", "from: must not be after to");
    const sums = await this.sums({ ...(fromSecs !== undefined && { from: fromSecs * 1000 }), ...(toSecs !== undefined && { to: toSecs * 1000 }) });
    const pricing = this.deps.holder.current.config;
    const rows = new Map<string, { id: string; name: string | null; tokens_input: number; tokens_output: number; tokens_cache_read: number; tokens_cache_creation: number; requests: number; spend_micros: number; last_used_at: number | null }>();
    for (const s of sums) {
      let row = rows.get(s.key_id);
      if (!row) {
        row = { id: s.key_id, name: this.deps.keyLookup(s.key_id)?.name ?? null, tokens_input: 0, tokens_output: 0, tokens_cache_read: 0, tokens_cache_creation: 0, requests: 0, spend_micros: 0, last_used_at: null };
        rows.set(s.key_id, row);
      }
      row.tokens_input += s.input;
      row.tokens_output += s.output;
      row.tokens_cache_read += s.cache_read;
      row.tokens_cache_creation += s.cache_creation;
      row.requests += s.requests;
      row.spend_micros += spendMicros(pricing, s.model, s, s.requests);
      if (s.last_ts !== undefined && s.last_ts !== null) row.last_used_at = Math.max(row.last_used_at ?? 0, Math.floor(Number(s.last_ts) / 1000));
    }
    return { items: [...rows.values()].sort((a, b) => b.spend_micros - a.spend_micros || (a.id < b.id ? -1 : 1)) };
  }

  /** The range's series by model, key id or group: the top 20 by spend, the rest as "(other)" (usage-series.ts); `keyId`: that key's rows only. */
  async series(by: LedgerDimension, range: UsageRange, keyId?: string) {
    await this.deps.metering.flush();
    return viewRead(readSeries(this.deps.ledger, this.deps.holder.current.config, by, range, this.deps.now(), keyId));
  }

  /** The whole store's (a fleet's) requests, tokens and spend since 00:00 UTC today. */
  async today() {
    const from = windowStart("day", this.deps.now());
    const t = this.totals(await this.sums({ from }));
    return { from: from / 1000, requests: t.requests, tokens: t.tokens, spend_cents: centsOf(t.spendMicros) };
  }

  /**
   * Boot: the current window of every limit bucket, and each key's totals, summed back from the ledger,
   * so a restart does not hand out a fresh budget or minute.
   */
  async restore(): Promise<void> {
    const now = this.deps.now();
    for (const group of this.deps.groups.tree().values()) {
      const members = this.deps.groups.subtree(group.name);
      for (const b of resolvedBuckets(group.limits)) {
        const t = this.totals(await this.sums({ from: windowStart(b.window, now), groups: members, ...(b.pool !== null && { pool: b.pool }) }, BOOT));
        this.deps.limits.restore(group.name, b.window, b.pool, t);
      }
    }
    const pricing = this.deps.holder.current.config;
    for (const s of await this.sums({}, BOOT)) {
      const key = this.deps.keyLookup(s.key_id);
      const totals = this.deps.metering.totalsOf(s.key_id, key?.group ?? null, key?.labels ?? {});
      totals.tokens += tokensOf(s);
      totals.spendMicros += spendMicros(pricing, s.model, s, s.requests);
    }
  }

  /**
   * gateway_key_spend_cents, gateway_key_budget_remaining_cents, gateway_key_tokens_total: series `key`
   * plus the key's own labels. `enabled` says whether they are exposed (spec: only with governance, i.e.
   * while `keys` is in auth.chain), asked at each scrape so a reload that adds or drops keys is followed.
   */
  registerMetrics(registry: MetricsRegistry, enabled: () => boolean): void {
    const metering = this.deps.metering;
    const series = (value: (id: string, totals: KeyTotals) => number | null) =>
      function* () {
        for (const [id, totals] of metering.keyTotals()) {
          const v = value(id, totals);
          if (v !== null) yield { labels: keyLabels(id, totals.labels), value: v };
        }
      };
    const options = { extraLabels: true, enabled };
    registry.gauge("gateway_key_spend_cents", "Spend of each virtual key in its budget period (total), in whole cost units.", ["key"], series((_, t) => centsOf(t.spendMicros)), options);
    registry.gauge("gateway_key_budget_remaining_cents", "Least budget left up a key's group chain (keys whose chain has a budget cap).", ["key"], series((_, t) => {
      const left = t.group === null ? null : this.deps.limits.budgetRemainingMicros(t.group);
      return left === null ? null : centsOf(left);
    }), options);
    // A gauge (the spec's type: it falls back when a budget period turns over) although its name ends in
    // _total, which `promtool check metrics` reports as a lint problem; the spec fixes both.
    registry.gauge("gateway_key_tokens_total", "Tokens (all tiers) used by each virtual key in its budget period (total).", ["key"], series((_, t) => t.tokens), options);
  }
}

const BOOT: LedgerReadOptions = { boot: true };

/**
 * A ledger read the store refused (sqlite's read worker: too many waiting, too slow, closing) as the
 * admin error saying so (429 or 503, with Retry-After), never a hang.
 */
async function viewRead<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (error) {
    if (!(error instanceof ReadRefused)) throw error;
    const message = `usage read refused: ${error.message}`;
    if (error.reason === "busy") throw new GatewayError("rate_limited", message, { headers: { "retry-after": "5" } });
    throw new GatewayError("internal", error.reason === "timeout" ? `${message}; choose a shorter range` : message, { status: 503, headers: { "retry-after": "5" } });
  }
}

/** `key` first, then the key's own labels as Prometheus label names allow (others are dropped). */
function keyLabels(id: string, labels: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = { key: id };
  for (const [name, value] of Object.entries(labels)) {
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !name.startsWith("__") && name !== "key") out[name] = value;
  }
  return out;
}
