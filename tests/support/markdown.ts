// The shell blocks a doc prints, so a test runs them exactly as printed and the doc cannot rot.
import { readFileSync } from "node:fs";

/** The fenced code blocks under `heading` (up to the next heading of any level), in order. */
export function codeBlocks(path: string, heading: string): string[] {
  const lines = readFileSync(path, "utf8").split("\n");
  const start = lines.findIndex((line) => /^#+ /.test(line) && line.replace(/^#+ /, "") === heading);
  if (start === -1) throw new Error(`${path} has no heading "${heading}"`);
  const blocks: string[] = [];
  let block: string[] | undefined;
  for (const line of lines.slice(start + 1)) {
    if (!block && /^#+ /.test(line)) break;
    if (line.startsWith("```")) {
      if (block) blocks.push(block.join("\n") + "\n"), (block = undefined);
      else block = [];
    } else block?.push(line);
  }
  if (blocks.length === 0) throw new Error(`${path}: no code block under "${heading}"`);
  return blocks;
}
