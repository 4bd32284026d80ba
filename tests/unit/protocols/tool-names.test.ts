// Tool names renamed for an upstream that refuses them, and restored in the answer.
import { describe, expect, test } from "bun:test";
import type { IrRequest } from "../../../src/ir/index.ts";
import { COHERE_NAMES, DASHED_64, GEMINI_NAMES, renameTools, restoreContent, restorePart } from "../../../src/protocols/tool-names.ts";

const tool = (name: string) => ({ name, parameters: { type: "object" } });
function request(names: string[], extra: Partial<IrRequest> = {}): IrRequest {
  return { model: "m", system: [], messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], tools: names.map(tool), sampling: {}, stream: false, ...extra };
}

describe("renameTools", () => {
  test("names that fit leave the request alone, and warn nothing", () => {
    const warnings: string[] = [];
    expect(renameTools(request(["read_file", "write-file"]), DASHED_64, (w) => warnings.push(w))).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  test("every place a name appears is renamed: tools, tool choice, history; and restored in the answer", () => {
    const warnings: string[] = [];
    const renaming = renameTools(
      request(["fs.read", "ok_name"], {
        toolChoice: { type: "tool", name: "fs.read" },
        messages: [
          { role: "user", content: [{ type: "text", text: "read" }] },
          { role: "assistant", content: [{ type: "tool_call", id: "c1", name: "fs.read", arguments: "{}" }] },
          { role: "tool", content: [{ type: "tool_result", toolCallId: "c1", content: [{ type: "text", text: "x" }] }] },
        ],
      }),
      DASHED_64,
      (w) => warnings.push(w),
    )!;
    expect(renaming.request.tools.map((t) => t.name)).toEqual(["fs_read", "ok_name"]);
    expect(renaming.request.toolChoice).toEqual({ type: "tool", name: "fs_read" });
    expect(renaming.request.messages[1]).toEqual({ role: "assistant", content: [{ type: "tool_call", id: "c1", name: "fs_read", arguments: "{}" }] });
    expect(warnings).toEqual(['tool name "fs.read" sent upstream as "fs_read" (not a name this protocol accepts); the answer\'s calls carry "fs.read" again']);
    expect(restoreContent([{ type: "tool_call", id: "c2", name: "fs_read", arguments: "{}" }, { type: "text", text: "t" }], renaming)).toEqual([
      { type: "tool_call", id: "c2", name: "fs.read", arguments: "{}" },
      { type: "text", text: "t" },
    ]);
    expect(restorePart({ type: "tool-call-start", id: "b", toolCallId: "c3", name: "fs_read" }, renaming)).toEqual({ type: "tool-call-start", id: "b", toolCallId: "c3", name: "fs.read" });
    // A name the model made up is left as it came.
    expect(renaming.restore("other")).toBe("other");
  });

  test("a rename never collides with another tool's name", () => {
    const renaming = renameTools(request(["a.b", "a_b", "a-b"]), COHERE_NAMES, () => {})!;
    const names = renaming.request.tools.map((t) => t.name);
    expect(names).toEqual(["a_b_2", "a_b", "a_b_3"]);
    expect(names.map((n) => renaming.restore(n))).toEqual(["a.b", "a_b", "a-b"]);
  });

  test("a leading digit gets an underscore where the first character is restricted; length is capped", () => {
    const long = `x.${"y".repeat(80)}`;
    const renaming = renameTools(request(["1tool", long]), GEMINI_NAMES, () => {})!;
    const [first, second] = renaming.request.tools.map((t) => t.name);
    expect(first).toBe("_1tool");
    expect(second).toBe(long.slice(0, 64));
    expect(renameTools(request(["1tool"]), DASHED_64, () => {})).toBeUndefined();
    const capped = renameTools(request([`a.${"z".repeat(70)}`, `a_${"z".repeat(62)}`]), DASHED_64, () => {})!;
    expect(capped.request.tools.map((t) => t.name.length)).toEqual([64, 64]);
    expect(new Set(capped.request.tools.map((t) => t.name)).size).toBe(2);
  });
});
