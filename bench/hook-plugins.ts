// The hooks bench/dataplane.ts --hooks measures (issue 17): a no-op gate and a no-op tap as signed
// plugins, installed in a plugins folder as POST /plugins would leave them (the gateway's loader checks
// the signature, the trust posture and every file's hash before importing them), on every pool.
import { mkdirSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import * as ed from "@noble/ed25519";

const PUBLISHER = "bench";
const PLUGINS: Record<string, string> = {
  "noop-gate": `export default { kind: "hook", create() { return { gate: () => ({ verb: "continue" }) }; } };\n`,
  "noop-tap": `export default { kind: "hook", create() { return { tap() {} }; } };\n`,
};

/** Installs both plugins under `<dir>/plugins` and answers the config text that trusts them and puts `hook` on every pool. */
export async function hookConfig(dir: string, hook: "gate" | "tap"): Promise<string> {
  const secretKey = ed.utils.randomSecretKey();
  const publicHex = Buffer.from(await ed.getPublicKeyAsync(secretKey)).toString("hex");
  for (const [name, source] of Object.entries(PLUGINS)) {
    const manifest = JSON.stringify({ name, version: "1.0.0", kind: "hook", entry: "index.js", publisher: PUBLISHER, files: { "index.js": createHash("sha256").update(source).digest("hex") } });
    const folder = join(dir, "plugins", PUBLISHER, name, "1.0.0");
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, "manifest.json"), manifest);
    writeFileSync(join(folder, "manifest.sig"), Buffer.from(await ed.signAsync(new TextEncoder().encode(manifest), secretKey)).toString("base64"));
    writeFileSync(join(folder, "index.js"), source);
  }
  const cfg = hook === "gate" ? `{kind: gate, transport: {kind: plugin, target: ${PUBLISHER}/noop-gate}, global: true}` : `{kind: tap, at: response, transport: {kind: plugin, target: ${PUBLISHER}/noop-tap}, global: true}`;
  return `plugins: {dir: ./plugins, trusted_keys: {${PUBLISHER}: "${publicHex}"}, allowlist: ["${PUBLISHER}/*"]}
hooks:
  bench-${hook}: ${cfg}
`;
}
