// A config version's source (GET /config/source) and the line diff of two (GET /config/diff `lines`):
// the source is the config as written, base with the overlay, each value from the environment as its
// ${VAR} and each secret as its reference, never a value, for one process and for a fleet replica that
// took the version from the store; it reads back to the same config. The diff is a shortest line diff,
// bounded in lines, text and time.
import { describe, expect, test } from "bun:test";
import { lineDiff, MAX_DIFF_LINES, type DiffLine } from "../../src/admin/line-diff.ts";
import { FleetConfig } from "../../src/config/fleet.ts";
import { ConfigLifecycle, loadBoot, type ConfigTree } from "../../src/config/lifecycle.ts";
import { checkConfig, loadConfigText, parseConfigText } from "../../src/config/load.ts";
import { REDACTED, yamlText } from "../../src/config/source.ts";
import { ConfigHolder } from "../../src/config/snapshot.ts";
import type { ConfigVersionStore, StoredConfigVersion } from "../../src/store/config-versions.ts";

const UP_KEY = "sk-upstream-from-env-4f9a2c7e";
const HEADER_TOKEN = "hdr-token-from-env-8e1d";
const INLINE = "sk-inline-literal-55aa77";
const ENV = { UP_KEY, HEADER_TOKEN, PORT: "18080", ADMIN: "admin-token-from-env-31337" };
const SECRETS = [UP_KEY, HEADER_TOKEN, INLINE, ENV.ADMIN];

const BASE = `listen: "127.0.0.1:\${PORT}"
providers:
  local: {protocol: mock}
  up: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: "\${UP_KEY}", headers: {authorization: "Bearer \${HEADER_TOKEN}"}}
  inline: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: "${INLINE}"}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
auth:
  admin_auth: [admin-tokens]
  admin_tokens: [{name: ops, token: {env: ADMIN}}]
hooks:
  policy: {kind: gate, builtin: http-gate, settings: {url: "http://127.0.0.1:9/gate", headers: {x-policy-key: "${INLINE}", x-ref: {env: HEADER_TOKEN}}}}
`;

function lifecycleOf(text: string, overlay: ConfigTree = {}, versionWritten?: ConstructorParameters<typeof ConfigLifecycle>[0]["versionWritten"]) {
  const parsed = parseConfigText(text, "test", ENV);
  const boot = loadBoot(parsed, "test", overlay, ENV);
  if (!boot.result.ok) throw new Error(boot.result.errors.join("; "));
  return new ConfigLifecycle({
    holder: new ConfigHolder(boot.result.snapshot),
    env: ENV,
    now: () => 1_800_000_000_000,
    bootBase: boot.base,
    bootOverlay: overlay,
    bootConcealed: boot.concealed,
    stageOverlay: async () => ({ install: () => {}, discard: async () => {} }),
    versionWritten,
  });
}

function applyText(lifecycle: ConfigLifecycle, text: string) {
  const parsed = parseConfigText(text, "yaml", ENV);
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const planned = lifecycle.apply(parsed.tree, { principal: "admin", summary: "config.apply" }, parsed.concealed);
  if (!planned.ok) throw new Error(planned.message);
  planned.write?.();
  planned.swap();
  return planned.snapshot.version;
}

const sourceOf = (lifecycle: ConfigLifecycle, v = lifecycle.current.version) => lifecycle.source(lifecycle.version(v)!);
const noSecretIn = (text: string) => {
  for (const secret of SECRETS) expect(text).not.toContain(secret);
};

describe("GET /config/source", () => {
  test("every secret shows as its reference, a literal one as <redacted-by-gateway>, never a value", () => {
    const source = sourceOf(lifecycleOf(BASE));
    noSecretIn(source);
    expect(source).toContain("api_key: ${UP_KEY}");
    expect(source).toContain('authorization: "Bearer ${HEADER_TOKEN}"');
    expect(source).toContain(`api_key: ${REDACTED}`);
    expect(source).toContain("env: ADMIN");
    expect(source).toContain("name: ops");
    // A hook's settings are shown by key: a reference, else <redacted-by-gateway>, as every view shows them.
    expect(source).toContain(`x-policy-key: ${REDACTED}`);
    expect(source).toContain("env: HEADER_TOKEN");
    expect(source).toContain(`url: ${REDACTED}`);
    // A value from the environment beside literal text keeps the text (127.0.0.1: is not the port).
    expect(source).toContain("listen: 127.0.0.1:${PORT}");
  });

  test("a source reads back, with the same environment, to the same config (but for what it redacts)", () => {
    const text = `${BASE.replace(`api_key: "${INLINE}"`, "api_key: {env: UP_KEY}")}public_url: "https://example.com/$\${literal}"\n`;
    const written = parseConfigText(text, "test", ENV);
    const source = sourceOf(lifecycleOf(text));
    const again = parseConfigText(source, "source", ENV);
    if (!written.ok || !again.ok) throw new Error("does not parse");
    // The hook's settings are redacted (shown by key); all else is as written.
    const withoutSettings = (tree: unknown) => ({ ...(tree as ConfigTree), hooks: { policy: { ...((tree as { hooks: { policy: ConfigTree } }).hooks.policy), settings: undefined } } });
    expect(withoutSettings(again.tree)).toEqual(withoutSettings(written.tree));
    expect((again.tree as ConfigTree).public_url).toBe("https://example.com/${literal}");
    expect(source).toContain("public_url: https://example.com/$${literal}");
  });

  test("a source sent back with its marks is refused at each mark's path, never loaded with the mark as a secret", () => {
    const source = sourceOf(lifecycleOf(BASE));
    const loaded = loadConfigText(source, "source", { env: ENV });
    expect(loaded.ok).toBe(false);
    const errors = loaded.ok ? [] : loaded.errors;
    expect(errors).toContain("providers.inline.api_key: holds <redacted-by-gateway>, the mark GET /config/source shows in place of a secret; write the secret or a reference ({env: NAME}, {file: PATH} or ${NAME})");
    for (const error of errors) expect(error).not.toContain(INLINE);
    // POST /config/validate without resolving says the same.
    const verdict = checkConfig({ yaml: source }, { env: ENV, resolve: false });
    expect(verdict.ok).toBe(false);
    expect(verdict.errors.some((e) => e.startsWith("providers.inline.api_key: holds <redacted-by-gateway>"))).toBe(true);
    // Each mark replaced by a reference, the error goes.
    // A value that merely looks like a redaction is a value: a hook replacing what it redacts with it.
    const plain = loadConfigText(`${BASE.replace(`api_key: "${INLINE}"`, "api_key: {env: UP_KEY}")}`.replace("hooks:", 'hooks:\n  scrub: {kind: gate, builtin: regex-redact, prompt: rw, settings: {patterns: ["x"], replacement: "<redacted>"}}'), "t", { env: ENV });
    expect(plain.ok ? [] : plain.errors.filter((e) => e.includes("redacted"))).toEqual([]);
    const mended = loadConfigText(source.replace(`api_key: ${REDACTED}`, "api_key: {env: UP_KEY}"), "source", { env: ENV });
    expect(mended.ok ? [] : mended.errors.filter((e) => e.startsWith("providers.inline."))).toEqual([]);
  });

  test("the overlay is merged over the base, as the running config has it", () => {
    const lifecycle = lifecycleOf(BASE, { per_request_fee: 0.25, routing: { on_exhausted: "least_bad" } });
    const source = sourceOf(lifecycle);
    expect(source).toContain("per_request_fee: 0.25");
    expect(source).toContain("on_exhausted: least_bad");
    const tree = parseConfigText(source, "source", ENV);
    expect(tree.ok && (tree.tree as ConfigTree).per_request_fee).toBe(0.25);
    const planned = lifecycle.putSettings({ per_request_fee: 0.5 }, { principal: "admin", summary: "config.settings" });
    if (!planned.ok) throw new Error(planned.message);
    planned.swap();
    expect(sourceOf(lifecycle)).toContain("per_request_fee: 0.5");
    expect(sourceOf(lifecycle, 0)).toContain("per_request_fee: 0.25");
  });

  test("a fleet replica that took the versions from the store shows the same source, still without a secret", async () => {
    const rows: StoredConfigVersion[] = [];
    const store: ConfigVersionStore = {
      newest: async (limit, after = -1) => rows.filter((r) => r.version > after).slice(-limit),
      first: async (row) => (rows.length === 0 ? (rows.push(row), true) : false),
      record: (row) => void rows.push(row),
    };
    const logger = { warn: () => {}, info: () => {} };
    let fleetA: FleetConfig | undefined;
    const a = lifecycleOf(BASE, {}, (content) => fleetA!.written(content));
    fleetA = new FleetConfig({ store, lifecycle: a, env: ENV, logger });
    await fleetA.join();
    const changed = BASE.replace("chat: {members: [{model: mock-1}]}", "chat: {members: [{model: mock-1, weight: 2}]}");
    const v1 = applyText(a, changed);

    const b = lifecycleOf("providers: {local: {protocol: mock}}\n");
    await new FleetConfig({ store, lifecycle: b, env: ENV, logger }).join();
    expect(b.current.version).toBe(v1);
    for (const v of [0, v1]) {
      const source = sourceOf(b, v);
      noSecretIn(source);
      expect(source).toBe(sourceOf(a, v));
    }
    expect(sourceOf(b)).toContain("api_key: ${UP_KEY}");
    expect(rows.map((r) => r.base).join("\n")).not.toContain(UP_KEY);
    const { lines } = lineDiff(sourceOf(b, 0), sourceOf(b, v1));
    expect(lines.filter((l) => l.op !== "=")).toEqual([{ op: "+", text: "        weight: 2" }]);
  });

  test("a rollback's source is the restored version's", () => {
    const lifecycle = lifecycleOf(BASE);
    const v1 = applyText(lifecycle, BASE.replace("mock-1: {provider: local}", "mock-1: {provider: local, context_window: 8192}"));
    expect(sourceOf(lifecycle, v1)).not.toBe(sourceOf(lifecycle, 0));
    const planned = lifecycle.rollback(0, { principal: "admin", summary: "config.rollback to 0" });
    if (!planned.ok) throw new Error(planned.message);
    planned.swap();
    expect(sourceOf(lifecycle)).toBe(sourceOf(lifecycle, 0));
  });
});

describe("the YAML a source is written in", () => {
  test("4,000 random trees read back as themselves, by the plain reader and by the yaml package", () => {
    let seed = 11;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const WORDS = ["a", "true", "null", "~", "1", "0123", "1.5", ".inf", "-x", "x:", "a: b", "a #b", "#c", "", " pad ", "${V}", "$${V}", "<redacted-by-gateway>", "<<", "-", "@x", "é ü", "line\nbreak", 'q"uote', "back\\slash", "tab\there", "127.0.0.1:8080", "http://h/p?q=1&r", "{x}", "[y]", "*alias", "&anchor", "!tag", "%d", "|", ">", "'s'", "k=v", "yes", "0x1F"];
    const leaf = (): unknown => [() => WORDS[random(WORDS.length)], () => random(1000) - 500, () => random(100) / 8, () => random(2) === 0, () => null][random(5)]!();
    const tree = (depth: number): unknown => {
      const kind = depth > 3 ? 2 : random(3);
      if (kind === 0) return Array.from({ length: random(4) }, () => tree(depth + 1));
      if (kind === 1) return Object.fromEntries(Array.from({ length: random(4) }, () => [WORDS[random(WORDS.length)]!.replace("${", "x") || "k", tree(depth + 1)]));
      return leaf();
    };
    for (let i = 0; i < 4000; i++) {
      const written = { root: tree(0), other: tree(1) };
      const text = yamlText(written);
      // $${ and ${ are the config's own escapes: a tree holding them reads back through interpolation.
      const plain = parseConfigText(text, "t", { V: "value" }, { resolve: false });
      const full = parseConfigText(text, "t", { V: "value" }, { resolve: false, full: true });
      if (!full.ok || !plain.ok) throw new Error(`${text}: ${JSON.stringify(full)}`);
      expect(full.tree).toEqual(plain.tree);
      if (!JSON.stringify(written).includes("${")) expect(full.tree).toEqual(written);
    }
  });
});

/** Longest common subsequence length, by the textbook table: what a shortest diff keeps. */
function lcs(a: string[], b: string[]): number {
  const row = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    let diagonal = 0;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = x === b[j - 1] ? diagonal + 1 : Math.max(row[j]!, row[j - 1]!);
      diagonal = above;
    }
  }
  return row[b.length]!;
}

const sides = (lines: DiffLine[]) => ({
  from: lines.filter((l) => l.op !== "+").map((l) => l.text),
  to: lines.filter((l) => l.op !== "-").map((l) => l.text),
});
const text = (lines: string[]) => lines.map((l) => `${l}\n`).join("");

describe("the line diff", () => {
  test("one changed line is - then +, among the unchanged ones", () => {
    expect(lineDiff("a\nb\nc\n", "a\nB\nc\n")).toEqual({
      lines: [
        { op: "=", text: "a" },
        { op: "-", text: "b" },
        { op: "+", text: "B" },
        { op: "=", text: "c" },
      ],
      truncated: false,
    });
    expect(lineDiff("", "x\n").lines).toEqual([{ op: "+", text: "x" }]);
    expect(lineDiff("x\n", "x\n").lines).toEqual([{ op: "=", text: "x" }]);
  });

  test("on 3000 random pairs it gives back both texts and is as short as the longest common subsequence allows", () => {
    let seed = 7;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let i = 0; i < 3000; i++) {
      const a = Array.from({ length: random(12) }, () => "abcd"[random(4)]!);
      const b = Array.from({ length: random(12) }, () => "abcd"[random(4)]!);
      const { lines, truncated } = lineDiff(text(a), text(b));
      expect(truncated).toBe(false);
      expect(sides(lines)).toEqual({ from: a, to: b });
      expect(lines.filter((l) => l.op === "=").length).toBe(lcs(a, b));
    }
  });

  test("bounded: past 20,000 lines the first 20,000 and truncated; a source over 1 MiB is cut; two wholly different large texts answer quickly", () => {
    const many = Array.from({ length: 30_000 }, (_, i) => `line ${i}`);
    const long = lineDiff(text(many), text([...many.slice(0, 100), "changed", ...many.slice(101)]));
    expect(long.truncated).toBe(true);
    expect(long.lines.length).toBe(MAX_DIFF_LINES);
    expect(long.lines.filter((l) => l.op !== "=")).toEqual([
      { op: "-", text: "line 100" },
      { op: "+", text: "changed" },
    ]);

    const huge = "x".repeat(100) + "\n";
    const big = lineDiff(huge.repeat(11_000), huge.repeat(11_000));
    expect(big.truncated).toBe(true);
    expect(big.lines.length).toBeLessThanOrEqual(MAX_DIFF_LINES);

    const left = Array.from({ length: 9_000 }, (_, i) => `left ${i % 7} ${i}`);
    const right = Array.from({ length: 9_000 }, (_, i) => `right ${i % 5} ${i}`);
    const started = performance.now();
    const different = lineDiff(text(left), text(right));
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(different.truncated).toBe(false);
    expect(sides(different.lines)).toEqual({ from: left, to: right });
  });
});
