// The circuit breaker of one (pool, lane) cell: the spec's state table ("Circuit breaker (per pool and
// lane)") as a small state machine over an injected clock and random source, so tests never sleep.
//
//   Closed --failure, trip met (error_rate over window_secs after min_requests, or consecutive_n)--> Open
//   Closed --failure below the trip--> Closed, short cooldown armed (the lane is briefly skipped)
//   any    --hard-down fault (credential, quota)--> Open for 30 minutes (sticky, not permanent)
//   Open   --cooldown over, next selection--> HalfOpen: exactly one probe admitted
//   HalfOpen --probe ok--> Closed (streak, window, escalation cleared) | --probe fails--> Open, escalated
//   Open or Closed --successful active health probe--> Closed
//   Open   --failure of a request admitted before the trip--> Open (an outcome, not another trip)
//
// Cooldowns (docs/operations.md "Breakers"): an Open cooldown is base_cooldown_secs doubled per trip
// since the cell last closed, up to max_cooldown_secs; the short cooldown of a failure below the trip is
// 1 s doubled per failure in the streak, up to base_cooldown_secs. Both carry +/-10% jitter, and an
// upstream Retry-After is a floor even above the max.
import type { BreakerSettings } from "./pool.ts";

export type BreakerState = "closed" | "half_open" | "open";
export const HARD_DOWN_MS = 30 * 60 * 1000;
const SHORT_COOLDOWN_BASE_MS = 1000;
const WINDOW_BUCKETS = 20;
const bucketWidth = (settings: BreakerSettings) => Math.max(1, (settings.window_secs * 1000) / WINDOW_BUCKETS);

/** What a failure does to the breaker (a caller fault or a context-length overflow is no failure). */
export type BreakerFault = { readonly kind: "transient"; readonly retryAfterSecs?: number } | { readonly kind: "hard_down"; readonly reason: string };

export interface BreakerClock {
  now(): number;
  /** Uniform in [0, 1). */
  random(): number;
}

export class Breaker {
  #state: BreakerState = "closed";
  /** Consecutive failures (any success resets it). */
  streak = 0;
  /** Epoch ms until which the cell is skipped (Open, or Closed with a short cooldown). */
  cooldownUntil = 0;
  /** Set while a hard-down fault keeps the cell Open: why (for /stats `dead_reason`). */
  deadReason: string | undefined;
  /** Trips since the cell last closed: each doubles the next Open cooldown. */
  private trips = 0;
  private probing = false;
  /** Outcomes inside window_secs, in WINDOW_BUCKETS time buckets (fixed memory whatever the traffic). */
  private readonly epochs = new Array<number>(WINDOW_BUCKETS).fill(-Infinity);
  private readonly oks = new Array<number>(WINDOW_BUCKETS).fill(0);
  private readonly fails = new Array<number>(WINDOW_BUCKETS).fill(0);
  private bucketMs: number;

  constructor(
    private settings: BreakerSettings,
    private readonly clock: BreakerClock,
    /** Told each change of state (GET /events); a state written again unchanged is no change. */
    private readonly changed?: (state: BreakerState) => void,
  ) {
    this.bucketMs = bucketWidth(settings);
  }

  get state(): BreakerState {
    return this.#state;
  }

  #become(state: BreakerState): void {
    if (state === this.#state) return;
    this.#state = state;
    this.changed?.(state);
  }

  /** A config swap gives the pool new settings; the cell keeps its state (a changed window starts afresh). */
  reconfigure(settings: BreakerSettings): void {
    if (settings === this.settings) return;
    const width = bucketWidth(settings);
    if (width !== this.bucketMs) {
      this.bucketMs = width;
      this.epochs.fill(-Infinity);
    }
    this.settings = settings;
  }

  /** Whether selection may try this cell now, without changing it. */
  available(now = this.clock.now()): boolean {
    if (this.state === "half_open") return !this.probing;
    return now >= this.cooldownUntil;
  }

  /**
   * Called when a request is about to go to this cell. An Open cell whose cooldown is over becomes
   * HalfOpen and admits this request as its one probe; a second caller is refused until it settles.
   */
  admit(now = this.clock.now()): boolean {
    if (this.state === "half_open") {
      if (this.probing) return false;
      this.probing = true;
      return true;
    }
    if (now < this.cooldownUntil) return false;
    if (this.state === "open") {
      this.#become("half_open");
      this.probing = true;
    }
    return true;
  }

  /** `least_bad` serves a cell whose cooldown is not over: it goes as a probe when the cell is not Closed. */
  force(): void {
    if (this.state === "closed") return;
    this.#become("half_open");
    this.probing = true;
  }

  /** The admitted request ended without a verdict (the client left): a probe slot opens again. */
  abandon(): void {
    this.probing = false;
  }

  success(now = this.clock.now()): void {
    if (this.state !== "closed") {
      this.close();
      return;
    }
    this.streak = 0;
    this.cooldownUntil = 0;
    this.record(now, false);
  }

  /** Returns true when this failure tripped the cell Open (for gateway_breaker_trips_total). */
  failure(fault: BreakerFault, now = this.clock.now()): boolean {
    this.streak += 1;
    if (fault.kind === "hard_down") {
      this.record(now, true);
      this.open(now, HARD_DOWN_MS, fault.reason);
      return true;
    }
    const floorMs = (fault.retryAfterSecs ?? 0) * 1000;
    if (this.state === "open") {
      // A request admitted before the cell tripped failed after it: one more outcome, not another trip.
      this.record(now, true);
      this.cooldownUntil = Math.max(this.cooldownUntil, now + floorMs);
      return false;
    }
    if (this.state === "half_open") {
      this.trips += 1;
      this.open(now, Math.max(this.openCooldownMs(), floorMs));
      return true;
    }
    this.record(now, true);
    if (this.tripped(now)) {
      this.trips += 1;
      this.open(now, Math.max(this.openCooldownMs(), floorMs));
      return true;
    }
    const short = Math.min(SHORT_COOLDOWN_BASE_MS * 2 ** (this.streak - 1), this.settings.base_cooldown_secs * 1000);
    this.cooldownUntil = Math.max(this.cooldownUntil, now + Math.max(this.jitter(short), floorMs));
    return false;
  }

  /** A successful active health probe closes the cell whatever its state. */
  close(): void {
    this.#become("closed");
    this.streak = 0;
    this.trips = 0;
    this.cooldownUntil = 0;
    this.deadReason = undefined;
    this.probing = false;
    this.epochs.fill(-Infinity);
  }

  cooldownRemainingMs(now = this.clock.now()): number {
    return Math.max(0, this.cooldownUntil - now);
  }

  private open(now: number, cooldownMs: number, deadReason?: string): void {
    this.#become("open");
    this.probing = false;
    this.cooldownUntil = now + cooldownMs;
    this.deadReason = deadReason;
  }

  private openCooldownMs(): number {
    const { base_cooldown_secs: base, max_cooldown_secs: max } = this.settings;
    return this.jitter(Math.min(base * 2 ** Math.max(0, this.trips - 1), max) * 1000);
  }

  private jitter(ms: number): number {
    return ms * (0.9 + 0.2 * this.clock.random());
  }

  private record(now: number, failed: boolean): void {
    const epoch = Math.floor(now / this.bucketMs);
    const i = epoch % WINDOW_BUCKETS;
    if (this.epochs[i] !== epoch) [this.epochs[i], this.oks[i], this.fails[i]] = [epoch, 0, 0];
    if (failed) this.fails[i]! += 1;
    else this.oks[i]! += 1;
  }

  /** The window's outcomes: buckets younger than window_secs (the oldest bucket may reach a little past it). */
  private tripped(now: number): boolean {
    if (this.streak >= this.settings.consecutive_n) return true;
    const oldest = Math.floor(now / this.bucketMs) - WINDOW_BUCKETS + 1;
    let total = 0;
    let failed = 0;
    for (let i = 0; i < WINDOW_BUCKETS; i++) {
      if (this.epochs[i]! < oldest) continue;
      total += this.oks[i]! + this.fails[i]!;
      failed += this.fails[i]!;
    }
    return total >= this.settings.min_requests && failed / total >= this.settings.error_rate;
  }
}
