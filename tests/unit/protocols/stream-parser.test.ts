// The push decoders (createStreamParser) every egress adapter has: the data plane pushes each piece of an
// upstream's body through one as it arrives, and a socket cuts a body wherever it likes. So the same
// bytes must give the same IR parts however they are cut, a stream cut short must end in one error (or
// its held finish), never a throw, and one SSE event may not grow past MAX_SSE_EVENT_BYTES.
import { describe, expect, test } from "bun:test";
import type { IrRequest, IrStreamPart } from "../../../src/ir/index.ts";
import { createStreamParser as anthropicParser } from "../../../src/protocols/anthropic/stream.ts";
import { createStreamParser as bedrockParser } from "../../../src/protocols/bedrock/stream.ts";
import { createStreamParser as cohereParser } from "../../../src/protocols/cohere/stream.ts";
import { createArrayStreamParser, createStreamParser as geminiParser } from "../../../src/protocols/gemini/stream.ts";
import { adapterFor } from "../../../src/protocols/registry.ts";
import type { ProtocolAdapter, StreamParser, WireProtocol } from "../../../src/protocols/types.ts";
import { encodeEventStreamMessage, MAX_MESSAGE_BYTES } from "../../../src/transport/eventstream.ts";
import { MAX_SSE_EVENT_BYTES, SseEventTooLarge } from "../../../src/transport/sse.ts";
import { pieces } from "../../support/streams.ts";
import { wireBytes } from "../../../src/protocols/stream-writer.ts";

const adapter = (name: WireProtocol) => adapterFor(name)!;
const clock = () => 1_763_800_000_000;
const newId = () => "bedrock-fixed";

/** Each egress form: the adapter whose writer makes its wire bytes, and a parser with a fixed clock (start parts compare equal). */
const FORMS: [string, ProtocolAdapter, () => StreamParser][] = [
  ["openai", adapter("openai"), () => adapter("openai").createStreamParser()],
  ["anthropic", adapter("anthropic"), () => anthropicParser(clock)],
  ["gemini", adapter("gemini"), () => geminiParser(clock)],
  ["gemini (JSON array)", adapter("gemini").jsonArrayStream!, () => createArrayStreamParser(clock)],
  ["bedrock", adapter("bedrock"), () => bedrockParser(clock, newId)],
  ["cohere", adapter("cohere"), () => cohereParser(clock)],
  ["responses", adapter("responses"), () => adapter("responses").createStreamParser()],
];

const request: IrRequest = {
  model: "m",
  system: [],
  messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
  tools: [{ name: "lookup", description: "d", parameters: { type: "object", properties: { q: { type: "string" } } } }],
  sampling: {},
  stream: true,
  includeUsage: true,
};
// Multi-byte characters, so a cut can fall inside one (the UTF-8 decoder must carry it over).
const TEXT = ["Grüße, ", "日本語 ", "🙂 and a \"quoted\" {brace}\n", "done."];
const ANSWER: IrStreamPart[] = [
  { type: "start", id: "resp_1", model: "m", created: 1_763_800_000 },
  { type: "text-start", id: "t" },
  ...TEXT.map((delta): IrStreamPart => ({ type: "text-delta", id: "t", delta })),
  { type: "text-end", id: "t" },
  { type: "tool-call-start", id: "c", toolCallId: "call_1", name: "lookup" },
  { type: "tool-call-delta", id: "c", argumentsDelta: '{"q":"ünï' },
  { type: "tool-call-delta", id: "c", argumentsDelta: 'cødé"}' },
  { type: "tool-call-end", id: "c" },
  { type: "usage", usage: { inputNoCache: 12, output: 34 } },
  { type: "finish", finishReason: { unified: "tool_calls" } },
];

function wireOf(writerOf: ProtocolAdapter): Uint8Array {
  const chunks: Uint8Array[] = [];
  const writer = writerOf.createStreamWriter(request, () => {}, (chunk) => chunks.push(wireBytes(chunk)));
  for (const part of ANSWER) writer.accept(part);
  writer.end();
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) (out.set(chunk, at), (at += chunk.length));
  return out;
}

function parse(parser: StreamParser, chunks: readonly Uint8Array[]): IrStreamPart[] {
  const out: IrStreamPart[] = [];
  for (const chunk of chunks) out.push(...parser.push(chunk));
  out.push(...parser.end());
  return out;
}

describe.each(FORMS)("%s push decoder", (_name, writerOf, parserOf) => {
  const bytes = wireOf(writerOf);
  const whole = parse(parserOf(), [bytes]);

  test("reads the whole answer: the text, the tool call, the usage, one finish at the end", () => {
    expect(whole.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")).toBe(TEXT.join(""));
    expect(whole.flatMap((p) => (p.type === "tool-call-delta" ? [p.argumentsDelta] : [])).join("")).toBe('{"q":"ünïcødé"}');
    expect(whole.some((p) => p.type === "usage")).toBe(true);
    expect(whole.at(-1)!.type).toBe("finish");
    expect(whole.filter((p) => p.type === "finish" || p.type === "error")).toHaveLength(1);
  });

  test("the same bytes cut at every byte boundary give the same parts", () => {
    for (let cut = 1; cut < bytes.length; cut++) {
      const parts = parse(parserOf(), [bytes.subarray(0, cut), bytes.subarray(cut)]);
      if (!Bun.deepEquals(parts, whole)) expect({ cut, parts }).toEqual({ cut, parts: whole });
    }
  });

  test("byte by byte, and in pieces of 7, give the same parts", () => {
    expect(parse(parserOf(), pieces(bytes, 1))).toEqual(whole);
    expect(parse(parserOf(), pieces(bytes, 7))).toEqual(whole);
  });

  test("a stream cut at any byte ends in at most one finish or error, last, and never throws", () => {
    for (let cut = 0; cut < bytes.length; cut++) {
      const parts = parse(parserOf(), [bytes.subarray(0, cut)]);
      const ends = parts.filter((p) => p.type === "finish" || p.type === "error");
      expect(ends.length).toBeLessThanOrEqual(1);
      if (ends.length === 1) expect(parts.at(-1)).toBe(ends[0]!);
    }
  });

  test("nothing is made after the stream's end", () => {
    const parser = parserOf();
    parser.push(bytes);
    parser.end();
    expect(parser.push(bytes)).toEqual([]);
  });
});

describe("one upstream event is capped", () => {
  const MIB = 1 << 20;
  const sse = FORMS.filter(([name]) => !name.startsWith("bedrock") && name !== "gemini (JSON array)");

  test.each(sse)("%s: an SSE event past MAX_SSE_EVENT_BYTES throws SseEventTooLarge, and so does every later push", (_name, _writer, parserOf) => {
    const parser = parserOf();
    const piece = new Uint8Array(MIB).fill(0x61);
    parser.push(new TextEncoder().encode('data: {"a":"'));
    let thrown: unknown;
    try {
      for (let i = 0; i <= MAX_SSE_EVENT_BYTES / MIB; i++) parser.push(piece);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(SseEventTooLarge);
    expect((thrown as Error).message).toBe("the upstream sent a stream event larger than 16777216 bytes");
    expect(() => parser.push(new TextEncoder().encode('"}\n\n'))).toThrow(SseEventTooLarge);
    expect(() => parser.end()).toThrow(SseEventTooLarge);
  });

  test("bedrock: a frame whose prelude claims more than MAX_MESSAGE_BYTES is one error part, then nothing", () => {
    const frame = encodeEventStreamMessage({ ":message-type": "event", ":event-type": "messageStart" }, new TextEncoder().encode('{"role":"assistant"}'));
    const view = new DataView(frame.buffer, frame.byteOffset);
    view.setUint32(0, MAX_MESSAGE_BYTES + 1);
    view.setUint32(8, Bun.hash.crc32(frame.subarray(0, 8)));
    const parser = bedrockParser(clock, newId);
    const parts = parser.push(frame);
    expect(parts).toHaveLength(1);
    expect(parts[0]!.type).toBe("error");
    expect(parts[0]!.type === "error" && parts[0]!.error.message).toContain("exceeds the 16777216-byte limit");
    expect(parser.push(frame)).toEqual([]);
    expect(parser.end()).toEqual([]);
  });
});
