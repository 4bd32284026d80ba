// The README's "Quick start with your provider key", run as printed against upstream imitations: a
// vendor key in the environment is all the embedded default needs to serve a pool named after the
// protocol. The only changes to the printed commands: the key is the imitation's, the endpoint variable
// points at the imitation, and both listeners are moved off the shared 8080/8081 by GATEWAY_LISTEN.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { blocksUnder } from "../support/doc-blocks.ts";
import { ROOT, runGateway, startGateway, type RunningGateway } from "../support/gateway.ts";
import { protocolCalls } from "../support/protocol-calls.ts";
import type { Upstream } from "../support/upstreams/common.ts";
import { startAnthropicUpstream } from "../support/upstreams/anthropic.ts";
import { startCohereUpstream } from "../support/upstreams/cohere.ts";
import { startGeminiUpstream } from "../support/upstreams/gemini.ts";
import { startOpenAIUpstream } from "../support/upstreams/openai.ts";

let openai: Upstream, anthropic: Upstream, gemini: Upstream, cohere: Upstream;
const running: RunningGateway[] = [];
const OFF_SHARED_PORTS = { GATEWAY_LISTEN: "127.0.0.1:0", GATEWAY_ADMIN_LISTEN: "127.0.0.1:0" };

beforeAll(() => {
  [openai, anthropic, gemini, cohere] = [startOpenAIUpstream(), startAnthropicUpstream(), startGeminiUpstream(), startCohereUpstream()];
});
afterAll(async () => {
  await Promise.all(running.map((gw) => gw.stop()));
  await Promise.all([openai, anthropic, gemini, cohere].map((u) => u.stop()));
});

async function start(env: Record<string, string>, args: string[] = []): Promise<RunningGateway> {
  const gw = await startGateway(undefined, { env: { ...OFF_SHARED_PORTS, ...env }, args });
  running.push(gw);
  return gw;
}

/** Not spawnSync: the imitations answer from this process's event loop. */
async function run(argv: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn(argv, { cwd, stdout: "pipe", stderr: "pipe", stdin: "ignore", timeout: 15_000 });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

describe("quick start with your provider key", () => {
  test("the README's commands: the key alone starts an openai pool that curl and the OpenAI SDK reach", async () => {
    const [start_, curl, sdk] = blocksUnder(ROOT, "README.md", "Quick start with your provider key");
    expect([start_?.lang, curl?.lang, sdk?.lang]).toEqual(["sh", "sh", "js"]);
    const words = start_!.text.trim().split(/\s+/);
    expect(words).toEqual(["OPENAI_API_KEY=sk-...", "./dist/gateway"]);
    const gw = await start({ OPENAI_API_KEY: openai.apiKey, OPENAI_BASE_URL: openai.baseURL });
    const address = gw.data.replace("http://", "");

    const curled = await run(["sh", "-c", curl!.text.replaceAll("127.0.0.1:8080", address)], gw.dir);
    expect(curled.code).toBe(0);
    expect(JSON.parse(curled.stdout).choices[0].message.content).toBe("echo: hello");

    const sdkRun = await run([process.execPath, "-e", sdk!.text.replaceAll("http://127.0.0.1:8080", gw.data)], ROOT);
    expect({ code: sdkRun.code, stderr: sdkRun.stderr }).toEqual({ code: 0, stderr: "" });
    expect(sdkRun.stdout).toBe("echo: hello\n");

    // The gateway, not the client, holds the key, and the pool's model is the one the README names.
    expect(openai.requests.map((r) => [r.valid, r.headers.authorization, (r.body as { model?: string }).model])).toEqual([
      [true, `Bearer ${openai.apiKey}`, "gpt-4o-mini"],
      [true, `Bearer ${openai.apiKey}`, "gpt-4o-mini"],
    ]);
  });

  test("each vendor's key and endpoint variable make its pool; any caller protocol reaches any of them", async () => {
    const gw = await start({
      OPENAI_API_KEY: openai.apiKey,
      OPENAI_BASE_URL: openai.baseURL,
      ANTHROPIC_API_KEY: anthropic.apiKey,
      ANTHROPIC_BASE_URL: anthropic.baseURL,
      GEMINI_API_KEY: gemini.apiKey,
      GOOGLE_GEMINI_BASE_URL: gemini.baseURL,
      COHERE_API_KEY: cohere.apiKey,
      CO_API_URL: cohere.baseURL,
    });
    const call = async (caller: "openai" | "anthropic" | "gemini" | "cohere", pool: string) => {
      const [path, headers, body] = protocolCalls("unused", pool, "hello")[caller];
      const response = await fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
      return { caller, pool, status: response.status, body: response.status === 200 ? undefined : await response.text() };
    };
    for (const upstream of [openai, anthropic, gemini, cohere]) upstream.reset();
    for (const [caller, pool] of [["anthropic", "anthropic"], ["gemini", "gemini"], ["cohere", "cohere"], ["anthropic", "openai"], ["openai", "cohere"]] as const) {
      expect(await call(caller, pool)).toEqual({ caller, pool, status: 200, body: undefined });
    }
    const seen = (u: Upstream) => u.requests.map((r) => r.valid);
    expect([seen(anthropic), seen(gemini), seen(cohere), seen(openai)]).toEqual([[true], [true], [true, true], [true]]);
    expect(anthropic.requests[0]!.headers["x-api-key"]).toBe(anthropic.apiKey);
  });

  test("an endpoint variable that is not http(s), or that names the gateway's own port, is refused without quoting it", async () => {
    const notHttp = await runGateway(["--check"], { env: { OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: "file:///etc/passwd" } });
    expect(notHttp.code).toBe(1);
    expect(notHttp.stderr).toContain("providers.openai.base_url: expected an http(s) URL, got the value of ${OPENAI_BASE_URL} (not shown)");
    expect(notHttp.stderr).not.toContain("passwd");

    // The slip the README warns of: OPENAI_BASE_URL exported for an SDK to reach this very gateway.
    const looped = await runGateway(["--port", "18080"], { env: { ...OFF_SHARED_PORTS, ANTHROPIC_API_KEY: "sk-x", ANTHROPIC_BASE_URL: "http://localhost:18080" } });
    expect(looped.code).toBe(1);
    expect(looped.stderr).toContain("providers.anthropic.base_url: names this gateway's own data plane (127.0.0.1:18080), so every request would come back in");

    // Unset or empty: the vendor's own endpoint, as before.
    const printed = await runGateway(["--print-default-config"], { env: { OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: "" } });
    expect(printed.stdout).toContain("openai: { protocol: openai, api_key: { env: OPENAI_API_KEY } }");
    expect(printed.stdout).not.toContain("base_url");
  });
});
