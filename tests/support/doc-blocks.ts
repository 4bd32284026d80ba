// The fenced code blocks of README.md and docs/*.md, each named by a key that changes when its text does,
// so tests/e2e/docs-recipes.test.ts can hold every block to the way tests/fixtures/doc-blocks.ts says it
// is run or checked, and a new or edited block fails until someone classifies it.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

export interface DocBlock {
  /** Path from the repository root, e.g. docs/operations.md. */
  readonly file: string;
  /** Line of the opening fence (1-based). */
  readonly line: number;
  /** The info string's first word ("sh", "yaml", "" for none). */
  readonly lang: string;
  /** The nearest heading above the block. */
  readonly heading: string;
  /** The block's text, without the fences, ending in a newline. */
  readonly text: string;
  /** `file#hash`: 10 hex digits of the text's SHA-256, so any edit is a new key. */
  readonly key: string;
}

export const docFiles = (root: string): string[] => [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`),
];

export function extractBlocks(root: string, file: string): DocBlock[] {
  const lines = readFileSync(join(root, file), "utf8").split("\n");
  const blocks: DocBlock[] = [];
  let heading = "";
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i]!);
    if (!open) {
      if (/^#{1,6} /.test(lines[i]!)) heading = lines[i]!.replace(/^#+ /, "");
      continue;
    }
    const fence = open[2]!;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !lines[j]!.trimStart().startsWith(fence)) body.push(lines[j++]!);
    const text = body.join("\n") + "\n";
    const hash = createHash("sha256").update(text).digest("hex").slice(0, 10);
    blocks.push({ file, line: i + 1, lang: open[3] ?? "", heading, text, key: `${file}#${hash}` });
    i = j;
  }
  return blocks;
}

export const allBlocks = (root: string): DocBlock[] => docFiles(root).flatMap((file) => extractBlocks(root, file));

/**
 * The blocks of `file` whose nearest heading is `heading` (its text without the #s), in order: how a test
 * reads a doc's recipe to run it as printed. docs-recipes.test.ts holds a block classified `runBy` to a
 * call written out as `blocksUnder(ROOT, "<file>", "<heading>")` in that test, so keep the arguments literal.
 */
export function blocksUnder(root: string, file: string, heading: string): DocBlock[] {
  const under = extractBlocks(root, file).filter((block) => block.heading === heading);
  if (under.length === 0) throw new Error(`${file} has no code block under a heading "${heading}"`);
  return under;
}

/** The first line that says something, for messages. */
export const firstLine = (block: DocBlock): string => block.text.split("\n").find((line) => line.trim() !== "") ?? "";

/** Whether nothing listens on 127.0.0.1:port (an exclusive bind succeeds). */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ host: "127.0.0.1", port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}
