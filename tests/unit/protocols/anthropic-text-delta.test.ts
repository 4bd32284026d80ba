// The Anthropic stream decoder reads a text delta written in Anthropic's own layout by slicing rather than
// JSON.parse (issue 15). Whatever the event holds, what it reads must be what JSON.parse and the schema
// give, and anything it cannot read that way (escapes, another layout, text that is not JSON) must go the
// general way, which parses it or calls it malformed.
import { describe, expect, test } from "bun:test";
import type { IrStreamPart } from "../../../src/ir/index.ts";
import { createStreamParser, plainTextDelta } from "../../../src/protocols/anthropic/stream.ts";
import { TRICKY_TEXTS } from "../../support/translated-golden.ts";

const wire = (text: string, index = 0) => JSON.stringify({ type: "content_block_delta", index, delta: { type: "text_delta", text } });
const HEAD = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"';

describe("plainTextDelta", () => {
  test("reads Anthropic's layout with plain text as JSON.parse does", () => {
    for (const [text, index] of [["Hello", 0], ["", 3], ["é 中文 😀 \u2028 \u007f </script>", 12], ["{not json} ] , :", 999999999]] as const) {
      const data = wire(text, index);
      const parsed = JSON.parse(data) as { index: number; delta: unknown };
      expect(plainTextDelta(data)).toEqual({ index: parsed.index, text: (parsed.delta as { text: string }).text });
    }
  });

  test("every text JSON.stringify escapes goes the general way, or is read as JSON.parse reads it", () => {
    for (const text of [...TRICKY_TEXTS, 'a"b', "a\\b", "\n", "\u0000", "tab\there"]) {
      const data = wire(text);
      const read = plainTextDelta(data);
      if (read !== undefined) expect(read.text).toBe((JSON.parse(data) as { delta: { text: string } }).delta.text);
      if (JSON.stringify(text) !== `"${text}"`) expect(read).toBeUndefined();
    }
  });

  test("what is not the plain layout, or not JSON, is left to the general way", () => {
    const refused = [
      `${HEAD.slice(0, -1)}}}`, // the text's opening quote is the only one: `..."text":"}}`
      `${HEAD}a","extra":"b"}}`, // a raw quote ends the text early: other members follow
      `${HEAD}raw \u0001 control"}}`, // not JSON at all
      `${HEAD}tab\there"}}`,
      HEAD.replace('"index":0', '"index":01') + 'x"}}', // a leading zero: not JSON
      HEAD.replace('"index":0', '"index":-1') + 'x"}}',
      HEAD.replace('"index":0', '"index":1.5') + 'x"}}',
      HEAD.replace('"index":0', '"index":12345678901') + 'x"}}', // past what the pattern takes
      HEAD.replace('"index":0', '"index":') + 'x"}}',
      '{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"},"index":0}', // another member order
      '{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}', // spaces
      '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"x"}}',
      `${HEAD}x"}} `,
    ];
    for (const data of refused) expect(plainTextDelta(data)).toBeUndefined();
  });
});

/** The parts a stream of these SSE events decodes to. */
function decode(events: readonly [string, string][]): IrStreamPart[] {
  const parser = createStreamParser(() => 1_700_000_000_000);
  const text = events.map(([event, data]) => `event: ${event}\ndata: ${data}\n\n`).join("");
  return [...parser.push(new TextEncoder().encode(text)), ...parser.end()];
}

const START: [string, string][] = [
  ["message_start", JSON.stringify({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", content: [], model: "claude-x", usage: { input_tokens: 5, output_tokens: 1 } } })],
  ["content_block_start", JSON.stringify({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } })],
];

describe("the decoder with text deltas read either way", () => {
  test("plain and escaped deltas decode to the text the upstream sent, in order", () => {
    const texts = ["plain ", ...TRICKY_TEXTS, " and plain again"];
    const parts = decode([...START, ...texts.map((t): [string, string] => ["content_block_delta", wire(t)])]);
    expect(parts.filter((p) => p.type === "text-delta")).toEqual(texts.filter((t) => t !== "").map((delta) => ({ type: "text-delta", id: "block-0", delta })));
  });

  test("a delta event that is not JSON still fails the stream as malformed", () => {
    const parts = decode([...START, ["content_block_delta", `${HEAD.slice(0, -1)}}}`]]);
    expect(parts.at(-1)).toMatchObject({ type: "error", error: { message: "upstream sent a malformed content_block_delta event" } });
  });

  test("a delta for a block that never started is dropped either way", () => {
    const parts = decode([...START, ["content_block_delta", wire("lost", 7)], ["content_block_delta", wire('lost "too"', 7)]]);
    expect(parts.some((p) => p.type === "text-delta")).toBe(false);
  });
});
