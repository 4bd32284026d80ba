// The operator console's live data on the built binary (design/console.md): admin GET /requests (the ring
// of the last request-log records), GET /events (records and breaker changes as server-sent events, read
// with fetch and the bearer header) and GET /stats (the data listener's document). Requests are sent with
// the OpenAI SDK to the built-in mock provider and to a lane whose upstream refuses connections.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { createParser } from "eventsource-parser";
import { freePort, json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_ADMIN: "live-admin-token-5a4b3c2d", GW_RO: "live-readonly-token-9f8e7d6c", GW_SIGNING_KEY: "live-signing-key-0123456789ab" };
const CONFIG = `${LISTEN_ANY}store: {module: sqlite, settings: {path: ./state/gateway.db}}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  local: {protocol: mock}
  refused: {protocol: openai, base_url: "http://127.0.0.1:${freePort()}/v1", api_key: {env: GW_SIGNING_KEY}}
models:
  mock-1: {provider: local}
  down: {provider: refused, model: gpt-4o-mini}
pools:
  chat: {members: [{model: mock-1}]}
  broken: {members: [{model: down}], breaker: {consecutive_n: 1, base_cooldown_secs: 600, max_cooldown_secs: 600}}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}, {token: {env: GW_RO}, scope: read-only}]
groups:
  team: {limits: [{window: day, requests: 1000}]}
`;

let gw: RunningGateway;
let key: { id: string; token: string };
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
  const minted = await fetch(`${gw.admin}/keys`, { method: "POST", headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" }, body: JSON.stringify({ name: "console", group: "team" }) });
  expect(minted.status).toBe(201);
  key = await json(minted);
});
afterAll(async () => {
  await gw?.stop();
});

/** An admin GET with the read-only principal's bearer, as the console sends it (null: no credential). */
const read = (path: string, token: string | null = ENV.GW_RO, init: RequestInit = {}) =>
  fetch(`${gw.admin}${path}`, { ...init, headers: token === null ? {} : { authorization: `Bearer ${token}` } });

interface Received {
  readonly event: string;
  readonly data: any;
  readonly at: number;
}

/** GET /events read with fetch and eventsource-parser; `events` fills as they arrive, `ended` settles when the stream does. */
async function subscribe(token = ENV.GW_RO) {
  const abort = new AbortController();
  const response = await read("/events", token, { signal: abort.signal });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/event-stream");
  const events: Received[] = [];
  const comments: string[] = [];
  const parser = createParser({ onEvent: (e) => events.push({ event: e.event ?? "message", data: JSON.parse(e.data), at: Date.now() }), onComment: (c) => comments.push(c.trim()) });
  const ended = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body!) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      // Aborted by the test.
    }
  })();
  return { events, comments, ended, close: () => abort.abort() };
}

async function until<T>(what: () => T | undefined, ms = 2000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = what();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms`);
    await Bun.sleep(10);
  }
}

const client = () => new OpenAI({ apiKey: key.token, baseURL: `${gw.data}/v1`, maxRetries: 0 });

describe("requests sent with the OpenAI SDK", () => {
  test("arrive on GET /events within 2 s and are in GET /requests, newest first, with their model, status and key", async () => {
    const stream = await subscribe();
    try {
      const sent = Date.now();
      const answer = await client().chat.completions.create({ model: "chat", messages: [{ role: "user", content: "hello" }] });
      expect(answer.choices[0]!.message.content).toBeString();
      const streamed = await client().chat.completions.create({ model: "mock-1", messages: [{ role: "user", content: "hello again" }], stream: true });
      for await (const _ of streamed);
      const refused = await client()
        .chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "x" }] })
        .then(() => 200, (e: { status?: number }) => e.status);
      expect(refused).toBe(404);

      const arrived = await until(() => (stream.events.filter((e) => e.event === "request").length >= 3 ? stream.events.filter((e) => e.event === "request") : undefined));
      expect(arrived.map((e) => [e.data.model, e.data.status, e.data.key_id, e.data.stream])).toEqual([
        ["chat", 200, key.id, false],
        ["mock-1", 200, key.id, true],
        ["no-such-model", 404, key.id, false],
      ]);
      for (const e of arrived) expect(e.at - sent).toBeLessThan(2000);
      expect(arrived[0]!.data).toMatchObject({ pool: "chat", lane: "mock-1", provider: "local", outcome: "ok", group: "team", principal: key.id, error: null });
      // A metered request carries its billed usage; the record has no text of the prompt or the answer.
      expect(arrived[0]!.data.usage.output_tokens).toBeGreaterThan(0);
      expect(JSON.stringify(arrived.map((e) => e.data))).not.toContain("hello");
      expect(JSON.stringify(arrived.map((e) => e.data))).not.toContain(key.token);

      const page = await json(await read(`/requests?key_id=${key.id}`));
      expect(page.items.slice(0, 3).map((r: { model: string; status: number }) => [r.model, r.status])).toEqual([
        ["no-such-model", 404],
        ["mock-1", 200],
        ["chat", 200],
      ]);
      // The same records as the stream carried.
      expect(page.items[2]).toEqual(arrived[0]!.data);
    } finally {
      stream.close();
    }
  });

  test("GET /requests filters by model, status, outcome, group and key, and limits", async () => {
    for (let i = 0; i < 3; i++) await client().chat.completions.create({ model: "chat", messages: [{ role: "user", content: "x" }] });
    const items = async (query: string) => (await json(await read(`/requests?${query}`))).items as { model: string; status: number; outcome: string; key_id: string | null; group: string | null }[];
    expect((await items("model=chat")).every((r) => r.model === "chat")).toBe(true);
    expect((await items("model=chat")).length).toBeGreaterThanOrEqual(4);
    expect((await items("status=404")).map((r) => r.model)).toContain("no-such-model");
    expect((await items("status=404")).every((r) => r.status === 404)).toBe(true);
    expect((await items("outcome=client_error")).every((r) => r.outcome === "client_error")).toBe(true);
    expect((await items("outcome=ok&model=chat&limit=2")).length).toBe(2);
    expect((await items("group=team")).length).toBeGreaterThanOrEqual(6);
    expect(await items("group=nobody")).toEqual([]);
    expect(await items("key_id=key_unknown")).toEqual([]);
    expect((await items("")).length).toBeGreaterThanOrEqual(6);
  });

  test("a bad filter is 400 in the admin envelope naming the parameter", async () => {
    for (const [query, name] of [
      ["limit=0", "limit"],
      ["limit=1001", "limit"],
      ["limit=ten", "limit"],
      ["status=abc", "status"],
      ["status=99", "status"],
      ["outcome=fine", "outcome"],
      [`model=${"m".repeat(300)}`, "model"],
      ["key_id=", "key_id"],
    ] as const) {
      const response = await read(`/requests?${query}`);
      expect({ query, status: response.status }).toEqual({ query, status: 400 });
      const body = await json(response);
      expect(body.error.code).toBe("invalid_request");
      expect(body.error.message.startsWith(`${name}:`)).toBe(true);
    }
  });
});

describe("breakers", () => {
  test("a lane whose upstream refuses connections shows open in admin GET /stats, and a breaker event is received", async () => {
    const stream = await subscribe();
    try {
      const status = await client()
        .chat.completions.create({ model: "broken", messages: [{ role: "user", content: "x" }] })
        .then(() => 200, (e: { status?: number }) => e.status);
      expect(status).toBeGreaterThanOrEqual(500);
      const change = await until(() => stream.events.find((e) => e.event === "breaker"));
      expect(change.data).toMatchObject({ pool: "broken", lane: "down", state: "open" });
      expect(Date.parse(change.data.ts)).toBeGreaterThan(0);
      const stats = await json(await read("/stats"));
      expect(stats.pools.broken.members[0]).toMatchObject({ lane: "down", state: "open", usable: false });
      expect(stats.pools.chat.members[0]).toMatchObject({ lane: "mock-1", state: "closed" });
      // The data listener's /stats (with a client credential) is the same document.
      const data = await json(await fetch(`${gw.data}/stats`, { headers: { authorization: `Bearer ${key.token}` } }));
      expect(Object.keys(data)).toEqual(Object.keys(stats));
      expect(data.pools.broken.members[0].state).toBe("open");
      expect(data.lanes.map((l: { lane: string }) => l.lane)).toEqual(stats.lanes.map((l: { lane: string }) => l.lane));
      const record = await until(() => stream.events.find((e) => e.event === "request" && e.data.model === "broken"));
      expect(record.data).toMatchObject({ pool: "broken", lane: "down", outcome: "error" });
    } finally {
      stream.close();
    }
  });
});

describe("access", () => {
  test("no credential is 401 on all three; a wrong one too", async () => {
    for (const path of ["/requests", "/events", "/stats"]) {
      for (const token of [null, "not-a-token"]) {
        const response = await read(path, token);
        expect({ path, status: response.status }).toEqual({ path, status: 401 });
        expect((await json(response)).error.code).toBe("unauthorized");
      }
    }
  });

  test("the full-scope token reads them too", async () => {
    expect((await read("/requests", ENV.GW_ADMIN)).status).toBe(200);
    expect((await read("/stats", ENV.GW_ADMIN)).status).toBe(200);
    const stream = await subscribe(ENV.GW_ADMIN);
    stream.close();
  });

  test("16 event streams at once; the 17th is 429 in the admin envelope; a closed one frees its place", async () => {
    const open = [];
    try {
      for (let i = 0; i < 16; i++) open.push(await subscribe());
      const refused = await read("/events");
      expect(refused.status).toBe(429);
      expect((await json(refused)).error).toMatchObject({ code: "rate_limited" });
      // HEAD takes no place (its answer has no body, so no stream is opened for it).
      const head = await read("/events", ENV.GW_RO, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.headers.get("content-type")).toBe("text/event-stream");
      open.pop()!.close();
      // The gateway hears the client leave when its connection closes.
      let again: Response | undefined;
      for (const deadline = Date.now() + 2000; Date.now() < deadline; await Bun.sleep(20)) {
        const response = await read("/events");
        if (response.status === 200) {
          again = response;
          break;
        }
        await response.body?.cancel();
      }
      expect(again?.status).toBe(200);
      await again?.body?.cancel();
    } finally {
      for (const s of open) s.close();
    }
  });
});

test("SIGTERM with an event stream open: the stream ends and the gateway exits 0 within a few seconds", async () => {
  const own = await startGateway(CONFIG, { env: ENV });
  try {
    const response = await fetch(`${own.admin}/events`, { headers: { authorization: `Bearer ${ENV.GW_RO}` } });
    expect(response.status).toBe(200);
    const body = (async () => {
      for await (const _ of response.body!);
    })().catch(() => undefined);
    await Bun.sleep(100);
    const started = Date.now();
    const code = await own.stop("SIGTERM", 10_000);
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
    await body;
    expect(own.logs.some((line) => line.includes('"msg":"stopped"'))).toBe(true);
  } finally {
    await own.stop("SIGKILL");
  }
});
