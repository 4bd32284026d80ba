// The writers' text deltas skip JSON.stringify where nothing needs escaping: the literal must be what it writes.
import { expect, test } from "bun:test";
import { jsonString } from "../../../src/protocols/json-text.ts";
import { TRICKY_TEXTS } from "../../support/translated-golden.ts";

test("jsonString writes every string as JSON.stringify does: quotes, backslashes, controls, DEL, U+2028/2029, lone and paired surrogates", () => {
  for (const text of [...TRICKY_TEXTS, "", "plain words", "\u007f", "\u2028", "\ud83d\ude00", "\ude00\ud83d", "a\ud800", "\u00e9\u4e2d"]) expect(jsonString(text)).toBe(JSON.stringify(text));
  // Random strings drawn from every range that matters, 20 000 of them.
  const ranges = [[0x00, 0x1f], [0x20, 0x7e], [0x7f, 0xff], [0x2028, 0x2029], [0xd800, 0xdbff], [0xdc00, 0xdfff], [0x4e00, 0x4e10]] as const;
  let seed = 11;
  const random = (below: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % below);
  for (let i = 0; i < 20_000; i++) {
    let text = "";
    for (let n = random(12); n > 0; n--) {
      const [low, high] = ranges[random(ranges.length)]!;
      text += String.fromCharCode(low + random(high - low + 1));
    }
    expect(jsonString(text)).toBe(JSON.stringify(text));
  }
});
