// The routing engine's live state, which outlives config snapshots: per lane its in-flight count and
// ok/err/admitted counters (concurrency and the lifetime budget apply across all pools), and per
// (pool, lane) cell its breaker. Keyed by names, so a config swap keeps what a lane has learned.
import { Breaker, type BreakerClock, type BreakerState } from "./breaker.ts";
import type { Lane } from "./lane.ts";
import type { BreakerSettings } from "./pool.ts";

/** The cell direct routes and /stats share (no configured pool name can start with a parenthesis). */
export const LANE_DEFAULT_CELL = "(direct)";

export class LaneCounters {
  inflight = 0;
  ok = 0;
  err = 0;
  /** Requests admitted to the lane (its `max_requests` lifetime budget counts these). */
  admitted = 0;

  /** Whether the lane can take one more request now (concurrency cap and lifetime budget). */
  hasRoom(lane: Lane): boolean {
    return (lane.maxConcurrent === null || this.inflight < lane.maxConcurrent) && (lane.maxRequests === null || this.admitted < lane.maxRequests);
  }
}

export class RoutingState {
  private readonly counters = new Map<string, LaneCounters>();
  /** lane name -> pool name -> breaker. */
  private readonly cells = new Map<string, Map<string, Breaker>>();

  /** Told when any cell changes state (the admin plane's live feed); unset, a change costs one check. */
  onBreakerChange: ((pool: string, lane: string, state: BreakerState) => void) | undefined;

  constructor(readonly clock: BreakerClock) {}

  lane(name: string): LaneCounters {
    let counters = this.counters.get(name);
    if (!counters) this.counters.set(name, (counters = new LaneCounters()));
    return counters;
  }

  cell(pool: string, lane: string, settings: BreakerSettings): Breaker {
    let byPool = this.cells.get(lane);
    if (!byPool) this.cells.set(lane, (byPool = new Map()));
    let breaker = byPool.get(pool);
    if (!breaker) byPool.set(pool, (breaker = new Breaker(settings, this.clock, (state) => this.onBreakerChange?.(pool, lane, state))));
    else breaker.reconfigure(settings);
    return breaker;
  }

  /** Every cell of a lane that has seen traffic, by pool name (LANE_DEFAULT_CELL for direct routes). */
  cellsOf(lane: string): ReadonlyMap<string, Breaker> {
    return this.cells.get(lane) ?? EMPTY;
  }
}
const EMPTY: ReadonlyMap<string, Breaker> = new Map();
