// A validated config tree with its schema's defaults written in: what TypeBox's
// `Value.Default(schema, structuredClone(tree))` gives, member for member and in the same key order, in
// one visit. TypeBox visits each member of an object twice (once to see whether it yields anything,
// once to write it), so a nested section is visited 2^depth times: over the config, cold, at every
// start, ~1.4 ms. `tests/unit/config-defaults.test.ts` holds the two to the same trees.
import { Kind, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

type Tree = Record<string, unknown>;

export function withDefaults(schema: TSchema, tree: unknown): unknown {
  return visit(schema, structuredClone(tree));
}

/** Kinds TypeBox's Default visits in ways this walk does not repeat (the config schema has none: unit test). */
export const UNHANDLED_KINDS = new Set(["Date", "Import", "Intersect", "Ref", "This", "Tuple"]);

const isObject = (value: unknown): value is Tree => typeof value === "object" && value !== null;
const hasDefault = (schema: unknown) => isObject(schema) && typeof (schema as { [Kind]?: unknown })[Kind] === "string" && "default" in schema;

function visit(schema: TSchema, value: unknown): unknown {
  switch (schema[Kind]) {
    case "Object":
      return object(schema, value);
    case "Record":
      return record(schema, value);
    case "Array":
      return array(schema, value);
    case "Union":
      return union(schema, value);
    default:
      if (UNHANDLED_KINDS.has(schema[Kind])) throw new Error(`config defaults: schema kind ${schema[Kind]} is not handled`);
      return orDefault(schema, value);
  }
}

/** The value, or a copy of the schema's default when it is absent, or the default's members under the value's. */
function orDefault(schema: TSchema, value: unknown): unknown {
  if (!("default" in schema)) return value;
  const fallback = typeof schema.default === "function" ? schema.default() : structuredClone(schema.default);
  if (value === undefined) return fallback;
  return isObject(value) && isObject(fallback) ? Object.assign(fallback, value) : value;
}

function object(schema: TSchema, value: unknown): unknown {
  const defaulted = orDefault(schema, value);
  if (!isObject(defaulted)) return defaulted;
  const properties = schema.properties as Record<string, TSchema>;
  const known = Object.getOwnPropertyNames(properties);
  for (const key of known) {
    // An absent member that yields nothing stays absent (no key with undefined in it).
    const member = visit(properties[key]!, defaulted[key]);
    if (member !== undefined) defaulted[key] = member;
  }
  if (!hasDefault(schema.additionalProperties)) return defaulted;
  for (const key of Object.getOwnPropertyNames(defaulted)) if (!known.includes(key)) defaulted[key] = visit(schema.additionalProperties, defaulted[key]);
  return defaulted;
}

/** As TypeBox's: a record's entries are visited only when the entry schema carries a default itself. */
function record(schema: TSchema, value: unknown): unknown {
  const defaulted = orDefault(schema, value);
  if (!isObject(defaulted)) return defaulted;
  const [pattern, entry] = Object.entries(schema.patternProperties as Record<string, TSchema>)[0]!;
  const other = schema.additionalProperties;
  if (!hasDefault(entry) && !hasDefault(other)) return defaulted;
  const named = new RegExp(pattern);
  if (hasDefault(entry)) for (const key of Object.getOwnPropertyNames(defaulted)) if (named.test(key)) defaulted[key] = visit(entry, defaulted[key]);
  if (hasDefault(other)) for (const key of Object.getOwnPropertyNames(defaulted)) if (!named.test(key)) defaulted[key] = visit(other, defaulted[key]);
  return defaulted;
}

function array(schema: TSchema, value: unknown): unknown {
  const defaulted = Array.isArray(value) ? value : orDefault(schema, value);
  if (!Array.isArray(defaulted)) return defaulted;
  for (let i = 0; i < defaulted.length; i++) defaulted[i] = visit(schema.items, defaulted[i]);
  return defaulted;
}

/** The first member schema that accepts the value with its defaults written in, as TypeBox picks it. */
function union(schema: TSchema, value: unknown): unknown {
  const defaulted = orDefault(schema, value);
  for (const member of schema.anyOf as TSchema[]) {
    const candidate = visit(member, isObject(defaulted) ? structuredClone(defaulted) : defaulted);
    if (Value.Check(member, candidate)) return candidate;
  }
  return defaulted;
}
