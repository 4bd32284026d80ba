import { expect, test } from "bun:test";
import { isWholeObject, streamUsageCut, usageMember } from "../../src/dataplane/usage-cut.ts";
import { adapterFor } from "../../src/protocols/registry.ts";

test("usageMember cuts out the top-level usage object, and copes with what could fool it", () => {
  const openai = JSON.stringify({ id: "x", choices: [{ message: { content: 'say "usage" {not json}' } }], usage: { prompt_tokens: 5, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 2 } } });
  expect(usageMember(bytes(openai))).toEqual({ usage: { prompt_tokens: 5, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 2 } } });
  const braces = JSON.stringify({ content: [{ text: "}}{{" }], usage: { input_tokens: 3, note: "a } and a \" inside" } });
  expect(usageMember(bytes(braces))).toEqual({ usage: { input_tokens: 3, note: 'a } and a " inside' } });
  // Only an escaped "usage" in content, no real usage member: falls back to the whole body.
  const noUsage = JSON.stringify({ content: 'the "usage": {"x": 1} text' });
  expect(usageMember(bytes(noUsage))).toEqual(JSON.parse(noUsage));
  expect(usageMember(bytes("not json at all"))).toBeUndefined();
  // "usage" as a value, not a key: the cut is not taken.
  const asValue = JSON.stringify({ kind: "usage", extra: { a: 1 } });
  expect(usageMember(bytes(asValue))).toEqual(JSON.parse(asValue));
  // Pretty-printed bodies and non-ASCII text cut the same way.
  const pretty = JSON.stringify({ content: "héllo ✓", usage: { input_tokens: 1, note: "ünï ✓" } }, null, 2);
  expect(usageMember(bytes(pretty))).toEqual({ usage: { input_tokens: 1, note: "ünï ✓" } });
});

test("isWholeObject tells one whole JSON object from truncated, HTML or binary bytes in one pass", () => {
  for (const whole of ['{"a":1}', ' \n{"a":{"b":[1,{"c":"}"}]},"usage":{"x":1}}\n', '{"s":"a \\" } quote"}', "{}"]) expect(isWholeObject(bytes(whole))).toBe(true);
  const cut = ['{"a":1', '{"a":{"b":1}', '{"a":"}', "[1,2]", "<html>{}</html>", '{"a":1}{"b":2}', '{"a":1}}', "", "   ", "{"];
  for (const text of cut) expect(isWholeObject(bytes(text))).toBe(false);
  expect(isWholeObject(Uint8Array.from({ length: 4096 }, (_, i) => (i * 37 + 128) & 0xff))).toBe(false);
});

test("isWholeObject: every JSON object is whole and none of its proper prefixes is, escapes at any distance included", () => {
  const pieces = ["a", "\\", '"', "\\\\", '\\"', "}", "{", "]", " ", "é", "\n"];
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (let n = 0; n < 200; n++) {
    const text = Array.from({ length: Math.floor(random() * 120) }, () => pieces[Math.floor(random() * pieces.length)]).join("");
    const bytes = new TextEncoder().encode(JSON.stringify({ k: text, list: [text, { deep: text }], usage: { n } }));
    expect(isWholeObject(bytes)).toBe(true);
    for (let cut = 1; cut < bytes.length; cut += 3) expect(isWholeObject(bytes.subarray(0, cut))).toBe(false);
  }
});

test("streamUsageCut reads each protocol's stream usage from its first and last events only", () => {
  const usage = (protocol: Parameters<typeof adapterFor>[0], head: string, tail = head) => streamUsageCut([Buffer.from(head)], [Buffer.from(tail)], adapterFor(protocol)!.usageFromResponse);
  // Anthropic: input in message_start, output (running total) in message_delta; a text that says "usage" is not read.
  const anthropic =
    'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":52,"cache_read_input_tokens":4,"output_tokens":1}}}\n\n' +
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a \\"usage\\": {\\"output_tokens\\": 999}"}}\n\n' +
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":61}}\n\n';
  expect(usage("anthropic", anthropic)).toMatchObject({ inputNoCache: 52, inputCacheRead: 4, output: 61 });
  // The same stream kept as a head and a tail that starts mid-event.
  expect(usage("anthropic", anthropic.slice(0, 150), anthropic.slice(-120))).toMatchObject({ inputNoCache: 52, output: 61 });
  // OpenAI: "usage":null in every chunk, the object in the last.
  const openai = 'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\ndata: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}\n\ndata: [DONE]\n\n';
  expect(usage("openai", openai)).toMatchObject({ inputNoCache: 5, output: 7 });
  // Gemini: a running total in each chunk; the last one is whole.
  const gemini = 'data: {"candidates":[],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":1}}\r\n\r\ndata: {"candidates":[],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":30,"totalTokenCount":39}}\r\n\r\n';
  expect(usage("gemini", gemini)).toMatchObject({ inputNoCache: 9, output: 30 });
  // A tool call's arguments may hold a `usage` member of their own: Gemini's usage is still its usageMetadata.
  const geminiTool = 'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"log","args":{"usage":{"cpu":3}}}}]}}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":4}}\r\n\r\n';
  expect(usage("gemini", geminiTool)).toMatchObject({ inputNoCache: 9, output: 4 });
  // Multi-byte text around the usage, and a usage member holding some: the cut is on bytes, decoded once cut.
  const wide = 'data: {"choices":[{"delta":{"content":"héllo ✓ 😀 ünï"}}],"usage":null}\n\ndata: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"note":"✓ } \\" {"}}\n\n';
  expect(usage("openai", wide)).toMatchObject({ inputNoCache: 5, output: 7 });
  // Bedrock's binary event-stream frames (length prefixes, CRCs, binary headers) around its JSON payloads.
  const frame = (json: string) => Buffer.concat([Buffer.from([0, 0, 0, 99, 0x22, 0x7b, 0x5c, 0xff]), Buffer.from(json), Buffer.from([0xde, 0xad, 0x7b, 0x22])]);
  const bedrock = Buffer.concat([frame('{"contentBlockIndex":0,"delta":{"text":"é usage"}}'), frame('{"metrics":{"latencyMs":9},"usage":{"inputTokens":11,"outputTokens":22,"totalTokens":33}}')]);
  expect(streamUsageCut([bedrock], [bedrock], adapterFor("bedrock")!.usageFromResponse)).toMatchObject({ inputNoCache: 11, output: 22 });
  // Nothing reported: undefined (the caller decodes the stream to estimate).
  expect(usage("openai", 'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n')).toBeUndefined();
});

function bytes(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

test("streamUsageCut over pieces as they came gives what it gives over the joined bytes, wherever the pieces are cut", async () => {
  const { STREAMS } = await import("../../bench/upstream.ts");
  const joinedOf = (pieces: Uint8Array[]) => Buffer.concat(pieces);
  const anthropicTricky =
    'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":52,"output_tokens":1}}}\n\n' +
    'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"type":"text_delta","text":"\\"usage\\": {\\"output_tokens\\": 9}"}}\n\n' +
    'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":61}}\n\n';
  const openaiNulls = 'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n'.repeat(5) + 'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}\n\ndata: [DONE]\n\n';
  // A usage object holding one of its own: a head cut inside the outer must not be read as the inner.
  const nested =
    'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":52,"note":{"usage":{"input_tokens":3,"output_tokens":4}},"output_tokens":1}}}\n\n' +
    'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":61}}\n\n';
  const geminiTotals = [1, 2, 3, 30].map((n) => `data: {"candidates":[],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":${n}}}\r\n\r\n`).join("");
  const cases: [Parameters<typeof adapterFor>[0], Uint8Array][] = [
    ["openai", STREAMS.openai.whole],
    ["anthropic", STREAMS.anthropic.whole],
    ["responses", STREAMS.responses.whole],
    ["gemini", STREAMS.geminiSse.whole],
    ["bedrock", STREAMS.bedrock.whole],
    ["cohere", STREAMS.cohere.whole],
    ["anthropic", Buffer.from(anthropicTricky)],
    ["openai", Buffer.from(openaiNulls)],
    ["gemini", Buffer.from(geminiTotals)],
    ["anthropic", Buffer.from(nested)],
  ];
  let seed = 7;
  const random = (below: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % below);
  for (const [protocol, whole] of cases) {
    const read = adapterFor(protocol)!.usageFromResponse;
    const expected = streamUsageCut([whole], [whole], read);
    expect(expected).toBeDefined();
    for (let round = 0; round < 200; round++) {
      // Cut anywhere, including one byte from either end and inside the keys and objects themselves.
      const cuts = [...new Set(Array.from({ length: 1 + random(4) }, () => 1 + random(whole.length - 1)))].sort((a, b) => a - b);
      const pieces = [0, ...cuts].map((from, i) => whole.subarray(from, cuts[i] ?? whole.length));
      expect(joinedOf(pieces)).toEqual(Buffer.from(whole));
      expect(streamUsageCut(pieces, pieces, read)).toEqual(expected!);
      // A head and a tail kept apart, as the relay keeps a long stream's edges.
      const split = 1 + random(pieces.length);
      if (split < pieces.length) expect(streamUsageCut(pieces.slice(0, split), pieces.slice(split), read)).toEqual(streamUsageCut([joinedOf(pieces.slice(0, split))], [joinedOf(pieces.slice(split))], read)!);
    }
  }
});

test("isWholeObject agrees with JSON.parse on what is one JSON object, for random texts of JSON's tokens", () => {
  const parsesAsObject = (text: string) => {
    try {
      const value: unknown = JSON.parse(text);
      return typeof value === "object" && value !== null && !Array.isArray(value);
    } catch {
      return false;
    }
  };
  // What an OpenAI-compatible server may write instead of JSON, each refused.
  for (const text of ["{'a': 1}", '{"a": NaN}', '{"a": 1,}', '{"a" 1}', '{"a": [1, 2,]}', '{"a": tru}', '{"a": 01}', '{"a": 1.}', '{"a": -}', '{"a": 1e}', '{"a": .5}', '{"a": 1}}', '{"a": [}']) {
    expect([text, isWholeObject(bytes(text))]).toEqual([text, false]);
  }
  const tokens = ["{", "}", "[", "]", ":", ",", '"k"', '"v w"', "1", "-2.5e+3", "0", "true", "false", "null", " ", "\n", "x", "'", "01", "1.", "-"];
  let seed = 5;
  const random = (below: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % below);
  let objects = 0;
  for (let n = 0; n < 30_000; n++) {
    let text = "{";
    for (let k = random(14); k > 0; k--) text += tokens[random(tokens.length)];
    if (random(2) === 0) text += "}";
    const expected = parsesAsObject(text);
    if (expected) objects++;
    if (isWholeObject(bytes(text)) !== expected) throw new Error(`isWholeObject(${JSON.stringify(text)}) should be ${expected}`);
  }
  // The random texts hit both answers, not only refusals.
  expect(objects).toBeGreaterThan(100);
});
