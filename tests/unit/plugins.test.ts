// The checks on a plugin tarball (src/plugins): each failing check alone, several at once, the allowlist
// pattern, path escapes and links, the size bounds (a gzip bomb included), strict base64.
import { beforeAll, describe, expect, test } from "bun:test";
import { inspectTarball, trustPosture, type TrustPosture } from "../../src/plugins/index.ts";
import { entryPath, MAX_FILES, MAX_TARBALL_BYTES } from "../../src/plugins/tarball.ts";
import { isAllowed, strictBase64 } from "../../src/plugins/trust.ts";
import { newPublisher, packPlugin, tarGz, type PluginSpec, type Publisher } from "../support/plugins.ts";

let acme: Publisher;
let other: Publisher;
let posture: TrustPosture;
beforeAll(async () => {
  acme = await newPublisher("acme");
  other = await newPublisher("other");
  posture = { dir: "/nonexistent", keys: new Map([["acme", Buffer.from(acme.publicHex, "hex")]]), allowlist: ["acme/*"] };
});

const problemsOf = async (spec: Omit<PluginSpec, "publisher"> & { publisher?: Publisher }, expect_ = {}) =>
  (await inspectTarball((await packPlugin({ publisher: acme, ...spec })).tarball, posture, expect_)).view.problems;

describe("a well-formed plugin", () => {
  test("passes with a view of its manifest and files, and is accepted", async () => {
    const { tarball } = await packPlugin({ publisher: acme, files: { "index.js": "export default {}", "lib/util.js": "x" } });
    const inspected = await inspectTarball(tarball, posture, { kind: "hook" });
    expect(inspected.view).toMatchObject({ name: "redactor", version: "1.0.0", kind: "hook", publisher: "acme", signature_valid: true, allowed: true, problems: [] });
    expect(inspected.view.files.map((f) => f.path).sort()).toEqual(["index.js", "lib/util.js"]);
    expect(inspected.view.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(inspected.accepted?.manifest.name).toBe("redactor");
  });

  test("a tar with folder entries and ./ prefixes (as `tar czf` writes them) passes", async () => {
    const { manifest, tarball: signed } = await packPlugin({ publisher: acme, files: { "index.js": "x" } });
    const sig = (await inspectTarball(signed, posture)).view;
    expect(sig.problems).toEqual([]);
    const { signManifest } = await import("../support/plugins.ts");
    const tarball = await tarGz([
      { name: "./", type: "directory" },
      { name: "./manifest.json", content: manifest },
      { name: "./manifest.sig", content: `${await signManifest(manifest, acme.secretKey)}\n` },
      { name: "./index.js", content: "x" },
    ]);
    expect((await inspectTarball(tarball, posture)).view.problems).toEqual([]);
  });
});

describe("each failing check alone is named, and the plugin is not accepted", () => {
  const cases: [string, () => Promise<string[]>, RegExp][] = [
    ["a signature by another key", () => problemsOf({ signWith: other.secretKey }), /manifest\.sig: the signature does not verify under plugins\.trusted_keys\.acme/],
    ["an untrusted publisher", () => problemsOf({ publisher: other, manifest: {} }), /publisher "other" is not trusted/],
    ["a signature that is not base64", () => problemsOf({ sig: "not base64!" }), /manifest\.sig: not the base64 of a 64-byte ed25519 signature/],
    ["a name outside the allowlist", async () => (await inspectTarball((await packPlugin({ publisher: acme })).tarball, { ...posture, allowlist: ["acme/other-*"] })).view.problems, /acme\/redactor matches no plugins\.allowlist pattern/],
    ["a file whose sha256 differs", () => problemsOf({ manifest: { files: { "index.js": "0".repeat(64) } } }), /file "index\.js": sha256 does not match/],
    ["an unlisted file", () => problemsOf({ extra: [{ name: "extra.js", content: "x" }] }), /file "extra\.js": not listed in the manifest/],
    ["a listed file that is missing", () => problemsOf({ manifest: { files: { "index.js": "0".repeat(64), "gone.js": "0".repeat(64) } } }), /file "gone\.js": listed in the manifest but missing/],
    ["an entry that is not listed", () => problemsOf({ entry: "main.js" }), /entry "main\.js": not a file listed in the manifest/],
    ["the wrong kind", () => problemsOf({ kind: "auth" }, { kind: "hook" }), /kind "auth": a hook plugin is needed here/],
    ["a manifest member missing", () => problemsOf({ manifest: { version: undefined } }), /manifest\.json \/version/],
    ["a manifest nested past the JSON depth bound", () => problemsOf({ manifest: { deep: JSON.parse(`${"[".repeat(70)}${"]".repeat(70)}`) } }), /manifest\.json: nests JSON deeper than 64 levels/],
    ["a version that is not semver", () => problemsOf({ version: "1.0" }), /manifest\.json \/version/],
    ["a symlink", () => problemsOf({ extra: [{ name: "link", type: "symlink", linkname: "/etc/passwd" }] }), /entry "link": a symlink entry/],
    ["a hardlink", () => problemsOf({ extra: [{ name: "hard", type: "link", linkname: "index.js" }] }), /entry "hard": a link entry/],
    ["a device", () => problemsOf({ extra: [{ name: "dev", type: "character-device" }] }), /entry "dev": a character-device entry/],
    ["a fifo", () => problemsOf({ extra: [{ name: "pipe", type: "fifo" }] }), /entry "pipe": a fifo entry/],
    ["a .. path", () => problemsOf({ extra: [{ name: "../../etc/cron.d/x", content: "x" }] }), /entry "\.\.\/\.\.\/etc\/cron\.d\/x": a "\.\." segment escapes/],
    ["an absolute path", () => problemsOf({ extra: [{ name: "/etc/x", content: "x" }] }), /entry "\/etc\/x": an absolute path escapes/],
    ["a manifest file path escaping", () => problemsOf({ manifest: { files: { "index.js": "0".repeat(64), "../x": "0".repeat(64) } } }), /manifest\.json files: "\.\.\/x" is not a plain path/],
  ];
  for (const [what, run, expected] of cases) {
    test(what, async () => {
      const problems = await run();
      expect(problems.length).toBeGreaterThan(0);
      expect(problems.some((p) => expected.test(p))).toBe(true);
    });
  }

  test("no manifest, no signature, not gzip, not tar", async () => {
    expect((await inspectTarball(await tarGz([{ name: "index.js", content: "x" }]), posture)).view.problems).toEqual(["manifest.json: missing"]);
    const { manifest } = await packPlugin({ publisher: acme });
    expect((await inspectTarball(await tarGz([{ name: "manifest.json", content: manifest }, { name: "index.js", content: (await import("../support/plugins.ts")).HOOK_SOURCE }]), posture)).view.problems).toEqual(["manifest.sig: missing"]);
    expect((await inspectTarball(new TextEncoder().encode("plain text"), posture)).view.problems).toEqual(["not a gzip file"]);
    expect((await inspectTarball(Bun.gzipSync(new Uint8Array(2048).fill(7)), posture)).view.problems[0]).toMatch(/^not a valid tar archive/);
  });
});

describe("several failures at once are all reported", () => {
  test("bad signature, not allowlisted, a wrong hash, an unlisted file, a symlink, an escape and the wrong kind in one answer", async () => {
    const { tarball } = await packPlugin({
      publisher: acme,
      kind: "exporter",
      signWith: other.secretKey,
      manifest: { files: { "index.js": "0".repeat(64) } },
      extra: [{ name: "extra.js", content: "x" }, { name: "ln", type: "symlink", linkname: "/" }, { name: "../up", content: "x" }],
    });
    const { view, accepted } = await inspectTarball(tarball, { ...posture, allowlist: ["beta/*"] }, { kind: "hook" });
    expect(accepted).toBeUndefined();
    expect(view.signature_valid).toBe(false);
    expect(view.allowed).toBe(false);
    const unsigned = await tarGz([{ name: "manifest.json", content: (await packPlugin({ publisher: other })).manifest }]);
    expect((await inspectTarball(unsigned, posture)).view.problems.slice(0, 2)).toEqual(['publisher "other" is not trusted (no key in plugins.trusted_keys)', "manifest.sig: missing"]);
    for (const expected of [/^entry "ln": a symlink/, /^entry "\.\.\/up"/, /signature does not verify/, /matches no plugins\.allowlist/, /"index\.js": sha256/, /"extra\.js": not listed/, /kind "exporter"/]) {
      expect({ expected: String(expected), found: view.problems.some((p) => expected.test(p)) }).toEqual({ expected: String(expected), found: true });
    }
  });
});

describe("size bounds", () => {
  test("a tarball over 10 MiB is refused before it is unpacked", async () => {
    const problems = (await inspectTarball(new Uint8Array(MAX_TARBALL_BYTES + 1), posture)).view.problems;
    expect(problems).toEqual([`tarball is ${MAX_TARBALL_BYTES + 1} bytes, over the ${MAX_TARBALL_BYTES}-byte (10 MiB) limit`]);
  });

  test("a gzip bomb (64 KiB that inflates past 50 MiB) stops at the bound", async () => {
    const bomb = await tarGz([{ name: "zeros", content: new Uint8Array(60 * 1024 * 1024) }]);
    expect(bomb.length).toBeLessThan(200 * 1024);
    expect((await inspectTarball(bomb, posture)).view.problems).toEqual(["unpacked size exceeds 52428800 bytes (50 MiB)"]);
  });

  test(`more than ${MAX_FILES} files are refused`, async () => {
    const files = Object.fromEntries(Array.from({ length: MAX_FILES + 1 }, (_, i) => [`f${i}.js`, `${i}`]));
    expect(await problemsOf({ files: { ...files, "index.js": "x" } })).toContain(`more than ${MAX_FILES} files`);
  });
});

describe("bounded answers", () => {
  test("past 100 entry problems the rest are counted, and a long name is cut", async () => {
    const links = Array.from({ length: 150 }, (_, i) => ({ name: `l${i}`, type: "symlink" as const, linkname: "/" }));
    const problems = await problemsOf({ extra: [{ name: `${"x/".repeat(300)}../y`, content: "x" }, ...links] });
    expect(problems).toContain("and 51 more entry problems");
    expect(problems.filter((p) => p.startsWith("entry ")).length).toBe(100);
    expect(Math.max(...problems.map((p) => p.length))).toBeLessThan(400);
  });

  test("reading stops past 2,000 entries", async () => {
    const folders = Array.from({ length: 2001 }, (_, i) => ({ name: `d${i}/`, type: "directory" as const }));
    expect(await problemsOf({ extra: folders })).toContain("more than 2000 entries; the rest were not read");
  });
});

describe("paths, patterns, base64", () => {
  test("entry paths: escapes refused, harmless forms normalised", () => {
    for (const bad of ["../x", "a/../../x", "/abs", "C:/win", "c:x", "a\\..\\b", "", "./", "a\0b"]) expect({ bad, ok: "path" in entryPath(bad) }).toEqual({ bad, ok: false });
    expect(entryPath("./a/b.js")).toEqual({ path: "a/b.js" });
    expect(entryPath("dir/")).toEqual({ path: "dir" });
  });

  test("allowlist: * matches within one segment, never across the slash", () => {
    const p = (allowlist: string[]) => ({ ...posture, allowlist });
    expect(isAllowed(p(["acme/*"]), "acme", "redactor")).toBe(true);
    expect(isAllowed(p(["acme/*"]), "acme-evil", "redactor")).toBe(false);
    expect(isAllowed(p(["*/redact-*"]), "beta", "redact-pii")).toBe(true);
    expect(isAllowed(p(["*/redact-*"]), "beta", "pii")).toBe(false);
    expect(isAllowed(p(["acme/red.ctor"]), "acme", "redXctor")).toBe(false);
    expect(isAllowed(p(["*"]), "acme", "redactor")).toBe(false);
    expect(isAllowed(p([]), "acme", "redactor")).toBe(false);
  });

  test("strict base64: padding, alphabet and a canonical tail", () => {
    expect(strictBase64("aGk=")?.toString()).toBe("hi");
    for (const bad of ["aGk", "aG k=", "aGk=\n", "aGl=", "a===", "aGk-", "aGk_"]) expect({ bad, ok: strictBase64(bad) !== undefined }).toEqual({ bad, ok: false });
  });

  test("the posture from config: dir made absolute, keys decoded", () => {
    const t = trustPosture({ plugins: { dir: "rel/plugins", trusted_keys: { acme: acme.publicHex }, allowlist: ["acme/*"] } } as never);
    expect(t.dir.startsWith("/")).toBe(true);
    expect(Buffer.from(t.keys.get("acme")!).toString("hex")).toBe(acme.publicHex);
  });
});
