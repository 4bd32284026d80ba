// Streams are metered on the built binary (issue 22 class 4): the OpenAI SDK streaming without
// stream_options (its default) through a key whose group caps tokens. The gateway asks the upstream
// imitation for usage, charges exactly what it reported, relays the stream the client would have had
// without the gateway (no usage chunk it did not ask for), and a token cap stops the requests. An
// upstream that ignores include_usage is charged an estimate, never zero, with a warning line. And the
// Anthropic SDK streaming through the OpenAI upstream reads an input figure in message_start (class 17).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";

const ENV = { GW_SIGNING_KEY: "e2e-stream-usage-signing-5d1c", GW_ADMIN: "e2e-stream-usage-admin-77ab" };
const up = startOpenAIUpstream();

/** An OpenAI-compatible server that streams a fixed answer and never sends usage, asked or not. */
const DEAF_TEXT = "a reply from a server that never reports usage, whatever it is asked";
const deaf = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    await request.text();
    const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: "d1", object: "chat.completion.chunk", created: 1, model: "deaf", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const body = chunk({ role: "assistant", content: "" }) + DEAF_TEXT.split(" ").map((w) => chunk({ content: `${w} ` })).join("") + chunk({}, "stop") + "data: [DONE]\n\n";
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  },
});

const CAP = 300;
const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  imitation: {protocol: openai, base_url: "${up.baseURL}", api_key: "${OPENAI_DEFAULT_KEY}"}
  deaf: {protocol: openai, base_url: "http://127.0.0.1:${deaf.port}/v1", api_key: "sk-deaf"}
models:
  gpt-up: {provider: imitation, model: gpt-test}
  gpt-breaking: {provider: imitation, model: gpt-test}
  deaf-up: {provider: deaf, model: deaf}
pools:
  gpt: {members: [{model: gpt-up}]}
  breaking: {members: [{model: gpt-breaking}]}
  deaf: {members: [{model: deaf-up}]}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
groups:
  roomy: {limits: [{window: day, tokens: 1000000}]}
  capped: {limits: [{window: day, tokens: ${CAP}}]}
  deafened: {limits: [{window: day, tokens: 1000000}]}
  broken: {limits: [{window: day, tokens: 1000000}]}
`;

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
  await up.stop();
  void deaf.stop(true);
});

const admin = (path: string, init: RequestInit = {}) => fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json", ...init.headers } });
async function mint(group: string): Promise<string> {
  const response = await admin("/keys", { method: "POST", body: JSON.stringify({ name: `k-${group}`, group }) });
  expect(response.status).toBe(201);
  return (await json(response)).token;
}
const sdk = (token: string) => new OpenAI({ apiKey: token, baseURL: `${gw.data}/v1`, maxRetries: 0 });

/** The group's day tokens, once the stream's usage has settled (it is read when the stream ends). */
async function groupTokens(group: string, atLeast = 1): Promise<number> {
  let tokens = 0;
  for (let i = 0; i < 50; i++) {
    tokens = (await json(await admin(`/groups/${group}/usage`))).buckets[0].tokens;
    if (tokens >= atLeast) return tokens;
    await Bun.sleep(20);
  }
  return tokens;
}

/** The gateway's "usage estimated" warnings for `model`, once `count` have been logged (stderr is read as it comes). */
async function estimateWarnings(model: string, count: number): Promise<Record<string, unknown>[]> {
  let found: Record<string, unknown>[] = [];
  for (let i = 0; i < 50 && found.length < count; i++) {
    found = gw.logs.filter((l) => l.includes('"usage estimated')).map((l) => JSON.parse(l)).filter((r) => r.model === model);
    if (found.length < count) await Bun.sleep(20);
  }
  return found;
}

const post = (url: string, body: unknown, authorization: string) => fetch(url, { method: "POST", headers: { "content-type": "application/json", authorization }, body: JSON.stringify(body) });
/** What differs between two answers to one request: the id and the time. */
const normalised = (sse: string) => sse.replace(/"id":"[^"]*"/g, '"id":"X"').replace(/"created":\d+/g, '"created":0');

describe("a same-protocol OpenAI stream without stream_options", () => {
  test("is asked for usage upstream and charged exactly what the upstream reported", async () => {
    const token = await mint("roomy");
    up.reset();
    const stream = await sdk(token).chat.completions.create({ model: "gpt", stream: true, messages: [{ role: "user", content: "count the tokens of this stream" }] });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("echo: count the tokens of this stream");
    // The client did not ask: it sees no usage at all, as without the gateway.
    expect(chunks.every((c) => !("usage" in c) && c.choices.length === 1)).toBe(true);

    const forwarded = up.requests.at(-1)!;
    expect((forwarded.body as { stream_options?: unknown }).stream_options).toEqual({ include_usage: true });
    // What the upstream reported for that very body.
    const direct = await post(`${up.baseURL}/chat/completions`, forwarded.body, `Bearer ${OPENAI_DEFAULT_KEY}`);
    const usageChunk = (await direct.text()).split("\n\n").filter((e) => e.includes('"choices":[]'))[0]!;
    const reported = JSON.parse(usageChunk.slice("data: ".length)).usage as OpenAI.CompletionUsage;
    expect(reported.total_tokens).toBeGreaterThan(0);
    expect(await groupTokens("roomy")).toBe(reported.prompt_tokens + reported.completion_tokens);
  });

  test("the client receives the upstream's stream minus the usage it did not ask for, byte for byte", async () => {
    const token = await mint("roomy");
    const body = { model: "gpt", stream: true, messages: [{ role: "user", content: "bytes as they are" }] };
    const through = await post(`${gw.data}/v1/chat/completions`, body, `Bearer ${token}`);
    expect(through.status).toBe(200);
    const direct = await post(`${up.baseURL}/chat/completions`, { ...body, model: "gpt-test" }, `Bearer ${OPENAI_DEFAULT_KEY}`);
    const [gatewayText, directText] = [await through.text(), await direct.text()];
    expect(gatewayText).not.toContain('"usage"');
    expect(normalised(gatewayText)).toBe(normalised(directText));

    // A client that asked gets the usage chunk, relayed as the upstream sent it.
    const asked = { ...body, stream_options: { include_usage: true } };
    const withUsage = await (await post(`${gw.data}/v1/chat/completions`, asked, `Bearer ${token}`)).text();
    const directUsage = await (await post(`${up.baseURL}/chat/completions`, { ...asked, model: "gpt-test" }, `Bearer ${OPENAI_DEFAULT_KEY}`)).text();
    expect(withUsage).toContain('"choices":[],"usage":{');
    expect(normalised(withUsage)).toBe(normalised(directUsage));
  });

  test(`a cap of ${CAP} tokens stops streaming requests`, async () => {
    const token = await mint("capped");
    const client = sdk(token);
    let served = 0;
    let refused: unknown;
    for (let i = 0; i < 100 && refused === undefined; i++) {
      try {
        const stream = await client.chat.completions.create({ model: "gpt", stream: true, messages: [{ role: "user", content: "a request of a dozen or so tokens, streamed" }] });
        for await (const _ of stream);
        served += 1;
        await groupTokens("capped", 1);
      } catch (error) {
        refused = error;
      }
    }
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    const spent = await groupTokens("capped", CAP);
    const perRequest = spent / served;
    expect(spent).toBeGreaterThanOrEqual(CAP);
    // Stopped at the cap: at most the crossing request past it.
    expect(spent - CAP).toBeLessThan(perRequest);
    expect(served).toBeLessThanOrEqual(Math.ceil(CAP / perRequest) + 1);
  });

  test("a stream the upstream breaks off is charged what was served (estimated) and ends with OpenAI's in-stream error", async () => {
    const token = await mint("broken");
    up.script({ match: "BREAK", cutAfterEvents: 3 });
    const stream = await sdk(token).chat.completions.create({ model: "breaking", stream: true, messages: [{ role: "user", content: "BREAK this stream after a few events please" }] });
    let text = "";
    const failure = await (async () => {
      try {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      } catch (error) {
        return error;
      }
    })();
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect(text.length).toBeGreaterThan(0);
    expect(await groupTokens("broken")).toBeGreaterThan(0);
  });

  test("an upstream that ignores include_usage is charged an estimate above zero, with a warning line", async () => {
    const token = await mint("deafened");
    const stream = await sdk(token).chat.completions.create({ model: "deaf", stream: true, messages: [{ role: "user", content: "say something" }] });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text.trim()).toBe(DEAF_TEXT);
    const tokens = await groupTokens("deafened");
    // ~4 characters a token of the answer, plus the request's.
    expect(tokens).toBeGreaterThanOrEqual(Math.ceil(DEAF_TEXT.length / 4));
    expect(tokens).toBeLessThan(200);
    expect(await estimateWarnings("deaf", 1)).toMatchObject([{ level: "warn", model: "deaf", lane: "deaf-up" }]);

    // The same on the translated path: an Anthropic client, the deaf OpenAI upstream.
    const anthropic = new Anthropic({ apiKey: token, baseURL: gw.data, maxRetries: 0 });
    const final = await anthropic.messages.stream({ model: "deaf", max_tokens: 64, messages: [{ role: "user", content: "say something" }] }).finalMessage();
    expect(final.content).toMatchObject([{ type: "text", text: `${DEAF_TEXT} ` }]);
    const after = await groupTokens("deafened", tokens + 1);
    expect(after - tokens).toBe(Math.ceil("say something".length / 4) + Math.ceil(`${DEAF_TEXT} `.length / 4));
    expect(await estimateWarnings("deaf", 2)).toHaveLength(2);
  });
});

describe("an Anthropic stream through an OpenAI upstream", () => {
  test("message_start carries an input estimate from the request; message_delta the upstream's real figure", async () => {
    const token = await mint("roomy");
    up.reset();
    const client = new Anthropic({ apiKey: token, baseURL: gw.data, maxRetries: 0 });
    const question = "How many tokens does this question take? ".repeat(8);
    const stream = client.messages.stream({ model: "gpt", max_tokens: 64, system: "Answer briefly.", messages: [{ role: "user", content: question }] });
    const starts: Anthropic.MessageStartEvent[] = [];
    stream.on("streamEvent", (event) => {
      if (event.type === "message_start") starts.push(event);
    });
    const final = await stream.finalMessage();
    // What LangChain reads: the first event's input, near the request's size at ~4 characters a token.
    const estimate = starts[0]!.message.usage.input_tokens;
    expect(estimate).toBeGreaterThan(0);
    expect(estimate).toBe(Math.ceil(("Answer briefly.".length + question.length) / 4));
    // The upstream's own count replaces it at the end.
    const forwarded = up.requests.at(-1)!;
    const direct = await post(`${up.baseURL}/chat/completions`, forwarded.body, `Bearer ${OPENAI_DEFAULT_KEY}`);
    const usageChunk = (await direct.text()).split("\n\n").filter((e) => e.includes('"choices":[]'))[0]!;
    const reported = JSON.parse(usageChunk.slice("data: ".length)).usage as OpenAI.CompletionUsage;
    expect(final.usage.input_tokens).toBe(reported.prompt_tokens);
    expect(final.usage.output_tokens).toBe(reported.completion_tokens);
  });
});
