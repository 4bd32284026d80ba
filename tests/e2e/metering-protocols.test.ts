// Every protocol's streams and answers are metered exactly, on the built binary (issue 22 class 4): for a
// same-protocol stream of each of the six protocols (Gemini both as SSE and as the streamed JSON array),
// short and longer than the gateway's 8 KiB usage edges, the key's ledger tokens equal what the upstream
// imitation reports for the very request the gateway forwarded, and the client's bytes are the upstream's.
// Translated streams the same. And a served answer is never charged zero: a non-stream answer whose
// upstream sends no usage is charged an estimate, with the warning line.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { ANTHROPIC_DEFAULT_KEY, startAnthropicUpstream } from "../support/upstreams/anthropic.ts";
import { BEDROCK_DEFAULT_KEY, startBedrockUpstream } from "../support/upstreams/bedrock.ts";
import { COHERE_DEFAULT_KEY, startCohereUpstream } from "../support/upstreams/cohere.ts";
import type { RecordedRequest, Upstream } from "../support/upstreams/common.ts";
import { GEMINI_DEFAULT_KEY, startGeminiUpstream } from "../support/upstreams/gemini.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";

const ENV = { GW_SIGNING_KEY: "e2e-metering-protocols-signing-81c2", GW_ADMIN: "e2e-metering-protocols-admin-2f0d" };
const ups = {
  openai: startOpenAIUpstream(),
  anthropic: startAnthropicUpstream(),
  gemini: startGeminiUpstream(),
  bedrock: startBedrockUpstream(),
  cohere: startCohereUpstream(),
  // The OpenAI imitation serves /v1/responses too.
  responses: startOpenAIUpstream(),
};
type Protocol = keyof typeof ups;
const PROTOCOLS = Object.keys(ups) as Protocol[];

/** An OpenAI-compatible server whose non-stream answers carry no `usage` member (some local servers). */
const silent = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    await request.text();
    return Response.json({ id: "s1", object: "chat.completion", created: 1, model: "silent", choices: [{ index: 0, message: { role: "assistant", content: "an answer from a server that reports no usage at all" }, finish_reason: "stop" }] });
  },
});

/** An OpenAI-compatible server that frames its stream with CRLF line endings (SSE allows CR, LF or CRLF). */
const CRLF_TEXT = ["a reply ", "framed with ", "carriage returns"];
const CRLF_USAGE = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };
const crlf = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const body = (await request.json()) as { stream_options?: { include_usage?: boolean } };
    const asked = body.stream_options?.include_usage === true;
    const event = (choices: unknown[], usage?: unknown) => `data: ${JSON.stringify({ id: "r1", object: "chat.completion.chunk", created: 1, model: "crlf", choices, ...(asked ? { usage: usage ?? null } : {}) })}\r\n\r\n`;
    const sse = CRLF_TEXT.map((t) => event([{ index: 0, delta: { content: t }, finish_reason: null }])).join("") + event([{ index: 0, delta: {}, finish_reason: "stop" }]) + (asked ? event([], CRLF_USAGE) : "") + "data: [DONE]\r\n\r\n";
    return new Response(sse, { headers: { "content-type": "text/event-stream" } });
  },
});

const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  openai: {protocol: openai, base_url: "${ups.openai.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  anthropic: {protocol: anthropic, base_url: "${ups.anthropic.baseURL}", api_key: ${ANTHROPIC_DEFAULT_KEY}}
  gemini: {protocol: gemini, base_url: "${ups.gemini.baseURL}", api_key: ${GEMINI_DEFAULT_KEY}}
  bedrock: {protocol: bedrock, base_url: "${ups.bedrock.url}", region: us-east-1, api_key: ${BEDROCK_DEFAULT_KEY}}
  cohere: {protocol: cohere, base_url: "${ups.cohere.baseURL}", api_key: ${COHERE_DEFAULT_KEY}}
  responses: {protocol: responses, base_url: "${ups.responses.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  silent: {protocol: openai, base_url: "http://127.0.0.1:${silent.port}/v1", api_key: sk-silent}
  local: {protocol: mock}
  crlf: {protocol: openai, base_url: "http://127.0.0.1:${crlf.port}/v1", api_key: sk-crlf}
models:
  openai-up: {provider: openai, model: gpt-test}
  anthropic-up: {provider: anthropic, model: claude-test}
  gemini-up: {provider: gemini, model: gemini-test}
  bedrock-up: {provider: bedrock, model: anthropic.claude-test}
  cohere-up: {provider: cohere, model: command-test}
  responses-up: {provider: responses, model: gpt-test}
  silent-up: {provider: silent, model: silent}
  mock-up: {provider: local}
  crlf-up: {provider: crlf, model: crlf}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
groups:
  roomy: {limits: [{window: day, tokens: 100000000}]}
`;

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all(Object.values(ups).map((u) => u.stop()));
  void silent.stop(true);
  void crlf.stop(true);
});

const admin = (path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json", ...init.headers } });
async function mint(): Promise<{ id: string; token: string }> {
  const response = await admin("/keys", { method: "POST", body: JSON.stringify({ name: "k", group: "roomy" }) });
  expect(response.status).toBe(201);
  return json(response);
}

/** The key's metered tokens once they reach `atLeast` (a stream's usage settles as it ends). */
async function keyTokens(id: string, atLeast: number): Promise<number> {
  let tokens = 0;
  for (let i = 0; i < 50; i++) {
    tokens = (await json(await admin(`/keys/${id}/usage`))).tokens;
    if (tokens >= atLeast) return tokens;
    await Bun.sleep(20);
  }
  return tokens;
}

/** A stream request in each protocol's own wire form, as its SDK sends it. */
function streamRequest(protocol: Protocol | "gemini-array", model: string, token: string, text: string): { path: string; headers: Record<string, string>; body: unknown } {
  const messages = [{ role: "user", content: text }];
  switch (protocol) {
    case "openai":
      return { path: "/v1/chat/completions", headers: { authorization: `Bearer ${token}` }, body: { model, stream: true, messages } };
    case "anthropic":
      return { path: "/v1/messages", headers: { "x-api-key": token, "anthropic-version": "2023-06-01" }, body: { model, stream: true, max_tokens: 4096, messages } };
    case "gemini":
    case "gemini-array":
      return {
        path: `/v1beta/models/${model}:streamGenerateContent${protocol === "gemini" ? "?alt=sse" : ""}`,
        headers: { "x-goog-api-key": token },
        body: { contents: [{ role: "user", parts: [{ text }] }] },
      };
    case "bedrock":
      return { path: `/model/${model}/converse-stream`, headers: { authorization: `Bearer ${token}` }, body: { messages: [{ role: "user", content: [{ text }] }] } };
    case "cohere":
      return { path: "/v2/chat", headers: { authorization: `Bearer ${token}` }, body: { model, stream: true, messages } };
    case "responses":
      return { path: "/v1/responses", headers: { authorization: `Bearer ${token}` }, body: { model, stream: true, input: text } };
  }
}

/** The total the upstream reported in a stream (or answer), read from its own bytes: the last figure of each member. */
function reportedTotal(protocol: Protocol, text: string): number {
  const last = (pattern: RegExp) => {
    const all = [...text.matchAll(pattern)];
    if (all.length === 0) throw new Error(`no ${pattern} in ${text.slice(-400)}`);
    return Number(all.at(-1)![1]);
  };
  switch (protocol) {
    case "openai":
      return last(/"total_tokens":(\d+)/g);
    case "responses":
      return last(/"total_tokens":(\d+)/g);
    case "gemini":
      return last(/"totalTokenCount":\s*(\d+)/g);
    case "bedrock":
      return last(/"totalTokens":(\d+)/g);
    case "anthropic":
      // Input, cache writes and cache reads are three separate counts; output includes thinking.
      return last(/"input_tokens":(\d+)/g) + last(/"cache_creation_input_tokens":(\d+)/g) + last(/"cache_read_input_tokens":(\d+)/g) + last(/"output_tokens":(\d+)/g);
    case "cohere":
      return last(/"tokens":\{"input_tokens":(\d+)/g) + last(/"tokens":\{"input_tokens":\d+,"output_tokens":(\d+)/g);
  }
}

/** The very request the gateway forwarded, sent again to the upstream: what it answers without the gateway. */
async function replay(up: Upstream, record: RecordedRequest): Promise<string> {
  const headers = Object.fromEntries(Object.entries(record.headers).filter(([name]) => !["host", "content-length", "connection", "accept-encoding"].includes(name)));
  const response = await fetch(`${up.url}${record.path}`, { method: "POST", headers, body: record.rawBody });
  expect(response.status).toBe(200);
  return response.text();
}

/** What differs between two answers to one request: ids and times. */
const normalised = (text: string) =>
  text
    .replace(/"(id|responseId|response_id|item_id|generation_id)":\s*"[^"]*"/g, '"$1":"X"')
    .replace(/"(created|created_at|completed_at|latencyMs)":\s*\d+/g, '"$1":0');

// Short, and longer than the 8 KiB the gateway keeps of a stream's start and end for its usage.
const LONG = "a long answer that outgrows the edges the gateway keeps of a stream ".repeat(400);
const CASES = [
  { size: "short", text: undefined, detailed: false },
  { size: "long", text: LONG, detailed: false },
  { size: "short, with cache and reasoning counts", text: undefined, detailed: true },
] as const;

describe("a same-protocol stream is charged exactly what its upstream reported", () => {
  for (const protocol of [...PROTOCOLS, "gemini-array" as const])
    for (const { size, text, detailed } of CASES)
      test(`${protocol}, ${size} answer`, async () => {
        const upProtocol: Protocol = protocol === "gemini-array" ? "gemini" : protocol;
        const up = ups[upProtocol];
        const { id, token } = await mint();
        up.reset();
        if (text || detailed) up.script({ ...(text && { text }), detailedUsage: detailed });
        const request = streamRequest(protocol, `${upProtocol}-up`, token, `count the tokens of this ${protocol} stream`);
        const through = await fetch(`${gw.data}${request.path}`, { method: "POST", headers: { "content-type": "application/json", ...request.headers }, body: JSON.stringify(request.body) });
        expect(through.status).toBe(200);
        const gatewayBytes = new Uint8Array(await through.arrayBuffer());
        const forwarded = up.requests.at(-1)!;
        if (text || detailed) up.script({ ...(text && { text }), detailedUsage: detailed });
        const direct = await replay(up, forwarded);
        const reported = reportedTotal(upProtocol, direct);
        expect(reported).toBeGreaterThan(text ? 1000 : 0);
        expect(await keyTokens(id, reported)).toBe(reported);
        // The client's bytes are the upstream's (an OpenAI client that did not ask for usage gets none: stream-usage.test.ts).
        const gatewayText = new TextDecoder().decode(gatewayBytes);
        // (Bedrock's binary frames carry a latency and a CRC over it: not comparable between two calls.)
        if (protocol !== "openai" && protocol !== "bedrock") expect(normalised(gatewayText)).toBe(normalised(direct));
      });
});

test("an OpenAI-compatible server framing its stream with CRLF: the client gets the stream without the usage it did not ask for, charged exactly", async () => {
  const { id, token } = await mint();
  const request = { model: "crlf-up", stream: true, messages: [{ role: "user", content: "hi" }] };
  const through = await fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(request) });
  // Before: no event end was found, the whole stream was taken for the usage chunk and cut: an empty body.
  const text = await through.text();
  const direct = await (await fetch(`http://127.0.0.1:${crlf.port}/v1/chat/completions`, { method: "POST", body: JSON.stringify(request) })).text();
  expect(text).toBe(direct);
  expect(await keyTokens(id, CRLF_USAGE.total_tokens)).toBe(CRLF_USAGE.total_tokens);
});

describe("a translated stream is charged exactly what its upstream reported", () => {
  const PAIRS: [Protocol | "gemini-array", Protocol][] = [
    ["openai", "anthropic"],
    ["anthropic", "openai"],
    ["gemini", "bedrock"],
    ["gemini-array", "cohere"],
    ["responses", "anthropic"],
    ["bedrock", "gemini"],
    ["cohere", "responses"],
  ];
  for (const [client, upstream] of PAIRS)
    for (const { size, text, detailed } of CASES)
      test(`${client} client, ${upstream} upstream, ${size} answer`, async () => {
        const up = ups[upstream];
        const { id, token } = await mint();
        up.reset();
        if (text || detailed) up.script({ ...(text && { text }), detailedUsage: detailed });
        const request = streamRequest(client, `${upstream}-up`, token, `count the tokens of this translated stream`);
        const through = await fetch(`${gw.data}${request.path}`, { method: "POST", headers: { "content-type": "application/json", ...request.headers }, body: JSON.stringify(request.body) });
        expect(through.status).toBe(200);
        await through.arrayBuffer();
        if (text || detailed) up.script({ ...(text && { text }), detailedUsage: detailed });
        const reported = reportedTotal(upstream, await replay(up, up.requests.at(-1)!));
        expect(await keyTokens(id, reported)).toBe(reported);
      });
});

/** The gateway's "usage estimated" warnings for `model`, once `count` have been logged. */
async function estimateWarnings(model: string, count: number): Promise<unknown[]> {
  let found: unknown[] = [];
  for (let i = 0; i < 50 && found.length < count; i++) {
    found = gw.logs.filter((l) => l.includes('"usage estimated')).map((l) => JSON.parse(l)).filter((r) => r.model === model);
    if (found.length < count) await Bun.sleep(20);
  }
  return found;
}

describe("a served answer is never charged zero", () => {
  test("a non-stream answer without usage, same protocol and translated: an estimate, with the warning line", async () => {
    const { id, token } = await mint();
    const asked = "please answer without any usage";
    const openai = await fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify({ model: "silent-up", messages: [{ role: "user", content: asked }] }) });
    expect(openai.status).toBe(200);
    expect((await json(openai)).usage).toBeUndefined();
    const first = await keyTokens(id, 1);
    // At least the answer's text at about 4 characters a token.
    expect(first).toBeGreaterThanOrEqual(Math.ceil("an answer from a server that reports no usage at all".length / 4));
    expect(await estimateWarnings("silent-up", 1)).toHaveLength(1);

    const anthropic = await fetch(`${gw.data}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": token, "anthropic-version": "2023-06-01" }, body: JSON.stringify({ model: "silent-up", max_tokens: 64, messages: [{ role: "user", content: asked }] }) });
    expect(anthropic.status).toBe(200);
    await anthropic.arrayBuffer();
    expect(await keyTokens(id, first + 1)).toBe(first + Math.ceil(asked.length / 4) + Math.ceil("an answer from a server that reports no usage at all".length / 4));
    expect(await estimateWarnings("silent-up", 2)).toHaveLength(2);
    // And counted per lane, for an alert on an upstream that stopped reporting usage.
    expect(await (await fetch(`${gw.data}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text()).toContain('gateway_usage_estimated_total{lane="silent-up"} 2');
  });

  for (const [client, upstream] of [["openai", "openai"], ["anthropic", "anthropic"], ["openai", "anthropic"], ["gemini", "bedrock"]] as const)
    test(`a ${client} client that leaves a ${upstream} stream after its first bytes is charged what it was served`, async () => {
      const up = ups[upstream];
      const { id, token } = await mint();
      up.reset();
      up.script({ text: LONG });
      const request = streamRequest(client, `${upstream}-up`, token, "leave early");
      const controller = new AbortController();
      const through = await fetch(`${gw.data}${request.path}`, { method: "POST", headers: { "content-type": "application/json", ...request.headers }, body: JSON.stringify(request.body), signal: controller.signal });
      expect(through.status).toBe(200);
      const reader = through.body!.getReader();
      await reader.read();
      controller.abort();
      await reader.cancel().catch(() => {});
      expect(await keyTokens(id, 1)).toBeGreaterThan(0);
    });
});

describe("the direct routes and the mock provider are metered too", () => {
  const chat = (path: string, token: string, body: Record<string, unknown>) =>
    fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify({ messages: [{ role: "user", content: "metered off the beaten path" }], ...body }) });

  for (const [path, upstream] of [["/openai/gpt-test", "openai"], ["/anthropic/claude-test", "anthropic"], ["/openai-up", "openai"]] as const)
    for (const stream of [false, true])
      test(`POST ${path}, ${stream ? "a stream without stream_options" : "an answer"}: what the upstream reported`, async () => {
        const up = ups[upstream];
        const { id, token } = await mint();
        up.reset();
        const response = await chat(path, token, { stream, max_tokens: 256 });
        expect(response.status).toBe(200);
        const text = await response.text();
        if (stream) expect(text).not.toContain('"usage"');
        const reported = reportedTotal(upstream, await replay(up, up.requests.at(-1)!));
        expect(await keyTokens(id, reported)).toBe(reported);
      });

  test("the mock provider: an answer and a stream", async () => {
    const { id, token } = await mint();
    const answer = await json(await chat("/v1/chat/completions", token, { model: "mock-up" }));
    expect(answer.usage.total_tokens).toBeGreaterThan(0);
    expect(await keyTokens(id, answer.usage.total_tokens)).toBe(answer.usage.total_tokens);
    const streamed = await (await chat("/v1/chat/completions", token, { model: "mock-up", stream: true, stream_options: { include_usage: true } })).text();
    const total = Number(streamed.match(/"total_tokens":(\d+)/)![1]);
    expect(await keyTokens(id, answer.usage.total_tokens + total)).toBe(answer.usage.total_tokens + total);
  });
});
