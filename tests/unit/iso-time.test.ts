// isoTime must write exactly what Date#toISOString writes, whatever second it is asked about in any order.
import { expect, test } from "bun:test";
import { isoTime } from "../../src/telemetry/iso-time.ts";

test("the same text as toISOString, across seconds, backwards and at the edges", () => {
  const base = Date.UTC(2026, 10, 26, 23, 59, 59, 0);
  const times = [base, base + 1, base + 9, base + 10, base + 99, base + 100, base + 999, base + 1000, base - 1, base + 86_400_000, 0, 999, 1000, 253402300799999, base + 0.7];
  for (const ms of times) expect(isoTime(ms)).toBe(new Date(Math.floor(ms)).toISOString());
  for (let i = 0; i < 5000; i++) {
    const ms = base + Math.floor(Math.random() * 10_000_000) - 5_000_000;
    expect(isoTime(ms)).toBe(new Date(ms).toISOString());
  }
});

test("years past 9999 fall back to toISOString's own form", () => {
  const far = Date.UTC(12000, 0, 1, 0, 0, 0, 5);
  expect(isoTime(far)).toBe(new Date(far).toISOString());
  expect(isoTime(far + 1)).toBe(new Date(far + 1).toISOString());
});
