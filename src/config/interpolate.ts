// `${VAR}` interpolation. `${VAR:-fallback}` supplies a default; `$${` is a literal `${`; whole-line
// comments are left alone so a commented-out `${VAR}` never stops startup.
//
// References are found in the text (a variable may stand for a scalar or part of one: a port, a flag, a
// key, a piece of a URL), but each is first replaced by a mark and expanded only after the YAML is
// parsed, inside the scalar that holds it. So a value from the environment can never change the
// document's structure nor show in a YAML syntax error, and every value the config took from the
// environment is known, to be kept out of every error message (Concealed).
import type { Document, LineCounter } from "yaml";
import { yaml } from "./yaml-package.ts";

const REFERENCE = /\$(\$?)\{([^}]*)\}/g;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Private-use characters: no config is written with them, and YAML reads them as plain text anywhere. */
const MARK = /\uE000(\d+)\uE001/g;
const mark = (index: number) => `\uE000${index}\uE001`;
/** True when a text holds a reference left unexpanded (a dry run that reads no environment). */
export const hasMark = (text: string) => text.includes("\uE000");

interface Reference {
  readonly name: string;
  readonly fallback: string | undefined;
}

export interface MarkedText {
  readonly text: string;
  readonly references: readonly Reference[];
  readonly errors: string[];
}

/** The text with each well-formed reference replaced by a mark; a malformed one is an error. */
export function markReferences(text: string, source: string): MarkedText {
  const errors: string[] = [];
  const references: Reference[] = [];
  const lines = text.split("\n").map((line, index) => {
    if (/^\s*#/.test(line)) return line;
    return line.replace(REFERENCE, (whole, escaped: string, body: string, at: number) => {
      if (escaped) return whole.slice(1);
      const fallbackAt = body.indexOf(":-");
      const name = fallbackAt === -1 ? body : body.slice(0, fallbackAt);
      if (!VAR_NAME.test(name)) {
        // Not quoted: what sits between the braces may be a secret pasted there by mistake (${sk-...}).
        errors.push(`${source}:${index + 1}: malformed variable reference at column ${at + 1} (\${...} takes a variable name of letters, digits and _, not starting with a digit; not shown)`);
        return whole;
      }
      references.push({ name, fallback: fallbackAt === -1 ? undefined : body.slice(fallbackAt + 2) });
      return mark(references.length - 1);
    });
  });
  return { text: lines.join("\n"), references, errors };
}

/** A message that may quote marked text, with each mark shown as the reference it stands for. */
export function unmark(message: string, references: readonly Reference[]): string {
  return message.replace(MARK, (whole, index: string) => {
    const ref = references[Number(index)];
    return ref ? `\${${ref.name}}` : whole;
  });
}

/**
 * The values a config took from the environment through `${VAR}`, by variable name. No error message
 * shows one: a quoted value holding one is described by its variable instead, and a finished message is
 * scrubbed of them (raw or JSON-escaped) in case a path or a name carries one.
 */
export class Concealed {
  readonly #names = new Map<string, string>();

  add(name: string, value: string): void {
    if (value !== "") this.#names.set(value, name);
  }

  addAll(other: Concealed | undefined): void {
    if (other) for (const [value, name] of other.#names) this.#names.set(value, name);
  }

  /** The variable whose value `text` holds, if any. */
  variableIn(text: string): string | undefined {
    for (const [value, name] of this.#names) if (text.includes(value)) return name;
    return undefined;
  }

  scrub(message: string): string {
    let out = message;
    // Longest first, so a value inside another is not replaced before the one holding it. Values under
    // four characters (a digit, a flag) are left to variableIn: replacing every "1" would garble paths.
    const values = [...this.#names.keys()].filter((v) => v.length >= 4).sort((a, b) => b.length - a.length);
    for (const value of values) {
      const label = `\${${this.#names.get(value)}}`;
      out = out.replaceAll(value, label).replaceAll(JSON.stringify(value).slice(1, -1), label);
    }
    return out;
  }
}

/**
 * YAML 1.2 core-schema reading of a plain scalar, as the text would have read had it been written in place.
 * yaml-simple.ts leaves every text this reads as other than a string, but for the plainest spellings, to the yaml package.
 */
export function plainScalar(text: string): unknown {
  const t = text.trim();
  if (/^(?:~|null|Null|NULL|)$/.test(t)) return null;
  if (/^(?:true|True|TRUE)$/.test(t)) return true;
  if (/^(?:false|False|FALSE)$/.test(t)) return false;
  if (/^0o[0-7]+$/.test(t)) return parseInt(t.slice(2), 8);
  if (/^0x[0-9a-fA-F]+$/.test(t)) return parseInt(t.slice(2), 16);
  if (/^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/.test(t)) return Number(t);
  if (/^[-+]?\.(?:inf|Inf|INF)$/.test(t)) return t.startsWith("-") ? -Infinity : Infinity;
  if (/^\.(?:nan|NaN|NAN)$/.test(t)) return NaN;
  return t;
}

/**
 * One scalar's marks expanded from `env`, each value used recorded in `concealed`. `plain`: an untagged
 * plain scalar, read again as the text would have read had it been written in place. `unset`: the
 * variables with no value and no fallback, one per reference, each left as `${NAME}` in the value.
 */
export function expandScalar(text: string, plain: boolean, references: MarkedText["references"], env: Readonly<Record<string, string | undefined>>, concealed: Concealed): { value: unknown; unset: string[] } {
  let used: string | undefined;
  const unset: string[] = [];
  const expanded = text.replace(MARK, (whole, index: string) => {
    const ref = references[Number(index)];
    if (!ref) return whole;
    const found = env[ref.name];
    if (found !== undefined) {
      concealed.add(ref.name, found);
      used = ref.name;
      return found;
    }
    if (ref.fallback !== undefined) return ref.fallback;
    unset.push(ref.name);
    return `\${${ref.name}}`;
  });
  const value = plain ? plainScalar(expanded) : expanded;
  // As read (trimmed, or a number whose digits differ from the text: 0123 is 123), it is concealed too.
  // Not a text beside the reference ("Bearer ${TOKEN}"): the value alone is concealed already, and the
  // whole text named as the variable would be written back (storedText, GET /config/source) without it.
  const alone = /^\s*\uE000\d+\uE001\s*$/.test(text);
  if (used !== undefined && ((alone && typeof value === "string") || Number.isFinite(value))) concealed.add(used, String(value));
  return { value, unset };
}

/**
 * Expands the marks inside the parsed document's scalars (keys included) from `env`, recording each
 * value used in `concealed`; an unset variable with no fallback is an error naming its line.
 */
export function expandReferences(doc: Document, marked: MarkedText, env: Readonly<Record<string, string | undefined>>, lines: LineCounter, source: string): { concealed: Concealed; errors: string[] } {
  const concealed = new Concealed();
  const errors: string[] = [];
  if (marked.references.length === 0) return { concealed, errors };
  const { isScalar, visit } = yaml();
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== "string" || !hasMark(node.value)) return;
      const expanded = expandScalar(node.value, node.type === "PLAIN" && !node.tag && isScalar(node), marked.references, env, concealed);
      node.value = expanded.value;
      if (expanded.unset.length === 0) return;
      const line = node.range ? lines.linePos(node.range[0]).line : "?";
      for (const name of expanded.unset) errors.push(`${source}:${line}: environment variable ${name} is not set (referenced as \${${name}})`);
    },
  });
  return { concealed, errors };
}
