// Config text or object -> Snapshot, or every error at once. The same path serves boot, `--check`,
// and the admin API (which hands in an object or YAML text).
import { existsSync, readFileSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import { duplicateKeyLines, parseYamlBounded, toTree } from "./yaml-bounded.ts";
import { readSimpleYaml } from "./yaml-simple.ts";
import { Concealed, expandReferences, hasMark, markReferences, unmark } from "./interpolate.ts";
import { referenceErrors } from "./references.ts";
import { Value } from "@sinclair/typebox/value";
import { resolveConfig } from "./resolve.ts";
import { GatewayConfig } from "./schema.ts";
import { schemaErrors } from "./schema-errors.ts";
import { unsupportedErrors } from "./unsupported.ts";
import { redactedErrors } from "./redacted.ts";
import { freezeSnapshot, type Snapshot } from "./snapshot.ts";
import { embeddedDefaultText } from "./default.ts";

export interface LoadContext {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** config_version the snapshot will carry. */
  readonly version?: number;
  /** Values taken from the environment (by this text or the trees merged into it): never shown in an error. */
  readonly concealed?: Concealed;
}

/** `refused`: the text is refused whole (too deep, an alias bomb), as a bad request, not judged as a config. */
type Failed = { ok: false; errors: string[]; refused?: boolean };
export type LoadResult = { ok: true; snapshot: Snapshot } | Failed;
export type ParseResult = { ok: true; tree: unknown; concealed: Concealed } | Failed;

/**
 * Parses YAML into a plain tree with `${VAR}` expanded inside its scalars, or the errors with line
 * numbers. `resolve: false` leaves every `${VAR}` unexpanded (a dry run that reads no environment).
 * `full`: always through the yaml package (the tests hold the two ways to the same trees).
 */
export function parseConfigText(text: string, source: string, env: LoadContext["env"], options: { resolve?: boolean; full?: boolean } = {}): ParseResult {
  const marked = markReferences(text, source);
  if (!options.full) {
    // The plain shape of nearly every config, read without the yaml package (yaml-simple.ts); anything
    // else, and every text with an error in it, goes the full way below.
    const concealed = new Concealed();
    const tree = readSimpleYaml({ marked, env, resolve: options.resolve !== false, concealed });
    if (tree !== undefined) return { ok: true, tree, concealed };
  }
  const parsed = parseYamlBounded(marked.text);
  if ("refused" in parsed) return { ok: false, errors: [`${source}: ${parsed.refused}`], refused: true };
  const { doc, lines } = parsed;
  const expanded = options.resolve === false ? { concealed: new Concealed(), errors: [] } : expandReferences(doc, marked, env, lines, source);
  const syntax = doc.errors.map((e) => `${source}:${lines.linePos(e.pos[0]).line}: ${unmark(e.message.split("\n")[0] ?? "", marked.references).replace(/ at line \d+, column \d+:?$/, "")}`);
  const duplicates = duplicateKeyLines(doc, lines).map((line) => `${source}:${line}: Map keys must be unique`);
  const errors = [...marked.errors, ...expanded.errors, ...syntax, ...duplicates];
  if (errors.length > 0) return { ok: false, errors };
  const built = toTree(doc);
  if ("refused" in built) return { ok: false, errors: [`${source}: ${built.refused}`], refused: true };
  return { ok: true, tree: built.tree, concealed: expanded.concealed };
}

const notMapping = (tree: unknown) =>
  typeof tree !== "object" || tree === null || Array.isArray(tree) ? [`(root): expected a mapping of config sections, got ${Array.isArray(tree) ? "a list" : typeof tree}`] : undefined;

/** Schema, not-yet-supported and reference errors together, none quoting a value from the environment or a secret position. */
function treeErrors(tree: object, concealed: Concealed): string[] {
  const conceal = (text: string) => concealed.variableIn(text);
  // The verdict first: a valid config (every start) skips the error walk, a generator over the whole
  // schema that is slow while cold; both are TypeBox's interpreter over the same schema.
  const schema = Value.Check(GatewayConfig, tree) ? [] : schemaErrors(GatewayConfig, tree, { conceal });
  return [...schema, ...unsupportedErrors(tree), ...redactedErrors(tree), ...referenceErrors(tree, conceal)].map((e) => concealed.scrub(e));
}

/** Validates a tree and resolves it. Schema and reference errors are reported together. */
export function loadConfigTree(tree: unknown, source: string, ctx: LoadContext): LoadResult {
  const shape = notMapping(tree);
  if (shape) return { ok: false, errors: shape };
  const concealed = ctx.concealed ?? new Concealed();
  const errors = treeErrors(tree as object, concealed);
  if (errors.length > 0) return { ok: false, errors };
  const resolved = resolveConfig(tree as GatewayConfig, { env: ctx.env, version: ctx.version ?? 0, source, conceal: (text) => concealed.scrub(text) });
  if (!resolved.ok) return { ok: false, errors: resolved.errors.map((e) => concealed.scrub(e)) };
  return { ok: true, snapshot: freezeSnapshot(resolved.snapshot) };
}

export function loadConfigText(text: string, source: string, ctx: LoadContext): LoadResult {
  const parsed = parseConfigText(text, source, ctx.env);
  if (!parsed.ok) return parsed;
  const concealed = new Concealed();
  concealed.addAll(ctx.concealed);
  concealed.addAll(parsed.concealed);
  return loadConfigTree(parsed.tree, source, { ...ctx, concealed });
}

export type Verdict = { ok: boolean; errors: string[]; refused?: boolean };

/**
 * A dry run (POST /config/validate). `resolve: true` checks as boot would, reading the environment and
 * the files the config names. `resolve: false` reads neither, for a principal who may not learn what
 * they hold: `${VAR}` and secret references are checked for shape only, and a member holding a `${VAR}`
 * is not judged, so the verdict depends on the text alone.
 */
export function checkConfig(input: { yaml: string } | { config: unknown }, ctx: LoadContext & { resolve: boolean }): Verdict {
  const source = "yaml" in input ? "yaml" : "config";
  if (ctx.resolve) {
    const result = "yaml" in input ? loadConfigText(input.yaml, source, ctx) : loadConfigTree(input.config, source, ctx);
    return result.ok ? { ok: true, errors: [] } : result;
  }
  let tree = "config" in input ? input.config : undefined;
  if ("yaml" in input) {
    const parsed = parseConfigText(input.yaml, source, ctx.env, { resolve: false });
    if (!parsed.ok) return parsed;
    tree = parsed.tree;
  }
  const errors = notMapping(tree) ?? treeErrors(tree as object, new Concealed()).filter((e) => !hasMark(e));
  return { ok: errors.length === 0, errors };
}

export interface ConfigSource {
  readonly text: string;
  /** A file path, or "embedded default". */
  readonly source: string;
}

/** `--config PATH`, else `./gateway.yaml`, else the embedded default. */
export function locateConfig(path: string | undefined, env: LoadContext["env"], cwd = process.cwd()): ConfigSource | { error: string } {
  const candidate = path ?? (existsSync(resolvePath(cwd, "gateway.yaml")) ? "gateway.yaml" : undefined);
  if (candidate === undefined) return { text: embeddedDefaultText(env), source: "embedded default" };
  const full = resolvePath(cwd, candidate);
  try {
    return { text: readFileSync(full, "utf8"), source: full };
  } catch (error) {
    return { error: `cannot read config file ${full} (${(error as NodeJS.ErrnoException).code ?? "error"})` };
  }
}
