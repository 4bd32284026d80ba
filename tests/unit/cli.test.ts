// The command line read without node:util (cli.ts plainArgs) and through parseArgs give the same options
// or the same error, over every short sequence of the words a command line is made of; --version's text.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gitCommit } from "../../scripts/compile.ts";
import { CliError, HELP, parseCli } from "../../src/cli.ts";
import { VERSION, VERSION_LINE } from "../../src/version.ts";

const WORDS = ["--config", "gw.yaml", "--check", "--verify-audit", "--print-default-config", "--log-level", "debug", "bogus", "--version", "--help", "-h", "--config=x.yaml", "--log-level=warn", "--", "-", "-x", "--nope", "", "--check=1", "--__proto__"];
const ENVS: Record<string, string>[] = [{}, { GATEWAY_LOG_LEVEL: "warn" }, { GATEWAY_LOG_LEVEL: "loud" }];

function outcome(argv: string[], env: Record<string, string>, full: boolean): unknown {
  try {
    return parseCli(argv, env, { full });
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    return { error: (error as Error).message };
  }
}

function* sequences(length: number): Generator<string[]> {
  if (length === 0) return yield [];
  for (const rest of sequences(length - 1)) for (const word of WORDS) yield [...rest, word];
}

describe("command line", () => {
  test("both ways read every sequence of up to three words alike", () => {
    let accepted = 0;
    for (let length = 0; length <= 3; length++)
      for (const argv of sequences(length))
        for (const env of ENVS) {
          const fast = outcome(argv, env, false);
          expect({ argv, env, fast }).toEqual({ argv, env, fast: outcome(argv, env, true) });
          if (!(fast as { error?: string }).error) accepted++;
        }
    expect(accepted).toBeGreaterThan(1000);
  });

  test("the usual starts are read without parseArgs, and what it refuses is still refused with its message", () => {
    expect(parseCli(["--config", "gw.yaml", "--log-level", "debug"], {})).toMatchObject({ config: "gw.yaml", logLevel: "debug", check: false });
    expect(parseCli(["--check", "--config", "gw.yaml"], {})).toMatchObject({ config: "gw.yaml", check: true });
    expect(() => parseCli(["--config"], {})).toThrow(CliError);
    expect(() => parseCli(["--config", "--check"], {})).toThrow(CliError);
    expect(() => parseCli(["serve"], {})).toThrow(CliError);
    expect(() => parseCli(["--config", ""], {})).toThrow("--config needs a path");
  });
});

describe("--version", () => {
  test("from source it says so; a build names its commit and target (tests/e2e/release.test.ts runs one)", () => {
    expect(VERSION_LINE).toBe(`gateway ${VERSION} (running from source)`);
    expect(HELP).toContain("--version                print the version, the commit and target it was built from");
    const run = Bun.spawnSync([process.execPath, "src/main.ts", "--version"], { cwd: join(import.meta.dir, "../.."), stdout: "pipe", timeout: 15_000 });
    expect(run.stdout.toString()).toBe(`gateway ${VERSION} (running from source)\n`);
  });

  test("the commit is git's short hash at build time, -dirty with changes, unknown outside a checkout", () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-commit-"));
    try {
      expect(gitCommit(dir)).toBe("unknown");
      const git = (...args: string[]) => expect(Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: dir, stdout: "ignore", stderr: "ignore" }).exitCode).toBe(0);
      git("init", "-q");
      writeFileSync(join(dir, "a"), "1");
      git("add", "a");
      git("commit", "-q", "-m", "a");
      const head = Bun.spawnSync(["git", "rev-parse", "--short=7", "HEAD"], { cwd: dir, stdout: "pipe" }).stdout.toString().trim();
      expect(gitCommit(dir)).toBe(head);
      writeFileSync(join(dir, "b"), "new file");
      expect(gitCommit(dir)).toBe(`${head}-dirty`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
