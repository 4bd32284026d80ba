// A hook's settings checked against its module's settingsSchema at register time (hooks-plugins.md):
// the JSON Schema keywords a settings bag uses (type, properties, required, additionalProperties, items,
// enum, const, minimum, maximum, minLength, maxLength, pattern, minItems, maxItems); others are not
// judged here (the module still sees its settings). Errors name the member by JSON pointer and never
// quote a value: settings may hold secrets. A secret reference ({env} or {file}) stands for a string.
type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isSecretRef = (v: unknown) => isObject(v) && Object.keys(v).length === 1 && (typeof v.env === "string" || typeof v.file === "string");

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

const matchesType = (actual: string, wanted: string) => actual === wanted || (wanted === "number" && actual === "integer");

function check(schema: unknown, value: unknown, at: string, out: string[]): void {
  if (!isObject(schema)) return;
  const path = at === "" ? "/settings" : `/settings${at}`;
  const types = schema.type === undefined ? [] : ([] as unknown[]).concat(schema.type).map(String);
  // Resolved at run time, so only its place is judged: a reference where a string goes.
  if (isSecretRef(value)) {
    if (types.length > 0 && !types.includes("string") && !types.includes("object")) out.push(`${path}: expected ${types.join(" or ")}, got a secret reference`);
    return;
  }
  const actual = typeOf(value);
  if (types.length > 0 && !types.some((t) => matchesType(actual, t))) {
    out.push(`${path}: expected ${types.join(" or ")}, got ${actual === "integer" ? "number" : actual}`);
    return;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) out.push(`${path}: not one of the allowed values`);
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) out.push(`${path}: not the required value`);
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) out.push(`${path}: must be at least ${schema.minimum}`);
    if (typeof schema.maximum === "number" && value > schema.maximum) out.push(`${path}: must be at most ${schema.maximum}`);
  }
  if (typeof value === "string") {
    if (typeof schema.minLength === "number" && value.length < schema.minLength) out.push(`${path}: shorter than ${schema.minLength}`);
    if (typeof schema.maxLength === "number" && value.length > schema.maxLength) out.push(`${path}: longer than ${schema.maxLength}`);
    if (typeof schema.pattern === "string" && !safeTest(schema.pattern, value)) out.push(`${path}: does not match the pattern ${schema.pattern}`);
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === "number" && value.length < schema.minItems) out.push(`${path}: fewer than ${schema.minItems} items`);
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems) out.push(`${path}: more than ${schema.maxItems} items`);
    value.forEach((item, i) => check(schema.items, item, `${at}/${i}`, out));
  }
  if (isObject(value)) {
    const properties = isObject(schema.properties) ? schema.properties : {};
    for (const name of Array.isArray(schema.required) ? schema.required : []) {
      if (typeof name === "string" && !(name in value)) out.push(`${path}/${name}: required member missing`);
    }
    for (const [name, member] of Object.entries(value)) {
      const pointer = `${at}/${name.replaceAll("~", "~0").replaceAll("/", "~1")}`;
      if (name in properties) check(properties[name], member, pointer, out);
      else if (schema.additionalProperties === false) out.push(`/settings${pointer}: unknown member`);
      else check(schema.additionalProperties, member, pointer, out);
    }
  }
}

function safeTest(pattern: string, value: string): boolean {
  try {
    return new RegExp(pattern, "u").test(value);
  } catch {
    return true; // a pattern JavaScript cannot read is the module's to judge
  }
}

/** Every way `settings` misses `schema`, each naming its member by pointer (`/settings/url: ...`). */
export function settingsErrors(schema: Schema, settings: Record<string, unknown>): string[] {
  const out: string[] = [];
  check(schema, settings, "", out);
  return out;
}
