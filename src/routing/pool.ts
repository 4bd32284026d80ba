// A pool is a weighted set of lanes. The client's `model` names a pool; a model alias that is not a
// pool gets an implicit one-lane pool, built at config load so the request path only looks it up.
import type { Lane } from "./lane.ts";

export interface PoolMember {
  readonly lane: Lane;
  readonly weight: number;
}

export interface BreakerSettings {
  readonly error_rate: number;
  readonly window_secs: number;
  readonly min_requests: number;
  readonly consecutive_n: number;
  readonly base_cooldown_secs: number;
  readonly max_cooldown_secs: number;
}

export interface FailoverSettings {
  readonly max_hops: number;
  readonly timeout_secs: number;
}

export interface Pool {
  readonly name: string;
  readonly members: readonly PoolMember[];
  readonly breaker: BreakerSettings;
  readonly failover: FailoverSettings;
  readonly onExhausted: string;
  readonly hooks: readonly string[];
  /** True for the one-lane pool of a model alias that no pool names. */
  readonly implicit: boolean;
}

/**
 * Whether any lane can take a request now. Breakers and concurrency caps join this with the routing
 * engine; until then every configured lane is usable, and a gateway with no lane is not.
 */
export function anyLaneUsable(pools: ReadonlyMap<string, Pool>): boolean {
  for (const pool of pools.values()) if (pool.members.length > 0) return true;
  return false;
}
