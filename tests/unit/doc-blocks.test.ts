// The docs-recipes test names each fenced block by its text: the same text is the same key, any edit a
// new one, so an edited recipe cannot keep a classification it was never checked under.
import { expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/temp.ts";
import { blocksUnder, extractBlocks, firstLine } from "../support/doc-blocks.ts";

function docs(text: string): string {
  const root = tempDir("gw-doc-blocks-");
  mkdirSync(join(root, "docs"));
  writeFileSync(join(root, "README.md"), text);
  return root;
}

test("blocks keep their language, nearest heading, line and text; a longer fence holds a shorter one", () => {
  const root = docs("# Title\n\n## Run it\n\n```sh\n\n./dist/gateway   # start\n```\n\ntext\n\n````md\n```yaml\na: 1\n```\n````\n~~~\nplain\n~~~\n");
  const blocks = extractBlocks(root, "README.md");
  expect(blocks.map(({ lang, heading, line, text }) => ({ lang, heading, line, text }))).toEqual([
    { lang: "sh", heading: "Run it", line: 5, text: "\n./dist/gateway   # start\n" },
    { lang: "md", heading: "Run it", line: 12, text: "```yaml\na: 1\n```\n" },
    { lang: "", heading: "Run it", line: 17, text: "plain\n" },
  ]);
  expect(firstLine(blocks[0]!)).toBe("./dist/gateway   # start");
});

test("the key is the file and the text's hash: moving a block keeps it, editing one character does not", () => {
  const [a] = extractBlocks(docs("```sh\ncurl -s 127.0.0.1:8080/healthz\n```\n"), "README.md");
  const [moved] = extractBlocks(docs("# New heading\n\nprose\n\n```sh\ncurl -s 127.0.0.1:8080/healthz\n```\n"), "README.md");
  const [edited] = extractBlocks(docs("```sh\ncurl -s 127.0.0.1:8081/healthz\n```\n"), "README.md");
  expect(moved!.key).toBe(a!.key);
  expect(edited!.key).not.toBe(a!.key);
  expect(a!.key).toMatch(/^README\.md#[0-9a-f]{10}$/);
});

test("blocksUnder: the blocks whose nearest heading is the one named, none under a sub-heading; none is an error", () => {
  const root = docs("## Install\n\n```sh\na\n```\n\n### Then\n\n```sh\nb\n```\n\n## Install\n\n```yaml\nc: 1\n```\n");
  expect(blocksUnder(root, "README.md", "Install").map(({ lang, text }) => ({ lang, text }))).toEqual([
    { lang: "sh", text: "a\n" },
    { lang: "yaml", text: "c: 1\n" },
  ]);
  expect(() => blocksUnder(root, "README.md", "Uninstall")).toThrow('README.md has no code block under a heading "Uninstall"');
});
