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
  // `npm install --no-save`, not `npm ci`: npm leaves the CLIs' other-platform binaries (optional
  // dependencies) out of the lockfile, which `npm ci` then refuses as out of sync.
  const installed = Bun.spawnSync(["npm", "install", "--no-audit", "--no-fund", "--no-save"], { cwd: DIR, stdout: "inherit", stderr: "inherit", env: { ...process.env, npm_config_update_notifier: "false" } });
  if (installed.exitCode !== 0) throw new Error(`npm install in ${DIR} failed (exit ${installed.exitCode})`);
  writeFileSync(STAMP, hash);
}

if (import.meta.main) ensureAgents();
