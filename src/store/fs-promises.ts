// node:fs/promises, loaded by the first file the gateway writes (an audit head, a staged overlay, a plugin) rather
// than at start: importing it cost every cold start ~1.2 ms, and a start only reads (audit-head.ts).
import type * as FsPromises from "node:fs/promises";

let loaded: typeof FsPromises | undefined;

export function fsPromises(): typeof FsPromises {
  return (loaded ??= require("node:fs/promises") as typeof FsPromises);
}
