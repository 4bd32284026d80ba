// The audit head anchor: the newest entry's seq and hash, in a file beside the store
// (`<store>.audit-head`), rewritten after each append commits. It lives apart from the chain so that
// deleting the newest entries from the sqlite file (truncation) no longer leaves a chain that verifies:
// the anchor still names the removed head, and the next seq continues above it.
import { existsSync, readFileSync } from "node:fs";
import { fsPromises } from "./fs-promises.ts";

export interface AuditHead {
  readonly seq: number;
  readonly hash: string;
}

/** `path` names where the head was read: the anchor file's path, or the store's own record of it. */
export type HeadRead = { readonly state: "none" } | { readonly state: "ok"; readonly path: string; readonly head: AuditHead } | { readonly state: "bad"; readonly path: string; readonly problem: string };

export const auditHeadPath = (storePath: string): string | undefined => (storePath === ":memory:" ? undefined : `${storePath}.audit-head`);

export async function readHead(path: string): Promise<HeadRead> {
  if (!existsSync(path)) return { state: "none" };
  let text: string | undefined;
  try {
    // Read at once: an anchor is one short line, and read asynchronously it cost the boot a round trip
    // through the file thread pool (~0.5 ms). It is read at boot and by an audit verification, which
    // reads the chain from sqlite synchronously too.
    text = readFileSync(path, "utf8");
  } catch {
    // Unreadable: reported like a malformed one.
  }
  return parseHead(path, text);
}

export const headText = (head: AuditHead) => JSON.stringify({ seq: head.seq, hash: head.hash });

/** `text` as a head (`{"seq": N, "hash": "<sha256 hex>"}`), read from `path`. */
export function parseHead(path: string, text: string | undefined): HeadRead {
  try {
    const parsed = JSON.parse(text ?? "") as Partial<AuditHead>;
    if (Number.isSafeInteger(parsed.seq) && (parsed.seq as number) >= 0 && typeof parsed.hash === "string" && /^[0-9a-f]{64}$|^$/.test(parsed.hash)) {
      return { state: "ok", path, head: { seq: parsed.seq as number, hash: parsed.hash } };
    }
  } catch {
    // Not JSON: reported below like a malformed one.
  }
  return { state: "bad", path, problem: "is not a head anchor (expected {\"seq\": N, \"hash\": \"<sha256 hex>\"})" };
}

/** Whole to a temporary file, then renamed over the old one: a crash leaves the old anchor or the new. */
export async function writeHead(path: string, head: AuditHead): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  const { rename, writeFile } = fsPromises();
  await writeFile(temporary, `${headText(head)}\n`, { mode: 0o600 });
  await rename(temporary, path);
}
