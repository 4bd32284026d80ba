// Real coding agents through the built gateway (issue 8): Claude Code, Codex CLI, Gemini CLI and opencode,
// each headless, on its own protocol and across to two others, each with (1) a plain answer and (2) a
// round trip through its own file-reading tool. For every run: the CLI exits 0 and prints what the
// upstream said last, the upstream imitation found every request valid, every turn is metered under the
// agents' virtual key, and nothing left loopback: the whole matrix (imitations, gateway, CLIs) runs in a
// fresh network namespace that has only a loopback interface. The CLIs are installed on first run.
import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/temp.ts";
import { startStack } from "./harness.ts";
import { ensureAgents } from "./install.ts";
import { MATRIX, PLAIN_ANSWER, type Outcome } from "./matrix.ts";

/** Whether this machine lets us make a network namespace (root, or user namespaces allowed). */
const canIsolate = Bun.spawnSync(["unshare", "-n", "true"], { stderr: "ignore" }).exitCode === 0;

let outcomes: Outcome[] = [];
let isolatedIn = "";

beforeAll(() => {
  ensureAgents();
  const out = join(tempDir("agents-matrix-"), "outcomes.json");
  const program = `${process.execPath} ${join(import.meta.dir, "matrix.ts")} ${out}`;
  // Loopback only: `ip link set lo up` in the new namespace, then the matrix; anything else is unreachable.
  const argv = canIsolate ? ["unshare", "-n", "sh", "-c", `ip link set lo up && ip -o link show | wc -l && exec ${program}`] : ["sh", "-c", program];
  const ran = Bun.spawnSync(argv, { stdout: "pipe", stderr: "inherit", env: process.env });
  if (ran.exitCode !== 0) throw new Error(`the agent matrix failed to run (exit ${ran.exitCode})`);
  isolatedIn = ran.stdout.toString().trim();
  outcomes = JSON.parse(readFileSync(out, "utf8")) as Outcome[];
}, 1_800_000);

test("the matrix ran in a network namespace whose only interface is loopback", () => {
  expect(canIsolate).toBe(true);
  expect(isolatedIn).toBe("1");
});

for (const [cli, egresses] of Object.entries(MATRIX)) {
  for (const egress of egresses) {
    describe(`${cli} -> ${egress}`, () => {
      const outcome = (kind: "plain" | "tool") => {
        const found = outcomes.find((o) => o.cli === cli && o.egress === egress && o.kind === kind);
        if (!found) throw new Error(`no outcome for ${cli} -> ${egress} (${kind})`);
        return found;
      };
      const expectClean = (o: Outcome) => {
        expect({ code: o.code, stderr: o.code === 0 ? "" : o.stderrTail }).toEqual({ code: 0, stderr: "" });
        expect(o.turns).toBeGreaterThan(0);
        expect(o.invalid).toEqual([]);
        // Every turn metered: each request the upstream answered was admitted and charged under the key.
        expect(o.meteredRequests).toBe(o.turns);
        expect(o.meteredTokens).toBeGreaterThan(0);
      };

      test("plain answer", () => {
        const o = outcome("plain");
        expectClean(o);
        expect(o.stdout).toContain(PLAIN_ANSWER);
      });

      test("tool round trip: the model reads a file through the agent, and answers from it", () => {
        const o = outcome("tool");
        expectClean(o);
        // The imitation answers a request carrying a tool result with "tool result: <its text>".
        expect(o.stdout).toContain("tool result:");
        expect(o.stdout).toContain("PELICAN-7");
        expect(o.turns).toBeGreaterThanOrEqual(2);
      });
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
