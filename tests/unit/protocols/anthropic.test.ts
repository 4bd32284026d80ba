// The Anthropic Messages adapter: golden fixtures from Anthropic's API reference both ways, streams
// chunk by chunk and part by part, the error table and failure classes, 400s naming the member, and the
// warnings for what cannot cross protocols. The official SDK reads the encoder's output as its own.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Anthropic, { AuthenticationError, BadRequestError, NotFoundError, OverloadedError, PermissionDeniedError, RateLimitError } from "@anthropic-ai/sdk";
import { irError, type IrError, type IrFinishUnified, type IrRequest, type IrResponse, type IrStreamPart } from "../../../src/ir/index.ts";
import { anthropic } from "../../../src/protocols/anthropic/index.ts";
import { decodeError, encodeError } from "../../../src/protocols/anthropic/errors.ts";
import { decodeResponse, encodeResponse } from "../../../src/protocols/anthropic/response.ts";
import { createStreamEncoder, createStreamParser } from "../../../src/protocols/anthropic/stream.ts";
import { sseDecoder, SSE_HEADERS } from "../../../src/transport/sse.ts";
import { bytesOf, pieces, readAll, streamOf } from "../../support/streams.ts";
import { parserTransform } from "../../../src/transport/push-parser.ts";

// ---- helpers -----------------------------------------------------------------------------------------

const FIXTURES = join(import.meta.dir, "../../fixtures/protocols/anthropic");
const fixture = <T>(name: string): T => JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), "utf8")) as T;

interface RequestFixture {
  source: string;
  wire: Record<string, unknown> & { model: string };
  ir: IrRequest;
  warnings: string[];
}
interface ResponseFixture {
  source: string;
  wire: unknown;
  ir: IrResponse;
  encoded?: unknown;
}
type WireEvent = { event: string; data: unknown };
interface StreamFixture {
  source: string;
  wire: string;
  ir: IrStreamPart[];
  encoded: WireEvent[];
  toolArguments?: string;
}
interface ErrorFixture {
  source: string;
  status: number;
  wire: unknown;
  ir: IrError;
  encoded: unknown;
}

const NOW_MS = 1_700_000_000_000;
const clock = () => NOW_MS;

const decodeChunks = (chunks: readonly Uint8Array[]) => readAll(streamOf(chunks).pipeThrough(parserTransform(createStreamParser(clock))));
const decodeText = (text: string) => decodeChunks([bytesOf(text)]);

async function parseSse(bytes: ReadableStream<Uint8Array>): Promise<WireEvent[]> {
  const events = await readAll(bytes.pipeThrough(sseDecoder()));
  return events.map((e) => ({ event: e.event ?? "", data: JSON.parse(e.data) }));
}

const BASE_REQUEST: IrRequest = { model: "claude-sonnet-4-5", system: [], messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], tools: [], sampling: {}, stream: true };

function encodeParts(parts: readonly IrStreamPart[], warnings: string[] = []): Promise<WireEvent[]> {
  return parseSse(streamOf(parts).pipeThrough(createStreamEncoder(BASE_REQUEST, (w) => warnings.push(w))));
}

/** A minimal client body with the given messages (and other members). */
const body = (extra: Record<string, unknown> = {}) => ({ model: "claude-sonnet-4-5", max_tokens: 256, messages: [{ role: "user", content: "Hi" }], ...extra });
function decodeOk(wire: unknown) {
  const decoded = anthropic.decodeRequest(wire, {});
  if (!decoded.ok) throw new Error(`expected a decode, got ${decoded.error.message}`);
  return decoded;
}
function decodeFail(wire: unknown): IrError {
  const decoded = anthropic.decodeRequest(wire, {});
  if (decoded.ok) throw new Error("expected a 400");
  return decoded.error;
}
const ir = (extra: Partial<IrRequest> = {}): IrRequest => ({ ...BASE_REQUEST, stream: false, sampling: { maxTokens: 256 }, ...extra });
const encode = (request: IrRequest) => anthropic.encodeRequest(request, "claude-upstream");
const encodedBody = (request: IrRequest) => encode(request).body as Record<string, unknown>;

/** What a promise rejected with (the SDK's lazy APIPromise is awaited first, so it runs). */
const rejection = (promise: PromiseLike<unknown>): Promise<unknown> => Promise.resolve(promise).then(() => "resolved", (error: unknown) => error);

/** An Anthropic SDK client whose every request gets `answer()`. */
const sdk = (answer: () => Response) => new Anthropic({ apiKey: "sk-test", baseURL: "http://gateway.test", maxRetries: 0, fetch: async () => answer() });

// ---- fixtures: requests ------------------------------------------------------------------------------

describe("request fixtures, both directions", () => {
  for (const name of ["plain-request", "tool-use-request", "image-request"]) {
    const f = fixture<RequestFixture>(name);
    test(`${name}: decode -> IR`, () => {
      const decoded = decodeOk(f.wire);
      expect(decoded.value).toEqual(f.ir);
      expect(decoded.warnings).toEqual(f.warnings);
    });
    test(`${name}: IR -> encode equals the wire form`, () => {
      const encoded = anthropic.encodeRequest(f.ir, f.wire.model);
      expect(encoded.path).toBe("/v1/messages");
      expect(encoded.body).toEqual(f.wire);
      expect(encoded.warnings).toEqual([]);
    });
  }
});

// ---- fixtures: responses -----------------------------------------------------------------------------

describe("response fixtures, both directions", () => {
  for (const name of ["plain-response", "thinking-response"]) {
    const f = fixture<ResponseFixture>(name);
    test(`${name}: decode -> IR`, () => {
      const decoded = decodeResponse(f.wire, clock);
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

  test("the adapter's decodeResponse stamps the wall clock as created", () => {
    const f = fixture<ResponseFixture>("plain-response");
    const before = Math.floor(Date.now() / 1000);
    const decoded = anthropic.decodeResponse(f.wire);
    if (!decoded.ok) throw new Error(decoded.error.message);
    expect(decoded.value.created).toBeGreaterThanOrEqual(before);
    expect(decoded.value.created).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });
});

// ---- fixtures: streams -------------------------------------------------------------------------------

describe("stream fixtures, decoder", () => {
  for (const name of ["stream-text", "stream-tool-use"]) {
    const f = fixture<StreamFixture>(name);
    test(`${name}: the docs' SSE text decodes to the IR parts`, async () => {
      expect(await decodeText(f.wire)).toEqual(f.ir);
    });
    for (const size of [1, 2, 7, 64]) {
      test(`${name}: the same IR when the bytes arrive ${size} at a time`, async () => {
        expect(await decodeChunks(pieces(bytesOf(f.wire), size))).toEqual(f.ir);
      });
    }
  }

  test("stream-text: the same IR split in two at every byte boundary", async () => {
    const f = fixture<StreamFixture>("stream-text");
    const bytes = bytesOf(f.wire);
    for (let cut = 1; cut < bytes.length; cut += 1) {
      expect(await decodeChunks([bytes.slice(0, cut), bytes.slice(cut)])).toEqual(f.ir);
    }
  });

  test("stream-tool-use: the input_json_delta pieces join into the tool's arguments", async () => {
    const f = fixture<StreamFixture>("stream-tool-use");
    const parts = await decodeText(f.wire);
    const joined = parts.flatMap((p) => (p.type === "tool-call-delta" ? [p.argumentsDelta] : [])).join("");
    expect(JSON.parse(joined)).toEqual(JSON.parse(f.toolArguments ?? ""));
    expect(parts.find((p) => p.type === "tool-call-start")).toEqual({ type: "tool-call-start", id: "block-1", toolCallId: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "get_weather" });
  });

  test("multi-byte characters split across chunks at every byte survive", async () => {
    const text = "héllo ☃ 🌍";
    const wire = [
      'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}\n\n',
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
      `event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })}\n\n`,
      'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}\n\n',
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ].join("");
    const parts = await decodeChunks(pieces(bytesOf(wire), 1));
    expect(parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")).toBe(text);
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: { unified: "stop", raw: "end_turn" } });
  });
});

describe("stream fixtures, encoder", () => {
  for (const name of ["stream-text", "stream-tool-use"]) {
    const f = fixture<StreamFixture>(name);
    test(`${name}: the IR parts encode to the docs' events (stated normalised form)`, async () => {
      const warnings: string[] = [];
      expect(await encodeParts(f.ir, warnings)).toEqual(f.encoded);
      expect(warnings).toEqual([]);
    });
  }

  // Gemini signs the step of a tool call, and its last text part: translated for an Anthropic client.
  const signed = (afterText: IrStreamPart[]): IrStreamPart[] => [
    { type: "start", id: "msg_g", model: "gemini-x", created: 0 },
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "Let me look." },
    { type: "text-end", id: "t" },
    { type: "reasoning-start", id: "s" },
    { type: "reasoning-signature", id: "s", signature: "R2VtaW5p" },
    { type: "reasoning-end", id: "s" },
    ...afterText,
    { type: "finish", finishReason: { unified: "stop", raw: "STOP" } },
  ];
  const blocks = (events: WireEvent[]) => events.filter((e) => e.event === "content_block_start").map((e) => (e.data as { content_block: { type: string } }).content_block.type);

  test("a bare signature after the text, ahead of a tool call, becomes a thinking block right before the tool_use", async () => {
    const events = await encodeParts(signed([{ type: "tool-call-start", id: "c", toolCallId: "toolu_1", name: "read" }, { type: "tool-call-delta", id: "c", argumentsDelta: "{}" }, { type: "tool-call-end", id: "c" }]));
    expect(blocks(events)).toEqual(["text", "thinking", "tool_use"]);
    expect(events.some((e) => e.event === "content_block_delta" && (e.data as { delta: { signature?: string } }).delta.signature === "R2VtaW5p")).toBe(true);
  });

  test("a bare signature after the answer's text with nothing after it is not shown (clients read the last block as the answer), warned", async () => {
    const warnings: string[] = [];
    const events = await encodeParts(signed([]), warnings);
    expect(blocks(events)).toEqual(["text"]);
    expect(warnings).toEqual(["a signature after the answer's content dropped: Anthropic clients take thinking only ahead of content"]);
  });

  test("each event is written as `event: <name>\\ndata: <json>\\n\\n`", async () => {
    const f = fixture<StreamFixture>("stream-text");
    const chunks = await readAll(streamOf(f.ir).pipeThrough(createStreamEncoder(BASE_REQUEST, () => {})));
    const texts = chunks.map((c) => new TextDecoder().decode(c));
    expect(texts[1]).toBe('event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n');
    expect(texts.at(-1)).toBe('event: message_stop\ndata: {"type":"message_stop"}\n\n');
  });

  test("the official SDK accumulates the encoded tool-use stream into the final message", async () => {
    const f = fixture<StreamFixture>("stream-tool-use");
    const client = sdk(() => new Response(streamOf(f.ir).pipeThrough(createStreamEncoder(BASE_REQUEST, () => {})), { headers: SSE_HEADERS }));
    const message = await client.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 1024, messages: [{ role: "user", content: "Weather?" }] }).finalMessage();
    expect(message.id).toBe("msg_014p7gG3wDgGV9EUtLvnow3U");
    expect(message.stop_reason).toBe("tool_use");
    expect(message.usage.input_tokens).toBe(472);
    expect(message.usage.output_tokens).toBe(89);
    expect(message.content[1]).toMatchObject({ type: "tool_use", id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", name: "get_weather", input: { location: "San Francisco, CA", unit: "fahrenheit" } });
  });
});

// ---- stream decoder: beyond the fixtures ---------------------------------------------------------------

describe("stream decoder", () => {
  const start = 'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":1}}}\n\n';

  test("message_start usage carries the input split, cache read and write apart", async () => {
    const parts = await decodeText(`${start}event: message_stop\ndata: {"type":"message_stop"}\n\n`);
    expect(parts[1]).toEqual({ type: "usage", usage: { inputNoCache: 10, inputCacheRead: 100, inputCacheWrite: 5, output: 1 } });
  });

  test("thinking blocks: thinking_delta and signature_delta (the docs' extended thinking stream)", async () => {
    const wire = [
      'event: message_start\ndata: {"type": "message_start", "message": {"id": "msg_01...", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5-20250929", "stop_reason": null, "stop_sequence": null}}',
      'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}',
      'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me solve this step by step:\\n\\n1. First break down 27 * 453"}}',
      'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..."}}',
      'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 0}',
      'event: content_block_start\ndata: {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}',
      'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "27 * 453 = 12,231"}}',
      'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 1}',
      'event: message_delta\ndata: {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}}',
      'event: message_stop\ndata: {"type": "message_stop"}',
    ].join("\n\n");
    expect(await decodeText(`${wire}\n\n`)).toEqual([
      { type: "start", id: "msg_01...", model: "claude-sonnet-4-5-20250929", created: NOW_MS / 1000 },
      { type: "reasoning-start", id: "block-0" },
      { type: "reasoning-delta", id: "block-0", delta: "Let me solve this step by step:\n\n1. First break down 27 * 453" },
      { type: "reasoning-signature", id: "block-0", signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds..." },
      { type: "reasoning-end", id: "block-0" },
      { type: "text-start", id: "block-1" },
      { type: "text-delta", id: "block-1", delta: "27 * 453 = 12,231" },
      { type: "text-end", id: "block-1" },
      { type: "finish", finishReason: { unified: "stop", raw: "end_turn" } },
    ]);
  });

  test("redacted_thinking opens a reasoning block carrying its data", async () => {
    const wire = `${start}event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgB"}}\n\nevent: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n`;
    const parts = await decodeText(wire);
    expect(parts.slice(2, 4)).toEqual([
      { type: "reasoning-start", id: "block-0", redactedData: "EmwKAhgB" },
      { type: "reasoning-end", id: "block-0" },
    ]);
  });

  test("server tool blocks and unknown events are skipped; later blocks keep their ids", async () => {
    const wire = [
      start.trim(),
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"query\\":\\"x\\"}"}}',
      'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}',
      'event: some_future_event\ndata: {"type":"some_future_event"}',
      'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":"Found"}}',
      'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}',
      'event: message_stop\ndata: {"type":"message_stop"}',
    ].join("\n\n");
    const parts = await decodeText(`${wire}\n\n`);
    expect(parts.slice(2)).toEqual([
      { type: "text-start", id: "block-1" },
      { type: "text-delta", id: "block-1", delta: "Found" },
      { type: "text-end", id: "block-1" },
      { type: "finish", finishReason: { unified: "other" } },
    ]);
  });

  test("an error event ends the parts with an IR error, classed as its HTTP twin", async () => {
    const wire = `${start}event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n`;
    const parts = await decodeText(wire);
    expect(parts.at(-1)).toEqual({ type: "error", error: { kind: "overloaded", status: 529, message: "Overloaded", failure: "transient", code: "overloaded_error" } });
    expect(parts.filter((p) => p.type === "finish")).toEqual([]);
  });

  test("a stream cut before message_stop ends with a transient error, never silently", async () => {
    const parts = await decodeText(start);
    expect(parts.at(-1)).toEqual({ type: "error", error: { kind: "api_error", status: 502, message: "the upstream stream ended before message_stop", failure: "transient" } });
  });

  test("an event whose data is not JSON ends the stream with an error", async () => {
    const parts = await decodeText(`${start}event: content_block_start\ndata: {not json\n\n`);
    expect(parts.at(-1)?.type).toBe("error");
  });

  test("message_delta usage replaces counts member by member; thinking_tokens become reasoning", async () => {
    const wire = `${start}event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":300,"output_tokens_details":{"thinking_tokens":200}}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n`;
    const parts = await decodeText(wire);
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: { output: 300, outputReasoning: 200 } },
      { type: "finish", finishReason: { unified: "length", raw: "max_tokens" } },
    ]);
  });
});

// ---- stream encoder: beyond the fixtures ---------------------------------------------------------------

describe("stream encoder", () => {
  const head: IrStreamPart = { type: "start", id: "chatcmpl-1", model: "gpt-x", created: 1 };
  const finish: IrStreamPart = { type: "finish", finishReason: { unified: "tool_calls", raw: "tool_calls" } };

  test("interleaved IR tool calls come out as sequential blocks with indices in opening order", async () => {
    const events = await encodeParts([
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
    expect(events.map((e) => [e.event, (e.data as { index?: number }).index])).toEqual([
      ["message_start", undefined],
      ["content_block_start", 0],
      ["content_block_delta", 0],
      ["content_block_delta", 0],
      ["content_block_stop", 0],
      ["content_block_start", 1],
      ["content_block_delta", 1],
      ["content_block_stop", 1],
      ["message_delta", undefined],
      ["message_stop", undefined],
    ]);
    expect(events[1]?.data).toEqual({ type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "call_a", name: "get_weather", input: {} } });
    expect(events[5]?.data).toEqual({ type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "call_b", name: "get_time", input: {} } });
    expect(events.filter((e) => e.event === "content_block_delta").map((e) => (e.data as { delta: { partial_json: string } }).delta.partial_json)).toEqual(['{"city":', '"Paris"}', '{"zone":"UTC"}']);
    expect(events[8]?.data).toEqual({ type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 0 } });
  });

  test("the open block's parts go out at once; a waiting block's parts are held only until the open one ends", async () => {
    const live: string[] = [];
    const encoderStream = createStreamEncoder(BASE_REQUEST, () => {});
    const writer = encoderStream.writable.getWriter();
    const reader = encoderStream.readable.getReader();
    // Each chunk is one event; keep its name as it arrives.
    const pump = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        const text = new TextDecoder().decode(value);
        live.push(text.slice("event: ".length, text.indexOf("\n")));
      }
    })();
    const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
    const step = async (part: IrStreamPart) => {
      await writer.write(part);
      await tick();
      return [...live];
    };
    expect(await step(head)).toEqual([]); // message_start waits for content, to carry the usage known by then
    expect(await step({ type: "text-start", id: "x" })).toEqual(["message_start", "content_block_start"]);
    expect(await step({ type: "text-delta", id: "x", delta: "Hi" })).toHaveLength(3);
    expect(await step({ type: "tool-call-start", id: "t", toolCallId: "c", name: "f" })).toHaveLength(3);
    expect(await step({ type: "tool-call-delta", id: "t", argumentsDelta: "{}" })).toHaveLength(3);
    expect(await step({ type: "text-delta", id: "x", delta: "!" })).toHaveLength(4);
    expect(await step({ type: "text-end", id: "x" })).toEqual(["message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "content_block_start", "content_block_delta"]);
    await writer.close();
    await pump;
  });

  test("reasoning: thinking block with thinking_delta and signature_delta; redacted as redacted_thinking", async () => {
    const events = await encodeParts([
      head,
      { type: "reasoning-start", id: "r" },
      { type: "reasoning-delta", id: "r", delta: "Hmm." },
      { type: "reasoning-signature", id: "r", signature: "sig" },
      { type: "reasoning-end", id: "r" },
      { type: "reasoning-start", id: "z", redactedData: "opaque" },
      { type: "reasoning-end", id: "z" },
      { type: "finish", finishReason: { unified: "stop" } },
    ]);
    expect(events.slice(1, 7).map((e) => e.data)).toEqual([
      { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Hmm." } },
      { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig" } },
      { type: "content_block_stop", index: 0 },
      { type: "content_block_start", index: 1, content_block: { type: "redacted_thinking", data: "opaque" } },
      { type: "content_block_stop", index: 1 },
    ]);
  });

  test("usage known only at the end (an OpenAI upstream) goes in message_delta, input included; message_start has the request's estimate", async () => {
    const events = await encodeParts([
      head,
      { type: "text-start", id: "x" },
      { type: "text-end", id: "x" },
      { type: "usage", usage: { inputNoCache: 90, inputCacheRead: 10, output: 7, outputReasoning: 3 } },
      { type: "finish", finishReason: { unified: "length", raw: "length" } },
    ]);
    // "Hi": 2 characters, 1 token at ~4 characters a token (src/ir/estimate.ts).
    expect((events[0]?.data as { message: { usage: unknown } }).message.usage).toEqual({ input_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 });
    expect(events.at(-2)?.data).toEqual({
      type: "message_delta",
      delta: { stop_reason: "max_tokens", stop_sequence: null },
      usage: { input_tokens: 90, cache_creation_input_tokens: 0, cache_read_input_tokens: 10, output_tokens: 7, output_tokens_details: { thinking_tokens: 3 } },
    });
  });

  test("message_start's input estimate counts the request's instructions, messages and tools; with no input reported later it stands", async () => {
    const system = "You answer in one word. ".repeat(10);
    const question = "What is the capital of France, and why? ".repeat(10);
    const tool = { name: "lookup", description: "Looks a city up.", parameters: { type: "object", properties: { city: { type: "string" } } } };
    const request: IrRequest = { ...BASE_REQUEST, system: [{ type: "text", text: system }], messages: [{ role: "user", content: [{ type: "text", text: question }] }], tools: [tool] };
    const size = system.length + question.length + tool.name.length + tool.description.length + JSON.stringify(tool.parameters).length;
    const events = await parseSse(streamOf<IrStreamPart>([head, { type: "text-start", id: "x" }, { type: "text-delta", id: "x", delta: "Paris" }, { type: "text-end", id: "x" }, { type: "usage", usage: { output: 2 } }, finish]).pipeThrough(createStreamEncoder(request, () => {})));
    const start = (events[0]?.data as { message: { usage: { input_tokens: number } } }).message.usage;
    expect(start.input_tokens).toBe(Math.ceil(size / 4));
    expect(start.input_tokens).toBeGreaterThan(100);
    // The last event carries the output; the input estimate is not replaced by a zero.
    expect((events.at(-2)?.data as { usage: unknown }).usage).toEqual({ output_tokens: 2 });
  });

  test("message_start carries the model and id of the start part and the usage known before content", async () => {
    const events = await encodeParts([head, { type: "usage", usage: { inputNoCache: 12 } }, { type: "text-start", id: "x" }, { type: "text-end", id: "x" }, finish]);
    expect(events[0]?.data).toEqual({
      type: "message_start",
      message: { id: "chatcmpl-1", type: "message", role: "assistant", content: [], model: "gpt-x", stop_reason: null, stop_sequence: null, usage: { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 } },
    });
  });

  test("a stop sequence is kept in message_delta", async () => {
    const events = await encodeParts([head, { type: "finish", finishReason: { unified: "stop", raw: "stop_sequence", stopSequence: "\n\nHuman:" } }]);
    expect((events.at(-2)?.data as { delta: unknown }).delta).toEqual({ stop_reason: "stop_sequence", stop_sequence: "\n\nHuman:" });
  });

  test("an IR error part ends the stream with event: error; nothing follows it", async () => {
    const events = await encodeParts([
      head,
      { type: "text-start", id: "x" },
      { type: "error", error: irError("rate_limit", "Too many requests", { retryAfterSecs: 3 }) },
      { type: "text-delta", id: "x", delta: "late" },
      finish,
    ]);
    expect(events.at(-1)).toEqual({ event: "error", data: { type: "error", error: { type: "rate_limit_error", message: "Too many requests" } } });
    expect(events.map((e) => e.event)).toEqual(["message_start", "content_block_start", "error"]);
  });

  test("an IR stream that ends with neither finish nor error ends with event: error", async () => {
    const events = await encodeParts([head, { type: "text-start", id: "x" }, { type: "text-delta", id: "x", delta: "cut" }]);
    expect(events.at(-1)).toEqual({ event: "error", data: { type: "error", error: { type: "api_error", message: "the stream ended before the message was complete" } } });
  });

  test("blocks left open at the finish are closed in order, with a warning", async () => {
    const warnings: string[] = [];
    const events = await encodeParts([head, { type: "text-start", id: "x" }, { type: "tool-call-start", id: "t", toolCallId: "c", name: "f" }, finish], warnings);
    expect(events.map((e) => e.event)).toEqual(["message_start", "content_block_start", "content_block_stop", "content_block_start", "content_block_stop", "message_delta", "message_stop"]);
    expect(warnings).toEqual(["stream finished with content blocks still open; closed them"]);
  });

  test("the official SDK raises an in-stream error event as an API error", async () => {
    const parts: IrStreamPart[] = [head, { type: "text-start", id: "x" }, { type: "error", error: irError("overloaded", "Overloaded") }];
    const client = sdk(() => new Response(streamOf(parts).pipeThrough(createStreamEncoder(BASE_REQUEST, () => {})), { headers: SSE_HEADERS }));
    const stream = client.messages.stream({ model: "m", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] });
    expect(await rejection(stream.finalMessage())).toMatchObject({ error: { type: "error", error: { type: "overloaded_error" } } });
  });
});

// ---- request decode: 400s naming the member ------------------------------------------------------------

describe("request decode rejects bad members with a 400 naming them", () => {
  const cases: [string, unknown, string][] = [
    ["missing max_tokens, in Anthropic's words", { model: "m", messages: [{ role: "user", content: "Hi" }] }, "max_tokens: Field required"],
    ["max_tokens not an integer", body({ max_tokens: 1.5 }), "max_tokens: Input should be a valid integer"],
    ["a block type that is not a string", body({ messages: [{ role: "user", content: "Hi" }, { role: "user", content: [{ type: 7 }] }] }), "messages[1].content[0].type: Input should be a valid string"],
    ["a text block without text", body({ messages: [{ role: "user", content: [{ type: "text" }] }] }), "messages[0].content[0].text: Field required"],
    ["an unknown role", body({ messages: [{ role: "robot", content: "Hi" }] }), "messages[0].role: Input should be 'user' or 'assistant'"],
    ["content neither string nor list", body({ messages: [{ role: "user", content: 5 }] }), "messages[0].content: Input should be a valid string or a list of content blocks"],
    ["tool_use input not an object", body({ messages: [{ role: "assistant", content: [{ type: "tool_use", id: "t", name: "f", input: "x" }] }] }), "messages[0].content[0].input: Input should be a valid dictionary"],
    ["tool_result without tool_use_id", body({ messages: [{ role: "user", content: [{ type: "tool_result", content: "x" }] }] }), "messages[0].content[0].tool_use_id: Field required"],
    ["an image source of a type images do not have", body({ messages: [{ role: "user", content: [{ type: "image", source: { type: "text", data: "x" } }] }] }), "messages[0].content[0].source.type: Input should be 'base64', 'url' or 'file'"],
    ["a base64 source without data", body({ messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png" } }] }] }), "messages[0].content[0].source.data: Field required"],
    ["system of the wrong type", body({ system: 3 }), "system: Input should be a valid string or a list of text blocks"],
    ["a tool without input_schema", body({ tools: [{ name: "f" }] }), "tools[0].input_schema: Field required"],
    ["tool_choice tool without a name", body({ tool_choice: { type: "tool" } }), "tool_choice.name: Field required"],
    ["an unknown tool_choice type", body({ tool_choice: { type: "sometimes" } }), "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'"],
    ["thinking enabled without a budget", body({ thinking: { type: "enabled" } }), "thinking.budget_tokens: Field required"],
    ["stop_sequences not strings", body({ stop_sequences: ["a", 1] }), "stop_sequences[1]: Input should be a valid string"],
    ["temperature not a number", body({ temperature: "hot" }), "temperature: Input should be a valid number"],
  ];
  for (const [name, wire, message] of cases) {
    test(name, () => {
      const error = decodeFail(wire);
      expect(error.message).toBe(message);
      expect(error.kind).toBe("invalid_request");
      expect(error.status).toBe(400);
      expect(error.param).toBe(message.slice(0, message.indexOf(":")));
    });
  }

  test("a body that is not an object", () => {
    expect(decodeFail([1])).toMatchObject({ kind: "invalid_request", message: "Input should be a valid dictionary" });
  });

  test("the 400 goes out in Anthropic's shape, and the SDK raises BadRequestError", async () => {
    const response = anthropic.encodeError(decodeFail({ model: "m", messages: [] }));
    expect(response.status).toBe(400);
    expect(await response.clone().json()).toEqual({ type: "error", error: { type: "invalid_request_error", message: "max_tokens: Field required" } });
    expect(await rejection(sdk(() => response).messages.create({ model: "m", max_tokens: 1, messages: [] }))).toBeInstanceOf(BadRequestError);
  });
});

// ---- request decode: mapping and warnings ----------------------------------------------------------------

describe("request decode", () => {
  test("system as string or text blocks; a system turn in messages joins the IR system (Claude Code)", () => {
    const decoded = decodeOk(body({ system: [{ type: "text", text: "A" }, { type: "text", text: "B" }], messages: [{ role: "system", content: "C" }, { role: "user", content: "Hi" }] }));
    expect(decoded.value.system).toEqual([{ type: "text", text: "A" }, { type: "text", text: "B" }, { type: "text", text: "C" }]);
    expect(decoded.value.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Hi" }] }]);
    expect(decodeOk(body({ system: "S" })).value.system).toEqual([{ type: "text", text: "S" }]);
  });

  test("tool_result blocks become an IR tool message before the rest of their user turn, in order", () => {
    const decoded = decodeOk(
      body({
        messages: [
          { role: "user", content: "Go" },
          { role: "assistant", content: [{ type: "tool_use", id: "a", name: "f", input: {} }, { type: "tool_use", id: "b", name: "g", input: { x: 1 } }] },
          {
            role: "user",
            content: [
              { type: "text", text: "Results follow" },
              { type: "tool_result", tool_use_id: "a", content: [{ type: "text", text: "one" }, { type: "image", source: { type: "url", url: "https://x/i.png" } }] },
              { type: "tool_result", tool_use_id: "b", content: "boom", is_error: true },
              { type: "tool_result", tool_use_id: "c" },
            ],
          },
        ],
      }),
    );
    expect(decoded.value.messages.slice(2)).toEqual([
      {
        role: "tool",
        content: [
          { type: "tool_result", toolCallId: "a", content: [{ type: "text", text: "one" }, { type: "image", source: { kind: "url", url: "https://x/i.png" } }] },
          { type: "tool_result", toolCallId: "b", content: [{ type: "text", text: "boom" }], isError: true },
          { type: "tool_result", toolCallId: "c", content: [] },
        ],
      },
      { role: "user", content: [{ type: "text", text: "Results follow" }] },
    ]);
    expect(decoded.value.messages[1]).toEqual({ role: "assistant", content: [{ type: "tool_call", id: "a", name: "f", arguments: "{}" }, { type: "tool_call", id: "b", name: "g", arguments: '{"x":1}' }] });
  });

  test("a document inside a tool_result cannot be carried: dropped with a warning, the text kept", () => {
    const decoded = decodeOk(body({ messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "a", content: [{ type: "text", text: "see doc" }, { type: "document", source: { type: "text", media_type: "text/plain", data: "x" } }] }] }] }));
    expect(decoded.value.messages).toEqual([{ role: "tool", content: [{ type: "tool_result", toolCallId: "a", content: [{ type: "text", text: "see doc" }] }] }]);
    expect(decoded.warnings).toEqual(["document block in tool_result dropped at messages[0].content[0].content[1]: a tool result carries only text and images in the IR"]);
  });

  test("documents: base64 PDF, URL and plain text (carried as base64 text/plain), with title", () => {
    const decoded = decodeOk(
      body({
        messages: [
          {
            role: "user",
            content: [
              { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERi0" }, title: "Report" },
              { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } },
              { type: "document", source: { type: "text", media_type: "text/plain", data: "The grass is green." } },
            ],
          },
        ],
      }),
    );
    expect(decoded.value.messages[0]?.content).toEqual([
      { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0" }, title: "Report" },
      { type: "document", source: { kind: "url", url: "https://example.com/a.pdf" } },
      { type: "document", source: { kind: "base64", mediaType: "text/plain", data: Buffer.from("The grass is green.").toString("base64") } },
    ]);
    // and back: the plain-text document is a text source again
    const back = encodedBody(decoded.value) as { messages: { content: unknown[] }[] };
    expect(back.messages[0]?.content[2]).toEqual({ type: "document", source: { type: "text", media_type: "text/plain", data: "The grass is green." } });
  });

  test("thinking and redacted_thinking in an assistant turn keep signature and data", () => {
    const decoded = decodeOk(body({ messages: [{ role: "user", content: "Q" }, { role: "assistant", content: [{ type: "thinking", thinking: "t", signature: "s" }, { type: "redacted_thinking", data: "d" }, { type: "text", text: "A" }] }] }));
    expect(decoded.value.messages[1]).toEqual({ role: "assistant", content: [{ type: "reasoning", text: "t", signature: "s" }, { type: "reasoning", text: "", redactedData: "d" }, { type: "text", text: "A" }] });
  });

  test("tool_choice: auto, any -> required, none, tool + name; disable_parallel_tool_use -> no parallel calls", () => {
    const choice = (c: unknown) => decodeOk(body({ tool_choice: c })).value;
    expect(choice({ type: "auto" })).toMatchObject({ toolChoice: { type: "auto" } });
    expect(choice({ type: "auto" }).parallelToolCalls).toBeUndefined();
    expect(choice({ type: "any", disable_parallel_tool_use: true })).toMatchObject({ toolChoice: { type: "required" }, parallelToolCalls: false });
    expect(choice({ type: "none" })).toMatchObject({ toolChoice: { type: "none" } });
    expect(choice({ type: "tool", name: "f" })).toMatchObject({ toolChoice: { type: "tool", name: "f" } });
  });

  test("sampling, stop sequences, metadata.user_id and stream", () => {
    const value = decodeOk(body({ temperature: 0.5, top_p: 0.9, top_k: 40, stop_sequences: ["END"], metadata: { user_id: "u-1" }, stream: true })).value;
    expect(value.sampling).toEqual({ maxTokens: 256, temperature: 0.5, topP: 0.9, topK: 40, stop: ["END"] });
    expect(value.user).toBe("u-1");
    expect(value.stream).toBe(true);
  });

  test("thinking: enabled -> budget, adaptive -> reasoning the model sizes (with effort), disabled -> none", () => {
    expect(decodeOk(body({ thinking: { type: "enabled", budget_tokens: 2048 } })).value.reasoning).toEqual({ budgetTokens: 2048 });
    expect(decodeOk(body({ thinking: { type: "adaptive" } })).value.reasoning).toEqual({});
    expect(decodeOk(body({ thinking: { type: "adaptive" }, output_config: { effort: "low" } })).value.reasoning).toEqual({ effort: "low" });
    expect(decodeOk(body({ thinking: { type: "disabled" } })).value.reasoning).toBeUndefined();
    const shown = decodeOk(body({ thinking: { type: "enabled", budget_tokens: 2048, display: "omitted" } }));
    expect(shown.warnings).toEqual(["display dropped at thinking.display: not modelled by the gateway's IR"]);
    const later = decodeOk(body({ thinking: { type: "between_tools" } }));
    expect(later.value.reasoning).toEqual({});
    expect(later.warnings).toEqual(["thinking.type between_tools carried as reasoning the model sizes itself"]);
    const max = decodeOk(body({ thinking: { type: "adaptive" }, output_config: { effort: "max" } }));
    expect(max.value.reasoning).toEqual({ effort: "high" });
    expect(max.warnings).toEqual(["output_config.effort max clamped to high, the IR's highest effort"]);
  });

  test("output_config.format json_schema -> IR response format", () => {
    const schema = { type: "object", properties: { name: { type: "string" } }, required: ["name"], additionalProperties: false };
    expect(decodeOk(body({ output_config: { format: { type: "json_schema", schema } } })).value.responseFormat).toEqual({ type: "json_schema", schema });
  });

  test("members the IR does not model are dropped with one warning per kind, naming where", () => {
    const decoded = decodeOk({
      ...body(),
      system: [{ type: "text", text: "S", cache_control: { type: "ephemeral" } }],
      container: "container_1",
      mcp_servers: [{ type: "url", url: "https://mcp.example.com", name: "x" }],
      tools: [
        { name: "f", input_schema: { type: "object" }, cache_control: { type: "ephemeral" } },
        { type: "web_search_20250305", name: "web_search", max_uses: 5 },
      ],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Hi", cache_control: { type: "ephemeral" } },
            { type: "image", source: { type: "file", file_id: "file_1" } },
            { type: "search_result", source: "s", title: "t", content: [] },
          ],
        },
      ],
    });
    expect([...decoded.warnings].sort()).toEqual(
      [
        "cache_control dropped at system[0].cache_control (and 2 more): prompt caching is Anthropic-only",
        "container dropped: containers are Anthropic-only",
        "mcp_servers dropped: MCP servers are Anthropic-only",
        "server tool web_search_20250305 dropped at tools[1]: server tools run only at Anthropic",
        "file source dropped at messages[0].content[1].source: its block was dropped; only base64, url and plain-text sources cross protocols",
        "search_result block dropped at messages[0].content[2]: this content block type is not modelled by the gateway's IR",
      ].sort(),
    );
    expect(decoded.value.tools.map((t) => t.name)).toEqual(["f"]);
    expect(decoded.value.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Hi" }] }]);
  });
});

// ---- request encode (an IR from another protocol -> Anthropic) ---------------------------------------------

describe("request encode", () => {
  test("tool results become tool_result blocks in a user turn that the next user message joins", () => {
    const encoded = encode(
      ir({
        messages: [
          { role: "user", content: [{ type: "text", text: "Go" }] },
          { role: "assistant", content: [{ type: "text", text: "" }, { type: "tool_call", id: "a", name: "f", arguments: "{}" }, { type: "tool_call", id: "b", name: "f", arguments: '{"n":2}' }] },
          { role: "tool", content: [{ type: "tool_result", toolCallId: "a", content: [{ type: "text", text: "1" }] }] },
          { role: "tool", content: [{ type: "tool_result", toolCallId: "b", content: [], isError: true }] },
          { role: "user", content: [{ type: "text", text: "Thanks" }] },
        ],
      }),
    );
    expect((encoded.body as { messages: unknown }).messages).toEqual([
      { role: "user", content: "Go" },
      { role: "assistant", content: [{ type: "tool_use", id: "a", name: "f", input: {} }, { type: "tool_use", id: "b", name: "f", input: { n: 2 } }] },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "a", content: "1" },
          { type: "tool_result", tool_use_id: "b", is_error: true },
          { type: "text", text: "Thanks" },
        ],
      },
    ]);
    expect(encoded.warnings).toEqual([]);
  });

  test("max_tokens defaults to 4096 with a warning when the IR has none", () => {
    const encoded = encode(ir({ sampling: {} }));
    expect((encoded.body as { max_tokens: number }).max_tokens).toBe(4096);
    expect(encoded.warnings).toEqual(["max_tokens defaulted to 4096: Anthropic requires it"]);
  });

  test("reasoning effort -> thinking budget by the documented thresholds, max_tokens kept above it", () => {
    const budgets = (["minimal", "low", "medium", "high"] as const).map((effort) => {
      const b = encodedBody(ir({ sampling: { maxTokens: 32000 }, reasoning: { effort } }));
      return (b.thinking as { budget_tokens: number }).budget_tokens;
    });
    expect(budgets).toEqual([1024, 2048, 8192, 16384]);
    const encoded = encode(ir({ sampling: { maxTokens: 1000 }, reasoning: { effort: "medium" } }));
    expect(encoded.body).toMatchObject({ thinking: { type: "enabled", budget_tokens: 8192 }, max_tokens: 9192 });
    expect(encoded.warnings).toEqual(["max_tokens raised from 1000 to 9192 to stay above thinking.budget_tokens 8192"]);
  });

  test("a budget below Anthropic's minimum is raised to 1024; reasoning without budget or effort is adaptive", () => {
    const low = encode(ir({ sampling: { maxTokens: 8000 }, reasoning: { budgetTokens: 100 } }));
    expect(low.body).toMatchObject({ thinking: { type: "enabled", budget_tokens: 1024 } });
    expect(low.warnings).toEqual(["thinking budget 100 raised to 1024, Anthropic's minimum"]);
    expect(encodedBody(ir({ reasoning: {} })).thinking).toEqual({ type: "adaptive" });
  });

  test("with thinking on, temperature and top_k are dropped and top_p raised to 0.95, with warnings", () => {
    const encoded = encode(ir({ sampling: { maxTokens: 20000, temperature: 0.2, topP: 0.5, topK: 5 }, reasoning: { budgetTokens: 4000 } }));
    expect(encoded.body).toMatchObject({ top_p: 0.95 });
    expect((encoded.body as Record<string, unknown>).temperature).toBeUndefined();
    expect((encoded.body as Record<string, unknown>).top_k).toBeUndefined();
    expect(encoded.warnings).toEqual([
      "temperature dropped: Anthropic does not accept it with thinking on",
      "top_p 0.5 raised to 0.95, the lowest Anthropic accepts with thinking on",
      "top_k dropped: Anthropic does not accept it with thinking on",
    ]);
  });

  test("a forced tool choice drops reasoning (Anthropic does not allow both)", () => {
    const encoded = encode(ir({ tools: [{ name: "f", parameters: { type: "object" } }], toolChoice: { type: "required" }, reasoning: { effort: "high" } }));
    expect((encoded.body as Record<string, unknown>).thinking).toBeUndefined();
    expect(encoded.warnings).toEqual(["reasoning dropped: Anthropic does not allow thinking with a forced tool_choice"]);
  });

  test("tool choice: required -> any, parallel off -> disable_parallel_tool_use, none keeps no flag", () => {
    const tools = [{ name: "f", parameters: {} }];
    expect(encodedBody(ir({ tools, toolChoice: { type: "required" }, parallelToolCalls: false })).tool_choice).toEqual({ type: "any", disable_parallel_tool_use: true });
    expect(encodedBody(ir({ tools, parallelToolCalls: false })).tool_choice).toEqual({ type: "auto", disable_parallel_tool_use: true });
    expect(encodedBody(ir({ tools, toolChoice: { type: "tool", name: "f" } })).tool_choice).toEqual({ type: "tool", name: "f" });
    expect(encodedBody(ir({ tools, toolChoice: { type: "none" }, parallelToolCalls: false })).tool_choice).toEqual({ type: "none" });
    // a tool that takes nothing still gets the object schema Anthropic requires
    expect(encodedBody(ir({ tools })).tools).toEqual([{ name: "f", input_schema: { type: "object" } }]);
    const noTools = encode(ir({ toolChoice: { type: "required" } }));
    expect((noTools.body as Record<string, unknown>).tool_choice).toBeUndefined();
    expect(noTools.warnings).toEqual(["tool_choice required dropped: the request has no tools"]);
  });

  test("reasoning from another vendor (no signature) is dropped; signed and redacted reasoning go back", () => {
    const encoded = encode(
      ir({
        messages: [
          { role: "user", content: [{ type: "text", text: "Q" }] },
          { role: "assistant", content: [{ type: "reasoning", text: "theirs" }, { type: "reasoning", text: "ours", signature: "sig" }, { type: "reasoning", text: "", redactedData: "d" }, { type: "text", text: "A" }] },
        ],
      }),
    );
    expect((encoded.body as { messages: unknown[] }).messages[1]).toEqual({
      role: "assistant",
      content: [{ type: "thinking", thinking: "ours", signature: "sig" }, { type: "redacted_thinking", data: "d" }, { type: "text", text: "A" }],
    });
    expect(encoded.warnings).toEqual(["reasoning without a signature (from another vendor) dropped: Anthropic accepts only its own signed thinking"]);
  });

  test("json_schema -> output_config.format; schema-less JSON mode dropped with a warning", () => {
    const schema = { type: "object", properties: { a: { type: "string" } } };
    expect(encodedBody(ir({ responseFormat: { type: "json_schema", name: "out", schema } })).output_config).toEqual({ format: { type: "json_schema", schema } });
    const json = encode(ir({ responseFormat: { type: "json" } }));
    expect((json.body as Record<string, unknown>).output_config).toBeUndefined();
    expect(json.warnings).toEqual(["response_format json dropped: Anthropic's output_config.format needs a JSON schema"]);
  });

  test("seed and penalties dropped with warnings; temperature above 1 clamped; stop, user, stream mapped", () => {
    const encoded = encode(ir({ sampling: { maxTokens: 100, seed: 7, frequencyPenalty: 0.5, presencePenalty: 0.1, temperature: 1.5, stop: ["###"] }, user: "u-9", stream: true }));
    expect(encoded.body).toMatchObject({ temperature: 1, stop_sequences: ["###"], metadata: { user_id: "u-9" }, stream: true });
    expect(encoded.warnings).toEqual([
      "temperature 1.5 clamped to 1, Anthropic's maximum",
      "seed dropped: Anthropic has no seed",
      "frequency_penalty dropped: Anthropic has no frequency penalty",
      "presence_penalty dropped: Anthropic has no presence penalty",
    ]);
  });

  test("several system parts go as text blocks; tool arguments that are not a JSON object are replaced, with a warning", () => {
    const encoded = encode(
      ir({
        system: [{ type: "text", text: "A" }, { type: "text", text: "B" }],
        messages: [{ role: "user", content: [{ type: "text", text: "Q" }] }, { role: "assistant", content: [{ type: "tool_call", id: "a", name: "f", arguments: "{broken" }] }],
      }),
    );
    expect(encoded.body).toMatchObject({ system: [{ type: "text", text: "A" }, { type: "text", text: "B" }] });
    expect((encoded.body as { messages: unknown[] }).messages[1]).toEqual({ role: "assistant", content: [{ type: "tool_use", id: "a", name: "f", input: {} }] });
    expect(encoded.warnings).toEqual(['tool call arguments are not a JSON object; sent input {} instead of "{broken"']);
  });

  test("documents Anthropic cannot read are dropped with a warning", () => {
    const encoded = encode(ir({ messages: [{ role: "user", content: [{ type: "text", text: "Read" }, { type: "document", source: { kind: "base64", mediaType: "application/msword", data: "AA" } }] }] }));
    expect((encoded.body as { messages: unknown[] }).messages).toEqual([{ role: "user", content: "Read" }]);
    expect(encoded.warnings).toEqual(["document of type application/msword dropped: Anthropic takes PDF and plain-text documents"]);
  });
});

// ---- responses: stop reasons, usage, loss ------------------------------------------------------------------

describe("response mapping", () => {
  const message = (extra: Record<string, unknown>) => ({ id: "msg_1", type: "message", role: "assistant", model: "m", content: [], stop_reason: "end_turn", stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 }, ...extra });
  const decodedFinish = (stopReason: string, stopSequence: string | null = null) => {
    const decoded = decodeResponse(message({ stop_reason: stopReason, stop_sequence: stopSequence }), clock);
    if (!decoded.ok) throw new Error(decoded.error.message);
    return decoded.value;
  };

  test("every stop_reason maps to its unified finish and back to itself", () => {
    const table: [string, IrFinishUnified][] = [
      ["end_turn", "stop"],
      ["max_tokens", "length"],
      ["stop_sequence", "stop"],
      ["tool_use", "tool_calls"],
      ["pause_turn", "pause"],
      ["refusal", "content_filter"],
      ["model_context_window_exceeded", "length"],
    ];
    for (const [wire, unified] of table) {
      const value = decodedFinish(wire, wire === "stop_sequence" ? "END" : null);
      expect(value.finishReason.unified).toBe(unified);
      expect(encodeResponse(value, () => {})).toMatchObject({ stop_reason: wire, stop_sequence: wire === "stop_sequence" ? "END" : null });
    }
    expect(decodedFinish("stop_sequence", "END").finishReason).toEqual({ unified: "stop", raw: "stop_sequence", stopSequence: "END" });
  });

  test("another protocol's finish reasons map to Anthropic's words", () => {
    const base: IrResponse = { id: "x", model: "gpt", created: 1, content: [{ type: "text", text: "hi" }], finishReason: { unified: "stop", raw: "stop" }, usage: { inputNoCache: 1, inputCacheRead: 0, inputCacheWrite: 0, output: 1, outputReasoning: 0 } };
    const stop = (finishReason: IrResponse["finishReason"], warnings: string[] = []) => (encodeResponse({ ...base, finishReason }, (w) => warnings.push(w)) as { stop_reason: string }).stop_reason;
    expect(stop({ unified: "stop", raw: "stop" })).toBe("end_turn");
    expect(stop({ unified: "length", raw: "length" })).toBe("max_tokens");
    expect(stop({ unified: "tool_calls", raw: "tool_calls" })).toBe("tool_use");
    expect(stop({ unified: "content_filter", raw: "content_filter" })).toBe("refusal");
    const warnings: string[] = [];
    expect(stop({ unified: "error", raw: "error" }, warnings)).toBe("end_turn");
    expect(warnings).toEqual(["finish reason error has no Anthropic stop_reason; sent end_turn"]);
  });

  test("usage: input_tokens excludes cache tokens, which the IR keeps apart; thinking tokens are reasoning", () => {
    const decoded = decodeResponse(message({ usage: { input_tokens: 21, cache_read_input_tokens: 188086, cache_creation_input_tokens: 0, output_tokens: 393, output_tokens_details: { thinking_tokens: 120 } } }), clock);
    if (!decoded.ok) throw new Error(decoded.error.message);
    expect(decoded.value.usage).toEqual({ inputNoCache: 21, inputCacheRead: 188086, inputCacheWrite: 0, output: 393, outputReasoning: 120 });
    expect((encodeResponse(decoded.value, () => {}) as { usage: unknown }).usage).toEqual({ input_tokens: 21, cache_creation_input_tokens: 0, cache_read_input_tokens: 188086, output_tokens: 393, output_tokens_details: { thinking_tokens: 120 } });
    expect(anthropic.usageFromResponse(message({ usage: { input_tokens: 5, cache_creation_input_tokens: 7, output_tokens: 2 } }))).toEqual({ inputNoCache: 5, inputCacheWrite: 7, output: 2 });
    expect(anthropic.usageFromResponse({ nothing: true })).toBeUndefined();
  });

  test("a tool_use response decodes to a tool call and encodes back with its input object", () => {
    const wire = message({ stop_reason: "tool_use", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { location: "Paris" } }] });
    const decoded = decodeResponse(wire, clock);
    if (!decoded.ok) throw new Error(decoded.error.message);
    expect(decoded.value.content).toEqual([{ type: "tool_call", id: "toolu_1", name: "get_weather", arguments: '{"location":"Paris"}' }]);
    expect((encodeResponse(decoded.value, () => {}) as { content: unknown }).content).toEqual([{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { location: "Paris" } }]);
  });

  test("server tool blocks in a response are dropped with a warning", () => {
    const decoded = decodeResponse(message({ content: [{ type: "server_tool_use", id: "s", name: "web_search", input: {} }, { type: "text", text: "ok", citations: null }] }), clock);
    if (!decoded.ok) throw new Error(decoded.error.message);
    expect(decoded.value.content).toEqual([{ type: "text", text: "ok" }]);
    expect(decoded.warnings).toEqual(["server_tool_use block dropped at content[0]: this content block type is not modelled by the gateway's IR"]);
  });

  test("another vendor's reasoning is shown to the client as thinking with an empty signature", () => {
    const value: IrResponse = { id: "x", model: "m", created: 1, content: [{ type: "reasoning", text: "mull" }, { type: "text", text: "A" }], finishReason: { unified: "stop" }, usage: { inputNoCache: 0, inputCacheRead: 0, inputCacheWrite: 0, output: 0, outputReasoning: 0 } };
    expect((encodeResponse(value, () => {}) as { content: unknown }).content).toEqual([{ type: "thinking", thinking: "mull", signature: "" }, { type: "text", text: "A" }]);
  });

  test("a malformed upstream message is the upstream's fault: api_error, transient", () => {
    const decoded = decodeResponse({ id: "msg_1", content: "nope" }, clock);
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.error).toMatchObject({ kind: "api_error", status: 502, failure: "transient" });
  });
});

// ---- errors -------------------------------------------------------------------------------------------------

describe("errors", () => {
  test("error fixture: decode -> IR error, IR -> encode (normalised: no request_id)", async () => {
    const f = fixture<ErrorFixture>("error");
    expect(decodeError(f.status, JSON.stringify(f.wire), new Headers())).toEqual(f.ir);
    const response = encodeError(irError("not_found", "The requested resource could not be found."));
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual(f.encoded);
  });

  const table: [string, IrError, number, string, string | null][] = [
    ["bad credential", irError("authentication", "invalid x-api-key"), 401, "authentication_error", null],
    ["pool not allowed", irError("permission", "not allowed"), 403, "permission_error", null],
    ["unknown model", irError("not_found", "model: nope"), 404, "not_found_error", null],
    ["body too large", irError("request_too_large", "Request exceeds the maximum allowed number of bytes."), 413, "request_too_large", null],
    ["rate limit", irError("rate_limit", "slow down", { retryAfterSecs: 7 }), 429, "rate_limit_error", "7"],
    ["budget exhausted", irError("insufficient_quota", "budget exhausted"), 429, "insufficient_quota", null],
    ["pool exhausted", irError("overloaded", "Overloaded", { retryAfterSecs: 2.2 }), 529, "overloaded_error", "3"],
    ["malformed body", irError("invalid_request", "messages: Field required"), 400, "invalid_request_error", null],
    ["internal", irError("api_error", "boom"), 500, "api_error", null],
  ];
  for (const [name, error, status, type, retryAfter] of table) {
    test(`encodeError: ${name} -> ${status} ${type}`, async () => {
      const response = encodeError(error);
      expect(response.status).toBe(status);
      expect(response.headers.get("retry-after")).toBe(retryAfter);
      expect(await response.json()).toEqual({ type: "error", error: { type, message: error.message } });
    });
  }

  test("the official SDK raises its own typed errors from them", async () => {
    const create = (error: IrError) => rejection(sdk(() => encodeError(error)).messages.create({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "Hi" }] }));
    expect(await create(irError("authentication", "bad key"))).toBeInstanceOf(AuthenticationError);
    expect(await create(irError("permission", "no"))).toBeInstanceOf(PermissionDeniedError);
    expect(await create(irError("not_found", "no model"))).toBeInstanceOf(NotFoundError);
    expect(await create(irError("rate_limit", "slow", { retryAfterSecs: 1 }))).toBeInstanceOf(RateLimitError);
    expect(await create(irError("insufficient_quota", "budget"))).toMatchObject({ status: 429, type: "insufficient_quota" });
    expect(await create(irError("insufficient_quota", "budget"))).toBeInstanceOf(RateLimitError);
    expect(await create(irError("overloaded", "busy"))).toBeInstanceOf(OverloadedError);
  });

  const wire = (type: string, message: string, extra: Record<string, unknown> = {}) => JSON.stringify({ type: "error", error: { type, message, ...extra } });
  const classes: [string, number, string, Headers, Partial<IrError>][] = [
    ["prompt too long -> context_length", 400, wire("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"), new Headers(), { kind: "invalid_request", failure: "context_length" }],
    ["context window -> context_length", 400, wire("invalid_request_error", "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000"), new Headers(), { failure: "context_length" }],
    ["credit balance too low -> quota", 400, wire("invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."), new Headers(), { kind: "insufficient_quota", failure: "quota" }],
    ["billing_error -> quota", 402, wire("billing_error", "billing problem"), new Headers(), { kind: "insufficient_quota", failure: "quota" }],
    ["401 -> credential", 401, wire("authentication_error", "invalid x-api-key"), new Headers(), { kind: "authentication", failure: "credential" }],
    ["403 -> credential", 403, wire("permission_error", "no access"), new Headers(), { kind: "permission", failure: "credential" }],
    ["429 -> rate_limit with retry-after", 429, wire("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), new Headers({ "retry-after": "12" }), { kind: "rate_limit", failure: "rate_limit", retryAfterSecs: 12 }],
    ["429 spend limit -> quota", 429, wire("rate_limit_error", "spend limit reached", { details: { error_code: "enforced_spend_limit_reached" } }), new Headers(), { failure: "quota" }],
    ["500 -> transient", 500, wire("api_error", "Internal server error"), new Headers(), { kind: "api_error", failure: "transient" }],
    ["529 -> transient", 529, wire("overloaded_error", "Overloaded"), new Headers({ "retry-after": "5" }), { kind: "overloaded", failure: "transient", retryAfterSecs: 5 }],
    ["503 not JSON -> transient", 503, "upstream connect error", new Headers(), { kind: "overloaded", failure: "transient", message: "upstream connect error" }],
    ["404 -> caller", 404, wire("not_found_error", "model: claude-x"), new Headers(), { kind: "not_found", failure: "caller" }],
    ["413 -> caller", 413, wire("request_too_large", "Request exceeds the maximum allowed number of bytes."), new Headers(), { kind: "request_too_large", failure: "caller" }],
    ["other 400 -> caller", 400, wire("invalid_request_error", "messages: roles must alternate"), new Headers(), { kind: "invalid_request", failure: "caller", code: "invalid_request_error" }],
  ];
  for (const [name, status, text, headers, expected] of classes) {
    test(`decodeError: ${name}`, () => {
      expect(decodeError(status, text, headers)).toMatchObject({ status, ...expected });
    });
  }

  test("retry-after as an HTTP date counts from the injected clock", () => {
    const at = new Date(NOW_MS + 30_000).toUTCString();
    expect(decodeError(429, wire("rate_limit_error", "slow"), new Headers({ "retry-after": at }), clock).retryAfterSecs).toBe(30);
  });
});

// ---- the adapter object ---------------------------------------------------------------------------------------

describe("adapter", () => {
  const request = (headers: Record<string, string>) => new Request("http://gateway.test/v1/messages", { method: "POST", headers });

  test("client credential: x-api-key, else Authorization: Bearer", () => {
    expect(anthropic.clientCredential(request({ "x-api-key": "sk-a" }))).toBe("sk-a");
    expect(anthropic.clientCredential(request({ authorization: "Bearer tok" }))).toBe("tok");
    expect(anthropic.clientCredential(request({ "x-api-key": "sk-a", authorization: "Bearer tok" }))).toBe("sk-a");
    expect(anthropic.clientCredential(request({ authorization: "Basic abc" }))).toBeUndefined();
    expect(anthropic.clientCredential(request({}))).toBeUndefined();
  });

  test("egress headers, path and model rewrite", () => {
    expect(anthropic.name).toBe("anthropic");
    expect(anthropic.authHeaders("sk-up")).toEqual({ "x-api-key": "sk-up", "anthropic-version": "2023-06-01" });
    expect(anthropic.upstreamPath("claude-x", true)).toBe("/v1/messages");
    expect(anthropic.rewriteModel({ model: "pool", unknown_member: 1 }, "claude-x")).toEqual({ model: "claude-x", unknown_member: 1 });
    expect(anthropic.streamHeaders["content-type"]).toBe("text/event-stream; charset=utf-8");
  });
});
