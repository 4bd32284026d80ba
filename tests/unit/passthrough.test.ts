import { expect, test } from "bun:test";
import { usageMember } from "../../src/dataplane/passthrough.ts";

test("usageMember cuts out the top-level usage object, and copes with what could fool it", () => {
  const openai = JSON.stringify({ id: "x", choices: [{ message: { content: 'say "usage" {not json}' } }], usage: { prompt_tokens: 5, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 2 } } });
  expect(usageMember(openai)).toEqual({ usage: { prompt_tokens: 5, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 2 } } });
  const braces = JSON.stringify({ content: [{ text: "}}{{" }], usage: { input_tokens: 3, note: "a } and a \" inside" } });
  expect(usageMember(braces)).toEqual({ usage: { input_tokens: 3, note: 'a } and a " inside' } });
  // Only an escaped "usage" in content, no real usage member: falls back to the whole body.
  const noUsage = JSON.stringify({ content: 'the "usage": {"x": 1} text' });
  expect(usageMember(noUsage)).toEqual(JSON.parse(noUsage));
  expect(usageMember("not json at all")).toBeUndefined();
  // "usage" as a value, not a key: the cut is not taken.
  const asValue = JSON.stringify({ kind: "usage", extra: { a: 1 } });
  expect(usageMember(asValue)).toEqual(JSON.parse(asValue));
  // Pretty-printed bodies and non-ASCII text cut the same way.
  const pretty = JSON.stringify({ content: "héllo ✓", usage: { input_tokens: 1, note: "ünï ✓" } }, null, 2);
  expect(usageMember(pretty)).toEqual({ usage: { input_tokens: 1, note: "ünï ✓" } });
});
