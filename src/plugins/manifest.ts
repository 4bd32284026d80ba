// manifest.json (design: hooks-plugins.md, "Plugin tarball and trust"): checked against its schema
// before anything in it is believed. Members beyond these are allowed (they are signed like the rest).
import { Type, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { schemaErrors } from "../config/schema-errors.ts";
import { jsonTextTooDeep, MAX_JSON_DEPTH } from "../http/json-depth.ts";
import { NAME, SEMVER } from "./names.ts";

export const PLUGIN_KINDS = ["auth", "hook", "exporter"] as const;

export const Manifest = Type.Object({
  name: Type.String({ pattern: NAME.source }),
  version: Type.String({ pattern: SEMVER.source }),
  kind: Type.Union(PLUGIN_KINDS.map((k) => Type.Literal(k))),
  entry: Type.String({ minLength: 1 }),
  publisher: Type.String({ pattern: NAME.source }),
  files: Type.Record(Type.String({ minLength: 1 }), Type.String({ pattern: "^[0-9a-f]{64}$" })),
});
export type Manifest = Static<typeof Manifest>;

/** The manifest, or every problem with it (each named by its member). */
export function parseManifest(bytes: Uint8Array): { ok: true; manifest: Manifest } | { ok: false; problems: string[] } {
  let value: unknown;
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    if (jsonTextTooDeep(text)) return { ok: false, problems: [`manifest.json: nests JSON deeper than ${MAX_JSON_DEPTH} levels`] };
    value = JSON.parse(text);
  } catch {
    return { ok: false, problems: ["manifest.json: not JSON"] };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, problems: ["manifest.json: not a JSON object"] };
  if (Value.Check(Manifest, value)) return { ok: true, manifest: value };
  return { ok: false, problems: schemaErrors(Manifest, value, { style: "pointer" }).map((e) => `manifest.json ${e}`) };
}
