// Data-plane ingress under hostile or unusual input, on the built binary (issue 22): caller text in an
// upstream URL (3), deeply nested bodies and out-of-range max-tokens (11), bodies that never finish (12),
// chunked bodies on every protocol (14), wrong methods and short Host headers (16). Upstream imitations
// record every path they receive, so "nothing was sent upstream" is checked, not assumed.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { makeTlsDir } from "../support/tls.ts";
import { ANTHROPIC_DEFAULT_KEY, startAnthropicUpstream } from "../support/upstreams/anthropic.ts";
import { startBedrockUpstream } from "../support/upstreams/bedrock.ts";
import { GEMINI_DEFAULT_KEY, startGeminiUpstream } from "../support/upstreams/gemini.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";

/** An inference-profile ARN, as a Bedrock model id (the AWS SDK percent-encodes it into one path segment). */
const ARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0";
const oaiUp = startOpenAIUpstream();
const antUp = startAnthropicUpstream();
const gemUp = startGeminiUpstream();
const brkUp = startBedrockUpstream();
const ups = [oaiUp, antUp, gemUp, brkUp];
let gw: RunningGateway;
let port: number;

beforeAll(async () => {
  gw = await startGateway(`${LISTEN_ANY}
providers:
  oai: {protocol: openai, base_url: "${oaiUp.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  ant: {protocol: anthropic, base_url: "${antUp.baseURL}", api_key: ${ANTHROPIC_DEFAULT_KEY}}
  gem: {protocol: gemini, base_url: "${gemUp.baseURL}", api_key: ${GEMINI_DEFAULT_KEY}}
  brk: {protocol: bedrock, base_url: "${brkUp.url}", api_key: ${brkUp.apiKey}, region: ${brkUp.region}}
  local: {protocol: mock}
models:
  gpt-up: {provider: oai, model: gpt-4o-mini}
  claude-up: {provider: ant, model: claude-haiku-4-5}
  mock-1: {provider: local}
  haiku-arn: {provider: brk, model: "${ARN}"}
  gem-flash: {provider: gem, model: gemini-2.0-flash}
pools:
  "gemini-*": {members: [{model: gem-flash}]}
  "arn*": {members: [{model: haiku-arn}]}
  to-openai: {members: [{model: gpt-up}]}
  to-anthropic: {members: [{model: claude-up}]}
  default: {members: [{model: mock-1}]}
`);
  port = Number(new URL(gw.data).port);
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all(ups.map((u) => u.stop()));
});
beforeEach(() => ups.forEach((u) => u.reset()));

const upstreamPaths = () => ups.flatMap((u) => u.requests.map((r) => r.path));

type Protocol = "openai" | "anthropic" | "responses" | "cohere" | "gemini" | "bedrock";

/** One request per protocol: its path for `model`, and a minimal valid body with `extra` merged in. */
const CALLS: Record<Protocol, { path: (model: string) => string; body: (model: string, extra?: Record<string, unknown>) => Record<string, unknown> }> = {
  openai: { path: () => "/v1/chat/completions", body: (model, extra) => ({ model, messages: [{ role: "user", content: "hi" }], ...extra }) },
  anthropic: { path: () => "/v1/messages", body: (model, extra) => ({ model, max_tokens: 16, messages: [{ role: "user", content: "hi" }], ...extra }) },
  responses: { path: () => "/v1/responses", body: (model, extra) => ({ model, input: "hi", ...extra }) },
  cohere: { path: () => "/v2/chat", body: (model, extra) => ({ model, messages: [{ role: "user", content: "hi" }], ...extra }) },
  gemini: { path: (model) => `/v1beta/models/${model}:generateContent`, body: (_, extra) => ({ contents: [{ role: "user", parts: [{ text: "hi" }] }], ...extra }) },
  bedrock: { path: (model) => `/model/${model}/converse`, body: (_, extra) => ({ messages: [{ role: "user", content: [{ text: "hi" }] }], ...extra }) },
};
const PROTOCOLS = Object.keys(CALLS) as Protocol[];

/** The message of an error body in each protocol's own shape; throws if the shape is not that protocol's. */
function nativeMessage(protocol: Protocol, response: Response, body: any): string {
  switch (protocol) {
    case "openai":
    case "responses":
      expect(typeof body.error.type).toBe("string");
      return body.error.message;
    case "anthropic":
      expect(body.type).toBe("error");
      return body.error.message;
    case "gemini":
      expect(body.error.code).toBe(response.status);
      expect(typeof body.error.status).toBe("string");
      return body.error.message;
    case "bedrock":
      expect(response.headers.get("x-amzn-errortype")).toBeString();
      return body.message;
    case "cohere":
      expect(Object.keys(body)).toContain("message");
      return body.message;
  }
}

const post = (path: string, body: unknown, init: RequestInit = {}) =>
  fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer k" }, body: typeof body === "string" ? body : JSON.stringify(body), ...init });

/** A raw HTTP exchange over one socket: sends `request` as it is, resolves with everything read until the server closes. */
function raw(request: string, options: { port?: number; timeoutMs?: number; tls?: boolean } = {}): Promise<string> {
  return new Promise((resolve) => {
    const send = () => socket.write(request);
    const socket = options.tls ? tlsConnect({ port: options.port ?? port, host: "127.0.0.1", rejectUnauthorized: false }, send) : connect(options.port ?? port, "127.0.0.1", send);
    let got = "";
    socket.on("data", (chunk) => (got += chunk.toString("latin1")));
    const timer = setTimeout(() => socket.destroy(), options.timeoutMs ?? 5000);
    socket.on("close", () => (clearTimeout(timer), resolve(got)));
    socket.on("error", () => {});
  });
}
const statusOf = (answer: string) => Number(answer.slice(9, 12));
/** A raw JSON POST (fetch would resolve `..` and encode what a hostile client sends as it is). */
const rawPost = (path: string, body: string, host = "127.0.0.1") =>
  raw(`POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);

describe("class 3: caller text never steers the upstream URL", () => {
  const BAD = ["..%2F..%2F__reset%3F", "%2E%2E%2Fx", "..%2F", "a..b", "a%2Fb", "a%5Cb", "a%3Fb", "a%23b", "a%00b", "a%0Ab", "a%20b", "%252E%252E%252F", "..%252F__reset", ".hidden", "x".repeat(300)];
  // Percent-encoding that does not decode: the router hands no name at all, which answered 500.
  const UNDECODABLE = ["%zz", "%", "a%E0%A4%A", "%C0%80"];

  test("a direct route with a model that is not a model name is a 400 in OpenAI's shape, and nothing reaches any upstream", async () => {
    // Raw requests: fetch would resolve `..` itself before sending.
    const body = JSON.stringify({ messages: [{ role: "user", content: "hi" }] });
    for (const provider of ["gem", "brk", "oai", "ant"]) {
      for (const model of BAD) {
        const answer = await rawPost(`/${provider}/${model}`, body);
        expect({ provider, model, status: statusOf(answer) }).toEqual({ provider, model, status: 400 });
        expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)).error).toMatchObject({ type: "invalid_request_error", param: "model" });
      }
    }
    // The one-segment direct route (a model alias) judges its name the same way; an unknown good name stays a 404.
    for (const model of UNDECODABLE) {
      for (const target of ["gem", "%zz"]) {
        const answer = await rawPost(`/${target}/${model}`, body);
        expect({ target, model, status: statusOf(answer) }).toEqual({ target, model, status: 400 });
        expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)).error).toMatchObject({ type: "invalid_request_error", param: "model" });
      }
    }
    for (const model of ["..%2F..%2F__reset%3F", "a%3Fb", "a%00b"]) expect(statusOf(await rawPost(`/${model}`, body))).toBe(400);
    expect(statusOf(await rawPost("/no-such-alias", body))).toBe(404);
    expect(statusOf(await rawPost("/no-such-provider/gpt-4o", body))).toBe(404);
    // A dot segment is resolved by the HTTP server itself (`/gem/..` is `/`, the pointer page): no model route.
    for (const dots of ["..", "%2E%2E", ".%2e"]) expect(statusOf(await rawPost(`/gem/${dots}`, "{}"))).toBe(405);
    expect(upstreamPaths()).toEqual([]);
  });

  test("a model name on a Gemini or Bedrock path that is not a model name is a 400 in that protocol's shape", async () => {
    for (const protocol of ["gemini", "bedrock"] as const) {
      const response = await post(CALLS[protocol].path("..%2F..%2F__reset%3F"), CALLS[protocol].body(""));
      expect(response.status).toBe(400);
      expect(nativeMessage(protocol, response, await response.json())).toContain("model");
    }
    expect(upstreamPaths()).toEqual([]);
  });

  test("a real model name on a direct route reaches exactly its own upstream path", async () => {
    const gemini = await post("/gem/gemini-2.0-flash", { messages: [{ role: "user", content: "hi" }] });
    expect(gemini.status).toBe(200);
    const bedrock = await post("/brk/us.anthropic.claude-3-5-haiku-20241022-v1:0", { messages: [{ role: "user", content: "hi" }] });
    expect(bedrock.status).toBe(200);
    expect(gemUp.requests.map((r) => r.path)).toEqual(["/v1beta/models/gemini-2.0-flash:generateContent"]);
    expect(brkUp.requests.map((r) => r.path)).toEqual(["/model/us.anthropic.claude-3-5-haiku-20241022-v1%3A0/converse"]);
  });
});

describe("class 3: Bedrock ids and ARNs, and names only a pattern pool matches", () => {
  const enc = encodeURIComponent;
  const chat = JSON.stringify({ messages: [{ role: "user", content: "hi" }] });
  const converse = JSON.stringify(CALLS.bedrock.body(""));

  test("a Bedrock id with `:` and ARNs, encoded as the AWS SDK sends them, reach exactly their own upstream path", async () => {
    const OTHER = "arn:aws:bedrock:us-west-2::foundation-model/anthropic.claude-3-haiku-20240307-v1:0";
    const cases: [string, string, string][] = [
      [`/brk/${enc(ARN)}`, chat, `/model/${enc(ARN)}/converse`], // a direct route to a configured model
      [`/brk/${enc(OTHER)}`, chat, `/model/${enc(OTHER)}/converse`], // a direct route to any model of the provider
      [`/brk/${enc("us.anthropic.claude-haiku-4-5-20251001-v1:0")}`, chat, "/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/converse"],
      [`/model/${enc(ARN)}/converse`, converse, `/model/${enc(ARN)}/converse`], // the Bedrock route, through the arn* pool
      [`/model/${enc(ARN)}/converse-stream`, converse, `/model/${enc(ARN)}/converse-stream`],
    ];
    for (const [path, body, upstream] of cases) {
      ups.forEach((u) => u.reset());
      const answer = await rawPost(path, body);
      expect({ path, status: statusOf(answer), upstream: upstreamPaths() }).toEqual({ path, status: 200, upstream: [upstream] });
      expect(brkUp.requests[0]!.headers.authorization).toBe(`Bearer ${brkUp.apiKey}`);
    }
    ups.forEach((u) => u.reset());
    for (const bad of [`${ARN}/../../x`, "arn:aws:bedrock:us-east-1:123456789012:inference-profile/..%2Fx", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/a?b"]) {
      expect({ bad, status: statusOf(await rawPost(`/brk/${enc(bad)}`, chat)) }).toEqual({ bad, status: 400 });
      expect({ bad, status: statusOf(await rawPost(`/model/${enc(bad)}/converse`, converse)) }).toEqual({ bad, status: 400 });
    }
    // Where the name goes into the URL (a direct route), a `/` is only an ARN's.
    for (const bad of ["arn:aws:s3:::bucket/key", "vendor/model"]) expect({ bad, status: statusOf(await rawPost(`/brk/${enc(bad)}`, chat)) }).toEqual({ bad, status: 400 });
    expect(upstreamPaths()).toEqual([]);
  });

  test("a direct route whose path holds a malformed percent-escape is a 400 naming model, not a 500", async () => {
    for (const path of ["/gem/gemini-x%zz", "/gem/gemini-x%", "/gem/gemini-x%C0%AF", "/gem%zz/gemini-x", "/gemini%zz", "/brk/us.anthropic.claude%E0%A4"]) {
      const answer = await rawPost(path, chat);
      expect({ path, status: statusOf(answer) }).toEqual({ path, status: 400 });
      expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)).error).toMatchObject({ type: "invalid_request_error", param: "model" });
    }
    expect(upstreamPaths()).toEqual([]);
    expect(gw.logs.filter((line) => line.includes("unhandled error"))).toEqual([]);
  });

  test("a name that only a pattern pool (gemini-*) matches must still be a model name, on every protocol", async () => {
    const BAD = ["gemini-x/../../y", "gemini-x\\..\\y", "gemini-x?key=1", "gemini-x#y", "gemini-x\u0000", "gemini-x\r\nHost: evil", "gemini-\u2024\u2024\uff0fx", "gemini-x y", "gemini-x%2Fy", "gemini-..", `gemini-${"x".repeat(300)}`];
    for (const protocol of PROTOCOLS) {
      for (const model of BAD) {
        const inPath = protocol === "gemini" || protocol === "bedrock";
        const response = await post(inPath ? CALLS[protocol].path(enc(model)) : CALLS[protocol].path(model), CALLS[protocol].body(model));
        const body = await response.json();
        expect({ protocol, model, status: response.status }).toEqual({ protocol, model, status: 400 });
        expect(nativeMessage(protocol, response, body)).toContain("model");
      }
    }
    expect(upstreamPaths()).toEqual([]);
    // A real name the pattern matches is served, by the pool's configured model only; so is one spelt
    // `vendor/model` (OpenRouter, LiteLLM), which only routing reads. An unknown such name is a 404.
    for (const protocol of PROTOCOLS) {
      const inPath = protocol === "gemini" || protocol === "bedrock";
      for (const model of ["gemini-1.5-pro", "gemini-exp/1206"]) {
        ups.forEach((u) => u.reset());
        const response = await post(CALLS[protocol].path(inPath ? enc(model) : model), CALLS[protocol].body(model));
        expect({ protocol, model, status: response.status }).toEqual({ protocol, model, status: 200 });
        expect(upstreamPaths()).toEqual(["/v1beta/models/gemini-2.0-flash:generateContent"]);
      }
      const unknown = await post(CALLS[protocol].path(inPath ? enc("vendor/unknown-1") : "vendor/unknown-1"), CALLS[protocol].body("vendor/unknown-1"));
      expect({ protocol, status: unknown.status }).toEqual({ protocol, status: 404 });
    }
  });
});

describe("class 11: deeply nested bodies and out-of-range max-tokens", () => {
  const DEEP = 100_000;
  const deepMember = `${"[".repeat(DEEP)}${"]".repeat(DEEP)}`;
  /** A valid body with a 10^5-level array as one more member (a same-protocol route relays it; others translate). */
  const deepBody = (protocol: Protocol, pool = "to-openai") => JSON.stringify(CALLS[protocol].body(pool)).replace(/^\{/, `{"x_deep":${deepMember},`);

  test("every protocol answers a 10^5-level body with a 400 in its own shape, fast", async () => {
    for (const protocol of PROTOCOLS) {
      const started = performance.now();
      const response = await post(CALLS[protocol].path("to-openai"), deepBody(protocol));
      const elapsed = performance.now() - started;
      expect({ protocol, status: response.status }).toEqual({ protocol, status: 400 });
      expect(nativeMessage(protocol, response, await response.json())).toContain("deeper than 64 levels");
      expect(elapsed).toBeLessThan(250); // under 10 ms in the gateway; the rest is a shared test machine
    }
  });

  test("/healthz stays prompt while deep bodies are being posted", async () => {
    let posting = true;
    const posters = Array.from({ length: 4 }, async () => {
      while (posting) await (await post("/v1/chat/completions", deepBody("openai"))).arrayBuffer();
    });
    await Bun.sleep(50);
    let worst = 0;
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      expect((await fetch(`${gw.data}/healthz`)).status).toBe(200);
      worst = Math.max(worst, performance.now() - started);
    }
    posting = false;
    await Promise.all(posters);
    expect(worst).toBeLessThan(200);
  });

  /** Each protocol's max-tokens member set to `value`, routed to a lane of another protocol (translated). */
  const withMaxTokens: Record<Protocol, (value: unknown) => Record<string, unknown>> = {
    openai: (v) => ({ max_tokens: v }),
    anthropic: (v) => ({ max_tokens: v }),
    responses: (v) => ({ max_output_tokens: v }),
    cohere: (v) => ({ max_tokens: v }),
    gemini: (v) => ({ generationConfig: { maxOutputTokens: v } }),
    bedrock: (v) => ({ inferenceConfig: { maxTokens: v } }),
  };
  const MEMBER: Record<Protocol, string> = { openai: "max_tokens", anthropic: "max_tokens", responses: "max_output_tokens", cohere: "max_tokens", gemini: "maxOutputTokens", bedrock: "maxTokens" };

  test("a translated request's max-tokens outside 1..2^31-1 is a 400 naming the member, and nothing goes upstream", async () => {
    for (const protocol of PROTOCOLS) {
      const pool = protocol === "openai" ? "to-anthropic" : "to-openai";
      for (const value of [-5, 0, 1e300, 2 ** 31, 1.5]) {
        const response = await post(CALLS[protocol].path(pool), CALLS[protocol].body(pool, withMaxTokens[protocol](value)));
        expect({ protocol, value, status: response.status }).toEqual({ protocol, value, status: 400 });
        expect(nativeMessage(protocol, response, await response.json())).toContain(MEMBER[protocol]);
      }
    }
    const openai = await post("/v1/chat/completions", { model: "to-anthropic", max_completion_tokens: -5, messages: [{ role: "user", content: "hi" }] });
    expect(((await openai.json()) as any).error).toMatchObject({ param: "max_completion_tokens" });
    expect(upstreamPaths()).toEqual([]);
    // The bounds themselves pass.
    for (const value of [1, 2 ** 31 - 1]) expect((await post("/v1/messages", CALLS.anthropic.body("to-openai", { max_tokens: value }))).status).toBe(200);
  });
});

describe("class 14: chunked request bodies", () => {
  test("every protocol serves a chunked body (no Content-Length), stream and not", async () => {
    for (const protocol of PROTOCOLS) {
      const bytes = new TextEncoder().encode(JSON.stringify(CALLS[protocol].body("default")));
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.subarray(0, 5));
          controller.enqueue(bytes.subarray(5));
          controller.close();
        },
      });
      const response = await post(CALLS[protocol].path("default"), undefined, { body, duplex: "half" } as RequestInit);
      const text = await response.text();
      expect({ protocol, status: response.status }).toEqual({ protocol, status: 200 });
      expect(text).toContain("mock: hi");
    }
  });

  test("raw chunked requests to the Gemini stream and Bedrock converse-stream paths", async () => {
    const chunked = (path: string, body: string) => `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const gemini = await raw(chunked("/v1beta/models/default:streamGenerateContent?alt=sse", JSON.stringify(CALLS.gemini.body(""))));
    expect(statusOf(gemini)).toBe(200);
    expect(gemini).toContain('"text":"hi"');
    const bedrock = await raw(chunked("/model/default/converse-stream", JSON.stringify(CALLS.bedrock.body(""))));
    expect(statusOf(bedrock)).toBe(200);
    expect(bedrock).toContain('"text":"hi"');
  });
});

describe("class 16: methods and Host headers", () => {
  test("a wrong method on a protocol path is a 405 in that protocol's shape, with Allow", async () => {
    const cases: [Protocol, string, string, string][] = [
      ["anthropic", "GET", "/v1/messages", "POST"],
      ["openai", "PUT", "/v1/chat/completions", "POST"],
      ["openai", "DELETE", "/chat/completions", "POST"],
      ["responses", "PUT", "/v1/responses", "GET, HEAD, POST"],
      ["openai", "GET", "/gem/gemini-2.0-flash", "POST"], // a direct route
      ["openai", "PATCH", "/mock-1", "POST"],
      ["cohere", "GET", "/v2/chat", "POST"],
      ["gemini", "GET", "/v1beta/models/default:generateContent", "POST"],
      ["bedrock", "GET", "/model/default/converse", "POST"],
    ];
    for (const [protocol, method, path, allow] of cases) {
      const response = await fetch(`${gw.data}${path}`, { method });
      expect({ path, method, status: response.status, allow: response.headers.get("allow") }).toEqual({ path, method, status: 405, allow });
      expect(nativeMessage(protocol, response, await response.json())).toContain(method);
    }
    // Operational routes keep the gateway's own envelope.
    const health = await fetch(`${gw.data}/healthz`, { method: "PUT" });
    expect(health.status).toBe(405);
    expect(((await health.json()) as any).error.code).toBeString();
  });

  test("short, odd and absent Host headers reach the right routes", async () => {
    for (const host of ["gw", "a", "abc", "a:1", "abc:1", "[::1]", "[::1]:8080", "localhost", "127.0.0.1"]) {
      for (const path of ["/healthz", "/v1/models"]) {
        const answer = await raw(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
        expect({ host, path, status: statusOf(answer) }).toEqual({ host, path, status: 200 });
      }
      // A model request through the app router (direct route) and a 404 that stays a 404.
      const body = JSON.stringify(CALLS.openai.body("mock-1"));
      const direct = await rawPost("/mock-1", body, host);
      expect({ host, status: statusOf(direct) }).toEqual({ host, status: 200 });
      expect(statusOf(await raw(`GET /nope/nope/nope HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`))).toBe(404);
    }
    const noHost = await raw("GET /healthz HTTP/1.0\r\n\r\n");
    expect(statusOf(noHost)).toBe(200);
  });

  test("over TLS too (https:// leaves one character less before the path)", async () => {
    const dir = makeTlsDir();
    const tls = await startGateway(`${LISTEN_ANY}tls: {cert_file: ${dir}/cert.pem, key_file: ${dir}/key.pem}\nproviders: {local: {protocol: mock}}\nmodels: {mock-1: {provider: local}}\n`, { scheme: "https" });
    try {
      for (const host of ["a", "gw", "abc", "[::1]"]) {
        const answer = await raw(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, { port: Number(new URL(tls.data).port), tls: true });
        expect({ host, status: statusOf(answer) }).toEqual({ host, status: 200 });
      }
    } finally {
      await tls.stop();
    }
  });
});

// Last: it holds the gateway's slots for a while (a second gateway with a small cap and deadline).
describe("class 12: a body that never finishes", () => {
  let small: RunningGateway;
  beforeAll(async () => {
    small = await startGateway(`${LISTEN_ANY}
limits: {max_inbound_concurrent: 2, body_read_timeout_secs: 0.5}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  default: {members: [{model: mock-1}]}
`);
  });
  afterAll(() => small?.stop());

  test("stalled bodies hold their slots no longer than body_read_timeout_secs, then get 408", async () => {
    const smallPort = Number(new URL(small.data).port);
    const stalled = async (path: string, rest: string) => {
      const started = performance.now();
      const answer = await raw(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${rest}`, { port: smallPort });
      return { answer, ms: performance.now() - started };
    };
    const chat = () => fetch(`${small.data}/v1/chat/completions`, { method: "POST", body: JSON.stringify(CALLS.openai.body("default")) });
    // Headers plus one byte of a 100-byte body; and a chunked body whose end never comes.
    const held = [stalled("/v1/chat/completions", "Content-Length: 100\r\n\r\n{"), stalled("/v1/messages", "Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n")];
    await Bun.sleep(150);
    expect((await chat()).status).toBe(503); // both slots are held
    const [openai, anthropic] = await Promise.all(held);
    for (const { answer, ms } of [openai!, anthropic!]) {
      expect(statusOf(answer)).toBe(408);
      expect(answer.toLowerCase()).toContain("connection: close");
      expect(answer).toContain("body_read_timeout_secs");
      expect(ms).toBeLessThan(2000);
    }
    expect(anthropic!.answer).toContain('"type":"error"'); // Anthropic's own shape
    const after = await Promise.all([chat(), chat()]);
    expect(after.map((r) => r.status)).toEqual([200, 200]);
  });
  test("sockets that never finish their headers hold no slot and slow nothing (why there is no header deadline)", async () => {
    const smallPort = Number(new URL(small.data).port);
    const sockets = await Promise.all(
      Array.from({ length: 400 }, (_, i) => new Promise<ReturnType<typeof connect>>((open) => {
        const socket = connect(smallPort, "127.0.0.1", () => (socket.write(i % 2 ? "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " : ""), open(socket)));
        socket.on("error", () => {});
      })),
    );
    try {
      await Bun.sleep(100);
      const started = performance.now();
      // Both slots are free: a socket without a whole request never reaches the handler that takes one.
      const answers = await Promise.all([1, 2].map(() => fetch(`${small.data}/v1/chat/completions`, { method: "POST", body: JSON.stringify(CALLS.openai.body("default")) })));
      expect(answers.map((r) => r.status)).toEqual([200, 200]);
      expect((await fetch(`${small.data}/healthz`)).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(500);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });
});
