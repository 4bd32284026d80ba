// The Gemini generateContent adapter: golden fixtures from Google's API reference both ways, streams
// (SSE and the JSON array) chunk by chunk and part by part, the error table and failure classes, 400s
// naming the member, thought signatures and function-call ids across turns, and the warnings for what
// cannot cross protocols. The official @google/genai SDK reads the encoders' output as its own.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ApiError, GoogleGenAI } from "@google/genai";
import { irError, type IrError, type IrRequest, type IrResponse, type IrStreamPart } from "../../../src/ir/index.ts";
import { gemini } from "../../../src/protocols/gemini/index.ts";
import { decodeError, encodeError } from "../../../src/protocols/gemini/errors.ts";
import { carriedSignature, decodeModelPart, decodeResponse, encodeResponse } from "../../../src/protocols/gemini/response.ts";
import { DropLog } from "../../../src/protocols/gemini/schema.ts";
import { createArrayStreamParser, createArrayStreamWriter, createStreamEncoder, createStreamParser } from "../../../src/protocols/gemini/stream.ts";
import { bytesOf, pieces, readAll, streamOf } from "../../support/streams.ts";
import { parserTransform } from "../../../src/transport/push-parser.ts";
import { wireBytes } from "../../../src/protocols/stream-writer.ts";

// ---- helpers -----------------------------------------------------------------------------------------

const FIXTURES = join(import.meta.dir, "../../fixtures/protocols/gemini");
const fixture = <T>(name: string): T => JSON.parse(readFileSync(join(FIXTURES, `${name}.json`), "utf8")) as T;

type Json = Record<string, unknown>;
interface RequestFixture {
  source: string;
  pathModel: string;
  wire: Json;
  ir: IrRequest;
  warnings: string[];
  encoded?: Json;
  encodedWarnings?: string[];
}
interface ResponseFixture {
  source: string;
  wire: Json;
  ir: IrResponse;
  encoded?: Json;
}
interface StreamFixture {
  source: string;
  wire: string;
  ir: IrStreamPart[];
  encoded: Json[];
}
interface ErrorFixture {
  source: string;
  status: number;
  wire: Json;
  ir: IrError;
  encoded: Json;
}

const NOW_MS = 1_700_000_000_000;
const clock = () => NOW_MS;
const textOf = (chunks: readonly Uint8Array[]) => chunks.map((c) => new TextDecoder().decode(c)).join("");

const decodeChunks = (chunks: readonly Uint8Array[]) => readAll(streamOf(chunks).pipeThrough(parserTransform(createStreamParser(clock))));
const decodeText = (text: string) => decodeChunks([bytesOf(text)]);
const sse = (...chunks: unknown[]) => chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`).join("");

const BASE_REQUEST: IrRequest = { model: "gemini-2.5-flash", system: [], messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], tools: [], sampling: {}, stream: true };

/** IR parts -> the SSE events' JSON, and the warnings. */
async function encodeParts(parts: readonly IrStreamPart[], warnings: string[] = []): Promise<Json[]> {
  const text = textOf(await readAll(streamOf(parts).pipeThrough(createStreamEncoder(BASE_REQUEST, (w) => warnings.push(w)))));
  return text
    .split("\r\n\r\n")
    .filter((event) => event !== "")
    .map((event) => JSON.parse(event.slice("data: ".length)) as Json);
}

function arrayBytes(parts: readonly IrStreamPart[], warnings: string[] = []): string {
  const out: Uint8Array[] = [];
  const writer = createArrayStreamWriter(BASE_REQUEST, (w) => warnings.push(w), (chunk) => out.push(wireBytes(chunk)));
  parts.forEach((part) => writer.accept(part));
  writer.end();
  return textOf(out);
}

const body = (extra: Json = {}): Json => ({ contents: [{ role: "user", parts: [{ text: "Hi" }] }], ...extra });
const CONTEXT = { pathModel: "gemini-2.5-flash", pathStream: false };
function decodeOk(wire: unknown, context = CONTEXT) {
  const decoded = gemini.decodeRequest(wire, context);
  if (!decoded.ok) throw new Error(`expected a decode, got ${decoded.error.message}`);
  return decoded;
}
function decodeFail(wire: unknown): IrError {
  const decoded = gemini.decodeRequest(wire, CONTEXT);
  if (decoded.ok) throw new Error("expected a 400");
  return decoded.error;
}
const ir = (extra: Partial<IrRequest> = {}): IrRequest => ({ ...BASE_REQUEST, stream: false, ...extra });
const encode = (request: IrRequest) => gemini.encodeRequest(request, "gemini-upstream");
const encodedBody = (request: IrRequest) => encode(request).body as Json;
const contentsOf = (request: IrRequest) => encodedBody(request).contents as { role: string; parts: Json[] }[];

/** What a promise rejected with. */
const rejection = (promise: PromiseLike<unknown>): Promise<unknown> => Promise.resolve(promise).then(() => "resolved", (error: unknown) => error);

/** An official SDK client whose every request gets `answer()`; what it sent is kept in `sent`. */
function sdk(answer: () => Response) {
  const sent: { url: string; headers: Headers; body: unknown }[] = [];
  const fetch = async (url: string | URL | Request, init?: RequestInit) => {
    sent.push({ url: String(url), headers: new Headers(init?.headers), body: JSON.parse(String(init?.body)) });
    return answer();
  };
  const client = new GoogleGenAI({ apiKey: "k-test", httpOptions: { baseUrl: "http://gateway.test", fetch: fetch as typeof globalThis.fetch } });
  return { client, sent };
}

// ---- fixtures: requests ------------------------------------------------------------------------------

describe("request fixtures, both directions", () => {
  for (const name of ["plain-request", "tool-request", "image-request"]) {
    const f = fixture<RequestFixture>(name);
    test(`${name}: decode -> IR`, () => {
      const decoded = decodeOk(f.wire, { pathModel: f.pathModel, pathStream: false });
      expect(decoded.value).toEqual(f.ir);
      expect(decoded.warnings).toEqual(f.warnings);
    });
    test(`${name}: IR -> encode equals the ${f.encoded ? "stated" : "wire"} form`, () => {
      const encoded = gemini.encodeRequest(f.ir, f.pathModel);
      expect(encoded.path).toBe(`/v1beta/models/${f.pathModel}:generateContent`);
      expect(encoded.body).toEqual(f.encoded ?? f.wire);
      expect(encoded.warnings).toEqual(f.encodedWarnings ?? []);
    });
  }

  test("tool-request: the encoded form decodes back to the same messages (the skip signature signs nothing)", () => {
    const f = fixture<RequestFixture>("tool-request");
    const again = decodeOk(f.encoded);
    expect(again.value.messages).toEqual(f.ir.messages);
  });
});

// ---- fixtures: responses -----------------------------------------------------------------------------

describe("response fixtures, both directions", () => {
  for (const name of ["plain-response", "thinking-response", "tool-call-response"]) {
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

  test("the official SDK reads an encoded response: text without thoughts, function calls, usage", async () => {
    const thinking = fixture<ResponseFixture>("thinking-response");
    const { client } = sdk(() => Response.json(encodeResponse(thinking.ir, () => {})));
    const response = await client.models.generateContent({ model: "gemini-2.5-pro", contents: "What is 2 + 2?" });
    expect(response.text).toBe("2 + 2 = 4.");
    expect(response.usageMetadata?.thoughtsTokenCount).toBe(80);
    expect(response.responseId).toBe("Z0OtaN3dBfTlz7IP9-6BqAk");

    const tool = fixture<ResponseFixture>("tool-call-response");
    const second = sdk(() => Response.json(encodeResponse(tool.ir, () => {})));
    const called = await second.client.models.generateContent({ model: "gemini-3-pro-preview", contents: "Check flight AA100" });
    expect(called.functionCalls).toEqual([{ id: "call_0", name: "check_flight", args: { flight: "AA100" } }]);
  });
});

// ---- fixtures: streams -------------------------------------------------------------------------------

describe("stream fixtures, decoder", () => {
  for (const name of ["stream-text", "stream-tool-call"]) {
    const f = fixture<StreamFixture>(name);
    test(`${name}: the SSE text decodes to the IR parts`, async () => {
      expect(await decodeText(f.wire)).toEqual(f.ir);
    });
    for (const size of [1, 3, 7]) {
      test(`${name}: the same IR when the bytes arrive ${size} at a time`, async () => {
        expect(await decodeChunks(pieces(bytesOf(f.wire), size))).toEqual(f.ir);
      });
    }
  }

  test("stream-text: the same IR split in two at every byte boundary", async () => {
    const f = fixture<StreamFixture>("stream-text");
    const bytes = bytesOf(f.wire);
    for (let cut = 1; cut < bytes.length; cut += 1) expect(await decodeChunks([bytes.slice(0, cut), bytes.slice(cut)])).toEqual(f.ir);
  });

  test("stream-tool-call: the functionCall arrives whole, as start, one delta of its args, end, and the finish is tool_calls", async () => {
    const parts = await decodeText(fixture<StreamFixture>("stream-tool-call").wire);
    const call = parts.filter((p) => p.type.startsWith("tool-call"));
    expect(call).toEqual([
      { type: "tool-call-start", id: "block-2", toolCallId: "call_0", name: "get_current_temperature" },
      { type: "tool-call-delta", id: "block-2", argumentsDelta: '{"location":"London"}' },
      { type: "tool-call-end", id: "block-2" },
    ]);
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: { unified: "tool_calls", raw: "STOP" } });
  });

  test("multi-byte characters split across chunks at every byte survive", async () => {
    const text = "héllo ☃ 🌍";
    const wire = sse({ candidates: [{ content: { parts: [{ text }], role: "model" }, finishReason: "STOP", index: 0 }], responseId: "r", modelVersion: "m" });
    const parts = await decodeChunks(pieces(bytesOf(wire), 1));
    expect(parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")).toBe(text);
  });
});

describe("stream fixtures, encoder", () => {
  for (const name of ["stream-text", "stream-tool-call"]) {
    const f = fixture<StreamFixture>(name);
    test(`${name}: the IR parts encode to the stated chunks`, async () => {
      const warnings: string[] = [];
      expect(await encodeParts(f.ir, warnings)).toEqual(f.encoded);
      expect(warnings).toEqual([]);
    });
  }

  test("each chunk is written as `data: <json>\\r\\n\\r\\n`, one per IR delta, at once", async () => {
    const f = fixture<StreamFixture>("stream-text");
    const chunks = await readAll(streamOf(f.ir).pipeThrough(createStreamEncoder(BASE_REQUEST, () => {})));
    const texts = chunks.map((c) => new TextDecoder().decode(c));
    expect(texts).toHaveLength(4);
    expect(texts[0]).toBe('data: {"candidates":[{"content":{"parts":[{"text":"The"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.0-flash","responseId":"2FutaIKbC-ngz7IP29aRuQk"}\r\n\r\n');
  });

  test("the official SDK reads the encoded stream: text chunks, then the function call with its id", async () => {
    const text = fixture<StreamFixture>("stream-text");
    const first = sdk(() => new Response(streamOf(text.ir).pipeThrough(createStreamEncoder(BASE_REQUEST, () => {})), { headers: gemini.streamHeaders }));
    let said = "";
    let last: unknown;
    for await (const chunk of await first.client.models.generateContentStream({ model: "gemini-2.0-flash", contents: "Hi" })) {
      said += chunk.text ?? "";
      last = chunk;
    }
    expect(said).toBe("The quick brown fox jumps over the lazy dog.");
    expect(last).toMatchObject({ candidates: [{ finishReason: "STOP" }], usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 10, totalTokenCount: 19 } });
    expect(first.sent[0]?.url).toBe("http://gateway.test/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse");

    const tool = fixture<StreamFixture>("stream-tool-call");
    const second = sdk(() => new Response(streamOf(tool.ir).pipeThrough(createStreamEncoder(BASE_REQUEST, () => {})), { headers: gemini.streamHeaders }));
    const calls: unknown[] = [];
    for await (const chunk of await second.client.models.generateContentStream({ model: "gemini-2.5-flash", contents: "Weather?" })) calls.push(...(chunk.functionCalls ?? []));
    expect(calls).toEqual([{ id: "call_0", name: "get_current_temperature", args: { location: "London" } }]);
  });
});

// ---- the JSON-array stream -----------------------------------------------------------------------------

describe("JSON-array stream (streamGenerateContent without alt=sse)", () => {
  const f = fixture<StreamFixture>("stream-text");

  test("the writer frames the same chunks as one array: `[` first, `,\\r\\n` between, `]` at the end", () => {
    const text = arrayBytes(f.ir);
    expect(text.startsWith('[{"candidates"')).toBe(true);
    expect(text.split(",\r\n")).toHaveLength(f.encoded.length);
    expect(text.endsWith("}]")).toBe(true);
    expect(JSON.parse(text)).toEqual(f.encoded);
  });

  test("an error after the start is the array's last element, and the array is closed", () => {
    const text = arrayBytes([f.ir[0] as IrStreamPart, { type: "text-start", id: "x" }, { type: "text-delta", id: "x", delta: "Hi" }, { type: "error", error: irError("overloaded", "busy") }]);
    const elements = JSON.parse(text) as Json[];
    expect(elements.at(-1)).toEqual({ error: { code: 503, message: "busy", status: "UNAVAILABLE" } });
  });

  test("a stream that ends with nothing is still a closed array holding an error", () => {
    expect(JSON.parse(arrayBytes([]))).toEqual([{ error: { code: 502, message: "the stream ended before the response was complete", status: "INTERNAL" } }]);
  });

  for (const size of [1, 3, 7]) {
    test(`the array decoder reads it back to the same IR, ${size} bytes at a time`, async () => {
      const parts = await readAll(streamOf(pieces(bytesOf(arrayBytes(f.ir)), size)).pipeThrough(parserTransform(createArrayStreamParser(clock))));
      expect(parts.filter((p) => p.type !== "usage")).toEqual(f.ir.filter((p) => p.type !== "usage"));
      expect(parts.filter((p) => p.type === "usage").at(-1)).toEqual({ type: "usage", usage: { inputNoCache: 9, output: 10 } });
    });
  }

  test("braces and brackets inside strings do not end an element", async () => {
    const tricky = 'a } ] { [ " \\ quote';
    const wire = `[${JSON.stringify({ candidates: [{ content: { parts: [{ text: tricky }] }, finishReason: "STOP" }] })}]`;
    const parts = await readAll(streamOf(pieces(bytesOf(wire), 2)).pipeThrough(parserTransform(createArrayStreamParser(clock))));
    expect(parts.find((p) => p.type === "text-delta")).toEqual({ type: "text-delta", id: "block-0", delta: tricky });
  });

  test("a tail that starts mid-array (what the meter keeps) resumes at the next element and finds the usage", async () => {
    const text = arrayBytes(f.ir);
    const tail = text.slice(text.indexOf(",\r\n") - 10);
    const parts = await readAll(streamOf([bytesOf(tail)]).pipeThrough(parserTransform(createArrayStreamParser(clock))));
    expect(parts.filter((p) => p.type === "usage").at(-1)).toEqual({ type: "usage", usage: { inputNoCache: 9, output: 10 } });
  });

  test("a tail of Google's pretty-printed array resumes at the element that opens a line", async () => {
    const pretty = f.encoded.map((chunk) => JSON.stringify(chunk, null, 2)).join("\n,\r\n");
    const wire = `[${pretty}]`;
    const tail = wire.slice(wire.lastIndexOf('"text"'));
    const parts = await readAll(streamOf(pieces(bytesOf(tail), 3)).pipeThrough(parserTransform(createArrayStreamParser(clock))));
    expect(parts.filter((p) => p.type === "usage")).toEqual([{ type: "usage", usage: { inputNoCache: 9, output: 10 } }]);
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: { unified: "stop", raw: "STOP" } });
  });

  test("the adapter's array variant: its own writer, decoder, headers and upstream path", async () => {
    const variant = gemini.jsonArrayStream;
    if (!variant) throw new Error("no array variant");
    expect(variant.name).toBe("gemini");
    expect(variant.streamHeaders["content-type"]).toBe("application/json; charset=utf-8");
    expect(variant.upstreamPath("gemini-2.5-flash", true)).toBe("/v1beta/models/gemini-2.5-flash:streamGenerateContent");
    expect(variant.upstreamPath("gemini-2.5-flash", false)).toBe("/v1beta/models/gemini-2.5-flash:generateContent");
    const bytes = textOf(await readAll(streamOf(f.ir).pipeThrough(variant.createStreamEncoder(BASE_REQUEST, () => {}))));
    expect(JSON.parse(bytes)).toEqual(f.encoded);
    const usage = (await readAll(streamOf([bytesOf(bytes)]).pipeThrough(parserTransform(variant.createStreamParser())))).filter((p) => p.type === "usage");
    expect(usage.at(-1)).toEqual({ type: "usage", usage: { inputNoCache: 9, output: 10 } });
  });
});

// ---- stream decoder: beyond the fixtures ---------------------------------------------------------------

describe("stream decoder", () => {
  const chunk = (parts: Json[], extra: Json = {}) => ({ candidates: [{ content: { parts, role: "model" }, index: 0, ...extra }], modelVersion: "gemini-2.5-flash", responseId: "r1" });

  test("thoughts then text: a reasoning block, then a text block; a signature on the last text part follows it", async () => {
    const parts = await decodeText(sse(chunk([{ text: "Hmm.", thought: true }]), chunk([{ text: "Answer" }]), chunk([{ text: "", thoughtSignature: "c2ln" }], { finishReason: "STOP" })));
    expect(parts.slice(1)).toEqual([
      { type: "reasoning-start", id: "block-0" },
      { type: "reasoning-delta", id: "block-0", delta: "Hmm." },
      { type: "reasoning-end", id: "block-0" },
      { type: "text-start", id: "block-1" },
      { type: "text-delta", id: "block-1", delta: "Answer" },
      { type: "text-end", id: "block-1" },
      { type: "reasoning-start", id: "block-2" },
      { type: "reasoning-signature", id: "block-2", signature: "c2ln" },
      { type: "reasoning-end", id: "block-2" },
      { type: "finish", finishReason: { unified: "stop", raw: "STOP" } },
    ]);
  });

  test("Google's skip signature signs nothing: no reasoning block for it", async () => {
    const parts = await decodeText(sse(chunk([{ functionCall: { name: "f", args: {} }, thoughtSignature: "skip_thought_signature_validator" }], { finishReason: "STOP" })));
    expect(parts.map((p) => p.type)).toEqual(["start", "tool-call-start", "tool-call-delta", "tool-call-end", "finish"]);
  });

  test("parallel calls without ids get call_0, call_1; calls with ids keep them", async () => {
    const parts = await decodeText(
      sse(chunk([{ functionCall: { name: "a", args: {} } }, { functionCall: { name: "b", args: { x: 1 } } }, { functionCall: { id: "fc-9", name: "c" } }], { finishReason: "STOP" })),
    );
    expect(parts.flatMap((p) => (p.type === "tool-call-start" ? [p.toolCallId] : []))).toEqual(["call_0", "call_1", "fc-9"]);
    expect(parts.flatMap((p) => (p.type === "tool-call-delta" ? [p.argumentsDelta] : []))).toEqual(["{}", '{"x":1}', "{}"]);
  });

  test("usage is a part only when the counts change; the last counts win", async () => {
    const usage = { promptTokenCount: 4, totalTokenCount: 4 };
    const parts = await decodeText(sse({ ...chunk([{ text: "a" }]), usageMetadata: usage }, { ...chunk([{ text: "b" }]), usageMetadata: usage }, { ...chunk([], { finishReason: "MAX_TOKENS" }), usageMetadata: { ...usage, candidatesTokenCount: 2, totalTokenCount: 6 } }));
    expect(parts.filter((p) => p.type === "usage")).toEqual([
      { type: "usage", usage: { inputNoCache: 4 } },
      { type: "usage", usage: { inputNoCache: 4, output: 2 } },
    ]);
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: { unified: "length", raw: "MAX_TOKENS" } });
  });

  test("an error chunk ends the parts with an IR error, classed as its HTTP twin", async () => {
    const parts = await decodeText(sse(chunk([{ text: "par" }]), { error: { code: 503, message: "The model is overloaded. Please try again later.", status: "UNAVAILABLE" } }));
    expect(parts.at(-1)).toEqual({ type: "error", error: { kind: "overloaded", status: 503, message: "The model is overloaded. Please try again later.", failure: "transient", code: "UNAVAILABLE" } });
    expect(parts.some((p) => p.type === "finish")).toBe(false);
  });

  test("a stream cut before any finishReason ends with a transient error, never silently", async () => {
    const parts = await decodeText(sse(chunk([{ text: "par" }])));
    expect(parts.at(-1)).toEqual({ type: "error", error: { kind: "api_error", status: 502, message: "the upstream stream ended before a finishReason", failure: "transient" } });
  });

  test("a chunk that is not JSON ends the stream with an error", async () => {
    const parts = await decodeText(`${sse(chunk([{ text: "a" }]))}data: {not json\r\n\r\n`);
    expect(parts.at(-1)?.type).toBe("error");
  });

  test("a blocked prompt (promptFeedback, no candidates) finishes as content_filter", async () => {
    const parts = await decodeText(sse({ promptFeedback: { blockReason: "SAFETY" }, usageMetadata: { promptTokenCount: 7, totalTokenCount: 7 }, modelVersion: "m", responseId: "r" }));
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: { unified: "content_filter", raw: "SAFETY" } });
  });

  test("parts the IR does not carry (executableCode) are skipped; the rest keeps its order", async () => {
    const parts = await decodeText(sse(chunk([{ executableCode: { language: "PYTHON", code: "print(1)" } }, { text: "1" }], { finishReason: "STOP" })));
    expect(parts.slice(1, 4)).toEqual([
      { type: "text-start", id: "block-0" },
      { type: "text-delta", id: "block-0", delta: "1" },
      { type: "text-end", id: "block-0" },
    ]);
  });
});

// ---- stream encoder: beyond the fixtures ---------------------------------------------------------------

describe("stream encoder", () => {
  const head: IrStreamPart = { type: "start", id: "msg_1", model: "claude-x", created: 1 };
  const finish: IrStreamPart = { type: "finish", finishReason: { unified: "tool_calls", raw: "tool_use" } };
  const partsOf = (chunk: Json | undefined) => ((chunk?.candidates as Json[] | undefined)?.[0]?.content as { parts?: Json[] } | undefined)?.parts;

  test("interleaved IR tool calls go out whole, each when it ends, with their arguments parsed", async () => {
    const chunks = await encodeParts([
      head,
      { type: "tool-call-start", id: "t0", toolCallId: "toolu_a", name: "get_weather" },
      { type: "tool-call-delta", id: "t0", argumentsDelta: '{"city":' },
      { type: "tool-call-start", id: "t1", toolCallId: "toolu_b", name: "get_time" },
      { type: "tool-call-delta", id: "t1", argumentsDelta: '{"zone":"UTC"}' },
      { type: "tool-call-end", id: "t1" },
      { type: "tool-call-delta", id: "t0", argumentsDelta: '"Paris"}' },
      { type: "tool-call-end", id: "t0" },
      finish,
    ]);
    expect(chunks.slice(0, 2).map(partsOf)).toEqual([[{ functionCall: { id: "toolu_b", name: "get_time", args: { zone: "UTC" } } }], [{ functionCall: { id: "toolu_a", name: "get_weather", args: { city: "Paris" } } }]]);
    expect(chunks[2]).toEqual({ candidates: [{ finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 0, candidatesTokenCount: 0, totalTokenCount: 0 }, modelVersion: "claude-x", responseId: "msg_1" });
  });

  test("Anthropic thinking: thought deltas, then text and signature carried on an empty part; redacted thinking is dropped, warned", async () => {
    const warnings: string[] = [];
    const chunks = await encodeParts(
      [
        head,
        { type: "reasoning-start", id: "r" },
        { type: "reasoning-delta", id: "r", delta: "Let me think." },
        { type: "reasoning-signature", id: "r", signature: "EqQB" },
        { type: "reasoning-end", id: "r" },
        { type: "reasoning-start", id: "z", redactedData: "opaque" },
        { type: "reasoning-end", id: "z" },
        { type: "text-start", id: "x" },
        { type: "text-delta", id: "x", delta: "Done." },
        { type: "text-end", id: "x" },
        { type: "finish", finishReason: { unified: "stop", raw: "end_turn" } },
      ],
      warnings,
    );
    expect(chunks.slice(0, 3).map(partsOf)).toEqual([[{ text: "Let me think.", thought: true }], [{ text: "", thoughtSignature: carriedSignature("Let me think.", "EqQB") }], [{ text: "Done." }]]);
    expect(warnings).toEqual(["redacted reasoning dropped: Gemini has no form for it"]);
  });

  test("another vendor's signed thought before a tool call: its text and signature ride on the call, and come back whole from the client's history", async () => {
    const chunks = await encodeParts([
      head,
      { type: "reasoning-start", id: "r" },
      { type: "reasoning-delta", id: "r", delta: "Read the file first." },
      { type: "reasoning-signature", id: "r", signature: "EqQB" },
      { type: "reasoning-end", id: "r" },
      { type: "tool-call-start", id: "t", toolCallId: "toolu_1", name: "read_file" },
      { type: "tool-call-delta", id: "t", argumentsDelta: '{"file_path":"a"}' },
      { type: "tool-call-end", id: "t" },
      { type: "finish", finishReason: { unified: "tool_calls", raw: "tool_use" } },
    ]);
    const call = (partsOf(chunks[1]!) as Record<string, unknown>[])[0]!;
    expect(call.thoughtSignature).toBe(carriedSignature("Read the file first.", "EqQB"));
    // Gemini CLI keeps the call (with its signature) in history and drops the thought text.
    const decoded = decodeModelPart(call, "contents[1].parts[0]", new DropLog(), () => "toolu_1");
    expect(decoded).toEqual([
      { type: "reasoning", text: "Read the file first.", signature: "EqQB" },
      { type: "tool_call", id: "toolu_1", name: "read_file", arguments: '{"file_path":"a"}' },
    ]);
  });

  test("a signature-only reasoning block rides on the function call after it, else on an empty text part", async () => {
    const chunks = await encodeParts([
      head,
      { type: "reasoning-start", id: "s1" },
      { type: "reasoning-signature", id: "s1", signature: "U0lH" },
      { type: "reasoning-end", id: "s1" },
      { type: "tool-call-start", id: "t", toolCallId: "c", name: "f" },
      { type: "tool-call-end", id: "t" },
      { type: "reasoning-start", id: "s2" },
      { type: "reasoning-signature", id: "s2", signature: "TEFTVA" },
      { type: "reasoning-end", id: "s2" },
      finish,
    ]);
    expect(partsOf(chunks[0])).toEqual([{ functionCall: { id: "c", name: "f", args: {} }, thoughtSignature: "U0lH" }]);
    expect(partsOf(chunks[1])).toEqual([{ text: "", thoughtSignature: "TEFTVA" }]);
  });

  test("usage and the finish go in one closing chunk; the model and id come from the start part", async () => {
    const chunks = await encodeParts([head, { type: "usage", usage: { inputNoCache: 90, inputCacheRead: 10, output: 7, outputReasoning: 3 } }, { type: "finish", finishReason: { unified: "length", raw: "max_tokens" } }]);
    expect(chunks).toEqual([
      {
        candidates: [{ finishReason: "MAX_TOKENS", index: 0 }],
        usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 4, totalTokenCount: 107, cachedContentTokenCount: 10, thoughtsTokenCount: 3 },
        modelVersion: "claude-x",
        responseId: "msg_1",
      },
    ]);
  });

  test("an IR error part ends the stream with an error chunk; nothing follows it", async () => {
    const chunks = await encodeParts([head, { type: "text-start", id: "x" }, { type: "text-delta", id: "x", delta: "a" }, { type: "error", error: irError("rate_limit", "Too many requests", { retryAfterSecs: 3 }) }, { type: "text-delta", id: "x", delta: "late" }, finish]);
    expect(chunks).toHaveLength(2);
    expect(chunks[1]).toEqual({ error: { code: 429, message: "Too many requests", status: "RESOURCE_EXHAUSTED", details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "3s" }] } });
  });

  test("an IR stream that ends with neither finish nor error ends with an error chunk", async () => {
    const chunks = await encodeParts([head, { type: "text-start", id: "x" }, { type: "text-delta", id: "x", delta: "cut" }]);
    expect(chunks.at(-1)).toEqual({ error: { code: 502, message: "the stream ended before the response was complete", status: "INTERNAL" } });
  });

  test("tool calls still open at the finish are sent, with a warning", async () => {
    const warnings: string[] = [];
    const chunks = await encodeParts([head, { type: "tool-call-start", id: "t", toolCallId: "c", name: "f" }, { type: "tool-call-delta", id: "t", argumentsDelta: '{"a":1}' }, finish], warnings);
    expect(partsOf(chunks[0])).toEqual([{ functionCall: { id: "c", name: "f", args: { a: 1 } } }]);
    expect(warnings).toEqual(["stream finished with tool calls still open; sent them as they were"]);
  });

  test("the official SDK raises an in-stream error chunk as its ApiError with the code", async () => {
    const parts: IrStreamPart[] = [head, { type: "text-start", id: "x" }, { type: "text-delta", id: "x", delta: "a" }, { type: "error", error: irError("overloaded", "Overloaded") }];
    const { client } = sdk(() => new Response(streamOf(parts).pipeThrough(createStreamEncoder(BASE_REQUEST, () => {})), { headers: gemini.streamHeaders }));
    const drain = async () => {
      for await (const _ of await client.models.generateContentStream({ model: "m", contents: "Hi" })) {
        // read until it throws
      }
    };
    const error = await rejection(drain());
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(503);
  });
});

// ---- request decode: 400s naming the member ------------------------------------------------------------

describe("request decode rejects bad members with a 400 naming them", () => {
  const cases: [string, unknown, string, string][] = [
    ["no contents", {}, "contents", "* GenerateContentRequest.contents: contents is not specified"],
    ["a role that is neither user nor model", body({ contents: [{ role: "assistant", parts: [{ text: "x" }] }] }), "contents[0].role", "Please use a valid role: user, model."],
    ["a temperature that is a string", body({ generationConfig: { temperature: "hot" } }), "generationConfig.temperature", `Invalid value at 'generationConfig.temperature' (TYPE_FLOAT), "hot"`],
    ["text that is not a string", body({ contents: [{ role: "user", parts: [{ text: 5 }] }] }), "contents[0].parts[0].text", "Invalid value at 'contents[0].parts[0].text' (TYPE_STRING), 5"],
    ["a functionCall without a name", body({ contents: [{ role: "model", parts: [{ functionCall: { args: {} } }] }] }), "contents[0].parts[0].functionCall.name", "* GenerateContentRequest.contents[0].parts[0].functionCall.name: name is not specified"],
    ["a function declaration with an empty name", body({ tools: [{ functionDeclarations: [{ name: "" }] }] }), "tools[0].functionDeclarations[0].name", "* GenerateContentRequest.tools[0].functionDeclarations[0].name: name cannot be empty"],
    ["an unknown functionCallingConfig mode", body({ toolConfig: { functionCallingConfig: { mode: "SOMETIMES" } } }), "toolConfig.functionCallingConfig.mode", "Invalid value at 'toolConfig.functionCallingConfig.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), \"SOMETIMES\""],
    ["an unknown thinkingLevel", body({ generationConfig: { thinkingConfig: { thinkingLevel: "MAXIMUM" } } }), "generationConfig.thinkingConfig.thinkingLevel", "Invalid value at 'generationConfig.thinkingConfig.thinkingLevel' (type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig.ThinkingLevel), \"MAXIMUM\""],
    ["more than one candidate", body({ generationConfig: { candidateCount: 2 } }), "generationConfig.candidateCount", "generationConfig.candidateCount: this gateway serves one candidate per request across protocols"],
  ];
  for (const [name, wire, param, message] of cases) {
    test(name, () => {
      expect(decodeFail(wire)).toEqual({ kind: "invalid_request", status: 400, message, param });
    });
  }

  test("the 400 goes out as INVALID_ARGUMENT, which the official SDK raises as ApiError 400", async () => {
    const response = encodeError(decodeFail({}));
    expect(response.status).toBe(400);
    const { client } = sdk(() => encodeError(decodeFail({})));
    const error = await rejection(client.models.generateContent({ model: "m", contents: "Hi" }));
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    expect((error as ApiError).message).toContain("INVALID_ARGUMENT");
  });
});

// ---- request decode ------------------------------------------------------------------------------------

describe("request decode", () => {
  test("the model and streaming come from the path", () => {
    const decoded = decodeOk(body({ model: "ignored" }), { pathModel: "gemini-2.5-pro", pathStream: true });
    expect(decoded.value.model).toBe("gemini-2.5-pro");
    expect(decoded.value.stream).toBe(true);
    expect(decodeOk(body()).value.stream).toBe(false);
  });

  test("the docs' curl form: snake_case names and lone objects for repeated fields", () => {
    const decoded = decodeOk({
      system_instruction: { parts: { text: "You are a cat. Your name is Neko." } },
      contents: { parts: { text: "Hello there" } },
      generation_config: { max_output_tokens: 50, stop_sequences: ["Title"], thinking_config: { thinking_budget: 1024 } },
      tools: [{ function_declarations: [{ name: "f", parameters: { type: "OBJECT", properties: { snake_name: { type: "STRING" } } } }] }],
    });
    expect(decoded.value.system).toEqual([{ type: "text", text: "You are a cat. Your name is Neko." }]);
    expect(decoded.value.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Hello there" }] }]);
    expect(decoded.value.sampling).toEqual({ maxTokens: 50, stop: ["Title"] });
    expect(decoded.value.reasoning).toEqual({ budgetTokens: 1024 });
    // Property names are the caller's: never renamed.
    expect(decoded.value.tools[0]?.parameters).toEqual({ type: "object", properties: { snake_name: { type: "string" } } });
    expect(decoded.warnings).toEqual([]);
  });

  test("decoding leaves the caller's body as it came (a later same-protocol lane relays it)", () => {
    const camel = { contents: { role: "user", parts: { text: "Hello there" } }, generationConfig: { maxOutputTokens: 5 } };
    const snake = { contents: { parts: [{ text: "Hi" }] }, generation_config: { max_output_tokens: 5 } };
    for (const raw of [camel, snake]) {
      const before = structuredClone(raw);
      decodeOk(raw);
      expect(raw).toEqual(before);
    }
  });

  test("the SDK's own request body decodes (systemInstruction with role user, parametersJsonSchema, thinkingConfig)", async () => {
    const { client, sent } = sdk(() => Response.json(fixture<ResponseFixture>("plain-response").wire));
    await client.models.generateContent({
      model: "gemini-2.5-flash",
      contents: "Hi",
      config: { systemInstruction: "be brief", temperature: 0.2, thinkingConfig: { thinkingBudget: 0 }, tools: [{ functionDeclarations: [{ name: "f", parametersJsonSchema: { type: "object" } }] }] },
    });
    expect(sent[0]?.url).toBe("http://gateway.test/v1beta/models/gemini-2.5-flash:generateContent");
    expect(gemini.clientCredential(new Request(sent[0]?.url ?? "", { headers: sent[0]?.headers }))).toBe("k-test");
    const decoded = decodeOk(sent[0]?.body);
    expect(decoded.value).toMatchObject({ system: [{ type: "text", text: "be brief" }], sampling: { temperature: 0.2 }, tools: [{ name: "f", parameters: { type: "object" } }] });
    expect(decoded.value.reasoning).toBeUndefined();
    expect(decoded.warnings).toEqual([]);
  });

  test("function responses find their calls: by id, else the earliest open call of that name", () => {
    const decoded = decodeOk(
      body({
        contents: [
          { role: "user", parts: [{ text: "Weather in Paris and London, and the time?" }] },
          {
            role: "model",
            parts: [{ functionCall: { name: "weather", args: { city: "Paris" } } }, { functionCall: { name: "weather", args: { city: "London" } } }, { functionCall: { id: "t-1", name: "time", args: {} } }],
          },
          {
            role: "user",
            parts: [
              { functionResponse: { id: "t-1", name: "time", response: { output: "12:00" } } },
              { functionResponse: { name: "weather", response: { temperature: 18 } } },
              { functionResponse: { name: "weather", response: { error: "station offline" } } },
              { text: "Thanks!" },
            ],
          },
        ],
      }),
    );
    expect(decoded.value.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: [
          { type: "tool_call", id: "call_0", name: "weather", arguments: '{"city":"Paris"}' },
          { type: "tool_call", id: "call_1", name: "weather", arguments: '{"city":"London"}' },
          { type: "tool_call", id: "t-1", name: "time", arguments: "{}" },
        ],
      },
      {
        role: "tool",
        content: [
          { type: "tool_result", toolCallId: "t-1", content: [{ type: "text", text: "12:00" }] },
          { type: "tool_result", toolCallId: "call_0", content: [{ type: "text", text: '{"temperature":18}' }] },
          { type: "tool_result", toolCallId: "call_1", content: [{ type: "text", text: "station offline" }], isError: true },
        ],
      },
      { role: "user", content: [{ type: "text", text: "Thanks!" }] },
    ]);
  });

  test("responses without ids may come in any order: each takes the call of its own name", () => {
    const decoded = decodeOk(
      body({
        contents: [
          { role: "model", parts: [{ functionCall: { name: "a" } }, { functionCall: { name: "b" } }] },
          { role: "user", parts: [{ functionResponse: { name: "b", response: { output: "B" } } }, { functionResponse: { name: "a", response: { output: "A" } } }] },
        ],
      }),
    );
    expect(decoded.value.messages[1]).toEqual({
      role: "tool",
      content: [
        { type: "tool_result", toolCallId: "call_1", content: [{ type: "text", text: "B" }] },
        { type: "tool_result", toolCallId: "call_0", content: [{ type: "text", text: "A" }] },
      ],
    });
  });

  test("a functionResponse that answers no call gets its own id, noted", () => {
    const decoded = decodeOk(body({ contents: [{ role: "user", parts: [{ functionResponse: { name: "lost", response: {} } }] }] }));
    expect(decoded.value.messages[0]).toEqual({ role: "tool", content: [{ type: "tool_result", toolCallId: "call_0", content: [{ type: "text", text: "{}" }] }] });
    expect(decoded.warnings).toEqual(["functionResponse lost at contents[0].parts[0].functionResponse answers no earlier functionCall; given id call_0"]);
  });

  test("thought parts and signatures in model turns become reasoning parts next to their part", () => {
    const decoded = decodeOk(
      body({
        contents: [
          { role: "user", parts: [{ text: "Go" }] },
          { role: "model", parts: [{ text: "Plan.", thought: true, thoughtSignature: "QQ" }, { functionCall: { name: "f", args: {} }, thoughtSignature: "Qg" }, { text: "ok", thoughtSignature: "Qw" }] },
        ],
      }),
    );
    expect(decoded.value.messages[1]).toEqual({
      role: "assistant",
      content: [
        { type: "reasoning", text: "Plan.", signature: "QQ" },
        { type: "reasoning", text: "", signature: "Qg" },
        { type: "tool_call", id: "call_0", name: "f", arguments: "{}" },
        { type: "text", text: "ok" },
        { type: "reasoning", text: "", signature: "Qw" },
      ],
    });
  });

  test("a thought streamed in pieces, its signature on an empty thought part, is one signed thought again", () => {
    const decoded = decodeOk(
      body({
        contents: [
          { role: "user", parts: [{ text: "Go" }] },
          { role: "model", parts: [{ text: "Let me ", thought: true }, { text: "think.", thought: true }, { text: "", thought: true, thoughtSignature: "EqQB" }, { text: "Done." }] },
        ],
      }),
    );
    expect(decoded.value.messages[1]).toEqual({ role: "assistant", content: [{ type: "reasoning", text: "Let me think.", signature: "EqQB" }, { type: "text", text: "Done." }] });
  });

  test("media: images and PDFs inline or by public URL; uploaded files, audio and video are dropped, warned", () => {
    const decoded = decodeOk(
      body({
        contents: [
          {
            role: "user",
            parts: [
              { inlineData: { mimeType: "application/pdf", data: "JVBERi0=" } },
              { fileData: { mimeType: "image/png", fileUri: "https://example.com/cat.png" } },
              { fileData: { fileUri: "https://example.com/paper.pdf" } },
              { fileData: { mimeType: "application/pdf", fileUri: "https://generativelanguage.googleapis.com/v1beta/files/abc-123" } },
              { fileData: { mimeType: "video/mp4", fileUri: "https://www.youtube.com/watch?v=9hE5-98ZeCg" } },
              { inlineData: { mimeType: "audio/mp3", data: "SUQz" } },
            ],
          },
        ],
      }),
    );
    expect(decoded.value.messages[0]?.content).toEqual([
      { type: "document", source: { kind: "base64", mediaType: "application/pdf", data: "JVBERi0=" } },
      { type: "image", source: { kind: "url", url: "https://example.com/cat.png" } },
      { type: "document", source: { kind: "url", url: "https://example.com/paper.pdf" } },
    ]);
    expect(decoded.warnings).toEqual([
      "fileData uri dropped at contents[0].parts[3].fileData: uploaded files and gs:// objects are readable only by Gemini; only public http(s) URLs cross protocols",
      "video/mp4 media dropped at contents[0].parts[4]: audio, video and media of unknown type are not modelled by the gateway's IR",
      "audio/mp3 media dropped at contents[0].parts[5]: audio, video and media of unknown type are not modelled by the gateway's IR",
    ]);
  });

  test("Gemini-only members are dropped with one warning each: safety settings, built-in tools, cached content, logprobs", () => {
    const decoded = decodeOk(
      body({
        safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_ONLY_HIGH" }],
        cachedContent: "cachedContents/abc",
        tools: [{ googleSearch: {} }, { codeExecution: {} }, { functionDeclarations: [{ name: "f" }] }],
        generationConfig: { responseLogprobs: true, responseModalities: ["TEXT"] },
      }),
    );
    expect(decoded.value.tools).toEqual([{ name: "f", parameters: {} }]);
    expect(decoded.warnings).toEqual([
      "safetySettings dropped: safety settings are Gemini-only",
      "cachedContent dropped: cached content is Gemini-only",
      "responseLogprobs dropped at generationConfig.responseLogprobs: log probabilities are not modelled",
      "responseModalities dropped at generationConfig.responseModalities: only text output is modelled",
      "googleSearch tool dropped at tools[0].googleSearch: Gemini's built-in tools run only at Google",
      "codeExecution tool dropped at tools[1].codeExecution: Gemini's built-in tools run only at Google",
    ]);
  });

  test("Gemini's OpenAPI schemas become JSON Schema: lower-case types, nullable as a null type, camelCase keywords", () => {
    const decoded = decodeOk(
      body({
        tools: [{ functionDeclarations: [{ name: "f", parameters: { type: "OBJECT", properties: { tags: { type: "ARRAY", items: { type: "STRING" }, max_items: 3 }, note: { type: "STRING", nullable: true } }, required: ["tags"] } }] }],
      }),
    );
    expect(decoded.value.tools[0]?.parameters).toEqual({
      type: "object",
      properties: { tags: { type: "array", items: { type: "string" }, maxItems: 3 }, note: { type: ["string", "null"] } },
      required: ["tags"],
    });
  });

  const choice = (config: Json) => decodeOk(body({ toolConfig: { functionCallingConfig: config } }));
  test("functionCallingConfig: AUTO, NONE, ANY, ANY with one name; VALIDATED and several names are noted", () => {
    expect(choice({ mode: "AUTO" }).value.toolChoice).toEqual({ type: "auto" });
    expect(choice({ mode: "NONE" }).value.toolChoice).toEqual({ type: "none" });
    expect(choice({ mode: "ANY" }).value.toolChoice).toEqual({ type: "required" });
    expect(choice({ mode: "any", allowedFunctionNames: ["f"] }).value.toolChoice).toEqual({ type: "tool", name: "f" });
    const validated = choice({ mode: "VALIDATED" });
    expect(validated.value.toolChoice).toEqual({ type: "auto" });
    expect(validated.warnings).toEqual(["functionCallingConfig.mode VALIDATED carried as AUTO: the IR has no schema-validated mode"]);
    const several = choice({ mode: "ANY", allowedFunctionNames: ["f", "g"] });
    expect(several.value.toolChoice).toEqual({ type: "required" });
    expect(several.warnings).toEqual(["allowedFunctionNames dropped at toolConfig.functionCallingConfig.allowedFunctionNames: the IR names one tool or all of them; every declared function stays callable"]);
  });

  const thinking = (config: Json) => decodeOk(body({ generationConfig: { thinkingConfig: config } })).value.reasoning;
  test("thinkingConfig: a budget, -1 (dynamic), 0 (off), a level, includeThoughts alone", () => {
    expect(thinking({ thinkingBudget: 2048, includeThoughts: true })).toEqual({ budgetTokens: 2048 });
    expect(thinking({ thinkingBudget: -1 })).toEqual({});
    expect(thinking({ thinkingBudget: 0 })).toBeUndefined();
    expect(thinking({ thinkingLevel: "HIGH" })).toEqual({ effort: "high" });
    expect(thinking({ thinkingLevel: "low" })).toEqual({ effort: "low" });
    expect(thinking({ includeThoughts: true })).toEqual({});
  });

  const format = (config: Json) => decodeOk(body({ generationConfig: config }));
  test("response format: JSON mode, JSON schema (either member), text; other MIME types dropped, warned", () => {
    expect(format({ responseMimeType: "application/json" }).value.responseFormat).toEqual({ type: "json" });
    expect(format({ responseMimeType: "application/json", responseJsonSchema: { type: "object" } }).value.responseFormat).toEqual({ type: "json_schema", schema: { type: "object" } });
    expect(format({ responseMimeType: "application/json", responseSchema: { type: "ARRAY", items: { type: "STRING" } } }).value.responseFormat).toEqual({ type: "json_schema", schema: { type: "array", items: { type: "string" } } });
    expect(format({ responseMimeType: "text/plain" }).value.responseFormat).toBeUndefined();
    const enumOut = format({ responseMimeType: "text/x.enum", responseSchema: { type: "STRING", enum: ["a"] } });
    expect(enumOut.value.responseFormat).toBeUndefined();
    expect(enumOut.warnings).toEqual(["responseMimeType text/x.enum dropped at generationConfig.responseMimeType: the IR has text and JSON output only"]);
  });

  test("sampling: every generationConfig member the IR has", () => {
    const decoded = decodeOk(body({ generationConfig: { temperature: 0.3, topP: 0.9, topK: 40, maxOutputTokens: 99, stopSequences: ["x"], seed: 7, presencePenalty: 0.5, frequencyPenalty: -0.5, candidateCount: 1 } }));
    expect(decoded.value.sampling).toEqual({ temperature: 0.3, topP: 0.9, topK: 40, maxTokens: 99, stop: ["x"], seed: 7, presencePenalty: 0.5, frequencyPenalty: -0.5 });
    expect(decoded.warnings).toEqual([]);
  });
});

// ---- request encode ------------------------------------------------------------------------------------------

describe("request encode", () => {
  const call = (id: string, name: string, args = "{}") => ({ type: "tool_call" as const, id, name, arguments: args });

  test("path: generateContent, or streamGenerateContent with alt=sse; a models/ prefix is not doubled", () => {
    expect(encode(ir()).path).toBe("/v1beta/models/gemini-upstream:generateContent");
    expect(encode(ir({ stream: true })).path).toBe("/v1beta/models/gemini-upstream:streamGenerateContent?alt=sse");
    expect(gemini.encodeRequest(ir(), "models/gemini-2.5-flash").path).toBe("/v1beta/models/gemini-2.5-flash:generateContent");
  });

  test("tool results are named by the latest earlier call with their id; text that is a JSON object goes as is", () => {
    const contents = contentsOf(
      ir({
        messages: [
          { role: "user", content: [{ type: "text", text: "Go" }] },
          { role: "assistant", content: [call("call_0", "old")] },
          { role: "tool", content: [{ type: "tool_result", toolCallId: "call_0", content: [{ type: "text", text: "done" }] }] },
          { role: "assistant", content: [call("call_0", "weather", '{"city":"Paris"}'), call("toolu_1", "time")] },
          {
            role: "tool",
            content: [
              { type: "tool_result", toolCallId: "call_0", content: [{ type: "text", text: '{"temperature":18}' }] },
              { type: "tool_result", toolCallId: "toolu_1", content: [{ type: "text", text: "boom" }], isError: true },
            ],
          },
          { role: "user", content: [{ type: "text", text: "And tomorrow?" }] },
        ],
      }),
    );
    expect(contents.at(-1)).toEqual({
      role: "user",
      parts: [
        { functionResponse: { id: "call_0", name: "weather", response: { temperature: 18 } } },
        { functionResponse: { id: "toolu_1", name: "time", response: { error: "boom" } } },
        { text: "And tomorrow?" },
      ],
    });
    expect(contents[2]).toEqual({ role: "user", parts: [{ functionResponse: { id: "call_0", name: "old", response: { output: "done" } } }] });
  });

  test("a tool result whose call is nowhere is dropped, warned; images in results go as functionResponse parts", () => {
    const encoded = encode(
      ir({
        messages: [
          { role: "assistant", content: [call("c1", "shot")] },
          {
            role: "tool",
            content: [
              { type: "tool_result", toolCallId: "c1", content: [{ type: "text", text: "here" }, { type: "image", source: { kind: "base64", mediaType: "image/png", data: "iVBO" } }] },
              { type: "tool_result", toolCallId: "ghost", content: [{ type: "text", text: "?" }] },
            ],
          },
        ],
      }),
    );
    expect((encoded.body as Json).contents).toEqual([
      { role: "model", parts: [{ functionCall: { id: "c1", name: "shot", args: {} }, thoughtSignature: "skip_thought_signature_validator" }] },
      { role: "user", parts: [{ functionResponse: { id: "c1", name: "shot", response: { output: "here" }, parts: [{ inlineData: { mimeType: "image/png", data: "iVBO" } }] } }] },
    ]);
    expect(encoded.warnings).toContain("tool result for call ghost dropped: no earlier tool call names its function, which Gemini's functionResponse requires");
  });

  test("thought signatures: Gemini's go back on their parts; unsigned and redacted reasoning are dropped, warned", () => {
    const encoded = encode(
      ir({
        messages: [
          { role: "user", content: [{ type: "text", text: "Go" }] },
          {
            role: "assistant",
            content: [
              { type: "reasoning", text: "Plan.", signature: "QQ" },
              { type: "reasoning", text: "", signature: "Qg" },
              call("call_0", "f"),
              { type: "text", text: "ok" },
              { type: "reasoning", text: "", signature: "Qw" },
              { type: "reasoning", text: "OpenAI-style reasoning" },
              { type: "reasoning", text: "", redactedData: "opaque" },
            ],
          },
        ],
      }),
    );
    expect((encoded.body as { contents: Json[] }).contents[1]).toEqual({
      role: "model",
      parts: [{ text: "Plan.", thought: true, thoughtSignature: "QQ" }, { functionCall: { id: "call_0", name: "f", args: {} }, thoughtSignature: "Qg" }, { text: "ok", thoughtSignature: "Qw" }],
    });
    expect(encoded.warnings).toEqual([
      "reasoning without a thought signature (from another vendor) dropped: Gemini takes back only its own signed thoughts",
      "redacted reasoning dropped: Gemini has no form for it",
    ]);
  });

  test("another vendor's turns of calls get Google's documented skip signature on the first call only", () => {
    const encoded = encode(ir({ messages: [{ role: "user", content: [{ type: "text", text: "Go" }] }, { role: "assistant", content: [call("a", "f"), call("b", "g")] }] }));
    expect((encoded.body as { contents: { parts: Json[] }[] }).contents[1]?.parts).toEqual([
      { functionCall: { id: "a", name: "f", args: {} }, thoughtSignature: "skip_thought_signature_validator" },
      { functionCall: { id: "b", name: "g", args: {} } },
    ]);
    expect(encoded.warnings).toEqual(["1 model turn(s) with function calls had no thought signature (history from another vendor); sent Google's skip_thought_signature_validator"]);
  });

  test("arguments that are not a JSON object are sent as {}, warned", () => {
    const encoded = encode(ir({ messages: [{ role: "assistant", content: [call("a", "f", "[1,2]")] }] }));
    expect(encoded.warnings).toContain('tool call arguments are not a JSON object; sent args {} instead of "[1,2]"');
  });

  test("media: bytes inline, a data: URL inline, a URL as fileData with the type its extension names, else dropped, warned", () => {
    const encoded = encode(
      ir({
        messages: [
          {
            role: "user",
            content: [
              { type: "image", source: { kind: "base64", mediaType: "image/webp", data: "UklG" } },
              { type: "image", source: { kind: "url", url: "data:image/png;base64,iVBO" } },
              { type: "image", source: { kind: "url", url: "https://example.com/a/cat.JPG?size=large" } },
              { type: "document", source: { kind: "url", url: "https://example.com/paper.pdf" }, title: "Paper" },
              { type: "image", source: { kind: "url", url: "https://example.com/render?id=7" } },
            ],
          },
        ],
      }),
    );
    expect((encoded.body as { contents: { parts: Json[] }[] }).contents[0]?.parts).toEqual([
      { inlineData: { mimeType: "image/webp", data: "UklG" } },
      { inlineData: { mimeType: "image/png", data: "iVBO" } },
      { fileData: { mimeType: "image/jpeg", fileUri: "https://example.com/a/cat.JPG?size=large" } },
      { fileData: { mimeType: "application/pdf", fileUri: "https://example.com/paper.pdf" } },
    ]);
    expect(encoded.warnings).toEqual([
      "document title dropped: Gemini parts have no title",
      "image by URL dropped: Gemini's fileData needs a mimeType and https://example.com/render?id=7 names none by its extension",
    ]);
  });

  test("tools as parametersJsonSchema; strict dropped, warned; tool choice as functionCallingConfig", () => {
    const tools = [{ name: "f", description: "does f", parameters: { type: "object", properties: {} }, strict: true }, { name: "g", parameters: {} }];
    const encoded = encode(ir({ tools, toolChoice: { type: "tool", name: "f" } }));
    expect((encoded.body as Json).tools).toEqual([{ functionDeclarations: [{ name: "f", description: "does f", parametersJsonSchema: { type: "object", properties: {} } }, { name: "g" }] }]);
    expect((encoded.body as Json).toolConfig).toEqual({ functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["f"] } });
    expect(encoded.warnings).toEqual(["strict dropped from tool f: Gemini has no strict function schemas"]);
    expect(encodedBody(ir({ tools, toolChoice: { type: "required" } })).toolConfig).toEqual({ functionCallingConfig: { mode: "ANY" } });
    expect(encodedBody(ir({ tools, toolChoice: { type: "none" } })).toolConfig).toEqual({ functionCallingConfig: { mode: "NONE" } });
    expect(encodedBody(ir({ tools, toolChoice: { type: "auto" } })).toolConfig).toEqual({ functionCallingConfig: { mode: "AUTO" } });
  });

  test("what Gemini has no place for is warned: parallel_tool_calls false, a forced choice without tools, user", () => {
    const encoded = encode(ir({ parallelToolCalls: false, toolChoice: { type: "required" }, user: "u-1" }));
    expect((encoded.body as Json).toolConfig).toBeUndefined();
    expect(encoded.warnings).toEqual(["parallel_tool_calls false dropped: Gemini has no switch for parallel function calls", "tool_choice required dropped: the request has no tools", "user dropped: Gemini has no end-user id"]);
  });

  test("sampling and output as generationConfig; more than 5 stop sequences are cut, warned", () => {
    const encoded = encode(
      ir({
        sampling: { temperature: 0.5, topP: 0.9, topK: 20, maxTokens: 300, stop: ["1", "2", "3", "4", "5", "6"], seed: 3, presencePenalty: 0.1, frequencyPenalty: 0.2 },
        responseFormat: { type: "json_schema", name: "out", description: "the output", schema: { type: "object" } },
      }),
    );
    expect((encoded.body as Json).generationConfig).toEqual({
      temperature: 0.5,
      topP: 0.9,
      topK: 20,
      maxOutputTokens: 300,
      stopSequences: ["1", "2", "3", "4", "5"],
      seed: 3,
      presencePenalty: 0.1,
      frequencyPenalty: 0.2,
      responseMimeType: "application/json",
      responseJsonSchema: { type: "object" },
    });
    expect(encoded.warnings).toEqual(["stop sequences after the first 5 dropped: Gemini takes at most 5", "response_format description dropped: Gemini takes only a schema"]);
    expect(encodedBody(ir({ responseFormat: { type: "json" } })).generationConfig).toEqual({ responseMimeType: "application/json" });
  });

  test("reasoning: a budget as is; an effort by Google's own table; neither is dynamic (-1); thoughts included", () => {
    const thinkingOf = (reasoning: IrRequest["reasoning"]) => (encodedBody(ir({ ...(reasoning && { reasoning }) })).generationConfig as Json | undefined)?.thinkingConfig;
    expect(thinkingOf({ budgetTokens: 3000, effort: "high" })).toEqual({ thinkingBudget: 3000, includeThoughts: true });
    expect(thinkingOf({ effort: "low" })).toEqual({ thinkingBudget: 1024, includeThoughts: true });
    expect(thinkingOf({ effort: "medium" })).toEqual({ thinkingBudget: 8192, includeThoughts: true });
    expect(thinkingOf({ effort: "high" })).toEqual({ thinkingBudget: 24576, includeThoughts: true });
    expect(thinkingOf({})).toEqual({ thinkingBudget: -1, includeThoughts: true });
    expect(thinkingOf(undefined)).toBeUndefined();
  });

  test("system text parts, and adjacent user messages joined into one turn", () => {
    const body = encodedBody(
      ir({
        system: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
        messages: [
          { role: "user", content: [{ type: "text", text: "1" }] },
          { role: "user", content: [{ type: "text", text: "2" }] },
        ],
      }),
    );
    expect(body.systemInstruction).toEqual({ parts: [{ text: "a" }, { text: "b" }] });
    expect(body.contents).toEqual([{ role: "user", parts: [{ text: "1" }, { text: "2" }] }]);
  });
});

// ---- response mapping --------------------------------------------------------------------------------------

describe("response mapping", () => {
  const wire = (candidate: Json, extra: Json = {}) => ({ candidates: [{ index: 0, ...candidate }], modelVersion: "m", responseId: "r", ...extra });
  const finishOf = (finishReason: string) => {
    const decoded = decodeResponse(wire({ content: { parts: [{ text: "x" }], role: "model" }, finishReason }), clock);
    if (!decoded.ok) throw new Error(decoded.error.message);
    return decoded.value.finishReason;
  };

  test("finishReason: each Gemini value to its unified reason, the raw one kept", () => {
    expect(finishOf("STOP")).toEqual({ unified: "stop", raw: "STOP" });
    expect(finishOf("MAX_TOKENS")).toEqual({ unified: "length", raw: "MAX_TOKENS" });
    for (const raw of ["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"]) expect(finishOf(raw)).toEqual({ unified: "content_filter", raw });
    for (const raw of ["MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"]) expect(finishOf(raw)).toEqual({ unified: "error", raw });
    expect(finishOf("LANGUAGE")).toEqual({ unified: "other", raw: "LANGUAGE" });
    expect(finishOf("SOMETHING_NEW")).toEqual({ unified: "other", raw: "SOMETHING_NEW" });
  });

  test("a blocked prompt has no candidates: content_filter with the blockReason", () => {
    const decoded = decodeResponse({ promptFeedback: { blockReason: "PROHIBITED_CONTENT" }, usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 }, modelVersion: "m", responseId: "r" }, clock);
    expect(decoded.ok && decoded.value).toMatchObject({ content: [], finishReason: { unified: "content_filter", raw: "PROHIBITED_CONTENT" }, usage: { inputNoCache: 9 } });
  });

  test("extra candidates are dropped with a warning; parts the IR lacks are warned", () => {
    const decoded = decodeResponse(
      { candidates: [{ content: { parts: [{ text: "a" }, { executableCode: { language: "PYTHON", code: "1" } }] }, finishReason: "STOP" }, { content: { parts: [{ text: "b" }] }, finishReason: "STOP", index: 1 }] },
      clock,
    );
    expect(decoded.ok && decoded.warnings).toEqual([
      "candidates dropped at candidates[1]: the IR carries one candidate; 1 more dropped",
      "executableCode part dropped at candidates[0].content.parts[1]: this part type is not modelled by the gateway's IR",
    ]);
  });

  test("usage: tool-use prompt tokens count as input, thoughts as output", () => {
    const decoded = decodeResponse(wire({ finishReason: "STOP" }, { usageMetadata: { promptTokenCount: 10, toolUsePromptTokenCount: 5, candidatesTokenCount: 3, thoughtsTokenCount: 2, totalTokenCount: 20 } }), clock);
    expect(decoded.ok && decoded.value.usage).toEqual({ inputNoCache: 15, inputCacheRead: 0, inputCacheWrite: 0, output: 5, outputReasoning: 2 });
  });

  test("a malformed upstream response is the upstream's fault: api_error 502, transient", () => {
    const decoded = decodeResponse({ candidates: "nope" }, clock);
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) expect(decoded.error).toMatchObject({ kind: "api_error", status: 502, failure: "transient" });
  });

  const response = (finishReason: IrResponse["finishReason"], extra: Partial<IrResponse> = {}): IrResponse => ({ id: "msg_1", model: "claude-x", created: 1, content: [{ type: "text", text: "hi" }], finishReason, usage: { inputNoCache: 3, inputCacheRead: 0, inputCacheWrite: 2, output: 4, outputReasoning: 0 }, ...extra });
  test("encode: another vendor's finish in Gemini's words; what has none is OTHER, warned; a stop sequence is not named, warned", () => {
    const warnings: string[] = [];
    const uncached = { inputNoCache: 3, inputCacheRead: 0, inputCacheWrite: 0, output: 4, outputReasoning: 0 };
    const finishReasonOf = (finish: IrResponse["finishReason"]) => ((encodeResponse(response(finish, { usage: uncached }), (w) => warnings.push(w)).candidates as Json[])[0] as Json).finishReason;
    expect(finishReasonOf({ unified: "stop", raw: "end_turn" })).toBe("STOP");
    expect(finishReasonOf({ unified: "length", raw: "max_tokens" })).toBe("MAX_TOKENS");
    expect(finishReasonOf({ unified: "tool_calls", raw: "tool_use" })).toBe("STOP");
    expect(finishReasonOf({ unified: "content_filter", raw: "refusal" })).toBe("SAFETY");
    expect(warnings).toEqual([]);
    expect(finishReasonOf({ unified: "pause", raw: "pause_turn" })).toBe("OTHER");
    expect(finishReasonOf({ unified: "stop", raw: "stop_sequence", stopSequence: "END" })).toBe("STOP");
    expect(warnings).toEqual(["finish reason pause_turn has no Gemini finishReason; sent OTHER", 'stop sequence "END" not reported: Gemini\'s STOP does not say which one matched']);
  });

  test("encode: cache writes stay inside promptTokenCount, which is the whole input, warned", () => {
    const warnings: string[] = [];
    expect(encodeResponse(response({ unified: "stop" }), (w) => warnings.push(w)).usageMetadata).toEqual({ promptTokenCount: 5, candidatesTokenCount: 4, totalTokenCount: 9 });
    expect(warnings).toEqual(["cache-write tokens counted in promptTokenCount: Gemini's usageMetadata has no cache-write count"]);
  });
});

// ---- errors -------------------------------------------------------------------------------------------------

describe("errors", () => {
  test("error fixture: decode -> IR error, IR -> encode (normalised)", async () => {
    const f = fixture<ErrorFixture>("error");
    expect(decodeError(f.status, JSON.stringify(f.wire), new Headers())).toEqual(f.ir);
    const response = encodeError(irError("rate_limit", f.ir.message, { retryAfterSecs: 34 }));
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("34");
    expect(await response.json()).toEqual(f.encoded);
  });

  const table: [string, IrError, number, string][] = [
    ["bad credential", irError("authentication", "API key not valid."), 401, "UNAUTHENTICATED"],
    ["pool not allowed", irError("permission", "not allowed"), 403, "PERMISSION_DENIED"],
    ["unknown model", irError("not_found", "models/nope is not found"), 404, "NOT_FOUND"],
    ["body too large", irError("request_too_large", "Request payload size exceeds the limit."), 413, "INVALID_ARGUMENT"],
    ["rate limit", irError("rate_limit", "slow down"), 429, "RESOURCE_EXHAUSTED"],
    ["pool exhausted", irError("overloaded", "The model is overloaded.", { status: 529 }), 503, "UNAVAILABLE"],
    ["upstream timeout", irError("timeout", "Deadline expired"), 504, "DEADLINE_EXCEEDED"],
    ["malformed body", irError("invalid_request", "contents is not specified"), 400, "INVALID_ARGUMENT"],
    ["internal", irError("api_error", "boom"), 500, "INTERNAL"],
  ];
  for (const [name, error, status, rpc] of table) {
    test(`encodeError: ${name} -> ${status} ${rpc}`, async () => {
      const response = encodeError(error);
      expect(response.status).toBe(status);
      expect(await response.json()).toEqual({ error: { code: status, message: error.message, status: rpc } });
    });
  }

  test("budget exhausted: 429 RESOURCE_EXHAUSTED with error.type insufficient_quota", async () => {
    const response = encodeError(irError("insufficient_quota", "budget exhausted"));
    expect(response.status).toBe(429);
    expect(await response.json()).toEqual({ error: { code: 429, message: "budget exhausted", status: "RESOURCE_EXHAUSTED", type: "insufficient_quota" } });
  });

  test("the official SDK raises its ApiError with each status", async () => {
    const statusOf = async (error: IrError) => ((await rejection(sdk(() => encodeError(error)).client.models.generateContent({ model: "m", contents: "Hi" }))) as ApiError).status;
    expect(await statusOf(irError("authentication", "bad key"))).toBe(401);
    expect(await statusOf(irError("not_found", "no model"))).toBe(404);
    expect(await statusOf(irError("rate_limit", "slow", { retryAfterSecs: 1 }))).toBe(429);
    expect(await statusOf(irError("overloaded", "busy"))).toBe(503);
  });

  const rpc = (code: number, status: string, message: string, details: Json[] = []) => JSON.stringify({ error: { code, message, status, ...(details.length > 0 && { details }) } });
  const classes: [string, number, string, Headers, Partial<IrError>][] = [
    [
      "400 API_KEY_INVALID -> authentication, credential",
      400,
      rpc(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }]),
      new Headers(),
      { kind: "authentication", failure: "credential", code: "INVALID_ARGUMENT" },
    ],
    ["input over the window -> context_length", 400, rpc(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."), new Headers(), { kind: "invalid_request", failure: "context_length" }],
    ["free tier not in this country -> quota", 400, rpc(400, "FAILED_PRECONDITION", "Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio."), new Headers(), { kind: "insufficient_quota", failure: "quota" }],
    [
      "429 per-day quota -> quota",
      429,
      rpc(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.", [{ "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [{ quotaId: "GenerateRequestsPerDayPerProjectPerModel-FreeTier" }] }, { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "600.5s" }]),
      new Headers(),
      { kind: "insufficient_quota", failure: "quota", retryAfterSecs: 601 },
    ],
    ["429 with a retry-after header only", 429, rpc(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."), new Headers({ "retry-after": "12" }), { kind: "rate_limit", failure: "rate_limit", retryAfterSecs: 12 }],
    ["403 -> permission, credential", 403, rpc(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers."), new Headers(), { kind: "permission", failure: "credential" }],
    ["404 -> not_found, caller", 404, rpc(404, "NOT_FOUND", "models/gemini-9 is not found for API version v1beta"), new Headers(), { kind: "not_found", failure: "caller" }],
    ["500 INTERNAL -> transient", 500, rpc(500, "INTERNAL", "An internal error has occurred."), new Headers(), { kind: "api_error", failure: "transient" }],
    ["503 UNAVAILABLE -> overloaded, transient", 503, rpc(503, "UNAVAILABLE", "The model is overloaded. Please try again later."), new Headers(), { kind: "overloaded", failure: "transient" }],
    ["504 DEADLINE_EXCEEDED -> timeout, transient", 504, rpc(504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."), new Headers(), { kind: "timeout", failure: "transient" }],
    ["an error in a one-element array (no alt=sse)", 429, `[${rpc(429, "RESOURCE_EXHAUSTED", "Resource exhausted.")}]`, new Headers(), { kind: "rate_limit", message: "Resource exhausted.", code: "RESOURCE_EXHAUSTED" }],
    ["a body that is not JSON", 502, "<html>Bad Gateway</html>", new Headers(), { kind: "api_error", failure: "transient", message: "<html>Bad Gateway</html>" }],
  ];
  for (const [name, status, text, headers, expected] of classes) {
    test(`decodeError: ${name}`, () => {
      expect(decodeError(status, text, headers)).toMatchObject({ status, ...expected });
    });
  }
});

// ---- the adapter object ---------------------------------------------------------------------------------------

describe("adapter", () => {
  const request = (url: string, headers: Record<string, string> = {}) => new Request(url, { method: "POST", headers });

  test("client credential: x-goog-api-key, else the key query parameter", () => {
    const url = "http://gateway.test/v1beta/models/gemini-2.5-flash:generateContent";
    expect(gemini.clientCredential(request(url, { "x-goog-api-key": "k-a" }))).toBe("k-a");
    expect(gemini.clientCredential(request(`${url}?key=k-b`))).toBe("k-b");
    expect(gemini.clientCredential(request(`${url}?alt=sse&key=k-b`, { "x-goog-api-key": "k-a" }))).toBe("k-a");
    expect(gemini.clientCredential(request(url, { authorization: "Bearer tok" }))).toBeUndefined();
    expect(gemini.clientCredential(request(`${url}?key=`))).toBeUndefined();
    // A percent-encoded parameter name is still the key parameter.
    expect(gemini.clientCredential(request(`${url}?%6Bey=k-c`))).toBe("k-c");
  });

  test("a model name is one path segment, encoded as encodeURIComponent writes it (a direct route puts a caller's text there)", () => {
    expect(gemini.upstreamPath("models/gemini-2.5-flash", false)).toBe("/v1beta/models/gemini-2.5-flash:generateContent");
    expect(gemini.upstreamPath("a/b c?d#e%f:g", false)).toBe("/v1beta/models/a%2Fb%20c%3Fd%23e%25f%3Ag:generateContent");
    expect(gemini.upstreamPath("tuned-model_1.2!~*'()", true)).toBe("/v1beta/models/tuned-model_1.2!~*'():streamGenerateContent?alt=sse");
    // Every character of the Basic Multilingual Plane, alone and inside a name: the segment is encodeURIComponent's.
    for (let c = 0; c < 0x10000; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      const name = `m${String.fromCharCode(c)}1`;
      expect(gemini.upstreamPath(name, false)).toBe(`/v1beta/models/${encodeURIComponent(name)}:generateContent`);
    }
  });

  test("egress headers, paths, and a body that is never rewritten (the model is in the path)", () => {
    expect(gemini.name).toBe("gemini");
    expect(gemini.authHeaders("k-up")).toEqual({ "x-goog-api-key": "k-up" });
    expect(gemini.upstreamPath("gemini-2.5-flash", false)).toBe("/v1beta/models/gemini-2.5-flash:generateContent");
    expect(gemini.upstreamPath("gemini-2.5-flash", true)).toBe("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    const original = { contents: [], unknown_member: 1 };
    expect(gemini.rewriteModel(original, "gemini-x")).toEqual({ contents: [], unknown_member: 1 });
    expect(gemini.streamHeaders["content-type"]).toBe("text/event-stream; charset=utf-8");
  });

  test("usageFromResponse reads usageMetadata for metering", () => {
    expect(gemini.usageFromResponse(fixture<ResponseFixture>("tool-call-response").wire)).toEqual({ inputNoCache: 56, inputCacheRead: 64, output: 75, outputReasoning: 60 });
    expect(gemini.usageFromResponse({})).toBeUndefined();
  });

  test("the adapter's decoders default to the wall clock", async () => {
    const before = Math.floor(Date.now() / 1000);
    const decoded = gemini.decodeResponse(fixture<ResponseFixture>("plain-response").wire);
    expect(decoded.ok && decoded.value.created).toBeGreaterThanOrEqual(before);
    const parts = await readAll(streamOf([bytesOf(fixture<StreamFixture>("stream-text").wire)]).pipeThrough(parserTransform(gemini.createStreamParser())));
    expect(parts[0]?.type === "start" && parts[0].created).toBeGreaterThanOrEqual(before);
  });
});
