// A config version as the operator wrote it (GET /config/source): YAML text of base with overlay, each
// value the config took from the environment written back as its `${VAR}`, each secret as its reference.
// What stands at a secret position (x-secret in the config schema) is shown only when it is a reference:
// `{env: NAME}`, `{file: PATH}`, or a text made of `${VAR}`s (after an auth scheme such as `Bearer `);
// a literal there is REDACTED. Settings bags with no schema (a hook's; a plugin exporter's) are shown as
// the views show them, by key: a value there is a reference or REDACTED. A URL's userinfo is REDACTED.
import { Value } from "@sinclair/typebox/value";
import { Kind, type TSchema } from "@sinclair/typebox";
import { OidcSettingsCfg, ForgeSettingsCfg } from "../identity/settings.ts";
import { EXPORTER_SETTINGS } from "../telemetry/exporters/schemas.ts";
import type { ConfigTree } from "./lifecycle.ts";
import { plainScalar } from "./interpolate.ts";
import { GatewayConfig } from "./schema.ts";

import { REDACTED } from "./redacted.ts";

export { REDACTED };

/** The settings schema of each built-in module a `settings:` bag belongs to (exporters and identity providers). */
const MODULE_SETTINGS: Readonly<Record<string, TSchema>> = { ...EXPORTER_SETTINGS, oidc: OidcSettingsCfg, forge: ForgeSettingsCfg };

const REFERENCES_ONLY = /^(?:[A-Za-z]+ )?(?:\$\{[A-Za-z_][A-Za-z0-9_]*\})+$/;
const USERINFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#@]*)@/;

type Bag = Record<string, unknown>;
const isBag = (value: unknown): value is Bag => typeof value === "object" && value !== null && !Array.isArray(value);
const isSecretRef = (value: unknown) => isBag(value) && Object.keys(value).length === 1 && (typeof value.env === "string" || typeof value.file === "string");

/** Where a value stands: its schema (undefined: a bag with none) and whether the position is a secret one. */
interface Position {
  readonly schema: TSchema | undefined;
  readonly secret: boolean;
}

/**
 * The version's YAML. `written` turns a value as the config holds it into text as it was written: each
 * literal `${` escaped, each value from the environment as its `${VAR}` (ConfigLifecycle's Concealed).
 */
export function sourceText(tree: ConfigTree, written: (text: string) => string): string {
  return yamlText(show(tree, { schema: GatewayConfig, secret: false }, written) as Bag);
}

/**
 * YAML of a plain tree: block mappings and sequences, each scalar plain when it reads back as itself,
 * else double-quoted (JSON's escapes are YAML's), one value per line so a diff names the line that
 * changed. Written here, not by the yaml package: its stringify took ~100 ms for a 6,500-line config on
 * the event loop the data plane shares; this is the plain shape yaml-simple.ts reads back at once.
 */
export const yamlText = (tree: Record<string, unknown>): string => block(tree, "");

function block(value: Bag | unknown[], indent: string): string {
  const entries: [string, unknown][] = Array.isArray(value) ? value.map((item) => ["-", item]) : Object.entries(value).map(([k, v]) => [`${scalar(k)}:`, v]);
  let out = "";
  for (const [lead, item] of entries) {
    const nested = (Array.isArray(item) && item.length > 0) || (isBag(item) && Object.keys(item).length > 0);
    if (!nested) out += `${indent}${lead} ${Array.isArray(item) ? "[]" : isBag(item) ? "{}" : scalar(item)}\n`;
    // An item of a list opens its mapping on the dash's line; anything else nests on the next lines.
    else if (lead === "-") out += `${indent}- ${block(item as Bag | unknown[], `${indent}  `).slice(indent.length + 2)}`;
    else out += `${indent}${lead}\n${block(item as Bag | unknown[], `${indent}  `)}`;
  }
  return out;
}

/** Characters a plain scalar may hold here: no indicator, no space, no quote, no comment or flow mark at its start. */
const PLAIN = /^[A-Za-z0-9_$.\/<~][A-Za-z0-9_$.\/:{}<>@+=~-]*$/;

function scalar(value: unknown): string {
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : Number.isNaN(value) ? ".nan" : value > 0 ? ".inf" : "-.inf";
  if (typeof value !== "string") return String(value);
  const plain = PLAIN.test(value) && !value.endsWith(":") && !value.startsWith("<<") && plainScalar(value) === value;
  return plain ? value : JSON.stringify(value);
}

function show(value: unknown, at: Position, written: (text: string) => string): unknown {
  const guarded = at.secret || at.schema === undefined;
  if (typeof value === "string" || typeof value === "number") {
    const text = written(String(value));
    if (guarded) return REFERENCES_ONLY.test(text) ? text : REDACTED;
    if (typeof value === "number") return text === String(value) ? value : text;
    return text.replace(USERINFO, (whole, scheme: string, userinfo: string) => (/^(?:\$\{[A-Za-z0-9_]+\}|:)*$/.test(userinfo) ? whole : `${scheme}${REDACTED}@`));
  }
  if (Array.isArray(value)) return value.map((item) => show(item, child(at, value, undefined, item), written));
  if (!isBag(value)) return value;
  if (guarded && isSecretRef(value)) return { ...value };
  const out: Bag = {};
  for (const [key, member] of Object.entries(value)) out[written(key)] = show(member, child(at, value, key, member), written);
  return out;
}

/** The position of `member` (at `key` of an object, or an item of an array) inside `at`. */
function child(at: Position, parent: unknown, key: string | undefined, member: unknown): Position {
  const schema = at.schema === undefined ? undefined : chosen(at.schema, parent);
  if (schema === undefined) return { schema: undefined, secret: true };
  let inner: TSchema | undefined;
  if (key === undefined) inner = schema.items as TSchema | undefined;
  else if (key === "settings" && isBag(parent) && typeof parent.module === "string" && MODULE_SETTINGS[parent.module]) inner = MODULE_SETTINGS[parent.module];
  else {
    const properties = schema.properties as Record<string, TSchema> | undefined;
    const patterns = Object.values((schema.patternProperties ?? {}) as Record<string, TSchema>);
    const extra = typeof schema.additionalProperties === "object" ? (schema.additionalProperties as TSchema) : undefined;
    inner = properties?.[key] ?? patterns[0] ?? extra;
  }
  if (inner === undefined || inner[Kind] === "Unknown") return { schema: undefined, secret: true };
  return { schema: inner, secret: Boolean(inner["x-secret"]) || Boolean(chosen(inner, member)?.["x-secret"]) };
}

/** A union's variant the value is (the first that checks, else the first object one for an object); any other schema itself. */
function chosen(schema: TSchema, value: unknown): TSchema | undefined {
  const variants = schema.anyOf as TSchema[] | undefined;
  if (!variants) return schema;
  return variants.find((v) => Value.Check(v, value)) ?? (isBag(value) ? variants.find((v) => v.type === "object") : variants[0]);
}
