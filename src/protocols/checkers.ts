// TypeBox checkers, compiled once they are in use. Compiling every protocol's schemas at load cost cold
// start for protocols a deployment may never see; compiling on the first use put TypeBox's code
// generation, slow while it is itself cold (1 to 2 ms a schema), into the first request. So the first
// uses are interpreted (Value.Check: the same verdicts, TypeBox's own reference for its compiler) and
// the check is compiled at its COMPILE_AT-th use; from then on a check never interprets a schema.
import type { Static, TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { Errors } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import { formatPath } from "../config/schema-errors.ts";

/** The use of a checker at which it is compiled. */
const COMPILE_AT = 3;

/** What callers use of a checker: a verdict, and the errors when it says no (always interpreted). */
export type Checker<T extends TSchema = TSchema> = Pick<TypeCheck<T>, "Check" | "Errors">;

class TieredCheck<T extends TSchema> implements Checker<T> {
  #uses = 0;
  constructor(readonly schema: T) {}
  Check = (value: unknown): value is Static<T> => {
    if (++this.#uses < COMPILE_AT) return Value.Check(this.schema, value);
    const compiled = TypeCompiler.Compile(this.schema);
    this.Check = (next: unknown): next is Static<T> => compiled.Check(next);
    return compiled.Check(value);
  };
  Errors(value: unknown): ReturnType<TypeCheck<T>["Errors"]> {
    return Errors(this.schema, value);
  }
}

const built = new WeakMap<TSchema, Checker>();

export function checkerFor<T extends TSchema>(schema: T): Checker<T> {
  let check = built.get(schema);
  if (!check) built.set(schema, (check = new TieredCheck(schema)));
  return check as Checker<T>;
}

/** A record of checkers by name, each made the first time it is read. */
export function checkers<T extends Record<string, TSchema>>(schemas: T): { readonly [K in keyof T]: Checker<T[K]> } {
  const out = {} as { [K in keyof T]: Checker<T[K]> };
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
