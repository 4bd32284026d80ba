// packaging/install.sh against a local HTTP server holding the release (dist/release/), in a throwaway
// HOME: it installs this machine's binary, which runs; a file that does not match SHA256SUMS is refused
// and nothing is installed; an OS or CPU with no build fails naming it; a Mac on Apple silicon (a fake
// `uname` first on PATH) gets the darwin-arm64 file. About 3 s once the release is built (once per test run, shared with release.test.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { hostTarget } from "../../scripts/compile.ts";
import { releaseFile } from "../../scripts/release.ts";
import { ROOT, tempDir } from "../support/gateway.ts";
import { blocksUnder } from "../support/doc-blocks.ts";
import { buildRelease, readExecutable, RELEASE_DIR } from "../support/release.ts";

const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin";
const HOST_FILE = releaseFile(hostTarget());
let server: ReturnType<typeof Bun.serve>;
let tampered: string;

/** The release under /good/; under /tampered/ the same SHA256SUMS, but the host's file is another one. */
beforeAll(async () => {
  await buildRelease();
  tampered = tempDir("gw-tampered-");
  writeFileSync(join(tampered, "SHA256SUMS"), readFileSync(join(RELEASE_DIR, "SHA256SUMS")));
  writeFileSync(join(tampered, HOST_FILE), "#!/bin/sh\necho not the gateway\n");
  const roots: Record<string, string> = { good: RELEASE_DIR, tampered };
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const [, root, name] = new URL(request.url).pathname.split("/");
      const file = roots[root ?? ""] && name && !name.includes("..") ? Bun.file(join(roots[root!]!, name)) : undefined;
      return file ? file.exists().then((ok) => (ok ? new Response(file) : new Response("not found", { status: 404 }))) : new Response("not found", { status: 404 });
    },
  });
}, 240_000);
const made: string[] = [];
afterAll(() => {
  server?.stop(true);
  for (const dir of [tampered, ...made]) if (dir) rmSync(dir, { recursive: true, force: true }); // a gateway is 100 MiB
});

interface Installed {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly home: string;
}

/** Runs `script` with sh in a fresh HOME; `uname`: a fake one first on PATH, printing these for -s and -m; `ldd`: a fake one printing this for --version. */
async function install(script: string, options: { root?: string; env?: Record<string, string>; uname?: [string, string]; ldd?: string; path?: string } = {}): Promise<Installed> {
  const home = tempDir("gw-home-");
  made.push(home);
  let path = options.path ?? SYSTEM_PATH;
  const fakes: Record<string, string> = {};
  if (options.uname) fakes.uname = `case "$1" in -s) echo ${options.uname[0]} ;; -m) echo ${options.uname[1]} ;; *) exit 1 ;; esac`;
  if (options.ldd) fakes.ldd = `printf '%s\\n' '${options.ldd.replaceAll("\n", "' '")}' >&2; exit 1`; // musl's ldd: stderr, exit 1
  if (Object.keys(fakes).length > 0) {
    const bin = join(home, "fake-bin");
    mkdirSync(bin);
    for (const [name, body] of Object.entries(fakes)) {
      writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
      chmodSync(join(bin, name), 0o755);
    }
    path = `${bin}:${path}`;
  }
  const env = { HOME: home, PATH: path, GATEWAY_DOWNLOAD_URL: `http://${server.hostname}:${server.port}/${options.root ?? "good"}`, ...options.env };
  // Async: the server answering the script runs in this process.
  const proc = Bun.spawn(["sh", "-c", script], { cwd: home, env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 60_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr, home };
}

const SCRIPT = `sh ${join(ROOT, "packaging/install.sh")}`;
const installedFiles = (home: string) => (existsSync(join(home, ".local/bin")) ? readdirSync(join(home, ".local/bin")) : []);

describe("packaging/install.sh", () => {
  test("docs/release.md's install, as printed: this machine's binary into ~/.local/bin, checked, and it runs", async () => {
    const [block] = blocksUnder(ROOT, "docs/release.md", "Install script");
    const run = await install(block!.text);
    expect(run.stderr).toContain(`checksum OK (${HOST_FILE})`);
    expect(run.stderr).toContain(`installed gateway ${pkg.version} (commit `);
    // ~/.local/bin is not on this PATH: the script says how to add it.
    expect(run.stderr).toContain(`${join(run.home, ".local/bin")} is not on your PATH; add it`);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^gateway ${pkg.version} \\(commit \\S+, ${hostTarget()}\\)\\n$`));
    expect(installedFiles(run.home)).toEqual(["gateway"]);
  });

  test("README's Download command, as printed, installs the same way", async () => {
    const [block] = blocksUnder(ROOT, "README.md", "Download");
    const run = await install(block!.text);
    expect({ code: run.code, files: installedFiles(run.home) }).toEqual({ code: 0, files: ["gateway"] });
    expect(run.stderr).toContain(`installed gateway ${pkg.version} (commit `);
  });

  test("GATEWAY_INSTALL_DIR on PATH: installed there, no PATH advice; again over it: replaced", async () => {
    const home = tempDir("gw-dir-");
    made.push(home);
    const env = { GATEWAY_INSTALL_DIR: join(home, "bin") };
    for (let i = 0; i < 2; i++) {
      const run = await install(`${SCRIPT} && gateway --version`, { env, path: `${join(home, "bin")}:${SYSTEM_PATH}` });
      expect({ code: run.code, advice: run.stderr.includes("not on your PATH") }).toEqual({ code: 0, advice: false });
      expect(run.stdout).toStartWith(`gateway ${pkg.version} (commit `);
    }
    expect(readdirSync(join(home, "bin"))).toEqual(["gateway"]);
  });

  test("a download that does not match SHA256SUMS is refused with one clear line, and nothing is installed", async () => {
    const run = await install(SCRIPT, { root: "tampered" });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`^gateway install: checksum mismatch for ${HOST_FILE}: SHA256SUMS says [0-9a-f]{64}, the download is [0-9a-f]{64}; nothing installed$`, "m"));
    expect(installedFiles(run.home)).toEqual([]);
  });

  test("an OS or CPU with no build fails naming it, and nothing is installed", async () => {
    for (const [uname, message] of [
      [["FreeBSD", "amd64"], 'no release for the OS "FreeBSD" (uname -s): there are builds for Linux, macOS (Darwin) and Windows'],
      [["Linux", "riscv64"], 'no release for the CPU "riscv64" (uname -m): there are builds for x86_64 and arm64 only'],
      [["MINGW64_NT-10.0", "x86_64"], "on Windows, download gateway-<version>-windows-x64.exe and SHA256SUMS from"],
    ] as const) {
      const run = await install(SCRIPT, { uname: [...uname] });
      expect({ uname, code: run.code, stderr: run.stderr }).toMatchObject({ uname, code: 1, stderr: expect.stringContaining(`gateway install: ${message}`) });
      expect(installedFiles(run.home)).toEqual([]);
    }
  });

  test("a Mac on Apple silicon gets the darwin-arm64 file (checked; it cannot run here, so it is not installed)", async () => {
    const run = await install(SCRIPT, { uname: ["Darwin", "arm64"] });
    const file = releaseFile("darwin-arm64");
    expect(run.stderr).toContain(`downloading http://127.0.0.1:${server.port}/good/${file}\n`);
    expect(run.stderr).toContain(`checksum OK (${file})`);
    // Proof of the pick on a Linux host: the Mach-O arm64 file it checked, which cannot run here.
    expect(await readExecutable(join(RELEASE_DIR, file))).toEqual({ format: "mach-o", cpu: "arm64" });
    expect(run.stderr).toContain(`gateway install: ${file} does not run on this machine (`);
    expect(run.code).toBe(1);
    expect(installedFiles(run.home)).toEqual([]);
  });

  test.skipIf(!Bun.which("shellcheck"))("POSIX sh that shellcheck passes (Debian's shellcheck package)", () => {
    const check = Bun.spawnSync(["shellcheck", "--shell=sh", join(ROOT, "packaging/install.sh")], { stdout: "pipe", stderr: "pipe", timeout: 30_000 });
    expect({ code: check.exitCode, out: check.stdout.toString() }).toEqual({ code: 0, out: "" });
  });

  test("a Linux whose ldd is musl's (Alpine) gets the musl file", async () => {
    const run = await install(SCRIPT, { uname: ["Linux", "x86_64"], ldd: "musl libc (x86_64)\nVersion 1.2.5" });
    const file = releaseFile("linux-x64-musl");
    expect(run.stderr).toContain(`downloading http://127.0.0.1:${server.port}/good/${file}\n`);
    expect(run.stderr).toContain(`checksum OK (${file})`);
    // This host has no musl loader: refused after the check, as on any machine the file cannot run on.
    expect(run.stderr).toContain(`gateway install: ${file} does not run on this machine (`);
    expect(installedFiles(run.home)).toEqual([]);
  });

  test("a target the release does not have, or an address with no release, fails naming it", async () => {
    const base = `http://127.0.0.1:${server.port}`;
    const noFile = await install(SCRIPT, { env: { GATEWAY_TARGET: "linux-riscv64" } });
    expect({ code: noFile.code, stderr: noFile.stderr }).toEqual({ code: 1, stderr: `gateway install: no file for linux-riscv64 in ${base}/good/SHA256SUMS\n` });
    const noRelease = await install(SCRIPT, { root: "nothing-here" });
    expect(noRelease.code).toBe(1);
    expect(noRelease.stderr).toEndWith(`gateway install: cannot download ${base}/nothing-here/SHA256SUMS\n`);
  });

  test("without GATEWAY_DOWNLOAD_URL it says what to set", async () => {
    const run = await install(SCRIPT, { env: { GATEWAY_DOWNLOAD_URL: "" } });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("gateway install: GATEWAY_DOWNLOAD_URL is not set: set it to the address of the folder holding the release files and SHA256SUMS");
  });
});
