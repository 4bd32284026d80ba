// Installed plugins on disk: `<plugins.dir>/<publisher>/<name>/<version>/`, read back whole so the
// same checks as at install run again before anything is imported.
import { fsPromises } from "../store/fs-promises.ts";
import { join } from "node:path";
import { byVersionDescending, SEMVER } from "./names.ts";

export const versionDir = (dir: string, publisher: string, name: string, version: string): string => join(dir, publisher, name, version);

/** Installed versions of `<publisher>/<name>`, highest first; [] when none. */
export async function installedVersions(dir: string, publisher: string, name: string): Promise<string[]> {
  let entries: string[];
  try {
    entries = await fsPromises().readdir(join(dir, publisher, name));
  } catch {
    return [];
  }
  return entries.filter((v) => SEMVER.test(v)).sort(byVersionDescending);
}

/**
 * Every file under an installed version's folder by its relative path; a link, device or other
 * non-regular entry is a problem (nothing an install writes).
 */
export async function readInstalled(folder: string): Promise<{ files: Map<string, Uint8Array>; problems: string[] }> {
  const files = new Map<string, Uint8Array>();
  const problems: string[] = [];
  const walk = async (relative: string): Promise<void> => {
    for (const entry of await fsPromises().readdir(join(folder, relative))) {
      const path = relative === "" ? entry : `${relative}/${entry}`;
      const stat = await fsPromises().lstat(join(folder, path));
      if (stat.isDirectory()) await walk(path);
      else if (stat.isFile()) files.set(path, await fsPromises().readFile(join(folder, path)));
      else problems.push(`${JSON.stringify(path)}: not a regular file`);
    }
  };
  await walk("");
  return { files, problems };
}
