// Turns TypeBox's value errors into the operator-facing form `pools.chat.members[1].model: message`.
import { Errors, ValueErrorType, type ValueError } from "@sinclair/typebox/errors";
import type { TSchema } from "@sinclair/typebox";

/** JSON pointer `/pools/chat/members/1` -> `pools.chat.members[1]`. */
export function formatPath(pointer: string): string {
  if (pointer === "" || pointer === "/") return "(root)";
  let out = "";
  for (const raw of pointer.slice(1).split("/")) {
    const segment = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (/^\d+$/.test(segment)) out += `[${segment}]`;
    else if (/^[A-Za-z0-9_-]+$/.test(segment)) out += out === "" ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/** Says which variable a text came from when it holds a value from the environment (never shown). */
export type Conceal = (text: string) => string | undefined;

/**
 * The value an error was about. A secret position (`x-secret`) or a value from the environment is named
 * by its kind or its variable, never quoted: a literal secret where a reference belongs is refused
 * without being repeated into a response, the boot log or `--check`.
 */
function describe(value: unknown, schema: TSchema, conceal: Conceal | undefined): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (value === undefined) return "nothing";
  if (schema["x-secret"]) return `a ${typeof value} (not shown: a secret position)`;
  const variable = conceal?.(String(value));
  if (variable !== undefined) return `the value of \${${variable}} (not shown)`;
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  return String(value);
}

function message(error: ValueError, conceal: Conceal | undefined): string {
  const schema = error.schema as TSchema & { description?: string };
  const shown = (value: unknown) => describe(value, schema, conceal);
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      return schema["x-key"] ? `invalid name: expected ${schema["x-key"]}` : "unknown member";
    case ValueErrorType.ObjectRequiredProperty:
      return "required member missing";
    case ValueErrorType.Union:
      return `expected ${schema.description ?? "one of the allowed forms"}, got ${shown(error.value)}`;
    case ValueErrorType.StringPattern:
      return `expected ${schema["x-expected"] ?? `a string matching ${schema.pattern}`}, got ${shown(error.value)}`;
    default: {
      const base = error.message.charAt(0).toLowerCase() + error.message.slice(1);
      return error.value === undefined ? base : `${base}, got ${shown(error.value)}`;
    }
  }
}

/**
 * A union that failed on an object reports the errors of its closest object variant (the one with the
 * fewest errors that is an object at all), so `limits[0].window` is named rather than "bad limit".
 * A union that failed on a scalar keeps its own description ("a secret reference {env:} or {file:}").
 */
function closestVariant(error: ValueError): ValueError[] | undefined {
  const value = error.value;
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  let best: ValueError[] | undefined;
  for (const variant of error.errors) {
    const list = [...variant];
    if (list.some((e) => e.path === error.path && e.type === ValueErrorType.Object)) continue;
    if (!best || list.length < best.length) best = list;
  }
  return best && best.length > 0 ? best : undefined;
}

export type PathStyle = "dotted" | "pointer";

function collect(errors: Iterable<ValueError>, prefix: string, seen: Set<string>, out: string[], style: PathStyle, conceal: Conceal | undefined): void {
  for (const error of errors) {
    if (error.type === ValueErrorType.Union) {
      const closest = closestVariant(error);
      if (closest) {
        collect(closest, prefix, seen, out, style, conceal);
        continue;
      }
    }
    const pointer = prefix + error.path;
    const path = style === "dotted" ? formatPath(pointer) : pointer === "" ? "/" : pointer;
    if (seen.has(path)) continue;
    seen.add(path);
    out.push(`${path}: ${message(error, conceal)}`);
  }
}

/**
 * Every error, at most one per path (TypeBox reports a missing member twice: required, then type).
 * Config errors use dotted paths (`pools.chat.members[1]`); request bodies use JSON pointers (`/members/1`).
 */
export function schemaErrors(schema: TSchema, value: unknown, options: { prefix?: string; style?: PathStyle; conceal?: Conceal } = {}): string[] {
  const out: string[] = [];
  // Interpreted, not compiled: this runs on boot and admin paths, where compiling the whole config
  // schema would cost more (about 10 ms at startup) than it saves.
  collect(Errors(schema, value), options.prefix ?? "", new Set(), out, options.style ?? "dotted", options.conceal);
  return out;
}
