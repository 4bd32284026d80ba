// Compiled TypeBox checkers, built on first use. Compiling every protocol's schemas at load cost cold
// start for protocols a deployment may never see; once built, a check never interprets a schema.
import type { TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { formatPath } from "../config/schema-errors.ts";

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

export function checkerFor<T extends TSchema>(schema: T): TypeCheck<T> {
  let check = compiled.get(schema);
  if (!check) compiled.set(schema, (check = TypeCompiler.Compile(schema)));
  return check as TypeCheck<T>;
}

/** A record of checkers by name, each compiled the first time it is read. */
export function checkers<T extends Record<string, TSchema>>(schemas: T): { readonly [K in keyof T]: TypeCheck<T[K]> } {
  const out = {} as { [K in keyof T]: TypeCheck<T[K]> };
  for (const name of Object.keys(schemas) as (keyof T)[]) Object.defineProperty(out, name, { get: () => checkerFor(schemas[name]!), enumerable: true });
  return out;
}

/** A member's path: a formatted prefix (`messages[1]`) joined with a JSON pointer inside it (`/content/0`). */
export function joinPointer(prefix: string, pointer: string): string {
  const inner = formatPath(pointer);
  if (inner === "(root)") return prefix;
  if (prefix === "") return inner;
  return inner.startsWith("[") ? `${prefix}${inner}` : `${prefix}.${inner}`;
}
