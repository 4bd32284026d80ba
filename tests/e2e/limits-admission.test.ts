// Admission by reservation under attack, on the built binary (issue 22 class 5), beyond
// limits-hardening.test.ts: 64 clients against a request cap, a concurrency cap and a token cap held by
// streams, and a parent's cap shared by two child groups; a total window's refusal without Retry-After in
// the Anthropic and Bedrock shapes; and every reservation and slot freed however the request ends: the
// client leaving before the first byte, a pool failing over, a 400 after admission.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { protocolCalls } from "../support/protocol-calls.ts";

const ENV = { GW_SIGNING_KEY: "e2e-limits-admission-signing-3a9e", GW_ADMIN: "e2e-limits-admission-admin-b71f" };

/**
 * An OpenAI-shaped upstream that answers after DELAY_MS with USAGE tokens (stream or not; a stream sends
 * usage only when asked, as OpenAI does) and counts the requests it holds at once. `FAIL` in the text: 500.
 */
const DELAY_MS = 300;
const USAGE = { prompt_tokens: 50, completion_tokens: 50, total_tokens: 100 };
let inflight = 0;
let peak = 0;
const up = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 30,
  async fetch(request) {
    const body = (await request.json()) as { stream?: boolean; stream_options?: { include_usage?: boolean }; messages: { content: string }[] };
    const text = body.messages.at(-1)!.content;
    if (new URL(request.url).pathname.includes("/bad/") || text.includes("FAIL")) return Response.json({ error: { message: "down", type: "server_error" } }, { status: 500 });
    peak = Math.max(peak, ++inflight);
    try {
      await Bun.sleep(text.includes("FAST") ? 0 : DELAY_MS);
    } finally {
      inflight -= 1;
    }
    const base = { id: "c1", created: 1, model: "m" };
    if (!body.stream) return Response.json({ ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "fine" }, finish_reason: "stop" }], usage: USAGE });
    const chunk = (choices: unknown[], usage?: unknown) => `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices, ...(usage ? { usage } : {}) })}\n\n`;
    let sse = chunk([{ index: 0, delta: { role: "assistant", content: "fine" }, finish_reason: null }]) + chunk([{ index: 0, delta: {}, finish_reason: "stop" }]);
    if (body.stream_options?.include_usage) sse += chunk([], USAGE);
    return new Response(sse + "data: [DONE]\n\n", { headers: { "content-type": "text/event-stream" } });
  },
});

const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  up: {protocol: openai, base_url: "http://127.0.0.1:${up.port}/v1", api_key: sk-up}
  bad: {protocol: openai, base_url: "http://127.0.0.1:${up.port}/bad/v1", api_key: sk-up}
models:
  gpt: {provider: up, model: m}
  broken: {provider: bad, model: m}
  failing: {provider: up, model: m}
pools:
  flaky: {members: [{model: broken}, {model: gpt}], breaker: {consecutive_n: 1000, error_rate: 1, min_requests: 1000}}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
groups:
  rpt: {limits: [{window: total, requests: 50}]}
  conc: {limits: [{concurrent: 4}]}
  stream-tokens: {limits: [{window: total, tokens: 2000}]}
  parent: {limits: [{window: total, tokens: 2000}]}
  child-a: {parent: parent}
  child-b: {parent: parent}
  spent: {limits: [{window: total, tokens: 100}]}
  broke: {limits: [{window: total, budget_cents: 100}]}
  tight: {limits: [{window: total, tokens: 2000}, {concurrent: 1}]}
rate_card:
  gpt: {input: 1000000, output: 1000000}
`;

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
  void up.stop(true);
});

const admin = (path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json", ...init.headers } });
async function mint(group: string): Promise<string> {
  const response = await admin("/keys", { method: "POST", body: JSON.stringify({ name: `k-${group}`, group }) });
  expect(response.status).toBe(201);
  return (await json(response)).token;
}
const chat = (token: string, body: Record<string, unknown> = {}, signal?: AbortSignal) =>
  fetch(`${gw.data}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt", messages: [{ role: "user", content: "hello" }], ...body }),
    signal,
  });

/**
 * 64 clients, each sending back to back for 4 s (a "retry after 1 s" refusal is retried shortly, any other
 * ends it): the statuses seen, and the tokens the upstream billed for what was served.
 */
async function swarm(tokens: readonly string[], body: Record<string, unknown> = {}): Promise<{ served: number; billed: number; statuses: Set<number> }> {
  const deadline = Date.now() + 4_000;
  let served = 0;
  const statuses = new Set<number>();
  await Promise.all(
    Array.from({ length: 64 }, async (_, i) => {
      while (Date.now() < deadline) {
        const response = await chat(tokens[i % tokens.length]!, body);
        statuses.add(response.status);
        await response.arrayBuffer();
        if (response.status === 200) served += 1;
        else if (response.status === 429 && response.headers.get("retry-after") === "1") await Bun.sleep(100);
        else break;
      }
    }),
  );
  return { served, billed: served * USAGE.total_tokens, statuses };
}

const usageOf = async (group: string) => (await json(await admin(`/groups/${group}/usage`))).buckets[0];

describe("64 clients against a 300 ms upstream", () => {
  test("a request cap of 50 in total serves exactly 50", async () => {
    const { served } = await swarm([await mint("rpt")]);
    expect(served).toBe(50);
    expect((await usageOf("rpt")).requests).toBe(50);
  }, 15_000);

  for (const stream of [false, true])
    test(`a concurrency cap of 4 never lets a fifth request reach the upstream${stream ? " (streams)" : ""}`, async () => {
      peak = 0;
      const { served, statuses } = await swarm([await mint("conc")], { stream });
      expect(served).toBeGreaterThan(8);
      expect(peak).toBe(4);
      expect([...statuses].sort()).toEqual([200, 429]);
    }, 15_000);

  test("a 2,000 token cap held by SDK-style streams (no include_usage) is overshot by at most 10% plus one request", async () => {
    const { billed } = await swarm([await mint("stream-tokens")], { stream: true });
    const { tokens } = await usageOf("stream-tokens");
    console.log(`token cap 2000, 64 streaming clients, upstream counting 50 input tokens for a 19-token body: ${tokens} tokens metered, ${billed} billed`);
    expect(tokens).toBe(billed);
    expect(billed).toBeGreaterThanOrEqual(2000);
    expect(billed).toBeLessThanOrEqual(2000 * 1.1 + USAGE.total_tokens);
  }, 15_000);

  test("a parent's 2,000 token cap shared by two child groups, 32 clients each", async () => {
    const { billed } = await swarm([await mint("child-a"), await mint("child-b")]);
    const parent = await usageOf("parent");
    console.log(`parent token cap 2000, two child groups of 32 clients: ${parent.tokens} tokens metered, ${billed} billed`);
    expect(parent.tokens).toBe(billed);
    expect(billed).toBeGreaterThanOrEqual(2000);
    expect(billed).toBeLessThanOrEqual(2000 * 1.1 + USAGE.total_tokens);
  }, 15_000);
});


describe("a total window's refusal carries no Retry-After, in every caller's shape", () => {
  for (const group of ["spent", "broke"])
    test(`all six protocols: ${group === "spent" ? "tokens" : "budget"}`, async () => {
      const token = await mint(group);
      expect((await chat(token, { messages: [{ role: "user", content: "FAST" }] })).status).toBe(200);
      for (const [protocol, [path, headers, body]] of Object.entries(protocolCalls(token, "gpt", "FAST"))) {
        const refused = await fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
        // Bedrock says an exhausted budget as 400 ValidationException (docs/operations.md).
        expect({ protocol, status: refused.status }).toEqual({ protocol, status: protocol === "bedrock" && group === "broke" ? 400 : 429 });
        expect({ protocol, retryAfter: refused.headers.get("retry-after") }).toEqual({ protocol, retryAfter: null });
        const text = await refused.text();
        expect(text).not.toContain("retry after");
        expect(text).not.toContain("retryDelay");
      }
    });
});

describe("a reservation and a concurrency slot are freed however the request ends", () => {
  // `tight`: 2,000 tokens in total, one request at a time. Each request below reserves its max_tokens
  // (2,000): a reservation left behind would refuse the next one with "held by requests in flight".
  const BIG = { max_tokens: 2000, messages: [{ role: "user", content: "FAST" }] };
  let token: string;
  beforeAll(async () => {
    token = await mint("tight");
  });
  const nextIsServed = async () => {
    let response = await chat(token, BIG);
    // A slot freed as the client's connection closes may take a moment.
    for (let i = 0; i < 20 && response.status === 429; i++) {
      await response.arrayBuffer();
      await Bun.sleep(50);
      response = await chat(token, BIG);
    }
    expect(response.status).toBe(200);
    await response.arrayBuffer();
  };

  test("the client leaves before the first byte of a stream, and of a plain answer", async () => {
    for (const stream of [true, false]) {
      const controller = new AbortController();
      const pending = chat(token, { stream, max_tokens: 2000 }, controller.signal).catch(() => undefined);
      await Bun.sleep(100);
      controller.abort();
      await pending;
      await Bun.sleep(DELAY_MS + 100);
      await nextIsServed();
    }
  });

  test("the pool fails over from a 500 (several times): one reservation, freed once", async () => {
    for (let i = 0; i < 6; i++) {
      const response = await fetch(`${gw.data}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ ...BIG, model: "flaky" }),
      });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
    await nextIsServed();
  });

  test("a 400 after admission (a translated max-tokens out of range), and an upstream's own 500", async () => {
    const refused = await fetch(`${gw.data}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": token, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt", max_tokens: -5, messages: [{ role: "user", content: "FAST" }] }),
    });
    expect(refused.status).toBe(400);
    await refused.arrayBuffer();
    await nextIsServed();
    // Its own lane, which the failure cools down.
    const failed = await chat(token, { model: "failing", max_tokens: 2000, messages: [{ role: "user", content: "FAIL" }] });
    expect(failed.status).toBe(500);
    await failed.arrayBuffer();
    await nextIsServed();
  });
});
