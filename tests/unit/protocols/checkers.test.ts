// A checker answers the same before it is compiled (its first uses are interpreted) and after, so the
// first requests of a cold start are judged exactly as every later one.
import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { checkerFor } from "../../../src/protocols/checkers.ts";
import { ChatRequestHead, WireUsage } from "../../../src/protocols/openai/schema.ts";

const values: unknown[] = [
  { model: "m", messages: [{ role: "user" }] },
  { model: "", messages: [{ role: "user" }] },
  { model: "m", messages: [] },
  { model: "m", messages: [{ role: "user" }], temperature: null, max_tokens: 0 },
  { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
  { prompt_tokens: "3" },
  null,
  [],
  "text",
];

describe("checkers", () => {
  test("verdicts and errors are the same on the interpreted first uses and once compiled", () => {
    for (const schema of [ChatRequestHead, WireUsage, Type.Object({ n: Type.Integer({ minimum: 1 }), s: Type.Optional(Type.Union([Type.String(), Type.Null()])) })]) {
      // A fresh schema object per round, so each starts uncompiled.
      const fresh = () => structuredCloneSchema(schema);
      for (const value of values) {
        const check = checkerFor(fresh());
        const verdicts = Array.from({ length: 6 }, () => check.Check(value));
        expect(new Set(verdicts).size).toBe(1);
        const errors = [...check.Errors(value)].map((e) => `${e.path} ${e.message}`);
        expect(errors.length === 0).toBe(verdicts[0]!);
      }
    }
  });
});

/** A deep copy that keeps TypeBox's symbol-keyed members (structuredClone drops them). */
function structuredCloneSchema<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  const out = (Array.isArray(value) ? [] : {}) as Record<string | symbol, unknown>;
  for (const key of Reflect.ownKeys(value)) out[key] = structuredCloneSchema((value as Record<string | symbol, unknown>)[key]);
  return out as T;
}
