// node:zlib, loaded by the first compressed upstream answer (or plugin tarball) rather than at start:
// importing it cost every cold start ~1.5 ms and ~2 MB resident, and upstreams asked for identity seldom
// compress. The bundle hoists a builtin's import to the binary's top, so it is required, never imported.
import type * as Zlib from "node:zlib";

let loaded: typeof Zlib | undefined;

export function zlib(): typeof Zlib {
  return (loaded ??= require("node:zlib") as typeof Zlib);
}
