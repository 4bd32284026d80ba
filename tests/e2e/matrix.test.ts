// The full 6x6 matrix end to end: each vendor's official SDK as the client, the built binary in the
// middle, and an imitation of every upstream protocol that validates everything the gateway sends it
// (the Bedrock one verifies the SigV4 signature of every request). Every SDK to every upstream:
// non-stream, stream, and a tool-call round trip with the tool result sent back.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { ANTHROPIC_DEFAULT_KEY, startAnthropicUpstream } from "../support/upstreams/anthropic.ts";
import { BEDROCK_DEFAULT_CREDENTIALS, startBedrockUpstream } from "../support/upstreams/bedrock.ts";
import { COHERE_DEFAULT_KEY, startCohereUpstream } from "../support/upstreams/cohere.ts";
import type { RecordedRequest, Upstream } from "../support/upstreams/common.ts";
import { GEMINI_DEFAULT_KEY, startGeminiUpstream } from "../support/upstreams/gemini.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";
import { CLIENT_KEY, SDK_CLIENTS, type SdkClient } from "../support/sdk-clients.ts";

type Protocol = "openai" | "anthropic" | "gemini" | "bedrock" | "cohere" | "responses";

/** Each upstream protocol: its imitation, the lane's upstream model, and where a request names it. */
const bedrockUp = startBedrockUpstream();
const modelInBody = (r: RecordedRequest) => (r.body as { model?: string } | undefined)?.model;
const modelInPath = (pattern: RegExp) => (r: RecordedRequest) => {
  const found = new URL(r.path, "http://x").pathname.match(pattern)?.[1];
  return found === undefined ? undefined : decodeURIComponent(found);
};
const UPSTREAMS: Record<Protocol, { up: Upstream; model: string; path: RegExp; modelOf: (r: RecordedRequest) => string | undefined }> = {
  openai: { up: startOpenAIUpstream(), model: "gpt-4o-mini", path: /^\/v1\/chat\/completions$/, modelOf: modelInBody },
  anthropic: { up: startAnthropicUpstream(), model: "claude-haiku-4-5", path: /^\/v1\/messages$/, modelOf: modelInBody },
  gemini: { up: startGeminiUpstream(), model: "gemini-2.5-flash", path: /^\/v1beta\/models\/[^/:]+:(generateContent|streamGenerateContent\?alt=sse)$/, modelOf: modelInPath(/^\/v1beta\/models\/([^/:]+):/) },
  bedrock: { up: bedrockUp, model: "anthropic.claude-3-haiku-20240307-v1:0", path: /^\/model\/[^/]+\/converse(-stream)?$/, modelOf: modelInPath(/^\/model\/([^/]+)\//) },
  cohere: { up: startCohereUpstream(), model: "command-a-03-2025", path: /^\/v2\/chat$/, modelOf: modelInBody },
  responses: { up: startOpenAIUpstream(), model: "gpt-5-mini", path: /^\/v1\/responses$/, modelOf: modelInBody },
};
const PROTOCOLS = Object.keys(UPSTREAMS) as Protocol[];
const AWS_ENV = { MATRIX_AWS_KEY_ID: BEDROCK_DEFAULT_CREDENTIALS.accessKeyId, MATRIX_AWS_SECRET: BEDROCK_DEFAULT_CREDENTIALS.secretAccessKey };

const config = `${LISTEN_ANY}
providers:
  oai: {protocol: openai, base_url: "${UPSTREAMS.openai.up.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
  ant: {protocol: anthropic, base_url: "${UPSTREAMS.anthropic.up.baseURL}", api_key: ${ANTHROPIC_DEFAULT_KEY}}
  gem: {protocol: gemini, base_url: "${UPSTREAMS.gemini.up.baseURL}", api_key: ${GEMINI_DEFAULT_KEY}}
  brk: {protocol: bedrock, base_url: "${bedrockUp.url}", region: ${bedrockUp.region}, aws_access_key_id: {env: MATRIX_AWS_KEY_ID}, aws_secret_access_key: {env: MATRIX_AWS_SECRET}}
  coh: {protocol: cohere, base_url: "${UPSTREAMS.cohere.up.baseURL}", api_key: ${COHERE_DEFAULT_KEY}}
  rsp: {protocol: responses, base_url: "${UPSTREAMS.responses.up.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
models:
${PROTOCOLS.map((p) => `  ${p}-lane: {provider: ${{ openai: "oai", anthropic: "ant", gemini: "gem", bedrock: "brk", cohere: "coh", responses: "rsp" }[p]}, model: "${UPSTREAMS[p].model}"}`).join("\n")}
pools:
${PROTOCOLS.map((p) => `  to-${p}: {members: [{model: ${p}-lane}]}`).join("\n")}
`;

let gw: RunningGateway;
let clients: Record<string, SdkClient>;
beforeAll(async () => {
  gw = await startGateway(config, { env: AWS_ENV });
  clients = Object.fromEntries(SDK_CLIENTS.map((make) => make(gw.data)).map((c) => [c.name, c]));
});
afterAll(async () => {
  await gw?.stop();
  await Promise.all(PROTOCOLS.map((p) => UPSTREAMS[p].up.stop()));
});
beforeEach(() => {
  for (const p of PROTOCOLS) UPSTREAMS[p].up.reset();
});

/** Everything the upstream received was valid, on its own route, and named the lane's upstream model. */
function expectValidUpstreamCalls(protocol: Protocol, count: number) {
  const { up, model, path, modelOf } = UPSTREAMS[protocol];
  expect(up.invalid().map((r) => `${r.path}: ${r.problem}`)).toEqual([]);
  expect(up.requests).toHaveLength(count);
  for (const r of up.requests) {
    expect(r.path).toMatch(path);
    expect(modelOf(r)).toBe(model);
    if (protocol === "bedrock") expect(r.verification).toEqual({ ok: true, accessKeyId: BEDROCK_DEFAULT_CREDENTIALS.accessKeyId });
  }
}

const SDK_NAMES = SDK_CLIENTS.map((make) => make("http://unused").name);

describe.each(SDK_NAMES)("%s SDK", (sdk) => {
  describe.each(PROTOCOLS)("-> %s upstream", (protocol) => {
    const pool = `to-${protocol}`;

    test("non-stream", async () => {
      const client = clients[sdk]!;
      const turn = await client.nonStream(pool, `hello ${protocol}`);
      expect(turn.text).toBe(`echo: hello ${protocol}`);
      expect(turn.finish).toBe(client.finish.stop);
      expect(turn.outputTokens).toBeGreaterThan(0);
      expectValidUpstreamCalls(protocol, 1);
      // The system instruction crossed too: the upstream saw it in its own form.
      expect(UPSTREAMS[protocol].up.requests[0]!.rawBody).toContain("be brief");
    });

    test("stream, text arriving in several deltas", async () => {
      const client = clients[sdk]!;
      const turn = await client.stream(pool, `stream ${protocol} to me`);
      expect(turn.text).toBe(`echo: stream ${protocol} to me`);
      expect(turn.deltas).toBeGreaterThan(1);
      expect(turn.finish).toBe(client.finish.stop);
      expect(turn.outputTokens).toBeGreaterThan(0);
      expectValidUpstreamCalls(protocol, 1);
    });

    test("tool call streamed, then the tool result sent back", async () => {
      const client = clients[sdk]!;
      UPSTREAMS[protocol].up.script({ toolCall: true });
      const trip = await client.toolRoundTrip(pool, "# gateway readme");
      expect(trip.call).toEqual({ name: "read_file", arguments: { path: "README.md" } });
      expect(trip.callFinish).toBe(client.finish.tool);
      expect(trip.answer).toBe("tool result: # gateway readme");
      expectValidUpstreamCalls(protocol, 2);
    });
  });
});

describe("the routes around the SDKs' own calls", () => {
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const geminiBody = (text: string) => ({ contents: [{ role: "user", parts: [{ text }] }] });

  test("Gemini under /v1/ with the key in ?key=, streamed without alt=sse: one JSON array, across protocols", async () => {
    const response = await post(`/v1/models/to-anthropic:streamGenerateContent?key=${CLIENT_KEY}`, geminiBody("as an array"));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toStartWith("application/json");
    const chunks = (await response.json()) as { candidates?: { content?: { parts?: { text?: string }[] } }[] }[];
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((c) => c.candidates?.[0]?.content?.parts?.map((p) => p.text ?? "").join("") ?? "").join("")).toBe("echo: as an array");
    expectValidUpstreamCalls("anthropic", 1);
  });

  test("Gemini's JSON-array stream passes through to a Gemini upstream in the same form", async () => {
    const response = await post("/v1beta/models/to-gemini:streamGenerateContent", geminiBody("same form"), { "x-goog-api-key": CLIENT_KEY });
    expect(response.status).toBe(200);
    expect(((await response.json()) as unknown[]).length).toBeGreaterThan(1);
    const [sent] = UPSTREAMS.gemini.up.requests;
    expect(sent!.valid).toBe(true);
    expect(sent!.path).toBe(`/v1beta/models/${UPSTREAMS.gemini.model}:streamGenerateContent`);
  });

  test("an unknown Gemini method is a 404 in Gemini's error shape", async () => {
    const response = await post("/v1beta/models/to-openai:countTokens", geminiBody("x"), { "x-goog-api-key": CLIENT_KEY });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { code: number; status: string } }).error).toMatchObject({ code: 404, status: "NOT_FOUND" });
    for (const p of PROTOCOLS) expect(UPSTREAMS[p].up.requests).toHaveLength(0);
  });

  test("Responses previous_response_id: passed through on a same-protocol route, a clear 400 across protocols", async () => {
    const stored = (await (await post("/v1/responses", { model: "to-responses", input: "first" }, { authorization: `Bearer ${CLIENT_KEY}` })).json()) as { id: string };
    const followUp = await post("/v1/responses", { model: "to-responses", previous_response_id: stored.id, input: "second" }, { authorization: `Bearer ${CLIENT_KEY}` });
    expect(followUp.status).toBe(200);
    expect((UPSTREAMS.responses.up.requests.at(-1)!.body as { previous_response_id: string }).previous_response_id).toBe(stored.id);

    const across = await post("/v1/responses", { model: "to-anthropic", previous_response_id: stored.id, input: "second" }, { authorization: `Bearer ${CLIENT_KEY}` });
    expect(across.status).toBe(400);
    const error = ((await across.json()) as { error: { message: string; type: string; param: string } }).error;
    expect(error.type).toBe("invalid_request_error");
    expect(error.message).toContain("previous_response_id");
    expect(UPSTREAMS.anthropic.up.requests).toHaveLength(0);
  });
});

describe("tool names an upstream refuses", () => {
  // `fs.read-file` is a valid Gemini name; OpenAI, Anthropic and Bedrock refuse the dot, Cohere the dot
  // and the dash. The upstream gets a name it takes; the client gets its own name back, and its history
  // carrying that name is renamed again on the next turn.
  test.each(PROTOCOLS.filter((p) => p !== "gemini"))("Gemini SDK -> %s: renamed for the call, restored in the answer", async (protocol) => {
    UPSTREAMS[protocol].up.script({ toolCall: true });
    const trip = await clients["Google GenAI"]!.toolRoundTrip(`to-${protocol}`, "# gateway readme", "fs.read-file");
    expect(trip.call).toEqual({ name: "fs.read-file", arguments: { path: "README.md" } });
    expect(trip.answer).toBe("tool result: # gateway readme");
    expectValidUpstreamCalls(protocol, 2);
    const sent = UPSTREAMS[protocol].up.requests.map((r) => r.rawBody).join("\n");
    expect(sent).not.toContain("fs.read-file");
    expect(sent).toContain(protocol === "cohere" ? "fs_read_file" : "fs_read-file");
  });

  test("OpenAI SDK -> cohere: a dash Cohere refuses", async () => {
    UPSTREAMS.cohere.up.script({ toolCall: true });
    const trip = await clients["OpenAI chat"]!.toolRoundTrip("to-cohere", "# gateway readme", "read-file");
    expect(trip.call).toEqual({ name: "read-file", arguments: { path: "README.md" } });
    expect(trip.answer).toBe("tool result: # gateway readme");
    expectValidUpstreamCalls("cohere", 2);
  });
});
