// `npm run release`: every release binary into dist/release/, named gateway-<version>-<target>[.exe],
// and SHA256SUMS in `sha256sum` format (`sha256sum -c SHA256SUMS` checks them). Bun fetches each
// foreign target's runtime from the npm registry once and caches it (docs/release.md).
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VERSION } from "../src/version.ts";
import { compile, gitCommit, type Target } from "./compile.ts";

/**
 * Why these: the five laptop and server platforms, plus musl for Alpine images (x64 and arm64; the glibc
 * build does not start there). No `-baseline`: the pinned Bun's x64 runtime targets SSE4.2 and picks its
 * AVX2 paths at run time, so a baseline build would be the same file. No windows-arm64: x64 runs there
 * under emulation.
 */
export const TARGETS: readonly Target[] = ["linux-x64", "linux-arm64", "linux-x64-musl", "linux-arm64-musl", "darwin-arm64", "darwin-x64", "windows-x64"];

export const RELEASE_DIR = join(import.meta.dir, "..", "dist", "release");

export const releaseFile = (target: Target) => `gateway-${VERSION}-${target}${target.startsWith("windows") ? ".exe" : ""}`;

/** Every file a release holds besides SHA256SUMS: the binaries and the install script that picks one. */
export const RELEASE_FILES: readonly string[] = [...TARGETS.map(releaseFile), "install.sh"];

if (import.meta.main) {
  const root = join(import.meta.dir, "..");
  const commit = gitCommit(root);
  const started = performance.now();
  rmSync(RELEASE_DIR, { recursive: true, force: true });
  mkdirSync(RELEASE_DIR, { recursive: true });
  // One at a time: each compile is CPU-bound and a 100 MiB write; in parallel they only contend.
  const sums: string[] = [];
  const sum = async (name: string) => sums.push(`${new Bun.CryptoHasher("sha256").update(await Bun.file(join(RELEASE_DIR, name)).arrayBuffer()).digest("hex")}  ${name}`);
  for (const target of TARGETS) {
    const t0 = performance.now();
    const name = releaseFile(target);
    const errors = await compile({ outfile: join(RELEASE_DIR, name), target, commit });
    if (errors.length > 0) {
      console.error(`release: ${target} failed to compile:`);
      for (const error of errors) console.error(error);
      process.exit(1);
    }
    await sum(name);
    console.log(`built ${name} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  // Served beside the binaries, so `curl -fsSL "$GATEWAY_DOWNLOAD_URL/install.sh" | sh` needs one address.
  copyFileSync(join(root, "packaging/install.sh"), join(RELEASE_DIR, "install.sh"));
  await sum("install.sh");
  writeFileSync(join(RELEASE_DIR, "SHA256SUMS"), `${sums.join("\n")}\n`);
  // Bun may leave build side files (a .bun-build temp) beside the outputs on some targets.
  const extra = readdirSync(RELEASE_DIR).filter((f) => f !== "SHA256SUMS" && !RELEASE_FILES.includes(f));
  if (extra.length > 0) console.warn(`release: unexpected files in ${RELEASE_DIR}: ${extra.join(", ")}`);
  console.log(`release ${VERSION} (commit ${commit}): ${TARGETS.length} binaries, install.sh and SHA256SUMS in dist/release/, ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
