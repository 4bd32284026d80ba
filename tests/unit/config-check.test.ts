// A config is judged valid by TypeBox's verdict (Value.Check) before its errors are walked (load.ts
// treeErrors): the verdict and the error walk must agree on every tree, or a config the walk would refuse
// could load. Over every config text in the tests and deterministic breakages of their trees.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Value } from "@sinclair/typebox/value";
import { embeddedDefaultText } from "../../src/config/default.ts";
import { loadConfigTree, parseConfigText } from "../../src/config/load.ts";
import { GatewayConfig } from "../../src/config/schema.ts";
import { schemaErrors } from "../../src/config/schema-errors.ts";
import { testTexts } from "../support/config-texts.ts";
import { ROOT } from "../support/gateway.ts";

const ENV: Record<string, string> = { DATA_PORT: "18080", ADMIN_PORT: "18081", STORE: "/tmp/gw.db", UPSTREAM: "http://127.0.0.1:9", UPSTREAM_KEY: "sk-up", SIGNING_KEY: "s".repeat(48), ADMIN_TOKEN: "t".repeat(24) };
const WRONG: unknown[] = [null, "", "x", -1, 0.5, 1e300, true, [], {}, [1], { unknown_member: 1 }, "127.0.0.1:99999"];

function trees(): unknown[] {
  const fixtures = readdirSync(join(ROOT, "tests/fixtures")).filter((f) => f.endsWith(".yaml")).map((f) => readFileSync(join(ROOT, "tests/fixtures", f), "utf8"));
  const texts = [embeddedDefaultText({}), embeddedDefaultText({ OPENAI_API_KEY: "k", ANTHROPIC_API_KEY: "k" }), ...fixtures, ...testTexts()];
  return texts.flatMap((text) => {
    const parsed = parseConfigText(text, "t", ENV, { resolve: false });
    return parsed.ok && typeof parsed.tree === "object" && parsed.tree !== null ? [parsed.tree] : [];
  });
}

/** Every object or array node of a tree, with a way to set a member of it. */
function nodes(tree: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (typeof tree === "object" && tree !== null) {
    out.push(tree as Record<string, unknown>);
    for (const value of Object.values(tree)) nodes(value, out);
  }
  return out;
}

/** Deterministic breakages: a member set to a wrong value, deleted, or an unknown member added. */
function* broken(tree: unknown, seed: number, count: number): Generator<unknown> {
  let state = seed;
  const next = (n: number) => ((state = (state * 1103515245 + 12345) % 2147483648), state % n);
  for (let i = 0; i < count; i++) {
    const copy = structuredClone(tree);
    const all = nodes(copy);
    const node = all[next(all.length)]!;
    const keys = Object.keys(node);
    const kind = next(3);
    if (kind === 0 && keys.length > 0) node[keys[next(keys.length)]!] = structuredClone(WRONG[next(WRONG.length)]);
    else if (kind === 1 && keys.length > 0) delete node[keys[next(keys.length)]!];
    else node[Array.isArray(node) ? keys.length : `extra_${i}`] = structuredClone(WRONG[next(WRONG.length)]);
    yield copy;
  }
}

describe("config verdict before the error walk", () => {
  test("Value.Check passes exactly the trees the error walk finds nothing in", () => {
    let valid = 0;
    let invalid = 0;
    const all = trees();
    expect(all.length).toBeGreaterThan(60);
    for (const [index, tree] of all.entries())
      for (const candidate of [tree, ...broken(tree, index + 1, 40)]) {
        const verdict = Value.Check(GatewayConfig, candidate);
        expect({ candidate, verdict }).toEqual({ candidate, verdict: schemaErrors(GatewayConfig, candidate).length === 0 });
        if (verdict) valid++;
        else invalid++;
      }
    expect(valid).toBeGreaterThan(100);
    expect(invalid).toBeGreaterThan(1000);
  });

  test("an invalid config still gets every error with its path", () => {
    const result = loadConfigTree({ listen: "nowhere", providers: { p: { protocol: "openai", bogus: 1 } } }, "t", { env: ENV });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors).toEqual(expect.arrayContaining([expect.stringMatching(/^listen: /), expect.stringMatching(/^providers\.p\.bogus: unknown member/)]));
  });
});
