// `npm run release` (scripts/release.ts): one binary per target, each for the OS and CPU its name says
// (read from its header bytes), SHA256SUMS matching every file and checkable by `sha256sum -c`, and the
// host's binary printing its version, commit and target; docs/release.md's commands as printed. About
// 10 s here with Bun's target runtimes fetched afresh, 6 s with them cached; bounded at 4 minutes for a
// slow registry.
import { beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { gitCommit, hostTarget, type Target } from "../../scripts/compile.ts";
import { RELEASE_FILES, releaseFile, TARGETS } from "../../scripts/release.ts";
import { baseEnv, ROOT, tempDir } from "../support/gateway.ts";
import { blocksUnder } from "../support/doc-blocks.ts";
import { buildRelease, readExecutable, RELEASE_DIR, type Executable } from "../support/release.ts";

const EXPECTED: Record<Target, Executable> = {
  "linux-x64": { format: "elf", machine: "x86-64", interpreter: "/lib64/ld-linux-x86-64.so.2" },
  "linux-arm64": { format: "elf", machine: "aarch64", interpreter: "/lib/ld-linux-aarch64.so.1" },
  "linux-x64-musl": { format: "elf", machine: "x86-64", interpreter: "/lib/ld-musl-x86_64.so.1" },
  "linux-arm64-musl": { format: "elf", machine: "aarch64", interpreter: "/lib/ld-musl-aarch64.so.1" },
  "darwin-x64": { format: "mach-o", cpu: "x86_64" },
  "darwin-arm64": { format: "mach-o", cpu: "arm64" },
  "windows-x64": { format: "pe", machine: "amd64" },
};

let output = "";
beforeAll(async () => {
  output = await buildRelease();
}, 240_000);

describe("npm run release", () => {
  test("one file per target, named with the version and the target, and SHA256SUMS", () => {
    expect(blocksUnder(ROOT, "docs/release.md", "Release binaries").map((block) => block.text)).toEqual(["npm run release\n"]); // what beforeAll ran
    const names = TARGETS.map(releaseFile);
    expect(names).toContain(`gateway-${pkg.version}-linux-x64`);
    expect(names).toContain(`gateway-${pkg.version}-windows-x64.exe`);
    expect(readdirSync(RELEASE_DIR).sort()).toEqual([...names, "install.sh", "SHA256SUMS"].sort());
    expect(output).toContain(`release ${pkg.version}`);
  });

  test("each file is an executable for the OS and CPU its name says", async () => {
    for (const target of TARGETS) expect({ target, is: await readExecutable(join(RELEASE_DIR, releaseFile(target))) }).toEqual({ target, is: EXPECTED[target] });
  });

  test("SHA256SUMS lists every file with its digest, in sha256sum's format", async () => {
    const lines = readFileSync(join(RELEASE_DIR, "SHA256SUMS"), "utf8").trimEnd().split("\n");
    expect(lines.length).toBe(RELEASE_FILES.length);
    for (const name of RELEASE_FILES) {
      const digest = new Bun.CryptoHasher("sha256").update(await Bun.file(join(RELEASE_DIR, name)).arrayBuffer()).digest("hex");
      expect(lines).toContain(`${digest}  ${name}`);
    }
    const check = Bun.spawnSync(["sha256sum", "-c", "SHA256SUMS"], { cwd: RELEASE_DIR, stdout: "pipe", stderr: "pipe" });
    expect({ code: check.exitCode, out: check.stdout.toString().trim().split("\n").length }).toEqual({ code: 0, out: RELEASE_FILES.length });
  }, 60_000); // every binary hashed twice: over 5 s on a slow disk

  test("docs/release.md's check of a download passes a good file and fails a bad one, as printed", () => {
    const [block] = blocksUnder(ROOT, "docs/release.md", "Check a download");
    const name = releaseFile("darwin-arm64");
    const dir = tempDir("gw-sums-");
    copyFileSync(join(RELEASE_DIR, "SHA256SUMS"), join(dir, "SHA256SUMS"));
    copyFileSync(join(RELEASE_DIR, name), join(dir, name));
    const run = () => Bun.spawnSync(["sh", "-ec", block!.text], { cwd: dir, env: baseEnv(), stdout: "pipe", stderr: "pipe", timeout: 30_000 });
    const good = run();
    expect({ code: good.exitCode, out: good.stdout.toString() }).toEqual({ code: 0, out: `${name}: OK\n${name}: OK\n` });
    writeFileSync(join(dir, name), "not the gateway");
    const bad = run();
    rmSync(dir, { recursive: true, force: true });
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stdout.toString()).toContain(`${name}: FAILED`);
  });

  test("the host's binary prints its version, the commit it was built from and its target", () => {
    const run = Bun.spawnSync([join(RELEASE_DIR, releaseFile(hostTarget())), "--version"], { stdout: "pipe", stderr: "pipe", timeout: 15_000 });
    expect(run.exitCode).toBe(0);
    expect(run.stdout.toString()).toBe(`gateway ${pkg.version} (commit ${gitCommit(ROOT)}, ${hostTarget()})\n`);
    expect(gitCommit(ROOT)).toMatch(/^[0-9a-f]{7,}(-dirty)?$/);
    // docs/release.md's command, with the host's file installed as `gateway` on PATH.
    const bin = tempDir("gw-bin-");
    symlinkSync(join(RELEASE_DIR, releaseFile(hostTarget())), join(bin, "gateway"));
    for (const block of blocksUnder(ROOT, "docs/release.md", "Which build is this")) {
      const printed = Bun.spawnSync(["sh", "-ec", block.text], { env: baseEnv({ PATH: `${bin}:${process.env.PATH}` }), stdout: "pipe", timeout: 15_000 });
      expect(printed.stdout.toString()).toBe(run.stdout.toString());
    }
    rmSync(bin, { recursive: true, force: true });
  });
});
