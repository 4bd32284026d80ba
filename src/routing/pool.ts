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
 * The members in a weighted random order (Efraimidis-Spirakis: each key is u^(1/weight), highest
 * first), so the first pick follows the weights and failover goes on down the same draw. The random
 * source is injected; a one-member pool costs no draw.
 */
export function weightedOrder(members: readonly PoolMember[], random: () => number): readonly PoolMember[] {
  if (members.length <= 1) return members;
  const keyed = members.map((member) => ({ member, key: Math.pow(random(), 1 / member.weight) }));
  keyed.sort((a, b) => b.key - a.key);
  return keyed.map((k) => k.member);
}
