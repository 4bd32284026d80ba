// The command line read without node:util (cli.ts plainArgs) and through parseArgs give the same options
// or the same error, over every short sequence of the words a command line is made of.
import { describe, expect, test } from "bun:test";
import { CliError, parseCli } from "../../src/cli.ts";

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
