// `npm run build`: compile src/main.ts into dist/gateway, one self-contained executable.
import { rmSync } from "node:fs";

const outfile = "dist/gateway";
rmSync(outfile, { force: true });
const result = await Bun.build({
  entrypoints: ["src/main.ts"],
  // JavaScriptCore's tier-up thresholds x100 until main.ts sets them back (Bun.unsafe.setJITPolicy(1)),
  // once the first requests have had their turn: a start runs most of its code once, and compiling it
  // cost the six-provider start ~4 ms of its ~26 to the first answer (docs/performance.md, round 4).
  compile: { outfile, jitPolicy: 100 },
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
