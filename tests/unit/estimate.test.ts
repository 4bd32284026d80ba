// withEstimate (src/ir/estimate.ts): what an upstream left at zero is estimated, and the request is
// measured only then (a translated stream passes the measurement as a function: issue 15).
import { describe, expect, test } from "bun:test";
import { ZERO_USAGE, type IrUsage } from "../../src/ir/index.ts";
import { withEstimate } from "../../src/ir/estimate.ts";

const reported: IrUsage = { ...ZERO_USAGE, inputNoCache: 52, output: 86 };

describe("withEstimate", () => {
  test("usage the upstream reported whole is kept as it is, and a request measured lazily is not measured", () => {
    let measured = 0;
    const out = withEstimate(reported, () => (measured += 1, 400), 100);
    expect(out).toEqual({ usage: reported, estimated: false });
    expect(measured).toBe(0);
  });

  test("input left at zero is estimated from the request's size, measured once, whether given as a number or a function", () => {
    let measured = 0;
    const usage = { ...reported, inputNoCache: 0 };
    const lazy = withEstimate(usage, () => (measured += 1, 401), 100);
    expect(lazy).toEqual({ usage: { ...usage, inputNoCache: 101 }, estimated: true });
    expect(measured).toBe(1);
    expect(withEstimate(usage, 401, 100)).toEqual(lazy);
  });

  test("output left at zero is estimated from the answer's size; the request is not measured for it", () => {
    let measured = 0;
    const out = withEstimate({ ...reported, output: 0 }, () => (measured += 1, 400), 10);
    expect(out).toEqual({ usage: { ...reported, output: 3 }, estimated: true });
    expect(measured).toBe(0);
  });
});
