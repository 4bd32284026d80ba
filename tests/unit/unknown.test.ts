// The answers for what the data plane does not serve (src/dataplane/unknown.ts): whose error shape a
// request to an unserved path gets, and the names an unknown-model answer lists.
import { describe, expect, test } from "bun:test";
import { loadConfigText } from "../../src/config/load.ts";
import { nameList } from "../../src/config/snapshot.ts";
import { callerProtocol, unknownModelMessage, unknownRoute } from "../../src/dataplane/unknown.ts";

const request = (method: string, path: string, headers: Record<string, string> = {}) => new Request(`http://gw${path}`, { method, headers });
const protocolOf = (method: string, path: string, headers: Record<string, string> = {}) => callerProtocol(request(method, path, headers), path)?.name;

describe("the caller's protocol on a path the gateway does not serve", () => {
  test("from the path where one vendor owns it", () => {
    expect(protocolOf("POST", "/v1/messages/count_tokens")).toBe("anthropic");
    expect(protocolOf("POST", "/v1/responses/abc/cancel")).toBe("responses");
    expect(protocolOf("POST", "/v1beta/models/x:embedContent")).toBe("gemini");
    expect(protocolOf("POST", "/model/x/invoke")).toBe("bedrock");
    expect(protocolOf("POST", "/v2/embed")).toBe("cohere");
  });
  test("from the SDK's own headers where the path is shared, else OpenAI's for /v1 and POST, else none", () => {
    expect(protocolOf("POST", "/v1/complete")).toBe("anthropic");
    expect(protocolOf("GET", "/v1/files", { "anthropic-version": "2023-06-01" })).toBe("anthropic");
    expect(protocolOf("GET", "/v1/models/x", { "x-goog-api-key": "k" })).toBe("gemini");
    expect(protocolOf("POST", "/a/b/c", { authorization: "AWS4-HMAC-SHA256 Credential=x" })).toBe("bedrock");
    expect(protocolOf("POST", "/v1/embeddings")).toBe("openai");
    expect(protocolOf("GET", "/v1/files")).toBe("openai");
    expect(protocolOf("POST", "/a/b/c")).toBe("openai");
    expect(protocolOf("GET", "/favicon.ico")).toBeUndefined();
  });
  test("a 404 in that shape, naming the path and what is served", async () => {
    const openai = unknownRoute(request("POST", "/v1/embeddings"));
    expect(openai.status).toBe(404);
    expect(((await openai.json()) as { error: unknown }).error).toMatchObject({ type: "invalid_request_error", code: null, message: expect.stringContaining("does not serve POST /v1/embeddings. It serves: POST /v1/chat/completions") });
    const none = unknownRoute(request("GET", "/favicon.ico"));
    expect(none.status).toBe(404);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });
});

describe("an unknown model's list of names", () => {
  test("up to 20, then how many more", () => {
    expect(nameList([])).toBe("");
    expect(nameList(["a", "b"])).toBe("`a`, `b`");
    const many = Array.from({ length: 25 }, (_, i) => `n${String(i).padStart(2, "0")}`);
    expect(nameList(many)).toBe(`${many.slice(0, 20).map((n) => `\`${n}\``).join(", ")} and 5 more`);
  });
  test("made at load from the pools and aliases; a restricted key hears only its pools", () => {
    const loaded = loadConfigText("providers: {p: {protocol: mock}}\nmodels: {m1: {provider: p}, m2: {provider: p}}\npools: {chat: {members: [{model: m1}]}, 'claude-*': {members: [{model: m2}]}}\n", "t", { env: {} });
    if (!loaded.ok) throw new Error(loaded.errors.join("\n"));
    expect(loaded.snapshot.modelNames.names).toEqual(["chat", "claude-*", "m1", "m2"]);
    expect(unknownModelMessage(loaded.snapshot, "x", null)).toBe("The model `x` does not exist. Models you may use: `chat`, `claude-*`, `m1`, `m2`.");
    expect(unknownModelMessage(loaded.snapshot, "x", ["m2", "gone"])).toBe("The model `x` does not exist. Models you may use: `m2`.");
    expect(unknownModelMessage(loaded.snapshot, "x", [])).toBe("The model `x` does not exist. This key may use no model.");
  });
});
