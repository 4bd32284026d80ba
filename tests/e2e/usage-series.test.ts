// GET /usage/series and GET /usage/today on the built binary, after requests through the OpenAI SDK by
// two virtual keys (one in a group, one in none) over two models of the mock provider with a rate card:
// the series by model, key and group hold exactly those requests' tokens and spend, equal to what GET
// /usage/keys reports for the same span; today's totals equal the keys' since 00:00 UTC; bad parameters
// are a 400 naming them and the allowed values; a read-only principal reads both; no secret shows.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_SIGNING_KEY: "e2e-usage-series-signing-key-41d7", GW_ADMIN: "e2e-usage-series-admin-0b2c", GW_RO: "e2e-usage-series-ro-93fa" };

// Whole cents per token and per request, so every sum of cents equals the cents of the sum.
const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
  mock-2: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
  alt: {members: [{model: mock-2}]}
rate_card:
  mock-1: {input: 1000000, output: 1000000}
  mock-2: {input: 2000000, output: 3000000}
per_request_fee: 1
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}, {token: {env: GW_RO}, scope: read-only}]
groups:
  team-a: {limits: [{window: day, requests: 1000}]}
`;

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
});

const as = (token: string) => (path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": token, "content-type": "application/json", ...init.headers } });
const admin = as(ENV.GW_ADMIN);
const readOnly = as(ENV.GW_RO);
const openai = (token: string) => new OpenAI({ apiKey: token, baseURL: `${gw.data}/v1`, maxRetries: 0 });

interface Amounts {
  requests: number;
  tokens: number;
  spend_cents: number;
}
interface SeriesView {
  by: string;
  range: string;
  step_secs: number;
  from: number;
  to: number;
  series: { name: string; total: Amounts; points: (Amounts & { t: number })[] }[];
}
interface KeyRow {
  id: string;
  requests: number;
  tokens_input: number;
  tokens_output: number;
  tokens_cache_read: number;
  tokens_cache_creation: number;
  spend_micros: number;
}

const keyTotals = (r: KeyRow): Amounts => ({ requests: r.requests, tokens: r.tokens_input + r.tokens_output + r.tokens_cache_read + r.tokens_cache_creation, spend_cents: Math.floor(r.spend_micros / 1e6) });
const sum = (xs: Amounts[]): Amounts => xs.reduce((a, x) => ({ requests: a.requests + x.requests, tokens: a.tokens + x.tokens, spend_cents: a.spend_cents + x.spend_cents }), { requests: 0, tokens: 0, spend_cents: 0 });

describe("usage series", () => {
  test("requests through the SDK show in the series by model, key and group, equal to GET /usage/keys for the same span; today is their sum", async () => {
    const startedAt = Date.now();
    const mint = async (group: string | null) => {
      const response = await admin("/keys", { method: "POST", body: JSON.stringify({ name: `k-${group}`, group }) });
      expect(response.status).toBe(201);
      return (await json(response)) as { id: string; token: string };
    };
    const a = await mint("team-a");
    const b = await mint(null);
    const used = { a: 0, b: 0 };
    for (const [key, pool, text] of [[a, "chat", "one two three"], [a, "alt", "four five"], [b, "alt", "six"]] as const) {
      const answer = await openai(key.token).chat.completions.create({ model: pool, messages: [{ role: "user", content: text }] });
      used[key === a ? "a" : "b"] += answer.usage!.prompt_tokens + answer.usage!.completion_tokens;
    }
    const stream = await openai(b.token).chat.completions.create({ model: "chat", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "seven eight" }] });
    for await (const chunk of stream) if (chunk.usage) used.b += chunk.usage.prompt_tokens + chunk.usage.completion_tokens;

    const byKey = (await json(await admin("/usage/series?by=key&range=1h"))) as SeriesView;
    expect(byKey).toMatchObject({ by: "key", range: "1h", step_secs: 60 });
    expect(byKey.to - byKey.from).toBe(3600);
    expect(byKey.from % 60).toBe(0);
    const rows = ((await json(await admin(`/usage/keys?from=${byKey.from}&to=${byKey.to}`))) as { items: KeyRow[] }).items;
    const fromKeys = new Map(rows.map((r) => [r.id, keyTotals(r)]));
    expect(new Map(byKey.series.map((s) => [s.name, s.total]))).toEqual(fromKeys);
    expect(fromKeys.get(a.id)).toMatchObject({ requests: 2, tokens: used.a });
    expect(fromKeys.get(b.id)).toMatchObject({ requests: 2, tokens: used.b });
    expect(fromKeys.get(a.id)!.spend_cents).toBeGreaterThan(0);
    for (const s of byKey.series) {
      expect(sum(s.points)).toEqual(s.total);
      for (const p of s.points) expect(p.t % 60 === 0 && p.t >= byKey.from && p.t < byKey.to).toBe(true);
    }
    const all = sum([...fromKeys.values()]);

    const byModel = (await json(await admin("/usage/series?by=model&range=1h"))) as SeriesView;
    // The ledger's model: a request (and its fee) under the name the caller asked for, its tokens under the model that served it.
    const model = new Map(byModel.series.map((s) => [s.name, s.total]));
    expect([...model.keys()].sort()).toEqual(["alt", "chat", "mock-1", "mock-2"]);
    expect(sum(byModel.series.map((s) => s.total))).toEqual(all);
    expect(model.get("chat")).toEqual({ requests: 2, tokens: 0, spend_cents: 2 });
    expect(model.get("alt")).toEqual({ requests: 2, tokens: 0, spend_cents: 2 });
    expect(model.get("mock-1")!.tokens + model.get("mock-2")!.tokens).toBe(used.a + used.b);

    const byGroup = (await json(await admin("/usage/series?by=group&range=1h"))) as SeriesView;
    expect(new Map(byGroup.series.map((s) => [s.name, s.total]))).toEqual(new Map([["team-a", fromKeys.get(a.id)!], ["(no group)", fromKeys.get(b.id)!]]));

    // The same rows over a longer range, with its own step.
    const week = (await json(await admin("/usage/series?by=model&range=7d"))) as SeriesView;
    expect(week.step_secs).toBe(3600);
    expect(sum(week.series.map((s) => s.total))).toEqual(all);

    const today = (await json(await admin("/usage/today"))) as Amounts & { from: number };
    expect(today.from % 86_400).toBe(0);
    const sinceMidnight = ((await json(await admin(`/usage/keys?from=${today.from}`))) as { items: KeyRow[] }).items;
    expect({ requests: today.requests, tokens: today.tokens, spend_cents: today.spend_cents }).toEqual(sum(sinceMidnight.map(keyTotals)));
    // Unless 00:00 UTC fell inside this test, today holds every request it made.
    if (startedAt >= today.from * 1000) expect({ requests: today.requests, tokens: today.tokens, spend_cents: today.spend_cents }).toEqual(all);

    // Key ids name the series; no secret appears anywhere in the answers.
    for (const text of [JSON.stringify(byKey), JSON.stringify(byModel), JSON.stringify(byGroup), JSON.stringify(today)]) {
      expect(text).not.toContain(a.token);
      expect(text).not.toContain(b.token);
    }
  });

  test("bad by or range: 400 in the admin envelope naming the parameter and the allowed values", async () => {
    for (const [query, name, allowed] of [
      ["by=user&range=1h", "by", "model, key, group"],
      ["by=model&range=2d", "range", "1h, 24h, 7d, 30d"],
      ["range=", "range", "1h, 24h, 7d, 30d"],
    ] as const) {
      const response = await admin(`/usage/series?${query}`);
      expect({ query, status: response.status }).toEqual({ query, status: 400 });
      const body = (await json(response)) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("invalid_request");
      expect(body.error.message).toContain(name);
      expect(body.error.message).toContain(allowed);
    }
    // key_id is bounded: an empty or an overlong one is a 400 naming it.
    for (const query of ["key_id=", `key_id=${"k".repeat(201)}`]) {
      const response = await admin(`/usage/series?${query}`);
      expect({ status: response.status, message: ((await json(response)) as { error: { message: string } }).error.message }).toMatchObject({ status: 400, message: expect.stringContaining("key_id") });
    }
    // Both parameters have defaults.
    expect(((await json(await admin("/usage/series"))) as SeriesView)).toMatchObject({ by: "model", range: "24h", step_secs: 900 });
  });

  test("a read-only principal reads both; neither takes a mutation", async () => {
    for (const path of ["/usage/series?by=key&range=30d", "/usage/today"]) {
      expect({ path, status: (await readOnly(path)).status }).toEqual({ path, status: 200 });
      expect({ path, status: (await admin(path, { method: "POST", body: "{}" })).status }).toEqual({ path, status: 405 });
    }
  });
});
