// YAML parsing with the bounds a text from the admin API needs: a size bound (the yaml package reads
// about a megabyte per second here, all of it on the event loop), a nesting bound checked while the text
// is read (10^5 levels in 200 KB made the parser's recursive steps run for seconds, then overflow), and
// an alias bound when the tree is built (a "billion laughs" of a few lines expands to millions of nodes).
// Each is refused whole, quickly, as `refused`, never as a thrown error.
import type { Document, LineCounter, Parser } from "yaml";
import { yaml } from "./yaml-package.ts";
import { MAX_JSON_DEPTH } from "../http/json-depth.ts";

/** Deepest nesting a config text may have: the JSON bound, so neither form of a config can stall the process. */
export const MAX_YAML_DEPTH = MAX_JSON_DEPTH;
/** Alias uses a tree may expand (yaml's own default guard, made explicit). */
export const MAX_YAML_ALIASES = 100;
/** Longest config text, in characters: far beyond any real config, short enough to read in well under a second. */
export const MAX_YAML_LENGTH = 1024 * 1024;

class TooDeep extends Error {}

/** The parser's tokens, stopped as soon as nesting passes the bound: one linear pass, before any recursion. */
function* boundedTokens(parser: Parser, text: string) {
  // The parser's stack holds the document and the scalar being read besides one entry per level.
  const limit = MAX_YAML_DEPTH + 2;
  for (const lexeme of new (yaml().Lexer)().lex(text)) {
    yield* parser.next(lexeme);
    if (parser.stack.length > limit) throw new TooDeep();
  }
  yield* parser.end();
}

export type Parsed = { doc: Document; lines: LineCounter } | { refused: string };

/**
 * One YAML document (a second one is an error in it), or why the text is refused. `maxLength`: the
 * overlay file, which the gateway writes itself from settings bodies, is not held to the config bound.
 */
export function parseYamlBounded(text: string, maxLength = MAX_YAML_LENGTH): Parsed {
  if (text.length > maxLength) return { refused: `YAML text is longer than ${MAX_YAML_LENGTH} characters (1 MiB)` };
  const { Composer, LineCounter, Parser, YAMLParseError } = yaml();
  const lines = new LineCounter();
  lines.addNewLine(0); // as Parser.parse() does first: line 1 starts at offset 0
  try {
    let doc: Document | undefined;
    // logLevel "error": the package's process warnings (a collection used as a key) print the key after
    // `${VAR}` expansion, so a value from the environment would reach stderr unscrubbed.
    for (const next of new Composer({ uniqueKeys: false, logLevel: "error" }).compose(boundedTokens(new Parser(lines.addNewLine), text), true, text.length)) {
      if (doc) {
        doc.errors.push(new YAMLParseError([next.range[0], next.range[1]], "MULTIPLE_DOCS", "Source contains multiple documents"));
        break;
      }
      doc = next;
    }
    return { doc: doc!, lines };
  } catch (error) {
    if (error instanceof TooDeep) return { refused: `YAML nests deeper than ${MAX_YAML_DEPTH} levels` };
    // The composer recurses: whatever got past the bound ends here, not in a 500.
    if (error instanceof RangeError) return { refused: "YAML is too deeply nested to read" };
    throw error;
  }
}

/** The tree, or a refusal when its aliases expand past the bound. */
export function toTree(doc: Document): { tree: unknown } | { refused: string } {
  try {
    return { tree: doc.toJS({ maxAliasCount: MAX_YAML_ALIASES }) ?? {} };
  } catch (error) {
    // yaml throws a ReferenceError ("excessive alias count") for an alias bomb.
    if (error instanceof ReferenceError || error instanceof RangeError) return { refused: `YAML aliases expand past ${MAX_YAML_ALIASES} uses` };
    throw error;
  }
}

/**
 * A key given twice in one mapping (the second would silently win). Checked here in one pass: the yaml
 * package's own `uniqueKeys` compares each key with every earlier one, and 10^5 keys took minutes.
 * The key is not named: after `${VAR}` expansion it may hold a value from the environment.
 */
export function duplicateKeyLines(doc: Document, lines: LineCounter): number[] {
  const found: number[] = [];
  const { isScalar, visit } = yaml();
  visit(doc, {
    Map(_key, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        const key = String(pair.key.value);
        if (seen.has(key)) found.push(pair.key.range ? lines.linePos(pair.key.range[0]).line : 0);
        seen.add(key);
      }
    },
  });
  return found.sort((a, b) => a - b);
}
