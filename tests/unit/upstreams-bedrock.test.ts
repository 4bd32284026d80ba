// The Bedrock imitation (tests/support/upstreams/bedrock.ts) driven by the official
// @aws-sdk/client-bedrock-runtime client, signing with SigV4 or sending a Bedrock API key as a bearer
// token: what the SDK accepts and raises is what a gateway built on it would see.
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import {
  BedrockRuntimeClient,
  BedrockRuntimeServiceException,
  ConverseCommand,
  ConverseStreamCommand,
  ValidationException,
  type ConverseCommandInput,
} from "@aws-sdk/client-bedrock-runtime";
import { BEDROCK_DEFAULT_CREDENTIALS, BEDROCK_DEFAULT_KEY, startBedrockUpstream } from "../support/upstreams/bedrock.ts";
import { SCRIPTED_USAGE } from "../support/upstreams/common.ts";
import { awkwardPieces } from "../support/upstreams/events.ts";
import { fetchRequestHandler } from "../support/bedrock-client.ts";
import { EventStreamReader, type EventStreamMessage } from "../../src/transport/eventstream.ts";

const MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0";
const READ_FILE = { toolSpec: { name: "read_file", description: "Reads a file", inputSchema: { json: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } } } };
const ask = (text: string, extra: Partial<ConverseCommandInput> = {}): ConverseCommandInput => ({ modelId: MODEL_ID, messages: [{ role: "user", content: [{ text }] }], ...extra });

// An event stream reaches the SDK in 1, 3 and 7-byte pieces, so its frame parser must reassemble every message.
const requestHandler = fetchRequestHandler({ awkward: true });

describe("Bedrock imitation", () => {
  const up = startBedrockUpstream();
  const signed = (secretAccessKey: string = BEDROCK_DEFAULT_CREDENTIALS.secretAccessKey) =>
    new BedrockRuntimeClient({ region: up.region, endpoint: up.url, maxAttempts: 1, requestHandler, credentials: { accessKeyId: BEDROCK_DEFAULT_CREDENTIALS.accessKeyId, secretAccessKey } });
  const bearer = (token: string = BEDROCK_DEFAULT_KEY) =>
    new BedrockRuntimeClient({ region: up.region, endpoint: up.url, maxAttempts: 1, requestHandler, token: { token }, authSchemePreference: ["httpBearerAuth"] });
  beforeEach(() => up.reset());
  afterAll(() => up.stop());

  test("SigV4: a valid Converse call is answered in shape, and the verification is recorded", async () => {
    const reply = await signed().send(new ConverseCommand(ask("hello there", { system: [{ text: "be brief" }] })));
    expect(reply.output?.message).toEqual({ role: "assistant", content: [{ text: "echo: hello there" }] });
    expect(reply.stopReason).toBe("end_turn");
    const usage = reply.usage!;
    expect(usage.outputTokens).toBe(5);
    expect(usage.totalTokens).toBe(usage.inputTokens! + usage.outputTokens!);
    expect(usage.cacheReadInputTokens).toBeUndefined();
    expect(reply.metrics?.latencyMs).toBeGreaterThanOrEqual(1);
    const [recorded] = up.requests;
    expect(recorded).toMatchObject({ method: "POST", path: `/model/${encodeURIComponent(MODEL_ID)}/converse`, valid: true, status: 200 });
    expect(recorded!.verification).toEqual({ ok: true, accessKeyId: BEDROCK_DEFAULT_CREDENTIALS.accessKeyId });
    expect(recorded!.headers.authorization).toStartWith("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/");
  });

  test("bearer API key: accepted without a signature; a wrong key is UnrecognizedClientException", async () => {
    const reply = await bearer().send(new ConverseCommand(ask("with a key")));
    expect(reply.output?.message?.content?.[0]?.text).toBe("echo: with a key");
    expect(up.requests[0]!.headers.authorization).toBe(`Bearer ${BEDROCK_DEFAULT_KEY}`);
    const call = bearer("ABSKwrong").send(new ConverseCommand(ask("with a wrong key")));
    await expect(call).rejects.toMatchObject({ name: "UnrecognizedClientException", $metadata: { httpStatusCode: 403 }, message: "The security token included in the request is invalid." });
  });

  test("a wrong secret is refused with 403 InvalidSignatureException; the reason is recorded; no script is consumed", async () => {
    up.script({ text: "kept for the good request" });
    const error = await signed("wrong secret")
      .send(new ConverseCommand(ask("hi")))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BedrockRuntimeServiceException);
    expect(error).toMatchObject({ name: "InvalidSignatureException", $metadata: { httpStatusCode: 403 } });
    expect((error as Error).message).toStartWith("The request signature we calculated does not match");
    const [refused] = up.invalid();
    expect(refused!.verification?.ok).toBe(false);
    expect(refused!.verification?.reason).toStartWith("signature does not match");
    const reply = await signed().send(new ConverseCommand(ask("hi")));
    expect(reply.output?.message?.content?.[0]?.text).toBe("kept for the good request");
  });

  test("an unknown access key id is UnrecognizedClientException; another region's scope is InvalidSignatureException", async () => {
    const stranger = new BedrockRuntimeClient({ region: up.region, endpoint: up.url, maxAttempts: 1, requestHandler, credentials: { accessKeyId: "AKIDUNKNOWN", secretAccessKey: "x" } });
    await expect(stranger.send(new ConverseCommand(ask("hi")))).rejects.toMatchObject({ name: "UnrecognizedClientException" });
    const elsewhere = new BedrockRuntimeClient({ region: "eu-west-3", endpoint: up.url, maxAttempts: 1, requestHandler, credentials: BEDROCK_DEFAULT_CREDENTIALS });
    await expect(elsewhere.send(new ConverseCommand(ask("hi")))).rejects.toMatchObject({ name: "InvalidSignatureException" });
    expect(up.requests.map((r) => r.verification?.reason)).toEqual(["unknown access key id AKIDUNKNOWN", `credential scope names region "eu-west-3", expected "${up.region}"`]);
  });

  test("an invalid body is recorded and answered with the SDK's typed ValidationException, in AWS's wording", async () => {
    const call = signed().send(new ConverseCommand({ modelId: MODEL_ID, messages: [{ role: "user", content: [{ text: "a" }] }], inferenceConfig: { temperature: 3 } }));
    const error = await call.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationException);
    expect((error as Error).message).toBe("1 validation error detected: Value at 'inferenceConfig.temperature' failed to satisfy constraint: Member must have value less than or equal to 1");
    const assistantFirst = signed().send(new ConverseCommand({ modelId: MODEL_ID, messages: [{ role: "assistant", content: [{ text: "a" }] }] }));
    await expect(assistantFirst).rejects.toThrow("A conversation must start with a user message.");
    const [first, second] = up.invalid();
    expect(first).toMatchObject({ valid: false, status: 400, problem: (error as Error).message });
    expect(second!.verification?.ok).toBe(true);
    expect(second!.body).toEqual({ messages: [{ role: "assistant", content: [{ text: "a" }] }] });
  });

  test("a scripted tool call comes back as a toolUse block with stopReason tool_use; its result round-trips", async () => {
    up.script({ toolCall: true, toolArguments: { path: "a.txt" } });
    const toolConfig = { tools: [READ_FILE] };
    const reply = await signed().send(new ConverseCommand(ask("read it", { toolConfig })));
    expect(reply.stopReason).toBe("tool_use");
    const toolUse = reply.output?.message?.content?.[0]?.toolUse;
    expect(toolUse).toMatchObject({ name: "read_file", input: { path: "a.txt" } });
    expect(toolUse!.toolUseId).toMatch(/^tooluse_imit\d+$/);
    const next = await signed().send(
      new ConverseCommand({
        modelId: MODEL_ID,
        toolConfig,
        messages: [
          { role: "user", content: [{ text: "read it" }] },
          { role: "assistant", content: [{ toolUse: toolUse! }] },
          { role: "user", content: [{ toolResult: { toolUseId: toolUse!.toolUseId!, content: [{ text: "file body" }] } }] },
        ],
      }),
    );
    expect(next.output?.message?.content?.[0]?.text).toBe("tool result: file body");
  });

  test("stream through the SDK: events in order, text deltas joined, metadata with cache usage", async () => {
    up.script({ detailedUsage: true });
    const reply = await signed().send(new ConverseStreamCommand(ask("stream me please")));
    const kinds: string[] = [];
    let text = "";
    let metadata: { usage?: { cacheReadInputTokens?: number; cacheWriteInputTokens?: number }; metrics?: { latencyMs?: number } } | undefined;
    for await (const event of reply.stream!) {
      const [kind] = Object.keys(event).filter((k) => (event as unknown as Record<string, unknown>)[k] !== undefined);
      kinds.push(kind!);
      text += event.contentBlockDelta?.delta?.text ?? "";
      if (event.messageStop) expect(event.messageStop.stopReason).toBe("end_turn");
      if (event.metadata) metadata = event.metadata;
    }
    expect(kinds[0]).toBe("messageStart");
    expect(kinds.slice(-3)).toEqual(["contentBlockStop", "messageStop", "metadata"]);
    expect(kinds.filter((k) => k === "contentBlockDelta").length).toBeGreaterThan(1);
    expect(text).toBe("echo: stream me please");
    expect(metadata?.usage).toMatchObject({ cacheReadInputTokens: SCRIPTED_USAGE.cacheReadInputTokens, cacheWriteInputTokens: SCRIPTED_USAGE.cacheCreationInputTokens });
    expect(metadata?.metrics?.latencyMs).toBeGreaterThanOrEqual(1);
    expect(up.requests[0]!.path).toBe(`/model/${encodeURIComponent(MODEL_ID)}/converse-stream`);
  });

  test("stream tool call over raw bytes in 1/3/7-byte pieces: contentBlockStart names the tool, deltas are partial JSON", async () => {
    up.script({ toolCall: true });
    const response = await fetch(`${up.url}/model/${encodeURIComponent(MODEL_ID)}/converse-stream`, {
      method: "POST",
      headers: { authorization: `Bearer ${BEDROCK_DEFAULT_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: [{ text: "go" }] }], toolConfig: { tools: [READ_FILE] } }),
    });
    expect(response.headers.get("content-type")).toBe("application/vnd.amazon.eventstream");
    const reader = new EventStreamReader();
    const messages: EventStreamMessage[] = [];
    for (const piece of awkwardPieces(new Uint8Array(await response.arrayBuffer()))) reader.push(piece, (m) => messages.push(m));
    const events = messages.map((m) => ({ headers: m.headers, payload: JSON.parse(new TextDecoder().decode(m.payload)) as Record<string, any> }));
    expect(events.every((e) => e.headers[":message-type"] === "event" && e.headers[":content-type"] === "application/json")).toBe(true);
    expect(events[1]).toMatchObject({ headers: { ":event-type": "contentBlockStart" }, payload: { contentBlockIndex: 0, start: { toolUse: { name: "read_file" } } } });
    const input = events.filter((e) => e.headers[":event-type"] === "contentBlockDelta").map((e) => e.payload.delta.toolUse.input as string);
    expect(JSON.parse(input.join(""))).toEqual({ path: "README.md" });
    expect(events.find((e) => e.headers[":event-type"] === "messageStop")!.payload).toEqual({ stopReason: "tool_use" });
  });

  test("scripted errors: non-stream as status + x-amzn-ErrorType, in a stream as an exception frame the SDK raises", async () => {
    up.script({ error: { status: 429, retryAfter: 2 } });
    await expect(signed().send(new ConverseCommand(ask("hi")))).rejects.toMatchObject({ name: "ThrottlingException", $metadata: { httpStatusCode: 429 } });
    up.script({ error: { status: 503, message: "busy now" } });
    // An exception as the first frame may surface from send() itself (the SDK peeks at it) or while reading.
    const read = async () => {
      const reply = await signed().send(new ConverseStreamCommand(ask("hi")));
      for await (const _ of reply.stream!) void _;
    };
    await expect(read()).rejects.toMatchObject({ name: "ServiceUnavailableException", message: "busy now" });
  });

  test("an unknown path is 404; a body that is not JSON is a SerializationException", async () => {
    const post = (path: string, body: string) =>
      fetch(`${up.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${BEDROCK_DEFAULT_KEY}`, "content-type": "application/json" }, body });
    expect((await post("/model/x/invoke-with-magic", "{}")).status).toBe(404);
    const bad = await post(`/model/${encodeURIComponent(MODEL_ID)}/converse`, "{not json");
    expect(bad.status).toBe(400);
    expect(bad.headers.get("x-amzn-errortype")).toBe("SerializationException");
    expect(up.invalid().length).toBe(2);
  });
});
