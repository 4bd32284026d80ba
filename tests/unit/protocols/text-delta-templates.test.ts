// The stream writers write a text delta's event as its fixed members, serialised once, around the text's
// own JSON (issue 15). Whatever the text holds, each event must be exactly what JSON.stringify writes for
// the whole event: quotes, backslashes, control characters, U+2028/2029, lone surrogates, astral
// characters, an empty-looking space, text that looks like JSON.
import { describe, expect, test } from "bun:test";
import type { IrRequest, IrStreamPart } from "../../../src/ir/index.ts";
import * as anthropic from "../../../src/protocols/anthropic/stream.ts";
import * as gemini from "../../../src/protocols/gemini/stream.ts";
import * as openai from "../../../src/protocols/openai/stream.ts";
import * as responses from "../../../src/protocols/responses/stream.ts";
import type { StreamWriter, WireChunk } from "../../../src/protocols/types.ts";
import { TRICKY_TEXTS } from "../../support/translated-golden.ts";

const request: IrRequest = { model: "m", system: [], messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], tools: [], sampling: {}, stream: true, includeUsage: true };
// The head's own strings are tricky too: they are serialised into the fixed members.
const START = { type: "start", id: 'resp_q"\u2028\\id', model: "mo\u0001del 😀", created: 1_700_000_000 } as const;

/** The events a writer gives for one text block of every tricky text, as text. */
function written(create: (request: IrRequest, warn: (w: string) => void, emit: (chunk: WireChunk) => void) => StreamWriter): string {
  let out = "";
  const writer = create(request, () => {}, (chunk) => (out += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk)));
  const parts: IrStreamPart[] = [START, { type: "text-start", id: "t" }, ...TRICKY_TEXTS.map((delta) => ({ type: "text-delta" as const, id: "t", delta })), { type: "text-end", id: "t" }, { type: "finish", finishReason: { unified: "stop" } }];
  for (const part of parts) writer.accept(part);
  writer.end();
  return out;
}

/** The JSON of each SSE event's data line (Gemini's events end with CRLF pairs). */
const dataLines = (text: string) => text.split(/\r?\n/).filter((line) => line.startsWith("data: ")).map((line) => line.slice(6));

describe("a text delta's event is what JSON.stringify writes for it, whatever the text", () => {
  test("OpenAI: chat.completion.chunk with the delta's content", () => {
    const deltas = dataLines(written(openai.createStreamWriter)).filter((d) => d.includes('"delta":{"content":') && !d.includes('"role"'));
    const head = { id: START.id, object: "chat.completion.chunk", created: START.created, model: START.model };
    expect(deltas).toEqual(TRICKY_TEXTS.map((content) => JSON.stringify({ ...head, choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }], usage: null })));
  });

  test("Anthropic: content_block_delta with a text_delta", () => {
    const deltas = dataLines(written(anthropic.createStreamWriter)).filter((d) => d.startsWith('{"type":"content_block_delta"'));
    expect(deltas).toEqual(TRICKY_TEXTS.map((text) => JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })));
  });

  test("Gemini: a chunk with one text part, as SSE and as a JSON array's elements", () => {
    const expected = TRICKY_TEXTS.map((text) => JSON.stringify({ candidates: [{ content: { parts: [{ text }], role: "model" }, index: 0 }], modelVersion: START.model, responseId: START.id }));
    const sse = dataLines(written(gemini.createStreamWriter)).slice(0, TRICKY_TEXTS.length);
    expect(sse).toEqual(expected);
    const array = JSON.parse(written(gemini.createArrayStreamWriter)) as unknown[];
    expect(array.slice(0, TRICKY_TEXTS.length).map((chunk) => JSON.stringify(chunk))).toEqual(expected);
  });

  test("Responses: response.output_text.delta, its sequence numbers counting on", () => {
    const events = dataLines(written(responses.createStreamWriter));
    const first = events.findIndex((d) => d.startsWith('{"type":"response.output_text.delta"'));
    const deltas = events.slice(first, first + TRICKY_TEXTS.length);
    const itemId = `msg_${START.id.replace(/^resp_/, "")}_0`;
    expect(deltas).toEqual(TRICKY_TEXTS.map((delta, i) => JSON.stringify({ type: "response.output_text.delta", item_id: itemId, output_index: 0, content_index: 0, delta, logprobs: [], sequence_number: first + i })));
  });

  test("Responses: the item's and the text's added and done events and the final response's output, each the JSON of its object", () => {
    const events = dataLines(written(responses.createStreamWriter));
    const text = TRICKY_TEXTS.join("");
    const itemId = `msg_${START.id.replace(/^resp_/, "")}_0`;
    const part = { type: "output_text", text, annotations: [] };
    const item = { id: itemId, type: "message", status: "completed", role: "assistant", content: [part] };
    const at = (type: string) => events.findIndex((d) => d.startsWith(`{"type":"${type}"`));
    const added = at("response.output_item.added");
    expect(events.slice(added, added + 2)).toEqual([
      JSON.stringify({ type: "response.output_item.added", output_index: 0, item: { ...item, status: "in_progress", content: [] }, sequence_number: added }),
      JSON.stringify({ type: "response.content_part.added", item_id: itemId, output_index: 0, content_index: 0, part: { ...part, text: "" }, sequence_number: added + 1 }),
    ]);
    const done = at("response.output_text.done");
    expect(events.slice(done, done + 3)).toEqual([
      JSON.stringify({ type: "response.output_text.done", item_id: itemId, output_index: 0, content_index: 0, text, logprobs: [], sequence_number: done }),
      JSON.stringify({ type: "response.content_part.done", item_id: itemId, output_index: 0, content_index: 0, part, sequence_number: done + 1 }),
      JSON.stringify({ type: "response.output_item.done", output_index: 0, item, sequence_number: done + 2 }),
    ]);
    const completed = JSON.parse(events[at("response.completed")]!) as { response: { output: unknown[] } };
    expect(JSON.stringify(completed.response.output)).toBe(JSON.stringify([item]));
    expect(events[at("response.completed")]).toContain(`"output":${JSON.stringify([item])},`);
  });
});

describe("the fixed text around each delta keeps the SSE framing", () => {
  // Each event is `event: <its type>\ndata: <one line of JSON>` (OpenAI: the data line alone), events apart by
  // one blank line: a delta's event whose framing sits in its fixed text must be framed as every other.
  const framed = (text: string, named: boolean) => {
    expect(text.endsWith("\n\n")).toBe(true);
    for (const event of text.slice(0, -2).split("\n\n")) {
      const lines = event.split("\n");
      const data = lines.at(-1)!;
      expect(data.startsWith("data: ")).toBe(true);
      const json = data.slice(6);
      if (json === "[DONE]") continue;
      const parsed = JSON.parse(json) as { type?: string };
      expect(lines).toEqual(named ? [`event: ${parsed.type}`, data] : [data]);
    }
  };
  test("OpenAI", () => framed(written(openai.createStreamWriter), false));
  test("Anthropic", () => framed(written(anthropic.createStreamWriter), true));
  test("Responses", () => framed(written(responses.createStreamWriter), true));
});
