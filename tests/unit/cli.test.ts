// The command line read without node:util (cli.ts plainArgs) and through parseArgs give the same options
// or the same error, over every short sequence of the words a command line is made of; --version's text.
import { describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/temp.ts";
import { overrideTree } from "../../src/config/listen.ts";
import { gitCommit } from "../../scripts/compile.ts";
import { VERSION, VERSION_LINE } from "../../src/version.ts";
import { CliError, HELP, parseCli } from "../../src/cli.ts";

const WORDS = ["--config", "gw.yaml", "--check", "--verify-audit", "--print-default-config", "--log-level", "debug", "bogus", "--version", "--help", "-h", "--config=x.yaml", "--log-level=warn", "--", "-", "-x", "--nope", "", "--check=1", "--__proto__", "--listen", "127.0.0.1:0", "--admin-listen", "--port", "8090", "99999"];
const ENVS: Record<string, string>[] = [{}, { GATEWAY_LOG_LEVEL: "warn" }, { GATEWAY_LOG_LEVEL: "loud" }, { GATEWAY_LISTEN: "[::1]:0", GATEWAY_ADMIN_LISTEN: "nope" }];

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

  test("--listen beats $GATEWAY_LISTEN, an empty variable is unset, and bad addresses are refused naming their source", () => {
    expect(parseCli(["--listen", "0.0.0.0:9000"], { GATEWAY_LISTEN: "127.0.0.1:7000" })).toMatchObject({ listen: "0.0.0.0:9000" });
    expect(parseCli([], { GATEWAY_LISTEN: "127.0.0.1:7000", GATEWAY_ADMIN_LISTEN: "[::1]:0" })).toMatchObject({ listen: "127.0.0.1:7000", adminListen: "[::1]:0" });
    expect(parseCli([], { GATEWAY_LISTEN: "" })).toMatchObject({ listen: undefined, adminListen: undefined, port: undefined });
    expect(() => parseCli(["--listen", "8080"], {})).toThrow('--listen: expected an address host:port (IPv6 as [::1]:port), got "8080"');
    expect(() => parseCli(["--admin-listen", "127.0.0.1:65536"], {})).toThrow("--admin-listen: port 65536 is above 65535");
    // A value from the environment is named by its variable, as config errors do.
    expect(() => parseCli([], { GATEWAY_LISTEN: "secret-host" })).toThrow("GATEWAY_LISTEN: expected an address host:port (IPv6 as [::1]:port), got the value of ${GATEWAY_LISTEN} (not shown)");
    expect(() => parseCli(["--port", "http"], {})).toThrow('--port: expected a port number 0-65535, got "http"');
    expect(() => parseCli(["--port", "70000"], {})).toThrow("--port: expected a port number 0-65535");
    expect(() => parseCli(["--listen", "127.0.0.1:1", "--port", "2"], {})).toThrow("--listen and --port both set the data-plane address: give one");
  });

  test("--port keeps the host otherwise in force: $GATEWAY_LISTEN's, else the config's, else 127.0.0.1", () => {
    const tree = (argv: string[], env: Record<string, string>, configured?: string) => overrideTree(parseCli(argv, env), configured);
    expect(tree(["--port", "0"], {}, "0.0.0.0:8080")).toEqual({ listen: "0.0.0.0:0" });
    expect(tree(["--port", "9"], { GATEWAY_LISTEN: "[::1]:1" }, "0.0.0.0:8080")).toEqual({ listen: "[::1]:9" });
    expect(tree(["--port", "9"], {}, undefined)).toEqual({ listen: "127.0.0.1:9" });
    expect(tree(["--port", "9"], {}, "not an address")).toEqual({ listen: "127.0.0.1:9" });
    expect(tree(["--admin-listen", "127.0.0.2:0"], {}, "0.0.0.0:8080")).toEqual({ admin_listen: "127.0.0.2:0" });
    expect(tree([], {}, "0.0.0.0:8080")).toEqual({});
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
    const dir = tempDir("gw-commit-");
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
