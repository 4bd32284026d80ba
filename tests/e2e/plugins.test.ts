// Signed plugins on the built binary: the signing recipe of docs/operations.md run as printed (OpenSSL),
// its tarball fetched at boot from a local registry and not fetched again on restart, bad fetches that
// stop the boot naming every failed check, POST /plugins/inspect and POST /plugins on tarballs built and
// signed by the test (every failure a 400 naming each, nothing written, audited), and an installed hook
// plugin imported by the loader compiled the way the gateway is (scripts/compile.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compile } from "../../scripts/compile.ts";
import { blocksUnder } from "../support/doc-blocks.ts";
import { baseEnv, json, LISTEN_ANY, ROOT, runGateway, startGateway, tempDir, type RunningGateway } from "../support/gateway.ts";
import { HOOK_SOURCE, newPublisher, packPlugin, type PluginSpec, type Publisher } from "../support/plugins.ts";

const ENV = { GW_ADMIN: "e2e-plugins-admin-5d1c", GW_ADMIN_RO: "e2e-plugins-ro-77a0" };
const [postureBlock] = blocksUnder(ROOT, "docs/operations.md", "Plugins and the trust posture");
const [signBlock, installBlock] = blocksUnder(ROOT, "docs/operations.md", "Signing a plugin");
const DOC_KEY = "3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29";

const work = tempDir("gw-plugin-recipe-");
let acme: Publisher;
let other: Publisher;
const served = new Map<string, Uint8Array>();
const hits = new Map<string, number>();
const registry = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch(request) {
    const path = new URL(request.url).pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const body = served.get(path);
    return body ? new Response(body) : new Response("no such plugin", { status: 404 });
  },
});
const registryUrl = `http://127.0.0.1:${registry.port}`;

const run = async (script: string, cwd: string, env: Record<string, string> = {}) => {
  const proc = Bun.spawn(["sh", "-c", script], { cwd, env: baseEnv(env), stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
};

function configWith(posture: string): string {
  return `${LISTEN_ANY}providers: {local: {protocol: mock}}
models: {mock-1: {provider: local}}
auth:
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}, {token: {env: GW_ADMIN_RO}, scope: read-only}]
${posture}`;
}
let config: string;

let gw: RunningGateway;
beforeAll(async () => {
  // The publisher's recipe, as printed, on a hook module of the test's.
  writeFileSync(join(work, "index.js"), HOOK_SOURCE);
  const signed = await run(signBlock!.text, work);
  expect({ code: signed.code, stderr: signed.stderr }).toEqual({ code: 0, stderr: "" });
  const publicHex = readFileSync(join(work, "acme.pub.hex"), "utf8");
  expect(publicHex).toMatch(/^[0-9a-f]{64}$/);
  // The same key signs the test's own tarballs: the seed is the PKCS#8 key's last 32 bytes.
  const pem = readFileSync(join(work, "acme-signing.pem"), "utf8").replace(/-----[^-]+-----|\s/g, "");
  acme = { name: "acme", secretKey: new Uint8Array(Buffer.from(pem, "base64").subarray(-32)), publicHex };
  other = await newPublisher("other");
  served.set("/acme/redactor/1.0.0.tar.gz", readFileSync(join(work, "acme-redactor-1.0.0.tar.gz")));
  expect(postureBlock!.text).toContain(DOC_KEY);
  config = configWith(postureBlock!.text.replace(DOC_KEY, publicHex).replace("https://plugins.example.com", registryUrl));
  gw = await startGateway(config, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
  void registry.stop(true);
});

const admin = (path: string, body: unknown, token = ENV.GW_ADMIN) =>
  fetch(`${gw.admin}${path}`, { method: "POST", headers: { "x-admin-token": token, "content-type": "application/json" }, body: JSON.stringify(body) });
const bodyOf = (tarball: Uint8Array, file = "plugin.tar.gz") => ({ file, tarball_b64: Buffer.from(tarball).toString("base64") });
const pack = async (spec: Partial<PluginSpec>) => (await packPlugin({ publisher: acme, ...spec })).tarball;
const pluginsDir = () => join(gw.dir, "plugins");

describe("the recipe and plugins.fetch", () => {
  test("the recipe's tarball was fetched at boot, checked and installed", () => {
    expect(hits.get("/acme/redactor/1.0.0.tar.gz")).toBe(1);
    expect(readdirSync(join(pluginsDir(), "acme/redactor/1.0.0")).sort()).toEqual(["index.js", "manifest.json", "manifest.sig"]);
    expect(gw.logs.some((l) => l.includes("plugin fetched and installed") && l.includes("acme/redactor@1.0.0"))).toBe(true);
  });

  test("the install recipe, as printed, answers 201 for the identical version already there", async () => {
    const installed = await run(installBlock!.text.replaceAll("127.0.0.1:8081", new URL(gw.admin).host), work, { GW_ADMIN: ENV.GW_ADMIN });
    expect(installed.code).toBe(0);
    const view = JSON.parse(installed.stdout);
    expect(view).toMatchObject({ name: "redactor", version: "1.0.0", publisher: "acme", kind: "hook", signature_valid: true, allowed: true, problems: [], installed: true });
    expect(view.path).toEndWith("plugins/acme/redactor/1.0.0");
  });

  test("a fetch that fails a check, or is not there, stops the boot naming the entry and every failure; nothing is written", async () => {
    served.set("/acme/tampered/1.0.0.tar.gz", await pack({ name: "tampered", signWith: other.secretKey, manifest: { files: { "index.js": "0".repeat(64) } } }));
    served.set("/acme/renamed/1.0.0.tar.gz", await pack({ name: "other-name" }));
    served.set("/acme/huge/1.0.0.tar.gz", new Uint8Array(10 * 1024 * 1024 + 1));
    for (const [entry, expected] of [
      ["acme/tampered@1.0.0", ["plugins.fetch acme/tampered@1.0.0:", "signature does not verify", 'file \\"index.js\\": sha256 does not match']],
      ["acme/renamed@1.0.0", ['manifest name \\"other-name\\": expected \\"renamed\\"']],
      ["acme/absent@1.0.0", ["plugins.fetch acme/absent@1.0.0:", "answered 404"]],
      ["acme/huge@1.0.0", ["plugins.fetch acme/huge@1.0.0:", "over the 10485760-byte (10 MiB) limit"]],
    ] as const) {
      const dir = tempDir("gw-plugin-boot-");
      writeFileSync(join(dir, "gateway.yaml"), configWith(`plugins: {dir: ./plugins, trusted_keys: {acme: ${acme.publicHex}}, allowlist: ["acme/*"], fetch: [${entry}], registry_url: "${registryUrl}"}\n`));
      const booted = await runGateway(["--config", "gateway.yaml"], { cwd: dir, env: ENV });
      expect(booted.code).toBe(1);
      expect(booted.stderr).toContain("plugin fetch failed; not starting");
      for (const text of expected) expect(booted.stderr).toContain(text);
      expect(existsSync(join(dir, "plugins", "acme", entry.split("/")[1]!.split("@")[0]!))).toBe(false);
    }
  });
});

describe("POST /plugins/inspect", () => {
  test("answers the view and writes nothing; open to read-only scope", async () => {
    for (const token of [ENV.GW_ADMIN, ENV.GW_ADMIN_RO]) {
      const response = await admin("/plugins/inspect", bodyOf(await pack({ name: "inspected" })), token);
      expect(response.status).toBe(200);
      const view = await json(response);
      expect(view).toMatchObject({ name: "inspected", version: "1.0.0", kind: "hook", publisher: "acme", signature_valid: true, allowed: true, problems: [] });
      expect(view.files).toEqual([{ path: "index.js", sha256: expect.stringMatching(/^[0-9a-f]{64}$/), size: HOOK_SOURCE.length }]);
    }
    expect(existsSync(join(pluginsDir(), "acme/inspected"))).toBe(false);
  });

  test("a bad tarball is 200 with every problem listed", async () => {
    const view = await json(await admin("/plugins/inspect", bodyOf(await pack({ name: "bad", signWith: other.secretKey, extra: [{ name: "ln", type: "symlink", linkname: "/etc" }] }))));
    expect(view.signature_valid).toBe(false);
    expect(view.problems).toEqual(expect.arrayContaining([expect.stringContaining('entry "ln": a symlink'), expect.stringContaining("signature does not verify")]));
  });
});

describe("POST /plugins", () => {
  test("installs a good plugin: 201 with the view, installed and path, audited plugin.install", async () => {
    const response = await admin("/plugins", bodyOf(await pack({ name: "admin-one", version: "2.0.0" })));
    expect(response.status).toBe(201);
    const view = await json(response);
    expect(view).toMatchObject({ name: "admin-one", version: "2.0.0", installed: true, problems: [] });
    expect(readdirSync(view.path).sort()).toEqual(["index.js", "manifest.json", "manifest.sig"]);
    const audit = await json(await fetch(`${gw.admin}/audit?limit=20`, { headers: { "x-admin-token": ENV.GW_ADMIN } }));
    expect(audit.items).toEqual(expect.arrayContaining([expect.objectContaining({ action: "plugin.install", resource: "plugin:acme/admin-one@2.0.0", outcome: "applied" })]));
    // The same version again: identical is left as it is; different content is a conflict.
    expect((await admin("/plugins", bodyOf(await pack({ name: "admin-one", version: "2.0.0" })))).status).toBe(201);
    const clash = await admin("/plugins", bodyOf(await pack({ name: "admin-one", version: "2.0.0", files: { "index.js": "export default {}" } })));
    expect(clash.status).toBe(409);
    expect((await json(clash)).error.message).toContain("already holds a different plugin of the same version");
    expect(readFileSync(join(view.path, "index.js"), "utf8")).toBe(HOOK_SOURCE);
  });

  test("every failed check is a 400 naming each, nothing is written, the attempt is audited", async () => {
    const tarball = await pack({
      name: "refused",
      kind: "exporter",
      signWith: other.secretKey,
      manifest: { files: { "index.js": "0".repeat(64) } },
      extra: [{ name: "../../escape.js", content: "x" }, { name: "hard", type: "link", linkname: "index.js" }, { name: "dev", type: "character-device" }],
    });
    const response = await admin("/plugins", bodyOf(tarball));
    expect(response.status).toBe(400);
    const { error } = await json(response);
    expect(error.code).toBe("invalid_request");
    for (const text of ["signature does not verify", 'file "index.js": sha256 does not match', 'entry "../../escape.js": a ".." segment escapes', 'entry "hard": a link entry', 'entry "dev": a character-device entry']) expect(error.message).toContain(text);
    expect(existsSync(join(pluginsDir(), "acme/refused"))).toBe(false);
    expect(existsSync(join(gw.dir, "escape.js"))).toBe(false);
    expect(readdirSync(pluginsDir()).filter((n) => n.startsWith("."))).toEqual([]);
    const notAllowed = await admin("/plugins", bodyOf(await packPlugin({ publisher: other }).then((p) => p.tarball)));
    expect((await json(notAllowed)).error.message).toContain('publisher "other" is not trusted');
    const audit = await json(await fetch(`${gw.admin}/audit?limit=20`, { headers: { "x-admin-token": ENV.GW_ADMIN } }));
    expect(audit.items).toEqual(expect.arrayContaining([expect.objectContaining({ action: "plugin.install", resource: "plugin:acme/refused@1.0.0", outcome: "rejected" })]));
  });

  test("a body that is not a bare .tar.gz name and strict base64 is a 400; read-only scope is a 403; each attempt is audited plugin.install", async () => {
    const good = bodyOf(await pack({ name: "scoped" }));
    expect((await json(await admin("/plugins", { ...good, file: "../x.tar.gz" }))).error.message).toContain("/file");
    expect((await json(await admin("/plugins", { ...good, file: "x.zip" }))).error.message).toContain("/file");
    const wrapped = { ...good, tarball_b64: good.tarball_b64.replace(/(.{76})/g, "$1\n") };
    expect((await json(await admin("/plugins", wrapped))).error.message).toContain("/tarball_b64: not strict base64");
    expect((await json(await admin("/plugins", { file: "x.tar.gz" }))).error.message).toContain("tarball_b64");
    expect((await admin("/plugins", good, ENV.GW_ADMIN_RO)).status).toBe(403);
    const notJson = await fetch(`${gw.admin}/plugins`, { method: "POST", headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json" }, body: "{not json" });
    expect(notJson.status).toBe(400);
    const audit = await json(await fetch(`${gw.admin}/audit?limit=5`, { headers: { "x-admin-token": ENV.GW_ADMIN } }));
    // Refused by scope, or before the handler ran: still a plugin.install attempt.
    expect(audit.items.slice(0, 2).map((e: { action: string; outcome: string }) => `${e.action} ${e.outcome}`)).toEqual(["plugin.install rejected", "plugin.install rejected"]);
    expect(existsSync(join(pluginsDir(), "acme/scoped"))).toBe(false);
  });
});

describe("the hook module loader, compiled", () => {
  test("imports an installed hook plugin's entry and refuses it once a file is changed", async () => {
    const outfile = join(tempDir("gw-plugin-harness-"), "load-hook-plugin");
    expect(await compile({ outfile, commit: "test", entrypoint: join(ROOT, "tests/support/load-hook-plugin.ts") })).toEqual([]);
    const load = async (ref: string) => {
      const proc = Bun.spawn([outfile, pluginsDir(), "acme", acme.publicHex, ref], { env: baseEnv(), stdout: "pipe", stderr: "pipe" });
      const [stdout] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
      return JSON.parse(stdout);
    };
    expect(await load("acme/redactor")).toEqual({ ok: true, kind: "hook", decision: { verb: "continue" } });
    expect(await load("acme/admin-one@2.0.0")).toEqual({ ok: true, kind: "hook", decision: { verb: "continue" } });
    writeFileSync(join(pluginsDir(), "acme/admin-one/2.0.0/index.js"), 'export default { kind: "hook", create: () => ({ gate: () => ({ verb: "reject", status: 403, message: "x" }) }) };');
    const refused = await load("acme/admin-one");
    expect(refused.ok).toBe(false);
    expect(refused.error).toContain('file "index.js": sha256 does not match');
  }, 60_000);
});

describe("restart", () => {
  test("an installed identical version is not fetched again", async () => {
    await gw.stop();
    gw = await startGateway(config, { env: ENV, dir: gw.dir });
    expect(hits.get("/acme/redactor/1.0.0.tar.gz")).toBe(1);
    expect(gw.logs.some((l) => l.includes("plugin already installed") && l.includes("acme/redactor@1.0.0"))).toBe(true);
  });
});
