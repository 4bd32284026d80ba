// Limits exact for a fleet, on the built binary: three replicas on one real PostgreSQL (Debian's, started
// here) and 16 concurrent OpenAI SDK clients on each. A requests cap admits exactly its count across the
// fleet; a concurrency cap is never passed at the upstream (a counting tap in front of the OpenAI
// imitation); every replica's usage view says what the clients were served; the slots a replica held when
// it was killed with SIGKILL come back once it is gone; a disable, a delete and a group freeze hold on the
// other replicas within 1 s.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { json, startGateway, type RunningGateway } from "../support/gateway.ts";
import { replicaConfig, usePostgres } from "../support/postgres.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";
import type { Upstream } from "../support/upstreams/common.ts";

const server = usePostgres("pg-limits-e2e-");
const ENV = { GW_ADMIN: "limits-admin-token-7a8b", GW_SIGNING_KEY: "limits-signing-key-99887766554433" };

let upstream: Upstream;
/** The tap in front of the imitation: how many requests are at the upstream at once, and the most ever. */
const tap = { inflight: 0, peak: 0 };
let tapServer: ReturnType<typeof Bun.serve>;
let replicas: RunningGateway[] = [];
let config: string;
let url: string;

beforeAll(async () => {
  upstream = startOpenAIUpstream();
  tapServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(request) {
      tap.peak = Math.max(tap.peak, ++tap.inflight);
      try {
        const target = new URL(request.url);
        const answer = await fetch(`${upstream.url}${target.pathname}${target.search}`, { method: request.method, headers: request.headers, body: await request.arrayBuffer() });
        const body = await answer.arrayBuffer();
        return new Response(body, { status: answer.status, headers: answer.headers });
      } finally {
        tap.inflight -= 1;
      }
    },
  });
  config = replicaConfig(8)
    .replace("providers:\n", `providers:\n  tapped: {protocol: openai, base_url: "http://127.0.0.1:${tapServer.port}/v1", api_key: {env: GW_UPSTREAM_KEY}}\n`)
    .replace("models:\n", "models:\n  tapped-1: {provider: tapped, model: gpt-4o-mini}\n");
  url = await server().createDatabase("fleet_limits");
  replicas = await Promise.all([1, 2, 3].map(() => startGateway(config, { env: { ...ENV, GW_PG_URL: url, GW_UPSTREAM_KEY: OPENAI_DEFAULT_KEY } })));
}, 60_000);

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  tapServer?.stop(true);
  await upstream?.stop();
});

const admin = (r: RunningGateway, path: string, init: RequestInit = {}) => fetch(`${r.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" } });

async function keyIn(group: string, limits: unknown[]): Promise<{ id: string; token: string }> {
  expect((await admin(replicas[0]!, "/groups", { method: "POST", body: JSON.stringify({ name: group, limits }) })).status).toBe(201);
  return (await json(await admin(replicas[0]!, "/keys", { method: "POST", body: JSON.stringify({ name: `${group}-key`, group }) }))) as { id: string; token: string };
}

type Outcome = { ok: true } | { ok: false; status: number; retryAfter: string | null; message: string };

async function call(r: RunningGateway, token: string, model: string, text: string): Promise<Outcome> {
  const client = new OpenAI({ apiKey: token, baseURL: `${r.data}/v1`, maxRetries: 0 });
  try {
    await client.chat.completions.create({ model, messages: [{ role: "user", content: text }] });
    return { ok: true };
  } catch (error) {
    const e = error as { status: number; headers?: Headers | Record<string, string>; message: string };
    const headers = e.headers instanceof Headers ? e.headers : new Headers(e.headers ?? {});
    return { ok: false, status: e.status, retryAfter: headers.get("retry-after"), message: e.message };
  }
}

/** 16 SDK clients on each replica, `per` requests each, all at once. */
async function burst(token: string, model: string, per: number): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  await Promise.all(
    replicas.flatMap((r, ri) =>
      Array.from({ length: 16 }, async (_, ci) => {
        for (let i = 0; i < per; i++) outcomes.push(await call(r, token, model, `r${ri} c${ci} #${i}`));
      }),
    ),
  );
  return outcomes;
}

describe("limits exact for a fleet of three replicas", () => {
  test("a requests cap of 30 a day admits exactly 30 of 96 concurrent requests; the rest 429 with Retry-After; usage equal on every replica", async () => {
    // A day's window: a run never straddles its end (an hour's could, once in a while).
    const key = await keyIn("capped", [{ window: "day", requests: 30 }]);
    // The group and key reach the other replicas (NOTIFY) before the burst.
    await Bun.sleep(300);
    const outcomes = await burst(key.token, "mock-1", 2);
    const served = outcomes.filter((o) => o.ok).length;
    expect(served).toBe(30);
    const refused = outcomes.filter((o): o is Extract<Outcome, { ok: false }> => !o.ok);
    expect(refused.length).toBe(96 - 30);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(Number(r.retryAfter)).toBeGreaterThan(0);
      expect(r.message).toContain("Group capped allows 30 requests per day");
    }
    // The ledger is written at most 1 s after a request ends; then every replica's view is the same.
    await Bun.sleep(1_500);
    // as_of is each replica's own clock reading; everything else is the fleet's.
    const views = await Promise.all(replicas.map(async (r) => ({ ...((await json(await admin(r, "/groups/capped/usage"))) as Record<string, unknown>), as_of: 0 })));
    for (const view of views) expect(view).toEqual(views[0]!);
    expect(JSON.stringify(views[0])).toContain('"requests":30');
  }, 60_000);

  test("a concurrency cap of 3 is never passed at the upstream by 3 replicas x 16 clients; every slot comes back", async () => {
    const key = await keyIn("narrow", [{ concurrent: 3 }]);
    await Bun.sleep(300);
    upstream.script({ delayMs: 40, times: Infinity });
    tap.peak = 0;
    try {
      const outcomes = await burst(key.token, "tapped-1", 4);
      const served = outcomes.filter((o) => o.ok).length;
      expect(tap.peak).toBeLessThanOrEqual(3);
      expect(tap.peak).toBeGreaterThanOrEqual(2);
      expect(served).toBeGreaterThan(3);
      for (const o of outcomes) if (!o.ok) expect([o.status, o.message.includes("allows 3 requests in flight at once")]).toEqual([429, true]);
      // Every slot came back (settled with the next batch, or alone within 10 ms): three at once are admitted again, on three replicas.
      const until = performance.now() + 1_000;
      let again: Outcome[] = [];
      do again = await Promise.all(replicas.map((r) => call(r, key.token, "tapped-1", "after")));
      while (!again.every((o) => o.ok) && performance.now() < until);
      expect(again.every((o) => o.ok)).toBe(true);
    } finally {
      upstream.reset();
    }
  }, 60_000);

  test("a token cap of 400 per day: 3 replicas x 16 clients are served at most the cap plus one request's tokens; usage equal everywhere", async () => {
    const key = await keyIn("tokened", [{ window: "day", tokens: 400 }]);
    await Bun.sleep(300);
    const text = "x".repeat(100);
    let servedTokens = 0;
    let largest = 0;
    const refusals: number[] = [];
    await Promise.all(
      replicas.flatMap((r) =>
        Array.from({ length: 16 }, async () => {
          const client = new OpenAI({ apiKey: key.token, baseURL: `${r.data}/v1`, maxRetries: 0 });
          for (let i = 0; i < 2; i++) {
            try {
              // max_tokens over the answer's real length: the reservation never under-estimates.
              const answer = await client.chat.completions.create({ model: "mock-1", max_tokens: 64, messages: [{ role: "user", content: text }] });
              const total = answer.usage!.total_tokens;
              servedTokens += total;
              largest = Math.max(largest, total);
            } catch (error) {
              refusals.push((error as { status: number }).status);
            }
          }
        }),
      ),
    );
    expect(servedTokens).toBeGreaterThan(0);
    // The documented bound: the cap, plus the crossing request's charge (estimates here are never short).
    expect(servedTokens).toBeLessThanOrEqual(400 + largest);
    expect(new Set(refusals)).toEqual(new Set([429]));
    console.log(`token cap 400: ${servedTokens} tokens served (largest request ${largest}), ${refusals.length} of 96 refused`);
    await Bun.sleep(1_500);
    const views = await Promise.all(replicas.map(async (r) => ({ ...((await json(await admin(r, "/groups/tokened/usage"))) as { buckets: { tokens: number }[] }), as_of: 0 })));
    for (const view of views) expect(view).toEqual(views[0]!);
    expect(views[0]!.buckets[0]!.tokens).toBe(servedTokens);
  }, 60_000);

  test("a key disabled or deleted, and a group frozen, on one replica hold on the others within 1 s", async () => {
    const [a, b, c] = replicas as [RunningGateway, RunningGateway, RunningGateway];
    const heldWithin1s = async (token: string) => {
      const started = performance.now();
      for (const r of [b, c]) {
        while ((await call(r, token, "mock-1", "still?")).ok) {
          if (performance.now() - started > 1_000) throw new Error("still served after 1 s");
          await Bun.sleep(10);
        }
      }
      return performance.now() - started;
    };
    const disabled = await keyIn("to-disable", [{ window: "hour", requests: 1000 }]);
    const deleted = (await json(await admin(a, "/keys", { method: "POST", body: JSON.stringify({ name: "to-delete", group: "to-disable" }) }))) as { id: string; token: string };
    const frozen = await keyIn("to-freeze", [{ window: "hour", requests: 1000 }]);
    await Bun.sleep(300);
    for (const token of [disabled.token, deleted.token, frozen.token]) for (const r of [b, c]) expect((await call(r, token, "mock-1", "hi")).ok).toBe(true);
    expect((await admin(a, `/keys/${disabled.id}`, { method: "PATCH", body: JSON.stringify({ enabled: false }) })).status).toBe(200);
    const disableMs = await heldWithin1s(disabled.token);
    expect((await admin(a, `/keys/${deleted.id}`, { method: "DELETE" })).status).toBe(200);
    const deleteMs = await heldWithin1s(deleted.token);
    expect((await admin(a, "/groups/to-freeze", { method: "PATCH", body: JSON.stringify({ enabled: false }) })).status).toBe(200);
    const freezeMs = await heldWithin1s(frozen.token);
    const refused = await call(b, frozen.token, "mock-1", "frozen?");
    expect(!refused.ok && refused.message).toContain("Group to-freeze is frozen");
    console.log(`held on the other replicas after: disable ${Math.round(disableMs)} ms, delete ${Math.round(deleteMs)} ms, freeze ${Math.round(freezeMs)} ms`);
  }, 30_000);

  test("the slots a replica held when it was killed (SIGKILL) are freed once it is gone", async () => {
    const key = await keyIn("held", [{ concurrent: 2 }]);
    await Bun.sleep(300);
    const victim = replicas[2]!;
    upstream.script({ match: "slow", delayMs: 30_000, times: 2 });
    const holding = [call(victim, key.token, "tapped-1", "slow one"), call(victim, key.token, "tapped-1", "slow two")];
    while (tap.inflight < 2) await Bun.sleep(10);
    const refused = await call(replicas[0]!, key.token, "tapped-1", "while held");
    expect(refused.ok).toBe(false);
    victim.proc.kill("SIGKILL");
    await Promise.allSettled(holding);
    const killedAt = performance.now();
    let freedAfter = 0;
    while ((await call(replicas[0]!, key.token, "tapped-1", "after the kill")).ok === false) {
      if (performance.now() - killedAt > 20_000) throw new Error("the killed replica's slots were not freed within 20 s");
      await Bun.sleep(250);
    }
    freedAfter = performance.now() - killedAt;
    // Gone after 10 s of silence, found by the next heartbeat (2 s) of a live replica.
    expect(freedAfter).toBeGreaterThan(5_000);
    expect(freedAfter).toBeLessThan(15_000);
    console.log(`a killed replica's concurrency slots freed after ${Math.round(freedAfter)} ms`);
    replicas = replicas.slice(0, 2);
    upstream.reset();
  }, 60_000);
});
