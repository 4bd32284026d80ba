// Runs a real coding-agent CLI, headless, through the built gateway to a local upstream imitation of one
// vendor: the imitation (tests/support/upstreams) checks every request as strictly as the vendor would
// and answers as scripted; the gateway routes the agent's own model names by `*` pool patterns. Every
// run has a fresh HOME and working directory, `</dev/null` as stdin, and no route off loopback.
import { mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tempDir } from "../support/temp.ts";
import { LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { startAnthropicUpstream } from "../support/upstreams/anthropic.ts";
import type { Behaviour, Upstream } from "../support/upstreams/common.ts";
import { startGeminiUpstream } from "../support/upstreams/gemini.ts";
import { startOpenAIUpstream } from "../support/upstreams/openai.ts";

export type Egress = "anthropic" | "openai" | "responses" | "gemini";
export type Cli = "claude" | "codex" | "gemini" | "opencode";

export const AGENTS_DIR = import.meta.dir;
const bin = (cli: Cli) => join(AGENTS_DIR, "node_modules", ".bin", cli);

const ADMIN_TOKEN = "agents-admin-token-4b5a";
const SIGNING_KEY = "agents-signing-key-0123456789abcdef";
/** What the file the agent is asked to read holds: the tool round trip's proof. */
export const SECRET_LINE = "The launch code is PELICAN-7.";
export const FILE_NAME = "notes.txt";

export interface Stack {
  readonly upstream: Upstream;
  readonly gateway: RunningGateway;
  /** The virtual key every agent presents: what it does is metered under it. */
  readonly key: { readonly id: string; readonly token: string };
  /** The key's metered requests and tokens so far (GET /keys/{id}/usage, from the ledger). */
  usage(): Promise<{ requests: number; tokens: number }>;
  stop(): Promise<void>;
}

function startImitation(egress: Egress): Upstream {
  if (egress === "anthropic") return startAnthropicUpstream();
  if (egress === "gemini") return startGeminiUpstream();
  return startOpenAIUpstream();
}

/** A provider block for the imitation, in the gateway's config. */
function providerYaml(egress: Egress, up: Upstream): string {
  const base = egress === "openai" || egress === "responses" ? up.baseURL : up.url;
  return `{protocol: ${egress}, base_url: "${base}", api_key: "${up.apiKey}"}`;
}

/** The gateway in front of one imitation: every agent model name (`claude-*`, `gpt-*`, `gemini-*`, ...) reaches it. */
export async function startStack(egress: Egress): Promise<Stack> {
  const upstream = startImitation(egress);
  const gateway = await startGateway(
    `${LISTEN_ANY}store: {module: sqlite, settings: {path: ./state/gateway.db}}
providers:
  up: ${providerYaml(egress, upstream)}
models:
  agent-lane: {provider: up, model: imitation-model}
pools:
  "claude-*": {members: [{model: agent-lane}]}
  "gpt-*": {members: [{model: agent-lane}]}
  "gemini-*": {members: [{model: agent-lane}]}
  "o*": {members: [{model: agent-lane}]}
  coding: {members: [{model: agent-lane}]}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
`,
    // GATEWAY_LOG_LEVEL=debug shows each translation warning (what a pair could not carry).
    { env: { GW_SIGNING_KEY: SIGNING_KEY, GW_ADMIN: ADMIN_TOKEN, ...(process.env.GATEWAY_LOG_LEVEL && { GATEWAY_LOG_LEVEL: process.env.GATEWAY_LOG_LEVEL }) } },
  );
  const admin = (path: string, init: RequestInit = {}) => fetch(`${gateway.admin}${path}`, { ...init, headers: { "x-admin-token": ADMIN_TOKEN, "content-type": "application/json" } });
  const minted = await admin("/keys", { method: "POST", body: JSON.stringify({ name: `agents-${egress}` }) });
  if (minted.status !== 201) throw new Error(`minting the agents' key: ${minted.status} ${await minted.text()}`);
  const key = (await minted.json()) as { id: string; token: string };
  return {
    upstream,
    gateway,
    key,
    async usage() {
      const view = (await (await admin(`/keys/${key.id}/usage`)).json()) as { requests: number; tokens: number };
      return { requests: view.requests, tokens: view.tokens };
    },
    async stop() {
      await gateway.stop();
      upstream.stop();
    },
  };
}

export interface AgentRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly workDir: string;
}

/** A fresh HOME and working directory holding the file the agent may be asked to read. */
function freshDirs(): { home: string; work: string } {
  const home = tempDir("agent-home-");
  const work = tempDir("agent-work-");
  writeFileSync(join(work, FILE_NAME), `${SECRET_LINE}\n`);
  return { home, work };
}

const QUIET = { DISABLE_TELEMETRY: "1", DISABLE_AUTOUPDATER: "1", NO_UPDATE_NOTIFIER: "1", DO_NOT_TRACK: "1", NO_COLOR: "1", CI: "1" };

/** The command line and environment of one CLI pointed at the gateway. */
function invocation(cli: Cli, gatewayUrl: string, prompt: string, home: string, token: string): { argv: string[]; env: Record<string, string> } {
  const base = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, TMPDIR: tmpdir(), ...QUIET };
  switch (cli) {
    case "claude":
      return {
        argv: [bin("claude"), "-p", prompt, "--allowedTools", "Read", "--max-turns", "4"],
        env: { ...base, ANTHROPIC_BASE_URL: gatewayUrl, ANTHROPIC_API_KEY: token, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1" },
      };
    case "codex": {
      const codexHome = join(home, ".codex");
      mkdirSync(codexHome, { recursive: true });
      writeFileSync(
        join(codexHome, "config.toml"),
        `model = "gpt-5-codex"
model_provider = "gateway"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[analytics]
enabled = false

[otel]
exporter = "none"

[model_providers.gateway]
name = "gateway"
base_url = "${gatewayUrl}/v1"
env_key = "GW_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`,
      );
      return { argv: [bin("codex"), "exec", "--skip-git-repo-check", prompt], env: { ...base, CODEX_HOME: codexHome, GW_KEY: token } };
    }
    case "gemini": {
      mkdirSync(join(home, ".gemini"), { recursive: true });
      writeFileSync(
        join(home, ".gemini", "settings.json"),
        JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } }, privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false }, general: { disableAutoUpdate: true, disableUpdateNag: true } }),
      );
      return {
        argv: [bin("gemini"), "-p", prompt, "--yolo"],
        env: { ...base, GEMINI_API_KEY: token, GOOGLE_GEMINI_BASE_URL: gatewayUrl, GEMINI_CLI_TRUST_WORKSPACE: "true" },
      };
    }
    case "opencode":
      return {
        argv: [bin("opencode"), "run", "-m", "gateway/gpt-4o-mini", prompt],
        env: {
          ...base,
          OPENCODE_CONFIG_CONTENT: JSON.stringify({
            $schema: "https://opencode.ai/config.json",
            autoupdate: false,
            share: "disabled",
            provider: { gateway: { npm: "@ai-sdk/openai-compatible", name: "gateway", options: { baseURL: `${gatewayUrl}/v1`, apiKey: token }, models: { "gpt-4o-mini": { name: "gpt-4o-mini" } } } },
          }),
        },
      };
  }
}

/** Runs the CLI to its end (killed after `timeoutMs`). */
export async function runAgent(cli: Cli, stack: Stack, prompt: string, script: (workDir: string) => Behaviour, timeoutMs = 90_000): Promise<AgentRun> {
  const { home, work } = freshDirs();
  // Each run starts the imitation afresh: its own requests only, its own script.
  stack.upstream.reset();
  stack.upstream.script(script(work));
  const { argv, env } = invocation(cli, stack.gateway.data, prompt, home, stack.key.token);
  const proc = Bun.spawn(argv, { cwd: work, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr, workDir: work };
}

/** The scripted upstream for a plain answer, and for a round trip through the agent's file reader. */
export const PLAIN_ANSWER = "Plain answer from the upstream imitation.";
/** Gemini CLI's model router asks a small model for JSON first: a valid answer keeps it on its default model. */
const ROUTER_JSON = JSON.stringify({ complexity_reasoning: "a short, simple task", complexity_score: 10 });
export const plain = (): Behaviour => ({ text: PLAIN_ANSWER, json: ROUTER_JSON, reasoning: true, times: Infinity });
/** Every request that offers the tool and ends with the user's turn calls it; the one with its result gets "tool result: ...". */
export const readFile = (tool: RegExp, args: (filePath: string) => Record<string, unknown>) => (workDir: string): Behaviour => ({ toolCall: true, toolName: tool, toolArguments: args(join(workDir, FILE_NAME)), json: ROUTER_JSON, reasoning: true, times: Infinity });
