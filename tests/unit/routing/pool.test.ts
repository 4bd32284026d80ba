// weightedOrder: the Efraimidis-Spirakis draw behind the weighted pick, on a seeded random source.
import { describe, expect, test } from "bun:test";
import { weightedOrder, type PoolMember } from "../../../src/routing/pool.ts";
import { lane, mulberry32 } from "./fakes.ts";

const members = (...weights: number[]): PoolMember[] => weights.map((weight, i) => ({ lane: lane(String.fromCharCode(65 + i)), weight }));
const names = (order: readonly PoolMember[]) => order.map((m) => m.lane.name).join("");

/** How often each full order (as "ABC") comes out of `draws` draws. */
function frequencies(pool: PoolMember[], draws: number, seed: number) {
  const random = mulberry32(seed);
  const seen = new Map<string, number>();
  for (let i = 0; i < draws; i++) {
    const key = names(weightedOrder(pool, random));
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return (key: string) => (seen.get(key) ?? 0) / draws;
}

function firstPicks(pool: PoolMember[], draws: number, seed: number): Map<string, number> {
  const random = mulberry32(seed);
  const counts = new Map<string, number>();
  for (let i = 0; i < draws; i++) {
    const first = weightedOrder(pool, random)[0]!.lane.name;
    counts.set(first, (counts.get(first) ?? 0) + 1);
  }
  return counts;
}

describe("weightedOrder", () => {
  test("the first pick follows the weights (seeded, several seeds)", () => {
    const pool = members(1, 2, 3, 4);
    for (const seed of [1, 2, 3]) {
      const counts = firstPicks(pool, 8000, seed);
      for (const { lane, weight } of pool) expect(Math.abs((counts.get(lane.name) ?? 0) / 8000 - weight / 10)).toBeLessThan(0.025);
    }
  });

  test("a 3:1 split and fractional weights", () => {
    const counts = firstPicks(members(3, 1), 4000, 11);
    expect(Math.abs(counts.get("A")! / 4000 - 0.75)).toBeLessThan(0.025);
    const fractional = firstPicks(members(0.2, 0.8), 4000, 12);
    expect(Math.abs(fractional.get("B")! / 4000 - 0.8)).toBeLessThan(0.025);
  });

  test("equal weights are uniform", () => {
    const counts = firstPicks(members(1, 1, 1, 1, 1), 10_000, 5);
    for (const name of "ABCDE") expect(Math.abs(counts.get(name)! / 10_000 - 0.2)).toBeLessThan(0.02);
  });

  test("the rest of the order is weighted sampling without replacement (failover goes down the same draw)", () => {
    // P(order) = product over positions of weight / weight still left; weights A=1, B=2, C=3.
    const freq = frequencies(members(1, 2, 3), 20_000, 77);
    const expected: Record<string, number> = { CBA: (3 / 6) * (2 / 3), CAB: (3 / 6) * (1 / 3), BCA: (2 / 6) * (3 / 4), BAC: (2 / 6) * (1 / 4), ACB: (1 / 6) * (3 / 5), ABC: (1 / 6) * (2 / 5) };
    for (const [order, p] of Object.entries(expected)) expect(Math.abs(freq(order) - p)).toBeLessThan(0.015);
  });

  test("every order is a permutation of the members, and the input is left as it was", () => {
    const pool = members(5, 1, 1, 2, 0.5, 3);
    const before = names(pool);
    const random = mulberry32(3);
    for (let i = 0; i < 2000; i++) {
      const order = weightedOrder(pool, random);
      expect(order).toHaveLength(pool.length);
      expect(new Set(order).size).toBe(pool.length);
      for (const m of order) expect(pool).toContain(m);
    }
    expect(names(pool)).toBe(before);
  });

  test("one draw per member; the same seed gives the same orders", () => {
    let draws = 0;
    const seeded = mulberry32(8);
    const counting = () => (draws++, seeded());
    const pool = members(1, 2, 3, 4);
    const a = Array.from({ length: 50 }, () => names(weightedOrder(pool, counting)));
    expect(draws).toBe(200);
    const again = mulberry32(8);
    expect(Array.from({ length: 50 }, () => names(weightedOrder(pool, again)))).toEqual(a);
  });

  test("a one-member pool (and an empty one) makes no draw", () => {
    const never = () => {
      throw new Error("drew");
    };
    const one = members(7);
    expect(weightedOrder(one, never)).toBe(one);
    expect(weightedOrder([], never)).toEqual([]);
  });

  test("the highest key goes first: a draw near 1 on a member puts it first", () => {
    const pool = members(1, 1, 1);
    const script = [0.1, 0.99, 0.5];
    expect(names(weightedOrder(pool, () => script.shift()!))).toBe("BCA");
  });
});
