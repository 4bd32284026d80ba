// Every check a plugin's contents must pass, on a tarball's files (inspect, install, fetch) or on an
// installed folder's (the loader re-checks before import): all run, all reported.
import { entryPath } from "./tarball.ts";
import { parseManifest, type Manifest } from "./manifest.ts";
import { decodeSignature, isAllowed, signatureValid, type TrustPosture } from "./trust.ts";

export const MANIFEST = "manifest.json";
export const SIGNATURE = "manifest.sig";

// Bun's hasher, not node:crypto: the bundle hoists a builtin's import, and node:crypto cost every start ~1.7 ms.
export const sha256 = (bytes: Uint8Array): string => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

export interface FileView {
  readonly path: string;
  readonly sha256: string;
  readonly size: number;
}

export interface CheckedContents {
  readonly manifest: Manifest | undefined;
  readonly signatureValid: boolean;
  readonly allowed: boolean;
  readonly files: readonly FileView[];
  readonly problems: readonly string[];
}

export interface Expectations {
  /** The kind where the plugin is used (a hook loads `hook`); absent: any kind. */
  readonly kind?: Manifest["kind"];
  /** What a fetch entry or a reference named: the manifest must say the same. */
  readonly publisher?: string;
  readonly name?: string;
  readonly version?: string;
}

/** The publisher's trust and the signature, each reported on its own. */
async function signatureProblems(manifest: Manifest, files: ReadonlyMap<string, Uint8Array>, posture: TrustPosture): Promise<string[]> {
  const key = posture.keys.get(manifest.publisher);
  const sig = files.get(SIGNATURE);
  const signature = sig === undefined ? undefined : decodeSignature(new TextDecoder().decode(sig));
  const problems: string[] = [];
  if (key === undefined) problems.push(`publisher ${JSON.stringify(manifest.publisher)} is not trusted (no key in plugins.trusted_keys)`);
  if (sig === undefined) problems.push(`${SIGNATURE}: missing`);
  else if (signature === undefined) problems.push(`${SIGNATURE}: not the base64 of a 64-byte ed25519 signature`);
  else if (key !== undefined && !(await signatureValid(key, signature, files.get(MANIFEST)!))) problems.push(`${SIGNATURE}: the signature does not verify under plugins.trusted_keys.${manifest.publisher}`);
  return problems;
}

function fileProblems(manifest: Manifest, files: ReadonlyMap<string, Uint8Array>): string[] {
  const problems: string[] = [];
  for (const [path, expected] of Object.entries(manifest.files)) {
    const where = entryPath(path);
    if ("problem" in where || where.path !== path || path === MANIFEST || path === SIGNATURE) {
      problems.push(`manifest.json files: ${JSON.stringify(path)} is not a plain path inside the plugin folder`);
      continue;
    }
    const bytes = files.get(path);
    if (bytes === undefined) problems.push(`file ${JSON.stringify(path)}: listed in the manifest but missing`);
    else if (sha256(bytes) !== expected) problems.push(`file ${JSON.stringify(path)}: sha256 does not match the manifest`);
  }
  for (const path of files.keys()) {
    if (path !== MANIFEST && path !== SIGNATURE && !Object.hasOwn(manifest.files, path)) problems.push(`file ${JSON.stringify(path)}: not listed in the manifest`);
  }
  if (!Object.hasOwn(manifest.files, manifest.entry)) problems.push(`entry ${JSON.stringify(manifest.entry)}: not a file listed in the manifest`);
  return problems;
}

function expectationProblems(manifest: Manifest, expect: Expectations): string[] {
  const problems: string[] = [];
  if (expect.kind !== undefined && manifest.kind !== expect.kind) problems.push(`kind ${JSON.stringify(manifest.kind)}: a ${expect.kind} plugin is needed here`);
  for (const member of ["publisher", "name", "version"] as const) {
    const wanted = expect[member];
    if (wanted !== undefined && manifest[member] !== wanted) problems.push(`manifest ${member} ${JSON.stringify(manifest[member])}: expected ${JSON.stringify(wanted)}`);
  }
  return problems;
}

export async function checkContents(files: ReadonlyMap<string, Uint8Array>, posture: TrustPosture, expect: Expectations = {}): Promise<CheckedContents> {
  const views = [...files].filter(([path]) => path !== MANIFEST && path !== SIGNATURE).map(([path, bytes]) => ({ path, sha256: sha256(bytes), size: bytes.length }));
  const bytes = files.get(MANIFEST);
  if (bytes === undefined) return { manifest: undefined, signatureValid: false, allowed: false, files: views, problems: [`${MANIFEST}: missing`] };
  const parsed = parseManifest(bytes);
  if (!parsed.ok) return { manifest: undefined, signatureValid: false, allowed: false, files: views, problems: parsed.problems };
  const { manifest } = parsed;
  const signature = await signatureProblems(manifest, files, posture);
  const allowed = isAllowed(posture, manifest.publisher, manifest.name);
  const problems = [
    ...signature,
    ...(allowed ? [] : [`${manifest.publisher}/${manifest.name} matches no plugins.allowlist pattern`]),
    ...fileProblems(manifest, files),
    ...expectationProblems(manifest, expect),
  ];
  return { manifest, signatureValid: signature.length === 0, allowed, files: views, problems };
}
