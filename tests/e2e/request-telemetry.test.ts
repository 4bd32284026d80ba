// What every data-plane request leaves behind on the built binary, whatever the exporters: an
// x-request-id on every answer, the human-readable access line with `--log-format text`, the caller's
// trace context passed upstream unchanged when nothing traces, log lines for failovers, and a stream that
// breaks mid-way counted as an error, not ok.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { startOpenAIUpstream } from "../support/upstreams/openai.ts";
import type { Upstream } from "../support/upstreams/common.ts";
import { until } from "../support/until.ts";

let upstream: Upstream;
let gw: RunningGateway;

beforeAll(async () => {
  upstream = startOpenAIUpstream();
  gw = await startGateway(
    `${LISTEN_ANY}providers:
  up: {protocol: openai, base_url: "${upstream.baseURL}", api_key: ${upstream.apiKey}}
  down: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: k}
  local: {protocol: mock}
models:
  gpt: {provider: up, model: gpt-4o-mini}
  dead: {provider: down, model: gpt-4o-mini}
  mock: {provider: local}
pools:
  chat: {members: [{model: gpt}]}
  fallback: {members: [{model: dead, weight: 1000000}, {model: gpt, weight: 1}]}
`,
    { args: ["--log-format", "text"] },
  );
});
afterAll(async () => {
  await gw?.stop();
  await upstream?.stop();
});

const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }) });
const accessLines = () => gw.logs.filter((line) => line.includes(" ACCESS "));
const series = async (pattern: RegExp) => {
  const text = await (await fetch(`${gw.data}/metrics`)).text();
  return Number(pattern.exec(text)?.[1] ?? 0);
};

describe("x-request-id", () => {
  test("on every model answer: the client's when it is a sane token, else a fresh unique one; refusals too", async () => {
    const mine = await chat({ model: "chat" }, { "x-request-id": "req-abc:123" });
    expect(mine.headers.get("x-request-id")).toBe("req-abc:123");
    const ids = new Set<string>();
    for (const sent of [undefined, "has spaces", "x".repeat(200)]) {
      const answer = await chat({ model: "chat" }, sent ? { "x-request-id": sent } : {});
      const id = answer.headers.get("x-request-id")!;
      expect(id).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
      expect(id).not.toBe(sent);
      ids.add(id);
    }
    expect(ids.size).toBe(3);
    expect((await chat({ model: "no-such-model" })).headers.get("x-request-id")).toBeTruthy();
    const streamed = await chat({ model: "chat", stream: true });
    expect(streamed.headers.get("x-request-id")).toBeTruthy();
    await streamed.text();
  });
});

describe("--log-format text", () => {
  test("one readable access line per request: id, route, lane, status, outcome, duration; never the prompt or the key", async () => {
    const before = accessLines().length;
    const answer = await chat({ model: "chat", messages: [{ role: "user", content: "SECRET-PROMPT-TEXT" }] }, { "x-request-id": "line-1" });
    expect(answer.status).toBe(200);
    await until(() => accessLines().some((l) => l.includes("line-1")));
    const line = accessLines().find((l) => l.includes("line-1"))!;
    expect(line).toMatch(/ACCESS line-1 openai chat -> gpt \(up\) 200 ok [0-9.]+ ms/);
    await (await chat({ model: "nope" }, { "x-request-id": "line-2" })).text();
    await until(() => accessLines().some((l) => l.includes("line-2")));
    expect(accessLines().find((l) => l.includes("line-2"))).toContain("404 client_error");
    expect(accessLines().length).toBeGreaterThanOrEqual(before + 2);
    expect(gw.logs.join("\n")).not.toContain("SECRET-PROMPT-TEXT");
    expect(gw.logs.join("\n")).not.toContain(upstream.apiKey);
    // Other records are readable lines too, not JSON.
    expect(gw.logs.find((l) => l.includes("gateway started"))).toMatch(/^\S+ INFO +gateway started /);
  });

  test("a failover is logged and the access line names it", async () => {
    await (await chat({ model: "fallback" }, { "x-request-id": "moved-1" })).text();
    await until(() => accessLines().some((l) => l.includes("moved-1")));
    expect(accessLines().find((l) => l.includes("moved-1"))).toMatch(/failovers=dead:(connect|transient_upstream)/);
    expect(gw.logs.some((l) => l.includes("failover") && l.includes("moved-1"))).toBe(true);
  });
});

describe("trace context with no traces exporter", () => {
  test("the caller's traceparent and tracestate go upstream unchanged", async () => {
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    upstream.reset();
    await (await chat({ model: "chat" }, { traceparent, tracestate: "vendor=abc" })).text();
    expect(upstream.requests.at(-1)!.headers.traceparent).toBe(traceparent);
    expect(upstream.requests.at(-1)!.headers.tracestate).toBe("vendor=abc");
    await (await chat({ model: "chat" })).text();
    expect(upstream.requests.at(-1)!.headers.traceparent).toBeUndefined();
  });
});

describe("streams in gateway_requests_total", () => {
  test("a stream that breaks mid-way is an error, one that completes is ok, each counted once when it settles", async () => {
    const ok = /gateway_requests_total\{ingress_protocol="openai",pool="chat",outcome="ok"\} (\d+)/;
    const error = /gateway_requests_total\{ingress_protocol="openai",pool="chat",outcome="error"\} (\d+)/;
    const [okBefore, errorBefore] = [await series(ok), await series(error)];
    const client = new OpenAI({ apiKey: "unused", baseURL: `${gw.data}/v1`, maxRetries: 0 });
    const whole = await client.chat.completions.create({ model: "chat", stream: true, messages: [{ role: "user", content: "complete" }] });
    for await (const _ of whole);
    upstream.script({ cutAfterEvents: 2 });
    const broken = await client.chat.completions.create({ model: "chat", stream: true, messages: [{ role: "user", content: "broken" }] });
    await expect((async () => {
      for await (const _ of broken);
    })()).rejects.toThrow();
    await until(async () => (await series(error)) === errorBefore + 1);
    expect(await series(ok)).toBe(okBefore + 1);
    expect(await series(error)).toBe(errorBefore + 1);
  });
});

describe("JSON logs", () => {
  test("at --log-level debug each model request is one `request` record with the request-log members", async () => {
    const own = await startGateway(`${LISTEN_ANY}providers: {local: {protocol: mock}}\nmodels: {mock: {provider: local}}\n`, { args: ["--log-level", "debug"] });
    try {
      const answer = await fetch(`${own.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", "x-request-id": "json-1" }, body: JSON.stringify({ model: "mock", messages: [{ role: "user", content: "hi" }] }) });
      expect(answer.status).toBe(200);
      await until(() => own.logs.some((l) => l.includes('"json-1"')));
      const record = JSON.parse(own.logs.find((l) => l.includes('"json-1"'))!);
      expect(record).toMatchObject({ level: "debug", msg: "request", request_id: "json-1", ingress_protocol: "openai", model: "mock", pool: "mock", lane: "mock", status: 200, outcome: "ok", attempts: 1, error: null });
      expect(record.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) });
    } finally {
      await own.stop();
    }
  });
});
