// A same-protocol stream the upstream broke off after it began: each adapter's `streamBreak` appends
// its protocol's own in-stream error to the upstream's bytes, and the protocol's decoder (what a client
// of that protocol reads) sees the error as the stream's end, after the text that came before.
import { describe, expect, test } from "bun:test";
import { irError, type IrRequest, type IrStreamPart } from "../../../src/ir/index.ts";
import { adapterFor } from "../../../src/protocols/registry.ts";
import type { ProtocolAdapter, WireProtocol } from "../../../src/protocols/types.ts";
import { readAll, streamOf } from "../../support/streams.ts";
import { parserTransform } from "../../../src/transport/push-parser.ts";
import { wireBytes } from "../../../src/protocols/stream-writer.ts";

const request: IrRequest = { model: "m", system: [], messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], tools: [], sampling: {}, stream: true };
const BEGUN: IrStreamPart[] = [
  { type: "start", id: "resp_1", model: "m", created: 1_763_800_000 },
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: "half an ans" },
];
const BROKE = irError("api_error", "the upstream stream broke off", { status: 502, failure: "transient" });

/** What an upstream of this protocol had sent before the cut: the adapter's own writer, as chunks. */
function begunBytes(adapter: ProtocolAdapter): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  const writer = adapter.createStreamWriter(request, () => {}, (chunk) => chunks.push(wireBytes(chunk)));
  for (const part of BEGUN) writer.accept(part);
  return chunks;
}

const gemini = adapterFor("gemini")!;
const targets: [string, ProtocolAdapter][] = [
  ...(["openai", "anthropic", "gemini", "bedrock", "cohere", "responses"] as WireProtocol[]).map((p) => [p, adapterFor(p)!] as [string, ProtocolAdapter]),
  ["gemini (JSON array)", gemini.jsonArrayStream!],
];

describe.each(targets)("%s streamBreak", (_name, adapter) => {
  test("the decoder reads the text, then the in-stream error as the end", async () => {
    const chunks = begunBytes(adapter);
    const ending = adapter.streamBreak?.(BROKE, chunks.at(-1)!);
    expect(ending).toBeInstanceOf(Uint8Array);
    const parts = await readAll(streamOf([...chunks, ending!]).pipeThrough(parserTransform(adapter.createStreamParser())));
    const text = parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("");
    expect(text).toBe("half an ans");
    const last = parts.at(-1)!;
    expect(last.type).toBe("error");
    expect(parts.filter((p) => p.type === "error")).toHaveLength(1);
    expect(parts.some((p) => p.type === "finish")).toBe(false);
  });
});

describe("a cut inside an event", () => {
  test.each(targets.filter(([name]) => name !== "bedrock"))("%s: nothing is appended (the connection resets instead)", (_name, adapter) => {
    const chunks = begunBytes(adapter);
    const whole = chunks.at(-1)!;
    expect(adapter.streamBreak?.(BROKE, whole.slice(0, whole.length - 3))).toBeUndefined();
  });

  test("Responses numbers its error event after the last event sent", () => {
    const responses = adapterFor("responses")!;
    const chunks = begunBytes(responses);
    const sent = chunks.map((c) => new TextDecoder().decode(c)).join("");
    const lastSequence = Math.max(...[...sent.matchAll(/"sequence_number":(\d+)/g)].map((m) => Number(m[1])));
    const ending = new TextDecoder().decode(responses.streamBreak!(BROKE, chunks.at(-1)!));
    expect(ending).toStartWith("event: error\n");
    expect(JSON.parse(ending.split("data: ")[1]!)).toMatchObject({ type: "error", sequence_number: lastSequence + 1, message: BROKE.message });
  });
});
