// What a first user hits off the served paths, on the built binary with the vendors' own SDKs: a path the
// gateway does not serve answers 404 in the caller's protocol naming what it serves (POST /v1/embeddings
// once said "The model `v1/embeddings` does not exist"); an unknown model lists the names the caller may
// use, only its allowed_pools for a restricted key; `GET /` on each listener points to the docs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { blocksUnder } from "../support/doc-blocks.ts";
import { json, LISTEN_ANY, ROOT, startGateway, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_SIGNING_KEY: "e2e-signing-key-unknown-routes-1", GW_CLIENT: "e2e-client-token-unknown-9f", GW_ADMIN: "e2e-admin-token-unknown-4c" };
// 23 names a caller may send (pools and bare model aliases): more than the 20 an answer lists.
const MODELS = Array.from({ length: 22 }, (_, i) => `m-${String(i).padStart(2, "0")}: {provider: local}`).join(", ");
const CONFIG = `${LISTEN_ANY}store: {module: sqlite, settings: {path: ":memory:"}}
providers: {local: {protocol: mock}}
models: {${MODELS}}
pools: {chat: {members: [{model: m-00}]}}
auth:
  chain: [tokens, keys]
  signing_key: {env: GW_SIGNING_KEY}
  tokens: [{name: ci, token: {env: GW_CLIENT}}]
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
`;
const SERVED = "It serves: POST /v1/chat/completions, POST /chat/completions, POST /v1/messages,";

let gw: RunningGateway;
let restricted: string;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
  const minted = await fetch(`${gw.admin}/keys`, { method: "POST", headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" }, body: JSON.stringify({ name: "narrow", allowed_pools: ["chat", "m-05"] }) });
  expect(minted.status).toBe(201);
  restricted = (await json(minted)).token;
});
afterAll(async () => {
  await gw?.stop();
});

const openai = (apiKey = ENV.GW_CLIENT) => new OpenAI({ apiKey, baseURL: `${gw.data}/v1`, maxRetries: 0 });
const anthropic = (apiKey = ENV.GW_CLIENT) => new Anthropic({ apiKey, baseURL: gw.data, maxRetries: 0 });
const thrown = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error as Error & { status?: number });

describe("a path the gateway does not serve", () => {
  test("OpenAI SDK embeddings: NotFoundError saying the path is not served and what is", async () => {
    const error = await thrown(openai().embeddings.create({ model: "chat", input: "hi" }));
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error!.message).toContain("This gateway does not serve POST /v1/embeddings (`v1` is not a provider of POST /{provider}/{model}).");
    expect(error!.message).toContain(SERVED);
    expect(error!.message).not.toContain("does not exist");
  });

  test("each caller hears it in its own protocol's error shape", async () => {
    const call = (path: string, headers: Record<string, string> = {}) => fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: "{}" });
    const anthropicAnswer = await call("/v1/messages/count_tokens", { "anthropic-version": "2023-06-01" });
    expect(anthropicAnswer.status).toBe(404);
    expect(await json(anthropicAnswer)).toMatchObject({ type: "error", error: { type: "not_found_error", message: expect.stringContaining("does not serve POST /v1/messages/count_tokens") } });
    const bedrock = await call("/model/m-00/invoke");
    expect(bedrock.status).toBe(404);
    expect(bedrock.headers.get("x-amzn-errortype")).toContain("ResourceNotFoundException");
    expect((await json(bedrock)).message).toContain("does not serve POST /model/m-00/invoke");
    const gemini = await call("/v1beta/models/m-00:embedContent", { "x-goog-api-key": "k" });
    expect(gemini.status).toBe(404);
    expect(await json(gemini)).toMatchObject({ error: { code: 404, status: "NOT_FOUND", message: expect.stringContaining(SERVED) } });
    const cohere = await call("/v2/embed");
    expect(cohere.status).toBe(404);
    expect(JSON.stringify(await json(cohere))).toContain("does not serve POST /v2/embed");
    // A shared /v1 path told apart by the header the Anthropic SDK always sends.
    const legacy = await call("/v1/complete", { "anthropic-version": "2023-06-01" });
    expect((await json(legacy)).type).toBe("error");
    // A path no SDK sends: the gateway's own envelope.
    const other = await fetch(`${gw.data}/nothing/here/at-all`);
    expect(other.status).toBe(404);
    expect((await json(other)).error).toMatchObject({ code: "not_found", message: expect.stringContaining(SERVED) });
  });
});

describe("an unknown model lists the names the caller may use", () => {
  test("Anthropic SDK: NotFoundError listing the first 20 names and how many more", async () => {
    const error = await thrown(anthropic().messages.create({ model: "claude-nope", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }));
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect(error!.message).toContain("The model `claude-nope` does not exist. Models you may use: `chat`, `m-00`, `m-01`,");
    expect(error!.message).toContain("`m-18` and 3 more.");
    expect(error!.message).not.toContain("`m-19`");
  });

  test("OpenAI SDK: the same list; a key limited to some pools hears only those", async () => {
    const open = await thrown(openai().chat.completions.create({ model: "gpt-nope", messages: [{ role: "user", content: "hi" }] }));
    expect(open).toBeInstanceOf(OpenAI.NotFoundError);
    expect(open!.message).toContain("Models you may use: `chat`, `m-00`,");
    const narrow = await thrown(openai(restricted).chat.completions.create({ model: "gpt-nope", messages: [{ role: "user", content: "hi" }] }));
    expect(narrow).toBeInstanceOf(OpenAI.NotFoundError);
    expect(narrow!.message).toContain("The model `gpt-nope` does not exist. Models you may use: `chat`, `m-05`.");
  });

  test("no credential: 401 before any name is told", async () => {
    const error = await thrown(openai("wrong").chat.completions.create({ model: "gpt-nope", messages: [{ role: "user", content: "hi" }] }));
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(error!.message).not.toContain("m-00");
  });
});

describe("GET / on each listener points to the docs", () => {
  test("data listener: JSON by default, text for a browser, HEAD with no body; no secret, no config", async () => {
    const page = await fetch(`${gw.data}/`);
    expect(page.status).toBe(200);
    const body = await json(page);
    expect(body).toMatchObject({ name: "gateway", version: expect.any(String) });
    expect(body.serves).toContain("POST /v1/chat/completions (openai)");
    expect(body.serves).toContain("POST /v1/messages (anthropic)");
    expect(body.docs.join(" ")).toContain("docs/protocols.md");
    const text = await fetch(`${gw.data}/`, { headers: { accept: "text/html,application/xhtml+xml" } });
    expect(text.headers.get("content-type")).toStartWith("text/plain");
    expect(await text.text()).toContain("POST /v1/chat/completions");
    const head = await fetch(`${gw.data}/`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    const all = JSON.stringify(body);
    for (const secret of Object.values(ENV)) expect(all).not.toContain(secret);
    expect(all).not.toContain("m-00");
  });

  test("admin listener: open (it holds no data), pointing to the API and its OpenAPI document", async () => {
    const page = await fetch(`${gw.admin.replace("/api/v1/admin", "")}/`);
    expect(page.status).toBe(200);
    const body = await json(page);
    expect(body.links).toEqual({ api: "/api/v1/admin", openapi: "/api/v1/admin/openapi.json", console: "/ui/" });
    // Whether the API asks a credential (this gateway's admin plane has admin_auth): no secret, no config.
    expect(body.admin_credential).toBe("required");
    const head = await fetch(`${gw.admin.replace("/api/v1/admin", "")}/`, { method: "HEAD" });
    expect(head.status).toBe(200);
    // Everything else still needs the credential.
    expect((await fetch(`${gw.admin}/openapi.json`)).status).toBe(401);
  });
});

describe("the commands in docs/operations.md, \"Unserved paths, unknown models and the pages at /\"", () => {
  test("run as printed (against this gateway's ports) and answer as the comments say", async () => {
    const [block] = blocksUnder(ROOT, "docs/operations.md", "Unserved paths, unknown models and the pages at /");
    const data = gw.data.replace("http://", "");
    const admin = gw.admin.replace("http://", "").replace("/api/v1/admin", "");
    const lines = block!.text.trimEnd().split("\n").map((line) => line.replace(/\s+# .*$/, "").replaceAll("127.0.0.1:8080", data).replaceAll("127.0.0.1:8081", admin));
    expect(lines).toHaveLength(3);
    const outputs: string[] = [];
    for (const line of lines) {
      const run = Bun.spawnSync(["sh", "-c", line], { stdout: "pipe", stderr: "pipe", timeout: 10_000 });
      expect(run.exitCode).toBe(0);
      outputs.push(run.stdout.toString());
    }
    expect(JSON.parse(outputs[0]!)).toMatchObject({ name: "gateway", serves: expect.any(Array), docs: expect.any(Array) });
    expect(JSON.parse(outputs[1]!).error.message).toContain("This gateway does not serve POST /v1/embeddings");
    expect(JSON.parse(outputs[2]!).links).toEqual({ api: "/api/v1/admin", openapi: "/api/v1/admin/openapi.json", console: "/ui/" });
  });
});
