// `plugins.fetch` at boot: each `<owner>/<plugin>@<version>` from `<registry_url>/<owner>/<plugin>/<version>.tar.gz`,
// checked like an uploaded tarball and installed. An installed copy that still passes every check is
// not fetched again. The first entry that fails stops the boot, named with all its problems.
import type { GatewayConfig } from "../config/schema.ts";
import type { Logger } from "../telemetry/logger.ts";
import { checkContents } from "./check.ts";
import { inspectTarball } from "./inspect.ts";
import { installPlugin } from "./install.ts";
import { readInstalled, versionDir } from "./installed.ts";
import { parseRef } from "./names.ts";
import { MAX_TARBALL_BYTES } from "./tarball.ts";
import { trustPosture, type TrustPosture } from "./trust.ts";

/** Per entry, connection to last byte. */
export const FETCH_TIMEOUT_MS = 30_000;

export type FetchOutcome = { readonly entry: string; readonly outcome: "installed" | "present"; readonly path: string };

export class PluginFetchError extends Error {}

/** The body, refused past MAX_TARBALL_BYTES without reading further. */
async function download(url: string, timeoutMs: number): Promise<Uint8Array> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > MAX_TARBALL_BYTES) throw new Error(`${url} is ${declared} bytes, over the ${MAX_TARBALL_BYTES}-byte (10 MiB) limit`);
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of response.body ?? []) {
    total += chunk.length;
    if (total > MAX_TARBALL_BYTES) throw new Error(`${url} is over the ${MAX_TARBALL_BYTES}-byte (10 MiB) limit`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function fetchOne(entry: string, registry: string, posture: TrustPosture, timeoutMs: number): Promise<FetchOutcome> {
  const parts = parseRef(entry);
  if (!parts?.version) throw new PluginFetchError(`plugins.fetch ${entry}: not <owner>/<plugin>@<version> with a semver version`);
  const expect = { publisher: parts.publisher, name: parts.name, version: parts.version };
  const path = versionDir(posture.dir, parts.publisher, parts.name, parts.version);
  const present = await readInstalled(path).catch(() => undefined);
  if (present !== undefined) {
    const checked = await checkContents(present.files, posture, expect);
    const problems = [...present.problems, ...checked.problems];
    if (problems.length > 0) throw new PluginFetchError(`plugins.fetch ${entry}: the installed copy at ${path} fails its checks: ${problems.join("; ")}`);
    return { entry, outcome: "present", path };
  }
  const url = `${registry.replace(/\/+$/, "")}/${parts.publisher}/${parts.name}/${parts.version}.tar.gz`;
  let tarball: Uint8Array;
  try {
    tarball = await download(url, timeoutMs);
  } catch (error) {
    const reason = (error as Error).name === "TimeoutError" ? `${url} did not answer within ${timeoutMs} ms` : (error as Error).message;
    throw new PluginFetchError(`plugins.fetch ${entry}: ${reason}`);
  }
  const inspected = await inspectTarball(tarball, posture, expect);
  if (!inspected.accepted) throw new PluginFetchError(`plugins.fetch ${entry}: ${inspected.view.problems.join("; ")}`);
  let installed;
  try {
    installed = await installPlugin(posture.dir, inspected.accepted.manifest, inspected.accepted.files);
  } catch (error) {
    throw new PluginFetchError(`plugins.fetch ${entry}: could not install under ${posture.dir}: ${(error as Error).message}`);
  }
  return { entry, outcome: installed.written ? "installed" : "present", path: installed.path };
}

/** Every `plugins.fetch` entry in order; throws PluginFetchError at the first that fails. */
export async function fetchPlugins(config: Readonly<GatewayConfig>, timeoutMs = FETCH_TIMEOUT_MS): Promise<FetchOutcome[]> {
  const entries = config.plugins?.fetch ?? [];
  const registry = config.plugins?.registry_url;
  if (entries.length === 0) return [];
  if (registry === undefined) throw new PluginFetchError("plugins.fetch: plugins.registry_url is needed to fetch plugins");
  const posture = trustPosture(config);
  const outcomes: FetchOutcome[] = [];
  for (const entry of entries) outcomes.push(await fetchOne(entry, registry, posture, timeoutMs));
  return outcomes;
}

/** The boot's step (src/main.ts): true when every entry is installed; else the refusal is logged. */
export async function fetchAtBoot(config: Readonly<GatewayConfig>, logger: Logger): Promise<boolean> {
  try {
    for (const done of await fetchPlugins(config)) logger.info(done.outcome === "installed" ? "plugin fetched and installed" : "plugin already installed", { plugin: done.entry, path: done.path });
    return true;
  } catch (error) {
    if (!(error instanceof PluginFetchError)) throw error;
    logger.error("plugin fetch failed; not starting", { error: error.message });
    return false;
  }
}
