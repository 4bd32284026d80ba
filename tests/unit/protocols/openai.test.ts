// The OpenAI Chat Completions adapter: golden fixtures from OpenAI's API reference in both directions,
// streams chunk by chunk (and split at awkward byte boundaries), the include_usage rule, the error table,
// failure classes, 400s naming the member, warnings for what is dropped, and the official SDK reading
// what the encoders write.
import { describe, expect, test } from "bun:test";
import OpenAI, { APIError, AuthenticationError, BadRequestError, InternalServerError, NotFoundError, PermissionDeniedError, RateLimitError } from "openai";
import { irError, type IrError, type IrRequest, type IrResponse, type IrStreamPart } from "../../../src/ir/index.ts";
import { openai } from "../../../src/protocols/openai/index.ts";
import { effortForBudget } from "../../../src/protocols/openai/request.ts";
import { finishFromWire, finishToWire } from "../../../src/protocols/openai/errors.ts";
import basic from "../../fixtures/protocols/openai/chat-basic.json";
import tools from "../../fixtures/protocols/openai/chat-tools.json";
import image from "../../fixtures/protocols/openai/chat-image.json";
import streamText from "../../fixtures/protocols/openai/stream-text.json";
import streamTools from "../../fixtures/protocols/openai/stream-tools.json";
import errors from "../../fixtures/protocols/openai/errors.json";
import { parserTransform } from "../../../src/transport/push-parser.ts";

const utf8 = new TextEncoder();
const text = new TextDecoder();

interface RequestCase {
  wire: unknown;
  ir: unknown;
  upstreamModel: string;
  encoded: unknown;
}
interface ResponseCase {
  wire: unknown;
  ir: unknown;
  encoded: unknown;
}

function decoded(body: unknown): { value: IrRequest; warnings: readonly string[] } {
  const result = openai.decodeRequest(body, {});
  if (!result.ok) throw new Error(`expected a decoded request, got ${result.error.message}`);
  return result;
}
function rejected(body: unknown): IrError {
  const result = openai.decodeRequest(body, {});
  if (result.ok) throw new Error("expected a 400");
  return result.error;
}
const chat = (extra: Record<string, unknown> = {}, messages: unknown[] = [{ role: "user", content: "Hi" }]) => ({ model: "m", messages, ...extra });

async function collect<T>(readable: ReadableStream<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of readable) out.push(item);
  return out;
}
async function decodeStream(pieces: Uint8Array[]): Promise<IrStreamPart[]> {
  const decoder = parserTransform(openai.createStreamParser());
  const parts = collect(decoder.readable);
  const writer = decoder.writable.getWriter();
  for (const piece of pieces) await writer.write(piece);
  await writer.close();
  return parts;
}
async function encodeStream(request: IrRequest, parts: readonly IrStreamPart[]): Promise<{ events: string[]; warnings: string[] }> {
  const warnings: string[] = [];
  const encoder = openai.createStreamEncoder(request, (w) => warnings.push(w));
  const bytes = collect(encoder.readable);
  const writer = encoder.writable.getWriter();
  for (const part of parts) await writer.write(part);
  await writer.close();
  return { events: (await bytes).map((b) => text.decode(b)), warnings };
}
/** Every `size` bytes, so events, JSON and multi-byte characters are cut anywhere. */
function slices(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.slice(i, i + size));
  return out;
}
const dataOf = (event: string) => JSON.parse(event.slice("data: ".length)) as Record<string, unknown>;

describe("golden fixtures: requests", () => {
  const cases: [string, RequestCase][] = [
    ["plain (Default example)", basic.request],
    ["tools (Functions example)", tools.request],
    ["tool result turn", tools.toolResultTurn],
    ["image input", image.request],
  ];
  for (const [name, c] of cases) {
    test(`${name}: wire -> IR`, () => {
      const { value, warnings } = decoded(c.wire);
      expect(value).toStrictEqual(c.ir as IrRequest);
      expect(warnings).toEqual([]);
    });
    test(`${name}: IR -> wire (fixture's encoded form)`, () => {
      const encoded = openai.encodeRequest(c.ir as IrRequest, c.upstreamModel);
      expect(encoded.path).toBe("/chat/completions");
      expect(encoded.body).toStrictEqual(c.encoded);
      expect(encoded.warnings).toEqual([]);
    });
    test(`${name}: the encoded form decodes back to the same IR`, () => {
      expect(decoded(openai.encodeRequest(c.ir as IrRequest, "m2").body).value).toStrictEqual({ ...(c.ir as IrRequest), model: "m2" });
    });
  }
});

describe("golden fixtures: responses", () => {
  const cases: [string, ResponseCase][] = [
    ["plain", basic.response],
    ["tool call", tools.response],
    ["image", image.response],
  ];
  for (const [name, c] of cases) {
    test(`${name}: wire -> IR -> wire`, () => {
      const result = openai.decodeResponse(c.wire);
      if (!result.ok) throw new Error(result.error.message);
      expect(result.value).toStrictEqual(c.ir as IrResponse);
      const warnings: string[] = [];
      expect(openai.encodeResponse(result.value, (w) => warnings.push(w))).toStrictEqual(c.encoded);
      expect(warnings).toEqual([]);
    });
  }

  test("usage: prompt_tokens includes cached tokens, completion_tokens includes reasoning", () => {
    const wire = { ...basic.response.wire, usage: { prompt_tokens: 1000, completion_tokens: 300, total_tokens: 1300, prompt_tokens_details: { cached_tokens: 800 }, completion_tokens_details: { reasoning_tokens: 200 } } };
    const result = openai.decodeResponse(wire);
    if (!result.ok) throw new Error(result.error.message);
    expect(result.value.usage).toEqual({ inputNoCache: 200, inputCacheRead: 800, inputCacheWrite: 0, output: 300, outputReasoning: 200 });
    const back = openai.encodeResponse({ ...result.value, usage: { ...result.value.usage, inputCacheWrite: 50 } }, () => {}) as { usage: unknown };
    expect(back.usage).toEqual({ prompt_tokens: 1050, completion_tokens: 300, total_tokens: 1350, prompt_tokens_details: { cached_tokens: 800, cache_write_tokens: 50 }, completion_tokens_details: { reasoning_tokens: 200 } });
    expect(openai.usageFromResponse(wire)).toEqual({ inputNoCache: 200, inputCacheRead: 800, inputCacheWrite: 0, output: 300, outputReasoning: 200 });
    expect(openai.usageFromResponse({ id: "x" })).toBeUndefined();
  });

  test("compatible servers: reasoning_content becomes a reasoning part; refusal becomes text; an error body is an error", () => {
    const result = openai.decodeResponse({ choices: [{ message: { content: "4", reasoning_content: "2+2", refusal: null }, finish_reason: "stop" }] });
    if (!result.ok) throw new Error(result.error.message);
    expect(result.value.content).toEqual([{ type: "reasoning", text: "2+2" }, { type: "text", text: "4" }]);
    const warnings: string[] = [];
    const wire = openai.encodeResponse(result.value, (w) => warnings.push(w)) as { choices: { message: unknown }[] };
    expect(wire.choices[0]?.message).toEqual({ role: "assistant", content: "4", refusal: null });
    expect(warnings).toEqual(["reasoning has no Chat Completions response form; dropped"]);
    const refusal = openai.decodeResponse({ choices: [{ message: { content: null, refusal: "I can't help with that." }, finish_reason: "stop" }] });
    expect(refusal.ok && refusal.value.content).toEqual([{ type: "text", text: "I can't help with that." }]);
    const failed = openai.decodeResponse({ error: { message: "boom", type: "server_error", param: null, code: null } });
    expect(failed.ok ? undefined : failed.error.failure).toBe("transient");
    expect(openai.decodeResponse({ choices: [] }).ok).toBe(false);
  });
});

describe("golden fixtures: streams", () => {
  const cases = [
    ["text (Streaming example)", streamText],
    ["tool call (function-calling guide)", streamTools],
  ] as const;
  for (const [name, fixture] of cases) {
    const bytes = utf8.encode(fixture.sse.join(""));
    test(`${name}: decoded event by event`, async () => {
      expect(await decodeStream(fixture.sse.map((e) => utf8.encode(e)))).toStrictEqual(fixture.ir as IrStreamPart[]);
    });
    for (const size of [1, 2, 3, 7, 64]) {
      test(`${name}: decoded from ${size}-byte pieces`, async () => {
        expect(await decodeStream(slices(bytes, size))).toStrictEqual(fixture.ir as IrStreamPart[]);
      });
    }
    test(`${name}: IR parts encode to the fixture's events, one event per write`, async () => {
      const { events, warnings } = await encodeStream(fixture.request as IrRequest, fixture.ir as IrStreamPart[]);
      expect(events).toEqual(fixture.encoded);
      expect(warnings).toEqual([]);
    });
    test(`${name}: the encoded stream decodes back to the same IR parts`, async () => {
      const { events } = await encodeStream(fixture.request as IrRequest, fixture.ir as IrStreamPart[]);
      expect(await decodeStream([utf8.encode(events.join(""))])).toStrictEqual(fixture.ir as IrStreamPart[]);
    });
  }

  test("a multi-byte character cut between pieces arrives whole", async () => {
    const event = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Bogotá 👋"},"finish_reason":null}]}\n\ndata: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n`;
    const bytes = utf8.encode(event);
    const emoji = bytes.indexOf(0xf0);
    const parts = await decodeStream([bytes.slice(0, emoji + 2), bytes.slice(emoji + 2)]);
    expect(parts.filter((p) => p.type === "text-delta")).toEqual([{ type: "text-delta", id: "text-0", delta: "Bogotá 👋" }]);
  });

  test("each IR part is written the moment it arrives (no buffering)", async () => {
    const encoder = openai.createStreamEncoder(streamText.request as IrRequest, () => {});
    const writer = encoder.writable.getWriter();
    const reader = encoder.readable.getReader();
    void writer.write({ type: "start", id: "c1", model: "m", created: 5 });
    expect(dataOf(text.decode((await reader.read()).value))).toMatchObject({ id: "c1", choices: [{ delta: { role: "assistant", content: "" } }] });
    void writer.write({ type: "text-delta", id: "t", delta: "Hi" });
    expect(dataOf(text.decode((await reader.read()).value))).toMatchObject({ id: "c1", created: 5, model: "m", choices: [{ delta: { content: "Hi" } }] });
  });
});

describe("stream decoder", () => {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices, ...extra })}\n\n`;
  const delta = (d: Record<string, unknown>, finish: string | null = null) => chunk([{ index: 0, delta: d, finish_reason: finish }]);
  const run = (...events: string[]) => decodeStream([utf8.encode(events.join(""))]);

  test("parallel tool calls: one block per tool_calls[].index, interleaved, ended in index order at the finish", async () => {
    const parts = await run(
      delta({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "f", arguments: "" } }] }),
      delta({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "g", arguments: '{"x"' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '{"y":1}' } }] }),
      delta({ tool_calls: [{ index: 1, function: { arguments: ":2}" } }] }),
      delta({}, "tool_calls"),
      "data: [DONE]\n\n",
    );
    expect(parts.slice(1)).toEqual([
      { type: "tool-call-start", id: "tool-0", toolCallId: "call_a", name: "f" },
      { type: "tool-call-start", id: "tool-1", toolCallId: "call_b", name: "g" },
      { type: "tool-call-delta", id: "tool-1", argumentsDelta: '{"x"' },
      { type: "tool-call-delta", id: "tool-0", argumentsDelta: '{"y":1}' },
      { type: "tool-call-delta", id: "tool-1", argumentsDelta: ":2}" },
      { type: "tool-call-end", id: "tool-0" },
      { type: "tool-call-end", id: "tool-1" },
      { type: "finish", finishReason: { unified: "tool_calls", raw: "tool_calls" } },
    ]);
  });

  test("reasoning_content deltas are a reasoning block, closed when the text begins", async () => {
    const parts = await run(delta({ reasoning_content: "Think" }), delta({ reasoning_content: "ing" }), delta({ content: "Done" }), delta({}, "length"), "data: [DONE]\n\n");
    expect(parts.slice(1)).toEqual([
      { type: "reasoning-start", id: "reasoning-0" },
      { type: "reasoning-delta", id: "reasoning-0", delta: "Think" },
      { type: "reasoning-delta", id: "reasoning-0", delta: "ing" },
      { type: "reasoning-end", id: "reasoning-0" },
      { type: "text-start", id: "text-1" },
      { type: "text-delta", id: "text-1", delta: "Done" },
      { type: "text-end", id: "text-1" },
      { type: "finish", finishReason: { unified: "length", raw: "length" } },
    ]);
  });

  test("an in-stream error object becomes an IR error and nothing follows it", async () => {
    const parts = await run(delta({ content: "par" }), `data: ${JSON.stringify({ error: { message: "Rate limit reached", type: "rate_limit_error", param: null, code: "rate_limit_exceeded" } })}\n\n`, delta({ content: "tial" }), "data: [DONE]\n\n");
    expect(parts.at(-1)).toEqual({ type: "error", error: { kind: "rate_limit", status: 429, message: "Rate limit reached", failure: "rate_limit", code: "rate_limit_exceeded" } });
    expect(parts.filter((p) => p.type === "text-delta")).toHaveLength(1);
  });

  test("SSE comments (keep-alives some compatible servers send) and anything after [DONE] are ignored", async () => {
    const parts = await run(": OPENROUTER PROCESSING\n\n", delta({ content: "ok" }), ": ping\n\n", delta({}, "stop"), "data: [DONE]\n\n", delta({ content: "late" }));
    expect(parts.map((p) => p.type)).toEqual(["start", "text-start", "text-delta", "text-end", "finish"]);
  });

  test("a stream cut before its finish ends with an error, never a silent end; one with a finish but no [DONE] still finishes", async () => {
    const cut = await run(delta({ content: "par" }));
    expect(cut.at(-1)).toMatchObject({ type: "error", error: { kind: "api_error", failure: "transient" } });
    const noDone = await run(delta({ content: "ok" }), delta({}, "stop"));
    expect(noDone.at(-1)).toEqual({ type: "finish", finishReason: { unified: "stop", raw: "stop" } });
  });

  test("usage on every chunk (vLLM continuous usage) is reported each time; later values win", async () => {
    const parts = await run(chunk([{ index: 0, delta: { content: "a" }, finish_reason: null }], { usage: { prompt_tokens: 5, completion_tokens: 1 } }), chunk([{ index: 0, delta: {}, finish_reason: "stop" }], { usage: { prompt_tokens: 5, completion_tokens: 2 } }), "data: [DONE]\n\n");
    expect(parts.filter((p) => p.type === "usage").map((p) => p.type === "usage" && p.usage.output)).toEqual([1, 2]);
    expect(parts.at(-1)?.type).toBe("finish");
  });
});

describe("stream encoder", () => {
  const request = (includeUsage: boolean): IrRequest => ({ model: "m", system: [], messages: [], tools: [], sampling: {}, stream: true, ...(includeUsage ? { includeUsage } : {}) });
  const parts: IrStreamPart[] = [
    { type: "start", id: "c", model: "m", created: 1 },
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "Hi" },
    { type: "text-end", id: "t" },
    { type: "usage", usage: { inputNoCache: 3, inputCacheRead: 4, inputCacheWrite: 0, output: 2, outputReasoning: 0 } },
    { type: "finish", finishReason: { unified: "stop", raw: "end_turn" } },
  ];

  test("include_usage absent: no usage chunk and no usage member anywhere", async () => {
    const { events } = await encodeStream(request(false), parts);
    expect(events.at(-1)).toBe("data: [DONE]\n\n");
    expect(events.slice(0, -1).map(dataOf).every((c) => !("usage" in c) && Array.isArray(c.choices) && c.choices.length === 1)).toBe(true);
  });

  test("include_usage true: usage null on every chunk, then a usage chunk with empty choices, then [DONE]", async () => {
    const { events } = await encodeStream(request(true), parts);
    const chunks = events.slice(0, -1).map(dataOf);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks.at(-1)).toEqual({ id: "c", object: "chat.completion.chunk", created: 1, model: "m", choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 0 } } });
    expect(events.at(-1)).toBe("data: [DONE]\n\n");
  });

  test("tool indices are OpenAI's own, 0-based in the order the IR blocks start", async () => {
    const { events } = await encodeStream(request(false), [
      { type: "start", id: "c", model: "m", created: 1 },
      { type: "tool-call-start", id: "toolu_x", toolCallId: "toolu_x", name: "f" },
      { type: "tool-call-start", id: "block-7", toolCallId: "toolu_y", name: "g" },
      { type: "tool-call-delta", id: "block-7", argumentsDelta: "{}" },
      { type: "tool-call-delta", id: "toolu_x", argumentsDelta: "{" },
      { type: "finish", finishReason: { unified: "tool_calls" } },
    ]);
    const calls = events.slice(1, 5).map((e) => (dataOf(e).choices as { delta: { tool_calls: { index: number; id?: string }[] } }[])[0]?.delta.tool_calls[0]);
    expect(calls.map((c) => [c?.index, c?.id])).toEqual([[0, "toolu_x"], [1, "toolu_y"], [1, undefined], [0, undefined]]);
    expect((dataOf(events.at(-2) ?? "").choices as { finish_reason: string }[])[0]?.finish_reason).toBe("tool_calls");
  });

  test("an IR error ends the stream with data: {error} and no [DONE]; later parts are ignored", async () => {
    const { events } = await encodeStream(request(true), [parts[0] as IrStreamPart, parts[2] as IrStreamPart, { type: "error", error: irError("overloaded", "upstream overloaded") }, parts[2] as IrStreamPart]);
    expect(events).toHaveLength(3);
    expect(dataOf(events[2] ?? "")).toEqual({ error: { message: "upstream overloaded", type: "server_error", param: null, code: null } });
    expect(events.join("")).not.toContain("[DONE]");
  });

  test("reasoning is dropped with one warning; an IR stream that stops without finish ends with an error event", async () => {
    const { events, warnings } = await encodeStream(request(false), [parts[0] as IrStreamPart, { type: "reasoning-start", id: "r" }, { type: "reasoning-delta", id: "r", delta: "hm" }, { type: "reasoning-end", id: "r" }, { type: "reasoning-start", id: "r2" }]);
    expect(warnings).toEqual(["reasoning has no Chat Completions stream form; dropped"]);
    expect(dataOf(events.at(-1) ?? "")).toMatchObject({ error: { type: "server_error" } });
  });
});

describe("the official OpenAI SDK reads what the encoders write", () => {
  const client = (respond: () => Response) => new OpenAI({ apiKey: "k", baseURL: "http://gateway.test/v1", maxRetries: 0, fetch: async () => respond() });
  const streamResponse = (request: IrRequest, parts: readonly IrStreamPart[]) =>
    new Response(new ReadableStream<IrStreamPart>({ start: (c) => { for (const p of parts) c.enqueue(p); c.close(); } }).pipeThrough(openai.createStreamEncoder(request, () => {})), { headers: openai.streamHeaders });

  test("a streamed tool call with include_usage", async () => {
    const sdk = client(() => streamResponse(streamTools.request as IrRequest, streamTools.ir as IrStreamPart[]));
    const stream = await sdk.chat.completions.create({ model: "gpt-4.1", messages: [{ role: "user", content: "Weather?" }], stream: true, stream_options: { include_usage: true } });
    let args = "";
    let usage: unknown;
    for await (const chunk of stream) {
      args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(JSON.parse(args)).toEqual({ location: "Paris, France" });
    expect(usage).toMatchObject({ prompt_tokens: 120, prompt_tokens_details: { cached_tokens: 64 } });
  });

  test("an in-stream error makes the SDK throw", async () => {
    const sdk = client(() => streamResponse(streamText.request as IrRequest, [{ type: "start", id: "c", model: "m", created: 1 }, { type: "error", error: irError("api_error", "upstream failed") }]));
    const stream = await sdk.chat.completions.create({ model: "m", messages: [{ role: "user", content: "Hi" }], stream: true });
    const drain = async () => {
      for await (const _ of stream) void _;
    };
    await expect(drain()).rejects.toBeInstanceOf(APIError);
  });

  type ErrorClass = new (...args: never[]) => APIError;
  const table: [IrError, ErrorClass, number, string, string | null][] = [
    [irError("authentication", "Incorrect API key provided."), AuthenticationError, 401, "invalid_request_error", "invalid_api_key"],
    [irError("permission", "Pool not allowed for this key."), PermissionDeniedError, 403, "permission_error", null],
    [irError("not_found", "The model `x` does not exist.", { param: "model" }), NotFoundError, 404, "invalid_request_error", "model_not_found"],
    [irError("rate_limit", "Rate limit reached.", { retryAfterSecs: 6.2 }), RateLimitError, 429, "rate_limit_error", "rate_limit_exceeded"],
    [irError("insufficient_quota", "Budget exhausted."), RateLimitError, 429, "insufficient_quota", "insufficient_quota"],
    [irError("overloaded", "Every lane is unavailable.", { retryAfterSecs: 30 }), InternalServerError, 503, "server_error", null],
    [irError("invalid_request", "messages[0].content: expected string or array", { param: "messages[0].content" }), BadRequestError, 400, "invalid_request_error", null],
    [irError("request_too_large", "Body over 10 MiB."), APIError, 413, "invalid_request_error", "request_too_large"],
    [irError("api_error", "Internal error."), InternalServerError, 500, "server_error", null],
  ];
  for (const [error, type, status, wireType, code] of table) {
    test(`encodeError ${error.kind}: ${status} ${wireType}${code ? ` / ${code}` : ""} -> ${type.name}`, async () => {
      const response = openai.encodeError(error);
      expect(response.status).toBe(status);
      expect(await response.clone().json()).toEqual({ error: { message: error.message, type: wireType, param: error.param ?? null, code } });
      const caught = await client(() => response)
        .chat.completions.create({ model: "m", messages: [{ role: "user", content: "Hi" }] })
        .catch((e: unknown) => e);
      expect(caught).toBeInstanceOf(type);
      expect((caught as APIError).status).toBe(status);
      const retryAfter = status === 429 && error.retryAfterSecs !== undefined ? "7" : status === 503 ? "30" : null;
      expect(response.headers.get("retry-after")).toBe(retryAfter);
    });
  }
});

describe("upstream errors and failure classes", () => {
  for (const c of errors.upstream) {
    test(`fixture: ${c.name}`, () => {
      expect(openai.decodeError(c.status, JSON.stringify(c.body), new Headers(c.headers as Record<string, string>))).toStrictEqual(c.ir as IrError);
    });
  }

  const classify = (status: number, body: string, headers: Record<string, string> = {}) => openai.decodeError(status, body, new Headers(headers));
  const body = (error: Record<string, unknown>) => JSON.stringify({ error: { message: "m", type: null, param: null, code: null, ...error } });
  test.each([
    [400, body({ code: "context_length_exceeded" }), "context_length"],
    [400, JSON.stringify({ object: "error", message: "This model's maximum context length is 4096 tokens.", type: "BadRequestError", param: null, code: 400 }), "context_length"],
    [429, body({ type: "insufficient_quota", code: "insufficient_quota" }), "quota"],
    [401, body({ code: "invalid_api_key" }), "credential"],
    [403, body({}), "credential"],
    [429, body({ code: "rate_limit_exceeded" }), "rate_limit"],
    [500, body({}), "transient"],
    [502, "<html>Bad gateway</html>", "transient"],
    [503, "", "transient"],
    [408, "", "transient"],
    [400, body({ code: "invalid_value" }), "caller"],
    [404, body({ code: "model_not_found" }), "caller"],
    [422, "not json", "caller"],
  ])("HTTP %d %s -> %s", (status, text, failure) => {
    expect(classify(status, text).failure).toBe(failure as IrError["failure"]);
  });

  test("Retry-After in seconds or retry-after-ms; a body that is not JSON keeps its start as the message", () => {
    expect(classify(429, body({}), { "retry-after": "3" }).retryAfterSecs).toBe(3);
    expect(classify(429, body({}), { "retry-after-ms": "250", "retry-after": "1" }).retryAfterSecs).toBe(0.25);
    expect(classify(429, body({})).retryAfterSecs).toBeUndefined();
    expect(classify(502, "<html>Bad gateway</html>").message).toBe("<html>Bad gateway</html>");
    expect(classify(503, "").message).toBe("upstream answered HTTP 503");
  });

  test("finish reasons both ways, including the legacy function_call", () => {
    expect(["stop", "length", "tool_calls", "content_filter", "function_call"].map((r) => finishFromWire(r).unified)).toEqual(["stop", "length", "tool_calls", "content_filter", "tool_calls"]);
    expect(finishFromWire(null)).toEqual({ unified: "other" });
    expect(finishFromWire("weird")).toEqual({ unified: "other", raw: "weird" });
    expect((["stop", "length", "tool_calls", "content_filter", "pause", "error", "other"] as const).map((u) => finishToWire({ unified: u }))).toEqual(["stop", "length", "tool_calls", "content_filter", "stop", "stop", "stop"]);
    const warnings: string[] = [];
    openai.encodeResponse({ ...(basic.response.ir as IrResponse), finishReason: { unified: "pause", raw: "pause_turn" } }, (w) => warnings.push(w));
    expect(warnings).toEqual(["finish reason pause_turn sent as stop"]);
  });
});

describe("client input: 400s name the member", () => {
  test.each([
    ["not an object", [], "(root)", "(root): expected a JSON object"],
    ["no model", { messages: [{ role: "user", content: "x" }] }, "model", "model: required member missing (expected a non-empty string)"],
    ["empty messages", chat({}, []), "messages", "messages: expected a non-empty array of messages"],
    ["content of the wrong type", chat({}, [{ role: "system", content: "s" }, { role: "user", content: "a" }, { role: "user", content: 42 }]), "messages[2].content", "messages[2].content: expected string or array"],
    ["unknown role", chat({}, [{ role: "robot", content: "x" }]), "messages[0].role", 'messages[0].role: expected one of system, developer, user, assistant, tool, got "robot"'],
    ["part without text", chat({}, [{ role: "user", content: [{ type: "text" }] }]), "messages[0].content[0].text", "messages[0].content[0].text: required member missing"],
    ["unknown part type", chat({}, [{ role: "user", content: [{ type: "video", video: {} }] }]), "messages[0].content[0].type", 'messages[0].content[0].type: expected one of text, image_url, input_audio, file, got "video"'],
    ["image in a system message", chat({}, [{ role: "system", content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }] }]), "messages[0].content[0].type", 'messages[0].content[0].type: expected "text" (this role takes text parts only), got "image_url"'],
    ["image by ftp", chat({}, [{ role: "user", content: [{ type: "image_url", image_url: { url: "ftp://x/y.png" } }] }]), "messages[0].content[0].image_url.url", "messages[0].content[0].image_url.url: expected an http(s) URL or a base64 data: URL"],
    ["data URL that is not base64", chat({}, [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png,abc" } }] }]), "messages[0].content[0].image_url.url", "messages[0].content[0].image_url.url: expected a base64 data: URL (data:<media type>;base64,<data>)"],
    ["uploaded file id", chat({}, [{ role: "user", content: [{ type: "file", file: { file_id: "file-abc" } }] }]), "messages[0].content[0].file", "messages[0].content[0].file: file_id refers to OpenAI file storage, which other providers cannot read; send file_data"],
    ["tool message without tool_call_id", chat({}, [{ role: "tool", content: "r" }]), "messages[0].tool_call_id", "messages[0].tool_call_id: required member missing"],
    ["temperature as text", chat({ temperature: "hot" }), "temperature", "temperature: expected number"],
    ["n > 1", chat({ n: 2 }), "n", "n: only one choice (n = 1) can be generated through this gateway's protocol translation"],
    ["legacy functions", chat({ functions: [{ name: "f" }] }), "functions", "functions: deprecated and not supported across protocols; use tools and tool_choice"],
    ["audio output", chat({ modalities: ["text", "audio"], audio: { voice: "alloy", format: "mp3" } }), "modalities", "modalities: audio output cannot be produced across protocols"],
    ["custom tool", chat({ tools: [{ type: "custom", custom: { name: "c" } }] }), "tools[0].type", 'tools[0].type: only function tools can cross protocols, got "custom"'],
    ["tool without name", chat({ tools: [{ type: "function", function: { description: "d" } }] }), "tools[0].function.name", "tools[0].function.name: required member missing"],
    ["bad tool_choice", chat({ tool_choice: "any" }), "tool_choice", 'tool_choice: expected one of auto, none, required or an object, got "any"'],
    ["bad response_format", chat({ response_format: { type: "xml" } }), "response_format.type", 'response_format.type: expected one of text, json_object, json_schema, got "xml"'],
    ["json_schema without name", chat({ response_format: { type: "json_schema", json_schema: { schema: {} } } }), "response_format.json_schema.name", "response_format.json_schema.name: required member missing"],
    ["bad reasoning_effort", chat({ reasoning_effort: "extreme" }), "reasoning_effort", 'reasoning_effort: expected one of none, minimal, low, medium, high, xhigh, max, got "extreme"'],
    ["stop of numbers", chat({ stop: [1] }), "stop", "stop: expected string or array of strings"],
  ])("%s", (_name, body, param, message) => {
    const error = rejected(body);
    expect(error).toMatchObject({ kind: "invalid_request", status: 400, param, message });
    expect(openai.encodeError(error).status).toBe(400);
  });
});

describe("client input: what maps and what is dropped with a warning", () => {
  test("every sampling member, tool choice, format, effort, stream options and user map to the IR", () => {
    const { value, warnings } = decoded(
      chat({
        temperature: 0.2, top_p: 0.9, max_completion_tokens: 50, max_tokens: 99, stop: "END", seed: 7, frequency_penalty: 0.1, presence_penalty: -0.1,
        response_format: { type: "json_schema", json_schema: { name: "n", schema: { type: "object" }, strict: true } },
        reasoning_effort: "low", stream: true, stream_options: { include_usage: true }, user: "u-1", parallel_tool_calls: false,
        tools: [{ type: "function", function: { name: "f" } }], tool_choice: { type: "function", function: { name: "f" } }, n: 1,
      }),
    );
    expect(warnings).toEqual([]);
    expect(value).toMatchObject({
      sampling: { temperature: 0.2, topP: 0.9, maxTokens: 50, stop: ["END"], seed: 7, frequencyPenalty: 0.1, presencePenalty: -0.1 },
      responseFormat: { type: "json_schema", name: "n", schema: { type: "object" }, strict: true },
      reasoning: { effort: "low" }, stream: true, includeUsage: true, user: "u-1", parallelToolCalls: false,
      tools: [{ name: "f", parameters: { type: "object", properties: {} } }], toolChoice: { type: "tool", name: "f" },
    });
    expect(decoded(chat({ response_format: { type: "json_object" } })).value.responseFormat).toEqual({ type: "json" });
    expect(decoded(chat({ stop: ["a", "b"] })).value.sampling).toEqual({ stop: ["a", "b"] });
    expect(decoded(chat({ stop: [] })).value.sampling).toEqual({});
    expect(decoded(chat({ stream: false, stream_options: { include_usage: true } })).value.includeUsage).toBeUndefined();
  });

  test("members the IR does not model are dropped, each with a warning naming it", () => {
    const { value, warnings } = decoded(
      chat({ logit_bias: { "50256": -100 }, logprobs: true, metadata: { a: "b" }, store: true, service_tier: "flex", stream_options: { include_usage: false, include_obfuscation: false }, temperature: null, verbosity: "low" }, [
        { role: "user", name: "ann", content: [{ type: "text", text: "look", prompt_cache_breakpoint: { mode: "explicit" } }, { type: "image_url", image_url: { url: "https://x/y.png", detail: "high" } }, { type: "input_audio", input_audio: { data: "AAA", format: "wav" } }] },
      ]),
    );
    expect(warnings).toEqual([
      "logit_bias: not modelled across protocols; dropped",
      "logprobs: not modelled across protocols; dropped",
      "metadata: not modelled across protocols; dropped",
      "store: not modelled across protocols; dropped",
      "service_tier: not modelled across protocols; dropped",
      "verbosity: not modelled across protocols; dropped",
      "stream_options.include_obfuscation: not modelled across protocols; dropped",
      "messages[0].name: not modelled across protocols; dropped",
      "messages[0].content[0].prompt_cache_breakpoint: not modelled across protocols; dropped",
      "messages[0].content[1].image_url.detail: not modelled across protocols; dropped",
      "messages[0].content[2]: audio input is not modelled across protocols; dropped",
    ]);
    expect(value.messages[0]?.content).toEqual([{ type: "text", text: "look" }, { type: "image", source: { kind: "url", url: "https://x/y.png" } }]);
    expect(value.sampling).toEqual({});
  });

  test("reasoning_effort outside the IR's words: xhigh and max clamp to high, none is dropped; each warns", () => {
    expect(decoded(chat({ reasoning_effort: "xhigh" }))).toEqual({ ok: true, value: expect.objectContaining({ reasoning: { effort: "high" } }), warnings: ["reasoning_effort: xhigh clamped to high"] } as never);
    const none = decoded(chat({ reasoning_effort: "none" }));
    expect(none.value.reasoning).toBeUndefined();
    expect(none.warnings).toHaveLength(1);
  });

  test("system and developer become IR system, in order; one after the conversation began is moved with a warning", () => {
    const { value, warnings } = decoded(chat({}, [{ role: "system", content: "a" }, { role: "developer", content: [{ type: "text", text: "b" }] }, { role: "user", content: "q" }, { role: "system", content: "c" }]));
    expect(value.system).toEqual([{ type: "text", text: "a" }, { type: "text", text: "b" }, { type: "text", text: "c" }]);
    expect(warnings).toEqual(["messages[3]: a system message after the conversation began is moved into the system instructions"]);
  });

  test("consecutive tool messages become one IR tool message, in order; assistant refusal and text parts are text", () => {
    const call = (id: string) => ({ id, type: "function", function: { name: "f", arguments: "{}" } });
    const { value } = decoded(chat({}, [
      { role: "user", content: "q" },
      { role: "assistant", content: [{ type: "text", text: "Let me check." }, { type: "refusal", refusal: "Not that." }], tool_calls: [call("a"), call("b")] },
      { role: "tool", tool_call_id: "a", content: "ra" },
      { role: "tool", tool_call_id: "b", content: [{ type: "text", text: "rb" }] },
      { role: "user", content: "next" },
      { role: "tool", tool_call_id: "c", content: "rc" },
    ]));
    expect(value.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user", "tool"]);
    expect(value.messages[1]?.content.map((p) => p.type)).toEqual(["text", "text", "tool_call", "tool_call"]);
    expect(value.messages[2]).toEqual({ role: "tool", content: [{ type: "tool_result", toolCallId: "a", content: [{ type: "text", text: "ra" }] }, { type: "tool_result", toolCallId: "b", content: [{ type: "text", text: "rb" }] }] });
  });

  test("data: URLs become base64 images and documents; allowed_tools keeps only the allowed tools", () => {
    const { value, warnings } = decoded(chat({ tools: [{ type: "function", function: { name: "f" } }, { type: "function", function: { name: "g" } }], tool_choice: { type: "allowed_tools", allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "g" } }] } } }, [
      { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0K" } }, { type: "file", file: { filename: "a.pdf", file_data: "data:application/pdf;base64,JVBERi0x" } }] },
    ]));
    expect(value.messages[0]?.content).toEqual([{ type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBORw0K" } }, { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0x" }, title: "a.pdf" }]);
    expect(value.tools.map((t) => t.name)).toEqual(["g"]);
    expect(value.toolChoice).toEqual({ type: "required" });
    expect(warnings).toEqual(["tool_choice.allowed_tools: expressed by sending only the allowed tools"]);
  });
});

describe("encoding for an upstream", () => {
  const ir = (extra: Partial<IrRequest>): IrRequest => ({ model: "pool", system: [], messages: [{ role: "user", content: [{ type: "text", text: "q" }] }], tools: [], sampling: {}, stream: false, ...extra });

  test("streaming always asks the upstream for usage (metering), whatever the client asked", () => {
    expect(openai.encodeRequest(ir({ stream: true }), "u").body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(openai.encodeRequest(ir({}), "u").body).not.toHaveProperty("stream_options");
  });

  test("what Chat Completions cannot take is dropped or clamped, each with a warning", () => {
    const encoded = openai.encodeRequest(
      ir({
        sampling: { topK: 40, stop: ["a", "b", "c", "d", "e"], maxTokens: 10 },
        messages: [
          { role: "user", content: [{ type: "text", text: "see" }, { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "/9j/" } }, { type: "document", source: { kind: "url", url: "https://x/a.pdf" } }, { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBE" }, title: "t.pdf" }] },
          { role: "assistant", content: [{ type: "reasoning", text: "hm", signature: "sig" }, { type: "tool_call", id: "c1", name: "f", arguments: "{}" }] },
          { role: "tool", content: [{ type: "tool_result", toolCallId: "c1", isError: true, content: [{ type: "text", text: "bad" }, { type: "image", source: { kind: "url", url: "https://x/i.png" } }] }] },
        ],
      }),
      "u",
    );
    expect(encoded.warnings).toEqual([
      "messages[0]: a document by URL has no Chat Completions form; dropped",
      "messages[1]: reasoning has no Chat Completions input form; dropped",
      "messages[2]: images in a tool result have no Chat Completions form; dropped",
      "messages[2]: the tool result's error flag has no Chat Completions form; dropped",
      "top_k has no Chat Completions form; dropped",
      "stop: 5 sequences clamped to the first 4",
    ]);
    expect(encoded.body).toMatchObject({
      max_completion_tokens: 10,
      stop: ["a", "b", "c", "d"],
      messages: [
        { role: "user", content: [{ type: "text", text: "see" }, { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/" } }, { type: "file", file: { filename: "t.pdf", file_data: "data:application/pdf;base64,JVBE" } }] },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "c1", content: "bad" },
      ],
    });
  });

  test("reasoning: an effort passes; a budget alone maps to an effort by the documented thresholds, with a warning", () => {
    expect(openai.encodeRequest(ir({ reasoning: { effort: "minimal" } }), "u").body).toMatchObject({ reasoning_effort: "minimal" });
    expect([0, 1, 1024, 1025, 8192, 8193, 32000].map(effortForBudget)).toEqual(["minimal", "low", "low", "medium", "medium", "high", "high"]);
    const encoded = openai.encodeRequest(ir({ reasoning: { budgetTokens: 16000 } }), "u");
    expect(encoded.body).toMatchObject({ reasoning_effort: "high" });
    expect(encoded.warnings).toEqual(["reasoning budget of 16000 tokens sent as reasoning_effort high"]);
  });

  test("tool choice, response formats and several system parts", () => {
    const body = openai.encodeRequest(ir({ system: [{ type: "text", text: "a" }, { type: "text", text: "b" }], toolChoice: { type: "tool", name: "f" }, responseFormat: { type: "json_schema", schema: { type: "object" } }, parallelToolCalls: true, user: "u1" }), "u").body;
    expect(body).toMatchObject({ tool_choice: { type: "function", function: { name: "f" } }, response_format: { type: "json_schema", json_schema: { name: "response", schema: { type: "object" } } }, parallel_tool_calls: true, user: "u1" });
    expect((body as { messages: unknown[] }).messages.slice(0, 2)).toEqual([{ role: "system", content: "a" }, { role: "system", content: "b" }]);
    expect(openai.encodeRequest(ir({ responseFormat: { type: "json" }, toolChoice: { type: "none" } }), "u").body).toMatchObject({ response_format: { type: "json_object" }, tool_choice: "none" });
  });
});

describe("adapter surface", () => {
  test("direct routes: the path's model wins and the body may omit model", () => {
    expect(openai.decodeRequest({ messages: [{ role: "user", content: "q" }] }, { pathModel: "groq/llama" })).toMatchObject({ ok: true, value: { model: "groq/llama" } });
    expect(openai.decodeRequest(chat({ model: "other" }), { pathModel: "alias" })).toMatchObject({ ok: true, value: { model: "alias" } });
    expect(openai.decodeRequest({ messages: [{ role: "user", content: "q" }] }, {})).toMatchObject({ ok: false, error: { param: "model" } });
  });

  test("credentials, paths, model rewrite and stream headers", () => {
    const request = (authorization?: string) => new Request("http://g/v1/chat/completions", { method: "POST", headers: authorization ? { authorization } : {} });
    expect(openai.name).toBe("openai");
    expect(openai.clientCredential(request("Bearer sk-1"))).toBe("sk-1");
    expect(openai.clientCredential(request("bearer sk-2"))).toBe("sk-2");
    expect(openai.clientCredential(request("Basic abc"))).toBeUndefined();
    expect(openai.clientCredential(request())).toBeUndefined();
    expect(openai.authHeaders("sk-up")).toEqual({ authorization: "Bearer sk-up" });
    expect(openai.upstreamPath("any", true)).toBe("/chat/completions");
    const body = { model: "pool", messages: [], logit_bias: { "1": 2 } };
    // In place, by contract: the body was parsed for this request alone; nothing else is touched.
    expect(openai.rewriteModel(body, "gpt-x")).toBe(body);
    expect(body).toEqual({ model: "gpt-x", messages: [], logit_bias: { "1": 2 } });
    expect(openai.streamHeaders["content-type"]).toStartWith("text/event-stream");
  });
});

describe("usageFromResponse (metering a same-protocol answer)", () => {
  test("reads each member on its own: cached and reasoning tokens split out, a member of the wrong type counts 0, no object is no usage", () => {
    const usage = { prompt_tokens: 57, completion_tokens: 47, prompt_tokens_details: { cached_tokens: 7 }, completion_tokens_details: { reasoning_tokens: 5 } };
    expect(openai.usageFromResponse({ usage })).toEqual({ inputNoCache: 50, inputCacheRead: 7, inputCacheWrite: 0, output: 47, outputReasoning: 5 });
    expect(openai.usageFromResponse({ usage: { prompt_tokens: "57", completion_tokens: 47, prompt_tokens_details: 3 } })).toEqual({ inputNoCache: 0, inputCacheRead: 0, inputCacheWrite: 0, output: 47, outputReasoning: 0 });
    expect(openai.usageFromResponse({ usage: { prompt_tokens: -4, completion_tokens: Number.NaN } })).toMatchObject({ inputNoCache: 0, output: 0 });
    for (const body of [{}, { usage: null }, { usage: 5 }, { usage: [1, 2] }, null, "usage"]) expect(openai.usageFromResponse(body)).toBeUndefined();
  });
});
