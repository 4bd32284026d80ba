// YAML parsing with the bounds a text from the admin API needs: a nesting bound checked while the text
// is read (10^5 levels in 200 KB made the parser's recursive steps run for seconds, then overflow), and
// an alias bound when the tree is built (a "billion laughs" of a few lines expands to millions of nodes).
// Either is refused whole, quickly, as `refused`, never as a thrown error.
import { Composer, Lexer, LineCounter, Parser, YAMLParseError, type Document } from "yaml";
import { MAX_JSON_DEPTH } from "../http/json-depth.ts";

/** Deepest nesting a config text may have: the JSON bound, so neither form of a config can stall the process. */
export const MAX_YAML_DEPTH = MAX_JSON_DEPTH;
/** Alias uses a tree may expand (yaml's own default guard, made explicit). */
export const MAX_YAML_ALIASES = 100;

class TooDeep extends Error {}

/** The parser's tokens, stopped as soon as nesting passes the bound: one linear pass, before any recursion. */
function* boundedTokens(parser: Parser, text: string) {
  // The parser's stack holds the document and the scalar being read besides one entry per level.
  const limit = MAX_YAML_DEPTH + 2;
  for (const lexeme of new Lexer().lex(text)) {
    yield* parser.next(lexeme);
    if (parser.stack.length > limit) throw new TooDeep();
  }
  yield* parser.end();
}

export type Parsed = { doc: Document; lines: LineCounter } | { refused: string };

/** One YAML document (a second one is an error in it), or why the text is refused. */
export function parseYamlBounded(text: string): Parsed {
  const lines = new LineCounter();
  lines.addNewLine(0); // as Parser.parse() does first: line 1 starts at offset 0
  try {
    let doc: Document | undefined;
    for (const next of new Composer({ uniqueKeys: true }).compose(boundedTokens(new Parser(lines.addNewLine), text), true, text.length)) {
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
