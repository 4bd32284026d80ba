// Every config-like text the tests hold: the corpus the config readers' equivalence tests run over.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./gateway.ts";

/** Every backtick or double-quoted string in the tests that looks like YAML, JS interpolations filled in. */
export function testTexts(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.ts$/.test(entry.name)) files.push(path);
    }
  };
  walk(join(ROOT, "tests"));
  const texts: string[] = [];
  for (const file of files) {
    const source = readFileSync(file, "utf8");
    for (const match of source.matchAll(/`((?:[^`\\]|\\.)*)`/g)) {
      const body = match[1]!.replace(/(?<!\\)\$\{[^{}]*\}/g, "x").replace(/\\\$\{/g, "${").replace(/\\n/g, "\n").replace(/\\(.)/g, "$1");
      if (/^\s*[A-Za-z_-]+:/m.test(body)) texts.push(body);
    }
    for (const match of source.matchAll(/"((?:[^"\\\n]|\\.)*\\n(?:[^"\\\n]|\\.)*)"/g)) {
      try {
        const body = JSON.parse(`"${match[1]}"`) as string;
        if (/^\s*[A-Za-z_-]+:/m.test(body)) texts.push(body);
      } catch {}
    }
  }
  return texts;
}
