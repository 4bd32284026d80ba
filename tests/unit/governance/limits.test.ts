// Group limits with a fake clock: UTC window alignment (month ends, leap years), bucket arithmetic,
// AND up a three-level chain, per-pool buckets, concurrency, and spend from the rate card.
import { describe, expect, test } from "bun:test";
import { LimitEngine, type GroupNode, type Limit } from "../../../src/governance/limits.ts";
import { centsOf, spendMicros } from "../../../src/governance/rate-card.ts";
import { secondsUntilEnd, windowEnd, windowStart } from "../../../src/governance/windows.ts";

const at = (iso: string) => Date.parse(iso);

describe("windows are calendar-aligned in UTC", () => {
  test("minute, hour and day start on the boundary and end one unit later", () => {
    const t = at("2025-03-14T15:09:26.535Z");
    expect(windowStart("minute", t)).toBe(at("2025-03-14T15:09:00Z"));
    expect(windowEnd("minute", t)).toBe(at("2025-03-14T15:10:00Z"));
    expect(windowStart("hour", t)).toBe(at("2025-03-14T15:00:00Z"));
    expect(windowEnd("hour", t)).toBe(at("2025-03-14T16:00:00Z"));
    expect(windowStart("day", t)).toBe(at("2025-03-14T00:00:00Z"));
    expect(windowEnd("day", t)).toBe(at("2025-03-15T00:00:00Z"));
  });

  test("an instant exactly on a boundary opens the new window", () => {
    const t = at("2025-03-14T15:10:00Z");
    expect(windowStart("minute", t)).toBe(t);
    expect(windowEnd("minute", t - 1)).toBe(t);
  });

  test("months start on the 1st and know their length, leap years included", () => {
    expect(windowStart("month", at("2024-02-29T23:59:59Z"))).toBe(at("2024-02-01T00:00:00Z"));
    expect(windowEnd("month", at("2024-02-29T23:59:59Z"))).toBe(at("2024-03-01T00:00:00Z"));
    expect(windowEnd("month", at("2023-02-15T00:00:00Z"))).toBe(at("2023-03-01T00:00:00Z"));
    expect(windowEnd("month", at("2025-12-31T23:59:59.999Z"))).toBe(at("2026-01-01T00:00:00Z"));
    expect(windowStart("month", at("2026-01-01T00:00:00Z"))).toBe(at("2026-01-01T00:00:00Z"));
    expect(windowEnd("month", at("2025-04-30T12:00:00Z"))).toBe(at("2025-05-01T00:00:00Z"));
  });

  test("total never rolls over", () => {
    expect(windowStart("total", at("2030-01-01T00:00:00Z"))).toBe(0);
    expect(windowEnd("total", at("2030-01-01T00:00:00Z"))).toBe(Infinity);
  });

  test("Retry-After is the whole seconds to the window's end, at least 1", () => {
    expect(secondsUntilEnd("minute", at("2025-03-14T15:09:26.500Z"))).toBe(34);
    expect(secondsUntilEnd("minute", at("2025-03-14T15:09:59.999Z"))).toBe(1);
    expect(secondsUntilEnd("day", at("2025-03-14T23:00:00Z"))).toBe(3600);
  });
});

/** A tree from [name, parent, limits, enabled?] rows. */
function tree(...rows: [string, string | null, Limit[], boolean?][]): Map<string, GroupNode> {
  return new Map(rows.map(([name, parent, limits, enabled]) => [name, { name, parent, enabled: enabled ?? true, limits, child_default: null, source: "api" as const }]));
}

function engine(groups: Map<string, GroupNode>, start = "2025-03-14T15:09:00Z") {
  const clock = { now: at(start) };
  const limits = new LimitEngine(() => clock.now, () => groups);
  return { clock, limits };
}

const FREE = { rate_card: {}, per_request_fee: 0 };
const NO_TOKENS = { input: 0, output: 0, cache_read: 0, cache_creation: 0 };

describe("bucket arithmetic", () => {
  test("a minute request cap admits N, refuses the next with Retry-After, and opens at the next minute", () => {
    const { clock, limits } = engine(tree(["team", null, [{ window: "minute", requests: 2 }]]), "2025-03-14T15:09:40Z");
    expect(limits.admitHere("team", "chat", FREE).ok).toBe(true);
    expect(limits.admitHere("team", "chat", FREE).ok).toBe(true);
    const third = limits.admitHere("team", "chat", FREE);
    expect(third.ok).toBe(false);
    if (third.ok) return;
    expect(third.error.kind).toBe("rate_limit");
    expect(third.error.status).toBe(429);
    expect(third.error.retryAfterSecs).toBe(20);
    clock.now = at("2025-03-14T15:10:00Z");
    expect(limits.admitHere("team", "chat", FREE).ok).toBe(true);
  });

  test("failures are not refunded: ending an admission frees no request", () => {
    const { limits } = engine(tree(["team", null, [{ window: "hour", requests: 1 }]]));
    const first = limits.admitHere("team", "chat", FREE);
    if (!first.ok) throw new Error("refused");
    first.admission.end();
    expect(limits.admitHere("team", "chat", FREE).ok).toBe(false);
  });

  test("tokens are charged at usage time and refuse once the cap is reached", () => {
    const { limits } = engine(tree(["team", null, [{ window: "minute", tokens: 100 }]]));
    const a = limits.admitHere("team", "chat", FREE);
    if (!a.ok) throw new Error("refused");
    // A request in flight still admits others: tokens are unknown until the answer.
    expect(limits.admitHere("team", "chat", FREE).ok).toBe(true);
    a.admission.charge({ ...NO_TOKENS, input: 60, output: 40 }, 0, at("2025-03-14T15:09:10Z"));
    const refused = limits.admitHere("team", "chat", FREE);
    expect(refused.ok || refused.error.kind).toBe("rate_limit");
    expect(limits.rateHeadroom("team")).toBe(0);
  });

  test("an exhausted budget answers insufficient_quota, which outranks a rate refusal", () => {
    const { limits } = engine(tree(["team", null, [{ window: "minute", requests: 1 }, { window: "day", budget_cents: 5 }]]));
    const a = limits.admitHere("team", "chat", FREE);
    if (!a.ok) throw new Error("refused");
    a.admission.charge(NO_TOKENS, 5_000_000, at("2025-03-14T15:09:01Z"));
    const refused = limits.admitHere("team", "chat", FREE);
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.error.kind).toBe("insufficient_quota");
    expect(refused.error.retryAfterSecs).toBeUndefined();
    expect(limits.budgetRemainingMicros("team")).toBe(0);
  });

  test("per_request_fee is spent at admission", () => {
    const { limits } = engine(tree(["team", null, [{ window: "total", budget_cents: 2 }]]));
    const fee = { rate_card: {}, per_request_fee: 1 };
    expect(limits.admitHere("team", "chat", fee).ok).toBe(true);
    expect(limits.admitHere("team", "chat", fee).ok).toBe(true);
    expect(limits.admitHere("team", "chat", fee).ok || "refused").toBe("refused");
  });

  test("rate headroom is the tightest fraction left of requests and tokens caps up the chain", () => {
    const { limits } = engine(tree(["org", null, [{ window: "day", requests: 10 }]], ["team", "org", [{ window: "minute", requests: 4 }]]));
    expect(limits.rateHeadroom("team")).toBe(1);
    limits.admitHere("team", "chat", FREE);
    expect(limits.rateHeadroom("team")).toBe(0.75);
    expect(limits.rateHeadroom("org")).toBe(0.9);
    expect(engine(tree(["free", null, []])).limits.rateHeadroom("free")).toBeNull();
  });
});

describe("every limit up the chain applies (AND)", () => {
  const chain = () =>
    engine(
      tree(
        ["org", null, [{ window: "day", budget_cents: 1 }]],
        ["team", "org", [{ window: "minute", requests: 5 }]],
        ["alice", "team", [{ window: "minute", requests: 100 }]],
      ),
    );

  test("a grandparent's exhausted budget stops a leaf with room", () => {
    const { limits } = chain();
    const a = limits.admitHere("alice", "chat", FREE);
    if (!a.ok) throw new Error("refused");
    a.admission.charge(NO_TOKENS, 1_000_000, at("2025-03-14T15:09:01Z"));
    const refused = limits.admitHere("alice", "chat", FREE);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.error.message).toContain("Group org");
  });

  test("a parent's request cap counts its children's requests", () => {
    const { limits } = chain();
    for (let i = 0; i < 5; i++) expect(limits.admitHere("alice", "chat", FREE).ok).toBe(true);
    const refused = limits.admitHere("alice", "chat", FREE);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.error.message).toContain("Group team");
    // The team's count holds for any child: a sibling under it is refused too.
    expect(limits.admitHere("team", "chat", FREE).ok).toBe(false);
  });

  test("a frozen group anywhere up the chain refuses", () => {
    const groups = tree(["org", null, [], false], ["team", "org", []]);
    const { limits } = engine(groups);
    const refused = limits.admitHere("team", "chat", FREE);
    expect(refused.ok).toBe(false);
    if (!refused.ok) {
      expect(refused.error.kind).toBe("permission");
      expect(refused.error.message).toContain("org is frozen");
    }
  });

  test("a new tree is picked up at once (unfreezing)", () => {
    let groups = tree(["team", null, [], false]);
    const limits = new LimitEngine(() => 0, () => groups);
    expect(limits.admitHere("team", "chat", FREE).ok).toBe(false);
    groups = tree(["team", null, []]);
    expect(limits.admitHere("team", "chat", FREE).ok).toBe(true);
  });
});

describe("pool-qualified limits", () => {
  test("a pool's bucket counts and limits only requests to that pool", () => {
    const { limits } = engine(tree(["team", null, [{ window: "minute", requests: 1, pool: "gpt" }, { window: "minute", requests: 3 }]]));
    expect(limits.admitHere("team", "gpt", FREE).ok).toBe(true);
    expect(limits.admitHere("team", "gpt", FREE).ok).toBe(false);
    expect(limits.admitHere("team", "claude", FREE).ok).toBe(true);
    expect(limits.admitHere("team", "claude", FREE).ok).toBe(true);
    // The pool-less cap saw gpt's admitted request, claude's two: 3.
    expect(limits.admitHere("team", "claude", FREE).ok).toBe(false);
  });
});

describe("concurrency", () => {
  test("a cap holds while requests are in flight and frees a slot at each end, once", () => {
    const { limits } = engine(tree(["org", null, [{ concurrent: 2 }]], ["team", "org", []]));
    const a = limits.admitHere("team", "chat", FREE);
    const b = limits.admitHere("team", "chat", FREE);
    if (!a.ok || !b.ok) throw new Error("refused");
    const c = limits.admitHere("team", "chat", FREE);
    expect(c.ok).toBe(false);
    if (!c.ok) expect(c.error.retryAfterSecs).toBe(1);
    a.admission.end();
    a.admission.end();
    expect(limits.inflight("org", null)).toBe(1);
    expect(limits.admitHere("team", "chat", FREE).ok).toBe(true);
    expect(limits.admitHere("team", "chat", FREE).ok).toBe(false);
  });

  test("a refused request holds no slot", () => {
    const { limits } = engine(tree(["team", null, [{ concurrent: 1 }, { window: "minute", requests: 1 }]]));
    const a = limits.admitHere("team", "chat", FREE);
    if (!a.ok) throw new Error("refused");
    a.admission.end();
    expect(limits.admitHere("team", "chat", FREE).ok).toBe(false);
    expect(limits.inflight("team", null)).toBe(0);
  });
});

describe("spend from the rate card", () => {
  const pricing = { rate_card: { m: { input: 3, output: 15, cache_read: 0.3, cache_creation: 3.75 } }, per_request_fee: 0.5 };

  test("tokens times the rate per 1M tokens are micro-units, and the fee is per request", () => {
    const tiers = { input: 1000, output: 2000, cache_read: 10_000, cache_creation: 400 };
    // 1000*3 + 2000*15 + 10000*0.3 + 400*3.75 = 3000 + 30000 + 3000 + 1500
    expect(spendMicros(pricing, "m", tiers, 0)).toBe(37_500);
    expect(spendMicros(pricing, "m", tiers, 2)).toBe(1_037_500);
    expect(spendMicros(pricing, "unknown", tiers, 0)).toBe(0);
  });

  test("one million tokens at rate 1 is one cent of budget", () => {
    expect(centsOf(spendMicros({ rate_card: { m: { input: 1, output: 1 } } }, "m", { input: 1_000_000, output: 0, cache_read: 0, cache_creation: 0 }, 0))).toBe(1);
    expect(centsOf(999_999)).toBe(0);
  });
});
