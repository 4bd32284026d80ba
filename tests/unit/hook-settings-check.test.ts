// A hook's settings against its module's settingsSchema (src/hooks/settings-check.ts): each error names
// its member by pointer, none quotes a value (settings may hold secrets), and a secret reference stands
// for the string it will resolve to.
import { describe, expect, test } from "bun:test";
import { settingsErrors } from "../../src/hooks/settings-check.ts";

const SCHEMA = {
  type: "object",
  required: ["url", "token"],
  additionalProperties: false,
  properties: {
    url: { type: "string", pattern: "^https?://" },
    token: { type: "string", minLength: 8 },
    retries: { type: "integer", minimum: 0, maximum: 5 },
    mode: { enum: ["strict", "lenient"] },
    patterns: { type: "array", items: { type: "string" }, maxItems: 2 },
  },
};
const SECRET = "value-never-shown-1234";

describe("settingsErrors", () => {
  test("valid settings, a secret reference in a string's place included, have no errors", () => {
    expect(settingsErrors(SCHEMA, { url: "https://policy.internal/check", token: { env: "POLICY_TOKEN" }, retries: 2, mode: "strict", patterns: ["a"] })).toEqual([]);
  });

  test("every error is named by its pointer, and no value is quoted", () => {
    const errors = settingsErrors(SCHEMA, { url: SECRET, retries: 9.5, mode: SECRET, patterns: ["a", 2, "c"], extra: SECRET });
    expect(errors).toEqual([
      "/settings/token: required member missing",
      "/settings/url: does not match the pattern ^https?://",
      "/settings/retries: expected integer, got number",
      "/settings/mode: not one of the allowed values",
      "/settings/patterns: more than 2 items",
      "/settings/patterns/1: expected string, got number",
      "/settings/extra: unknown member",
    ]);
    expect(errors.join("\n")).not.toContain(SECRET);
  });

  test("a secret reference where a number goes is refused; a pattern JavaScript cannot read is left to the module", () => {
    expect(settingsErrors(SCHEMA, { url: "http://x", token: "12345678", retries: { env: "N" } })).toEqual(["/settings/retries: expected integer, got a secret reference"]);
    expect(settingsErrors({ type: "object", properties: { p: { type: "string", pattern: "(" } } }, { p: "x" })).toEqual([]);
  });
});
