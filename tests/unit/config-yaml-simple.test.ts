// The plain-shape reader (src/config/yaml-simple.ts) against the full yaml path: for every config text
// the tests use, 13,000 mutations of them and 4,000 generated documents, both give the same result (the
// same tree and concealed values, or the same errors), and the reader takes the texts a start reads.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { embeddedDefaultText } from "../../src/config/default.ts";
import { Concealed, markReferences } from "../../src/config/interpolate.ts";
import { parseConfigText, type ParseResult } from "../../src/config/load.ts";
import { readSimpleYaml } from "../../src/config/yaml-simple.ts";
import { ROOT } from "../support/gateway.ts";
import { testTexts } from "../support/config-texts.ts";

const ENV: Record<string, string> = {
  DATA_PORT: "18080", ADMIN_PORT: "18081", STORE: "/tmp/gw.db", UPSTREAM: "http://127.0.0.1:9", UPSTREAM_KEY: "sk-up",
  TLS_DIR: "/tmp/tls", A: "one", PORT: "0123", FLAG: "true", EMPTY: "", SPACED: "  padded  ", NUM: "1.5", NULLISH: "~", COLON: "a: b",
};

function corpus(): string[] {
  const fixtures = readdirSync(join(ROOT, "tests/fixtures")).filter((f) => f.endsWith(".yaml")).map((f) => readFileSync(join(ROOT, "tests/fixtures", f), "utf8"));
  const defaults = [embeddedDefaultText({}), embeddedDefaultText({ OPENAI_API_KEY: "k", ANTHROPIC_API_KEY: "k", GEMINI_API_KEY: "k", COHERE_API_KEY: "k" })];
  const crafted = [
    ...["${A}", "${B:-fallback}", "$${A}", "${PORT}", "\"${PORT}\"", "${FLAG}", "\"${FLAG}\"", "${EMPTY}", "${SPACED}", "\"${SPACED}\"", "${NUM}", "${NULLISH}", "x${COLON}", "[${PORT}, \"${PORT}\"]", "{a: ${NUM}, b: \"${NUM}\"}"].map((value) => `a: ${value}\nb: 1\n`),
    "a: \"123\"\nb: \"true\"\nc: \" x \"\nd: \"null\"\ne: \"\"\nf: [\"1\", 1, \"a b\"]\ng: {\"k\": \"1.5\", j: 1.5}\n",
    "a:\n- 1\n- two\nb: 2\n", "- a: 1\n  b: [x, {y: z}]\n- - 1\n  - 2\n-\n  c: 3\n", "a: 007\nb: -0\nc: 0x1F\nd: 1e3\ne: .5\nf: +1\ng: ~\nh: True\ni: 12345678901234567890\n",
    "a: 1\na: 2\n", "{a: 1}\n", "a: {b: 1, b: 2}\n", "\"a\": 1\na: 2\n", "a: b: c\n", "a: [1, 2,]\n", "a: 'q'\n", "a: \"x\\ty\"\n", "a: b\n  c\n",
    "a: |\n  x\n", "a: &x 1\nb: *x\n", "a: !!str 1\n", "---\na: 1\n", "a: 1\n---\nb: 2\n", "a:\n\tb: 1\n", "a: 1\r\nb: 2\r\n", "null: 1\n", "a: x #c\nb: x#c\n",
    "  a: 1\n  b: 2\n", "a:\n  b:\n    c: [[[]]]\n  d: {}\n", "a: ${UNSET_VARIABLE}\n", "a: ${bad-name}\n", "# only a comment\n", "", "a: \"b\nc\"\n", "a: [1,\n  2]\n",
    "a: x: y\n", "a: -\n", "a: - x\n", "a:\n  - b: 1\n    c: 2\n  - d\n", "a: ,b\n", "a: b,c\n", "a: {b: c:, d: e}\n", "a: [b: c]\n", "__proto__: 1\n", "a: \u00a0b\n",
    ...[`${"k".repeat(1100)}: 1\n`, `"${"k".repeat(1100)}": 1\n`, `- ${"k".repeat(1100)}: 1\n`, `a: {${"k".repeat(1100)}: 1}\n`, `a: [${"k".repeat(1100)}]\n`],
  ];
  return [...fixtures, ...defaults, ...crafted, ...testTexts()];
}

/** A deterministic stream of edits: the shapes a hand-edited file goes wrong in. */
function mutations(text: string, seed: number, count: number): string[] {
  let state = seed;
  const next = (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  const pieces = [" ", "  ", "\n", ":", ": ", "- ", "#", " #", "{", "}", "[", "]", ",", "\"", "'", "&a ", "*a", "!", "|", ">", "?", "~", "0", "-1", ".5", "${A}", "${UNSET_VARIABLE}", "\t", "x", "null", "true", "a: 1\n", "\u00a0", "%"];
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const at = next(text.length + 1);
    const kind = next(3);
    const piece = pieces[next(pieces.length)]!;
    if (kind === 0) out.push(text.slice(0, at) + piece + text.slice(at));
    else if (kind === 1) out.push(text.slice(0, at) + text.slice(at + 1 + next(3)));
    else {
      const lines = text.split("\n");
      const line = next(lines.length);
      lines.splice(next(lines.length), 0, lines[line]!);
      out.push(lines.join("\n"));
    }
  }
  return out;
}

/** Random documents of the plain shape and its edges: nested blocks, flows, comments, `${VAR}`, odd scalars and keys. */
function generated(seed: number, count: number): string[] {
  let state = seed;
  const next = (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  const pick = <T>(items: T[]) => items[next(items.length)]!;
  const scalars = ["a", "b c", "1", "-1", "0", "1.5", "-0.0", "007", "1e3", "true", "True", "null", "~", "", "x:y", "http://h:1/p", "a#b", "a #b", '"q"', '"a: b"', '""', '" s "', '"#"', "${A}", "${PORT}", '"${PORT}"', "${FLAG}", "${SPACED}", '"${SPACED}"', "${EMPTY}", "${COLON}", "x${NUM}", "${NUM}${NUM}", "${Z:-7}", "${Z:-}", "-", "- a", ".5", "+1", "0x1F", "0o7", "yes", "12:30", "a,b", "[]", "{}", "[a, b]", "{a: 1}", "{a: [1, {b: c}]}", "[a: 1]", "{a}", "a: b", "é", "a  b", '"a\\"b"', "'s'", "&x a", "*x", "!t a", "|", ">"];
  const keys = ["a", "b", "c", "a-b", "a.b", "a/b", "_x", '"q k"', '"a"', "null", "True", "k1", "K"];
  const block = (indent: number, depth: number): string => {
    const pad = " ".repeat(indent);
    const sequence = next(4) === 0;
    let out = "";
    for (let i = 0, n = 1 + next(3); i < n; i++) {
      const child = depth < 4 && next(3) === 0;
      const comment = next(6) === 0 ? ` # c${pick(["", ":", "'", "#"])}` : "";
      if (sequence && child && next(2) === 0) out += `${pad}- ${block(indent + 2, depth + 1).trimStart()}`;
      else if (sequence && child) out += `${pad}-${comment}\n${block(indent + 2 + next(2), depth + 1)}`;
      else if (sequence) out += `${pad}- ${pick(scalars)}${comment}\n`;
      else if (child) out += `${pad}${pick(keys)}:${comment}\n${block(next(5) === 0 ? indent : indent + 1 + next(3), depth + 1)}`;
      else out += `${pad}${pick(keys)}:${next(8) === 0 ? "" : ` ${pick(scalars)}`}${comment}\n`;
      if (next(8) === 0) out += pick(["\n", "# x\n", "  # y\n"]);
    }
    return out;
  };
  return Array.from({ length: count }, () => block(next(3) === 0 ? 2 : 0, 0));
}

const probe = Object.values(ENV).join("|");
/** A result in a comparable form: the tree, or the errors, and what the concealed values hide. */
const comparable = (result: ParseResult) => (result.ok ? { tree: result.tree, hidden: result.concealed.scrub(probe) } : { errors: result.errors, refused: result.refused });

function same(text: string, resolve: boolean): boolean {
  const fast = comparable(parseConfigText(text, "t.yaml", ENV, { resolve }));
  const full = comparable(parseConfigText(text, "t.yaml", ENV, { resolve, full: true }));
  if (Bun.deepEquals(fast, full, true)) return true;
  console.error("differs:", JSON.stringify(text), "\nfast:", fast, "\nfull:", full);
  return false;
}

const readsPlainly = (text: string) => readSimpleYaml({ marked: markReferences(text, "t"), env: ENV, resolve: true, concealed: new Concealed() }) !== undefined;

describe("the plain-shape reader and the full yaml path", () => {
  const texts = corpus();

  test("give the same result for every config text the tests use", () => {
    expect(texts.length).toBeGreaterThan(150);
    for (const text of texts) {
      expect(same(text, true)).toBe(true);
      expect(same(text, false)).toBe(true);
    }
  });

  test("give the same result for mutations of them", () => {
    let taken = 0;
    let total = 0;
    texts.forEach((text, i) => {
      for (const mutated of mutations(text, i + 1, 24)) {
        total++;
        if (readsPlainly(mutated)) taken++;
        expect(same(mutated, true)).toBe(true);
      }
    });
    console.log(`the plain-shape reader takes ${taken} of ${total} mutations`);
    // Not vacuous: the reader takes a good share of the mutations, and bails on the rest.
    expect(taken).toBeGreaterThan(total / 10);
    expect(taken).toBeLessThan(total);
  }, 30_000);

  test("give the same result for random documents of the plain shape and its edges", () => {
    const documents = generated(7, 4000);
    let taken = 0;
    for (const text of documents) {
      if (readsPlainly(text)) taken++;
      expect(same(text, true)).toBe(true);
      expect(same(text, false)).toBe(true);
    }
    console.log(`the plain-shape reader takes ${taken} of ${documents.length} generated documents`);
    expect(taken).toBeGreaterThan(documents.length / 10);
  }, 30_000);

  test("the reader takes the configs a start reads", () => {
    for (const text of [readFileSync(join(ROOT, "tests/fixtures/cold-start.yaml"), "utf8"), embeddedDefaultText({}), embeddedDefaultText({ OPENAI_API_KEY: "k" })]) {
      expect(readsPlainly(text)).toBe(true);
    }
    const configs = texts.filter((text) => {
      const full = parseConfigText(text, "t.yaml", ENV, { full: true });
      return full.ok && typeof full.tree === "object" && full.tree !== null && ["providers", "models", "listen", "auth", "groups"].some((key) => key in (full.tree as object));
    });
    const taken = configs.filter(readsPlainly).length;
    console.log(`the plain-shape reader takes ${taken} of the ${configs.length} well-formed configs in the tests`);
    expect(taken).toBeGreaterThan(configs.length * 0.8);
  });

  test("an unset variable stays `${NAME}` in the document the full path checks: two keys of one are duplicates", () => {
    expect(parseConfigText("${X}: 1\n${X}: 2\n", "t.yaml", {})).toEqual({
      ok: false,
      errors: ["t.yaml:1: environment variable X is not set (referenced as ${X})", "t.yaml:2: environment variable X is not set (referenced as ${X})", "t.yaml:2: Map keys must be unique"],
    });
  });

  test("a `${VAR}` inside a collection used as a key is not printed in the yaml package's process warning", () => {
    const warnings: string[] = [];
    const emitWarning = process.emitWarning;
    process.emitWarning = ((warning: string | Error) => void warnings.push(String(warning))) as typeof process.emitWarning;
    try {
      const result = parseConfigText("a:\n  [${SECRET}]: 1\n", "t.yaml", { SECRET: "sk-live-secret-value" });
      expect(result.ok).toBe(true);
    } finally {
      process.emitWarning = emitWarning;
    }
    expect(warnings.filter((w) => w.includes("sk-live-secret-value"))).toEqual([]);
  });

  test("a billion laughs, a deep nest and a long text are refused on every path", () => {
    const laughs = `a: &a ["x","x","x","x","x","x","x","x","x"]\n${Array.from({ length: 8 }, (_, i) => `${"bcdefghi"[i]}: &${"bcdefghi"[i]} [${Array(9).fill(`*${"abcdefgh"[i]}`).join(",")}]`).join("\n")}\n`;
    const deep = `a: ${"[".repeat(100)}${"]".repeat(100)}\n`;
    const long = `a: "${"x".repeat(1024 * 1024)}"\n`;
    for (const text of [laughs, deep, long]) {
      const result = parseConfigText(text, "t.yaml", ENV);
      expect(result.ok).toBe(false);
      expect(result.ok ? undefined : result.refused).toBe(true);
    }
  });
});
