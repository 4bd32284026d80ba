// The yaml package, loaded by the first text the plain-shape reader (yaml-simple.ts) leaves to it, or the
// first YAML the gateway writes, rather than at start: evaluating it cost every cold start ~2.3 ms, and
// a start that reads a plain config never runs it.
import type * as Yaml from "yaml";

let loaded: typeof Yaml | undefined;

export function yaml(): typeof Yaml {
  return (loaded ??= require("yaml") as typeof Yaml);
}
