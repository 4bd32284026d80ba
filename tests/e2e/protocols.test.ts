// The data plane end to end, beyond the 6x6 matrix (matrix.test.ts): the built-in mock, typed errors,
// streams that break, lossless same-protocol routes, metering, the upstream client and metrics, with
// the OpenAI and Anthropic SDKs as clients against upstream imitations that validate what they receive.
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { ANTHROPIC_DEFAULT_KEY, startAnthropicUpstream } from "../support/upstreams/anthropic.ts";
import { EXTRA_MEMBER, SCRIPTED_USAGE } from "../support/upstreams/common.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";

const oaiUp = startOpenAIUpstream();
const antUp = startAnthropicUpstream();
let gw: RunningGateway;
let openai: OpenAI;
let anthropic: Anthropic;

const config = (extra = "") => `${LISTEN_ANY}
providers:
  oai: {protocol: openai, base_url: "${oaiUp.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  ant: {protocol: anthropic, base_url: "${antUp.baseURL}", api_key: ${ANTHROPIC_DEFAULT_KEY}}
  rsp: {protocol: responses, base_url: "${oaiUp.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  local: {protocol: mock}
models:
  gpt-up: {provider: oai, model: gpt-4o-mini}
  claude-up: {provider: ant, model: claude-haiku-4-5}
  resp-up: {provider: rsp, model: gpt-5-mini}
  mock-1: {provider: local}
pools:
  to-openai: {members: [{model: gpt-up}]}
  to-anthropic: {members: [{model: claude-up}]}
  to-responses: {members: [{model: resp-up}]}
  # One pool per test that makes a lane fail: a failure arms that (pool, lane) cell's cooldown, and the
  # other pools' cells of the same lane are not touched.
  rate-limited: {members: [{model: claude-up}]}
  cut-anthropic: {members: [{model: claude-up}]}
  cut-openai-translated: {members: [{model: gpt-up}]}
  cut-openai-same: {members: [{model: gpt-up}]}
  default: {members: [{model: mock-1}]}
${extra}`;

beforeAll(async () => {
  gw = await startGateway(config());
  openai = new OpenAI({ apiKey: "client-key", baseURL: `${gw.data}/v1`, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: "client-key", baseURL: gw.data, maxRetries: 0 });
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all([oaiUp.stop(), antUp.stop()]);
});
beforeEach(() => {
  oaiUp.reset();
  antUp.reset();
});

describe("the built-in mock through both SDKs", () => {
  test("OpenAI and Anthropic, non-stream and stream", async () => {
    const completion = await openai.chat.completions.create({ model: "default", messages: [{ role: "user", content: "hi mock" }] });
    expect(completion.choices[0]!.message.content).toBe("mock: hi mock");
    const message = await anthropic.messages.create({ model: "default", max_tokens: 64, messages: [{ role: "user", content: "hi mock" }] });
    expect(message.content).toEqual([expect.objectContaining({ type: "text", text: "mock: hi mock" })]);
    const streamed = await anthropic.messages.stream({ model: "default", max_tokens: 64, messages: [{ role: "user", content: "streamed mock" }] }).finalMessage();
    expect(streamed.content).toEqual([expect.objectContaining({ type: "text", text: "mock: streamed mock" })]);
  });
});

/**
 * The error a call fails with. (The SDKs' APIPromise resolves its own base promise at once, so bun's
 * `expect(p).rejects` would see "resolved"; awaiting through `then` gets the real outcome.)
 */
const failureOf = (call: PromiseLike<unknown>): Promise<unknown> => Promise.resolve().then(() => call).then(() => undefined, (error: unknown) => error);

describe("typed errors", () => {
  test("an unknown model is each SDK's NotFoundError", async () => {
    expect(await failureOf(openai.chat.completions.create({ model: "no-such-pool", messages: [{ role: "user", content: "x" }] }))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await failureOf(anthropic.messages.create({ model: "no-such-pool", max_tokens: 8, messages: [{ role: "user", content: "x" }] }))).toBeInstanceOf(Anthropic.NotFoundError);
  });

  test("a malformed body is each SDK's BadRequestError", async () => {
    const badOpenAI = { model: "default", messages: "not a list" } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    expect(await failureOf(openai.chat.completions.create(badOpenAI))).toBeInstanceOf(OpenAI.BadRequestError);
    const badAnthropic = { model: "default", messages: [{ role: "user", content: "x" }] } as unknown as Anthropic.MessageCreateParamsNonStreaming;
    expect(await failureOf(anthropic.messages.create(badAnthropic))).toBeInstanceOf(Anthropic.BadRequestError);
  });

  test("an upstream 429 reaches the client as its own RateLimitError", async () => {
    antUp.script({ error: { status: 429, retryAfter: 7 } });
    const error = await failureOf(openai.chat.completions.create({ model: "rate-limited", messages: [{ role: "user", content: "x" }] }));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers?.get("retry-after")).toBe("7");
  });
});

describe("a stream that breaks after it began", () => {
  test("cross protocol: the client's SDK sees its own in-stream error, not a silent end", async () => {
    antUp.script({ cutAfterEvents: 4 });
    const stream = await openai.chat.completions.create({ model: "cut-anthropic", stream: true, messages: [{ role: "user", content: "a longer answer that will be cut" }] });
    let text = "";
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    })().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(String((error as Error).message)).toContain("stream");
    expect("echo: a longer answer that will be cut".startsWith(text)).toBe(true);
  });

  test("Anthropic client, OpenAI upstream cut: an `error` event ends the stream", async () => {
    oaiUp.script({ cutAfterEvents: 3 });
    const response = await fetch(`${gw.data}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": "k", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "cut-openai-translated", max_tokens: 64, stream: true, messages: [{ role: "user", content: "cut me off please" }] }),
    });
    const text = await response.text();
    expect(text).toContain("event: error");
    expect(text).not.toContain("event: message_stop");
  });

  test("same protocol: the client's SDK sees its own in-stream error after the upstream's events", async () => {
    oaiUp.script({ cutAfterEvents: 3 });
    const stream = await openai.chat.completions.create({ model: "cut-openai-same", stream: true, messages: [{ role: "user", content: "cut me off please" }] });
    let text = "";
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    })().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(String((error as Error).message)).toContain("stream");
    expect("echo: cut me off please".startsWith(text)).toBe(true);
  });
});

describe("same protocol is lossless", () => {
  test("OpenAI: an unknown request member reaches the upstream, an unknown response member reaches the client", async () => {
    oaiUp.script({ extraMember: true });
    const response = await fetch(`${gw.data}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer client-key" },
      body: JSON.stringify({ model: "to-openai", messages: [{ role: "user", content: "keep it" }], x_client_member: { nested: [1, 2] } }),
    });
    expect(response.status).toBe(200);
    expect(await json(response)).toMatchObject(EXTRA_MEMBER);
    expect(oaiUp.requests[0]!.body).toMatchObject({ model: "gpt-4o-mini", x_client_member: { nested: [1, 2] } });
  });

  test("Anthropic, streamed: the upstream's bytes pass through unchanged, anthropic-beta is forwarded", async () => {
    antUp.script({ extraMember: true });
    const response = await fetch(`${gw.data}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "client-key", "anthropic-version": "2023-06-01", "anthropic-beta": "test-beta-1" },
      body: JSON.stringify({ model: "to-anthropic", max_tokens: 32, stream: true, messages: [{ role: "user", content: "keep it" }], x_client_member: true }),
    });
    const text = await response.text();
    expect(text).toContain('"x_imitation":{"kept":true}');
    expect(text).toContain("event: message_stop");
    expect(antUp.requests[0]!.headers["anthropic-beta"]).toBe("test-beta-1");
    expect(antUp.requests[0]!.body).toMatchObject({ model: "claude-haiku-4-5", x_client_member: true });
  });
});

describe("metering on same-protocol streams", () => {
  // The usage sits in the stream's first and last events; Responses' response.completed repeats the whole
  // answer before its usage, so a long answer's last event is longer than the kept tail.
  const cases = [
    {
      name: "Anthropic",
      lane: "claude-up",
      up: antUp,
      cache: { inputCacheRead: SCRIPTED_USAGE.cacheReadInputTokens, inputCacheWrite: SCRIPTED_USAGE.cacheCreationInputTokens },
      send: (base: string, text: string) =>
        fetch(`${base}/v1/messages`, {
          method: "POST",
          headers: { "x-api-key": "k", "anthropic-version": "2023-06-01" },
          body: JSON.stringify({ model: "to-anthropic", max_tokens: 64, stream: true, messages: [{ role: "user", content: text }] }),
        }),
    },
    {
      name: "Responses",
      lane: "resp-up",
      up: oaiUp,
      cache: { inputCacheRead: SCRIPTED_USAGE.cachedTokens, inputCacheWrite: SCRIPTED_USAGE.cacheCreationInputTokens },
      send: (base: string, text: string) => fetch(`${base}/v1/responses`, { method: "POST", headers: { authorization: "Bearer k" }, body: JSON.stringify({ model: "to-responses", stream: true, input: text }) }),
    },
  ];
  test.each(cases)("$name: usage is read from the passing stream, short or long (first and last bytes only)", async ({ lane, up, cache, send }) => {
    const debug = await startGateway(config(), { env: { GATEWAY_LOG_LEVEL: "debug" } });
    try {
      for (const text of ["short", "long ".repeat(8000)]) {
        up.script({ detailedUsage: true });
        const response = await send(debug.data, text);
        expect((await response.text()).length).toBeGreaterThan(text.length);
      }
      await Bun.sleep(100);
      const usages = debug.logs.map((l) => JSON.parse(l)).filter((r) => r.msg === "usage");
      expect(usages).toHaveLength(2);
      for (const usage of usages) {
        expect(usage).toMatchObject({ lane, ...cache });
        expect(usage.inputNoCache).toBeGreaterThan(0);
        expect(usage.output).toBeGreaterThan(0);
      }
      expect(usages[1].output).toBeGreaterThan(usages[0].output);
    } finally {
      await debug.stop();
    }
  });
});

describe("upstream client", () => {
  test("connections to an upstream are kept alive and reused", async () => {
    for (let i = 0; i < 5; i++) await openai.chat.completions.create({ model: "to-openai", messages: [{ role: "user", content: `n${i}` }] });
    expect(new Set(oaiUp.requests.map((r) => r.remotePort)).size).toBe(1);
  });

  test("pool_max_idle_per_host: 0 keeps no idle connection: each call dials anew", async () => {
    const unpooled = await startGateway(config("limits: {pool_max_idle_per_host: 0}"));
    try {
      const client = new OpenAI({ apiKey: "client-key", baseURL: `${unpooled.data}/v1`, maxRetries: 0 });
      for (let i = 0; i < 3; i++) await client.chat.completions.create({ model: "to-openai", messages: [{ role: "user", content: `n${i}` }] });
      expect(oaiUp.requests).toHaveLength(3);
      expect(new Set(oaiUp.requests.map((r) => r.remotePort)).size).toBe(3);
    } finally {
      await unpooled.stop();
    }
  });

  test("a client that disconnects cancels the upstream request at once", async () => {
    antUp.script({ delayMs: 3000 });
    const controller = new AbortController();
    const pending = fetch(`${gw.data}/v1/chat/completions`, {
      method: "POST",
      signal: controller.signal,
      body: JSON.stringify({ model: "to-anthropic", messages: [{ role: "user", content: "slow" }] }),
    }).catch(() => "aborted");
    await Bun.sleep(300);
    controller.abort();
    expect(await pending).toBe("aborted");
    await Bun.sleep(300);
    expect(antUp.requests[0]?.aborted).toBe(true);
  });

  test("upstream_request_timeout_secs bounds a silent upstream: 504 in the caller's shape", async () => {
    const bounded = await startGateway(config("limits: {upstream_request_timeout_secs: 1}"));
    try {
      // Bun's socket idle timer moves in 4 s steps: a 1 s bound fires within about 9 s, long before the
      // upstream's 20 s answer.
      oaiUp.script({ delayMs: 20_000 });
      const began = performance.now();
      const response = await fetch(`${bounded.data}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": "k", "anthropic-version": "2023-06-01" },
        body: JSON.stringify({ model: "to-openai", max_tokens: 8, messages: [{ role: "user", content: "x" }] }),
      });
      expect(response.status).toBe(504);
      expect((await json(response)).type).toBe("error");
      const elapsed = performance.now() - began;
      expect(elapsed).toBeGreaterThan(900);
      expect(elapsed).toBeLessThan(12_000);
    } finally {
      await bounded.stop();
    }
  }, 20_000);
});

describe("metrics", () => {
  test("translations and their warnings are counted on /metrics", async () => {
    await openai.chat.completions.create({ model: "to-anthropic", seed: 7, messages: [{ role: "user", content: "count me" }] });
    const text = await (await fetch(`${gw.data}/metrics`)).text();
    const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}"]/g, "\\$&")} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
    expect(value('gateway_translations_total{from="openai",to="anthropic"}')).toBeGreaterThanOrEqual(1);
    // `seed` has no Anthropic form: dropped with a warning, and the warning counted.
    expect(value('gateway_translation_warnings_total{from="openai",to="anthropic"}')).toBeGreaterThanOrEqual(1);
  });
});

describe("model listing and direct routes", () => {
  test("GET /v1/models lists the pools in each SDK's shape", async () => {
    const ids = (await openai.models.list()).data.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining(["to-openai", "to-anthropic", "default", "gpt-up"]));
    const anthropicIds = (await anthropic.models.list()).data.map((m) => m.id);
    expect(anthropicIds).toEqual(expect.arrayContaining(["to-openai", "to-anthropic"]));
  });

  test("POST /{provider}/{model} and POST /{model} go to one lane", async () => {
    const body = JSON.stringify({ messages: [{ role: "user", content: "direct" }] });
    const byProvider = await fetch(`${gw.data}/ant/claude-direct-1`, { method: "POST", body });
    expect((await json(byProvider)).choices[0].message.content).toBe("echo: direct");
    expect((antUp.requests[0]!.body as { model: string }).model).toBe("claude-direct-1");
    // Undeclared models at a provider share one ad-hoc lane: callers' model names never become series.
    await (await fetch(`${gw.data}/ant/claude-direct-2`, { method: "POST", body })).arrayBuffer();
    const metrics = await (await fetch(`${gw.data}/metrics`)).text();
    expect(metrics).toContain('gateway_upstream_attempts_total{pool="(direct)",lane="ant/*"} 2');
    expect(metrics).not.toContain("claude-direct");
    const byAlias = await fetch(`${gw.data}/gpt-up`, { method: "POST", body });
    expect((await json(byAlias)).choices[0].message.content).toBe("echo: direct");
    expect((oaiUp.requests[0]!.body as { model: string }).model).toBe("gpt-4o-mini");
  });
});
