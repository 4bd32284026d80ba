// What the binary loads before its first line runs. The bundle hoists every builtin a module imports to
// the top of the binary, whether or not that module is ever evaluated: node:zlib, node:crypto and
// node:util, imported by the plugin modules a start never runs, cost every start ~3 ms before main()
// (docs/performance.md, "Seventh round"). A builtin only some path needs is required where it is used.
import { expect, test } from "bun:test";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");

/** Builtins every start uses: the config and store files, the store itself. */
const AT_START = new Set(["fs", "path", "bun:sqlite", "fs/promises" /* also a dependency's own (strtok3, under Elysia) */]);

test("the bundle imports at its top only the builtins every start uses", async () => {
  const built = await Bun.build({ entrypoints: [join(ROOT, "src/main.ts")], target: "bun", format: "esm", minify: false, throw: false });
  expect(built.success).toBe(true);
  const text = await built.outputs[0]!.text();
  const hoisted = new Set([...text.matchAll(/^import\s[^;]*?from\s*"([^"]+)";?$/gm)].map((m) => m[1]!.replace(/^node:/, "")));
  expect(hoisted.size).toBeGreaterThan(0);
  expect([...hoisted].filter((name) => !AT_START.has(name))).toEqual([]);
});
