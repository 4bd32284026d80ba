// Real coding agents through the built gateway (issue 8): Claude Code, Codex CLI, Gemini CLI and opencode,
// each headless, each on its own protocol and across to two others, each with (1) a plain answer and
// (2) a round trip through its own file-reading tool: the CLI exits 0 and prints what the upstream said
// last, the upstream imitation found every request valid, and no request left loopback (every provider
// in the config is an imitation on 127.0.0.1). The CLIs are installed on first run (tests/agents/install.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ensureAgents } from "./install.ts";
import { PLAIN_ANSWER, plain, readFile, runAgent, SECRET_LINE, startStack, type Cli, type Egress, type Stack } from "./harness.ts";

/** Each CLI's own protocol first, then two others. */
const MATRIX: Record<Cli, Egress[]> = {
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

const RUN_TIMEOUT_MS = 120_000;

beforeAll(() => ensureAgents(), 600_000);

for (const [cli, egresses] of Object.entries(MATRIX) as [Cli, Egress[]][]) {
  for (const egress of egresses) {
    describe(`${cli} -> ${egress}`, () => {
      let stack: Stack;
      beforeAll(async () => {
        stack = await startStack(egress);
      });
      afterAll(async () => {
        await stack?.stop();
      });

      /**
       * The run's requests (runAgent resets the imitation) reached it and every one was valid, and every
       * turn was metered under the agents' key (the ledger is written within a second, so it is polled).
       */
      const expectValidMeteredTraffic = async (before: { requests: number; tokens: number }) => {
        const turns = stack.upstream.requests.length;
        expect(turns).toBeGreaterThan(0);
        expect(stack.upstream.invalid().map((r) => `${r.path}: ${r.problem}`)).toEqual([]);
        let after = await stack.usage();
        // Requests are counted at admission, tokens when each answer's usage is known: wait for both.
        for (let i = 0; i < 30 && (after.requests - before.requests < turns || after.tokens <= before.tokens); i++) {
          await Bun.sleep(100);
          after = await stack.usage();
        }
        expect(after.requests - before.requests).toBe(turns);
        expect(after.tokens).toBeGreaterThan(before.tokens);
      };

      test(
        "plain answer",
        async () => {
          const before = await stack.usage();
          const run = await runAgent(cli, stack, "Reply with one short sentence.", () => plain(), RUN_TIMEOUT_MS);
          expect({ code: run.code, stderr: run.code === 0 ? "" : run.stderr.slice(-3000) }).toEqual({ code: 0, stderr: "" });
          expect(run.stdout).toContain(PLAIN_ANSWER);
          await expectValidMeteredTraffic(before);
        },
        RUN_TIMEOUT_MS + 10_000,
      );

      test(
        "tool round trip: the model reads a file through the agent, and answers from it",
        async () => {
          const before = await stack.usage();
          const run = await runAgent(cli, stack, "Read notes.txt and tell me the launch code.", READER[cli], RUN_TIMEOUT_MS);
          expect({ code: run.code, stderr: run.code === 0 ? "" : run.stderr.slice(-3000) }).toEqual({ code: 0, stderr: "" });
          // The imitation answers a request carrying a tool result with "tool result: <its text>".
          expect(run.stdout).toContain("tool result:");
          expect(run.stdout).toContain("PELICAN-7");
          expect(SECRET_LINE).toContain("PELICAN-7");
          await expectValidMeteredTraffic(before);
        },
        RUN_TIMEOUT_MS + 10_000,
      );
    });
  }
}

describe("Codex CLI's WebSocket probe", () => {
  test("GET /v1/responses answers 426 at once, in the Responses error shape, so the client falls back to HTTP", async () => {
    const stack = await startStack("responses");
    try {
      const probe = await fetch(`${stack.gateway.data}/v1/responses`, { headers: { upgrade: "websocket", connection: "Upgrade", authorization: `Bearer ${stack.key.token}` } });
      expect(probe.status).toBe(426);
      const body = (await probe.json()) as { error: { type: string; message: string } };
      expect(body.error.type).toBe("invalid_request_error");
    } finally {
      await stack.stop();
    }
  });
});
