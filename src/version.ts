import pkg from "../package.json" with { type: "json" };

/** The gateway's semantic version (InfoView.version, --version). */
export const VERSION: string = pkg.version;
