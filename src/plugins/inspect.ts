// A tarball checked against the running trust posture: the view POST /plugins/inspect answers (gaps.md
// "Plugins"), and what an install or a fetch writes when it has no problems.
import { checkContents, sha256, type Expectations, type FileView } from "./check.ts";
import type { Manifest } from "./manifest.ts";
import { readTarball } from "./tarball.ts";
import type { TrustPosture } from "./trust.ts";

export interface PluginView {
  readonly name: string | null;
  readonly version: string | null;
  readonly kind: string | null;
  readonly publisher: string | null;
  /** Of the tarball as sent. */
  readonly sha256: string;
  readonly signature_valid: boolean;
  readonly allowed: boolean;
  // Mutable arrays: the response schema's static type is.
  readonly files: FileView[];
  readonly problems: string[];
}

export interface InspectedPlugin {
  readonly view: PluginView;
  /** Set only when there is no problem: what an install may write. */
  readonly accepted: { readonly manifest: Manifest; readonly files: ReadonlyMap<string, Uint8Array> } | undefined;
}

export async function inspectTarball(tarball: Uint8Array, posture: TrustPosture, expect: Expectations = {}): Promise<InspectedPlugin> {
  const contents = await readTarball(tarball);
  const checked = contents.readable ? await checkContents(contents.files, posture, expect) : { manifest: undefined, signatureValid: false, allowed: false, files: [], problems: [] };
  const { manifest } = checked;
  const problems = [...contents.problems, ...checked.problems];
  const view: PluginView = {
    name: manifest?.name ?? null,
    version: manifest?.version ?? null,
    kind: manifest?.kind ?? null,
    publisher: manifest?.publisher ?? null,
    sha256: sha256(tarball),
    signature_valid: checked.signatureValid,
    allowed: checked.allowed,
    files: [...checked.files],
    problems,
  };
  return { view, accepted: problems.length === 0 && manifest !== undefined ? { manifest, files: contents.files } : undefined };
}

/** `plugin:<publisher>/<name>@<version>`, the audit resource of an install. */
export const pluginResource = (view: Pick<PluginView, "publisher" | "name" | "version">): string =>
  view.publisher !== null && view.name !== null && view.version !== null ? `plugin:${view.publisher}/${view.name}@${view.version}` : "plugin";
