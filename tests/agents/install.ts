// Installs the agent CLIs pinned in tests/agents/package.json (their postinstall steps place each CLI's
// native binary; never --ignore-scripts) into tests/agents/node_modules, once: a stamp holding the
// lockfile's hash skips the install while the lockfile is unchanged, so CI and later runs reuse it.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const DIR = import.meta.dir;
const STAMP = join(DIR, "node_modules", ".installed-lock-sha256");

export function ensureAgents(): void {
  const lock = readFileSync(join(DIR, "package-lock.json"));
  const hash = new Bun.CryptoHasher("sha256").update(lock).digest("hex");
  if (existsSync(STAMP) && readFileSync(STAMP, "utf8") === hash) return;
  const installed = Bun.spawnSync(["npm", "ci", "--no-audit", "--no-fund"], { cwd: DIR, stdout: "inherit", stderr: "inherit", env: { ...process.env, npm_config_update_notifier: "false" } });
  if (installed.exitCode !== 0) throw new Error(`npm ci in ${DIR} failed (exit ${installed.exitCode})`);
  writeFileSync(STAMP, hash);
}

if (import.meta.main) ensureAgents();
