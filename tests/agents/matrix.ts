// The agent matrix as one program: every CLI x upstream protocol x (plain, tool round trip), each run's
// outcome written as JSON. agents.test.ts runs it inside a fresh network namespace holding only
// loopback, so a CLI, the gateway or an imitation that tried to reach any other host would fail there.
import { writeFileSync } from "node:fs";
import { PLAIN_ANSWER, plain, readFile, runAgent, startStack, type Cli, type Egress, type Stack } from "./harness.ts";

/** Each CLI's own protocol first, then two others. */
export const MATRIX: Record<Cli, Egress[]> = {
  claude: ["anthropic", "openai", "gemini"],
  codex: ["responses", "anthropic", "openai"],
  gemini: ["gemini", "anthropic", "responses"],
  opencode: ["openai", "anthropic", "gemini"],
};

/** The file reader each agent offers the model, and the arguments it takes. */
const READER: Record<Cli, ReturnType<typeof readFile>> = {
  claude: readFile(/^Read$/, (path) => ({ file_path: path })),
  codex: readFile(/^exec_command$/, (path) => ({ cmd: `cat ${path}` })),
  gemini: readFile(/^read_file$/, (path) => ({ file_path: path })),
  opencode: readFile(/^read$/, (path) => ({ filePath: path })),
};

export type Kind = "plain" | "tool";
export const PROMPTS: Record<Kind, string> = { plain: "Reply with one short sentence.", tool: "Read notes.txt and tell me the launch code." };

export interface Outcome {
  readonly cli: Cli;
  readonly egress: Egress;
  readonly kind: Kind;
  readonly code: number | null;
  readonly stdout: string;
  readonly stderrTail: string;
  /** Requests the imitation received in this run, and those it found invalid (path: problem). */
  readonly turns: number;
  readonly invalid: string[];
  /** What the gateway metered under the agents' key during the run. */
  readonly meteredRequests: number;
  readonly meteredTokens: number;
}

const RUN_TIMEOUT_MS = 120_000;

/** Waits for the ledger (written within a second): requests counted at admission, tokens when usage is known. */
async function metered(stack: Stack, before: { requests: number; tokens: number }, turns: number) {
  let after = await stack.usage();
  for (let i = 0; i < 30 && (after.requests - before.requests < turns || after.tokens <= before.tokens); i++) {
    await Bun.sleep(100);
    after = await stack.usage();
  }
  return { meteredRequests: after.requests - before.requests, meteredTokens: after.tokens - before.tokens };
}

export async function runMatrix(only?: (cli: Cli, egress: Egress) => boolean): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const [cli, egresses] of Object.entries(MATRIX) as [Cli, Egress[]][]) {
    for (const egress of egresses) {
      if (only && !only(cli, egress)) continue;
      const stack = await startStack(egress);
      try {
        for (const kind of ["plain", "tool"] as const) {
          const before = await stack.usage();
          const run = await runAgent(cli, stack, PROMPTS[kind], kind === "plain" ? () => plain() : READER[cli], RUN_TIMEOUT_MS);
          const turns = stack.upstream.requests.length;
          outcomes.push({
            cli,
            egress,
            kind,
            code: run.code,
            stdout: run.stdout.slice(-4000),
            stderrTail: run.stderr.slice(-3000),
            turns,
            invalid: stack.upstream.invalid().map((r) => `${r.path}: ${r.problem}`),
            ...(await metered(stack, before, turns)),
          });
        }
      } finally {
        await stack.stop();
      }
    }
  }
  return outcomes;
}

export { PLAIN_ANSWER };

if (import.meta.main) {
  const out = Bun.argv[2];
  if (!out) throw new Error("usage: bun tests/agents/matrix.ts OUT.json");
  writeFileSync(out, JSON.stringify(await runMatrix(), null, 1));
}
