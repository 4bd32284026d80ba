// Installing into plugins.dir (temp folder, then rename; nothing left by a failure; an identical version
// not rewritten) and the hook module loader's re-checks against the trust posture running at load time.
import { beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { inspectTarball, installPlugin, loadHookModule, PluginLoadError, type TrustPosture } from "../../src/plugins/index.ts";
import { fetchPlugins, PluginFetchError } from "../../src/plugins/fetch.ts";
import { tempDir } from "../support/gateway.ts";
import { newPublisher, packPlugin, type PluginSpec, type Publisher } from "../support/plugins.ts";

let acme: Publisher;
beforeAll(async () => {
  acme = await newPublisher("acme");
});
const postureIn = (dir: string): TrustPosture => ({ dir, keys: new Map([["acme", Buffer.from(acme.publicHex, "hex")]]), allowlist: ["acme/*"] });

async function install(dir: string, spec: Partial<PluginSpec> = {}) {
  const inspected = await inspectTarball((await packPlugin({ publisher: acme, ...spec })).tarball, postureIn(dir));
  expect(inspected.view.problems).toEqual([]);
  return installPlugin(dir, inspected.accepted!.manifest, inspected.accepted!.files);
}

describe("install", () => {
  test("writes <dir>/<publisher>/<name>/<version>/ with the manifest, signature and files, and no temp folder", async () => {
    const dir = tempDir("gw-plugins-");
    const installed = await install(dir, { files: { "index.js": "export default {}", "lib/a.js": "a" }, entry: "index.js" });
    expect(installed).toEqual({ path: join(dir, "acme/redactor/1.0.0"), written: true });
    expect(readdirSync(installed.path).sort()).toEqual(["index.js", "lib", "manifest.json", "manifest.sig"]);
    expect(readdirSync(dir)).toEqual(["acme"]);
  });

  test("an identical version is not rewritten; a different one of the same version is a conflict", async () => {
    const dir = tempDir("gw-plugins-");
    const first = await install(dir);
    const before = statSync(join(first.path, "index.js")).mtimeMs;
    await Bun.sleep(5);
    expect(await install(dir)).toEqual({ path: first.path, written: false });
    expect(statSync(join(first.path, "index.js")).mtimeMs).toBe(before);
    await expect(install(dir, { files: { "index.js": "export default { changed: true }" } })).rejects.toThrow(/already holds a different plugin of the same version/);
    expect(readdirSync(dir)).toEqual(["acme"]);
  });

  test("a failed write leaves nothing behind", async () => {
    const dir = tempDir("gw-plugins-");
    writeFileSync(join(dir, "acme"), "a file where the publisher folder would go");
    await expect(install(dir)).rejects.toThrow();
    expect(readdirSync(dir)).toEqual(["acme"]);
    const readOnly = tempDir("gw-plugins-");
    mkdirSync(join(readOnly, "acme/redactor"), { recursive: true });
    chmodSync(readOnly, 0o555);
    try {
      if (process.getuid?.() !== 0) await expect(install(readOnly)).rejects.toThrow();
      expect(readdirSync(readOnly)).toEqual(["acme"]);
      expect(readdirSync(join(readOnly, "acme/redactor"))).toEqual([]);
    } finally {
      chmodSync(readOnly, 0o755);
    }
  });
});

describe("the hook module loader", () => {
  test("imports the highest installed version, or the pinned one, and checks its default export", async () => {
    const dir = tempDir("gw-plugins-");
    await install(dir, { version: "1.2.0", files: { "index.js": 'export default { kind: "hook", create: () => ({ tag: "1.2.0" }) };' } });
    await install(dir, { version: "1.10.0", files: { "index.js": 'import { tag } from "./lib/tag.js";\nexport default { kind: "hook", create: () => ({ tag }) };', "lib/tag.js": 'export const tag = "1.10.0";' } });
    const latest = await loadHookModule("acme/redactor", postureIn(dir));
    expect(latest.kind).toBe("hook");
    expect(await latest.create({}, { name: "h", log: () => {} })).toEqual({ tag: "1.10.0" } as never);
    const pinned = await loadHookModule("acme/redactor@1.2.0", postureIn(dir));
    expect(await pinned.create({}, { name: "h", log: () => {} })).toEqual({ tag: "1.2.0" } as never);
  });

  test("refuses what the trust posture running now refuses, naming it", async () => {
    const dir = tempDir("gw-plugins-");
    const installed = await install(dir);
    const posture = postureIn(dir);
    await expect(loadHookModule("acme/redactor", { ...posture, keys: new Map() })).rejects.toThrow(/publisher "acme" is not trusted/);
    await expect(loadHookModule("acme/redactor", { ...posture, allowlist: [] })).rejects.toThrow(/matches no plugins\.allowlist pattern/);
    await expect(loadHookModule("acme/missing", posture)).rejects.toThrow(/plugin acme\/missing: not installed/);
    await expect(loadHookModule("acme/redactor@2.0.0", posture)).rejects.toThrow(/not installed/);
    await expect(loadHookModule("../etc", posture)).rejects.toThrow(PluginLoadError);
    writeFileSync(join(installed.path, "index.js"), 'export default { kind: "hook", create: () => ({ evil: true }) };');
    await expect(loadHookModule("acme/redactor", posture)).rejects.toThrow(/file "index\.js": sha256 does not match/);
  });

  test("a file added or linked in after the install is refused", async () => {
    const dir = tempDir("gw-plugins-");
    const added = await install(dir);
    writeFileSync(join(added.path, "extra.js"), "x");
    await expect(loadHookModule("acme/redactor", postureIn(dir))).rejects.toThrow(/"extra\.js": not listed/);
    const linked = tempDir("gw-plugins-");
    const other = await install(linked);
    symlinkSync("/etc/passwd", join(other.path, "passwd"));
    await expect(loadHookModule("acme/redactor", postureIn(linked))).rejects.toThrow(/"passwd": not a regular file/);
  });

  test("the wrong kind, a default export that is not a hook, and a module that throws at import", async () => {
    const dir = tempDir("gw-plugins-");
    await install(dir, { name: "auth-thing", kind: "auth" });
    await expect(loadHookModule("acme/auth-thing", postureIn(dir))).rejects.toThrow(/kind "auth": a hook plugin is needed here/);
    await install(dir, { name: "not-hook", files: { "index.js": 'export default { kind: "exporter", create() {} };' } });
    await expect(loadHookModule("acme/not-hook", postureIn(dir))).rejects.toThrow(/default export has kind "exporter", not "hook"/);
    await install(dir, { name: "thrower", files: { "index.js": 'throw new Error("boom at import");' } });
    await expect(loadHookModule("acme/thrower", postureIn(dir))).rejects.toThrow(/importing index\.js failed: boom at import/);
    expect(existsSync(join(dir, "acme/thrower/1.0.0/index.js"))).toBe(true);
  });
});

describe("plugins.fetch", () => {
  test("a write that fails is a named refusal, not a crash, and leaves nothing", async () => {
    const { tarball } = await packPlugin({ publisher: acme });
    const registry = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(tarball) });
    try {
      const dir = tempDir("gw-plugins-");
      writeFileSync(join(dir, "acme"), "a file where the publisher folder would go");
      const config = { plugins: { dir, trusted_keys: { acme: acme.publicHex }, allowlist: ["acme/*"], fetch: ["acme/redactor@1.0.0"], registry_url: `http://127.0.0.1:${registry.port}` } };
      const refused = await fetchPlugins(config as never).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(PluginFetchError);
      expect((refused as Error).message).toStartWith(`plugins.fetch acme/redactor@1.0.0: could not install under ${dir}`);
      expect(readdirSync(dir)).toEqual(["acme"]);
    } finally {
      void registry.stop(true);
    }
  });

  test("a registry that holds the answer past the deadline is a named refusal", async () => {
    const { tarball } = await packPlugin({ publisher: acme });
    const registry = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => new Response(new ReadableStream({ start: (c) => c.enqueue(tarball.subarray(0, 10)) }), { headers: { "content-length": String(tarball.length) } }),
    });
    try {
      const config = { plugins: { dir: tempDir("gw-plugins-"), trusted_keys: { acme: acme.publicHex }, allowlist: ["acme/*"], fetch: ["acme/redactor@1.0.0"], registry_url: `http://127.0.0.1:${registry.port}/` } };
      const refused = await fetchPlugins(config as never, 300).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(PluginFetchError);
      expect((refused as Error).message).toBe(`plugins.fetch acme/redactor@1.0.0: http://127.0.0.1:${registry.port}/acme/redactor/1.0.0.tar.gz did not answer within 300 ms`);
    } finally {
      void registry.stop(true);
    }
  });
});
