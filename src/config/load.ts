// Config text or object -> Snapshot, or every error at once. The same path serves boot, `--check`,
// and the admin API (which hands in an object or YAML text).
import { existsSync, readFileSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import { parseDocument } from "yaml";
import { interpolate } from "./interpolate.ts";
import { referenceErrors } from "./references.ts";
import { resolveConfig } from "./resolve.ts";
import { GatewayConfig } from "./schema.ts";
import { schemaErrors } from "./schema-errors.ts";
import { freezeSnapshot, type Snapshot } from "./snapshot.ts";
import { embeddedDefaultText } from "./default.ts";

export interface LoadContext {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** config_version the snapshot will carry. */
  readonly version?: number;
}

export type LoadResult = { ok: true; snapshot: Snapshot } | { ok: false; errors: string[] };

/** Parses YAML (after `${VAR}` interpolation) into a plain tree, or the errors with line numbers. */
export function parseConfigText(text: string, source: string, env: LoadContext["env"]): { ok: true; tree: unknown } | { ok: false; errors: string[] } {
  const interpolated = interpolate(text, env, source);
  const doc = parseDocument(interpolated.text, { prettyErrors: true, uniqueKeys: true });
  const errors = [
    ...interpolated.errors,
    ...doc.errors.map((e) => `${source}:${e.linePos?.[0]?.line ?? "?"}: ${e.message.split("\n")[0]?.replace(/ at line \d+, column \d+:?$/, "")}`),
  ];
  if (errors.length > 0) return { ok: false, errors };
  const tree = doc.toJS({ maxAliasCount: 100 }) ?? {};
  return { ok: true, tree };
}

/** Validates a tree and resolves it. Schema and reference errors are reported together. */
export function loadConfigTree(tree: unknown, source: string, ctx: LoadContext): LoadResult {
  if (typeof tree !== "object" || tree === null || Array.isArray(tree)) {
    return { ok: false, errors: [`(root): expected a mapping of config sections, got ${Array.isArray(tree) ? "a list" : typeof tree}`] };
  }
  const errors = [...schemaErrors(GatewayConfig, tree), ...referenceErrors(tree)];
  if (errors.length > 0) return { ok: false, errors };
  const resolved = resolveConfig(tree as GatewayConfig, { env: ctx.env, version: ctx.version ?? 0, source });
  if (!resolved.ok) return resolved;
  return { ok: true, snapshot: freezeSnapshot(resolved.snapshot) };
}

export function loadConfigText(text: string, source: string, ctx: LoadContext): LoadResult {
  const parsed = parseConfigText(text, source, ctx.env);
  return parsed.ok ? loadConfigTree(parsed.tree, source, ctx) : parsed;
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
