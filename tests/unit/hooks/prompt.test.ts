// What a gate sees of a prompt (text parts joined) and what a transform writes back: the texts of the
// same messages replaced, every non-text part kept in place.
import { expect, test } from "bun:test";
import type { IrRequest } from "../../../src/ir/request.ts";
import { applyPrompt, promptOf, validTransform } from "../../../src/hooks/prompt.ts";

const image = { type: "image", source: { kind: "url", url: "https://example.com/a.png" } } as const;
const ir = {
  model: "m",
  system: [{ type: "text", text: "sys " }, { type: "text", text: "two" }],
  messages: [
    { role: "user", content: [{ type: "text", text: "look at " }, image, { type: "text", text: "this" }] },
    { role: "assistant", content: [{ type: "tool_call", id: "c1", name: "f", arguments: "{}" }] },
    { role: "tool", content: [{ type: "tool_result", toolCallId: "c1", content: [{ type: "text", text: "result" }] }] },
  ],
  tools: [],
  sampling: {},
  stream: false,
} as unknown as IrRequest;

test("the gate's prompt: text parts joined, other parts and tool results omitted", () => {
  expect(promptOf(ir)).toEqual({ system: "sys two", messages: [{ role: "user", text: "look at this" }, { role: "assistant", text: "" }, { role: "tool", text: "" }] });
});

test("a transform replaces texts and keeps the image, the tool call and the tool result", () => {
  const out = applyPrompt(ir, { system: null, messages: [{ role: "user", text: "LOOK" }, { role: "assistant", text: "" }, { role: "tool", text: "" }] });
  expect(out.system).toEqual([]);
  expect(out.messages[0]!.content).toEqual([{ type: "text", text: "LOOK" }, image] as never);
  expect(out.messages[1]).toBe(ir.messages[1]!);
  expect(out.messages[2]).toBe(ir.messages[2]!);
});

test("a transform must keep the messages' count and roles", () => {
  const current = promptOf(ir);
  expect(validTransform({ messages: current.messages }, current)).toBe(true);
  expect(validTransform({ messages: current.messages.slice(1) }, current)).toBe(false);
  expect(validTransform({ messages: current.messages.map((m) => ({ ...m, role: "system" })) }, current)).toBe(false);
  expect(validTransform({ system: 3, messages: current.messages }, current)).toBe(false);
});
