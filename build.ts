// `npm run build`: compile src/main.ts into dist/gateway, one self-contained executable for this machine.
import { compile, gitCommit } from "./scripts/compile.ts";

const outfile = "dist/gateway";
const errors = await compile({ outfile, commit: gitCommit(import.meta.dir) });
if (errors.length > 0) {
  for (const error of errors) console.error(error);
  process.exit(1);
}
console.log(`built ${outfile}`);
