// The resolver writes a config's defaults with its own walk (config/defaults.ts) instead of TypeBox's
// Value.Default, which visited each member twice per level: the two must give the same tree, key order
// included (views and diffs print it), over every config text in the tests, those trees with members
// removed, and with every section present but empty (so each nested default is written).
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Kind, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { embeddedDefaultText } from "../../src/config/default.ts";
import { UNHANDLED_KINDS, withDefaults } from "../../src/config/defaults.ts";
import { parseConfigText } from "../../src/config/load.ts";
import { GatewayConfig } from "../../src/config/schema.ts";
import { testTexts } from "../support/config-texts.ts";
import { ROOT } from "../support/gateway.ts";

const ENV: Record<string, string> = { DATA_PORT: "18080", ADMIN_PORT: "18081", STORE: "/tmp/gw.db", UPSTREAM: "http://127.0.0.1:9", UPSTREAM_KEY: "sk-up", SIGNING_KEY: "s".repeat(48), ADMIN_TOKEN: "t".repeat(24) };

/** Every config text of the tests, read with the environment above and without it, that is a valid config. */
function trees(): object[] {
  const fixtures = readdirSync(join(ROOT, "tests/fixtures")).filter((f) => f.endsWith(".yaml")).map((f) => readFileSync(join(ROOT, "tests/fixtures", f), "utf8"));
  const texts = [embeddedDefaultText({}), embeddedDefaultText({ OPENAI_API_KEY: "k", ANTHROPIC_API_KEY: "k" }), ...fixtures, ...testTexts()];
  return texts.flatMap((text) =>
    [true, false].flatMap((resolve) => {
      const parsed = parseConfigText(text, "t", ENV, { resolve });
      return parsed.ok && Value.Check(GatewayConfig, parsed.tree) ? [parsed.tree as object] : [];
    }),
  );
}

/** Every object node of a tree. */
function nodes(tree: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (typeof tree === "object" && tree !== null) {
    out.push(tree as Record<string, unknown>);
    for (const value of Object.values(tree)) nodes(value, out);
  }
  return out;
}

/** The tree with each member removed in turn (where the config stays valid without it). */
function* withoutEach(tree: object): Generator<object> {
  const count = nodes(tree).length;
  for (let n = 0; n < count; n++) {
    const keys = Object.keys(nodes(tree)[n]!);
    for (const key of keys) {
      const copy = structuredClone(tree);
      const node = nodes(copy)[n]!;
      if (Array.isArray(node)) node.splice(Number(key), 1);
      else delete node[key];
      if (Value.Check(GatewayConfig, copy)) yield copy;
    }
  }
}

/** Every section the schema has, present and empty, down to `depth`: {} for an object, [] for a list. */
function skeleton(schema: TSchema, depth: number): unknown {
  if (schema[Kind] !== "Object" || depth === 0) return schema[Kind] === "Array" ? [] : {};
  const out: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(schema.properties as Record<string, TSchema>)) {
    if (member[Kind] === "Object" || member[Kind] === "Record" || member[Kind] === "Array") out[key] = skeleton(member, depth - 1);
  }
  return out;
}

function expectSame(tree: object) {
  const before = JSON.stringify(tree);
  const ours = withDefaults(GatewayConfig, tree);
  const typebox = Value.Default(GatewayConfig, structuredClone(tree));
  // JSON text compares the key order too; toEqual the values JSON would not show (undefined members).
  expect({ tree, defaults: JSON.stringify(ours) }).toEqual({ tree, defaults: JSON.stringify(typebox) });
  expect(ours).toEqual(typebox);
  expect(JSON.stringify(tree)).toBe(before); // the tree handed in is not written into
}

describe("config defaults (withDefaults against TypeBox's Value.Default)", () => {
  test("the config schema holds only kinds the walk repeats TypeBox's handling of", () => {
    const seen = new Set<string>();
    const walk = (schema: unknown) => {
      if (typeof schema !== "object" || schema === null) return;
      const kind = (schema as TSchema)[Kind];
      if (typeof kind === "string") seen.add(kind);
      for (const value of Object.values(schema)) walk(value);
    };
    walk(GatewayConfig);
    expect([...seen].filter((kind) => UNHANDLED_KINDS.has(kind))).toEqual([]);
    expect([...seen]).toEqual(expect.arrayContaining(["Object", "Record", "Array", "Union", "Literal", "String"]));
  });

  test("every valid config text in the tests, and each with one member removed", () => {
    const all = trees();
    expect(all.length).toBeGreaterThan(60);
    let variants = 0;
    for (const tree of all) {
      expectSame(tree);
      for (const variant of withoutEach(tree)) {
        expectSame(variant);
        variants++;
      }
    }
    expect(variants).toBeGreaterThan(500);
  });

  test("every section present and empty, to each depth, alone and together", () => {
    for (let depth = 1; depth <= 4; depth++) {
      const full = skeleton(GatewayConfig, depth) as Record<string, unknown>;
      const candidates = [full, ...Object.keys(full).map((key) => ({ [key]: full[key] }))].filter((tree) => Value.Check(GatewayConfig, tree));
      expect(candidates.length).toBeGreaterThan(5);
      for (const tree of candidates) expectSame(tree);
    }
  });

  test("sections whose entries TypeBox leaves alone (providers, models, groups) stay without their members' defaults", () => {
    const tree = { models: { m: { provider: "p" } }, providers: { p: { protocol: "openai" } }, groups: { g: {} }, auth: { admin_tokens: [{ token: { env: "T" } }] } };
    const ours = withDefaults(GatewayConfig, tree) as { models: { m: object }; groups: { g: object }; auth: { admin_tokens: object[] } };
    expect(ours.models.m).toEqual({ provider: "p" });
    expect(ours.groups.g).toEqual({});
    expect(ours.auth.admin_tokens).toEqual([{ token: { env: "T" }, scope: "full" }]);
    expectSame(tree);
  });
});
