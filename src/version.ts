import pkg from "../package.json" with { type: "json" };

/** The gateway's semantic version (InfoView.version, --version). */
export const VERSION: string = pkg.version;

// Literals put in by scripts/compile.ts (Bun.build `define`); undeclared when run from source.
declare const GATEWAY_BUILD_COMMIT: string;
declare const GATEWAY_BUILD_TARGET: string;

/** The git commit the binary was built from (`-dirty`: with uncommitted changes; "unknown": not from a checkout). */
export const BUILD_COMMIT: string = typeof GATEWAY_BUILD_COMMIT === "string" ? GATEWAY_BUILD_COMMIT : "source";
/** The release target (`linux-x64`, `darwin-arm64`, ...); "source" under `bun src/main.ts`. */
export const BUILD_TARGET: string = typeof GATEWAY_BUILD_TARGET === "string" ? GATEWAY_BUILD_TARGET : "source";

/** The --version line: `gateway 0.1.0 (commit 1a2b3c4, linux-x64)`, or `gateway 0.1.0 (running from source)`. */
export const VERSION_LINE = BUILD_TARGET === "source" ? `gateway ${VERSION} (running from source)` : `gateway ${VERSION} (commit ${BUILD_COMMIT}, ${BUILD_TARGET})`;
