// Limits exact for a fleet, over a real PostgreSQL (Debian's, started here): three replicas' limit
// engines take reservations in the shared counters, 16 admissions at a time each, and no request or
// concurrency cap is ever passed; budgets with charges known at admission are exact; settlements put real
// usage in place of the estimate; what a gone replica held is freed; the refusals read as a single
// process's; an unreachable store answers 503 `store unavailable` (fail_closed) or admits (fail_open).
import { describe, expect, test } from "bun:test";
import { FleetAdmitter } from "../../src/governance/fleet-limits.ts";
import { LimitEngine, type GroupNode, type Limit, type AdmitResult } from "../../src/governance/limits.ts";
import { PgLimitCounters } from "../../src/store/postgres/limits.ts";
import { PG_MIGRATIONS } from "../../src/store/postgres/migrations.ts";
import { PostgresStore } from "../../src/store/postgres/store.ts";
import { usePostgres } from "../support/postgres.ts";
import { until } from "../support/until.ts";

const KEY = "l".repeat(48);
const server = usePostgres("pg-limits-");
const NO_FEE = { per_request_fee: 0 };

type Tree = Map<string, GroupNode>;
const node = (name: string, limits: Limit[], parent: string | null = null): [string, GroupNode] => [name, { name, parent, enabled: true, limits, child_default: null, source: "api" }];

async function replica(url: string, id: string, tree: Tree, onUnavailable: "fail_closed" | "fail_open" = "fail_closed", upTo = Infinity) {
  const migrations = PG_MIGRATIONS.filter((m) => m.version <= upTo);
  const store = await PostgresStore.open({ url, schema: "public", poolSize: 8, connectTimeoutSecs: 5 }, { signingKey: KEY, migrations });
  const counters = new PgLimitCounters(store.sql, id);
  const admitter = new FleetAdmitter(counters, onUnavailable);
  const limits = new LimitEngine(Date.now, () => tree, admitter);
  await store.sql`INSERT INTO replicas (id, host, listen, started_at, last_seen, version, config_version)
    VALUES (${id}, 'test', '127.0.0.1:0', extract(epoch from now())::bigint, extract(epoch from now())::bigint, 'test', 0)`;
  return { store, counters, admitter, limits, id };
}
type Replica = Awaited<ReturnType<typeof replica>>;

async function fleet(name: string, tree: Tree, n = 3) {
  const url = await server().createDatabase(name);
  const replicas: Replica[] = [];
  for (let i = 0; i < n; i++) replicas.push(await replica(url, `replica-${name}-${i}`, tree));
  return { url, replicas, close: () => Promise.all(replicas.map((r) => r.store.close())) };
}

const admitted = async (result: AdmitResult | Promise<AdmitResult>) => {
  const answer = await result;
  if (!answer.ok) throw new Error(answer.error.message);
  return answer.admission;
};

/** 16 clients on each replica admitting `per` times each, ending each admission after `holdMs`; counts the admitted. */
async function load(replicas: Replica[], group: string, pool: string, per: number, holdMs = 0, pricing = NO_FEE) {
  let admittedCount = 0;
  let inflight = 0;
  let peak = 0;
  const refusals = new Map<string, number>();
  await Promise.all(
    replicas.flatMap((r) =>
      Array.from({ length: 16 }, async () => {
        for (let i = 0; i < per; i++) {
          const result = await r.limits.admit(group, pool, pricing);
          if (!result.ok) {
            refusals.set(result.error.message, (refusals.get(result.error.message) ?? 0) + 1);
            continue;
          }
          admittedCount += 1;
          peak = Math.max(peak, ++inflight);
          if (holdMs > 0) await Bun.sleep(holdMs);
          inflight -= 1;
          result.admission.end();
        }
      }),
    ),
  );
  await Promise.all(replicas.map((r) => r.counters.drain()));
  return { admitted: admittedCount, peak, refusals };
}

describe("postgres fleet: limits", () => {
  test("a requests cap is never passed by 3 replicas x 16 concurrent clients; the 429 reads as a single process's", async () => {
    const tree: Tree = new Map([node("team", [{ window: "hour", requests: 40 }])]);
    const { replicas, close } = await fleet("lim_requests", tree);
    try {
      const { admitted: count, refusals } = await load(replicas, "team", "chat", 4);
      expect(count).toBe(40);
      expect([...refusals.values()].reduce((a, b) => a + b, 0)).toBe(3 * 16 * 4 - 40);
      const single = new LimitEngine(Date.now, () => tree);
      for (let i = 0; i < 40; i++) await admitted(single.admitHere("team", "chat", NO_FEE));
      const refusedHere = single.admitHere("team", "chat", NO_FEE);
      expect(refusedHere.ok).toBe(false);
      // The same words; only the seconds to the window's end move while the clients run.
      const words = (message: string) => message.replace(/retry after \d+ s/, "retry after N s");
      expect([...new Set([...refusals.keys()].map(words))]).toEqual([words((refusedHere as { error: { message: string } }).error.message)]);
      const [row] = await replicas[0]!.store.sql`SELECT requests FROM limit_counts WHERE grp = 'team' AND win <> ''`;
      expect(Number(row.requests)).toBe(40);
    } finally {
      await close();
    }
  }, 60_000);

  test("a concurrency cap up the chain is never passed, and every slot comes back when requests end", async () => {
    const tree: Tree = new Map([node("org", [{ concurrent: 5 }]), node("team", [{ concurrent: 8 }, { window: "minute", requests: 100_000 }], "org")]);
    const { replicas, close } = await fleet("lim_concurrent", tree);
    try {
      const { admitted: count, peak } = await load(replicas, "team", "chat", 6, 15);
      expect(peak).toBeLessThanOrEqual(5);
      expect(peak).toBeGreaterThan(1);
      expect(count).toBeGreaterThan(0);
      const rows = await replicas[0]!.store.sql`SELECT grp, inflight FROM limit_counts WHERE win = '' ORDER BY grp`;
      expect(rows.map((r: { grp: string; inflight: string }) => [r.grp, Number(r.inflight)])).toEqual([
        ["org", 0],
        ["team", 0],
      ]);
      const held = await replicas[0]!.store.sql`SELECT COALESCE(SUM(inflight), 0) AS n FROM limit_holdings`;
      expect(Number(held[0].n)).toBe(0);
    } finally {
      await close();
    }
  }, 60_000);

  test("a budget charged at admission (per_request_fee) is exact for the fleet; the refusal is insufficient_quota", async () => {
    // 1 cent budget, 0.05 units a request: exactly 20 requests fit.
    const tree: Tree = new Map([node("team", [{ window: "day", budget_cents: 1 }])]);
    const { replicas, close } = await fleet("lim_budget", tree);
    try {
      const { admitted: count, refusals } = await load(replicas, "team", "chat", 2, 0, { per_request_fee: 0.05 });
      expect(count).toBe(20);
      expect([...refusals.keys()]).toEqual(["Group team has used its day budget of 1 cents."]);
    } finally {
      await close();
    }
  }, 60_000);

  test("a token reservation holds the cap while in flight; settlement puts real usage in its place", async () => {
    const tree: Tree = new Map([node("team", [{ window: "hour", tokens: 1_000 }])]);
    const { replicas, close } = await fleet("lim_tokens", tree, 2);
    const [a, b] = replicas as [Replica, Replica];
    try {
      const held = await admitted(a.limits.admit("team", "chat", NO_FEE, () => ({ tokens: 1_000, spendMicros: 0 })));
      // A bucket admits while settled + reserved is below its cap: on the other replica it is held, retry after 1 s.
      const refused = await b.limits.admit("team", "chat", NO_FEE, () => ({ tokens: 200, spendMicros: 0 }));
      expect(refused.ok).toBe(false);
      expect(!refused.ok && refused.error.message).toBe("Group team's 1000 tokens per hour are held by requests in flight; retry after 1 s.");
      held.charge({ input: 100, output: 50, cache_read: 0, cache_creation: 0 }, 0, Date.now());
      held.end();
      await a.counters.drain();
      const [row] = await a.store.sql`SELECT tokens, reserved_tokens FROM limit_counts WHERE grp = 'team' AND win <> ''`;
      expect([Number(row.tokens), Number(row.reserved_tokens)]).toEqual([150, 0]);
      await admitted(b.limits.admit("team", "chat", NO_FEE, () => ({ tokens: 200, spendMicros: 0 })));
    } finally {
      await close();
    }
  }, 60_000);

  test("a gone replica's holdings are freed (its reservations counted as spent); a live replica's are not", async () => {
    const tree: Tree = new Map([node("team", [{ concurrent: 2 }, { window: "hour", tokens: 10_000 }])]);
    const { replicas, close } = await fleet("lim_gone", tree, 2);
    const [live, dying] = replicas as [Replica, Replica];
    try {
      await admitted(dying.limits.admit("team", "chat", NO_FEE, () => ({ tokens: 300, spendMicros: 0 })));
      await admitted(dying.limits.admit("team", "chat", NO_FEE, () => ({ tokens: 300, spendMicros: 0 })));
      // It dies without settling: the cap stays held while it still counts as up.
      expect((await live.limits.admit("team", "chat", NO_FEE)).ok).toBe(false);
      expect(Number((await live.counters.freeGone(10)))).toBe(0);
      await live.store.sql`UPDATE replicas SET last_seen = extract(epoch from now())::bigint - 11 WHERE id = ${dying.id}`;
      expect(await live.counters.freeGone(10)).toBeGreaterThan(0);
      await admitted(live.limits.admit("team", "chat", NO_FEE));
      const [row] = await live.store.sql`SELECT tokens, reserved_tokens FROM limit_counts WHERE grp = 'team' AND win <> ''`;
      expect([Number(row.tokens), Number(row.reserved_tokens)]).toEqual([600, 0]);
    } finally {
      await close();
    }
  }, 60_000);

  test("a replica cut off long enough to be taken for gone gives nothing back twice: another's slot taken meanwhile stays held", async () => {
    const tree: Tree = new Map([node("team", [{ concurrent: 1 }])]);
    const { replicas, close } = await fleet("lim_orphan", tree, 2);
    const [cut, other] = replicas as [Replica, Replica];
    try {
      cut.counters.alive();
      const before = await admitted(cut.limits.admit("team", "chat", NO_FEE));
      // No heartbeat from `cut` for 10 s: the others free what it held, and `other` takes the slot.
      await Bun.sleep(8_200);
      await other.store.sql`UPDATE replicas SET last_seen = extract(epoch from now())::bigint - 11 WHERE id = ${cut.id}`;
      expect(await other.counters.freeGone(10)).toBeGreaterThan(0);
      await admitted(other.limits.admit("team", "chat", NO_FEE));
      // `cut` comes back: its request from before ends, then it admits again.
      cut.counters.alive();
      before.end();
      const again = await cut.limits.admit("team", "chat", NO_FEE);
      expect(again.ok).toBe(false);
      await cut.counters.drain();
      const [row] = await other.store.sql`SELECT inflight FROM limit_counts WHERE grp = 'team' AND win = ''`;
      expect(Number(row.inflight)).toBe(1);
    } finally {
      await close();
    }
  }, 60_000);

  test("chains that share a parent, admitted and settled at once on three replicas, never deadlock", async () => {
    const tree: Tree = new Map([
      node("org", [{ window: "minute", requests: 100_000 }, { concurrent: 40 }, { window: "day", tokens: 10_000_000 }]),
      node("a", [{ window: "minute", requests: 100_000 }, { concurrent: 30 }], "org"),
      node("b", [{ window: "hour", requests: 100_000 }, { concurrent: 30, pool: "chat" }], "org"),
    ]);
    const { replicas, close } = await fleet("lim_deadlock", tree);
    try {
      const started = performance.now();
      const [x, y] = await Promise.all([load(replicas, "a", "chat", 10, 1), load(replicas, "b", "chat", 10, 1)]);
      expect(x.admitted + y.admitted).toBe(2 * 3 * 16 * 10 - [...x.refusals.values(), ...y.refusals.values()].reduce((s, n) => s + n, 0));
      // A deadlock costs deadlock_timeout (1 s) per victim and fails its statement; there were none.
      expect([...x.refusals.keys(), ...y.refusals.keys()].filter((m) => !m.includes("in flight at once"))).toEqual([]);
      expect(performance.now() - started).toBeLessThan(30_000);
    } finally {
      await close();
    }
  }, 60_000);

  test("fail_open: requests admitted unchecked while the database is stopped are charged to the counters when it returns", async () => {
    // A day's window: the count must not roll over between the first request and the charged ones.
    const tree: Tree = new Map([node("team", [{ window: "day", requests: 100 }])]);
    const url = await server().createDatabase("lim_open");
    const open = await replica(url, "replica-open-charge", tree, "fail_open");
    try {
      (await admitted(open.limits.admit("team", "chat", NO_FEE))).end();
      await open.counters.drain();
      await server().stop();
      for (let i = 0; i < 3; i++) (await admitted(open.limits.admit("team", "chat", { per_request_fee: 0.5 }))).end();
      expect(open.limits.unavailable).toBe(true);
      await server().start();
      const counted = async () => Number((await open.store.sql`SELECT requests, spend_micros FROM limit_counts WHERE grp = 'team' AND win <> ''`.catch(() => [{ requests: -1 }]))[0]?.requests ?? -1);
      await until(async () => (await counted()) === 4, 15_000, 100);
      const [row] = await open.store.sql`SELECT spend_micros FROM limit_counts WHERE grp = 'team' AND win <> ''`;
      expect(Number(row.spend_micros)).toBe(3 * 500_000);
      await until(() => !open.limits.unavailable, 5_000, 50);
    } finally {
      await open.store.close();
    }
  }, 60_000);

  test("an unreachable store: fail_closed answers 503 store unavailable; fail_open admits", async () => {
    const tree: Tree = new Map([node("team", [{ window: "hour", requests: 10 }])]);
    const url = await server().createDatabase("lim_down");
    const closed = await replica(url, "replica-closed", tree);
    const open = await replica(url, "replica-open", tree, "fail_open");
    await closed.store.close();
    await open.store.close();
    const refused = await closed.limits.admit("team", "chat", NO_FEE);
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.error).toMatchObject({ kind: "overloaded", status: 503, retryAfterSecs: 1 });
    expect(!refused.ok && refused.error.message).toStartWith("store unavailable");
    expect(closed.limits.unavailable).toBe(true);
    expect((await open.limits.admit("team", "chat", NO_FEE)).ok).toBe(true);
    await until(() => open.limits.unavailable, 1_000);
  }, 60_000);

  test("a fleet at schema 10 with requests in flight upgrades to 11: counts and holdings move; the old build's replica settles into them", async () => {
    const tree: Tree = new Map([node("team", [{ concurrent: 2 }, { window: "day", tokens: 1_000, requests: 3 }])]);
    const url = await server().createDatabase("lim_upgrade");
    const old = await replica(url, "replica-old", tree, "fail_closed", 10);
    try {
      const first = await admitted(old.limits.admit("team", "chat", NO_FEE, () => ({ tokens: 400, spendMicros: 0 })));
      const second = await admitted(old.limits.admit("team", "chat", NO_FEE, () => ({ tokens: 100, spendMicros: 0 })));
      first.charge({ input: 30, output: 20, cache_read: 0, cache_creation: 0 }, 0, Date.now());
      first.end();
      await old.counters.drain();
      const upgraded = await replica(url, "replica-new", tree);
      try {
        expect(await upgraded.store.schemaVersion()).toBe(11);
        const counts = await upgraded.store.sql`SELECT win, requests, tokens, reserved_tokens, inflight FROM limit_counts WHERE grp = 'team' ORDER BY win`;
        expect(counts.map((r: Record<string, string>) => [r.win, ...[r.requests, r.tokens, r.reserved_tokens, r.inflight].map(Number)])).toEqual([
          ["", 0, 0, 0, 1],
          ["day", 2, 50, 100, 0],
        ]);
        const holdings = await upgraded.store.sql`SELECT holder, win, reserved_tokens, inflight FROM limit_holdings ORDER BY win`;
        expect(holdings.map((r: Record<string, string>) => [r.holder, r.win, Number(r.reserved_tokens), Number(r.inflight)])).toEqual([
          ["replica-old", "", 0, 1],
          ["replica-old", "day", 100, 0],
        ]);
        // The cap counts what the old replica admitted: one request left of three, and one slot of two.
        const third = await admitted(upgraded.limits.admit("team", "chat", NO_FEE, () => ({ tokens: 100, spendMicros: 0 })));
        const refused = await upgraded.limits.admit("team", "chat", NO_FEE, () => ({ tokens: 100, spendMicros: 0 }));
        expect(!refused.ok && refused.error.message).toStartWith("Group team allows 3 requests per day; retry after");
        // The replica still running the previous build calls the replaced function: its request ends into the new tables.
        second.end();
        third.end();
        await Promise.all([old.counters.drain(), upgraded.counters.drain()]);
        const [day] = await upgraded.store.sql`SELECT reserved_tokens FROM limit_counts WHERE grp = 'team' AND win = 'day'`;
        const [slots] = await upgraded.store.sql`SELECT inflight FROM limit_counts WHERE grp = 'team' AND win = ''`;
        const [held] = await upgraded.store.sql`SELECT COALESCE(SUM(inflight), 0) AS n, COALESCE(SUM(reserved_tokens), 0) AS t FROM limit_holdings`;
        expect([Number(day.reserved_tokens), Number(slots.inflight), Number(held.n), Number(held.t)]).toEqual([0, 0, 0, 0]);
      } finally {
        await upgraded.store.close();
      }
    } finally {
      await old.store.close();
    }
  }, 60_000);
});
