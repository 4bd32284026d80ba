// Groups, limits and metering on the built binary: group CRUD and its refusals, the mint rules'
// provisioning, and enforcement through keys bound to groups, seen by official SDKs and raw calls in
// each vendor's shape: a minute request limit (RateLimitError with Retry-After), an exhausted budget
// (insufficient_quota), a parent's budget stopping a child with room, a frozen group, concurrency caps
// under parallel requests and released when clients leave mid-stream, and usage views that add up to
// the ledger on disk.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import OpenAI from "openai";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_SIGNING_KEY: "e2e-groups-signing-key-2c81", GW_ADMIN: "e2e-groups-admin-9f3e" };

/**
 * An OpenAI-shaped upstream whose streams send one chunk and then hold the connection open until the
 * client goes away, and whose non-stream answers wait HOLD_MS: requests that stay in flight on demand.
 */
const HOLD_MS = 800;
let openStreams = 0;
const hanging = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 60,
  async fetch(request) {
    const body = (await request.json()) as { stream?: boolean };
    if (!body.stream) {
      await Bun.sleep(HOLD_MS);
      return Response.json({
        id: "c1",
        object: "chat.completion",
        created: 1,
        model: "slow",
        choices: [{ index: 0, message: { role: "assistant", content: "late" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      });
    }
    const chunk = { id: "c1", object: "chat.completion.chunk", created: 1, model: "slow", choices: [{ index: 0, delta: { role: "assistant", content: "hi" }, finish_reason: null }] };
    let timer: ReturnType<typeof setInterval> | undefined;
    openStreams += 1;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(`data: ${JSON.stringify(chunk)}\n\n`));
        // Keep-alive comments, so the gateway's upstream idle bound never cuts the stream.
        timer = setInterval(() => controller.enqueue(new TextEncoder().encode(": ping\n\n")), 200);
      },
      cancel() {
        clearInterval(timer);
        openStreams -= 1;
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  },
});

const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
# Many admin calls in a burst: above the default admin rate limit (20/s, burst 100).
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  local: {protocol: mock}
  hold: {protocol: openai, base_url: "http://127.0.0.1:${hanging.port}/v1", api_key: "sk-hold"}
models:
  mock-1: {provider: local}
  slow-1: {provider: hold, model: slow}
pools:
  chat: {members: [{model: mock-1}]}
  slow: {members: [{model: slow-1}]}
rate_card:
  mock-1: {input: 1000000, output: 1000000}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
groups:
  cfg-team:
    limits: [{window: day, requests: 1000}]
    child_default: [{window: minute, requests: 7}, {concurrent: 3}]
`;

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
  void hanging.stop(true);
});

const admin = (path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json", ...init.headers } });
const post = (path: string, body: unknown) => admin(path, { method: "POST", body: JSON.stringify(body) });
const patch = (path: string, body: unknown) => admin(path, { method: "PATCH", body: JSON.stringify(body) });
const del = (path: string) => admin(path, { method: "DELETE" });

async function group(body: Record<string, unknown>): Promise<void> {
  const response = await post("/groups", body);
  expect(response.status).toBe(201);
}

async function mint(group: string | null, extra: Record<string, unknown> = {}): Promise<{ id: string; token: string; group_provisioned: boolean }> {
  const response = await post("/keys", { name: `k-${group}`, group, ...extra });
  expect(response.status).toBe(201);
  return json(response);
}

/** Room for roomInThisMinute's wait on top of the scenario itself. */
const MINUTE_WAIT_TIMEOUT = 20_000;

const openai = (token: string) => new OpenAI({ apiKey: token, baseURL: `${gw.data}/v1`, maxRetries: 0 });
const chat = (token: string, model = "chat", text = "hello there") => openai(token).chat.completions.create({ model, messages: [{ role: "user", content: text }] });
const raw = (path: string, headers: Record<string, string>, body: unknown, signal?: AbortSignal) =>
  fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body), signal });

/** The error an SDK call threw. */
async function thrown(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await call;
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error;
    throw error;
  }
  throw new Error("expected the call to fail");
}

/** Waits out the end of the minute when too little of it is left for a minute-window scenario. */
async function roomInThisMinute(seconds = 10): Promise<void> {
  const left = 60 - (Date.now() / 1000) % 60;
  if (left < seconds) await Bun.sleep(left * 1000 + 50);
}

describe("group CRUD", () => {
  test("create, read, list, patch (three-state) and delete an API group", async () => {
    const created = await post("/groups", { name: "crud-a", limits: [{ window: "hour", tokens: 5000 }, { concurrent: 4, pool: "chat" }], child_default: [{ window: "day", requests: 10 }] });
    expect(created.status).toBe(201);
    expect(await json(created)).toEqual({
      name: "crud-a",
      enabled: true,
      parent: null,
      limits: [{ window: "hour", requests: null, tokens: 5000, budget_cents: null, pool: null }, { concurrent: 4, pool: "chat" }],
      child_default: [{ window: "day", requests: 10, tokens: null, budget_cents: null, pool: null }],
      source: "api",
    });
    await group({ name: "crud-b", parent: "crud-a" });
    const listed = (await json(await admin("/groups"))).items.map((g: { name: string; source: string }) => [g.name, g.source]);
    expect(listed).toContainEqual(["cfg-team", "config"]);
    expect(listed).toContainEqual(["crud-b", "api"]);
    expect((await json(await admin("/groups/crud-b"))).parent).toBe("crud-a");

    const frozen = await json(await patch("/groups/crud-a", { enabled: false }));
    expect(frozen.enabled).toBe(false);
    expect(frozen.limits.length).toBe(2);
    const cleared = await json(await patch("/groups/crud-a", { limits: null, child_default: null }));
    expect(cleared.limits).toEqual([]);
    expect("child_default" in cleared).toBe(false);
    expect((await patch("/groups/crud-a", { enabled: null })).status).toBe(400);

    expect((await del("/groups/crud-a")).status).toBe(409);
    expect((await del("/groups/crud-b")).status).toBe(200);
    expect((await del("/groups/crud-a")).status).toBe(200);
    expect((await admin("/groups/crud-a")).status).toBe(404);
  });

  test("refusals: duplicate 409, unknown parent 400, unknown pool 400, unknown member 400, config groups read-only 409", async () => {
    await group({ name: "dup" });
    const dup = await post("/groups", { name: "dup" });
    expect(dup.status).toBe(409);
    expect((await json(dup)).error.code).toBe("conflict");
    const orphan = await post("/groups", { name: "orphan", parent: "nobody" });
    expect(orphan.status).toBe(400);
    expect((await json(orphan)).error.message).toContain("nobody");
    expect((await post("/groups", { name: "p", limits: [{ window: "day", requests: 1, pool: "nope" }] })).status).toBe(400);
    const unknown = await post("/groups", { name: "u", limits: [], colour: "red" });
    expect(unknown.status).toBe(400);
    expect((await json(unknown)).error.code).toBe("invalid_request");
    expect((await post("/groups", { name: "w", limits: [{ window: "fortnight", requests: 1 }] })).status).toBe(400);
    const readOnly = await patch("/groups/cfg-team", { enabled: false });
    expect(readOnly.status).toBe(409);
    expect((await json(readOnly)).error.message).toContain("config file");
    expect((await del("/groups/cfg-team")).status).toBe(409);
  });

  test("a group with a bound key cannot be deleted until the key is", async () => {
    await group({ name: "bound" });
    const key = await mint("bound");
    const refused = await del("/groups/bound");
    expect(refused.status).toBe(409);
    expect((await json(refused)).error.message).toContain("keys bound");
    expect((await del(`/keys/${key.id}`)).status).toBe(200);
    expect((await del("/groups/bound")).status).toBe(200);
  });

  test("a key minted with a new group under a parent provisions a leaf from the nearest child_default", async () => {
    const key = await mint("cfg-team-alice", { parent: "cfg-team" });
    expect(key.group_provisioned).toBe(true);
    const leaf = await json(await admin("/groups/cfg-team-alice"));
    expect(leaf).toMatchObject({ parent: "cfg-team", source: "api", limits: [{ window: "minute", requests: 7 }, { concurrent: 3, pool: null }] });
    // Rule 1: an existing group binds, with its actual parent or none given; nothing is provisioned.
    expect((await mint("cfg-team-alice", { parent: "cfg-team" })).group_provisioned).toBe(false);
    expect((await mint("cfg-team-alice")).group_provisioned).toBe(false);
    expect((await post("/keys", { name: "x", group: "cfg-team-alice", parent: "crud-zzz" })).status).toBe(409);
    expect((await post("/keys", { name: "x", group: "never-made" })).status).toBe(400);
  });

  test("a token exchange's per-person leaf name (user:<sub>@<team>) is a group name, read back percent-encoded", async () => {
    const leafName = "user:auth0|5f3a@cfg-team";
    const key = await mint(leafName, { parent: "cfg-team" });
    expect(key.group_provisioned).toBe(true);
    const leaf = await json(await admin(`/groups/${encodeURIComponent(leafName)}`));
    expect(leaf).toMatchObject({ name: leafName, parent: "cfg-team", source: "api" });
    expect((await post("/groups", { name: "forge:octocat@cfg-team", parent: "cfg-team" })).status).toBe(201);
    // Other names keep the plain pattern: no spaces, no other prefix, nothing past the bounds.
    for (const name of ["team a", "bot:x@cfg-team", `user:${"x".repeat(256)}@cfg-team`, "user:@cfg-team"]) expect((await post("/groups", { name, parent: "cfg-team" })).status).toBe(400);
  });
});

describe("enforcement", () => {
  test("a minute request limit: the OpenAI SDK raises RateLimitError with Retry-After; other protocols answer their own 429", async () => {
    await roomInThisMinute();
    await group({ name: "rl", limits: [{ window: "minute", requests: 2 }] });
    const { token } = await mint("rl");
    await chat(token);
    await chat(token);
    const error = await thrown(chat(token));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.status).toBe(429);
    expect(error.type).toBe("rate_limit_error");
    const retryAfter = Number(error.headers?.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const anthropic = await raw("/v1/messages", { "x-api-key": token, "anthropic-version": "2023-06-01" }, { model: "chat", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });
    expect(anthropic.status).toBe(429);
    expect(anthropic.headers.get("retry-after")).not.toBeNull();
    expect((await json(anthropic)).error.type).toBe("rate_limit_error");
  }, MINUTE_WAIT_TIMEOUT);

  test("an exhausted budget answers insufficient_quota (OpenAI 429, Bedrock 400)", async () => {
    // mock-1 costs one cent a token: the first answer spends the whole budget.
    await group({ name: "budget", limits: [{ window: "month", budget_cents: 1 }] });
    const { token } = await mint("budget");
    await chat(token);
    const error = await thrown(chat(token));
    expect(error.status).toBe(429);
    expect(error.type).toBe("insufficient_quota");
    expect(error.code).toBe("insufficient_quota");
    const bedrock = await raw("/model/chat/converse", { authorization: `Bearer ${token}` }, { messages: [{ role: "user", content: [{ text: "hi" }] }] });
    expect(bedrock.status).toBe(400);
    expect((await json(bedrock)).type).toBe("insufficient_quota");
    const usage = await json(await admin("/groups/budget/usage"));
    expect(usage.buckets[0]).toMatchObject({ window: "month", budget_cap: 1, budget_remaining_cents: 0 });
  });

  test("a parent's exhausted budget stops a child that has room", async () => {
    await group({ name: "org", limits: [{ window: "day", budget_cents: 1 }] });
    await group({ name: "org-dev", parent: "org", limits: [{ window: "minute", requests: 100 }] });
    await group({ name: "org-ops", parent: "org", limits: [{ window: "minute", requests: 100 }] });
    const dev = await mint("org-dev");
    const ops = await mint("org-ops");
    await chat(dev.token);
    const error = await thrown(chat(ops.token));
    expect(error.type).toBe("insufficient_quota");
    expect(error.message).toContain("org");
  });

  test("a frozen group refuses every request through it (its children too) until it is enabled again", async () => {
    await group({ name: "ice" });
    await group({ name: "ice-leaf", parent: "ice" });
    const { token } = await mint("ice-leaf");
    await chat(token);
    await patch("/groups/ice", { enabled: false });
    const error = await thrown(chat(token));
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(error.message).toContain("frozen");
    await patch("/groups/ice", { enabled: true });
    await chat(token);
  });

  test("a concurrency cap holds under parallel requests", async () => {
    await group({ name: "cc", limits: [{ concurrent: 2 }] });
    const { token } = await mint("cc");
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => chat(token, "slow")));
    const ok = results.filter((r) => r.status === "fulfilled").length;
    const limited = results.filter((r) => r.status === "rejected" && r.reason instanceof OpenAI.RateLimitError).length;
    expect([ok, limited]).toEqual([2, 3]);
    // The slots came back when the answers did.
    const again = await Promise.allSettled([chat(token, "slow"), chat(token, "slow")]);
    expect(again.every((r) => r.status === "fulfilled")).toBe(true);
  });

  test("concurrency slots are released when clients disconnect mid-stream", async () => {
    await group({ name: "cs", limits: [{ concurrent: 2 }] });
    const { token } = await mint("cs");
    const body = { model: "slow", stream: true, messages: [{ role: "user", content: "hold" }] };
    const open = async () => {
      const controller = new AbortController();
      const response = await raw("/v1/chat/completions", { authorization: `Bearer ${token}` }, body, controller.signal);
      expect(response.status).toBe(200);
      const reader = response.body!.getReader();
      await reader.read(); // the first chunk: the stream is under way
      return { controller, reader };
    };
    const first = await open();
    const second = await open();
    const third = await raw("/v1/chat/completions", { authorization: `Bearer ${token}` }, body);
    expect(third.status).toBe(429);
    expect(third.headers.get("retry-after")).toBe("1");
    first.controller.abort();
    second.controller.abort();
    // The gateway hears the disconnects and cancels its upstream streams.
    for (let i = 0; i < 50 && openStreams > 0; i++) await Bun.sleep(50);
    expect(openStreams).toBe(0);
    const fresh = await open();
    fresh.controller.abort();
  });
});

describe("metering", () => {
  test("usage views add up to the ledger, and the key series carry the key's labels", async () => {
    await roomInThisMinute();
    await group({ name: "meter", limits: [{ window: "day", budget_cents: 1000000 }, { window: "minute", requests: 50, tokens: 100000 }] });
    const a = await mint("meter", { labels: { team: "blue" } });
    const b = await mint("meter");
    const counted = { a: 0, b: 0 };
    for (const [key, text] of [[a, "one two three"], [a, "four"], [b, "five six"]] as const) {
      const answer = await chat(key.token, "chat", text);
      const tokens = answer.usage!.prompt_tokens + answer.usage!.completion_tokens;
      if (key === a) counted.a += tokens;
      else counted.b += tokens;
    }
    // A stream is charged too (the mock reports its usage at the end).
    const stream = await openai(b.token).chat.completions.create({ model: "chat", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "seven" }] });
    for await (const chunk of stream) if (chunk.usage) counted.b += chunk.usage.prompt_tokens + chunk.usage.completion_tokens;

    const keyA = await json(await admin(`/keys/${a.id}/usage`));
    expect(keyA).toMatchObject({ id: a.id, group: "meter", budget_period: "total", window_start: 0, requests: 2, tokens: counted.a, spend_cents: counted.a });
    // The tightest cap up the chain: 4 of 50 requests this minute outweigh the tokens.
    expect(keyA.rate_headroom).toBeCloseTo(Math.min(1 - 4 / 50, 1 - (counted.a + counted.b) / 100000), 6);
    const bucket = (await json(await admin("/groups/meter/usage"))).buckets;
    expect(bucket).toEqual([
      { window: "day", requests: 4, tokens: counted.a + counted.b, spend_cents: counted.a + counted.b, requests_cap: null, tokens_cap: null, budget_cap: 1000000, budget_remaining_cents: 1000000 - counted.a - counted.b },
      { window: "minute", requests: 4, tokens: counted.a + counted.b, spend_cents: counted.a + counted.b, requests_cap: 50, tokens_cap: 100000, budget_cap: null },
    ]);
    const rows = (await json(await admin("/usage/keys"))).items.filter((r: { id: string }) => r.id === a.id || r.id === b.id);
    expect(rows.map((r: { id: string; requests: number; spend_micros: number }) => [r.id, r.requests, r.spend_micros])).toEqual(
      [[a.id, 2, counted.a * 1e6], [b.id, 2, counted.b * 1e6]].sort((x, y) => (y[2] as number) - (x[2] as number)),
    );
    const future = await json(await admin(`/usage/keys?from=${Math.floor(Date.now() / 1000) + 3600}`));
    expect(future.items).toEqual([]);
    expect((await admin("/usage/keys?from=yesterday")).status).toBe(400);

    // The same totals, summed straight from the ledger on disk.
    const db = new Database(join(gw.dir, "state/gateway.db"), { readonly: true });
    const ledger = db.query("SELECT SUM(requests) AS requests, SUM(input + output + cache_read + cache_creation) AS tokens FROM ledger WHERE group_name = 'meter'").get() as { requests: number; tokens: number };
    db.close();
    expect(ledger).toEqual({ requests: 4, tokens: counted.a + counted.b });

    const metrics = await (await fetch(`${gw.data}/metrics`, { headers: { authorization: `Bearer ${a.token}` } })).text();
    expect(metrics).toContain(`gateway_key_tokens_total{key="${a.id}",team="blue"} ${counted.a}`);
    expect(metrics).toContain(`gateway_key_spend_cents{key="${a.id}",team="blue"} ${counted.a}`);
    expect(metrics).toContain(`gateway_key_budget_remaining_cents{key="${b.id}"} ${1000000 - counted.a - counted.b}`);
  }, MINUTE_WAIT_TIMEOUT);
});
