// The one way this project compiles src/main.ts into an executable: `npm run build` (build.ts, for this
// machine) and `npm run release` (scripts/release.ts, every target) both call compile().
import { rmSync } from "node:fs";
import { buildConsole } from "../console/build.ts";

/** A release target: Bun's compile target without its `bun-` prefix, as it appears in file names and --version. */
export type Target = "linux-x64" | "linux-arm64" | "linux-x64-musl" | "linux-arm64-musl" | "darwin-x64" | "darwin-arm64" | "windows-x64";

/** The target this process runs on (the label of a host build: `npm run build`). */
export function hostTarget(): Target {
  const os = process.platform === "win32" ? "windows" : process.platform;
  // glibcVersionRuntime is absent from the report of a process linked against musl (Alpine).
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  const musl = os === "linux" && !header?.glibcVersionRuntime;
  return `${os}-${process.arch}${musl ? "-musl" : ""}` as Target;
}

/** `<commit>` or `<commit>-dirty` from git at build time; "unknown" outside a git checkout or without git. */
export function gitCommit(cwd: string): string {
  const git = (args: string[]) => {
    try {
      const run = Bun.spawnSync(["git", ...args], { cwd, stdout: "pipe", stderr: "ignore" });
      return run.exitCode === 0 ? run.stdout.toString().trim() : undefined;
    } catch {
      return undefined; // no git on PATH
    }
  };
  const commit = git(["rev-parse", "--short=7", "HEAD"]);
  if (!commit) return "unknown";
  // Untracked files count: a new source file changes the binary as much as an edited one.
  return git(["status", "--porcelain"]) ? `${commit}-dirty` : commit;
}

export interface CompileOptions {
  readonly outfile: string;
  /** Omitted: the running Bun itself is the runtime (no download). */
  readonly target?: Target;
  /** The label baked into --version and InfoView.build (defaults to target, else the host's). */
  readonly label?: Target;
  readonly commit: string;
  /** Default src/main.ts; a test compiles a small harness the same way (tests/e2e/plugins.test.ts). */
  readonly entrypoint?: string;
}

/** Compiles src/main.ts; returns the error logs, empty on success. */
export async function compile(options: CompileOptions): Promise<string[]> {
  rmSync(options.outfile, { force: true });
  let consoleFiles: string;
  try {
    consoleFiles = JSON.stringify(await buildConsole());
  } catch (error) {
    return [(error as Error).message];
  }
  const result = await Bun.build({
    // The ledger's read worker is its own entry point: a compiled binary can start only workers built into it
    // (src/store/read-worker.ts names it relative to src/, the bundle's root).
    entrypoints: options.entrypoint ? [options.entrypoint] : ["src/main.ts", "src/store/read-worker.ts"],
    // JavaScriptCore's tier-up thresholds x100 until main.ts sets them back (Bun.unsafe.setJITPolicy(1)),
    // once the first requests have had their turn: a start runs most of its code once, and compiling it
    // cost the six-provider start ~4 ms of its ~26 to the first answer (docs/performance.md, round 4).
    // Every release target takes it and `bytecode` (both land in each file; docs/release.md). Only the
    // host's file runs in the tests; the others are checked by their headers.
    // No .env, no bunfig.toml from the working directory: a file dropped there could set a secret or run
    // code in the gateway, and looking for them listed the working directory and each one above it
    // (12 ms of a start under a /tmp of 19,000 entries). tests/e2e/working-dir.test.ts.
    compile: { outfile: options.outfile, jitPolicy: 100, autoloadBunfig: false, autoloadDotenv: false, ...(options.target ? { target: `bun-${options.target}` as const } : {}) },
    minify: true,
    bytecode: true,
    // The operator console's files (console/build.ts), as the module src/admin/console.ts imports.
    plugins: [
      {
        name: "console-files",
        setup(build) {
          build.onResolve({ filter: /^gateway:console-assets$/ }, () => ({ path: "console-assets", namespace: "gateway" }));
          build.onLoad({ filter: /.*/, namespace: "gateway" }, () => ({ contents: `export default ${consoleFiles};`, loader: "js" }));
        },
      },
    ],
    sourcemap: "none",
    target: "bun",
    // Replaced in the bundle by literals, so --version reads no file and costs nothing at start;
    // src/version.ts falls back to "source" when they are absent (bun src/main.ts).
    define: {
      GATEWAY_BUILD_COMMIT: JSON.stringify(options.commit),
      GATEWAY_BUILD_TARGET: JSON.stringify(options.label ?? options.target ?? hostTarget()),
    },
  });
  return result.success ? [] : result.logs.map(String);
}
