// A plugin tarball read whole in memory, entry by entry (tar-stream), before anything touches the disk.
// Every problem is collected, not just the first: the operator fixes them in one round.
import type * as Zlib from "node:zlib";
import * as tar from "tar-stream";
import { zlib } from "../transport/zlib.ts";

export const MAX_TARBALL_BYTES = 10 * 1024 * 1024;
/** The uncompressed tar, headers included: gunzip itself stops here, so a gzip bomb never inflates past it. */
export const MAX_UNPACKED_BYTES = 50 * 1024 * 1024;
export const MAX_FILES = 1000;

function gunzipAsync(tarball: Uint8Array, options: Zlib.ZlibOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => zlib().gunzip(tarball, options, (error, unpacked) => (error ? reject(error) : resolve(unpacked))));
}

export interface TarContents {
  /** Regular files by their normalised path (no leading `./`). */
  readonly files: ReadonlyMap<string, Uint8Array>;
  readonly problems: readonly string[];
  /** False when the bytes are not a gzipped tar within the bounds: nothing inside was looked at. */
  readonly readable: boolean;
}

/** The entry's path inside the plugin folder, or why it may not be one. */
export function entryPath(raw: string, folder = false): { path: string } | { problem: string } {
  const quoted = shown(raw);
  if (raw.includes("\0")) return { problem: `${quoted}: a NUL in the path` };
  if (raw.includes("\\")) return { problem: `${quoted}: a backslash in the path (escapes the plugin folder on Windows)` };
  if (raw.startsWith("/")) return { problem: `${quoted}: an absolute path escapes the plugin folder` };
  if (/^[A-Za-z]:/.test(raw)) return { problem: `${quoted}: a drive letter escapes the plugin folder` };
  const segments = raw.split("/").filter((s) => s !== "" && s !== ".");
  if (segments.includes("..")) return { problem: `${quoted}: a ".." segment escapes the plugin folder` };
  // `./` is the plugin folder itself: harmless as a folder entry (tar czf . writes one).
  if (segments.length === 0) return folder && raw !== "" ? { path: "" } : { problem: `${quoted}: an empty path` };
  return { path: segments.join("/") };
}

async function unpack(tarball: Uint8Array): Promise<Buffer | string> {
  try {
    return await gunzipAsync(tarball, { maxOutputLength: MAX_UNPACKED_BYTES });
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") return `unpacked size exceeds ${MAX_UNPACKED_BYTES} bytes (50 MiB)`;
    return "not a gzip file";
  }
}

/** Entries of any kind (folders too) read before giving up: bounds the work and the problems listed. */
const MAX_ENTRIES = 2 * MAX_FILES;
/** Problems listed one by one; past this, a count. */
const MAX_LISTED = 100;

/** A tarball's name for a message: quoted, and cut (a pax name has no length limit). */
export const shown = (name: string): string => JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}...` : name);

/** The problem with one entry, if any. */
function entryProblem(name: string, type: string | null | undefined, where: ReturnType<typeof entryPath>, files: ReadonlyMap<string, Uint8Array>): string | undefined {
  if ("problem" in where) return `entry ${where.problem}`;
  if (type !== "file" && type !== "directory") return `entry ${shown(name)}: a ${type ?? "unknown"} entry (only regular files and folders are allowed)`;
  if (type === "file" && files.has(where.path)) return `entry ${shown(name)}: appears twice`;
  return undefined;
}

export async function readTarball(tarball: Uint8Array): Promise<TarContents> {
  const files = new Map<string, Uint8Array>();
  const problems: string[] = [];
  if (tarball.length > MAX_TARBALL_BYTES) return { files, readable: false, problems: [`tarball is ${tarball.length} bytes, over the ${MAX_TARBALL_BYTES}-byte (10 MiB) limit`] };
  const unpacked = await unpack(tarball);
  if (typeof unpacked === "string") return { files, readable: false, problems: [unpacked] };
  let fileCount = 0;
  let entryCount = 0;
  const extract = tar.extract();
  extract.end(unpacked);
  try {
    for await (const entry of extract) {
      const { name, type, size = 0 } = entry.header;
      if (++entryCount > MAX_ENTRIES) {
        problems.push(`more than ${MAX_ENTRIES} entries; the rest were not read`);
        break;
      }
      const where = entryPath(name, type === "directory");
      const problem = entryProblem(name, type, where, files);
      if (problem !== undefined) problems.push(problem);
      else if (type === "file" && ++fileCount === MAX_FILES + 1) problems.push(`more than ${MAX_FILES} files`);
      const chunks: Buffer[] = [];
      for await (const chunk of entry) chunks.push(chunk as Buffer);
      if (problem === undefined && type === "file" && fileCount <= MAX_FILES && "path" in where) files.set(where.path, Buffer.concat(chunks, size));
    }
  } catch (error) {
    problems.push(`not a valid tar archive (${(error as Error).message})`);
    return { files, problems: listed(problems), readable: false };
  }
  return { files, problems: listed(problems), readable: true };
}

const listed = (problems: string[]): string[] =>
  problems.length <= MAX_LISTED ? problems : [...problems.slice(0, MAX_LISTED), `and ${problems.length - MAX_LISTED} more entry problems`];
