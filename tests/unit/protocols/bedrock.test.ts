// The Bedrock Converse adapter: golden fixtures from AWS's API reference and user guide both ways, streams
// as AWS event-stream frames (written by the AWS SDK's own codec, fed in awkward chunks), the official
// BedrockRuntimeClient reading what the encoders write (responses, streams, typed errors) and writing
// what the decoder reads, the error table and failure classes, 400s in AWS's wording, and the warnings
// for what cannot cross protocols.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  AccessDeniedException,
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  ModelStreamErrorException,
  ResourceNotFoundException,
  ServiceUnavailableException,
  ThrottlingException,
  ValidationException,
  type BedrockRuntimeClientConfig,
  type ConverseStreamOutput,
} from "@aws-sdk/client-bedrock-runtime";
import { EventStreamCodec } from "@smithy/core/event-streams";
import { fromUtf8, toUtf8 } from "@smithy/core/serde";
import { irError, type IrError, type IrRequest, type IrResponse, type IrStreamPart } from "../../../src/ir/index.ts";
import { bedrock } from "../../../src/protocols/bedrock/index.ts";
import { decodeError } from "../../../src/protocols/bedrock/errors.ts";
import { decodeResponse, encodeResponse } from "../../../src/protocols/bedrock/response.ts";
import { createStreamParser, createStreamWriter, eventFrame } from "../../../src/protocols/bedrock/stream.ts";
import { encodeEventStreamMessage } from "../../../src/transport/eventstream.ts";
import { pieces, readAll, streamOf } from "../../support/streams.ts";
import { parserTransform } from "../../../src/transport/push-parser.ts";

// ---- helpers -----------------------------------------------------------------------------------------

const FIXTURES = join(import.meta.dir, "../../fixtures/protocols/bedrock");
const fixture = <T>(name: string): T => JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), "utf8")) as T;

interface RequestFixture {
  source: string;
  modelId: string;
  path: string;
  wire: Record<string, unknown>;
  ir: IrRequest;
  warnings: string[];
  encoded?: Record<string, unknown>;
}
interface ResponseFixture {
  source: string;
  wire: unknown;
  ir: IrResponse;
  encoded?: unknown;
}
type WireEvent = { type: string; payload: unknown };
interface StreamFixture {
  source: string;
  events: WireEvent[];
  ir: IrStreamPart[];
  encoded: WireEvent[];
  toolArguments?: string;
}
interface ErrorCase {
  name: string;
  status: number;
  headers: Record<string, string>;
  body: unknown;
  ir: IrError;
}

const NOW_MS = 1_700_000_000_000;
const clock = () => NOW_MS;
const newId = () => "bedrock-test-id";
const utf8 = new TextEncoder();
const smithy = new EventStreamCodec(toUtf8, fromUtf8);

const concat = (parts: readonly Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};

/** Events as Bedrock frames, written by the AWS SDK's codec (not this repository's encoder). */
const framesOf = (events: readonly WireEvent[]) =>
  concat(
    events.map(({ type, payload }) =>
      smithy.encode({
        headers: { ":event-type": { type: "string", value: type }, ":content-type": { type: "string", value: "application/json" }, ":message-type": { type: "string", value: "event" } },
        body: utf8.encode(JSON.stringify(payload)),
      }),
    ),
  );
const exceptionOf = (type: string, payload: unknown) =>
  smithy.encode({
    headers: { ":exception-type": { type: "string", value: type }, ":content-type": { type: "string", value: "application/json" }, ":message-type": { type: "string", value: "exception" } },
    body: utf8.encode(JSON.stringify(payload)),
  });

const decodeChunks = (chunks: readonly Uint8Array[]) => readAll(streamOf(chunks).pipeThrough(parserTransform(createStreamParser(clock, newId))));
const decodeEvents = (events: readonly WireEvent[], size?: number) => decodeChunks(size ? pieces(framesOf(events), size) : [framesOf(events)]);

/** Encoder output, read back into events by the AWS SDK's codec (one frame per emitted chunk). */
function encodeParts(parts: readonly IrStreamPart[], warnings: string[] = []): WireEvent[] {
  const frames: Uint8Array[] = [];
  const writer = createStreamWriter(BASE_REQUEST, (w) => warnings.push(w), (bytes) => frames.push(bytes), clock);
  parts.forEach((part) => writer.accept(part));
  writer.end();
  return frames.map((frame) => {
    const message = smithy.decode(frame);
    const kind = message.headers[":message-type"]?.value;
    const type = String(message.headers[kind === "exception" ? ":exception-type" : ":event-type"]?.value);
    return { type: kind === "exception" ? `exception:${type}` : type, payload: JSON.parse(toUtf8(message.body)) };
  });
}

const BASE_REQUEST: IrRequest = { model: "anthropic.claude-3-haiku-20240307-v1:0", system: [], messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], tools: [], sampling: {}, stream: true };
const CLAUDE = "us.anthropic.claude-sonnet-4-20250514-v1:0";
const NOVA = "amazon.nova-pro-v1:0";

const body = (extra: Record<string, unknown> = {}) => ({ messages: [{ role: "user", content: [{ text: "Hi" }] }], ...extra });
function decodeOk(wire: unknown, stream = false) {
  const decoded = bedrock.decodeRequest(wire, { pathModel: CLAUDE, pathStream: stream });
  if (!decoded.ok) throw new Error(`expected a decode, got ${decoded.error.message}`);
  return decoded;
}
function decodeFail(wire: unknown, pathModel = CLAUDE): IrError {
  const decoded = bedrock.decodeRequest(wire, { pathModel, pathStream: false });
  if (decoded.ok) throw new Error("expected a 400");
  return decoded.error;
}
const ir = (extra: Partial<IrRequest> = {}): IrRequest => ({ ...BASE_REQUEST, stream: false, ...extra });
const encodeFor = (model: string, request: IrRequest) => bedrock.encodeRequest(request, model);
const encodedBody = (request: IrRequest, model = CLAUDE) => encodeFor(model, request).body as Record<string, unknown>;

/** What the SDK's request handler saw, and the client that sends through it. */
interface Sent {
  path: string;
  headers: Record<string, string>;
  body: unknown;
}
function sdk(answer: (sent: Sent) => Response, config: Partial<BedrockRuntimeClientConfig> = {}) {
  const handle = async (request: { path: string; headers: Record<string, string>; body?: string | Uint8Array }) => {
    const text = typeof request.body === "string" ? request.body : new TextDecoder().decode(request.body ?? new Uint8Array());
    const response = answer({ path: request.path, headers: request.headers, body: text === "" ? undefined : JSON.parse(text) });
    return { response: { statusCode: response.status, headers: Object.fromEntries(response.headers), body: response.body ?? streamOf<Uint8Array>([]) } };
  };
  return new BedrockRuntimeClient({
    region: "us-east-1",
    endpoint: "http://gateway.test",
    credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" },
    maxAttempts: 1,
    requestHandler: { handle } as unknown as BedrockRuntimeClientConfig["requestHandler"],
    ...config,
  });
}
const converseJson = (response: IrResponse) => Response.json(bedrock.encodeResponse(response, () => {}));
const rejection = (promise: Promise<unknown>): Promise<unknown> => promise.then(() => "resolved", (error: unknown) => error);

async function sdkStream(parts: readonly IrStreamPart[]): Promise<{ events: ConverseStreamOutput[]; error?: unknown }> {
  const client = sdk(() => new Response(streamOf(parts).pipeThrough(bedrock.createStreamEncoder(BASE_REQUEST, () => {})), { headers: bedrock.streamHeaders }));
  const output = await client.send(new ConverseStreamCommand({ modelId: CLAUDE, messages: [{ role: "user", content: [{ text: "Hi" }] }] }));
  const events: ConverseStreamOutput[] = [];
  try {
    for await (const event of output.stream ?? []) events.push(event);
  } catch (error) {
    return { events, error };
  }
  return { events };
}

// ---- fixtures: requests ------------------------------------------------------------------------------

describe("request fixtures, both directions", () => {
  for (const name of ["plain-request", "tool-use-request", "media-request"]) {
    const f = fixture<RequestFixture>(name);
    test(`${name}: decode -> IR (model from the path)`, () => {
      const decoded = bedrock.decodeRequest(f.wire, { pathModel: f.modelId, pathStream: false });
      if (!decoded.ok) throw new Error(decoded.error.message);
      expect(decoded.value).toEqual(f.ir);
      expect(decoded.warnings).toEqual(f.warnings);
    });
    test(`${name}: IR -> encode equals the ${f.encoded ? "stated normalised" : "wire"} form, at the model's path`, () => {
      const encoded = bedrock.encodeRequest(f.ir, f.modelId);
      expect(encoded.path).toBe(f.path);
      expect(encoded.body).toEqual(f.encoded ?? f.wire);
      expect(encoded.warnings).toEqual([]);
    });
  }

  test("the official SDK's own request (blobs as base64, path-encoded model) decodes to the fixture's IR", async () => {
    const f = fixture<RequestFixture>("media-request");
    let sent: Sent | undefined;
    const client = sdk((s) => {
      sent = s;
      return converseJson({ id: "x", model: "", created: 0, content: [], finishReason: { unified: "stop", raw: "end_turn" }, usage: { inputNoCache: 0, inputCacheRead: 0, inputCacheWrite: 0, output: 0, outputReasoning: 0 } });
    });
    const bytes = (b64: string) => Uint8Array.from(Buffer.from(b64, "base64"));
    await client.send(
      new ConverseCommand({
        modelId: f.modelId,
        messages: [
          {
            role: "user",
            content: [
              { text: "Describe the image and summarize the document." },
              { image: { format: "png", source: { bytes: bytes("iVBORw0KGgo=") } } },
              { document: { format: "pdf", name: "Quarterly report", source: { bytes: bytes("JVBERi0xLjQK") } } },
            ],
          },
        ],
      }),
    );
    expect(sent?.path).toBe(f.path);
    expect(sent?.path).toBe(bedrock.upstreamPath(f.modelId, false));
    expect(sent?.body).toEqual(f.wire);
    const decoded = bedrock.decodeRequest(sent?.body, { pathModel: f.modelId, pathStream: false });
    expect(decoded.ok && decoded.value).toEqual(f.ir);
  });
});

// ---- fixtures: responses -----------------------------------------------------------------------------

describe("response fixtures, both directions", () => {
  for (const name of ["plain-response", "tool-use-response", "thinking-response"]) {
    const f = fixture<ResponseFixture>(name);
    test(`${name}: decode -> IR`, () => {
      const decoded = decodeResponse(f.wire, clock, newId);
      if (!decoded.ok) throw new Error(decoded.error.message);
      expect(decoded.value).toEqual(f.ir);
      expect(decoded.warnings).toEqual([]);
    });
    test(`${name}: IR -> encode equals the ${f.encoded ? "stated normalised" : "wire"} form`, () => {
      const warnings: string[] = [];
      expect(encodeResponse(f.ir, (w) => warnings.push(w))).toEqual(f.encoded ?? f.wire);
      expect(warnings).toEqual([]);
    });
  }

  test("the official SDK reads the encoded response: content, stopReason, usage with cache counts", async () => {
    const f = fixture<ResponseFixture>("thinking-response");
    const out = await sdk(() => converseJson(f.ir)).send(new ConverseCommand({ modelId: CLAUDE, messages: [{ role: "user", content: [{ text: "27 * 453?" }] }] }));
    expect(out.stopReason).toBe("max_tokens");
    expect(out.usage).toEqual({ inputTokens: 4, outputTokens: 120, totalTokens: 1724, cacheReadInputTokens: 1500, cacheWriteInputTokens: 100 });
    const content = out.output?.message?.content ?? [];
    expect(content[0]?.reasoningContent?.reasoningText).toEqual({ text: "The user wants 27 * 453. 27 * 453 = 12231.", signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" });
    // The blob arrives as bytes: the base64 was decoded by the SDK.
    expect(new TextDecoder().decode(content[1]?.reasoningContent?.redactedContent)).toBe("Encrypted reasoning");
    expect(content[2]?.text).toBe("27 * 453 = 12,231");
  });

  test("adapter decodeResponse stamps the wall clock and makes up an id (Converse names neither)", () => {
    const f = fixture<ResponseFixture>("plain-response");
    const before = Math.floor(Date.now() / 1000);
    const decoded = bedrock.decodeResponse(f.wire);
    if (!decoded.ok) throw new Error(decoded.error.message);
    expect(decoded.value.created).toBeGreaterThanOrEqual(before);
    expect(decoded.value.id).toMatch(/^bedrock-[0-9a-f-]{36}$/);
    expect(decoded.value.model).toBe("");
  });

  test("blocks the IR does not carry are dropped with a warning; a malformed body is the upstream's 502", () => {
    const decoded = decodeResponse({ output: { message: { role: "assistant", content: [{ citationsContent: { content: [] } }, { text: "ok" }] } }, stopReason: "end_turn" }, clock, newId);
    expect(decoded.ok && decoded.value.content).toEqual([{ type: "text", text: "ok" }]);
    expect(decoded.ok && decoded.warnings).toEqual(["citationsContent block dropped at output.message.content[0]: this content block type is not modelled by the gateway's IR"]);
    const bad = decodeResponse({ output: { message: { content: [{ toolUse: { name: "f" } }] } } }, clock, newId);
    expect(bad).toEqual({ ok: false, error: { kind: "api_error", status: 502, failure: "transient", message: "upstream returned a malformed Converse response: output.message.content[0].toolUse.toolUseId: Member must not be null" } });
  });

  test("stopReason table: guardrail and content filters, malformed output, context window", () => {
    const finish = (stopReason: string) => {
      const decoded = decodeResponse({ output: { message: { content: [] } }, stopReason }, clock, newId);
      return decoded.ok ? decoded.value.finishReason.unified : undefined;
    };
    expect(["end_turn", "stop_sequence", "max_tokens", "model_context_window_exceeded", "tool_use", "guardrail_intervened", "content_filtered", "malformed_tool_use", "something_new"].map(finish)).toEqual([
      "stop",
      "stop",
      "length",
      "length",
      "tool_calls",
      "content_filter",
      "content_filter",
      "error",
      "other",
    ]);
  });

  test("finish reasons from other protocols map to Bedrock's words; one without a twin, or a stop sequence it cannot name, is warned", () => {
    const warnings: string[] = [];
    const stopOf = (finishReason: IrResponse["finishReason"]) => (encodeResponse({ ...fixture<ResponseFixture>("plain-response").ir, finishReason }, (w) => warnings.push(w)) as { stopReason: string }).stopReason;
    expect(stopOf({ unified: "stop", raw: "stop" })).toBe("end_turn");
    expect(stopOf({ unified: "stop", raw: "stop_sequence", stopSequence: "END" })).toBe("stop_sequence");
    expect(stopOf({ unified: "length", raw: "length" })).toBe("max_tokens");
    expect(stopOf({ unified: "content_filter", raw: "refusal" })).toBe("content_filtered");
    expect(stopOf({ unified: "pause", raw: "pause_turn" })).toBe("end_turn");
    expect(warnings).toEqual(['stop sequence "END" not reported: Bedrock\'s stopReason does not say which one matched', "finish reason pause_turn has no Bedrock stopReason; sent end_turn"]);
  });

  test("usageFromResponse reads TokenUsage for metering, cache reads and writes apart", () => {
    expect(bedrock.usageFromResponse(fixture<ResponseFixture>("thinking-response").wire)).toEqual({ inputNoCache: 4, inputCacheRead: 1500, inputCacheWrite: 100, output: 120 });
    expect(bedrock.usageFromResponse({ output: {} })).toBeUndefined();
    expect(bedrock.usageFromResponse(null)).toBeUndefined();
  });
});

// ---- fixtures: streams -------------------------------------------------------------------------------

describe("stream fixtures, decoder", () => {
  for (const name of ["stream-text", "stream-tool-use"]) {
    const f = fixture<StreamFixture>(name);
    test(`${name}: the SDK-written frames decode to the IR parts`, async () => {
      expect(await decodeEvents(f.events)).toEqual(f.ir);
    });
    for (const size of [1, 3, 7, 64]) {
      test(`${name}: the same IR when the bytes arrive ${size} at a time`, async () => {
        expect(await decodeEvents(f.events, size)).toEqual(f.ir);
      });
    }
  }

  test("stream-text: the same IR split in two at every byte boundary", async () => {
    const f = fixture<StreamFixture>("stream-text");
    const bytes = framesOf(f.events);
    for (let cut = 1; cut < bytes.length; cut += 1) {
      expect(await decodeChunks([bytes.slice(0, cut), bytes.slice(cut)])).toEqual(f.ir);
    }
  });

  test("stream-tool-use: the toolUse input fragments join into the tool's arguments", async () => {
    const f = fixture<StreamFixture>("stream-tool-use");
    const parts = await decodeEvents(f.events, 7);
    const joined = parts.flatMap((p) => (p.type === "tool-call-delta" ? [p.argumentsDelta] : [])).join("");
    expect(JSON.parse(joined)).toEqual(JSON.parse(f.toolArguments ?? ""));
  });
});

describe("stream fixtures, encoder", () => {
  for (const name of ["stream-text", "stream-tool-use"]) {
    const f = fixture<StreamFixture>(name);
    test(`${name}: the IR parts encode to the fixture's frames (stated normalised form)`, () => {
      const warnings: string[] = [];
      expect(encodeParts(f.ir, warnings)).toEqual(f.encoded);
      expect(warnings).toEqual([]);
    });
  }

  test("each frame is byte for byte what the SDK's codec writes for the same event", () => {
    const payload = { contentBlockIndex: 0, delta: { text: "Hi" } };
    const sdkFrame = smithy.encode({
      headers: { ":event-type": { type: "string", value: "contentBlockDelta" }, ":content-type": { type: "string", value: "application/json" }, ":message-type": { type: "string", value: "event" } },
      body: utf8.encode(JSON.stringify(payload)),
    });
    expect(eventFrame("contentBlockDelta", payload)).toEqual(sdkFrame);
  });

  test("the official SDK reads the encoded tool-use stream as its own events", async () => {
    const f = fixture<StreamFixture>("stream-tool-use");
    const { events, error } = await sdkStream(f.ir);
    expect(error).toBeUndefined();
    expect(events[0]).toEqual({ messageStart: { role: "assistant" } });
    expect(events[3]).toEqual({ contentBlockStart: { contentBlockIndex: 1, start: { toolUse: { toolUseId: "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", name: "top_song" } } } });
    const input = events.flatMap((e) => (e.contentBlockDelta?.delta?.toolUse ? [e.contentBlockDelta.delta.toolUse.input] : [])).join("");
    expect(JSON.parse(input)).toEqual({ sign: "WZPZ" });
    expect(events.at(-2)).toEqual({ messageStop: { stopReason: "tool_use" } });
    expect(events.at(-1)?.metadata?.usage).toEqual({ inputTokens: 410, outputTokens: 61, totalTokens: 1471, cacheReadInputTokens: 1000 });
  });

  test("streamHeaders name the event-stream media type", () => {
    expect(bedrock.streamHeaders).toEqual({ "content-type": "application/vnd.amazon.eventstream" });
  });
});

// ---- stream decoder: beyond the fixtures ---------------------------------------------------------------

describe("stream decoder", () => {
  const start: WireEvent = { type: "messageStart", payload: { role: "assistant" } };
  const stop: WireEvent = { type: "messageStop", payload: { stopReason: "end_turn" } };

  test("reasoning: text deltas, then the signature; redacted reasoning opens with its data", async () => {
    const parts = await decodeEvents(
      [
        start,
        { type: "contentBlockDelta", payload: { contentBlockIndex: 0, delta: { reasoningContent: { text: "Let me think." } } } },
        { type: "contentBlockDelta", payload: { contentBlockIndex: 0, delta: { reasoningContent: { signature: "sig-1" } } } },
        { type: "contentBlockStop", payload: { contentBlockIndex: 0 } },
        { type: "contentBlockDelta", payload: { contentBlockIndex: 1, delta: { reasoningContent: { redactedContent: "b3BhcXVl" } } } },
        { type: "contentBlockStop", payload: { contentBlockIndex: 1 } },
        stop,
      ],
      3,
    );
    expect(parts.slice(1)).toEqual([
      { type: "reasoning-start", id: "block-0" },
      { type: "reasoning-delta", id: "block-0", delta: "Let me think." },
      { type: "reasoning-signature", id: "block-0", signature: "sig-1" },
      { type: "reasoning-end", id: "block-0" },
      { type: "reasoning-start", id: "block-1", redactedData: "b3BhcXVl" },
      { type: "reasoning-end", id: "block-1" },
      { type: "finish", finishReason: { unified: "stop", raw: "end_turn" } },
    ]);
  });

  test("an exception frame ends the parts with an IR error classed as its HTTP twin", async () => {
    const bytes = concat([framesOf([start, { type: "contentBlockDelta", payload: { contentBlockIndex: 0, delta: { text: "Hi" } } }]), exceptionOf("throttlingException", { message: "Too many requests, please wait before trying again." }), framesOf([stop])]);
    const parts = await decodeChunks(pieces(bytes, 7));
    expect(parts.at(-1)).toEqual({ type: "error", error: { kind: "rate_limit", status: 429, message: "Too many requests, please wait before trying again.", failure: "rate_limit", code: "ThrottlingException" } });
    expect(parts.filter((p) => p.type === "finish")).toEqual([]);
    const model = await decodeChunks([exceptionOf("modelStreamErrorException", { message: "Model stream failed", originalStatusCode: 500 })]);
    expect(model).toEqual([{ type: "error", error: { kind: "api_error", status: 424, message: "Model stream failed", failure: "transient", code: "ModelStreamErrorException" } }]);
  });

  test("a stream cut before messageStop ends with a transient error, never silently", async () => {
    const parts = await decodeEvents([start, { type: "contentBlockDelta", payload: { contentBlockIndex: 0, delta: { text: "Hi" } } }]);
    expect(parts.at(-1)).toEqual({ type: "error", error: { kind: "api_error", status: 502, message: "the upstream stream ended before messageStop", failure: "transient" } });
  });

  test("a stream cut inside a frame, or a corrupt frame, ends with an error naming the framing fault", async () => {
    const bytes = framesOf([start, stop]);
    const cut = await decodeChunks([bytes.slice(0, bytes.length - 5)]);
    expect(cut.at(-1)).toMatchObject({ type: "error", error: { status: 502, failure: "transient", message: expect.stringMatching(/^upstream sent a malformed event stream: event stream ended inside a message/) } });
    const corrupt = bytes.slice();
    corrupt[corrupt.length - 1] = (corrupt[corrupt.length - 1] ?? 0) ^ 0xff;
    const bad = await decodeChunks(pieces(corrupt, 3));
    expect(bad.at(-1)).toMatchObject({ type: "error", error: { message: expect.stringMatching(/message CRC mismatch/) } });
    expect(bad.filter((p) => p.type === "error")).toHaveLength(1);
  });

  test("a messageStop without metadata still finishes, at the end of the stream; metadata before it is usage", async () => {
    expect((await decodeEvents([start, stop])).at(-1)).toEqual({ type: "finish", finishReason: { unified: "stop", raw: "end_turn" } });
    const early = await decodeEvents([start, { type: "metadata", payload: { usage: { inputTokens: 3, outputTokens: 1, totalTokens: 4 } } }, stop]);
    expect(early.slice(1)).toEqual([
      { type: "usage", usage: { inputNoCache: 3, output: 1 } },
      { type: "finish", finishReason: { unified: "stop", raw: "end_turn" } },
    ]);
  });

  test("unknown events, unknown members and image / citation deltas are skipped; block ids follow the wire index", async () => {
    const parts = await decodeEvents([
      start,
      { type: "someFutureEvent", payload: { x: 1 } },
      { type: "contentBlockStart", payload: { contentBlockIndex: 0, start: { image: { format: "png" } } } },
      { type: "contentBlockDelta", payload: { contentBlockIndex: 0, delta: { image: { source: { bytes: "AAAA" } } } } },
      { type: "contentBlockStop", payload: { contentBlockIndex: 0 } },
      { type: "contentBlockDelta", payload: { contentBlockIndex: 1, delta: { text: "Found" }, p: "abcdefgh" } },
      { type: "contentBlockDelta", payload: { contentBlockIndex: 1, delta: { citation: { title: "t" } } } },
      { type: "contentBlockStop", payload: { contentBlockIndex: 1 } },
      stop,
    ]);
    expect(parts.slice(1)).toEqual([
      { type: "text-start", id: "block-1" },
      { type: "text-delta", id: "block-1", delta: "Found" },
      { type: "text-end", id: "block-1" },
      { type: "finish", finishReason: { unified: "stop", raw: "end_turn" } },
    ]);
  });

  test("a payload that is not JSON, or a malformed event, ends the stream with an error", async () => {
    const notJson = encodeEventStreamMessage({ ":event-type": "contentBlockDelta", ":message-type": "event" }, utf8.encode("{not json"));
    expect((await decodeChunks([framesOf([start]), notJson])).at(-1)).toMatchObject({ type: "error", error: { message: "upstream sent a malformed contentBlockDelta event" } });
    expect((await decodeEvents([start, { type: "contentBlockStop", payload: { contentBlockIndex: "0" } }])).at(-1)).toMatchObject({ type: "error", error: { message: "upstream sent a malformed contentBlockStop event" } });
  });
});

// ---- stream encoder: beyond the fixtures ---------------------------------------------------------------

describe("stream encoder", () => {
  const head: IrStreamPart = { type: "start", id: "chatcmpl-1", model: "gpt-x", created: 1 };
  const finish: IrStreamPart = { type: "finish", finishReason: { unified: "tool_calls", raw: "tool_calls" } };

  test("interleaved IR tool calls come out as sequential blocks with indices in opening order", () => {
    const events = encodeParts([
      head,
      { type: "tool-call-start", id: "t0", toolCallId: "call_a", name: "get_weather" },
      { type: "tool-call-delta", id: "t0", argumentsDelta: '{"city":' },
      { type: "tool-call-start", id: "t1", toolCallId: "call_b", name: "get_time" },
      { type: "tool-call-delta", id: "t1", argumentsDelta: '{"zone":"UTC"}' },
      { type: "tool-call-delta", id: "t0", argumentsDelta: '"Paris"}' },
      { type: "tool-call-end", id: "t1" },
      { type: "tool-call-end", id: "t0" },
      finish,
    ]);
    expect(events.map((e) => [e.type, (e.payload as { contentBlockIndex?: number }).contentBlockIndex])).toEqual([
      ["messageStart", undefined],
      ["contentBlockStart", 0],
      ["contentBlockDelta", 0],
      ["contentBlockDelta", 0],
      ["contentBlockStop", 0],
      ["contentBlockStart", 1],
      ["contentBlockDelta", 1],
      ["contentBlockStop", 1],
      ["messageStop", undefined],
      ["metadata", undefined],
    ]);
    expect(events[5]?.payload).toEqual({ contentBlockIndex: 1, start: { toolUse: { toolUseId: "call_b", name: "get_time" } } });
    expect(events.filter((e) => e.type === "contentBlockDelta").map((e) => (e.payload as { delta: { toolUse: { input: string } } }).delta.toolUse.input)).toEqual(['{"city":', '"Paris"}', '{"zone":"UTC"}']);
    expect(events[8]?.payload).toEqual({ stopReason: "tool_use" });
  });

  test("reasoning: text and signature deltas; redacted reasoning as redactedContent", () => {
    const events = encodeParts([
      head,
      { type: "reasoning-start", id: "r" },
      { type: "reasoning-delta", id: "r", delta: "Hmm." },
      { type: "reasoning-signature", id: "r", signature: "sig" },
      { type: "reasoning-end", id: "r" },
      { type: "reasoning-start", id: "z", redactedData: "b3BhcXVl" },
      { type: "reasoning-end", id: "z" },
      { type: "finish", finishReason: { unified: "stop" } },
    ]);
    expect(events.slice(1, 6).map((e) => e.payload)).toEqual([
      { contentBlockIndex: 0, delta: { reasoningContent: { text: "Hmm." } } },
      { contentBlockIndex: 0, delta: { reasoningContent: { signature: "sig" } } },
      { contentBlockIndex: 0 },
      { contentBlockIndex: 1, delta: { reasoningContent: { redactedContent: "b3BhcXVl" } } },
      { contentBlockIndex: 1 },
    ]);
  });

  test("usage known at the start and the end (an Anthropic upstream) is merged into metadata; latency is the stream's own", () => {
    let now = NOW_MS;
    const frames: Uint8Array[] = [];
    const writer = createStreamWriter(BASE_REQUEST, () => {}, (bytes) => frames.push(bytes), () => now);
    writer.accept(head);
    writer.accept({ type: "usage", usage: { inputNoCache: 90, inputCacheRead: 10, inputCacheWrite: 5 } });
    writer.accept({ type: "usage", usage: { output: 7, outputReasoning: 3 } });
    now += 250;
    writer.accept({ type: "finish", finishReason: { unified: "length", raw: "length" } });
    const last = smithy.decode(frames.at(-1) ?? new Uint8Array());
    expect(JSON.parse(toUtf8(last.body))).toEqual({ usage: { inputTokens: 90, outputTokens: 7, totalTokens: 112, cacheReadInputTokens: 10, cacheWriteInputTokens: 5 }, metrics: { latencyMs: 250 } });
  });

  test("an IR error part ends the stream with an exception frame; nothing follows it", () => {
    const events = encodeParts([head, { type: "text-start", id: "x" }, { type: "error", error: irError("rate_limit", "Too many requests", { retryAfterSecs: 3 }) }, { type: "text-delta", id: "x", delta: "late" }, finish]);
    expect(events.map((e) => e.type)).toEqual(["messageStart", "exception:throttlingException"]);
    expect(events[1]?.payload).toEqual({ message: "Too many requests" });
  });

  test("exception members per IR kind: the five ConverseStreamOutput exceptions", () => {
    const typeOf = (error: IrError) => encodeParts([head, { type: "error", error }]).at(-1)?.type;
    expect(typeOf(irError("rate_limit", "x"))).toBe("exception:throttlingException");
    expect(typeOf(irError("overloaded", "x"))).toBe("exception:serviceUnavailableException");
    expect(typeOf(irError("invalid_request", "x"))).toBe("exception:validationException");
    expect(typeOf(irError("api_error", "x"))).toBe("exception:internalServerException");
    expect(typeOf(irError("api_error", "x", { status: 502 }))).toBe("exception:modelStreamErrorException");
    expect(typeOf(irError("timeout", "x"))).toBe("exception:modelStreamErrorException");
  });

  test("an IR stream that ends with neither finish nor error ends with an exception frame", () => {
    const events = encodeParts([head, { type: "text-start", id: "x" }, { type: "text-delta", id: "x", delta: "cut" }]);
    expect(events.at(-1)).toEqual({ type: "exception:modelStreamErrorException", payload: { message: "the stream ended before the message was complete" } });
  });

  test("blocks left open at the finish are closed in order, with a warning", () => {
    const warnings: string[] = [];
    const events = encodeParts([head, { type: "text-start", id: "x" }, { type: "tool-call-start", id: "t", toolCallId: "c", name: "f" }, finish], warnings);
    expect(events.map((e) => e.type)).toEqual(["messageStart", "contentBlockStop", "contentBlockStart", "contentBlockStop", "messageStop", "metadata"]);
    expect(warnings).toEqual(["stream finished with content blocks still open; closed them"]);
  });

  test("the official SDK raises the in-stream exception as its typed error, after the events before it", async () => {
    const { events, error } = await sdkStream([head, { type: "text-start", id: "x" }, { type: "text-delta", id: "x", delta: "Hi" }, { type: "error", error: irError("overloaded", "Overloaded") }]);
    expect(events).toEqual([{ messageStart: { role: "assistant" } }, { contentBlockDelta: { contentBlockIndex: 0, delta: { text: "Hi" } } }]);
    expect(error).toBeInstanceOf(ServiceUnavailableException);
    expect((error as Error).message).toBe("Overloaded");
    const cut = await sdkStream([head, { type: "text-start", id: "x" }]);
    expect(cut.error).toBeInstanceOf(ModelStreamErrorException);
  });

  test("the encoder's bytes decode back to the same IR (round trip through both halves)", async () => {
    const f = fixture<StreamFixture>("stream-tool-use");
    const bytes = concat(await readAll(streamOf(f.ir).pipeThrough(bedrock.createStreamEncoder(BASE_REQUEST, () => {}))));
    expect(await decodeChunks(pieces(bytes, 7))).toEqual(f.ir);
  });
});

// ---- errors -------------------------------------------------------------------------------------------------

describe("errors", () => {
  const { cases } = fixture<{ source: string; cases: ErrorCase[] }>("errors");
  for (const c of cases) {
    test(`decode ${c.name}`, () => {
      expect(decodeError(c.status, JSON.stringify(c.body), new Headers(c.headers))).toEqual(c.ir);
    });
  }

  test("retry-after, a body that is not JSON, and an exception this table does not know", () => {
    expect(decodeError(429, '{"message":"slow"}', new Headers({ "x-amzn-errortype": "ThrottlingException", "retry-after": "7" }))).toMatchObject({ kind: "rate_limit", retryAfterSecs: 7 });
    expect(decodeError(502, "<html>Bad Gateway</html>", new Headers())).toEqual({ kind: "api_error", status: 502, message: "<html>Bad Gateway</html>", failure: "transient" });
    expect(decodeError(409, '{"message":"x"}', new Headers({ "x-amzn-errortype": "SomethingNewException" }))).toEqual({ kind: "api_error", status: 409, message: "x", failure: "caller", code: "SomethingNewException" });
  });

  test("gateway errors: status, x-amzn-ErrorType and {message} per protocols.md, budget with type insufficient_quota", async () => {
    const wire = async (error: IrError) => {
      const response = bedrock.encodeError(error);
      return [response.status, response.headers.get("x-amzn-errortype"), await response.json()];
    };
    expect(await wire(irError("authentication", "The security token included in the request is invalid."))).toEqual([403, "UnrecognizedClientException", { message: "The security token included in the request is invalid." }]);
    expect(await wire(irError("permission", "no"))).toEqual([403, "AccessDeniedException", { message: "no" }]);
    expect(await wire(irError("rate_limit", "slow"))).toEqual([429, "ThrottlingException", { message: "slow" }]);
    expect(await wire(irError("insufficient_quota", "budget"))).toEqual([400, "ValidationException", { message: "budget", type: "insufficient_quota" }]);
    expect(await wire(irError("overloaded", "busy", { status: 529 }))).toEqual([503, "ServiceUnavailableException", { message: "busy" }]);
    expect(await wire(irError("invalid_request", "bad", { status: 422 }))).toEqual([400, "ValidationException", { message: "bad" }]);
    expect(await wire(irError("not_found", "model"))).toEqual([404, "ResourceNotFoundException", { message: "model" }]);
    expect(await wire(irError("request_too_large", "big"))).toEqual([413, "ValidationException", { message: "big" }]);
    expect(await wire(irError("timeout", "slow upstream"))).toEqual([504, "ModelTimeoutException", { message: "slow upstream" }]);
    expect(await wire(irError("api_error", "no answer", { status: 502 }))).toEqual([502, "InternalServerException", { message: "no answer" }]);
    expect(bedrock.encodeError(irError("rate_limit", "x", { retryAfterSecs: 2.2 })).headers.get("retry-after")).toBe("3");
  });

  test("the official SDK raises its own typed error for each gateway error", async () => {
    const raised = (error: IrError) => rejection(sdk(() => bedrock.encodeError(error)).send(new ConverseCommand({ modelId: CLAUDE, messages: [] })));
    expect(await raised(irError("rate_limit", "slow"))).toBeInstanceOf(ThrottlingException);
    expect(await raised(irError("permission", "no"))).toBeInstanceOf(AccessDeniedException);
    expect(await raised(irError("not_found", "no such pool"))).toBeInstanceOf(ResourceNotFoundException);
    expect(await raised(irError("overloaded", "busy"))).toBeInstanceOf(ServiceUnavailableException);
    const budget = await raised(irError("insufficient_quota", "budget exhausted"));
    expect(budget).toBeInstanceOf(ValidationException);
    expect(budget).toMatchObject({ message: "budget exhausted", $metadata: { httpStatusCode: 400 } });
    expect(await raised(irError("authentication", "bad key"))).toMatchObject({ name: "UnrecognizedClientException", $metadata: { httpStatusCode: 403 } });
  });
});

// ---- request decode: 400s in AWS's wording -------------------------------------------------------------------

describe("request decode rejects bad members with a 400 in AWS's validation wording", () => {
  const v = (path: string, constraint: string) => `1 validation error detected: Value at '${path}' failed to satisfy constraint: ${constraint}`;
  const cases: [string, unknown, string, string][] = [
    ["an unknown role (Bedrock's own message)", body({ messages: [{ role: "user", content: [{ text: "a" }] }, { role: "system", content: [{ text: "b" }] }] }), "messages[1].role", v("messages.2.member.role", "Member must satisfy enum value set: [user, assistant]")],
    ["content missing", body({ messages: [{ role: "user" }] }), "messages[0].content", v("messages.1.member.content", "Member must not be null")],
    ["text not a string", body({ messages: [{ role: "user", content: [{ text: 5 }] }] }), "messages[0].content[0].text", v("messages.1.member.content.1.member.text", "Member must be a string")],
    ["two union members in one block", body({ messages: [{ role: "user", content: [{ text: "a", image: {} }] }] }), "messages[0].content[0]", v("messages.1.member.content.1.member", "Member must have exactly one of [text, image] set")],
    ["an image format Converse does not take", body({ messages: [{ role: "user", content: [{ image: { format: "bmp", source: { bytes: "AA==" } } }] }] }), "messages[0].content[0].image.format", v("messages.1.member.content.1.member.image.format", "Member must satisfy enum value set: [png, jpeg, gif, webp]")],
    ["a document without a name", body({ messages: [{ role: "user", content: [{ document: { format: "pdf", source: { bytes: "AA==" } } }] }] }), "messages[0].content[0].document.name", v("messages.1.member.content.1.member.document.name", "Member must not be null")],
    ["toolResult without toolUseId", body({ messages: [{ role: "user", content: [{ toolResult: { content: [] } }] }] }), "messages[0].content[0].toolResult.toolUseId", v("messages.1.member.content.1.member.toolResult.toolUseId", "Member must not be null")],
    ["maxTokens below 1", body({ inferenceConfig: { maxTokens: 0 } }), "inferenceConfig.maxTokens", v("inferenceConfig.maxTokens", "Member must have value greater than or equal to 1")],
    ["temperature above 1", body({ inferenceConfig: { temperature: 1.5 } }), "inferenceConfig.temperature", v("inferenceConfig.temperature", "Member must have value less than or equal to 1")],
    ["a toolSpec without inputSchema", body({ toolConfig: { tools: [{ toolSpec: { name: "f" } }] } }), "toolConfig.tools[0].toolSpec.inputSchema", v("toolConfig.tools.1.member.toolSpec.inputSchema", "Member must not be null")],
    ["an empty toolChoice", body({ toolConfig: { tools: [], toolChoice: {} } }), "toolConfig.toolChoice", v("toolConfig.toolChoice", "Member must have exactly one of [auto, any, tool] set")],
    ["a JSON schema that is not JSON", body({ outputConfig: { textFormat: { type: "json_schema", structure: { jsonSchema: { schema: "{nope" } } } } }), "outputConfig.textFormat.structure.jsonSchema.schema", v("outputConfig.textFormat.structure.jsonSchema.schema", "Member must be a JSON schema object, as JSON text")],
  ];
  for (const [name, wire, param, message] of cases) {
    test(name, () => {
      const error = decodeFail(wire);
      expect(error).toEqual({ kind: "invalid_request", status: 400, message, param });
    });
  }

  test("no model in the path, and a body that is not an object", () => {
    expect(decodeFail(body(), "").message).toBe("1 validation error detected: Value at 'modelId' failed to satisfy constraint: Member must have length greater than or equal to 1");
    expect(decodeFail([1]).message).toBe("1 validation error detected: Value at '' failed to satisfy constraint: Member must be a structure");
  });

  test("the 400 goes out as ValidationException, which the SDK raises", async () => {
    const response = bedrock.encodeError(decodeFail(body({ inferenceConfig: { maxTokens: 0 } })));
    const error = await rejection(sdk(() => response).send(new ConverseCommand({ modelId: CLAUDE, messages: [] })));
    expect(error).toBeInstanceOf(ValidationException);
    expect((error as Error).message).toMatch(/^1 validation error detected: Value at 'inferenceConfig.maxTokens'/);
  });
});

// ---- request decode: mapping and warnings ------------------------------------------------------------------

describe("request decode", () => {
  test("the model comes from the path (as the router decoded it), streaming from the path too", () => {
    const arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0";
    const decoded = bedrock.decodeRequest(body(), { pathModel: arn, pathStream: true });
    expect(decoded.ok && decoded.value.model).toBe(arn);
    expect(decoded.ok && decoded.value.stream).toBe(true);
    expect(decodeOk(body()).value.stream).toBe(false);
    expect(bedrock.upstreamPath(arn, true)).toBe("/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream");
  });

  test("toolResult blocks become an IR tool message before the rest of their user turn; status error is kept", () => {
    const decoded = decodeOk(
      body({
        messages: [
          { role: "user", content: [{ text: "Go" }] },
          { role: "assistant", content: [{ toolUse: { toolUseId: "a", name: "f", input: {} } }, { toolUse: { toolUseId: "b", name: "g", input: { x: 1 } } }] },
          {
            role: "user",
            content: [
              { text: "Results follow" },
              { toolResult: { toolUseId: "a", content: [{ text: "one" }, { image: { format: "jpeg", source: { bytes: "/9j/" } } }] } },
              { toolResult: { toolUseId: "b", content: [{ text: "boom" }], status: "error" } },
            ],
          },
        ],
      }),
    );
    expect(decoded.value.messages.slice(1)).toEqual([
      { role: "assistant", content: [{ type: "tool_call", id: "a", name: "f", arguments: "{}" }, { type: "tool_call", id: "b", name: "g", arguments: '{"x":1}' }] },
      {
        role: "tool",
        content: [
          { type: "tool_result", toolCallId: "a", content: [{ type: "text", text: "one" }, { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "/9j/" } }] },
          { type: "tool_result", toolCallId: "b", content: [{ type: "text", text: "boom" }], isError: true },
        ],
      },
      { role: "user", content: [{ type: "text", text: "Results follow" }] },
    ]);
    expect(decoded.warnings).toEqual([]);
  });

  test("reasoning in an assistant turn keeps its signature; redacted content its data", () => {
    const decoded = decodeOk(body({ messages: [{ role: "user", content: [{ text: "Q" }] }, { role: "assistant", content: [{ reasoningContent: { reasoningText: { text: "t", signature: "s" } } }, { reasoningContent: { redactedContent: "ZA==" } }, { text: "A" }] }] }));
    expect(decoded.value.messages[1]).toEqual({ role: "assistant", content: [{ type: "reasoning", text: "t", signature: "s" }, { type: "reasoning", text: "", redactedData: "ZA==" }, { type: "text", text: "A" }] });
  });

  test("toolChoice auto, any -> required, tool + name; a document given as text is carried as base64 of its media type", () => {
    const tools = [{ toolSpec: { name: "f", inputSchema: { json: { type: "object" } }, strict: true } }];
    expect(decodeOk(body({ toolConfig: { tools, toolChoice: { auto: {} } } })).value.toolChoice).toEqual({ type: "auto" });
    expect(decodeOk(body({ toolConfig: { tools, toolChoice: { any: {} } } })).value.toolChoice).toEqual({ type: "required" });
    const named = decodeOk(body({ toolConfig: { tools, toolChoice: { tool: { name: "f" } } } })).value;
    expect(named.toolChoice).toEqual({ type: "tool", name: "f" });
    expect(named.tools).toEqual([{ name: "f", parameters: { type: "object" }, strict: true }]);
    const doc = decodeOk(body({ messages: [{ role: "user", content: [{ text: "see" }, { document: { format: "md", name: "notes", source: { text: "# Title" } } }] }] }));
    expect(doc.value.messages[0]?.content[1]).toEqual({ type: "document", source: { kind: "base64", mediaType: "text/markdown", data: Buffer.from("# Title").toString("base64") }, title: "notes" });
  });

  test("Anthropic thinking and top_k in additionalModelRequestFields, effort and JSON schema in outputConfig", () => {
    const thinking = decodeOk(body({ additionalModelRequestFields: { thinking: { type: "enabled", budget_tokens: 2048 }, top_k: 40 } })).value;
    expect(thinking.reasoning).toEqual({ budgetTokens: 2048 });
    expect(thinking.sampling.topK).toBe(40);
    expect(decodeOk(body({ additionalModelRequestFields: { thinking: { type: "adaptive" } }, outputConfig: { effort: "low" } })).value.reasoning).toEqual({ effort: "low" });
    expect(decodeOk(body({ additionalModelRequestFields: { thinking: { type: "disabled" } } })).value.reasoning).toBeUndefined();
    const max = decodeOk(body({ outputConfig: { effort: "max" } }));
    expect(max.value.reasoning).toEqual({ effort: "high" });
    expect(max.warnings).toEqual(["outputConfig.effort max clamped to high, the IR's highest effort"]);
    const schema = { type: "object", properties: { name: { type: "string" } }, required: ["name"] };
    const format = decodeOk(body({ outputConfig: { textFormat: { type: "json_schema", structure: { jsonSchema: { schema: JSON.stringify(schema), name: "person" } } } } }));
    expect(format.value.responseFormat).toEqual({ type: "json_schema", schema, name: "person" });
  });

  test("members the IR does not model are dropped with one warning per kind, naming where", () => {
    const decoded = decodeOk({
      system: [{ text: "S" }, { cachePoint: { type: "default" } }],
      messages: [
        { role: "user", content: [{ text: "Hi" }, { cachePoint: { type: "default" } }, { video: { format: "mp4", source: { bytes: "AA==" } } }, { image: { format: "png", source: { s3Location: { uri: "s3://b/k.png" } } } }] },
        { role: "assistant", content: [{ text: "Yo" }, { cachePoint: { type: "default" } }] },
      ],
      toolConfig: { tools: [{ toolSpec: { name: "f", inputSchema: { json: {} } } }, { systemTool: { name: "nova_grounding" } }] },
      guardrailConfig: { guardrailIdentifier: "g", guardrailVersion: "1" },
      performanceConfig: { latency: "optimized" },
      additionalModelRequestFields: { anthropic_beta: ["x"] },
      requestMetadata: { team: "a" },
    });
    expect([...decoded.warnings].sort()).toEqual(
      [
        "guardrailConfig dropped: guardrails are Bedrock-only",
        "performanceConfig dropped: latency-optimized inference is Bedrock-only",
        "requestMetadata dropped: invocation-log metadata is Bedrock-only",
        "cachePoint dropped at system[1]: prompt caching checkpoints are Bedrock-only",
        "cachePoint block dropped at messages[0].content[1] (and 1 more): this content block type is not modelled by the gateway's IR",
        "video block dropped at messages[0].content[2]: this content block type is not modelled by the gateway's IR",
        "s3Location source dropped at messages[0].content[3].image.source: its block was dropped; only inline bytes (and document text) cross protocols",
        "systemTool dropped at toolConfig.tools[1]: only toolSpec tools cross protocols",
        "additionalModelRequestFields.anthropic_beta dropped: model-specific fields cross protocols only where the IR models them (thinking, top_k)",
      ].sort(),
    );
    expect(decoded.value.system).toEqual([{ type: "text", text: "S" }]);
    expect(decoded.value.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Hi" }] },
      { role: "assistant", content: [{ type: "text", text: "Yo" }] },
    ]);
  });
});

// ---- request encode (an IR from another protocol -> Bedrock) ------------------------------------------------

describe("request encode", () => {
  test("tool results join the next user message in one user turn; same-role turns merge so roles alternate", () => {
    const encoded = encodeFor(
      CLAUDE,
      ir({
        tools: [{ name: "f", parameters: { type: "object" } }],
        messages: [
          { role: "user", content: [{ type: "text", text: "Go" }] },
          { role: "user", content: [{ type: "text", text: "Now" }] },
          { role: "assistant", content: [{ type: "text", text: "" }, { type: "tool_call", id: "a", name: "f", arguments: "{}" }, { type: "tool_call", id: "b", name: "f", arguments: '{"n":2}' }] },
          { role: "tool", content: [{ type: "tool_result", toolCallId: "a", content: [{ type: "text", text: "1" }] }] },
          { role: "tool", content: [{ type: "tool_result", toolCallId: "b", content: [], isError: true }] },
          { role: "user", content: [{ type: "text", text: "Thanks" }] },
        ],
      }),
    );
    expect((encoded.body as { messages: unknown }).messages).toEqual([
      { role: "user", content: [{ text: "Go" }, { text: "Now" }] },
      { role: "assistant", content: [{ toolUse: { toolUseId: "a", name: "f", input: {} } }, { toolUse: { toolUseId: "b", name: "f", input: { n: 2 } } }] },
      { role: "user", content: [{ toolResult: { toolUseId: "a", content: [{ text: "1" }] } }, { toolResult: { toolUseId: "b", content: [], status: "error" } }, { text: "Thanks" }] },
    ]);
    expect(encoded.warnings).toEqual([]);
  });

  test("reasoning for a Claude model: thinking in additionalModelRequestFields, maxTokens kept above the budget", () => {
    const encoded = encodeFor(CLAUDE, ir({ reasoning: { effort: "medium" }, sampling: { maxTokens: 4096, temperature: 0.2, topP: 0.5, topK: 5 } }));
    expect(encoded.body).toMatchObject({ additionalModelRequestFields: { thinking: { type: "enabled", budget_tokens: 8192 } }, inferenceConfig: { maxTokens: 12288, topP: 0.95 } });
    expect(encoded.warnings).toEqual([
      "maxTokens raised from 4096 to 12288 to stay above thinking budget_tokens 8192",
      "temperature dropped: Anthropic models do not accept it with thinking on",
      "top_p 0.5 raised to 0.95, the lowest Anthropic models accept with thinking on",
      "top_k dropped: Anthropic models do not accept it with thinking on",
    ]);
    expect(encodedBody(ir({ reasoning: {} }))).toMatchObject({ additionalModelRequestFields: { thinking: { type: "adaptive" } } });
    expect(encodeFor(CLAUDE, ir({ reasoning: { budgetTokens: 500 } })).warnings).toEqual(["thinking budget 500 raised to 1024, Anthropic's minimum"]);
  });

  test("reasoning and top_k for a model that is not Claude are dropped, warned; top_k goes to Claude models as is", () => {
    const encoded = encodeFor(NOVA, ir({ reasoning: { budgetTokens: 2048 }, sampling: { topK: 5 } }));
    expect(encoded.body).not.toHaveProperty("additionalModelRequestFields");
    expect(encoded.warnings).toEqual([
      "reasoning dropped: Converse sets reasoning in model-specific additionalModelRequestFields, which the gateway maps only for Claude models (upstream amazon.nova-pro-v1:0)",
      "top_k dropped: Converse has no topK, and the gateway maps it into additionalModelRequestFields only for Claude models (upstream amazon.nova-pro-v1:0)",
    ]);
    expect(encodedBody(ir({ sampling: { topK: 5 } }))).toMatchObject({ additionalModelRequestFields: { top_k: 5 } });
    expect(encodeFor(CLAUDE, ir({ reasoning: { effort: "low" }, tools: [{ name: "f", parameters: {} }], toolChoice: { type: "required" } })).warnings).toEqual(["reasoning dropped: Anthropic models do not allow thinking with a forced tool choice"]);
  });

  test("tool choices: required -> any, a named tool, none without tool history -> no toolConfig at all (warned)", () => {
    const tools = [{ name: "f", description: "F", parameters: { properties: { a: { type: "string" } } } }];
    expect(encodedBody(ir({ tools, toolChoice: { type: "required" } })).toolConfig).toEqual({ tools: [{ toolSpec: { name: "f", description: "F", inputSchema: { json: { type: "object", properties: { a: { type: "string" } } } } } }], toolChoice: { any: {} } });
    expect(encodedBody(ir({ tools, toolChoice: { type: "tool", name: "f" } })).toolConfig).toMatchObject({ toolChoice: { tool: { name: "f" } } });
    const none = encodeFor(CLAUDE, ir({ tools, toolChoice: { type: "none" } }));
    expect(none.body).not.toHaveProperty("toolConfig");
    expect(none.warnings).toEqual(["tool_choice none sent by leaving the tools out: Converse has no 'none' tool choice"]);
  });

  test("tool history without tools declares the tools used (Converse requires a toolConfig); none with history is warned", () => {
    const messages: IrRequest["messages"] = [
      { role: "user", content: [{ type: "text", text: "Go" }] },
      { role: "assistant", content: [{ type: "tool_call", id: "a", name: "lookup", arguments: "{}" }] },
      { role: "tool", content: [{ type: "tool_result", toolCallId: "a", content: [{ type: "text", text: "done" }] }] },
    ];
    const bare = encodeFor(CLAUDE, ir({ messages }));
    expect((bare.body as { toolConfig: unknown }).toolConfig).toEqual({ tools: [{ toolSpec: { name: "lookup", inputSchema: { json: { type: "object" } } } }] });
    expect(bare.warnings).toEqual(["toolConfig declared for lookup with empty schemas: Converse requires one when the conversation holds toolUse or toolResult blocks"]);
    const none = encodeFor(CLAUDE, ir({ messages, tools: [{ name: "lookup", parameters: { type: "object" } }], toolChoice: { type: "none" } }));
    expect(none.warnings).toEqual(["tool_choice none dropped: Converse has no 'none' tool choice, and the conversation's tool blocks need the tools declared"]);
  });

  test("media: image URLs and unsupported types dropped; document titles cleaned into Converse names", () => {
    const encoded = encodeFor(
      CLAUDE,
      ir({
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "Look" },
              { type: "image", source: { kind: "url", url: "https://example.com/a.png" } },
              { type: "image", source: { kind: "base64", mediaType: "image/tiff", data: "AA==" } },
              { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "/9j/" } },
              { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBE" }, title: "report_v2.final.pdf" },
              { type: "document", source: { kind: "base64", mediaType: "text/plain", data: "aGk=" } },
              { type: "document", source: { kind: "url", url: "https://example.com/a.pdf" } },
              { type: "document", source: { kind: "base64", mediaType: "application/zip", data: "UEs=" } },
            ],
          },
        ],
      }),
    );
    expect((encoded.body as { messages: { content: unknown[] }[] }).messages[0]?.content).toEqual([
      { text: "Look" },
      { image: { format: "jpeg", source: { bytes: "/9j/" } } },
      { document: { format: "pdf", name: "report v2 final pdf", source: { bytes: "JVBE" } } },
      { document: { format: "txt", name: "document-2", source: { bytes: "aGk=" } } },
    ]);
    expect(encoded.warnings).toEqual([
      "image by URL dropped: Converse takes image bytes (or S3 objects), not URLs",
      "image of type image/tiff dropped: Converse takes png, jpeg, gif and webp",
      'document title "report_v2.final.pdf" sent as name "report v2 final pdf": Converse names allow only letters, digits, single spaces, hyphens, parentheses and brackets',
      "document by URL dropped: Converse takes document bytes (or S3 objects), not URLs",
      "document of type application/zip dropped: Converse takes pdf, csv, doc, docx, xls, xlsx, html, txt, md",
    ]);
  });

  test("what Converse has no place for is warned: seed, penalties, user, JSON mode, parallel_tool_calls, unsigned reasoning", () => {
    const encoded = encodeFor(
      CLAUDE,
      ir({
        sampling: { seed: 1, frequencyPenalty: 0.5, presencePenalty: 0.5, temperature: 1.7 },
        user: "u-1",
        responseFormat: { type: "json" },
        parallelToolCalls: false,
        messages: [
          { role: "user", content: [{ type: "text", text: "Q" }] },
          { role: "assistant", content: [{ type: "reasoning", text: "from another vendor" }, { type: "text", text: "A" }] },
        ],
      }),
    );
    expect(encoded.body).toMatchObject({ inferenceConfig: { temperature: 1 }, messages: [{ role: "user" }, { role: "assistant", content: [{ text: "A" }] }] });
    expect([...encoded.warnings].sort()).toEqual(
      [
        "frequency_penalty dropped: Converse has no frequency penalty",
        "parallel_tool_calls false dropped: Converse has no switch for parallel tool calls",
        "presence_penalty dropped: Converse has no presence penalty",
        "reasoning without a signature (from another vendor) dropped: Bedrock's reasoning models accept only their own signed reasoning",
        "response_format json dropped: Converse's outputConfig.textFormat needs a JSON schema",
        "seed dropped: Converse has no seed",
        "temperature 1.7 clamped to 1, Converse's maximum",
        "user dropped: Converse has no end-user field",
      ].sort(),
    );
  });

  test("a JSON-schema response format becomes outputConfig.textFormat with the schema as JSON text", () => {
    const schema = { type: "object", properties: { n: { type: "integer" } } };
    expect(encodedBody(ir({ responseFormat: { type: "json_schema", name: "count", schema, strict: true } })).outputConfig).toEqual({ textFormat: { type: "json_schema", structure: { jsonSchema: { schema: JSON.stringify(schema), name: "count" } } } });
  });

  test("tool-call arguments that are not a JSON object go up as {} with a warning", () => {
    const encoded = encodeFor(CLAUDE, ir({ tools: [{ name: "f", parameters: {} }], messages: [{ role: "assistant", content: [{ type: "tool_call", id: "a", name: "f", arguments: "[1,2" }] }] }));
    expect((encoded.body as { messages: unknown[] }).messages[0]).toEqual({ role: "assistant", content: [{ toolUse: { toolUseId: "a", name: "f", input: {} } }] });
    expect(encoded.warnings).toEqual(['tool call arguments are not a JSON object; sent input {} instead of "[1,2"']);
  });

  test("streaming requests go to /converse-stream; the body never carries the model", () => {
    const encoded = encodeFor(CLAUDE, ir({ stream: true }));
    expect(encoded.path).toBe("/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream");
    expect(encoded.body).toEqual({ messages: [{ role: "user", content: [{ text: "Hi" }] }] });
  });
});

// ---- credentials and same-protocol routes -----------------------------------------------------------------

describe("credentials and same-protocol pass-through", () => {
  test("authHeaders sends a Bedrock API key as a Bearer token", () => {
    expect(bedrock.authHeaders("ABSKexample")).toEqual({ authorization: "Bearer ABSKexample" });
  });

  test("clientCredential reads the Bearer token the official SDK sends for a Bedrock API key; SigV4 is not one", async () => {
    let sent: Sent | undefined;
    const client = sdk(
      (s) => {
        sent = s;
        return bedrock.encodeError(irError("rate_limit", "x"));
      },
      { credentials: undefined, token: { token: "bedrock-api-key-123" }, authSchemePreference: ["httpBearerAuth"] },
    );
    await rejection(client.send(new ConverseCommand({ modelId: CLAUDE, messages: [] })));
    expect(bedrock.clientCredential(new Request("http://gateway.test/", { headers: sent?.headers }))).toBe("bedrock-api-key-123");
    const signed = new Request("http://gateway.test/", { headers: { authorization: "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=abc" } });
    expect(bedrock.clientCredential(signed)).toBeUndefined();
  });

  test("rewriteModel leaves the body untouched (the model is in the path)", () => {
    const wire = { messages: [], unknownMember: { kept: true } };
    expect(bedrock.rewriteModel(wire, "other-model")).toEqual({ messages: [], unknownMember: { kept: true } });
    expect(bedrock.upstreamPath("other-model", false)).toBe("/model/other-model/converse");
  });
});
