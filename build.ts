// `npm run build`: compile src/main.ts into dist/gateway, one self-contained executable.
import { rmSync } from "node:fs";

const outfile = "dist/gateway";
rmSync(outfile, { force: true });
const result = await Bun.build({
  entrypoints: ["src/main.ts"],
  compile: { outfile },
  minify: true,
  bytecode: true,
  sourcemap: "none",
  target: "bun",
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.log(`built ${outfile}`);
