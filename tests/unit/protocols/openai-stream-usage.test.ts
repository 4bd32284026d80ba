// Same-protocol OpenAI streams asked for usage on the client's behalf: the body asks (other
// stream_options kept, a client that asked left alone), and the filter gives back exactly the stream the
// client would have had without asking, however the bytes are split; events that only look alike stay.
import { describe, expect, test } from "bun:test";
import type { IrRequest, IrStreamPart } from "../../../src/ir/index.ts";
import { openai } from "../../../src/protocols/openai/index.ts";
import type { ByteFilter } from "../../../src/protocols/types.ts";

const utf8 = new TextEncoder();
const text = new TextDecoder();

const request = (includeUsage: boolean): IrRequest => ({ model: "m", system: [], messages: [], tools: [], sampling: {}, stream: true, ...(includeUsage ? { includeUsage } : {}) });
const parts: IrStreamPart[] = [
  { type: "start", id: "c", model: "m", created: 1 },
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: 'say "usage":null, "choices":[] ✓' },
  { type: "text-end", id: "t" },
  { type: "tool-call-start", id: "k", toolCallId: "call_1", name: "f" },
  { type: "tool-call-delta", id: "k", argumentsDelta: '{"usage":null}' },
  { type: "usage", usage: { inputNoCache: 3, inputCacheRead: 0, inputCacheWrite: 0, output: 2, outputReasoning: 0 } },
  { type: "finish", finishReason: { unified: "tool_calls" } },
];

/** The gateway's own encoder writes OpenAI's wire form both ways (with and without include_usage). */
async function wire(includeUsage: boolean): Promise<Uint8Array> {
  const bytes = new ReadableStream<IrStreamPart>({
    start(controller) {
      parts.forEach((p) => controller.enqueue(p));
      controller.close();
    },
  }).pipeThrough(openai.createStreamEncoder(request(includeUsage), () => {}));
  return new Uint8Array(await new Response(bytes).arrayBuffer());
}

function through(filter: ByteFilter, chunks: Uint8Array[]): string {
  const out = chunks.map((c) => text.decode(filter.push(c), { stream: true }));
  return out.join("") + text.decode(filter.flush());
}

function asked(body: Record<string, unknown>): ByteFilter {
  const filter = openai.askForStreamUsage?.(body);
  if (!filter) throw new Error("expected the body to be asked for usage");
  return filter;
}

describe("asking an OpenAI upstream for stream usage", () => {
  test("the body asks; other stream_options are kept; a client that asked is left as it was", () => {
    const plain: Record<string, unknown> = { model: "m", stream: true };
    asked(plain);
    expect(plain.stream_options).toEqual({ include_usage: true });
    const other: Record<string, unknown> = { stream: true, stream_options: { include_obfuscation: false, include_usage: false } };
    asked(other);
    expect(other.stream_options).toEqual({ include_obfuscation: false, include_usage: true });
    const already = { stream: true, stream_options: { include_usage: true } };
    expect(openai.askForStreamUsage?.(already)).toBeUndefined();
    expect(already.stream_options).toEqual({ include_usage: true });
  });

  test("the filtered stream equals the unasked one byte for byte, split at every byte", async () => {
    const [withUsage, without] = await Promise.all([wire(true), wire(false)]);
    expect(text.decode(withUsage)).toContain('"choices":[],"usage":{');
    const expected = text.decode(without);
    expect(through(asked({}), [withUsage])).toBe(expected);
    for (let cut = 1; cut < withUsage.length; cut++) {
      expect(through(asked({}), [withUsage.subarray(0, cut), withUsage.subarray(cut)])).toBe(expected);
    }
    // One byte at a time.
    expect(through(asked({}), [...withUsage].map((b) => Uint8Array.of(b)))).toBe(expected);
  });

  test("spaced JSON is cut too; an empty-choices chunk without usage (Azure's prompt_filter_results) stays", () => {
    const azure = 'data: {"choices": [], "prompt_filter_results": [{"prompt_index": 0}]}\n\n';
    const chunk = 'data: {"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}}], "usage": null}\n\n';
    const usage = 'data: {"id": "c", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}\n\n';
    const out = through(asked({}), [utf8.encode(azure + chunk + usage + "data: [DONE]\n\n")]);
    expect(out).toBe(azure + 'data: {"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n' + "data: [DONE]\n\n");
  });

  test("an event whose end has not come is relayed as it is past 64 KiB, not held", () => {
    const filter = asked({});
    const big = utf8.encode(`data: {"x":"${"a".repeat(70_000)}"}`);
    expect(filter.push(big).byteLength).toBe(big.byteLength);
  });

  test("CRLF and CR framing (SSE's other line endings): the same cut, split at every byte", async () => {
    const [withUsage, without] = await Promise.all([wire(true), wire(false)]);
    for (const ending of ["\r\n", "\r"]) {
      const framed = utf8.encode(text.decode(withUsage).replaceAll("\n", ending));
      const expected = text.decode(without).replaceAll("\n", ending);
      // Before: no event end was found, so the whole stream was one event with the usage in it, and cut.
      expect(through(asked({}), [framed])).toBe(expected);
      for (let cut = 1; cut < framed.length; cut++) expect(through(asked({}), [framed.subarray(0, cut), framed.subarray(cut)])).toBe(expected);
    }
  });
});
