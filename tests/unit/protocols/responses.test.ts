// The OpenAI Responses adapter: golden fixtures from OpenAI's API reference and guides both ways, streams
// fed in awkward byte chunks, the in-stream failure forms, the 400s for state stored at OpenAI, the
// warnings for what cannot cross protocols, and the official SDK (openai) reading what the encoders write.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI, { AuthenticationError, BadRequestError, InternalServerError, NotFoundError, PermissionDeniedError, RateLimitError } from "openai";
import { irError, type IrError, type IrRequest, type IrResponse, type IrStreamPart } from "../../../src/ir/index.ts";
import { responses } from "../../../src/protocols/responses/index.ts";
import { decodeError, encodeError, failureOf } from "../../../src/protocols/responses/errors.ts";
import { responseObject } from "../../../src/protocols/responses/response.ts";
import { sseDecoder, SSE_HEADERS } from "../../../src/transport/sse.ts";
import { bytesOf, pieces, readAll, streamOf } from "../../support/streams.ts";
import { parserTransform } from "../../../src/transport/push-parser.ts";

// ---- helpers -----------------------------------------------------------------------------------------

const FIXTURES = join(import.meta.dir, "../../fixtures/protocols/responses");
const fixture = <T>(name: string): T => JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), "utf8")) as T;

interface RequestFixture {
  source: string;
  wire: Record<string, unknown> & { model: string };
  ir: IrRequest;
  warnings: string[];
  encoded: unknown;
  encodeWarnings: string[];
}
interface ResponseFixture {
  source: string;
  wire: Record<string, unknown>;
  ir: IrResponse;
  warnings: string[];
  encoded: Record<string, unknown>;
  encodeWarnings: string[];
}
type WireEvent = { event: string; data: Record<string, unknown> };
interface StreamFixture {
  source: string;
  wire: string;
  request: Record<string, unknown>;
  ir: IrStreamPart[];
  encoded: WireEvent[];
  encodeWarnings: string[];
  text?: string;
  toolArguments?: string;
}

const decodeChunks = (chunks: readonly Uint8Array[]) => readAll(streamOf(chunks).pipeThrough(parserTransform(responses.createStreamParser())));
const decodeText = (text: string) => decodeChunks([bytesOf(text)]);
/** Upstream events as SSE, the way OpenAI frames them. */
const sse = (...events: Record<string, unknown>[]) => events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("");

const BASE_REQUEST: IrRequest = { model: "gpt-5.4", system: [], messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], tools: [], sampling: {}, stream: true, includeUsage: true };

function encodeBytes(parts: readonly IrStreamPart[], warnings: string[] = [], request: IrRequest = BASE_REQUEST): ReadableStream<Uint8Array> {
  return streamOf(parts).pipeThrough(responses.createStreamEncoder(request, (w) => warnings.push(w)));
}
async function encodeParts(parts: readonly IrStreamPart[], warnings: string[] = [], request: IrRequest = BASE_REQUEST): Promise<WireEvent[]> {
  const events = await readAll(encodeBytes(parts, warnings, request).pipeThrough(sseDecoder()));
  return events.map((e) => ({ event: e.event ?? "", data: JSON.parse(e.data) as Record<string, unknown> }));
}

function decodeOk(wire: unknown) {
  const decoded = responses.decodeRequest(wire, {});
  if (!decoded.ok) throw new Error(`expected a decode, got ${decoded.error.message}`);
  return decoded;
}
function decodeFail(wire: unknown): IrError {
  const decoded = responses.decodeRequest(wire, {});
  if (decoded.ok) throw new Error("expected a 400");
  return decoded.error;
}
const body = (extra: Record<string, unknown> = {}) => ({ model: "gpt-5.4", input: "Hi", ...extra });
const ir = (extra: Partial<IrRequest> = {}): IrRequest => ({ ...BASE_REQUEST, stream: false, includeUsage: undefined, ...extra });
const encode = (request: IrRequest) => responses.encodeRequest(request, "gpt-upstream");
const encodedBody = (request: IrRequest) => encode(request).body as Record<string, unknown>;

const ZERO = { inputNoCache: 0, inputCacheRead: 0, inputCacheWrite: 0, output: 0, outputReasoning: 0 };
const irResponse = (extra: Partial<IrResponse> = {}): IrResponse => ({ id: "resp_1", model: "m", created: 1, content: [{ type: "text", text: "hi" }], finishReason: { unified: "stop" }, usage: ZERO, ...extra });
const rejection = (promise: PromiseLike<unknown>): Promise<unknown> => Promise.resolve(promise).then(() => "resolved", (error: unknown) => error);
/** An OpenAI SDK client whose every request gets `answer()`. */
const sdk = (answer: () => Response) => new OpenAI({ apiKey: "sk-test", baseURL: "http://gateway.test/v1", maxRetries: 0, fetch: async () => answer() });

// ---- fixtures: requests ------------------------------------------------------------------------------

describe("request fixtures, both directions", () => {
  for (const name of ["text-request", "image-request", "tools-request"]) {
    const f = fixture<RequestFixture>(name);
    test(`${name}: decode -> IR, no warnings`, () => {
      const decoded = decodeOk(f.wire);
      expect(decoded.value).toEqual(f.ir);
      expect(decoded.warnings).toEqual(f.warnings);
    });
    test(`${name}: IR -> encode equals the stated normalised wire form`, () => {
      const encoded = responses.encodeRequest(f.ir, f.wire.model);
      expect(encoded.path).toBe("/responses");
      expect(encoded.body).toEqual(f.encoded);
      expect(encoded.warnings).toEqual(f.encodeWarnings);
      expect(f.encodeWarnings).toEqual([]);
    });
    test(`${name}: the encoded body decodes back to the same IR`, () => {
      expect(decodeOk(responses.encodeRequest(f.ir, f.wire.model).body).value).toEqual(f.ir);
    });
  }
});

// ---- fixtures: responses -----------------------------------------------------------------------------

describe("response fixtures, both directions", () => {
  for (const name of ["text-response", "function-call-response", "reasoning-response", "reasoning-summary-response"]) {
    const f = fixture<ResponseFixture>(name);
    test(`${name}: decode -> IR`, () => {
      const decoded = responses.decodeResponse(f.wire);
      if (!decoded.ok) throw new Error(decoded.error.message);
      expect(decoded.value).toEqual(f.ir);
      expect(decoded.warnings).toEqual(f.warnings);
    });
    test(`${name}: IR -> encode equals the stated normalised form, with every member the docs' object has`, () => {
      const warnings: string[] = [];
      const encoded = responses.encodeResponse(f.ir, (w) => warnings.push(w)) as Record<string, unknown>;
      expect(encoded).toEqual(f.encoded);
      expect(warnings).toEqual([]);
      const missing = Object.keys(f.wire).filter((member) => !(member in encoded) && member !== "completed_at");
      expect(missing).toEqual([]);
    });
  }

  test("the official SDK reads the encoded text response (output_text) and function call", async () => {
    const text = fixture<ResponseFixture>("text-response");
    const answer = await sdk(() => Response.json(text.encoded)).responses.create({ model: "gpt-5.4", input: "Tell me a three sentence bedtime story about a unicorn." });
    expect(answer.output_text).toBe((text.ir.content[0] as { text: string }).text);
    expect(answer.usage?.total_tokens).toBe(123);
    const call = fixture<ResponseFixture>("function-call-response");
    const called = await sdk(() => Response.json(call.encoded)).responses.create({ model: "gpt-5.4", input: "Weather?" });
    expect(called.output[0]).toMatchObject({ type: "function_call", call_id: "call_unLAR8MvFNptuiZK6K6HCy5k", name: "get_current_weather", arguments: '{"location":"Boston, MA","unit":"celsius"}' });
  });
});

// ---- fixtures: streams -------------------------------------------------------------------------------

describe("stream fixtures, decoder", () => {
  for (const name of ["stream-text", "stream-function-call"]) {
    const f = fixture<StreamFixture>(name);
    test(`${name}: the docs' SSE decodes to the IR parts`, async () => {
      expect(await decodeText(f.wire)).toEqual(f.ir);
    });
    for (const size of [1, 3, 7]) {
      test(`${name}: the same IR when the bytes arrive ${size} at a time`, async () => {
        expect(await decodeChunks(pieces(bytesOf(f.wire), size))).toEqual(f.ir);
      });
    }
  }

  test("stream-text: the deltas the docs elide are recovered from output_text.done", async () => {
    const f = fixture<StreamFixture>("stream-text");
    const parts = await decodeText(f.wire);
    expect(parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")).toBe(f.text ?? "");
  });

  test("stream-text: the same IR split in two at every byte boundary", async () => {
    const f = fixture<StreamFixture>("stream-text");
    const bytes = bytesOf(f.wire);
    for (let cut = 1; cut < bytes.length; cut += 1) {
      expect(await decodeChunks([bytes.slice(0, cut), bytes.slice(cut)])).toEqual(f.ir);
    }
  });

  test("stream-function-call: the argument deltas join into the call's arguments", async () => {
    const f = fixture<StreamFixture>("stream-function-call");
    const parts = await decodeText(f.wire);
    expect(parts.flatMap((p) => (p.type === "tool-call-delta" ? [p.argumentsDelta] : [])).join("")).toBe(f.toolArguments ?? "");
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: { unified: "tool_calls", raw: "completed" } });
  });
});

describe("stream fixtures, encoder", () => {
  for (const name of ["stream-text", "stream-function-call"]) {
    const f = fixture<StreamFixture>(name);
    const request = () => decodeOk(f.request).value;
    test(`${name}: the IR parts encode to the stated events`, async () => {
      const warnings: string[] = [];
      expect(await encodeParts(f.ir, warnings, request())).toEqual(f.encoded);
      expect(warnings).toEqual([]);
    });
    test(`${name}: what the encoder writes decodes back to the same IR (block ids aside)`, async () => {
      const again = await readAll(encodeBytes(f.ir, [], request()).pipeThrough(parserTransform(responses.createStreamParser())));
      const strip = (parts: IrStreamPart[]) => parts.map((p) => ("id" in p && p.type !== "start" ? { ...p, id: "" } : p));
      expect(strip(again)).toEqual(strip(f.ir));
    });
  }

  test("every event is `event: <type>` + data of that type, numbered from 0 without gaps", async () => {
    const f = fixture<StreamFixture>("stream-function-call");
    const chunks = await readAll(encodeBytes(f.ir));
    const texts = chunks.map((c) => new TextDecoder().decode(c));
    texts.forEach((text, i) => {
      const match = /^event: (\S+)\ndata: (.*)\n\n$/s.exec(text);
      expect(match).not.toBeNull();
      const data = JSON.parse(match?.[2] ?? "{}") as { type: string; sequence_number: number };
      expect(data.type).toBe(match?.[1] ?? "");
      expect(data.sequence_number).toBe(i);
    });
  });

  test("the official SDK accumulates the encoded streams into the final response", async () => {
    const text = fixture<StreamFixture>("stream-text");
    const streamed = sdk(() => new Response(encodeBytes(text.ir), { headers: SSE_HEADERS })).responses.stream({ model: "gpt-5.4", input: "Hello!" });
    const deltas: string[] = [];
    streamed.on("response.output_text.delta", (event) => deltas.push(event.delta));
    const final = await streamed.finalResponse();
    expect(final.output_text).toBe(text.text ?? "");
    expect(deltas.join("")).toBe(text.text ?? "");
    expect(final.usage).toMatchObject({ input_tokens: 37, output_tokens: 11, total_tokens: 48 });

    const call = fixture<StreamFixture>("stream-function-call");
    const called = await sdk(() => new Response(encodeBytes(call.ir), { headers: SSE_HEADERS })).responses.stream({ model: "gpt-4.1", input: "Weather?" }).finalResponse();
    expect(called.status).toBe("completed");
    expect(called.output).toEqual([expect.objectContaining({ type: "function_call", call_id: "call_1234xyz", name: "get_weather", arguments: call.toolArguments })]);
  });
});

// ---- stream decoder: beyond the fixtures ---------------------------------------------------------------

describe("stream decoder", () => {
  const created = { type: "response.created", sequence_number: 0, response: { id: "resp_1", object: "response", created_at: 7, status: "in_progress", model: "gpt-5", output: [], usage: null } };
  const completed = (extra: Record<string, unknown> = {}) => ({ type: "response.completed", sequence_number: 99, response: { ...created.response, status: "completed", usage: { input_tokens: 100, input_tokens_details: { cached_tokens: 80 }, output_tokens: 50, output_tokens_details: { reasoning_tokens: 30 }, total_tokens: 150 }, ...extra } });
  const message = (index: number, ...texts: string[]) => [
    { type: "response.output_item.added", output_index: index, item: { id: `msg_${index}`, type: "message", status: "in_progress", role: "assistant", content: [] } },
    ...texts.flatMap((text, c) => [
      { type: "response.content_part.added", item_id: `msg_${index}`, output_index: index, content_index: c, part: { type: "output_text", text: "", annotations: [] } },
      { type: "response.output_text.delta", item_id: `msg_${index}`, output_index: index, content_index: c, delta: text },
      { type: "response.content_part.done", item_id: `msg_${index}`, output_index: index, content_index: c, part: { type: "output_text", text, annotations: [] } },
    ]),
    { type: "response.output_item.done", output_index: index, item: { id: `msg_${index}`, type: "message", status: "completed", role: "assistant", content: texts.map((text) => ({ type: "output_text", text, annotations: [] })) } },
  ];

  test("usage: input_tokens includes the cached tokens, which the IR keeps apart; reasoning tokens are output", async () => {
    const parts = await decodeText(sse(created, completed()));
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: { inputNoCache: 20, inputCacheRead: 80, inputCacheWrite: 0, output: 50, outputReasoning: 30 } },
      { type: "finish", finishReason: { unified: "stop", raw: "completed" } },
    ]);
  });

  test("reasoning summary parts become one reasoning block, parts joined by a blank line", async () => {
    const at = { item_id: "rs_1", output_index: 0 };
    const parts = await decodeText(
      sse(
        created,
        { type: "response.output_item.added", output_index: 0, item: { id: "rs_1", type: "reasoning", summary: [] } },
        { type: "response.reasoning_summary_part.added", ...at, summary_index: 0, part: { type: "summary_text", text: "" } },
        { type: "response.reasoning_summary_text.delta", ...at, summary_index: 0, delta: "**Plan**" },
        { type: "response.reasoning_summary_part.added", ...at, summary_index: 1, part: { type: "summary_text", text: "" } },
        { type: "response.reasoning_summary_text.delta", ...at, summary_index: 1, delta: "Then answer." },
        { type: "response.output_item.done", output_index: 0, item: { id: "rs_1", type: "reasoning", summary: [] } },
        ...message(1, "Paris."),
        completed(),
      ),
    );
    expect(parts.slice(1, 6)).toEqual([
      { type: "reasoning-start", id: "item-0" },
      { type: "reasoning-delta", id: "item-0", delta: "**Plan**" },
      { type: "reasoning-delta", id: "item-0", delta: "\n\n" },
      { type: "reasoning-delta", id: "item-0", delta: "Then answer." },
      { type: "reasoning-end", id: "item-0" },
    ]);
    expect(parts.slice(6, 9)).toEqual([
      { type: "text-start", id: "item-1:0" },
      { type: "text-delta", id: "item-1:0", delta: "Paris." },
      { type: "text-end", id: "item-1:0" },
    ]);
  });

  test("a refusal streams as text; built-in tool items and unknown events are skipped", async () => {
    const parts = await decodeText(
      sse(
        created,
        { type: "response.output_item.added", output_index: 0, item: { id: "ws_1", type: "web_search_call", status: "in_progress" } },
        { type: "response.web_search_call.searching", output_index: 0, item_id: "ws_1" },
        { type: "response.output_item.done", output_index: 0, item: { id: "ws_1", type: "web_search_call", status: "completed" } },
        { type: "response.output_item.added", output_index: 1, item: { id: "msg_1", type: "message", status: "in_progress", role: "assistant", content: [] } },
        { type: "response.content_part.added", item_id: "msg_1", output_index: 1, content_index: 0, part: { type: "refusal", refusal: "" } },
        { type: "response.refusal.delta", item_id: "msg_1", output_index: 1, content_index: 0, delta: "I can't help with that." },
        { type: "response.refusal.done", item_id: "msg_1", output_index: 1, content_index: 0, refusal: "I can't help with that." },
        { type: "response.content_part.done", item_id: "msg_1", output_index: 1, content_index: 0, part: { type: "refusal", refusal: "I can't help with that." } },
        { type: "response.some_future_event", output_index: 1 },
        completed(),
      ),
    );
    expect(parts.slice(1, 4)).toEqual([
      { type: "text-start", id: "item-1:0" },
      { type: "text-delta", id: "item-1:0", delta: "I can't help with that." },
      { type: "text-end", id: "item-1:0" },
    ]);
  });

  test("response.incomplete: max_output_tokens is length, content_filter is content_filter", async () => {
    const incomplete = (reason: string) => ({ type: "response.incomplete", response: { ...created.response, status: "incomplete", incomplete_details: { reason } } });
    expect((await decodeText(sse(created, ...message(0, "Once"), incomplete("max_output_tokens")))).at(-1)).toEqual({ type: "finish", finishReason: { unified: "length", raw: "max_output_tokens" } });
    expect((await decodeText(sse(created, incomplete("content_filter")))).at(-1)).toEqual({ type: "finish", finishReason: { unified: "content_filter", raw: "content_filter" } });
  });

  test("response.failed ends the parts with an IR error classed by its code; nothing after it is read", async () => {
    const failed = { type: "response.failed", response: { ...created.response, status: "failed", error: { code: "rate_limit_exceeded", message: "Rate limit reached" } } };
    const parts = await decodeText(sse(created, ...message(0, "Hel"), failed, completed()));
    expect(parts.at(-1)).toEqual({ type: "error", error: { kind: "rate_limit", status: 429, message: "Rate limit reached", failure: "rate_limit", code: "rate_limit_exceeded" } });
    expect(parts.filter((p) => p.type === "finish")).toEqual([]);
  });

  test("an `error` event ends the parts with an IR error (a server error is transient)", async () => {
    const parts = await decodeText(sse(created, { type: "error", code: "server_error", message: "The server had an error", param: null, sequence_number: 1 }));
    expect(parts.at(-1)).toEqual({ type: "error", error: { kind: "api_error", status: 500, message: "The server had an error", failure: "transient", code: "server_error" } });
  });

  test("a stream cut before response.completed ends with a transient error and closes open blocks, never silently", async () => {
    const cut = sse(created, ...message(0, "Hel").slice(0, 3));
    const parts = await decodeText(cut);
    expect(parts.slice(-2)).toEqual([
      { type: "text-end", id: "item-0:0" },
      { type: "error", error: { kind: "api_error", status: 502, message: "the upstream stream ended before response.completed", failure: "transient" } },
    ]);
  });

  test("an event whose data is not JSON ends the stream with an error", async () => {
    const parts = await decodeText(`${sse(created)}event: response.output_text.delta\ndata: {not json\n\n`);
    expect(parts.at(-1)).toMatchObject({ type: "error", error: { status: 502, failure: "transient" } });
  });

  test("arguments sent only in function_call_arguments.done still reach the IR", async () => {
    const parts = await decodeText(
      sse(
        created,
        { type: "response.output_item.added", output_index: 0, item: { id: "fc_1", type: "function_call", call_id: "call_1", name: "f", arguments: "" } },
        { type: "response.function_call_arguments.done", item_id: "fc_1", output_index: 0, name: "f", arguments: '{"a":1}' },
        { type: "response.output_item.done", output_index: 0, item: { id: "fc_1", type: "function_call", call_id: "call_1", name: "f", arguments: '{"a":1}' } },
        completed({ output: [] }),
      ),
    );
    expect(parts.slice(1, 4)).toEqual([
      { type: "tool-call-start", id: "item-0", toolCallId: "call_1", name: "f" },
      { type: "tool-call-delta", id: "item-0", argumentsDelta: '{"a":1}' },
      { type: "tool-call-end", id: "item-0" },
    ]);
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: { unified: "tool_calls", raw: "completed" } });
  });

  test("multi-byte characters split at every byte survive", async () => {
    const text = "héllo ☃ 🌍";
    const parts = await decodeChunks(pieces(bytesOf(sse(created, ...message(0, text), completed())), 1));
    expect(parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")).toBe(text);
  });

  test("a stream's tail alone (no response.created) still yields the usage, for the same-protocol meter", async () => {
    const parts = await decodeText(sse(...message(0, "tail"), completed()));
    expect(parts.find((p) => p.type === "usage")).toEqual({ type: "usage", usage: { inputNoCache: 20, inputCacheRead: 80, inputCacheWrite: 0, output: 50, outputReasoning: 30 } });
  });
});

// ---- stream encoder: beyond the fixtures ---------------------------------------------------------------

describe("stream encoder", () => {
  const head: IrStreamPart = { type: "start", id: "msg_01ABC", model: "claude-sonnet-4-5", created: 1_700_000_000 };
  const stop: IrStreamPart = { type: "finish", finishReason: { unified: "stop", raw: "end_turn" } };
  const types = (events: WireEvent[]) => events.map((e) => e.event);

  test("the response object each event carries echoes the request as JSON.stringify would write it, tools that say usage and NUL included", async () => {
    const tools = [{ name: "log", description: 'usage: null \u0000 "quoted" \u2028', parameters: { type: "object", properties: { usage: { default: null }, status: { type: "string" } } } }];
    const request: IrRequest = { ...BASE_REQUEST, system: [{ type: "text", text: 'be "brief"\u0000' }], tools: tools as IrRequest["tools"], sampling: { temperature: 0.2 } };
    const usage = { inputNoCache: 7, inputCacheRead: 1, inputCacheWrite: 0, output: 3, outputReasoning: 0 };
    const parts: IrStreamPart[] = [head, { type: "text-start", id: "a" }, { type: "text-delta", id: "a", delta: "Hi" }, { type: "text-end", id: "a" }, { type: "usage", usage }, stop];
    const events = await encodeParts(parts, [], request);
    const responsesOf = events.filter((e) => e.data.response !== undefined).map((e) => [e.event, e.data.response as Record<string, unknown>] as const);
    expect(responsesOf.map(([type, r]) => [type, r.status])).toEqual([
      ["response.created", "in_progress"],
      ["response.in_progress", "in_progress"],
      ["response.completed", "completed"],
    ]);
    const [created, , completed] = responsesOf.map(([, r]) => r);
    expect(created!.usage).toBeNull();
    expect(created!.output).toEqual([]);
    expect(completed!.usage).toMatchObject({ input_tokens: 8, output_tokens: 3 });
    expect((completed!.output as { content: { text: string }[] }[])[0]!.content[0]!.text).toBe("Hi");
    // Everything but the changing members is the same echo in every event, byte for byte.
    for (const r of [created!, completed!]) {
      expect(r.instructions).toBe('be "brief"\u0000');
      expect(JSON.stringify(r.tools)).toContain('"usage":{"default":null}');
      expect(Object.keys(r)).toEqual(Object.keys(created!));
    }
    // A failed stream carries its error in the same object.
    const failed = await encodeParts([head, { type: "error", error: irError("overloaded", "busy") }], [], request);
    const failure = failed.at(-1)!;
    expect(failure.event).toBe("response.failed");
    expect((failure.data.response as { status: string; error: { message: string } }).status).toBe("failed");
    expect((failure.data.response as { error: { message: string } }).error.message).toContain("busy");
  });

  test("interleaved IR tool calls become two function_call items, each delta under its own output_index", async () => {
    const events = await encodeParts([
      head,
      { type: "tool-call-start", id: "t0", toolCallId: "call_a", name: "get_weather" },
      { type: "tool-call-delta", id: "t0", argumentsDelta: '{"city":' },
      { type: "tool-call-start", id: "t1", toolCallId: "call_b", name: "get_time" },
      { type: "tool-call-delta", id: "t1", argumentsDelta: '{"zone":"UTC"}' },
      { type: "tool-call-delta", id: "t0", argumentsDelta: '"Paris"}' },
      { type: "tool-call-end", id: "t1" },
      { type: "tool-call-end", id: "t0" },
      { type: "finish", finishReason: { unified: "tool_calls", raw: "tool_use" } },
    ]);
    const done = events.filter((e) => e.event === "response.function_call_arguments.done").map((e) => [e.data.output_index, e.data.name, e.data.arguments]);
    expect(done).toEqual([
      [1, "get_time", '{"zone":"UTC"}'],
      [0, "get_weather", '{"city":"Paris"}'],
    ]);
    const final = events.at(-1)?.data.response as { status: string; output: { call_id: string; arguments: string }[] };
    expect(final.status).toBe("completed");
    expect(final.output.map((o) => [o.call_id, o.arguments])).toEqual([
      ["call_a", '{"city":"Paris"}'],
      ["call_b", '{"zone":"UTC"}'],
    ]);
  });

  test("consecutive text blocks share one message (content_index 0, 1); text after a tool call opens a new message", async () => {
    const events = await encodeParts([
      head,
      { type: "text-start", id: "a" },
      { type: "text-delta", id: "a", delta: "One." },
      { type: "text-end", id: "a" },
      { type: "text-start", id: "b" },
      { type: "text-delta", id: "b", delta: "Two." },
      { type: "text-end", id: "b" },
      { type: "tool-call-start", id: "t", toolCallId: "call_1", name: "f" },
      { type: "tool-call-end", id: "t" },
      { type: "text-start", id: "c" },
      { type: "text-delta", id: "c", delta: "Three." },
      { type: "text-end", id: "c" },
      stop,
    ]);
    expect(events.filter((e) => e.event === "response.output_text.delta").map((e) => [e.data.output_index, e.data.content_index, e.data.delta])).toEqual([
      [0, 0, "One."],
      [0, 1, "Two."],
      [2, 0, "Three."],
    ]);
    const output = (events.at(-1)?.data.response as { output: unknown[] }).output;
    expect(output).toEqual([
      { id: "msg_msg_01ABC_0", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "One.", annotations: [] }, { type: "output_text", text: "Two.", annotations: [] }] },
      { id: "fc_msg_01ABC_1", type: "function_call", status: "completed", call_id: "call_1", name: "f", arguments: "" },
      { id: "msg_msg_01ABC_2", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Three.", annotations: [] }] },
    ]);
    // The first message closes when the tool call starts, just before the call is announced.
    const announced = events.findIndex((e) => e.event === "response.output_item.added" && (e.data.item as { type: string }).type === "function_call");
    expect(events[announced - 1]).toMatchObject({ event: "response.output_item.done", data: { output_index: 0, item: { type: "message", status: "completed" } } });
  });

  test("a message whose text ends after a later item started closes at once, not at the finish", async () => {
    const events = await encodeParts([
      head,
      { type: "text-start", id: "a" },
      { type: "tool-call-start", id: "t", toolCallId: "call_1", name: "f" },
      { type: "text-delta", id: "a", delta: "Hi" },
      { type: "text-end", id: "a" },
      { type: "tool-call-delta", id: "t", argumentsDelta: "{}" },
      { type: "tool-call-end", id: "t" },
      stop,
    ]);
    const partDone = events.findIndex((e) => e.event === "response.content_part.done");
    expect(events[partDone + 1]).toMatchObject({ event: "response.output_item.done", data: { output_index: 0, item: { type: "message", content: [{ text: "Hi" }] } } });
    expect(events.filter((e) => e.event === "response.function_call_arguments.delta").map((e) => e.data.output_index)).toEqual([1]);
  });

  test("another vendor's thinking becomes a reasoning item with a summary the SDK accumulates; its signature is dropped, warned", async () => {
    const parts: IrStreamPart[] = [
      head,
      { type: "reasoning-start", id: "r" },
      { type: "reasoning-delta", id: "r", delta: "Let me think" },
      { type: "reasoning-delta", id: "r", delta: " about it." },
      { type: "reasoning-signature", id: "r", signature: "EqQBCg..." },
      { type: "reasoning-end", id: "r" },
      { type: "text-start", id: "x" },
      { type: "text-delta", id: "x", delta: "42" },
      { type: "text-end", id: "x" },
      stop,
    ];
    const warnings: string[] = [];
    const events = await encodeParts(parts, warnings);
    expect(types(events).slice(2, 9)).toEqual([
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
    ]);
    expect(warnings).toEqual(["reasoning signature has no Responses form (reasoning items carry OpenAI's own encrypted content); dropped"]);
    const final = await sdk(() => new Response(encodeBytes(parts), { headers: SSE_HEADERS })).responses.stream({ model: "m", input: "Q" }).finalResponse();
    expect(final.output[0]).toMatchObject({ type: "reasoning", summary: [{ type: "summary_text", text: "Let me think about it." }] });
    expect(final.output_text).toBe("42");
  });

  test("redacted reasoning is dropped with a warning", async () => {
    const warnings: string[] = [];
    const events = await encodeParts([head, { type: "reasoning-start", id: "r", redactedData: "EmwK" }, { type: "reasoning-end", id: "r" }, stop], warnings);
    expect(types(events)).toEqual(["response.created", "response.in_progress", "response.completed"]);
    expect(warnings).toEqual(["redacted reasoning has no Responses form; dropped"]);
  });

  test("length finishes as response.incomplete with reason max_output_tokens; the usage is in the final response", async () => {
    const events = await encodeParts([head, { type: "usage", usage: { inputNoCache: 10, inputCacheRead: 5 } }, { type: "text-start", id: "a" }, { type: "text-delta", id: "a", delta: "Once" }, { type: "usage", usage: { output: 7, outputReasoning: 2 } }, { type: "finish", finishReason: { unified: "length", raw: "max_tokens" } }]);
    const last = events.at(-1);
    expect(last?.event).toBe("response.incomplete");
    expect(last?.data.response).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
    expect((last?.data.response as { usage: unknown }).usage).toEqual({ input_tokens: 15, input_tokens_details: { cached_tokens: 5, cache_write_tokens: 0 }, output_tokens: 7, output_tokens_details: { reasoning_tokens: 2 }, total_tokens: 22 });
    // The open text part was closed before the end, not left dangling.
    expect(types(events).slice(-4, -1)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done"]);
  });

  test("an IR error ends the stream with response.failed (the SDK's final response says failed)", async () => {
    const parts: IrStreamPart[] = [head, { type: "text-start", id: "a" }, { type: "text-delta", id: "a", delta: "Hel" }, { type: "error", error: irError("rate_limit", "Rate limit reached", { status: 429 }) }];
    const events = await encodeParts(parts);
    expect(events.at(-1)).toMatchObject({ event: "response.failed", data: { type: "response.failed", response: { status: "failed", error: { code: "rate_limit_exceeded", message: "Rate limit reached" } } } });
    const final = await sdk(() => new Response(encodeBytes(parts), { headers: SSE_HEADERS })).responses.stream({ model: "m", input: "Q" }).finalResponse();
    expect(final.status).toBe("failed");
    expect(final.error).toEqual({ code: "rate_limit_exceeded", message: "Rate limit reached" });
  });

  test("an IR stream that stops with neither finish nor error fails the response rather than ending it as complete", async () => {
    const events = await encodeParts([head, { type: "text-start", id: "a" }, { type: "text-delta", id: "a", delta: "Hel" }]);
    expect(events.at(-1)?.data.response).toMatchObject({ status: "failed", error: { code: "server_error", message: "the stream ended before the response was complete" } });
    expect(events.filter((e) => e.event === "response.completed")).toEqual([]);
  });

  test("a finish Responses has no status for is sent completed, warned", async () => {
    const warnings: string[] = [];
    const events = await encodeParts([head, { type: "finish", finishReason: { unified: "pause", raw: "pause_turn" } }], warnings);
    expect(events.at(-1)?.event).toBe("response.completed");
    expect(warnings).toEqual(["finish reason pause_turn has no Responses status; sent completed"]);
  });

  test("the lifecycle events echo the request's settings", async () => {
    const request = ir({ stream: true, system: [{ type: "text", text: "Be brief." }], tools: [{ name: "f", parameters: { type: "object" } }], toolChoice: { type: "required" }, sampling: { temperature: 0.2, maxTokens: 100 } });
    const events = await encodeParts([head, stop], [], request);
    expect(events[0]?.data.response).toMatchObject({ id: "msg_01ABC", model: "claude-sonnet-4-5", created_at: 1_700_000_000, status: "in_progress", instructions: "Be brief.", temperature: 0.2, max_output_tokens: 100, tool_choice: "required", tools: [{ type: "function", name: "f", parameters: { type: "object" }, strict: false }] });
  });

  test("every lifecycle event's response is, byte for byte, JSON.stringify of the response object (the stream serialises its fixed members once)", () => {
    const tricky = 'q"\\ \u0001 \u2028 \ud800 😀 </script>';
    const requests: IrRequest[] = [
      BASE_REQUEST,
      ir({ stream: true, system: [{ type: "text", text: tricky }], tools: [{ name: "f", description: tricky, parameters: { type: "object", properties: { [tricky]: { type: "string" } } } }], toolChoice: { type: "tool", name: "f" }, parallelToolCalls: false, sampling: { temperature: 0, topP: 0.5, maxTokens: 7 }, responseFormat: { type: "json_schema", name: "s", schema: { type: "object" } }, reasoning: { effort: "high" } }),
    ];
    const finishes: IrStreamPart[] = [{ type: "finish", finishReason: { unified: "stop" } }, { type: "finish", finishReason: { unified: "length" } }, { type: "error", error: irError("rate_limit", tricky, { status: 429 }) }];
    for (const request of requests) {
      for (const last of finishes) {
        let text = "";
        const writer = responses.createStreamWriter(request, () => {}, (chunk) => (text += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk)));
        const parts: IrStreamPart[] = [{ ...head, id: `resp_${tricky}`, model: tricky }, { type: "usage", usage: { inputNoCache: 3 } }, { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: tricky }, { type: "text-end", id: "t" }, last];
        for (const part of parts) writer.accept(part);
        writer.end();
        const lines = text.split("\n").filter((line) => line.startsWith('data: {"type":"response.') && line.includes('"response":{'));
        expect(lines.length).toBe(3);
        for (const line of lines.map((l) => l.slice(6))) {
          const event = JSON.parse(line) as { type: string; response: Record<string, unknown>; sequence_number: number };
          const wire = event.response;
          const object = responseObject({ id: `resp_${tricky}`, model: tricky, created: head.type === "start" ? head.created : 0, status: "", output: [], usage: null }, request) as Record<string, unknown>;
          // The members that change are taken from the event; every other member, and the order of all, from responseObject.
          const expected = { ...object, status: wire.status, error: wire.error, incomplete_details: wire.incomplete_details, output: wire.output, usage: wire.usage };
          expect(line).toBe(JSON.stringify({ type: event.type, response: expected, sequence_number: event.sequence_number }));
        }
      }
    }
  });
});

// ---- decodeRequest: caller errors --------------------------------------------------------------------

describe("decodeRequest refuses what the IR cannot carry", () => {
  test("previous_response_id: a clear 400 naming it (only a same-protocol route can pass it on)", () => {
    const error = decodeFail(body({ previous_response_id: "resp_abc123" }));
    expect(error).toMatchObject({ kind: "invalid_request", status: 400, param: "previous_response_id" });
    expect(error.message).toContain("send the whole conversation in input");
  });

  const cases: [string, Record<string, unknown>, string][] = [
    ["conversation", body({ conversation: "conv_1" }), "conversation"],
    ["a stored prompt", body({ prompt: { id: "pmpt_1" } }), "prompt"],
    ["background", body({ background: true }), "background"],
    ["an item reference", body({ input: [{ type: "item_reference", id: "msg_1" }] }), "input[0]"],
    ["no input", { model: "gpt-5.4" }, "input"],
    ["an empty model", body({ model: "" }), "model"],
    ["an image by file_id", body({ input: [{ role: "user", content: [{ type: "input_image", file_id: "file-1", detail: "auto" }] }] }), "input[0].content[0].file_id"],
    ["a file by file_id", body({ input: [{ role: "user", content: [{ type: "input_file", file_id: "file-1" }] }] }), "input[0].content[0].file_id"],
    ["an unknown role", body({ input: [{ role: "tool", content: "x" }] }), "input[0].role"],
    ["an unknown user part", body({ input: [{ role: "user", content: [{ type: "input_audio", input_audio: {} }] }] }), "input[0].content[0].type"],
    ["a function_call without call_id", body({ input: [{ type: "function_call", name: "f", arguments: "{}" }] }), "input[0].call_id"],
    ["max_output_tokens below 16", body({ max_output_tokens: 5 }), "max_output_tokens"],
    ["an unknown text.format", body({ text: { format: { type: "grammar" } } }), "text.format.type"],
    ["an unknown reasoning effort", body({ reasoning: { effort: "extreme" } }), "reasoning.effort"],
  ];
  for (const [name, wire, param] of cases) {
    test(`${name} -> 400 naming ${param}`, () => {
      expect(decodeFail(wire)).toMatchObject({ kind: "invalid_request", status: 400, param });
    });
  }

  test("the 400 reaches the SDK as its own BadRequestError, with the param", async () => {
    const error = decodeFail(body({ previous_response_id: "resp_abc123" }));
    const thrown = await rejection(sdk(() => encodeError(error)).responses.create({ model: "m", input: "Hi", previous_response_id: "resp_abc123" }));
    expect(thrown).toBeInstanceOf(BadRequestError);
    expect(thrown).toMatchObject({ status: 400, param: "previous_response_id", type: "invalid_request_error" });
  });
});

// ---- decodeRequest: conversions and warnings --------------------------------------------------------------

describe("decodeRequest", () => {
  test("an assistant turn (reasoning, message, calls) is one IR assistant message; consecutive outputs one tool message", () => {
    const decoded = decodeOk(
      body({
        input: [
          { role: "developer", content: "Use tools." },
          { role: "user", content: "Weather in Paris and Rome?" },
          { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "Two cities." }], encrypted_content: "gAAAA..." },
          { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Checking.", annotations: [] }] },
          { type: "function_call", id: "fc_1", call_id: "call_p", name: "get_weather", arguments: '{"city":"Paris"}', status: "completed" },
          { type: "function_call", id: "fc_2", call_id: "call_r", name: "get_weather", arguments: '{"city":"Rome"}' },
          { type: "function_call_output", call_id: "call_p", output: "14" },
          { type: "function_call_output", call_id: "call_r", output: [{ type: "input_text", text: "18" }, { type: "input_image", image_url: "https://example.com/r.png", detail: "auto" }] },
          { role: "user", content: "Thanks" },
        ],
      }),
    );
    expect(decoded.value.system).toEqual([{ type: "text", text: "Use tools." }]);
    expect(decoded.value.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Weather in Paris and Rome?" }] },
      {
        role: "assistant",
        content: [
          { type: "reasoning", text: "Two cities." },
          { type: "text", text: "Checking." },
          { type: "tool_call", id: "call_p", name: "get_weather", arguments: '{"city":"Paris"}' },
          { type: "tool_call", id: "call_r", name: "get_weather", arguments: '{"city":"Rome"}' },
        ],
      },
      {
        role: "tool",
        content: [
          { type: "tool_result", toolCallId: "call_p", content: [{ type: "text", text: "14" }] },
          { type: "tool_result", toolCallId: "call_r", content: [{ type: "text", text: "18" }, { type: "image", source: { kind: "url", url: "https://example.com/r.png" } }] },
        ],
      },
      { role: "user", content: [{ type: "text", text: "Thanks" }] },
    ]);
    expect(decoded.warnings).toEqual(["input[2].encrypted_content: encrypted reasoning is readable only by OpenAI; dropped"]);
  });

  test("instructions come first; a system message after the conversation began moves there, warned", () => {
    const decoded = decodeOk(body({ instructions: "Be terse.", input: [{ role: "user", content: "Hi" }, { role: "system", content: [{ type: "input_text", text: "Answer in French." }] }] }));
    expect(decoded.value.system).toEqual([{ type: "text", text: "Be terse." }, { type: "text", text: "Answer in French." }]);
    expect(decoded.warnings).toEqual(["input[1]: a system message after the conversation began is moved into the system instructions"]);
  });

  test("images and files: data URLs become base64, URLs stay URLs, bare file data is a PDF", () => {
    const decoded = decodeOk(
      body({
        input: [
          {
            role: "user",
            content: [
              { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=", detail: "auto" },
              { type: "input_file", filename: "draconomicon.pdf", file_data: "data:application/pdf;base64,JVBERi0x" },
              { type: "input_file", file_url: "https://www.berkshirehathaway.com/letters/2024ltr.pdf" },
              { type: "input_file", file_data: "JVBERi0y" },
            ],
          },
        ],
      }),
    );
    expect(decoded.value.messages[0]?.content).toEqual([
      { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } },
      { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0x" }, title: "draconomicon.pdf" },
      { type: "document", source: { kind: "url", url: "https://www.berkshirehathaway.com/letters/2024ltr.pdf" } },
      { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0y" } },
    ]);
    expect(decoded.warnings).toEqual([]);
  });

  test("settings: sampling, format, effort, parallel calls, named tool, end user", () => {
    const decoded = decodeOk(
      body({
        max_output_tokens: 500,
        temperature: 0.3,
        top_p: 0.9,
        parallel_tool_calls: false,
        tools: [{ type: "function", name: "f", parameters: null, strict: null }],
        tool_choice: { type: "function", name: "f" },
        text: { format: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true } },
        reasoning: { effort: "medium" },
        safety_identifier: "user-123",
        stream: true,
      }),
    ).value;
    expect(decoded).toMatchObject({
      sampling: { maxTokens: 500, temperature: 0.3, topP: 0.9 },
      parallelToolCalls: false,
      tools: [{ name: "f", parameters: { type: "object", properties: {} } }],
      toolChoice: { type: "tool", name: "f" },
      responseFormat: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true },
      reasoning: { effort: "medium" },
      user: "user-123",
      stream: true,
      includeUsage: true,
    });
    // An omitted strict stays unsaid: the target's own default, not Responses' strict one.
    expect(decoded.tools[0]?.strict).toBeUndefined();
    expect(decodeOk(body({ text: { format: { type: "json_object" } }, user: "legacy" })).value).toMatchObject({ responseFormat: { type: "json" }, user: "legacy" });
  });

  test("what does not cross protocols is dropped, each with its own warning", () => {
    const decoded = decodeOk(
      body({
        input: [
          { role: "user", content: "Search" },
          { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "x" } },
          { role: "assistant", content: [{ type: "output_text", text: "Found.", annotations: [{ type: "url_citation", url: "https://x", title: "x", start_index: 0, end_index: 1 }] }] },
        ],
        tools: [{ type: "web_search" }, { type: "function", name: "f", parameters: { type: "object" }, strict: true, defer_loading: true }],
        tool_choice: { type: "web_search_preview" },
        store: true,
        metadata: { run: "1" },
        include: ["reasoning.encrypted_content"],
        text: { verbosity: "low" },
        reasoning: { effort: "xhigh", summary: "auto" },
      }),
    );
    expect(decoded.value.tools.map((t) => t.name)).toEqual(["f"]);
    expect(decoded.value.toolChoice).toBeUndefined();
    expect(decoded.value.reasoning).toEqual({ effort: "high" });
    expect(decoded.warnings).toEqual([
      "include: not modelled across protocols; dropped",
      "store: the response is not stored at OpenAI when translated; dropped",
      "metadata: not modelled across protocols; dropped",
      "text.verbosity: not modelled across protocols; dropped",
      "reasoning.summary: not modelled across protocols; dropped",
      "input[1]: a web_search_call item is not modelled across protocols; dropped",
      "input[2].content[0].annotations: citations are not modelled across protocols; dropped",
      "tools[0]: web_search tools run only at OpenAI (only function tools cross protocols); dropped",
      "tools[1].defer_loading: not modelled across protocols; dropped",
      "tool_choice: forces a web_search_preview tool, which does not cross protocols; dropped",
      "reasoning.effort: xhigh clamped to high",
    ]);
  });

  test("allowed_tools sends only the allowed function tools; effort none is no reasoning setting", () => {
    const decoded = decodeOk(
      body({
        tools: [{ type: "function", name: "a", parameters: {}, strict: false }, { type: "function", name: "b", parameters: {}, strict: false }],
        tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "b" }] },
        reasoning: { effort: "none" },
      }),
    );
    expect(decoded.value.tools.map((t) => t.name)).toEqual(["b"]);
    expect(decoded.value.toolChoice).toEqual({ type: "required" });
    expect(decoded.value.reasoning).toBeUndefined();
    expect(decoded.warnings).toEqual(["tool_choice.allowed_tools: expressed by sending only the allowed function tools", "reasoning.effort: none has no IR form; sent without reasoning settings (the target model's default)"]);
  });
});

// ---- encodeRequest -----------------------------------------------------------------------------------------

describe("encodeRequest", () => {
  test("settings map to their Responses members; the end user is safety_identifier; nothing is stored", () => {
    const encoded = encode(
      ir({
        system: [{ type: "text", text: "A" }, { type: "text", text: "B" }],
        tools: [{ name: "f", description: "does f", parameters: { type: "object" } }],
        toolChoice: { type: "tool", name: "f" },
        parallelToolCalls: false,
        sampling: { temperature: 0.5, topP: 0.8, maxTokens: 1024 },
        responseFormat: { type: "json_schema", schema: { type: "object" } },
        reasoning: { effort: "low" },
        user: "u1",
        stream: true,
      }),
    );
    expect(encoded.body).toEqual({
      model: "gpt-upstream",
      instructions: "A\n\nB",
      input: [{ role: "user", content: "Hi" }],
      tools: [{ type: "function", name: "f", description: "does f", parameters: { type: "object" }, strict: false }],
      tool_choice: { type: "function", name: "f" },
      parallel_tool_calls: false,
      temperature: 0.5,
      top_p: 0.8,
      max_output_tokens: 1024,
      text: { format: { type: "json_schema", name: "response", schema: { type: "object" } } },
      reasoning: { effort: "low" },
      stream: true,
      safety_identifier: "u1",
      store: false,
    });
    expect(encoded.warnings).toEqual([]);
  });

  test("members Responses lacks are dropped or raised, each warned", () => {
    const encoded = encode(ir({ sampling: { maxTokens: 5, topK: 40, stop: ["END"], seed: 7, frequencyPenalty: 0.1, presencePenalty: 0.2 }, reasoning: { budgetTokens: 10_000 } }));
    expect(encoded.body).toMatchObject({ max_output_tokens: 16, reasoning: { effort: "high" } });
    expect(encoded.body).not.toHaveProperty("stop");
    expect(encoded.warnings).toEqual([
      "max_output_tokens raised from 5 to 16, the Responses API's minimum",
      "reasoning budget of 10000 tokens sent as reasoning.effort high",
      "top_k has no Responses form; dropped",
      "stop has no Responses form; dropped",
      "seed has no Responses form; dropped",
      "frequency_penalty has no Responses form; dropped",
      "presence_penalty has no Responses form; dropped",
    ]);
  });

  test("history: documents and images as input parts, calls and results as items, reasoning dropped (warned)", () => {
    const encoded = encode(
      ir({
        messages: [
          { role: "user", content: [{ type: "text", text: "Read" }, { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBE" }, title: "a.pdf" }, { type: "document", source: { kind: "url", url: "https://x/b.pdf" } }, { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBO" } }] },
          { role: "assistant", content: [{ type: "reasoning", text: "hmm", signature: "sig" }, { type: "text", text: "Calling." }, { type: "tool_call", id: "toolu_1", name: "f", arguments: "{}" }] },
          { role: "tool", content: [{ type: "tool_result", toolCallId: "toolu_1", content: [{ type: "text", text: "ok" }, { type: "image", source: { kind: "url", url: "https://x/c.png" } }], isError: true }] },
        ],
      }),
    );
    expect((encoded.body as { input: unknown }).input).toEqual([
      {
        role: "user",
        content: [
          { type: "input_text", text: "Read" },
          { type: "input_file", filename: "a.pdf", file_data: "data:application/pdf;base64,JVBE" },
          { type: "input_file", file_url: "https://x/b.pdf" },
          { type: "input_image", image_url: "data:image/png;base64,iVBO", detail: "auto" },
        ],
      },
      { role: "assistant", content: "Calling." },
      { type: "function_call", call_id: "toolu_1", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "toolu_1", output: [{ type: "input_text", text: "ok" }, { type: "input_image", image_url: "https://x/c.png", detail: "auto" }] },
    ]);
    expect(encoded.warnings).toEqual(["messages[1]: reasoning has no Responses input form without OpenAI's own reasoning item; dropped", "messages[2]: the tool result's error flag has no Responses form; dropped"]);
  });
});

// ---- responses: finish, usage, loss -------------------------------------------------------------------------

describe("response mapping", () => {
  const wire = (extra: Record<string, unknown>) => ({ id: "resp_1", object: "response", created_at: 5, status: "completed", model: "gpt-5", output: [], usage: { input_tokens: 10, output_tokens: 2, total_tokens: 12 }, ...extra });
  const decodedValue = (extra: Record<string, unknown>) => {
    const decoded = responses.decodeResponse(wire(extra));
    if (!decoded.ok) throw new Error(decoded.error.message);
    return decoded;
  };

  test("finish: completed is stop (tool_calls with a function call); incomplete maps its reason", () => {
    expect(decodedValue({}).value.finishReason).toEqual({ unified: "stop", raw: "completed" });
    expect(decodedValue({ output: [{ type: "function_call", id: "fc_1", call_id: "c", name: "f", arguments: "{}" }] }).value.finishReason).toEqual({ unified: "tool_calls", raw: "completed" });
    expect(decodedValue({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }).value.finishReason).toEqual({ unified: "length", raw: "max_output_tokens" });
    expect(decodedValue({ status: "incomplete", incomplete_details: { reason: "content_filter" } }).value.finishReason).toEqual({ unified: "content_filter", raw: "content_filter" });
  });

  test("finish back to the client: length and content_filter are incomplete with their reason, the rest completed", () => {
    const encoded = (finishReason: IrResponse["finishReason"]) => responses.encodeResponse(irResponse({ finishReason }), () => {}) as { status: string; incomplete_details: unknown };
    expect(encoded({ unified: "length", raw: "max_tokens" })).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
    expect(encoded({ unified: "content_filter", raw: "refusal" })).toMatchObject({ status: "incomplete", incomplete_details: { reason: "content_filter" } });
    expect(encoded({ unified: "tool_calls", raw: "tool_use" })).toMatchObject({ status: "completed", incomplete_details: null });
  });

  test("usage: cached and cache-write tokens come out of input_tokens; reasoning stays in output", () => {
    const usage = { input_tokens: 2006, input_tokens_details: { cached_tokens: 1920, cache_write_tokens: 6 }, output_tokens: 300, output_tokens_details: { reasoning_tokens: 256 }, total_tokens: 2306 };
    const value = decodedValue({ usage }).value;
    expect(value.usage).toEqual({ inputNoCache: 80, inputCacheRead: 1920, inputCacheWrite: 6, output: 300, outputReasoning: 256 });
    expect((responses.encodeResponse(value, () => {}) as { usage: unknown }).usage).toEqual(usage);
    expect(responses.usageFromResponse(wire({ usage }))).toEqual({ inputNoCache: 80, inputCacheRead: 1920, inputCacheWrite: 6, output: 300, outputReasoning: 256 });
    expect(responses.usageFromResponse({ id: "x" })).toBeUndefined();
  });

  test("a refusal is text; built-in tool items and encrypted reasoning are dropped with warnings", () => {
    const decoded = decodedValue({
      output: [
        { type: "web_search_call", id: "ws_1", status: "completed" },
        { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAA" },
        { type: "message", id: "msg_1", status: "completed", role: "assistant", content: [{ type: "refusal", refusal: "No." }] },
      ],
    });
    expect(decoded.value.content).toEqual([{ type: "text", text: "No." }]);
    expect(decoded.warnings).toEqual(["output[0]: a web_search_call item is not modelled across protocols; dropped", "output[1].encrypted_content: encrypted reasoning is readable only by OpenAI; dropped"]);
  });

  test("a failed response, an error body and a malformed body are errors, not answers", () => {
    const failed = responses.decodeResponse(wire({ status: "failed", error: { code: "server_error", message: "The model failed to generate a response." } }));
    expect(failed).toEqual({ ok: false, error: { kind: "api_error", status: 500, message: "The model failed to generate a response.", failure: "transient", code: "server_error" } });
    const errorBody = responses.decodeResponse({ error: { message: "boom", type: "server_error", param: null, code: null } });
    expect(errorBody.ok).toBe(false);
    const malformed = responses.decodeResponse({ id: "resp_1", output: "nope" });
    expect(malformed).toMatchObject({ ok: false, error: { kind: "api_error", status: 502, failure: "transient" } });
  });

  test("redacted reasoning and another vendor's signature are reported when shown to the client", () => {
    const warnings: string[] = [];
    const encoded = responses.encodeResponse(irResponse({ content: [{ type: "reasoning", text: "", redactedData: "EmwK" }, { type: "reasoning", text: "think", signature: "sig" }, { type: "text", text: "A" }] }), (w) => warnings.push(w)) as { output: unknown[] };
    expect(encoded.output).toEqual([
      { id: "rs_1_0", type: "reasoning", summary: [{ type: "summary_text", text: "think" }] },
      { id: "msg_1_1", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "A", annotations: [] }] },
    ]);
    expect(warnings).toEqual(["redacted reasoning has no Responses form; dropped", "reasoning signature has no Responses form (reasoning items carry OpenAI's own encrypted content); dropped"]);
  });
});

// ---- errors -------------------------------------------------------------------------------------------------

describe("errors", () => {
  const f = fixture<{
    http: { name: string; status: number; headers: Record<string, string>; body: unknown; ir: IrError }[];
    inStream: { name: string; event: Record<string, unknown>; ir: IrError }[];
  }>("errors");

  for (const c of f.http) {
    test(`upstream HTTP error fixture: ${c.name}`, () => {
      expect(decodeError(c.status, JSON.stringify(c.body), new Headers(c.headers))).toEqual(c.ir);
    });
  }
  for (const c of f.inStream) {
    test(`in-stream failure fixture: ${c.name}`, async () => {
      const created = { type: "response.created", response: { id: "resp_123", object: "response", created_at: 1, status: "in_progress", model: "m", output: [] } };
      expect((await decodeText(sse(created, c.event))).at(-1)).toEqual({ type: "error", error: c.ir });
    });
  }

  const table: [string, IrError, number, string, string | null, string | null][] = [
    ["bad credential", irError("authentication", "Incorrect API key provided"), 401, "invalid_request_error", "invalid_api_key", null],
    ["pool not allowed", irError("permission", "not allowed"), 403, "permission_error", null, null],
    ["unknown model", irError("not_found", "The model `x` does not exist"), 404, "invalid_request_error", "model_not_found", null],
    ["rate limit", irError("rate_limit", "slow down", { retryAfterSecs: 7 }), 429, "rate_limit_error", "rate_limit_exceeded", "7"],
    ["budget exhausted", irError("insufficient_quota", "budget exhausted"), 429, "insufficient_quota", "insufficient_quota", null],
    ["pool exhausted", irError("overloaded", "busy", { retryAfterSecs: 2.2 }), 503, "server_error", null, "3"],
    ["malformed body", irError("invalid_request", "input: required member missing", { param: "input" }), 400, "invalid_request_error", null, null],
  ];
  for (const [name, error, status, type, code, retryAfter] of table) {
    test(`encodeError: ${name} -> ${status} ${type}`, async () => {
      const response = encodeError(error);
      expect(response.status).toBe(status);
      expect(response.headers.get("retry-after")).toBe(retryAfter);
      expect(await response.json()).toEqual({ error: { message: error.message, type, param: error.param ?? null, code } });
    });
  }

  test("the official SDK raises its own typed errors from them", async () => {
    const create = (error: IrError) => rejection(sdk(() => encodeError(error)).responses.create({ model: "m", input: "Hi" }));
    expect(await create(irError("authentication", "bad key"))).toBeInstanceOf(AuthenticationError);
    expect(await create(irError("permission", "no"))).toBeInstanceOf(PermissionDeniedError);
    expect(await create(irError("not_found", "no model"))).toBeInstanceOf(NotFoundError);
    expect(await create(irError("rate_limit", "slow", { retryAfterSecs: 1 }))).toBeInstanceOf(RateLimitError);
    expect(await create(irError("insufficient_quota", "budget"))).toMatchObject({ status: 429, code: "insufficient_quota" });
    expect(await create(irError("overloaded", "busy"))).toBeInstanceOf(InternalServerError);
  });

  test("a failed response's code: rate limits and the upstream's own codes kept, the rest server_error (warned unless a server fault)", () => {
    const warnings: string[] = [];
    const warn = (w: string) => warnings.push(w);
    expect(failureOf(irError("rate_limit", "slow"), warn)).toEqual({ code: "rate_limit_exceeded", message: "slow" });
    expect(failureOf(irError("invalid_request", "bad image", { code: "invalid_image_url" }), warn)).toEqual({ code: "invalid_image_url", message: "bad image" });
    expect(failureOf(irError("timeout", "late"), warn)).toEqual({ code: "server_error", message: "late" });
    expect(warnings).toEqual([]);
    expect(failureOf(irError("authentication", "revoked"), warn)).toEqual({ code: "server_error", message: "revoked" });
    expect(warnings).toEqual(["authentication error has no code of a failed response; sent server_error"]);
  });
});

// ---- the adapter object ---------------------------------------------------------------------------------------

describe("adapter", () => {
  const request = (headers: Record<string, string>) => new Request("http://gateway.test/v1/responses", { method: "POST", headers });

  test("client credential: Authorization: Bearer", () => {
    expect(responses.clientCredential(request({ authorization: "Bearer sk-a" }))).toBe("sk-a");
    expect(responses.clientCredential(request({ authorization: "bearer sk-b" }))).toBe("sk-b");
    expect(responses.clientCredential(request({ "x-api-key": "sk-c" }))).toBeUndefined();
    expect(responses.clientCredential(request({}))).toBeUndefined();
  });

  test("egress headers, path and in-place model rewrite", () => {
    expect(responses.name).toBe("responses");
    expect(responses.authHeaders("sk-up")).toEqual({ authorization: "Bearer sk-up" });
    expect(responses.upstreamPath("gpt-5", true)).toBe("/responses");
    expect(responses.upstreamPath("gpt-5", false)).toBe("/responses");
    const wire = { model: "pool", previous_response_id: "resp_1", unknown_member: 1 };
    expect(responses.rewriteModel(wire, "gpt-5")).toBe(wire);
    expect(wire).toEqual({ model: "gpt-5", previous_response_id: "resp_1", unknown_member: 1 });
    expect(responses.streamHeaders["content-type"]).toBe("text/event-stream; charset=utf-8");
  });
});
