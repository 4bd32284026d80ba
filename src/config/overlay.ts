// The settings overlay file (`config.overlay`, default ./gateway.overlay.yaml): what PUT
// /config/settings stored, applied over the config file at every boot. Read once at boot; written
// whole to a temporary file and renamed over the old one, so a crash mid-write leaves either the old
// overlay or the new one, never half of one. The rename happens inside the settings change's audit
// transaction, and the old overlay is put back if that transaction fails.
import { existsSync, readFileSync, renameSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import { fsPromises } from "../store/fs-promises.ts";
import { yaml } from "./yaml-package.ts";
import type { ConfigTree, StagedFile } from "./lifecycle.ts";
import type { ParseResult } from "./load.ts";
import { duplicateKeyLines, parseYamlBounded, toTree } from "./yaml-bounded.ts";

export interface OverlaySettings {
  readonly path: string;
  readonly locked: boolean;
}

/**
 * Where the overlay lives and whether the config is locked, read off the file's own `config:` section.
 * Takes the boot's one parse of the file (parseConfigText), which loadBoot then validates.
 */
export function overlaySettings(parsed: ParseResult): OverlaySettings {
  const section = parsed.ok && typeof parsed.tree === "object" && parsed.tree !== null ? (parsed.tree as { config?: { overlay?: unknown; locked?: unknown } }).config : undefined;
  const path = typeof section?.overlay === "string" && section.overlay !== "" ? section.overlay : "./gateway.overlay.yaml";
  return { path: resolvePath(path), locked: section?.locked === true };
}

/** The overlay at boot: empty when there is none (or the config is locked); an unreadable one stops the boot. */
export function readOverlay(settings: OverlaySettings): { ok: true; overlay: ConfigTree } | { ok: false; error: string } {
  if (settings.locked || !existsSync(settings.path)) return { ok: true, overlay: {} };
  let text: string;
  try {
    text = readFileSync(settings.path, "utf8");
  } catch (error) {
    return { ok: false, error: `cannot read config overlay ${settings.path} (${(error as NodeJS.ErrnoException).code ?? "error"})` };
  }
  const invalid = (why: string) => ({ ok: false as const, error: `config overlay ${settings.path} is not valid YAML: ${why}` });
  const parsed = parseYamlBounded(text, Infinity);
  if ("refused" in parsed) return invalid(parsed.refused);
  const { doc, lines } = parsed;
  if (doc.errors.length > 0) return invalid(doc.errors[0]!.message.split("\n")[0]!);
  const duplicate = duplicateKeyLines(doc, lines)[0];
  if (duplicate !== undefined) return invalid(`line ${duplicate}: Map keys must be unique`);
  const built = toTree(doc);
  if ("refused" in built) return invalid(built.refused);
  const tree = built.tree;
  if (typeof tree !== "object" || Array.isArray(tree)) return { ok: false, error: `config overlay ${settings.path}: expected a mapping of config sections` };
  return { ok: true, overlay: tree as ConfigTree };
}

const HEADER = "# Written by the gateway (PUT /config/settings); applied over the config file at boot.\n";

/** The new overlay written beside `path`; installed by a rename, and undone to the file that was there. */
export async function stageOverlay(path: string, overlay: ConfigTree): Promise<StagedFile> {
  const temporary = `${path}.${process.pid}.tmp`;
  const { readFile, rename, unlink, writeFile } = fsPromises();
  const previous = existsSync(path) ? await readFile(path, "utf8") : undefined;
  try {
    await writeFile(temporary, HEADER + yaml().stringify(overlay), { mode: 0o600 });
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  let installed = false;
  return {
    install: () => {
      renameSync(temporary, path);
      installed = true;
    },
    discard: async () => {
      if (!installed) return unlink(temporary);
      if (previous === undefined) return unlink(path);
      await writeFile(temporary, previous, { mode: 0o600 });
      await rename(temporary, path);
    },
  };
}
