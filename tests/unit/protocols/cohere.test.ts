// The Cohere v2 Chat adapter: golden fixtures from Cohere's API reference both ways, streams chunk by
// chunk and part by part, the error table and failure classes, 400s naming the member, and the warnings
// for what cannot cross protocols. The official SDK (cohere-ai) reads the encoder's output as its own.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Cohere, CohereClientV2, CohereError } from "cohere-ai";
import { irError, type IrError, type IrFinishUnified, type IrRequest, type IrResponse, type IrStreamPart } from "../../../src/ir/index.ts";
import { adapterFor } from "../../../src/protocols/registry.ts";
import { cohere } from "../../../src/protocols/cohere/index.ts";
import { decodeError, encodeError } from "../../../src/protocols/cohere/errors.ts";
import { decodeResponse, encodeResponse } from "../../../src/protocols/cohere/response.ts";
import { createStreamEncoder, createStreamParser } from "../../../src/protocols/cohere/stream.ts";
import { sseDecoder, SSE_HEADERS } from "../../../src/transport/sse.ts";
import { bytesOf, pieces, readAll, streamOf } from "../../support/streams.ts";
import { parserTransform } from "../../../src/transport/push-parser.ts";

// ---- helpers -----------------------------------------------------------------------------------------

const FIXTURES = join(import.meta.dir, "../../fixtures/protocols/cohere");
const fixture = <T>(name: string): T => JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), "utf8")) as T;

interface RequestFixture {
  source: string;
  wire: Record<string, unknown> & { model: string };
  ir: IrRequest;
  warnings: string[];
  encoded?: unknown;
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
  encoded?: WireEvent[];
  toolArguments?: string[];
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
/** One SSE event as Cohere writes it. */
const sse = (data: { type: string } & Record<string, unknown>) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
const START = sse({ type: "message-start", id: "m-1", delta: { message: { role: "assistant" } } });
const END = sse({ type: "message-end", delta: { finish_reason: "COMPLETE", usage: { tokens: { input_tokens: 3, output_tokens: 2 } } } });

async function parseSse(bytes: ReadableStream<Uint8Array>): Promise<WireEvent[]> {
  const events = await readAll(bytes.pipeThrough(sseDecoder()));
  return events.map((e) => ({ event: e.event ?? "", data: JSON.parse(e.data) }));
}

const BASE_REQUEST: IrRequest = { model: "command-a-03-2025", system: [], messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], tools: [], sampling: {}, stream: true };

function encodeParts(parts: readonly IrStreamPart[], warnings: string[] = []): Promise<WireEvent[]> {
  return parseSse(streamOf(parts).pipeThrough(createStreamEncoder(BASE_REQUEST, (w) => warnings.push(w))));
}
const dataOf = (events: WireEvent[]) => events.map((e) => e.data as Record<string, unknown>);

/** A minimal client body with the given members. */
const body = (extra: Record<string, unknown> = {}) => ({ model: "command-a-03-2025", messages: [{ role: "user", content: "Hi" }], ...extra });
function decodeOk(wire: unknown) {
  const decoded = cohere.decodeRequest(wire, {});
  if (!decoded.ok) throw new Error(`expected a decode, got ${decoded.error.message}`);
  return decoded;
}
function decodeFail(wire: unknown): IrError {
  const decoded = cohere.decodeRequest(wire, {});
  if (decoded.ok) throw new Error("expected a 400");
  return decoded.error;
}
const ir = (extra: Partial<IrRequest> = {}): IrRequest => ({ ...BASE_REQUEST, stream: false, ...extra });
const encode = (request: IrRequest) => cohere.encodeRequest(request, "command-upstream");
const encodedBody = (request: IrRequest) => encode(request).body as Record<string, unknown>;
const ZERO = { inputNoCache: 0, inputCacheRead: 0, inputCacheWrite: 0, output: 0, outputReasoning: 0 };
const response = (extra: Partial<IrResponse>): IrResponse => ({ id: "r-1", model: "gpt-x", created: 1, content: [{ type: "text", text: "hi" }], finishReason: { unified: "stop", raw: "stop" }, usage: ZERO, ...extra });

/** What a promise rejected with. */
const rejection = (promise: PromiseLike<unknown>): Promise<unknown> => Promise.resolve(promise).then(() => "resolved", (error: unknown) => error);

/** A Cohere SDK client whose every request gets `answer()`; the request it sent is kept. */
function sdk(answer: () => Response) {
  const sent: Request[] = [];
  const client = new CohereClientV2({
    token: "co-test",
    baseUrl: "http://gateway.test",
    maxRetries: 0,
    fetch: (async (input: string | URL | Request, init?: RequestInit) => {
      sent.push(new Request(input instanceof Request ? input.url : String(input), init));
      return answer();
    }) as typeof fetch,
  });
  return { client, sent };
}

// ---- fixtures: requests ------------------------------------------------------------------------------

describe("request fixtures, both directions", () => {
  for (const name of ["plain-request", "image-request", "tool-use-request"]) {
    const f = fixture<RequestFixture>(name);
    test(`${name}: decode -> IR`, () => {
      const decoded = decodeOk(f.wire);
      expect(decoded.value).toEqual(f.ir);
      expect(decoded.warnings).toEqual(f.warnings);
    });
    test(`${name}: IR -> encode equals the ${f.encoded ? "stated normalised" : "wire"} form`, () => {
      const encoded = cohere.encodeRequest(f.ir, f.wire.model);
      expect(encoded.path).toBe("/v2/chat");
      expect(encoded.body).toEqual(f.encoded ?? f.wire);
      expect(encoded.warnings).toEqual([]);
    });
  }

  test("the official SDK's own request body decodes (what a client really sends)", async () => {
    const { client, sent } = sdk(() => Response.json(fixture<ResponseFixture>("plain-response").wire));
    await client.chat({
      model: "command-a-03-2025",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: [{ type: "text", text: "Describe" }, { type: "image_url", imageUrl: { url: "https://x/i.png" } }] }],
      maxTokens: 100,
      stopSequences: ["END"],
      toolChoice: "REQUIRED",
      tools: [{ type: "function", function: { name: "f", description: "d", parameters: { type: "object" } } }],
    });
    const request = sent[0];
    if (!request) throw new Error("the SDK sent nothing");
    expect(new URL(request.url).pathname).toBe("/v2/chat");
    expect(cohere.clientCredential(request)).toBe("co-test");
    const decoded = decodeOk(await request.json());
    expect(decoded.warnings).toEqual([]);
    expect(decoded.value).toMatchObject({
      system: [{ type: "text", text: "Be brief." }],
      messages: [{ role: "user", content: [{ type: "text", text: "Describe" }, { type: "image", source: { kind: "url", url: "https://x/i.png" } }] }],
      tools: [{ name: "f", description: "d", parameters: { type: "object" } }],
      toolChoice: { type: "required" },
      sampling: { maxTokens: 100, stop: ["END"] },
      stream: false,
    });
  });
});

// ---- fixtures: responses -----------------------------------------------------------------------------

describe("response fixtures, both directions", () => {
  for (const name of ["plain-response", "tool-call-response"]) {
    const f = fixture<ResponseFixture>(name);
    test(`${name}: decode -> IR`, () => {
      const decoded = decodeResponse(f.wire, clock);
      if (!decoded.ok) throw new Error(decoded.error.message);
      expect(decoded.value).toEqual(f.ir);
      expect(decoded.warnings).toEqual([]);
    });
    test(`${name}: IR -> encode equals the stated normalised form`, () => {
      const warnings: string[] = [];
      expect(encodeResponse(f.ir, (w) => warnings.push(w))).toEqual(f.encoded ?? f.wire);
      expect(warnings).toEqual([]);
    });
  }

  test("the adapter's decodeResponse stamps the wall clock as created", () => {
    const before = Math.floor(Date.now() / 1000);
    const decoded = cohere.decodeResponse(fixture<ResponseFixture>("plain-response").wire);
    if (!decoded.ok) throw new Error(decoded.error.message);
    expect(decoded.value.created).toBeGreaterThanOrEqual(before);
    expect(decoded.value.created).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });

  test("the official SDK reads an encoded tool-call response as its own", async () => {
    const encoded = encodeResponse(fixture<ResponseFixture>("tool-call-response").ir, () => {});
    const { client } = sdk(() => Response.json(encoded));
    const answer = await client.chat({ model: "m", messages: [{ role: "user", content: "Sales?" }] });
    expect(answer.finishReason).toBe("TOOL_CALL");
    expect(answer.message.toolCalls?.map((c) => [c.id, c.function?.name, c.function?.arguments])).toEqual([
      ["query_daily_sales_report_hgxxmkby3wta", "query_daily_sales_report", '{"day": "2023-09-29"}'],
      ["query_product_catalog_rpg0z5h8yyz2", "query_product_catalog", '{"category": "Electronics"}'],
    ]);
    expect(answer.usage?.tokens).toEqual({ inputTokens: 1032, outputTokens: 124 });
  });
});

// ---- fixtures: streams -------------------------------------------------------------------------------

describe("stream fixtures, decoder", () => {
  for (const name of ["stream-text", "stream-tool-use", "stream-citations"]) {
    const f = fixture<StreamFixture>(name);
    test(`${name}: the reference's SSE text decodes to the IR parts`, async () => {
      expect(await decodeText(f.wire)).toEqual(f.ir);
    });
    for (const size of [1, 3, 7, 64]) {
      test(`${name}: the same IR when the bytes arrive ${size} at a time`, async () => {
        expect(await decodeChunks(pieces(bytesOf(f.wire), size))).toEqual(f.ir);
      });
    }
  }

  test("stream-text: the same IR split in two at every byte boundary of its first events", async () => {
    const f = fixture<StreamFixture>("stream-text");
    const bytes = bytesOf(f.wire);
    for (let cut = 1; cut < 700; cut += 1) {
      expect(await decodeChunks([bytes.slice(0, cut), bytes.slice(cut)])).toEqual(f.ir);
    }
  });

  test("stream-tool-use: the plan is one reasoning block (not answer text), and each call's argument pieces join into its JSON", async () => {
    const f = fixture<StreamFixture>("stream-tool-use");
    const parts = await decodeChunks(pieces(bytesOf(f.wire), 3));
    const joined = (id: string) => parts.flatMap((p) => (p.type === "tool-call-delta" && p.id === id ? [p.argumentsDelta] : [])).join("");
    expect([joined("tool-0"), joined("tool-1")]).toEqual(f.toolArguments ?? []);
    expect(parts.some((p) => p.type.startsWith("text-"))).toBe(false);
    const plan = parts.flatMap((p) => (p.type === "reasoning-delta" ? [p.delta] : [])).join("");
    expect(plan).toBe("I will use the query_daily_sales_report tool to find the sales summary for 29th September 2023. I will also use the query_product_catalog tool to find the details of the products in the Electronics category.");
    // The plan block ends before the first call starts, so no encoder sees two blocks open at once.
    const order = parts.map((p) => p.type);
    expect(order.indexOf("reasoning-end")).toBe(order.indexOf("tool-call-start") - 1);
    expect(parts.find((p) => p.type === "tool-call-start")).toEqual({ type: "tool-call-start", id: "tool-0", toolCallId: "query_daily_sales_report_j3f0adww9pmr", name: "query_daily_sales_report" });
  });

  test("multi-byte characters split across chunks at every byte survive", async () => {
    const text = "héllo ☃ 🌍 24°C";
    const wire = [
      START,
      sse({ type: "content-start", index: 0, delta: { message: { content: { type: "text", text: "" } } } }),
      sse({ type: "content-delta", index: 0, delta: { message: { content: { text } } } }),
      sse({ type: "content-end", index: 0 }),
      END,
    ].join("");
    const parts = await decodeChunks(pieces(bytesOf(wire), 1));
    expect(parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")).toBe(text);
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: { unified: "stop", raw: "COMPLETE" } });
  });
});

describe("stream fixtures, encoder", () => {
  for (const name of ["stream-text", "stream-tool-use"]) {
    const f = fixture<StreamFixture>(name);
    test(`${name}: the IR parts encode to the reference's events (stated normalised form)`, async () => {
      const warnings: string[] = [];
      expect(await encodeParts(f.ir, warnings)).toEqual(f.encoded ?? []);
      expect(warnings).toEqual([]);
    });
  }

  test("each event is written as `event: <type>\\ndata: <json>\\n\\n`, type inside the data too", async () => {
    const f = fixture<StreamFixture>("stream-text");
    const chunks = await readAll(streamOf(f.ir).pipeThrough(createStreamEncoder(BASE_REQUEST, () => {})));
    const texts = chunks.map((c) => new TextDecoder().decode(c));
    expect(texts[0]).toBe('event: message-start\ndata: {"type":"message-start","id":"29f14a5a-11de-4cae-9800-25e4747408ea","delta":{"message":{"role":"assistant"}}}\n\n');
    expect(texts[1]).toBe('event: content-start\ndata: {"type":"content-start","index":0,"delta":{"message":{"content":{"type":"text","text":""}}}}\n\n');
    expect(texts.at(-1)?.startsWith('event: message-end\ndata: {"type":"message-end","delta":{"finish_reason":"COMPLETE"')).toBe(true);
  });

  test("the official SDK streams the encoded tool-use events as its own typed events", async () => {
    const f = fixture<StreamFixture>("stream-tool-use");
    const { client } = sdk(() => new Response(streamOf(f.ir).pipeThrough(createStreamEncoder(BASE_REQUEST, () => {})), { headers: SSE_HEADERS }));
    const events = await client.chatStream({ model: "m", messages: [{ role: "user", content: "Sales?" }] });
    const args = new Map<number, string>();
    let text = "";
    let thinking = "";
    let end: Cohere.V2ChatStreamResponse.MessageEnd | undefined;
    for await (const event of events) {
      if (event.type === "content-delta") text += event.delta?.message?.content?.text ?? "";
      if (event.type === "content-delta") thinking += event.delta?.message?.content?.thinking ?? "";
      if (event.type === "tool-call-delta") args.set(event.index ?? -1, (args.get(event.index ?? -1) ?? "") + (event.delta?.message?.toolCalls?.function?.arguments ?? ""));
      if (event.type === "message-end") end = event;
    }
    // The plan is the model's reasoning: a thinking block, no answer text.
    expect(thinking).toStartWith("I will use the query_daily_sales_report tool");
    expect(text).toBe("");
    expect([...args.entries()]).toEqual([
      [0, '{"day": "2023-09-29"}'],
      [1, '{"category": "Electronics"}'],
    ]);
    expect(end?.delta?.finishReason).toBe("TOOL_CALL");
    expect(end?.delta?.usage?.tokens).toEqual({ inputTokens: 1589, outputTokens: 135 });
  });
});

// ---- stream decoder: beyond the fixtures ---------------------------------------------------------------

describe("stream decoder", () => {
  test("thinking content blocks become reasoning; text after them stays text", async () => {
    const wire = [
      START,
      sse({ type: "content-start", index: 0, delta: { message: { content: { type: "thinking", thinking: "" } } } }),
      sse({ type: "content-delta", index: 0, delta: { message: { content: { thinking: "Let me think." } } } }),
      sse({ type: "content-end", index: 0 }),
      sse({ type: "content-start", index: 1, delta: { message: { content: { type: "text", text: "A" } } } }),
      sse({ type: "content-end", index: 1 }),
      END,
    ].join("");
    expect((await decodeText(wire)).slice(1, 6)).toEqual([
      { type: "reasoning-start", id: "content-0" },
      { type: "reasoning-delta", id: "content-0", delta: "Let me think." },
      { type: "reasoning-end", id: "content-0" },
      { type: "text-start", id: "content-1" },
      { type: "text-delta", id: "content-1", delta: "A" },
    ]);
  });

  test("message-end usage: tokens preferred, billed_units when tokens are absent, cached tokens split out", async () => {
    const end = (usage: unknown) => sse({ type: "message-end", delta: { finish_reason: "MAX_TOKENS", usage } });
    const usageOf = async (usage: unknown) => (await decodeText(START + end(usage))).find((p) => p.type === "usage");
    expect(await usageOf({ billed_units: { input_tokens: 5, output_tokens: 9 }, tokens: { input_tokens: 70, output_tokens: 9 }, cached_tokens: 64 })).toEqual({ type: "usage", usage: { inputNoCache: 6, inputCacheRead: 64, output: 9 } });
    expect(await usageOf({ billed_units: { input_tokens: 5, output_tokens: 9 } })).toEqual({ type: "usage", usage: { inputNoCache: 5, output: 9 } });
    expect(await usageOf({})).toBeUndefined();
    expect((await decodeText(START + end({}))).at(-1)).toEqual({ type: "finish", finishReason: { unified: "length", raw: "MAX_TOKENS" } });
  });

  test("a message-end with delta.error ends the IR stream with an error part, after its usage", async () => {
    const parts = await decodeText(START + sse({ type: "message-end", delta: { finish_reason: "ERROR", error: "internal error", usage: { tokens: { input_tokens: 3, output_tokens: 1 } } } }));
    expect(parts.slice(1)).toEqual([
      { type: "usage", usage: { inputNoCache: 3, output: 1 } },
      { type: "error", error: { kind: "api_error", status: 502, message: "internal error", failure: "transient" } },
    ]);
  });

  test("a stream cut before message-end ends with an error part", async () => {
    const parts = await decodeText(START + sse({ type: "content-start", index: 0, delta: { message: { content: { type: "text", text: "" } } } }));
    expect(parts.at(-1)).toEqual({ type: "error", error: { kind: "api_error", status: 502, message: "the upstream stream ended before message-end", failure: "transient" } });
  });

  test("an event that is not JSON fails the stream once; nothing after it is read", async () => {
    const parts = await decodeText(`${START}event: content-delta\ndata: {not json\n\n${END}`);
    expect(parts.slice(1)).toEqual([{ type: "error", error: { kind: "api_error", status: 502, message: "upstream sent a malformed content-delta event", failure: "transient" } }]);
  });

  test("a known event of the wrong shape is malformed, not skipped", async () => {
    const parts = await decodeText(START + sse({ type: "tool-call-start", index: 0, delta: { message: { tool_calls: { id: "c" } } } }));
    expect(parts.at(-1)).toMatchObject({ type: "error", error: { message: "upstream sent a malformed tool-call-start event" } });
  });

  test("data: [DONE], debug events, citations and an event without an `event:` line", async () => {
    const wire = [
      START,
      sse({ type: "debug", prompt: "..." }),
      `data: ${JSON.stringify({ type: "content-start", index: 0, delta: { message: { content: { type: "text", text: "" } } } })}\n\n`,
      sse({ type: "citation-start", index: 0, delta: { message: { citations: { start: 0, end: 1, text: "x", sources: [] } } } }),
      sse({ type: "citation-end", index: 0 }),
      sse({ type: "content-end", index: 0 }),
      END,
      "data: [DONE]\n\n",
    ].join("");
    expect((await decodeText(wire)).map((p) => p.type)).toEqual(["start", "text-start", "text-end", "usage", "finish"]);
  });

  test("a tool plan with no tool call after it still ends before message-end", async () => {
    const parts = await decodeText(START + sse({ type: "tool-plan-delta", delta: { message: { tool_plan: "Plan" } } }) + END);
    expect(parts.map((p) => p.type)).toEqual(["start", "reasoning-start", "reasoning-delta", "reasoning-end", "usage", "finish"]);
  });
});

// ---- stream encoder: beyond the fixtures ---------------------------------------------------------------

describe("stream encoder", () => {
  const head: IrStreamPart = { type: "start", id: "chatcmpl-1", model: "gpt-x", created: 1 };
  const finish: IrStreamPart = { type: "finish", finishReason: { unified: "tool_calls", raw: "tool_calls" } };

  test("interleaved IR tool calls come out one at a time, numbered in opening order, apart from content", async () => {
    const events = await encodeParts([
      head,
      { type: "text-start", id: "x" },
      { type: "text-delta", id: "x", delta: "Checking." },
      { type: "text-end", id: "x" },
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
      ["message-start", undefined],
      ["content-start", 0],
      ["content-delta", 0],
      ["content-end", 0],
      ["tool-call-start", 0],
      ["tool-call-delta", 0],
      ["tool-call-delta", 0],
      ["tool-call-end", 0],
      ["tool-call-start", 1],
      ["tool-call-delta", 1],
      ["tool-call-end", 1],
      ["message-end", undefined],
    ]);
    expect(events[4]?.data).toEqual({ type: "tool-call-start", index: 0, delta: { message: { tool_calls: { id: "call_a", type: "function", function: { name: "get_weather", arguments: "" } } } } });
    expect(events[6]?.data).toEqual({ type: "tool-call-delta", index: 0, delta: { message: { tool_calls: { function: { arguments: '"Paris"}' } } } } });
    expect(events.at(-1)?.data).toEqual({ type: "message-end", delta: { finish_reason: "TOOL_CALL", usage: { billed_units: { input_tokens: 0, output_tokens: 0 }, tokens: { input_tokens: 0, output_tokens: 0 } } } });
  });

  test("the open block's parts go out at once; a waiting block's parts are held only until the open one ends", async () => {
    const live: string[] = [];
    const encoderStream = createStreamEncoder(BASE_REQUEST, () => {});
    const writer = encoderStream.writable.getWriter();
    const reader = encoderStream.readable.getReader();
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
    expect(await step(head)).toEqual(["message-start"]); // Cohere's message-start carries no usage: it goes at once
    expect(await step({ type: "text-start", id: "x" })).toEqual(["message-start", "content-start"]);
    expect(await step({ type: "text-delta", id: "x", delta: "Hi" })).toHaveLength(3);
    expect(await step({ type: "tool-call-start", id: "t", toolCallId: "c", name: "f" })).toHaveLength(3);
    expect(await step({ type: "tool-call-delta", id: "t", argumentsDelta: "{}" })).toHaveLength(3);
    expect(await step({ type: "text-delta", id: "x", delta: "!" })).toHaveLength(4);
    expect(await step({ type: "text-end", id: "x" })).toEqual(["message-start", "content-start", "content-delta", "content-delta", "content-end", "tool-call-start", "tool-call-delta"]);
    await writer.close();
    await pump;
  });

  test("reasoning is a thinking content block; its signature and redacted reasoning are dropped, warned once", async () => {
    const warnings: string[] = [];
    const events = await encodeParts(
      [
        head,
        { type: "reasoning-start", id: "r" },
        { type: "reasoning-delta", id: "r", delta: "Hmm." },
        { type: "reasoning-signature", id: "r", signature: "sig" },
        { type: "reasoning-signature", id: "r", signature: "sig2" },
        { type: "reasoning-end", id: "r" },
        { type: "reasoning-start", id: "z", redactedData: "opaque" },
        { type: "reasoning-delta", id: "z", delta: "never shown" },
        { type: "reasoning-end", id: "z" },
        { type: "text-start", id: "t" },
        { type: "text-end", id: "t" },
        { type: "finish", finishReason: { unified: "stop", raw: "end_turn" } },
      ],
      warnings,
    );
    expect(dataOf(events).slice(1, 6)).toEqual([
      { type: "content-start", index: 0, delta: { message: { content: { type: "thinking", thinking: "" } } } },
      { type: "content-delta", index: 0, delta: { message: { content: { thinking: "Hmm." } } } },
      { type: "content-end", index: 0 },
      { type: "content-start", index: 1, delta: { message: { content: { type: "text", text: "" } } } },
      { type: "content-end", index: 1 },
    ]);
    expect(warnings).toEqual(["reasoning signature dropped: Cohere's thinking content has no signature", "redacted reasoning dropped: Cohere has no field for another vendor's redacted thinking"]);
  });

  test("usage from another vendor: input is the total, cache reads are cached_tokens, reasoning stays inside output", async () => {
    const events = await encodeParts([head, { type: "usage", usage: { inputNoCache: 90, inputCacheRead: 10, inputCacheWrite: 5, output: 7, outputReasoning: 3 } }, { type: "finish", finishReason: { unified: "length", raw: "max_tokens" } }]);
    expect(events.at(-1)?.data).toEqual({
      type: "message-end",
      delta: { finish_reason: "MAX_TOKENS", usage: { billed_units: { input_tokens: 105, output_tokens: 7 }, tokens: { input_tokens: 105, output_tokens: 7 }, cached_tokens: 10 } },
    });
  });

  test("an IR error part ends the stream with message-end carrying the error; nothing follows it", async () => {
    const events = await encodeParts([
      head,
      { type: "text-start", id: "x" },
      { type: "usage", usage: { inputNoCache: 4 } },
      { type: "error", error: irError("rate_limit", "Too many requests", { retryAfterSecs: 3 }) },
      { type: "text-delta", id: "x", delta: "late" },
      finish,
    ]);
    expect(events.map((e) => e.event)).toEqual(["message-start", "content-start", "message-end"]);
    expect(events.at(-1)?.data).toEqual({ type: "message-end", delta: { finish_reason: "ERROR", error: "Too many requests", usage: { billed_units: { input_tokens: 4, output_tokens: 0 }, tokens: { input_tokens: 4, output_tokens: 0 } } } });
  });

  test("an IR stream that ends with neither finish nor error ends with an error, and with message-start first", async () => {
    const events = await encodeParts([{ type: "text-start", id: "x" }, { type: "text-delta", id: "x", delta: "cut" }]);
    expect(events[0]?.event).toBe("message-start");
    expect((events[0]?.data as { id: string }).id).toMatch(/^[0-9a-f-]{36}$/);
    expect((events.at(-1)?.data as { delta: unknown }).delta).toMatchObject({ finish_reason: "ERROR", error: "the stream ended before the message was complete" });
  });

  test("blocks left open at the finish are closed in order, with a warning", async () => {
    const warnings: string[] = [];
    const events = await encodeParts([head, { type: "text-start", id: "x" }, { type: "tool-call-start", id: "t", toolCallId: "c", name: "f" }, finish], warnings);
    expect(events.map((e) => e.event)).toEqual(["message-start", "content-start", "content-end", "tool-call-start", "tool-call-end", "message-end"]);
    expect(warnings).toEqual(["stream finished with content blocks still open; closed them"]);
  });

  test("a finish Cohere has no word for is COMPLETE, with a warning", async () => {
    const warnings: string[] = [];
    const events = await encodeParts([head, { type: "finish", finishReason: { unified: "content_filter", raw: "refusal" } }], warnings);
    expect((events.at(-1)?.data as { delta: { finish_reason: string } }).delta.finish_reason).toBe("COMPLETE");
    expect(warnings).toEqual(["finish reason refusal has no Cohere finish_reason; sent COMPLETE"]);
  });

  test("the official SDK receives an in-stream failure as its message-end event with the error", async () => {
    const parts: IrStreamPart[] = [head, { type: "text-start", id: "x" }, { type: "error", error: irError("overloaded", "Overloaded") }];
    const { client } = sdk(() => new Response(streamOf(parts).pipeThrough(createStreamEncoder(BASE_REQUEST, () => {})), { headers: SSE_HEADERS }));
    const events: Cohere.V2ChatStreamResponse[] = [];
    for await (const event of await client.chatStream({ model: "m", messages: [{ role: "user", content: "Hi" }] })) events.push(event);
    expect(events.at(-1)).toMatchObject({ type: "message-end", delta: { finishReason: "ERROR", error: "Overloaded" } });
  });
});

// ---- request decode: 400s naming the member ------------------------------------------------------------

describe("request decode rejects bad members with a 400 naming them", () => {
  const cases: [string, unknown, string][] = [
    ["missing model", { messages: [] }, "model: required member missing"],
    ["empty model", body({ model: "" }), "model: must not be empty"],
    ["missing messages", { model: "m" }, "messages: required member missing"],
    ["an unknown role", body({ messages: [{ role: "chatbot", content: "Hi" }] }), "messages[0].role: expected 'system', 'user', 'assistant' or 'tool'"],
    ["content neither string nor list", body({ messages: [{ role: "user", content: 5 }] }), "messages[0].content: expected a string or a list of content blocks"],
    ["a block type that is not a string", body({ messages: [{ role: "user", content: [{ type: 7 }] }] }), "messages[0].content[0].type: expected a string"],
    ["a text block without text", body({ messages: [{ role: "user", content: [{ type: "text" }] }] }), "messages[0].content[0].text: required member missing"],
    ["an image_url block without its url", body({ messages: [{ role: "user", content: [{ type: "image_url", image_url: {} }] }] }), "messages[0].content[0].image_url.url: required member missing"],
    ["a system block that is not text", body({ messages: [{ role: "system", content: [{ type: "image_url" }] }] }), 'messages[0].content[0].type: expected "text"'],
    ["a tool message without tool_call_id", body({ messages: [{ role: "tool", content: "15 degrees" }] }), "messages[0].tool_call_id: required member missing"],
    ["a tool call without a function name", body({ messages: [{ role: "assistant", tool_calls: [{ id: "c", type: "function", function: { arguments: "{}" } }] }] }), "messages[0].tool_calls[0].function.name: required member missing"],
    ["assistant content of the wrong type", body({ messages: [{ role: "assistant", content: 3 }] }), "messages[0].content: expected a string or a list of content blocks"],
    ["a tool without parameters", body({ tools: [{ type: "function", function: { name: "f" } }] }), "tools[0].function.parameters: required member missing"],
    ["a tool of another type", body({ tools: [{ type: "retrieval", function: { name: "f", parameters: {} } }] }), 'tools[0].type: expected "function"'],
    ["tool_choice in lower case", body({ tool_choice: "required" }), "tool_choice: expected 'REQUIRED', 'NONE'"],
    ["an unknown response_format type", body({ response_format: { type: "json_schema" } }), "response_format.type: expected 'text', 'json_object'"],
    ["thinking of an unknown type", body({ thinking: { type: "adaptive" } }), "thinking.type: expected 'enabled', 'disabled'"],
    ["a thinking budget below 1", body({ thinking: { type: "enabled", token_budget: 0 } }), "thinking.token_budget: must be at least 1"],
    ["temperature not a number", body({ temperature: "hot" }), "temperature: expected a number"],
    ["max_tokens not an integer", body({ max_tokens: 1.5 }), "max_tokens: expected an integer"],
    ["stop_sequences not strings", body({ stop_sequences: ["a", 1] }), "stop_sequences[1]: expected a string"],
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
    expect(decodeFail([1])).toMatchObject({ kind: "invalid_request", message: "expected an object" });
  });

  test("the 400 goes out as {message}, and the SDK raises BadRequestError", async () => {
    const error = decodeFail({ messages: [] });
    const answer = cohere.encodeError(error);
    expect(answer.status).toBe(400);
    expect(await answer.clone().json()).toEqual({ message: "model: required member missing" });
    const raised = await rejection(sdk(() => answer).client.chat({ model: "m", messages: [] }));
    expect(raised).toBeInstanceOf(Cohere.BadRequestError);
    expect((raised as CohereError).body).toEqual({ message: "model: required member missing" });
  });
});

// ---- request decode: mapping and warnings ----------------------------------------------------------------

describe("request decode", () => {
  test("system as string or text blocks; a late system message moves to the front, with a warning", () => {
    const decoded = decodeOk(
      body({
        messages: [
          { role: "system", content: [{ type: "text", text: "A" }, { type: "text", text: "B" }] },
          { role: "user", content: "Hi" },
          { role: "system", content: "C" },
        ],
      }),
    );
    expect(decoded.value.system).toEqual([{ type: "text", text: "A" }, { type: "text", text: "B" }, { type: "text", text: "C" }]);
    expect(decoded.value.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Hi" }] }]);
    expect(decoded.warnings).toEqual(["messages[2]: a system message after the conversation began was moved to the front, where the IR keeps instructions"]);
  });

  test("images: a web URL, a base64 data URI; a detail other than auto is dropped with a warning", () => {
    const decoded = decodeOk(
      body({
        messages: [
          {
            role: "user",
            content: [
              { type: "image_url", image_url: { url: "https://cohere.com/favicon-32x32.png", detail: "auto" } },
              { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=", detail: "high" } },
            ],
          },
        ],
      }),
    );
    expect(decoded.value.messages[0]?.content).toEqual([
      { type: "image", source: { kind: "url", url: "https://cohere.com/favicon-32x32.png" } },
      { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } },
    ]);
    expect(decoded.warnings).toEqual(["image_url.detail dropped at messages[0].content[1].image_url.detail: the IR has no image detail level"]);
  });

  test("consecutive tool messages (one per call) become one IR tool message, in call order; object data as JSON", () => {
    const decoded = decodeOk(
      body({
        messages: [
          { role: "user", content: "Weather in Madrid and Brasilia?" },
          {
            role: "assistant",
            tool_plan: "I will look both up.",
            tool_calls: [
              { id: "a", type: "function", function: { name: "get_weather", arguments: '{"location":"Madrid"}' } },
              { id: "b", type: "function", function: { name: "get_weather", arguments: '{"location":"Brasilia"}' } },
            ],
          },
          { role: "tool", tool_call_id: "a", content: [{ type: "document", document: { data: { temperature: "24°C" }, id: "doc-a" } }] },
          { role: "tool", tool_call_id: "b", content: [{ type: "text", text: "28°C" }] },
          { role: "user", content: "Thanks" },
        ],
      }),
    );
    expect(decoded.value.messages.slice(1)).toEqual([
      { role: "assistant", content: [{ type: "text", text: "I will look both up." }, { type: "tool_call", id: "a", name: "get_weather", arguments: '{"location":"Madrid"}' }, { type: "tool_call", id: "b", name: "get_weather", arguments: '{"location":"Brasilia"}' }] },
      { role: "tool", content: [{ type: "tool_result", toolCallId: "a", content: [{ type: "text", text: '{"temperature":"24°C"}' }] }, { type: "tool_result", toolCallId: "b", content: [{ type: "text", text: "28°C" }] }] },
      { role: "user", content: [{ type: "text", text: "Thanks" }] },
    ]);
    expect(decoded.warnings).toEqual([
      "document.id dropped at messages[2].content[0].document.id: document ids serve Cohere's citations only",
      "document blocks in tool messages carried as text: the IR's tool results hold text and images",
    ]);
  });

  test("assistant turns: content string, thinking blocks as reasoning; citations dropped with a warning", () => {
    const decoded = decodeOk(
      body({
        messages: [
          { role: "user", content: "Q" },
          { role: "assistant", content: [{ type: "thinking", thinking: "t" }, { type: "text", text: "A" }], citations: [{ start: 0, end: 1, text: "A" }] },
          { role: "user", content: "Q2" },
          { role: "assistant", content: "B" },
        ],
      }),
    );
    expect(decoded.value.messages[1]).toEqual({ role: "assistant", content: [{ type: "reasoning", text: "t" }, { type: "text", text: "A" }] });
    expect(decoded.value.messages[3]).toEqual({ role: "assistant", content: [{ type: "text", text: "B" }] });
    expect(decoded.warnings).toEqual(["citations dropped at messages[1].citations: citations are Cohere-only"]);
  });

  test("tools with strict_tools, tool_choice REQUIRED / NONE, absent = auto", () => {
    const tools = [{ type: "function", function: { name: "f", description: "d", parameters: { type: "object" } } }];
    expect(decodeOk(body({ tools, strict_tools: true })).value.tools).toEqual([{ name: "f", description: "d", parameters: { type: "object" }, strict: true }]);
    expect(decodeOk(body({ tools, tool_choice: "REQUIRED" })).value.toolChoice).toEqual({ type: "required" });
    expect(decodeOk(body({ tools, tool_choice: "NONE" })).value.toolChoice).toEqual({ type: "none" });
    expect(decodeOk(body({ tools })).value.toolChoice).toBeUndefined();
  });

  test("sampling: p, k (0 is off), penalties, seed, stop sequences, max_tokens; stream", () => {
    const value = decodeOk(body({ temperature: 0.5, p: 0.9, k: 40, frequency_penalty: 0.1, presence_penalty: 0.2, seed: 7, stop_sequences: ["END"], max_tokens: 99, stream: true })).value;
    expect(value.sampling).toEqual({ maxTokens: 99, temperature: 0.5, topP: 0.9, topK: 40, stop: ["END"], seed: 7, frequencyPenalty: 0.1, presencePenalty: 0.2 });
    expect(value.stream).toBe(true);
    expect(decodeOk(body({ k: 0, temperature: null })).value.sampling).toEqual({});
  });

  test("response_format: text, json_object, json_object with a json_schema", () => {
    const schema = { type: "object", properties: { a: { type: "string" } } };
    expect(decodeOk(body({ response_format: { type: "text" } })).value.responseFormat).toEqual({ type: "text" });
    expect(decodeOk(body({ response_format: { type: "json_object" } })).value.responseFormat).toEqual({ type: "json" });
    expect(decodeOk(body({ response_format: { type: "json_object", json_schema: schema } })).value.responseFormat).toEqual({ type: "json_schema", schema });
  });

  test("thinking: enabled with and without a budget; disabled is no reasoning", () => {
    expect(decodeOk(body({ thinking: { type: "enabled", token_budget: 2000 } })).value.reasoning).toEqual({ budgetTokens: 2000 });
    expect(decodeOk(body({ thinking: { type: "enabled" } })).value.reasoning).toEqual({});
    expect(decodeOk(body({ thinking: { type: "disabled" } })).value.reasoning).toBeUndefined();
  });

  test("Cohere-only members are dropped with a warning each", () => {
    const decoded = decodeOk(
      body({
        documents: ["The sky is blue."],
        citation_options: { mode: "FAST" },
        safety_mode: "STRICT",
        logprobs: true,
        priority: 3,
        strict_tools: null,
        messages: [{ role: "user", content: [{ type: "text", text: "Hi" }, { type: "document", document: { data: {} } }] }],
      }),
    );
    expect(decoded.warnings).toEqual([
      "documents dropped: Cohere's grounding documents have no place in the IR",
      "citation_options dropped: citations are Cohere-only",
      "safety_mode dropped: safety modes are Cohere-only",
      "logprobs dropped: log probabilities are not modelled by the gateway's IR",
      "priority dropped: request priority is Cohere-only",
      "document block dropped at messages[0].content[1]: a Cohere user message carries text and images only",
    ]);
    expect(decoded.value.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Hi" }] }]);
  });
});

// ---- request encode -----------------------------------------------------------------------------------------

describe("request encode", () => {
  test("system first, several parts as text blocks; user images as URL or data URI; stream stated", () => {
    const encoded = encode(
      ir({
        system: [{ type: "text", text: "A" }, { type: "text", text: "B" }],
        messages: [{ role: "user", content: [{ type: "text", text: "Look" }, { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } }, { type: "image", source: { kind: "url", url: "https://x/i.png" } }] }],
        stream: true,
      }),
    );
    expect(encoded.body).toEqual({
      model: "command-upstream",
      messages: [
        { role: "system", content: [{ type: "text", text: "A" }, { type: "text", text: "B" }] },
        { role: "user", content: [{ type: "text", text: "Look" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }, { type: "image_url", image_url: { url: "https://x/i.png" } }] },
      ],
      stream: true,
    });
    expect(encoded.warnings).toEqual([]);
  });

  test("an assistant turn with tool calls: its text becomes tool_plan; each tool result is its own tool message", () => {
    const encoded = encode(
      ir({
        messages: [
          { role: "user", content: [{ type: "text", text: "Weather?" }] },
          { role: "assistant", content: [{ type: "text", text: "Checking both." }, { type: "tool_call", id: "a", name: "w", arguments: '{"c":"Madrid"}' }, { type: "tool_call", id: "b", name: "w", arguments: '{"c":"Lima"}' }] },
          { role: "tool", content: [{ type: "tool_result", toolCallId: "a", content: [{ type: "text", text: "24" }] }, { type: "tool_result", toolCallId: "b", content: [{ type: "text", text: "1" }, { type: "text", text: "9" }] }] },
          { role: "assistant", content: [{ type: "text", text: "Madrid 24, Lima 19." }] },
        ],
      }),
    );
    expect((encoded.body as { messages: unknown[] }).messages.slice(1)).toEqual([
      {
        role: "assistant",
        tool_plan: "Checking both.",
        tool_calls: [
          { id: "a", type: "function", function: { name: "w", arguments: '{"c":"Madrid"}' } },
          { id: "b", type: "function", function: { name: "w", arguments: '{"c":"Lima"}' } },
        ],
      },
      { role: "tool", tool_call_id: "a", content: "24" },
      { role: "tool", tool_call_id: "b", content: [{ type: "text", text: "1" }, { type: "text", text: "9" }] },
      { role: "assistant", content: "Madrid 24, Lima 19." },
    ]);
    expect(encoded.warnings).toEqual([]);
  });

  test("what Cohere cannot carry is dropped with a warning, each said once", () => {
    const encoded = encode(
      ir({
        messages: [
          { role: "user", content: [{ type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0" } }] },
          { role: "assistant", content: [{ type: "reasoning", text: "t", signature: "sig" }, { type: "reasoning", text: "", redactedData: "x" }, { type: "text", text: "A" }] },
          { role: "assistant", content: [{ type: "reasoning", text: "u", signature: "sig2" }, { type: "tool_call", id: "c", name: "f", arguments: "{}" }] },
          { role: "tool", content: [{ type: "tool_result", toolCallId: "c", content: [{ type: "image", source: { kind: "url", url: "https://x/i.png" } }], isError: true }] },
        ],
        parallelToolCalls: false,
        user: "u-1",
      }),
    );
    expect((encoded.body as { messages: unknown[] }).messages).toEqual([
      { role: "assistant", content: [{ type: "thinking", thinking: "t" }, { type: "text", text: "A" }] },
      { role: "assistant", content: [{ type: "thinking", thinking: "u" }], tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c", content: "" },
    ]);
    expect(encoded.warnings).toEqual([
      "document dropped: a Cohere user message carries text and images only",
      "a user message with nothing Cohere can carry was dropped",
      "reasoning signature dropped: Cohere's thinking content has no signature",
      "redacted reasoning dropped: Cohere has no field for another vendor's redacted thinking",
      "image in a tool result dropped: a Cohere tool message carries text and documents only",
      "tool result error flag dropped: Cohere tool messages have none",
      "parallel_tool_calls false dropped: Cohere cannot turn parallel tool calls off",
      "user dropped: Cohere has no end-user id",
    ]);
  });

  test("tools and tool_choice: required -> REQUIRED, none -> NONE, auto left out, a named tool sent as REQUIRED (warned)", () => {
    const tools = [{ name: "f", description: "d", parameters: { type: "object" }, strict: true }, { name: "g", parameters: {} }];
    const withChoice = (toolChoice: IrRequest["toolChoice"]) => encode(ir({ tools, ...(toolChoice && { toolChoice }) }));
    expect(withChoice({ type: "auto" }).body).toMatchObject({
      tools: [
        { type: "function", function: { name: "f", description: "d", parameters: { type: "object" } } },
        { type: "function", function: { name: "g", parameters: {} } },
      ],
      strict_tools: true,
    });
    expect(withChoice({ type: "auto" }).warnings).toEqual(["strict applied to every tool: Cohere's strict_tools covers all tools or none"]);
    expect((withChoice({ type: "auto" }).body as Record<string, unknown>).tool_choice).toBeUndefined();
    expect(withChoice({ type: "required" }).body).toMatchObject({ tool_choice: "REQUIRED" });
    expect(withChoice({ type: "none" }).body).toMatchObject({ tool_choice: "NONE" });
    const named = withChoice({ type: "tool", name: "g" });
    expect(named.body).toMatchObject({ tool_choice: "REQUIRED" });
    expect(named.warnings).toContain("tool_choice for tool g sent as REQUIRED: Cohere cannot name the tool to call");
    const noTools = encode(ir({ toolChoice: { type: "required" } }));
    expect((noTools.body as Record<string, unknown>).tool_choice).toBeUndefined();
    expect(noTools.warnings).toEqual(["tool_choice required dropped: the request has no tools"]);
  });

  test("sampling in Cohere's ranges: out-of-range values clamped with a warning; more than 5 stop sequences cut", () => {
    const encoded = encode(ir({ sampling: { temperature: 1.5, topP: 1, topK: 1000, maxTokens: 50, stop: ["1", "2", "3", "4", "5", "6"], seed: 42, frequencyPenalty: 2, presencePenalty: -0.5 } }));
    expect(encoded.body).toMatchObject({ temperature: 1, p: 0.99, k: 500, max_tokens: 50, stop_sequences: ["1", "2", "3", "4", "5"], seed: 42, frequency_penalty: 1, presence_penalty: 0 });
    expect(encoded.warnings).toEqual([
      "temperature 1.5 clamped to 1, the nearest value Cohere accepts (0 to 1)",
      "top_p 1 clamped to 0.99, the nearest value Cohere accepts (0.01 to 0.99)",
      "top_k 1000 clamped to 500, the nearest value Cohere accepts (0 to 500)",
      "stop sequences after the first 5 dropped: Cohere takes at most 5",
      "frequency_penalty 2 clamped to 1, the nearest value Cohere accepts (0 to 1)",
      "presence_penalty -0.5 clamped to 0, the nearest value Cohere accepts (0 to 1)",
    ]);
    const inRange = encode(ir({ sampling: { temperature: 0.3, topP: 0.75, topK: 10 } }));
    expect(inRange.body).toMatchObject({ temperature: 0.3, p: 0.75, k: 10 });
    expect(inRange.warnings).toEqual([]);
    expect(encode(ir({ sampling: { seed: -1 } })).warnings).toEqual(["seed -1 dropped: Cohere takes a seed of 0 or more"]);
  });

  test("response formats and reasoning", () => {
    const schema = { type: "object" };
    expect(encodedBody(ir({ responseFormat: { type: "json" } })).response_format).toEqual({ type: "json_object" });
    expect(encodedBody(ir({ responseFormat: { type: "text" } })).response_format).toEqual({ type: "text" });
    const withSchema = encode(ir({ responseFormat: { type: "json_schema", name: "answer", description: "the answer", schema, strict: true } }));
    expect((withSchema.body as Record<string, unknown>).response_format).toEqual({ type: "json_object", json_schema: schema });
    expect(withSchema.warnings).toEqual(["response_format description dropped: Cohere's json_object format takes only a schema"]);
    // The reference: response_format "is not supported when used in combinations with the documents or tools parameters".
    const withTools = encode(ir({ tools: [{ name: "f", parameters: { type: "object" } }], responseFormat: { type: "json_schema", schema } }));
    expect((withTools.body as Record<string, unknown>).response_format).toBeUndefined();
    expect(withTools.warnings).toEqual(["response_format json_schema dropped: Cohere does not take response_format together with tools"]);
    expect((encode(ir({ tools: [{ name: "f", parameters: {} }], responseFormat: { type: "text" } })).body as Record<string, unknown>).response_format).toBeUndefined();
    expect(encodedBody(ir({ reasoning: { budgetTokens: 3000, effort: "low" } })).thinking).toEqual({ type: "enabled", token_budget: 3000 });
    expect(encodedBody(ir({ reasoning: { effort: "medium" } })).thinking).toEqual({ type: "enabled", token_budget: 8192 });
    expect(encodedBody(ir({ reasoning: {} })).thinking).toEqual({ type: "enabled" });
    expect(encodedBody(ir({})).thinking).toBeUndefined();
  });

  test("another protocol's request survives the trip: decode(encode(ir)) gives the IR back", () => {
    const original = ir({
      system: [{ type: "text", text: "S" }],
      messages: [
        { role: "user", content: [{ type: "text", text: "Q" }, { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "/9j/4AAQ" } }] },
        { role: "assistant", content: [{ type: "reasoning", text: "hmm" }, { type: "text", text: "Plan" }, { type: "tool_call", id: "c1", name: "f", arguments: '{"x":1}' }] },
        { role: "tool", content: [{ type: "tool_result", toolCallId: "c1", content: [{ type: "text", text: "ok" }] }] },
      ],
      tools: [{ name: "f", parameters: { type: "object" } }],
      toolChoice: { type: "required" },
      sampling: { maxTokens: 10, temperature: 0.2, topP: 0.5, topK: 3, stop: ["X"], seed: 1, frequencyPenalty: 0.1, presencePenalty: 0.3 },
      reasoning: { budgetTokens: 1024 },
      stream: true,
    });
    const encoded = encode(original);
    expect(encoded.warnings).toEqual([]);
    expect(decodeOk(encoded.body).value).toEqual({ ...original, model: "command-upstream" });
  });
});

// ---- responses: finish reasons, usage, loss ------------------------------------------------------------------

describe("response mapping", () => {
  const wire = (extra: Record<string, unknown>) => ({ id: "r-1", finish_reason: "COMPLETE", message: { role: "assistant", content: [{ type: "text", text: "A" }] }, usage: { tokens: { input_tokens: 1, output_tokens: 1 } }, ...extra });
  const decoded = (value: unknown) => {
    const result = decodeResponse(value, clock);
    if (!result.ok) throw new Error(result.error.message);
    return result;
  };

  test("every finish_reason maps to its unified finish and back to itself", () => {
    const table: [string, IrFinishUnified][] = [
      ["COMPLETE", "stop"],
      ["STOP_SEQUENCE", "stop"],
      ["MAX_TOKENS", "length"],
      ["TOOL_CALL", "tool_calls"],
      ["ERROR", "error"],
      ["TIMEOUT", "error"],
    ];
    for (const [reason, unified] of table) {
      const value = decoded(wire({ finish_reason: reason })).value;
      expect(value.finishReason).toEqual({ unified, raw: reason });
      expect(encodeResponse(value, () => {})).toMatchObject({ finish_reason: reason });
    }
  });

  test("another protocol's finish reasons map to Cohere's words; what has none is COMPLETE, warned", () => {
    const reason = (finishReason: IrResponse["finishReason"], warnings: string[] = []) => (encodeResponse(response({ finishReason }), (w) => warnings.push(w)) as { finish_reason: string }).finish_reason;
    expect(reason({ unified: "stop", raw: "end_turn" })).toBe("COMPLETE");
    expect(reason({ unified: "stop", raw: "stop_sequence", stopSequence: "END" })).toBe("STOP_SEQUENCE");
    expect(reason({ unified: "length", raw: "length" })).toBe("MAX_TOKENS");
    expect(reason({ unified: "tool_calls", raw: "tool_use" })).toBe("TOOL_CALL");
    expect(reason({ unified: "error" })).toBe("ERROR");
    const warnings: string[] = [];
    expect(reason({ unified: "pause", raw: "pause_turn" }, warnings)).toBe("COMPLETE");
    expect(warnings).toEqual(["finish reason pause_turn has no Cohere finish_reason; sent COMPLETE"]);
  });

  test("tool_plan and tool_calls: the plan is reasoning before the calls, never answer text", () => {
    const value = decoded(wire({ finish_reason: "TOOL_CALL", message: { role: "assistant", tool_plan: "I will check.", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: '{"a":1}' } }] } })).value;
    expect(value.content).toEqual([{ type: "reasoning", text: "I will check." }, { type: "tool_call", id: "c", name: "f", arguments: '{"a":1}' }]);
    expect((encodeResponse(value, () => {}) as { message: unknown }).message).toEqual({ role: "assistant", content: [{ type: "thinking", thinking: "I will check." }], tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: '{"a":1}' } }] });
  });

  test("a forced tool call's plan reaches no client as text: each ingress sees the call alone as its answer", () => {
    const value = decoded(wire({ finish_reason: "TOOL_CALL", message: { role: "assistant", tool_plan: "I will call f.", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: '{"a":1}' } }] } })).value;
    for (const name of ["openai", "anthropic", "gemini", "bedrock", "responses"] as const) {
      const target = adapterFor(name)!;
      const back = target.decodeResponse(JSON.parse(JSON.stringify(target.encodeResponse(value, () => {}))));
      if (!back.ok) throw new Error(`${name} rejects its own response`);
      expect(back.value.content.filter((p) => p.type === "text")).toEqual([]);
      expect(back.value.content.filter((p) => p.type === "tool_call").map((p) => p.type === "tool_call" && p.arguments)).toEqual(['{"a":1}']);
    }
  });

  test("usage: tokens preferred, billed_units as fallback, cached tokens split out; usageFromResponse for metering", () => {
    expect(decoded(wire({ usage: { billed_units: { input_tokens: 5, output_tokens: 418 }, tokens: { input_tokens: 71, output_tokens: 418 }, cached_tokens: 64 } })).value.usage).toEqual({ inputNoCache: 7, inputCacheRead: 64, inputCacheWrite: 0, output: 418, outputReasoning: 0 });
    expect(decoded(wire({ usage: { billed_units: { input_tokens: 5, output_tokens: 418 } } })).value.usage).toEqual({ inputNoCache: 5, inputCacheRead: 0, inputCacheWrite: 0, output: 418, outputReasoning: 0 });
    expect(decoded(wire({ usage: undefined })).value.usage).toEqual(ZERO);
    expect(cohere.usageFromResponse(fixture<ResponseFixture>("plain-response").wire)).toEqual({ inputNoCache: 71, output: 418 });
    expect(cohere.usageFromResponse({ id: "x" })).toBeUndefined();
  });

  test("citations and logprobs in a response are dropped with a warning", () => {
    const result = decoded(wire({ logprobs: [{ token_ids: [1] }], message: { role: "assistant", content: [{ type: "text", text: "A" }], citations: [{ start: 0, end: 1 }] } }));
    expect(result.value.content).toEqual([{ type: "text", text: "A" }]);
    expect(result.warnings).toEqual(["logprobs dropped: log probabilities are not modelled by the gateway's IR", "citations dropped at message.citations: citations are Cohere-only"]);
  });

  test("another vendor's reasoning is shown as thinking content; its signature dropped with a warning", () => {
    const warnings: string[] = [];
    const encoded = encodeResponse(response({ content: [{ type: "reasoning", text: "mull", signature: "s" }, { type: "text", text: "A" }] }), (w) => warnings.push(w));
    expect((encoded as { message: unknown }).message).toEqual({ role: "assistant", content: [{ type: "thinking", thinking: "mull" }, { type: "text", text: "A" }] });
    expect(warnings).toEqual(["reasoning signature dropped: Cohere's thinking content has no signature"]);
  });

  test("a malformed upstream response is the upstream's fault: api_error, 502, transient", () => {
    const result = decodeResponse({ id: "r-1", message: { content: "nope" } }, clock);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatchObject({ kind: "api_error", status: 502, failure: "transient" });
    expect(decodeResponse({ message: {} }, clock).ok).toBe(false);
  });
});

// ---- errors -------------------------------------------------------------------------------------------------

describe("errors", () => {
  test("error fixture: decode -> IR error, IR -> encode", async () => {
    const f = fixture<ErrorFixture>("error");
    expect(decodeError(f.status, JSON.stringify(f.wire), new Headers())).toEqual(f.ir);
    const answer = encodeError(irError("not_found", "model 'xyz' not found, make sure the correct model ID was used and that you have access to the model."));
    expect(answer.status).toBe(404);
    expect(await answer.json()).toEqual(f.encoded);
  });

  const table: [string, IrError, number, Record<string, unknown>, string | null][] = [
    ["bad credential", irError("authentication", "invalid api token"), 401, { message: "invalid api token" }, null],
    ["pool not allowed", irError("permission", "not allowed"), 403, { message: "not allowed" }, null],
    ["unknown model", irError("not_found", "model 'x' not found"), 404, { message: "model 'x' not found" }, null],
    ["body too large", irError("request_too_large", "request body too large"), 413, { message: "request body too large" }, null],
    ["rate limit", irError("rate_limit", "slow down", { retryAfterSecs: 7 }), 429, { message: "slow down" }, "7"],
    ["budget exhausted", irError("insufficient_quota", "budget exhausted", { status: 402 }), 429, { message: "budget exhausted", type: "insufficient_quota" }, null],
    ["pool exhausted", irError("overloaded", "no capacity", { retryAfterSecs: 2.2, status: 529 }), 503, { message: "no capacity" }, "3"],
    ["upstream timeout", irError("timeout", "upstream timed out"), 504, { message: "upstream timed out" }, null],
    ["malformed body", irError("invalid_request", "messages: required member missing"), 400, { message: "messages: required member missing" }, null],
    ["internal", irError("api_error", "boom"), 500, { message: "boom" }, null],
  ];
  for (const [name, error, status, wireBody, retryAfter] of table) {
    test(`encodeError: ${name} -> ${status}`, async () => {
      const answer = encodeError(error);
      expect(answer.status).toBe(status);
      expect(answer.headers.get("retry-after")).toBe(retryAfter);
      expect(await answer.json()).toEqual(wireBody);
    });
  }

  test("the official SDK raises its own typed errors from them", async () => {
    const chat = (error: IrError) => rejection(sdk(() => encodeError(error)).client.chat({ model: "m", messages: [{ role: "user", content: "Hi" }] }));
    expect(await chat(irError("invalid_request", "bad"))).toBeInstanceOf(Cohere.BadRequestError);
    expect(await chat(irError("authentication", "invalid api token"))).toBeInstanceOf(Cohere.UnauthorizedError);
    expect(await chat(irError("permission", "no"))).toBeInstanceOf(Cohere.ForbiddenError);
    expect(await chat(irError("not_found", "no model"))).toBeInstanceOf(Cohere.NotFoundError);
    expect(await chat(irError("rate_limit", "slow", { retryAfterSecs: 1 }))).toBeInstanceOf(Cohere.TooManyRequestsError);
    const quota = await chat(irError("insufficient_quota", "budget"));
    expect(quota).toBeInstanceOf(Cohere.TooManyRequestsError);
    expect((quota as CohereError).body).toEqual({ message: "budget", type: "insufficient_quota" });
    expect(await chat(irError("overloaded", "busy"))).toBeInstanceOf(Cohere.ServiceUnavailableError);
    expect(await chat(irError("timeout", "slow upstream"))).toBeInstanceOf(Cohere.GatewayTimeoutError);
    expect(await chat(irError("api_error", "boom"))).toBeInstanceOf(Cohere.InternalServerError);
  });

  const wire = (message: string) => JSON.stringify({ id: "e-1", message });
  const classes: [string, number, string, Headers, Partial<IrError>][] = [
    ["too many tokens -> context_length", 400, wire("too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 4292. Try using a shorter prompt, or enabling prompt truncating."), new Headers(), { kind: "invalid_request", failure: "context_length" }],
    ["402 billing -> quota", 402, wire("Maximum billing reached for this API key as set in your dashboard"), new Headers(), { kind: "insufficient_quota", failure: "quota" }],
    ["429 monthly trial cap -> quota", 429, wire("You are using a Trial key, which is limited to 1000 API calls / month."), new Headers(), { kind: "insufficient_quota", failure: "quota" }],
    ["429 per minute -> rate_limit with retry-after", 429, wire("You are past the per minute request limit, please wait and try again later."), new Headers({ "retry-after": "12" }), { kind: "rate_limit", failure: "rate_limit", retryAfterSecs: 12 }],
    ["401 -> credential", 401, wire("invalid api token"), new Headers(), { kind: "authentication", failure: "credential", message: "invalid api token" }],
    ["404 -> caller", 404, wire("model 'xyz' not found"), new Headers(), { kind: "not_found", failure: "caller" }],
    ["422 -> caller", 422, wire("unprocessable"), new Headers(), { kind: "invalid_request", failure: "caller" }],
    ["498 deny-listed token -> caller", 498, wire("invalid token"), new Headers(), { kind: "invalid_request", failure: "caller" }],
    ["499 cancelled -> caller", 499, wire("request cancelled"), new Headers(), { failure: "caller" }],
    ["500 -> transient", 500, wire("internal server error"), new Headers(), { kind: "api_error", failure: "transient" }],
    ["503 not JSON -> transient", 503, "upstream connect error", new Headers(), { kind: "overloaded", failure: "transient", message: "upstream connect error" }],
    ["empty body", 502, "", new Headers(), { kind: "api_error", failure: "transient", message: "upstream answered 502" }],
  ];
  for (const [name, status, text, headers, expected] of classes) {
    test(`decodeError: ${name}`, () => {
      expect(decodeError(status, text, headers)).toMatchObject({ status, ...expected });
    });
  }

  test("retry-after as an HTTP date counts from the injected clock", () => {
    const at = new Date(NOW_MS + 30_000).toUTCString();
    expect(decodeError(429, wire("slow"), new Headers({ "retry-after": at }), clock).retryAfterSecs).toBe(30);
  });
});

// ---- the adapter object ---------------------------------------------------------------------------------------

describe("adapter", () => {
  const request = (headers: Record<string, string>) => new Request("http://gateway.test/v2/chat", { method: "POST", headers });

  test("client credential: Authorization: Bearer (scheme in any case)", () => {
    expect(cohere.clientCredential(request({ authorization: "Bearer co-key" }))).toBe("co-key");
    expect(cohere.clientCredential(request({ authorization: "bearer co-key" }))).toBe("co-key");
    expect(cohere.clientCredential(request({ authorization: "Basic abc" }))).toBeUndefined();
    expect(cohere.clientCredential(request({}))).toBeUndefined();
  });

  test("egress headers, path and model rewrite", () => {
    expect(cohere.name).toBe("cohere");
    expect(cohere.authHeaders("co-up")).toEqual({ authorization: "Bearer co-up" });
    expect(cohere.upstreamPath("command-a-03-2025", true)).toBe("/v2/chat");
    expect(cohere.upstreamPath("command-a-03-2025", false)).toBe("/v2/chat");
    const wire = { model: "pool", messages: [], safety_mode: "STRICT" };
    expect(cohere.rewriteModel(wire, "command-a-03-2025")).toBe(wire);
    expect(wire).toEqual({ model: "command-a-03-2025", messages: [], safety_mode: "STRICT" });
    expect(cohere.streamHeaders["content-type"]).toBe("text/event-stream; charset=utf-8");
  });

  test("the adapter's stream decoder taps usage from a same-protocol stream for metering", async () => {
    const f = fixture<StreamFixture>("stream-text");
    const parts = await readAll(streamOf([bytesOf(f.wire)]).pipeThrough(parserTransform(cohere.createStreamParser())));
    expect(parts.filter((p) => p.type === "usage")).toEqual([{ type: "usage", usage: { inputNoCache: 71, output: 26 } }]);
  });
});
