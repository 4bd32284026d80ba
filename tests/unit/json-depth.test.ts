// The nesting bound both planes check before JSON.parse (issue 22 class 11).
import { expect, test } from "bun:test";
import { jsonTextTooDeep, MAX_JSON_DEPTH } from "../../src/http/json-depth.ts";

const nested = (levels: number, open = "[", close = "]") => open.repeat(levels) + close.repeat(levels);

test("at the bound passes, one past it is refused, in arrays, objects and mixed", () => {
  expect(jsonTextTooDeep(nested(MAX_JSON_DEPTH))).toBe(false);
  expect(jsonTextTooDeep(nested(MAX_JSON_DEPTH + 1))).toBe(true);
  const objects = (n: number) => '{"a":'.repeat(n - 1) + "{}" + "}".repeat(n - 1);
  expect(jsonTextTooDeep(objects(MAX_JSON_DEPTH))).toBe(false);
  expect(jsonTextTooDeep(objects(MAX_JSON_DEPTH + 1))).toBe(true);
  expect(jsonTextTooDeep(`{"m":[${"[{".repeat(40)}]}`)).toBe(true);
});

test("brackets inside strings, escaped quotes and backslashes do not count", () => {
  const text = JSON.stringify({ content: "[".repeat(10_000) + '\\"{{{' + "\\", other: ["]]]\"[[["] });
  expect(jsonTextTooDeep(text)).toBe(false);
  // An escaped quote does not end the string: the brackets after it are still inside.
  expect(jsonTextTooDeep(`{"a":"\\"${"[".repeat(100)}"}`)).toBe(false);
});

test("10^5 levels are refused in one pass, far under 10 ms", () => {
  const deep = `{"messages":[{"content":${nested(100_000)}}]}`;
  const started = performance.now();
  expect(jsonTextTooDeep(deep)).toBe(true);
  expect(performance.now() - started).toBeLessThan(50);
});
