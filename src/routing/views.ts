// What the routing engine shows operators: the /stats snapshot, /healthz's verdict and the
// gateway_lane_state gauge, all read from the live state at request time (nothing kept twice).
import type { Breaker, BreakerState } from "./breaker.ts";
import type { Lane } from "./lane.ts";
import type { BreakerSettings, Pool } from "./pool.ts";
import { LANE_DEFAULT_CELL, type RoutingState } from "./state.ts";

const STATE_CODE: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };

interface RoutingView {
  readonly lanes: ReadonlyMap<string, Lane>;
  readonly pools: ReadonlyMap<string, Pool>;
  readonly laneDefaults: { readonly breaker: BreakerSettings };
}

/** A cell as /stats shows it; a cell that has seen no traffic yet is a fresh Closed one. */
function cellView(breaker: Breaker | undefined, now: number) {
  return {
    state: breaker?.state ?? "closed",
    cooldown_remaining_s: breaker ? Math.ceil(breaker.cooldownRemainingMs(now) / 100) / 10 : 0,
    streak: breaker?.streak ?? 0,
  };
}

export function statsView(view: RoutingView, state: RoutingState) {
  const now = state.clock.now();
  const lanes = [...view.lanes.values()].map((lane) => {
    const counters = state.lane(lane.name);
    const cells = state.cellsOf(lane.name);
    const own = cells.get(LANE_DEFAULT_CELL);
    // A hard-down fault is about the provider's key, so any cell that has one marks the lane dead.
    const dead = [...cells.values()].find((b) => b.deadReason !== undefined && b.state !== "closed");
    return {
      lane: lane.name,
      model: lane.upstreamModel,
      provider: lane.provider.name,
      max_concurrent: lane.maxConcurrent,
      inflight: counters.inflight,
      free_slots: lane.maxConcurrent === null ? null : Math.max(0, lane.maxConcurrent - counters.inflight),
      ok: counters.ok,
      err: counters.err,
      usable: counters.hasRoom(lane) && (own?.available(now) ?? true),
      dead: dead !== undefined,
      dead_reason: dead?.deadReason ?? null,
      ...cellView(own, now),
      budget: lane.maxRequests === null ? null : Math.max(0, lane.maxRequests - counters.admitted),
    };
  });
  const pools = Object.fromEntries(
    [...view.pools.values()]
      .filter((pool) => !pool.implicit)
      .map((pool) => [
        pool.name,
        {
          on_exhausted: pool.onExhausted,
          members: pool.members.map(({ lane, weight }) => {
            const breaker = state.cellsOf(lane.name).get(pool.name);
            return { lane: lane.name, weight, usable: state.lane(lane.name).hasRoom(lane) && (breaker?.available(now) ?? true), ...cellView(breaker, now) };
          }),
        },
      ]),
  );
  return { lanes, pools };
}

/** /healthz: some pool has a member that could take a request now. */
export function anyLaneUsable(view: RoutingView, state: RoutingState): boolean {
  const now = state.clock.now();
  for (const pool of view.pools.values()) {
    for (const { lane } of pool.members) {
      if (state.lane(lane.name).hasRoom(lane) && (state.cellsOf(lane.name).get(pool.name)?.available(now) ?? true)) return true;
    }
  }
  return false;
}

/** gateway_lane_state: every (pool, member) cell of the config, plus the lane-default cells in use. */
export function* laneStates(view: RoutingView, state: RoutingState): Iterable<{ labels: { pool: string; lane: string }; value: number }> {
  for (const pool of view.pools.values()) {
    for (const { lane } of pool.members) yield { labels: { pool: pool.name, lane: lane.name }, value: STATE_CODE[state.cellsOf(lane.name).get(pool.name)?.state ?? "closed"] };
  }
  for (const lane of view.lanes.values()) {
    const own = state.cellsOf(lane.name).get(LANE_DEFAULT_CELL);
    if (own) yield { labels: { pool: LANE_DEFAULT_CELL, lane: lane.name }, value: STATE_CODE[own.state] };
  }
}
