// Writing an accepted plugin: into a temp folder inside plugins.dir (same filesystem), then one rename
// into `<publisher>/<name>/<version>/`. A failure removes the temp folder, so nothing is left; an
// identical installed version is left as it is.
import { fsPromises } from "../store/fs-promises.ts";
import { dirname, join } from "node:path";
import { GatewayError } from "../http/errors.ts";
import { MANIFEST } from "./check.ts";
import type { Manifest } from "./manifest.ts";
import { versionDir } from "./installed.ts";

export interface Installed {
  readonly path: string;
  /** False when an identical version was already there. */
  readonly written: boolean;
}

/** The installed version's manifest bytes, or undefined when that version is not installed. */
async function installedManifest(path: string): Promise<Uint8Array | undefined> {
  try {
    return await fsPromises().readFile(join(path, MANIFEST));
  } catch {
    return undefined;
  }
}

/** Identical = the same signed manifest (it pins every file's sha256); a different one is a conflict. */
async function alreadyInstalled(path: string, manifestBytes: Uint8Array): Promise<boolean> {
  const existing = await installedManifest(path);
  if (existing === undefined) return false;
  if (Buffer.compare(Buffer.from(existing), Buffer.from(manifestBytes)) === 0) return true;
  throw new GatewayError("conflict", `${path} already holds a different plugin of the same version; remove it first or publish a new version`);
}

export async function installPlugin(dir: string, manifest: Manifest, files: ReadonlyMap<string, Uint8Array>): Promise<Installed> {
  const path = versionDir(dir, manifest.publisher, manifest.name, manifest.version);
  const manifestBytes = files.get(MANIFEST)!;
  if (await alreadyInstalled(path, manifestBytes)) return { path, written: false };
  await fsPromises().mkdir(dirname(path), { recursive: true });
  const temp = join(dir, `.install-${Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString("hex")}`);
  try {
    for (const [relative, bytes] of files) {
      const target = join(temp, relative);
      await fsPromises().mkdir(dirname(target), { recursive: true });
      await fsPromises().writeFile(target, bytes, { mode: 0o644 });
    }
    try {
      await fsPromises().rename(temp, path);
    } catch (error) {
      // Another install of the same version got there first.
      if (await alreadyInstalled(path, manifestBytes)) return { path, written: false };
      throw error;
    }
    return { path, written: true };
  } finally {
    await fsPromises().rm(temp, { recursive: true, force: true });
  }
}
