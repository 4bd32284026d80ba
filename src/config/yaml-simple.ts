// A reader for the plain shape nearly every config file has (block mappings and sequences, one-line flow
// collections, plain and double-quoted scalars, comments), so a start does not pay for the yaml package:
// its lexer, parser and composer run cold in the interpreter, 7 to 14 ms for a 56-line file.
//
// It gives the tree the full path (yaml-bounded.ts, then interpolate.ts) would give, or `undefined` the
// moment the text leaves that shape or anything could differ: anchors, aliases, tags, directives, a
// second document, tabs, escapes, single quotes, block scalars, multi-line scalars, complex keys, a
// duplicate key, an unset variable, a number in any form but plain decimals, nesting past the bound.
// The full path then reads the text again and reports its errors with line numbers, so this reader never
// judges a text, it only builds the trees of texts that are fine. tests/unit/config-yaml-simple.test.ts
// holds both paths to the same trees over every config the tests use.
import { expandScalar, plainScalar, type Concealed, type MarkedText } from "./interpolate.ts";
import { MAX_YAML_LENGTH } from "./yaml-bounded.ts";

/** Not in the shape: the full path reads the text. */
class Unsure extends Error {}
const unsure = (): never => {
  throw new Unsure();
};

/** Whitespace but spaces and line feeds (tabs, CR, BOM, NBSP...) and control characters: the full path judges them. */
const ODD_CHARACTERS = /[^\S \n]|[\x00-\x08\x0E-\x1F\x7F-\x9F]/;
/** Characters that may start or sit in a construct this reader does not handle (in values; comments may hold anything). */
const OUT_OF_SHAPE = /[\\'&*!|>%@`?]/;
/**
 * Nesting this reader takes: far below the full path's bound (MAX_YAML_DEPTH, which the yaml parser's
 * stack reaches at 32 levels of `- key:`), so every text it reads is one the full path reads too.
 */
const MAX_DEPTH = 16;
const KEY = /^(?:[A-Za-z_][A-Za-z0-9_.\/-]*|"[^"\\\uE000]*")/;
const DECIMAL_INT = /^(?:0|-?[1-9][0-9]{0,14})$/;
const DECIMAL_FLOAT = /^-?(?:0|[1-9][0-9]{0,14})\.[0-9]{1,15}$/;

interface Line {
  indent: number;
  text: string;
}

type Scalar = (raw: string, plain: boolean) => unknown;

export interface SimpleContext {
  readonly marked: MarkedText;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** False: marks stay in the tree (a dry run that reads no environment). */
  readonly resolve: boolean;
  readonly concealed: Concealed;
}

/** The tree of `ctx.marked.text`, or undefined when the full path must read it. */
export function readSimpleYaml(ctx: SimpleContext): unknown {
  const text = ctx.marked.text;
  if (text.length > MAX_YAML_LENGTH || ODD_CHARACTERS.test(text) || ctx.marked.errors.length > 0) return undefined;
  const lines: Line[] = [];
  for (const raw of text.split("\n")) {
    const body = raw.trimStart();
    if (body === "" || body.startsWith("#")) continue;
    lines.push({ indent: raw.length - body.length, text: body });
  }
  if (lines.length === 0) return undefined;
  const scalar: Scalar = (raw, plain) => {
    if (!raw.includes("\uE000")) return plain ? plainValue(raw) : raw;
    if (!ctx.resolve) return raw;
    const expanded = expandScalar(raw, plain, ctx.marked.references, ctx.env, ctx.concealed);
    return expanded.unset.length === 0 ? expanded.value : unsure();
  };
  try {
    const reader = new Reader(lines, scalar);
    const tree = reader.block(lines[0]!.indent, 1);
    return reader.at === lines.length ? tree : undefined;
  } catch (error) {
    if (error instanceof Unsure) return undefined;
    throw error;
  }
}

/** A plain scalar with no mark: only the spellings whose reading is beyond doubt. */
function plainValue(text: string): unknown {
  const value = plainScalar(text);
  if (typeof value === "string") return value;
  return text === "null" || text === "true" || text === "false" || DECIMAL_INT.test(text) || DECIMAL_FLOAT.test(text) ? value : unsure();
}

/** A key's name, when it reads as the same string on both paths and is not one the mapping has. */
function newKey(key: string, mapping: Record<string, unknown>): string {
  // YAML ends an implicit key within 1024 characters; the full path reports a longer one.
  if (key.length > 1000) unsure();
  const name = key.startsWith('"') ? key.slice(1, -1) : key;
  if (!key.startsWith('"') && typeof plainScalar(name) !== "string") unsure();
  if (Object.hasOwn(mapping, name) || name === "__proto__") unsure();
  return name;
}

/** `key:` or a dash: a block collection starting on the dash's line. */
function startsCollection(content: string): boolean {
  if (content === "-" || content.startsWith("- ")) return true;
  const key = KEY.exec(content)?.[0];
  return key !== undefined && content[key.length] === ":";
}

class Reader {
  at = 0;
  constructor(
    private readonly lines: Line[],
    private readonly scalar: Scalar,
  ) {}

  /** The block collection whose first line is the current one, at `indent`. */
  block(indent: number, depth: number): unknown {
    if (depth > MAX_DEPTH) unsure();
    const first = this.lines[this.at]!;
    return first.text === "-" || first.text.startsWith("- ") ? this.sequence(indent, depth) : this.mapping(indent, depth);
  }

  private mapping(indent: number, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let line = this.lines[this.at]; line && line.indent >= indent; line = this.lines[this.at]) {
      if (line.indent > indent) unsure();
      const key = KEY.exec(line.text)?.[0] ?? unsure();
      if (line.text[key.length] !== ":") unsure();
      const name = newKey(key, out);
      const rest = line.text.slice(key.length + 1);
      if (rest !== "" && !rest.startsWith(" ")) unsure();
      this.at++;
      out[name] = this.value(rest, indent, depth, true);
    }
    return out;
  }

  private sequence(indent: number, depth: number): unknown[] {
    const out: unknown[] = [];
    for (let line = this.lines[this.at]; line && line.indent >= indent; line = this.lines[this.at]) {
      if (line.indent > indent) unsure();
      // A key at the sequence's indent ends it: the sequence was the value of the key above, at its indent.
      if (!(line.text === "-" || line.text.startsWith("- "))) break;
      const rest = line.text.slice(1);
      const content = rest.trimStart();
      if (startsCollection(content)) {
        // `- key: value` or `- - item`: a collection that starts on the dash's line, at its content's column.
        line.indent += 1 + rest.length - content.length;
        line.text = content;
        out.push(this.block(line.indent, depth + 1));
        continue;
      }
      this.at++;
      out.push(this.value(rest, indent, depth, false));
    }
    return out;
  }

  /**
   * What follows `key:` or `-` on its line; when nothing does, the block below it (deeper, or for a key
   * a sequence at the key's own indent), else null.
   */
  private value(rest: string, indent: number, depth: number, ofKey: boolean): unknown {
    const text = rest.trimStart();
    const next = this.lines[this.at];
    if (text === "" || text.startsWith("#")) {
      if (next && (next.indent > indent || (ofKey && next.indent === indent && (next.text === "-" || next.text.startsWith("- "))))) {
        return this.block(next.indent, depth + 1);
      }
      return null;
    }
    // A deeper line after a value on this one would continue a multi-line scalar.
    if (next && next.indent > indent) unsure();
    const flow = new Flow(text, this.scalar, depth);
    const value = flow.value();
    flow.end();
    return value;
  }
}

/** One line's value: a one-line flow collection or a scalar, then at most a comment. */
class Flow {
  private at = 0;
  constructor(
    private readonly text: string,
    private readonly scalar: Scalar,
    private readonly depth: number,
  ) {}

  value(inFlow = false, depth = this.depth): unknown {
    if (depth > MAX_DEPTH) unsure();
    const c = this.text[this.at];
    if (c === "{") return this.map(depth + 1);
    if (c === "[") return this.list(depth + 1);
    if (c === '"') return this.quoted();
    return this.plain(inFlow);
  }

  /** Nothing but spaces and a comment left. */
  end(): void {
    const rest = this.text.slice(this.at);
    if ((rest.trim() !== "" && !/^ +#/.test(rest)) || OUT_OF_SHAPE.test(this.text.slice(0, this.at))) unsure();
  }

  private spaces(): void {
    while (this.text[this.at] === " ") this.at++;
  }

  private map(depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.at++;
    this.spaces();
    if (this.text[this.at] === "}") return this.close(out);
    for (;;) {
      const key = KEY.exec(this.text.slice(this.at))?.[0] ?? unsure();
      const name = newKey(key, out);
      this.at += key.length;
      if (this.text[this.at] !== ":" || this.text[this.at + 1] !== " ") unsure();
      this.at++;
      this.spaces();
      out[name] = this.value(true, depth);
      this.spaces();
      const c = this.text[this.at];
      if (c === "}") return this.close(out);
      if (c !== ",") unsure();
      this.at++;
      this.spaces();
    }
  }

  private list(depth: number): unknown[] {
    const out: unknown[] = [];
    this.at++;
    this.spaces();
    if (this.text[this.at] === "]") return this.close(out);
    for (;;) {
      out.push(this.value(true, depth));
      this.spaces();
      const c = this.text[this.at];
      if (c === "]") return this.close(out);
      if (c !== ",") unsure();
      this.at++;
      this.spaces();
    }
  }

  private close<T>(value: T): T {
    this.at++;
    return value;
  }

  private quoted(): unknown {
    const close = this.text.indexOf('"', this.at + 1);
    if (close === -1) unsure();
    const raw = this.text.slice(this.at + 1, close);
    this.at = close + 1;
    return this.scalar(raw, false);
  }

  /** Up to a flow indicator (in a flow collection) or a comment; never `: ` or a leading indicator. */
  private plain(inFlow: boolean): unknown {
    const start = this.at;
    const stop = inFlow ? /[,\[\]{}"#]| #|: |:$/g : /[\[\]{}"#]| #|: |:$/g;
    stop.lastIndex = start;
    const found = stop.exec(this.text);
    const end = found ? found.index : this.text.length;
    if (found && !inFlow && found[0] !== " #") unsure();
    if (found && inFlow && /^(?:[\[{"#]|: ?)$/.test(found[0])) unsure();
    const raw = this.text.slice(start, end).trimEnd();
    if (raw === "" || raw.endsWith(":") || (/^[-:,]/.test(raw) && !/^-[0-9]/.test(raw))) unsure();
    this.at = start + raw.length;
    return this.scalar(raw, true);
  }
}
