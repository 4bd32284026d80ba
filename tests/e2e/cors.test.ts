// CORS on the data plane, on the built binary (issue 22 class 2): a browser's request from an origin
// not in security.allowed_origins is refused (403, in the caller's protocol shape), so a page cannot
// spend the gateway; a configured origin gets the preflight and Access-Control-Allow-Origin on every
// answer, streams and errors included; clients that send no Origin (SDKs, curl) are unaffected.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

const APP = "https://app.example.com";
let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(`${LISTEN_ANY}store: {module: sqlite, settings: {path: ":memory:"}}
security: {allowed_origins: ["${APP}", "http://localhost:5173"], max_body_bytes: 4096}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
auth: {chain: []}
`);
});
afterAll(async () => {
  await gw?.stop();
});

const CHAT = { model: "mock-1", messages: [{ role: "user", content: "hi" }] };
const MESSAGES = { model: "mock-1", max_tokens: 16, messages: [{ role: "user", content: "hi" }] };
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });

describe("no Origin: SDKs and curl", () => {
  test("answer as before, with no CORS headers", async () => {
    const response = await post("/v1/chat/completions", CHAT);
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    expect(((await json(response)) as { object: string }).object).toBe("chat.completion");
    expect((await post("/v1/messages", MESSAGES, { "anthropic-version": "2023-06-01" })).status).toBe(200);
  });
});

describe("a foreign Origin", () => {
  const foreign = { origin: "https://evil.example" };

  test("is refused in OpenAI's shape", async () => {
    const response = await post("/v1/chat/completions", CHAT, foreign);
    expect(response.status).toBe(403);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    const body = (await json(response)) as { error: { message: string; type: string } };
    expect(body.error.message).toContain("allowed_origins");
    expect(body.error.type).toBe("permission_error");
  });

  test("is refused in Anthropic's shape", async () => {
    const response = await post("/v1/messages", MESSAGES, { ...foreign, "anthropic-version": "2023-06-01" });
    expect(response.status).toBe(403);
    expect(await json(response)).toMatchObject({ type: "error", error: { type: "permission_error" } });
  });

  test("is refused in Gemini's shape", async () => {
    const response = await post("/v1beta/models/mock-1:generateContent", { contents: [{ role: "user", parts: [{ text: "hi" }] }] }, foreign);
    expect(response.status).toBe(403);
    expect(await json(response)).toMatchObject({ error: { code: 403, status: "PERMISSION_DENIED" } });
  });

  test("gets no preflight, and reads nothing elsewhere either", async () => {
    const preflight = await fetch(`${gw.data}/v1/chat/completions`, { method: "OPTIONS", headers: { ...foreign, "access-control-request-method": "POST" } });
    expect(preflight.status).toBe(403);
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    for (const path of ["/v1/models", "/stats", "/healthz"]) {
      const response = await fetch(`${gw.data}${path}`, { headers: { origin: "null" } });
      expect({ path, status: response.status }).toEqual({ path, status: 403 });
    }
    // A neighbour of an allowed origin is not it.
    expect((await post("/v1/chat/completions", CHAT, { origin: `${APP}.evil.example` })).status).toBe(403);
    expect((await post("/v1/chat/completions", CHAT, { origin: "http://localhost:5174" })).status).toBe(403);
  });
});

describe("an allowed Origin", () => {
  const allowed = { origin: APP };

  test("gets a preflight allowing the vendor SDKs' headers", async () => {
    const asked = "authorization, content-type, x-api-key, anthropic-version, anthropic-beta, anthropic-dangerous-direct-browser-access, x-goog-api-key, openai-organization, openai-project, x-stainless-os, x-stainless-retry-count";
    const response = await fetch(`${gw.data}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: { ...allowed, "access-control-request-method": "POST", "access-control-request-headers": asked },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe(APP);
    expect(response.headers.get("access-control-allow-methods")).toContain("POST");
    expect(response.headers.get("access-control-allow-headers")).toBe(asked);
    expect(response.headers.get("vary")).toContain("Origin");
    // Gemini's and Bedrock's paths too.
    const gemini = await fetch(`${gw.data}/v1beta/models/mock-1:generateContent`, { method: "OPTIONS", headers: { origin: "http://localhost:5173", "access-control-request-method": "POST" } });
    expect(gemini.status).toBe(204);
    expect(gemini.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
  });

  test("gets Access-Control-Allow-Origin and Vary: Origin on answers, errors and streams", async () => {
    const ok = await post("/v1/chat/completions", CHAT, allowed);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe(APP);
    expect(ok.headers.get("vary")).toContain("Origin");
    expect(((await json(ok)) as { object: string }).object).toBe("chat.completion");

    const error = await post("/v1/chat/completions", "{not json", allowed);
    expect(error.status).toBe(400);
    expect(error.headers.get("access-control-allow-origin")).toBe(APP);

    const tooLarge = await post("/v1/chat/completions", { ...CHAT, pad: "x".repeat(8192) }, allowed);
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers.get("access-control-allow-origin")).toBe(APP);

    const stream = await post("/v1/chat/completions", { ...CHAT, stream: true }, allowed);
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toContain("text/event-stream");
    expect(stream.headers.get("access-control-allow-origin")).toBe(APP);
    const text = await stream.text();
    expect(text).toContain("data: [DONE]");

    const anthropic = await post("/v1/messages", { ...MESSAGES, stream: true }, { ...allowed, "anthropic-version": "2023-06-01" });
    expect(anthropic.headers.get("access-control-allow-origin")).toBe(APP);
    expect(await anthropic.text()).toContain("message_stop");

    const models = await fetch(`${gw.data}/v1/models`, { headers: allowed });
    expect(models.status).toBe(200);
    expect(models.headers.get("access-control-allow-origin")).toBe(APP);
  });
});

describe("every protocol path and direct route", () => {
  const GEN = { contents: [{ role: "user", parts: [{ text: "hi" }] }] };
  const CONVERSE = { messages: [{ role: "user", content: [{ text: "hi" }] }] };
  /** Each model route: its path, a valid body, and how its refusal names the forbidden origin. */
  const ROUTES: [string, unknown, (r: Response, body: any) => void][] = [
    ["/v1/chat/completions", CHAT, (_, b) => expect(b.error.type).toBe("permission_error")],
    ["/chat/completions", CHAT, (_, b) => expect(b.error.type).toBe("permission_error")],
    ["/v1/messages", MESSAGES, (_, b) => expect(b).toMatchObject({ type: "error", error: { type: "permission_error" } })],
    ["/v1/responses", { model: "mock-1", input: "hi" }, (_, b) => expect(b.error.type).toBe("permission_error")],
    ["/v2/chat", CHAT, (_, b) => expect(typeof b.message).toBe("string")],
    ["/v1beta/models/mock-1:generateContent", GEN, (_, b) => expect(b.error.status).toBe("PERMISSION_DENIED")],
    ["/v1beta/models/mock-1:streamGenerateContent?alt=sse", GEN, (_, b) => expect(b.error.status).toBe("PERMISSION_DENIED")],
    ["/v1/models/mock-1:generateContent", GEN, (_, b) => expect(b.error.status).toBe("PERMISSION_DENIED")],
    ["/model/mock-1/converse", CONVERSE, (r) => expect(r.headers.get("x-amzn-errortype")).toStartWith("AccessDeniedException")],
    ["/model/mock-1/converse-stream", CONVERSE, (r) => expect(r.headers.get("x-amzn-errortype")).toStartWith("AccessDeniedException")],
    ["/local/mock-1", CHAT, (_, b) => expect(b.error.type).toBe("permission_error")],
    ["/mock-1", CHAT, (_, b) => expect(b.error.type).toBe("permission_error")],
  ];

  test("a foreign origin (a simple text/plain POST included) is refused in the path's own shape; an allowed one gets the preflight and the answer", async () => {
    for (const [path, body, native] of ROUTES) {
      for (const origin of ["https://evil.example", "null"]) {
        const refused = await fetch(`${gw.data}${path}`, { method: "POST", headers: { origin, "content-type": "text/plain" }, body: JSON.stringify(body) });
        expect({ path, origin, status: refused.status, acao: refused.headers.get("access-control-allow-origin") }).toEqual({ path, origin, status: 403, acao: null });
        native(refused, await json(refused));
      }
      const preflight = await fetch(`${gw.data}${path}`, { method: "OPTIONS", headers: { origin: APP, "access-control-request-method": "POST", "access-control-request-headers": "content-type, x-api-key" } });
      expect({ path, status: preflight.status, acao: preflight.headers.get("access-control-allow-origin") }).toEqual({ path, status: 204, acao: APP });
      const served = await post(path, body, { origin: APP });
      expect({ path, status: served.status, acao: served.headers.get("access-control-allow-origin") }).toEqual({ path, status: 200, acao: APP });
      await served.arrayBuffer();
    }
  });
});

test("the list is live: an origin added through PUT /config/settings is served at once", async () => {
  const fresh = { origin: "https://new.example" };
  expect((await post("/v1/chat/completions", CHAT, fresh)).status).toBe(403);
  const put = await fetch(`${gw.admin}/config/settings`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ security: { allowed_origins: [APP, "https://new.example"], max_body_bytes: 4096 } }),
  });
  expect(put.status).toBe(200);
  const response = await post("/v1/chat/completions", CHAT, fresh);
  expect(response.status).toBe(200);
  expect(response.headers.get("access-control-allow-origin")).toBe("https://new.example");
  // "*": every origin is served, each answered with its own origin (and Vary: Origin).
  const any = await fetch(`${gw.admin}/config/settings`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ security: { allowed_origins: ["*"] } }) });
  expect(any.status).toBe(200);
  for (const origin of ["https://whatever.example", "null"]) {
    const served = await post("/v1/messages", MESSAGES, { origin });
    expect({ status: served.status, acao: served.headers.get("access-control-allow-origin"), vary: served.headers.get("vary") }).toEqual({ status: 200, acao: origin, vary: "Origin" });
    const preflight = await fetch(`${gw.data}/model/mock-1/converse`, { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST" } });
    expect(preflight.status).toBe(204);
  }
});
