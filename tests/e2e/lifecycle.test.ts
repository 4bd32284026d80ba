// The binary's life: command line, fail-loud boot, the data plane's open routes, TLS, the store on
// disk, and graceful shutdown. Every test runs dist/gateway itself.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { hostTarget } from "../../scripts/compile.ts";
import { ensureBinary, json, LISTEN_ANY, runGateway, startGateway, tempDir } from "../support/gateway.ts";
import { makeTlsDir } from "../support/tls.ts";

/** Pool `default` -> model `mock-1` -> provider `local` (the mock), plus any extra providers and sections. */
const mockConfig = (options: { local?: string; providers?: string; extra?: string } = {}) =>
  `${LISTEN_ANY}providers: {local: ${options.local ?? "{protocol: mock}"}${options.providers ? `, ${options.providers}` : ""}}
models: {mock-1: {provider: local}}
pools: {default: {members: [{model: mock-1}]}}
${options.extra ?? ""}`;
const MOCK = mockConfig();

function writeConfig(yaml: string): string {
  const path = join(tempDir(), "gateway.yaml");
  writeFileSync(path, yaml);
  return path;
}

const logRecords = (stderr: string) =>
  stderr
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe("command line", () => {
  test("--version and --help", async () => {
    const version = await runGateway(["--version"]);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(new RegExp(`^gateway ${pkg.version.replaceAll(".", "\\.")} \\(commit ([0-9a-f]{7,}(-dirty)?|unknown), ${hostTarget()}\\)\n$`));
    const help = await runGateway(["--help"]);
    expect(help.code).toBe(0);
    for (const flag of ["--config PATH", "--check", "--print-default-config", "--version", "--help"]) expect(help.stdout).toContain(flag);
  });

  test("an unknown flag exits 2 and says so", async () => {
    const result = await runGateway(["--frobnicate"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--frobnicate");
  });

  test("--print-default-config prints a config that --check accepts", async () => {
    const printed = await runGateway(["--print-default-config"]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain("protocol: mock");
    const check = await runGateway(["--check", "--config", writeConfig(printed.stdout)]);
    expect(check.code).toBe(0);
    expect(check.stdout).toStartWith("config ok:");
  });

  test("--check on a config with several errors lists each with its path and exits 1", async () => {
    const path = writeConfig(`
listen: nowhere
providers:
  p: {protocol: carrier-pigeon}
models:
  m: {provider: ghost}
pools:
  chat: {members: [{model: missing}], on_exhausted: panic}
auth: {admin_auth: [admin-tokens], admin_tokens: [{token: plaintext-is-not-allowed}]}
`);
    const result = await runGateway(["--check", "--config", path]);
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split("\n");
    expect(lines.at(-1)).toBe(`6 errors in ${path}`);
    expect(lines.slice(0, -1).toSorted()).toEqual(
      [
        'listen: expected an address host:port (IPv6 as [::1]:port), got "nowhere"',
        'providers.p.protocol: expected one of openai | anthropic | gemini | bedrock | cohere | responses | mock, got "carrier-pigeon"',
        'pools.chat.on_exhausted: expected reject | status_503 | least_bad | fallback_pool:<pool>, got "panic"',
        "auth.admin_tokens[0].token: expected a secret reference {env: NAME} or {file: PATH}, got a string (not shown: a secret position)",
        'models.m.provider: unknown provider "ghost"',
        'pools.chat.members[0].model: unknown model "missing"',
      ].toSorted(),
    );
  });

  test("a missing --config file and a bad --log-level are named, not crashed on", async () => {
    const missing = await runGateway(["--config", "/nonexistent/gw.yaml"]);
    expect(missing.code).toBe(1);
    expect(logRecords(missing.stderr).some((r) => r.error === "cannot read config file /nonexistent/gw.yaml (ENOENT)")).toBe(true);
    const checked = await runGateway(["--check", "--config", "/nonexistent/gw.yaml"]);
    expect(checked).toMatchObject({ code: 1, stderr: "cannot read config file /nonexistent/gw.yaml (ENOENT)\n1 error in /nonexistent/gw.yaml\n" });
    const level = await runGateway(["--log-level", "chatty"]);
    expect(level.code).toBe(2);
    expect(level.stderr).toContain('unknown log level "chatty"');
  });

  test("the binary runs from any directory with no node_modules and a bare environment", async () => {
    const elsewhere = tempDir("gw-bare-");
    const copy = join(elsewhere, "gateway");
    copyFileSync(ensureBinary(), copy);
    const proc = Bun.spawn([copy, "--check"], { cwd: elsewhere, env: {}, stdout: "pipe", stderr: "pipe" });
    expect(await proc.exited).toBe(0);
    expect(await new Response(proc.stdout).text()).toBe("config ok: embedded default\n");
  });
});

describe("fail-loud boot", () => {
  const bootFails = async (yaml: string, env: Record<string, string> = {}) => {
    const result = await runGateway(["--config", writeConfig(yaml)], { env });
    expect(result.code).not.toBe(0);
    return logRecords(result.stderr);
  };

  test("an unset ${VAR} stops startup naming it", async () => {
    const records = await bootFails(`${LISTEN_ANY}providers: {p: {protocol: openai, api_key: \${GW_NEVER_SET_KEY}}}\n`);
    expect(records.some((r) => r.msg === "config error" && String(r.error).includes("GW_NEVER_SET_KEY is not set"))).toBe(true);
    expect(records.at(-1)?.msg).toBe("config invalid; not starting");
  });

  test("an unknown provider, protocol, auth module or on_exhausted stops startup naming each", async () => {
    const records = await bootFails(
      `${LISTEN_ANY}providers: {p: {protocol: telegraph}}\nmodels: {m: {provider: nobody}}\npools: {x: {members: [{model: m}], on_exhausted: shrug}}\nauth: {chain: [magic]}\n`,
    );
    const errors = records.filter((r) => r.msg === "config error").map((r) => String(r.error));
    expect(errors.some((e) => e.startsWith("providers.p.protocol:"))).toBe(true);
    expect(errors).toContain('models.m.provider: unknown provider "nobody"');
    expect(errors.some((e) => e.startsWith("pools.x.on_exhausted:"))).toBe(true);
    expect(errors.some((e) => e.startsWith('auth.chain[0]: unknown auth module "magic"'))).toBe(true);
  });

  test("an unreadable TLS file stops startup naming the file", async () => {
    const records = await bootFails(`${LISTEN_ANY}tls: {cert_file: /nonexistent/gw-cert.pem, key_file: /nonexistent/gw-key.pem}\n`);
    expect(records.some((r) => String(r.error).includes("/nonexistent/gw-cert.pem"))).toBe(true);
  });

  test("a port already in use stops startup naming the address", async () => {
    const blocker = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") });
    try {
      const records = await bootFails(`listen: 127.0.0.1:${blocker.port}\nadmin_listen: 127.0.0.1:0\n`);
      expect(records.some((r) => r.msg === "cannot start the data listener; not starting" && r.address === `127.0.0.1:${blocker.port}`)).toBe(true);
    } finally {
      blocker.stop(true);
    }
  });

  test("an empty provider key warns and the gateway runs", async () => {
    const gw = await startGateway(mockConfig({ providers: "up: {protocol: openai, api_key: {env: GW_EMPTY_KEY}}" }), { env: { GW_EMPTY_KEY: "" } });
    try {
      expect(gw.logs.some((l) => l.includes('"level":"warn"') && l.includes("GW_EMPTY_KEY is empty or unset"))).toBe(true);
      expect((await fetch(`${gw.data}/healthz`)).status).toBe(200);
    } finally {
      expect(await gw.stop()).toBe(0);
    }
  });
});

describe("data plane", () => {
  test("/healthz is 200 ok with a usable lane, 503 with none", async () => {
    const gw = await startGateway(MOCK);
    const none = await startGateway(LISTEN_ANY);
    try {
      const ok = await fetch(`${gw.data}/healthz`);
      expect(ok.status).toBe(200);
      expect(await ok.text()).toBe("ok");
      expect((await fetch(`${none.data}/healthz`)).status).toBe(503);
    } finally {
      await Promise.all([gw.stop(), none.stop()]);
    }
  });

  test("the mock answers an OpenAI chat completion; unknown paths and methods get the envelope", async () => {
    const gw = await startGateway(MOCK);
    try {
      const response = await fetch(`${gw.data}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "default", messages: [{ role: "user", content: "ping" }] }),
      });
      expect(response.status).toBe(200);
      const completion = await json(response);
      expect(completion).toMatchObject({ object: "chat.completion", model: "mock-1", choices: [{ index: 0, message: { role: "assistant", content: "mock: ping" }, finish_reason: "stop" }] });
      expect(completion.usage.total_tokens).toBe(completion.usage.prompt_tokens + completion.usage.completion_tokens);

      const unknownModel = await fetch(`${gw.data}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "nope", messages: [{ role: "user", content: "x" }] }) });
      expect(unknownModel.status).toBe(404);
      expect((await json(unknownModel)).error).toMatchObject({ type: "invalid_request_error", code: "model_not_found" });

      const post = (body: string) => fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
      const malformed = await post("{nope");
      expect(malformed.status).toBe(400);
      expect((await json(malformed)).error.type).toBe("invalid_request_error");
      const noMessages = await post(JSON.stringify({ model: "default" }));
      expect(noMessages.status).toBe(400);
      expect((await json(noMessages)).error.param).toBe("messages");
      const streamed = await post(JSON.stringify({ model: "default", stream: true, messages: [{ role: "user", content: "two words" }] }));
      expect(streamed.status).toBe(200);
      expect(streamed.headers.get("content-type")).toContain("text/event-stream");
      const events = (await streamed.text()).split("\n\n").filter((e) => e.startsWith("data: "));
      expect(events.at(-1)).toBe("data: [DONE]");
      const text = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)).choices[0]?.delta?.content ?? "").join("");
      expect(text).toBe("mock: two words");

      const missing = await fetch(`${gw.data}/no/such/path`);
      expect(missing.status).toBe(404);
      expect((await json(missing)).error.code).toBe("not_found");
      const wrongMethod = await fetch(`${gw.data}/healthz`, { method: "DELETE" });
      expect(wrongMethod.status).toBe(405);
      // POST is allowed too: /healthz also matches the direct route POST /{model}.
      expect(wrongMethod.headers.get("allow")).toBe("GET, HEAD, POST");
    } finally {
      await gw.stop();
    }
  });
});

describe("data-plane body limit", () => {
  test("a body over security.max_body_bytes is 413 in the caller's protocol, by header or when chunked", async () => {
    const gw = await startGateway(mockConfig({ extra: "security: {max_body_bytes: 2048}" }));
    const big = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: "default", max_tokens: 8, messages: [{ role: "user", content: "x".repeat(4000) }], ...extra });
    const chunked = (text: string) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          const bytes = new TextEncoder().encode(text);
          for (let at = 0; at < bytes.length; at += 1000) controller.enqueue(bytes.slice(at, at + 1000));
          controller.close();
        },
      });
    try {
      const openaiByHeader = await fetch(`${gw.data}/v1/chat/completions`, { method: "POST", body: big() });
      expect(openaiByHeader.status).toBe(413);
      const openaiShape = { type: "invalid_request_error", code: "request_too_large", param: null, message: "request body exceeds the 2048-byte limit" };
      expect((await json(openaiByHeader)).error).toEqual(openaiShape);

      const anthropicChunked = await fetch(`${gw.data}/v1/messages`, { method: "POST", body: chunked(big()), duplex: "half" } as RequestInit);
      expect(anthropicChunked.status).toBe(413);
      expect(await json(anthropicChunked)).toMatchObject({ type: "error", error: { type: "request_too_large", message: "request body exceeds the 2048-byte limit" } });

      const direct = await fetch(`${gw.data}/mock-1`, { method: "POST", body: big() });
      expect(direct.status).toBe(413);
      expect((await json(direct)).error).toEqual(openaiShape);

      const elsewhere = await fetch(`${gw.data}/no/such/path`, { method: "POST", body: big() });
      expect(elsewhere.status).toBe(413);
      expect(await json(elsewhere)).toEqual({ error: { code: "invalid_request", message: "request body exceeds the 2048-byte limit" } });
    } finally {
      await gw.stop();
    }
  });
});

describe("ingress auth chain", () => {
  test("`oidc` in a chain with no oidc identity provider is refused at boot with its path, not started open or closed", async () => {
    const result = await runGateway(["--config", writeConfig(mockConfig({ extra: "auth: {chain: [oidc]}" }))]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('auth.chain[0]: \\"oidc\\" stands for every oidc identity provider, and none is configured');
    expect(result.stderr).toContain("config invalid; not starting");
  });
});

describe("TLS", () => {
  test("both listeners serve HTTPS; with client_ca_file a client without a certificate is refused", async () => {
    const dir = makeTlsDir();
    const gw = await startGateway(`${MOCK}tls: {cert_file: ${dir}/cert.pem, key_file: ${dir}/key.pem, client_ca_file: ${dir}/ca.pem}\nadmin_tls: {cert_file: ${dir}/cert.pem, key_file: ${dir}/key.pem}\n`, {
      scheme: "https",
    });
    const ca = await Bun.file(join(dir, "ca.pem")).text();
    try {
      const withCert = await fetch(`${gw.data}/healthz`, { tls: { ca, cert: await Bun.file(join(dir, "client-cert.pem")).text(), key: await Bun.file(join(dir, "client-key.pem")).text() } });
      expect(withCert.status).toBe(200);
      await expect(fetch(`${gw.data}/healthz`, { tls: { ca } })).rejects.toThrow();
      expect((await fetch(`${gw.admin}/info`, { tls: { ca } })).status).toBe(200);
    } finally {
      await gw.stop();
    }
  });
});

describe("store", () => {
  test("the sqlite file is created where configured, migrated, and folded back on shutdown", async () => {
    const gw = await startGateway(`${LISTEN_ANY}store: {module: sqlite, settings: {path: ./data/state.db}}\n`);
    const path = join(gw.dir, "data/state.db");
    expect(existsSync(path)).toBe(true);
    expect(await gw.stop()).toBe(0);
    expect(existsSync(`${path}-wal`) ? Bun.file(`${path}-wal`).size : 0).toBe(0);
    const db = new Database(path, { readonly: true });
    expect((db.query("SELECT MAX(version) AS v FROM schema_migrations").get() as { v: number }).v).toBeGreaterThanOrEqual(1);
    db.close();
  });
});

describe("graceful shutdown", () => {
  test("SIGTERM exits 0 within seconds", async () => {
    const gw = await startGateway(MOCK);
    const began = performance.now();
    expect(await gw.stop("SIGTERM")).toBe(0);
    expect(performance.now() - began).toBeLessThan(5000);
    expect(gw.logs.some((l) => l.includes('"msg":"stopped"'))).toBe(true);
  });

  test("SIGINT drains an in-flight request, refuses new connections, then exits 0", async () => {
    const gw = await startGateway(mockConfig({ local: "{protocol: mock, latency_ms: 1500}" }));
    const inFlight = fetch(`${gw.data}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "default", messages: [{ role: "user", content: "slow" }] }) });
    await Bun.sleep(300);
    const exited = gw.stop("SIGINT");
    await Bun.sleep(200);
    await expect(fetch(`${gw.data}/healthz`)).rejects.toThrow();
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect((await json(response)).choices[0].message.content).toBe("mock: slow");
    expect(await exited).toBe(0);
  });

  test("the drain is bounded: a request outliving shutdown_drain_secs is cut and the process still exits 0", async () => {
    const gw = await startGateway(mockConfig({ local: "{protocol: mock, latency_ms: 20000}", extra: "limits: {shutdown_drain_secs: 1}" }));
    const inFlight = fetch(`${gw.data}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "default", messages: [{ role: "user", content: "x" }] }) }).catch(() => "cut");
    await Bun.sleep(300);
    const began = performance.now();
    expect(await gw.stop("SIGTERM")).toBe(0);
    expect(performance.now() - began).toBeLessThan(5000);
    expect(await inFlight).toBe("cut");
  });
});
