// A fresh clone has bun only as a devDependency, not on PATH: every `bun scripts/...` a doc prints must
// go through npx, and name a script that exists (the generated-doc tests run the scripts themselves).
import { expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const DOCS = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

test("every scripts/ command in README and docs runs through npx bun and names an existing script", () => {
  const found: string[] = [];
  for (const doc of DOCS) {
    for (const match of readFileSync(join(ROOT, doc), "utf8").matchAll(/(npx )?bun (scripts\/[\w.-]+)/g)) {
      found.push(`${doc}: ${match[0]}`);
      expect({ doc, command: match[0], npx: match[1] }).toEqual({ doc, command: match[0], npx: "npx " });
      expect(existsSync(join(ROOT, match[2]!))).toBe(true);
    }
  }
  expect(found.length).toBeGreaterThanOrEqual(5);
});
