// The HookModuleLoader (src/hooks/types.ts): a `kind: hook` plugin's entry module, imported only after
// its installed folder passes the same checks as a tarball against the trust posture running now (a
// key removed or an allowlist narrowed since the install takes effect at the next load).
import { join } from "node:path";
import type { HookModule, HookModuleLoader, PluginRef } from "../hooks/types.ts";
import type { Snapshot } from "../config/snapshot.ts";
import { checkContents } from "./check.ts";
import { installedVersions, readInstalled, versionDir } from "./installed.ts";
import { parseRef } from "./names.ts";
import { trustPosture, type TrustPosture } from "./trust.ts";

/** A plugin that cannot be loaded; the message names the reference and every problem. */
export class PluginLoadError extends Error {}

async function resolveFolder(ref: PluginRef, posture: TrustPosture): Promise<{ folder: string; version: string; publisher: string; name: string }> {
  const parts = parseRef(ref);
  if (!parts) throw new PluginLoadError(`plugin ${JSON.stringify(ref)}: not <publisher>/<name> or <publisher>/<name>@<version>`);
  const versions = await installedVersions(posture.dir, parts.publisher, parts.name);
  const version = parts.version ?? versions[0];
  if (version === undefined || !versions.includes(version)) throw new PluginLoadError(`plugin ${ref}: not installed under ${posture.dir}`);
  return { folder: versionDir(posture.dir, parts.publisher, parts.name, version), version, publisher: parts.publisher, name: parts.name };
}

function asHookModule(ref: string, loaded: unknown): HookModule {
  const module = (loaded as { default?: unknown }).default as Partial<HookModule> | undefined;
  if (typeof module !== "object" || module === null) throw new PluginLoadError(`plugin ${ref}: the entry module has no default export object`);
  if (module.kind !== "hook") throw new PluginLoadError(`plugin ${ref}: the entry's default export has kind ${JSON.stringify(module.kind)}, not "hook"`);
  if (typeof module.create !== "function") throw new PluginLoadError(`plugin ${ref}: the entry's default export has no create function`);
  return module as HookModule;
}

/** Loads `ref` under `posture`; throws PluginLoadError naming every problem. */
export async function loadHookModule(ref: PluginRef, posture: TrustPosture): Promise<HookModule> {
  const { folder, version, publisher, name } = await resolveFolder(ref, posture);
  const installed = await readInstalled(folder);
  const checked = await checkContents(installed.files, posture, { kind: "hook", publisher, name, version });
  const problems = [...installed.problems, ...checked.problems];
  if (problems.length > 0 || !checked.manifest) throw new PluginLoadError(`plugin ${publisher}/${name}@${version}: ${problems.join("; ")}`);
  let loaded: unknown;
  try {
    // An absolute file path: the compiled binary imports (and transpiles) it from disk at run time.
    loaded = await import(join(folder, checked.manifest.entry));
  } catch (error) {
    throw new PluginLoadError(`plugin ${publisher}/${name}@${version}: importing ${checked.manifest.entry} failed: ${(error as Error)?.message ?? String(error)}`);
  }
  return asHookModule(`${publisher}/${name}@${version}`, loaded);
}

/** The loader the hook runtime is given: the trust posture of the config running when it is called. */
export function hookModuleLoader(holder: { readonly current: Snapshot }): HookModuleLoader {
  return (ref) => loadHookModule(ref, trustPosture(holder.current.config));
}
