// Signed plugin tarballs built by the tests: packed with tar-stream, signed with @noble/ed25519, the
// way a publisher would (docs/operations.md, "Plugins and the trust posture").
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as ed from "@noble/ed25519";
import * as tar from "tar-stream";

export interface Publisher {
  readonly name: string;
  readonly secretKey: Uint8Array;
  /** What plugins.trusted_keys holds. */
  readonly publicHex: string;
}

export async function newPublisher(name = "acme"): Promise<Publisher> {
  const secretKey = ed.utils.randomSecretKey();
  return { name, secretKey, publicHex: Buffer.from(await ed.getPublicKeyAsync(secretKey)).toString("hex") };
}

export type TarEntry = { name: string; content?: string | Uint8Array; type?: tar.Header["type"]; linkname?: string };

/** Any entries, gzipped: also the malformed ones a check must refuse. */
export async function tarGz(entries: readonly TarEntry[]): Promise<Uint8Array> {
  const pack = tar.pack();
  const done = new Response(pack as unknown as ReadableStream).arrayBuffer();
  for (const entry of entries) {
    const body = entry.content === undefined ? undefined : Buffer.from(entry.content);
    await new Promise<void>((resolve, reject) =>
      pack.entry({ name: entry.name, type: entry.type ?? "file", linkname: entry.linkname, size: body?.length ?? 0 }, body ?? Buffer.alloc(0), (error) => (error ? reject(error) : resolve())),
    );
  }
  pack.finalize();
  return Bun.gzipSync(new Uint8Array(await done));
}

export const sha256 = (bytes: string | Uint8Array): string => createHash("sha256").update(bytes).digest("hex");

/** A hook module whose gate answers `decision` and whose create records its settings' keys. */
export const HOOK_SOURCE = `export default {
  kind: "hook",
  settingsSchema: { type: "object" },
  create(settings) {
    return { gate: () => ({ verb: "continue" }), status: () => ({ settings_keys: Object.keys(settings), settings_version: 1 }) };
  },
};
`;

export interface PluginSpec {
  readonly publisher: Publisher;
  readonly name?: string;
  readonly version?: string;
  readonly kind?: string;
  readonly entry?: string;
  /** Listed in the manifest with their hashes; default: index.js = HOOK_SOURCE. */
  readonly files?: Readonly<Record<string, string>>;
  /** Replaces manifest members after the hashes are computed (a wrong hash, a missing member). */
  readonly manifest?: Readonly<Record<string, unknown>>;
  /** Entries added to the tarball unlisted (an extra file, a symlink). */
  readonly extra?: readonly TarEntry[];
  /** Signs with this key instead of the publisher's. */
  readonly signWith?: Uint8Array;
  /** Replaces manifest.sig's text. */
  readonly sig?: string;
}

export async function signManifest(manifest: Uint8Array, secretKey: Uint8Array): Promise<string> {
  return Buffer.from(await ed.signAsync(manifest, secretKey)).toString("base64");
}

/** The manifest bytes, its signature and the files, as a tarball or an installed folder holds them. */
async function signed(spec: PluginSpec): Promise<{ manifest: Uint8Array; sig: string; files: Readonly<Record<string, string>>; name: string; version: string }> {
  const files = spec.files ?? { "index.js": HOOK_SOURCE };
  const manifestObject = {
    name: spec.name ?? "redactor",
    version: spec.version ?? "1.0.0",
    kind: spec.kind ?? "hook",
    entry: spec.entry ?? "index.js",
    publisher: spec.publisher.name,
    files: Object.fromEntries(Object.entries(files).map(([path, text]) => [path, sha256(text)])),
    ...spec.manifest,
  };
  const manifest = new TextEncoder().encode(JSON.stringify(manifestObject, null, 2));
  const sig = spec.sig ?? (await signManifest(manifest, spec.signWith ?? spec.publisher.secretKey));
  return { manifest, sig, files, name: manifestObject.name, version: manifestObject.version };
}

/** The manifest bytes and the tarball. */
export async function packPlugin(spec: PluginSpec): Promise<{ tarball: Uint8Array; manifest: Uint8Array }> {
  const { manifest, sig, files } = await signed(spec);
  const tarball = await tarGz([
    { name: "manifest.json", content: manifest },
    { name: "manifest.sig", content: sig },
    ...Object.entries(files).map(([name, content]) => ({ name, content })),
    ...(spec.extra ?? []),
  ]);
  return { tarball, manifest };
}

/** Writes a signed plugin as POST /plugins leaves it: `<pluginsDir>/<publisher>/<name>/<version>/`. */
export async function writeInstalled(pluginsDir: string, spec: PluginSpec): Promise<void> {
  const { manifest, sig, files, name, version } = await signed(spec);
  const folder = join(pluginsDir, spec.publisher.name, String(name), String(version));
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, "manifest.json"), manifest);
  writeFileSync(join(folder, "manifest.sig"), sig);
  for (const [path, text] of Object.entries(files)) writeFileSync(join(folder, path), text);
}

/** The `plugins:` section trusting `publisher` for every plugin of its own, installed under ./plugins. */
export const trustingPosture = (publisher: Publisher): string => `plugins: {dir: ./plugins, trusted_keys: {${publisher.name}: "${publisher.publicHex}"}, allowlist: ["${publisher.name}/*"]}\n`;
