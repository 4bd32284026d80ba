// Traces on the built binary (design/telemetry.md, "Traces"), exported by the otlp module to a collector
// imitation that takes OTLP/HTTP, each test once over http/json and once over http/protobuf (read back in
// the JSON encoding's form, tests/support/otlp-decode.ts): a SERVER span per request and a CLIENT span per upstream attempt
// with the GenAI attributes; a failover shows two CLIENT spans, the first in error; the caller's
// traceparent continued, our CLIENT span carried upstream; a caller's unsampled trace exports nothing;
// an OTLP endpoint that is down never fails a request.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { startOpenAIUpstream } from "../support/upstreams/openai.ts";
import type { Upstream } from "../support/upstreams/common.ts";
import { until } from "../support/until.ts";
import { protobufAsJson } from "../support/otlp-decode.ts";

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status?: { code?: number; message?: string };
  attributes: { key: string; value: Record<string, unknown> }[];
}

type Protocol = "http/json" | "http/protobuf";
const received: { protocol: Protocol; resource: Record<string, unknown>; spans: Span[] }[] = [];
const collector = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const type = request.headers.get("content-type");
    if (new URL(request.url).pathname !== "/v1/traces" || (type !== "application/json" && type !== "application/x-protobuf")) return new Response("unexpected", { status: 400 });
    const protocol: Protocol = type === "application/json" ? "http/json" : "http/protobuf";
    const body = (protocol === "http/json" ? await request.json() : protobufAsJson(new Uint8Array(await request.arrayBuffer()))) as { resourceSpans: { resource: { attributes: Span["attributes"] }; scopeSpans: { spans: Span[] }[] }[] };
    for (const rs of body.resourceSpans) received.push({ protocol, resource: attributes(rs.resource.attributes), spans: rs.scopeSpans.flatMap((s) => s.spans) });
    return protocol === "http/json" ? Response.json({}) : new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } });
  },
});

function attributes(list: Span["attributes"]): Record<string, unknown> {
  return Object.fromEntries(list.map(({ key, value }) => [key, value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.doubleValue ?? value.boolValue)]));
}
let upstream: Upstream;
beforeAll(() => {
  upstream = startOpenAIUpstream();
});
afterAll(async () => {
  await upstream?.stop();
  collector.stop(true);
});

for (const protocol of ["http/json", "http/protobuf"] as const) {
  describe(`spans over ${protocol}`, () => {
    const spans = () => received.filter((r) => r.protocol === protocol).flatMap((r) => r.spans);
    const byTrace = (traceId: string) => spans().filter((s) => s.traceId === traceId);

    let gw: RunningGateway;
    beforeAll(async () => {
      gw = await startGateway(`${LISTEN_ANY}providers:
  up: {protocol: openai, base_url: "${upstream.baseURL}", api_key: ${upstream.apiKey}}
  down: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: k}
models:
  gpt: {provider: up, model: gpt-4o-mini}
  dead: {provider: down, model: gpt-4o-mini}
pools:
  chat: {members: [{model: gpt}]}
  fallback: {members: [{model: dead, weight: 1000000}, {model: gpt, weight: 1}]}
export:
  traces: {module: otlp, settings: {endpoint: "http://127.0.0.1:${collector.port}/v1/traces", protocol: ${protocol}, schedule_delay_ms: 100}}
`);
    });
    afterAll(async () => {
      await gw?.stop();
    });

    const chat = (model: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
      fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ model, max_tokens: 64, temperature: 0.5, messages: [{ role: "user", content: "hi" }], ...extra }) });

      test("a SERVER span continuing the caller's trace, a CLIENT child per attempt with the GenAI attributes; the upstream call carries the CLIENT span", async () => {
        const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
        const answer = await chat("chat", { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, tracestate: "vendor=1", "x-request-id": "traced-1" });
        expect(answer.status).toBe(200);
        await answer.text();
        await until(() => byTrace(traceId).length >= 2, 5_000);
        const [server] = byTrace(traceId).filter((s) => s.kind === 2);
        const clients = byTrace(traceId).filter((s) => s.kind === 3);
        expect(server!.parentSpanId).toBe("00f067aa0ba902b7");
        expect(server!.name).toBe("chat chat");
        expect(attributes(server!.attributes)).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.request.model": "chat", "gen_ai.provider.name": "openai", "gen_ai.response.model": "gpt-4o-mini", "gen_ai.request.max_tokens": 64, "gen_ai.request.temperature": 0.5, "http.response.status_code": 200, "gateway.request_id": "traced-1", "gateway.pool": "chat", "gateway.outcome": "ok", "gateway.attempts": 1 });
        expect(attributes(server!.attributes)["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
        expect(clients.length).toBe(1);
        expect(clients[0]!.parentSpanId).toBe(server!.spanId);
        expect(clients[0]!.name).toBe("chat gpt-4o-mini");
        expect(attributes(clients[0]!.attributes)).toMatchObject({ "gateway.lane": "gpt", "gateway.attempt": 1, "server.address": "127.0.0.1", "server.port": upstream.port, "http.response.status_code": 200 });
        const sent = upstream.requests.at(-1)!.headers;
        expect(sent.traceparent).toBe(`00-${traceId}-${clients[0]!.spanId}-01`);
        expect(sent.tracestate).toBe("vendor=1");
        expect(received.find((r) => r.protocol === protocol)!.resource).toMatchObject({ "service.name": "gateway" });
      });

      test("a failover shows two CLIENT spans, the first in error; a new request with no traceparent is a new sampled root", async () => {
        const answer = await chat("fallback", { "x-request-id": "traced-2" });
        expect(answer.status).toBe(200);
        await answer.text();
        await until(() => spans().some((s) => s.kind === 2 && attributes(s.attributes)["gateway.request_id"] === "traced-2"), 5_000);
        const server = spans().find((s) => s.kind === 2 && attributes(s.attributes)["gateway.request_id"] === "traced-2")!;
        expect(server.parentSpanId ?? "").toBe("");
        await until(() => byTrace(server.traceId).filter((s) => s.kind === 3).length === 2, 5_000);
        const [first, second] = byTrace(server.traceId).filter((s) => s.kind === 3).sort((a, b) => Number(attributes(a.attributes)["gateway.attempt"]) - Number(attributes(b.attributes)["gateway.attempt"]));
        expect(first!.status?.code).toBe(2);
        expect(attributes(first!.attributes)).toMatchObject({ "gateway.lane": "dead", "gateway.attempt": 1, "error.type": "connect" });
        expect(attributes(first!.attributes)["gateway.failover_reason"]).toMatch(/connect|transient_upstream/);
        expect(second!.status?.code ?? 0).toBe(0);
        expect(attributes(second!.attributes)).toMatchObject({ "gateway.lane": "gpt", "gateway.attempt": 2 });
        expect(attributes(server.attributes)["gateway.attempts"]).toBe(2);
      });

      test("a caller's unsampled trace (flags 00) exports nothing, and its upstream call says so", async () => {
        const traceId = "0af7651916cd43dd8448eb211c80319c";
        await (await chat("chat", { traceparent: `00-${traceId}-b7ad6b7169203331-00` })).text();
        expect(upstream.requests.at(-1)!.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`));
        await Bun.sleep(400);
        expect(byTrace(traceId)).toEqual([]);
      });
  });
}

describe("an OTLP endpoint that is down", () => {
  test("never fails or slows a request", async () => {
    const own = await startGateway(`${LISTEN_ANY}providers: {local: {protocol: mock}}\nmodels: {mock: {provider: local}}\nexport:\n  traces: {module: otlp, settings: {endpoint: "http://127.0.0.1:9/v1/traces", schedule_delay_ms: 10}}\n`);
    try {
      for (let i = 0; i < 30; i++) {
        const started = performance.now();
        const answer = await fetch(`${own.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "mock", messages: [{ role: "user", content: "hi" }] }) });
        expect(answer.status).toBe(200);
        await answer.text();
        expect(performance.now() - started).toBeLessThan(200);
      }
    } finally {
      expect(await own.stop()).toBe(0);
    }
  });
});
