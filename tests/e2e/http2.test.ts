// HTTP/2 beside HTTP/1.1 on the same listeners: the AWS SDK's Bedrock client speaks HTTP/2 with its default
// handler (h2c prior knowledge on a plain port, h2 by ALPN over TLS); every other client keeps HTTP/1.1.
// The client runs in Node, as users run it, with nothing changed but its endpoint.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { LISTEN_ANY, ROOT, startGateway, type RunningGateway } from "../support/gateway.ts";
import { makeTlsDir } from "../support/tls.ts";

const MOCK = `${LISTEN_ANY}providers: {local: {protocol: mock}}
models: {mock-1: {provider: local}}
pools: {default: {members: [{model: mock-1}]}}
`;

async function bedrockFromNode(endpoint: string, env: Record<string, string> = {}) {
  const proc = Bun.spawn(["node", join(ROOT, "tests/support/bedrock-default-client.mjs"), endpoint, "default"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 20_000);
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  const line = stdout.trim().split("\n").pop() ?? "";
  if (!line.startsWith("{")) throw new Error(`the Node client printed no result: ${stdout} ${stderr}`);
  return JSON.parse(line) as { converse?: string; stream?: string; events?: number; stop?: string; error?: string };
}

/** The protocol curl used, and the body, with curl's own protocol choice for the URL unless `flag` says. */
function curl(url: string, flags: string[]) {
  const result = Bun.spawnSync(["curl", "-sS", "-o", "-", "-w", "\n%{http_version}", ...flags, "-H", "content-type: application/json", "-d", JSON.stringify({ model: "default", messages: [{ role: "user", content: "hi" }] }), url], { stdout: "pipe", stderr: "pipe" });
  const out = result.stdout.toString();
  const newline = out.lastIndexOf("\n");
  return { body: out.slice(0, newline), version: out.slice(newline + 1), error: result.stderr.toString() };
}

describe("plain port: h2c prior knowledge and HTTP/1.1 side by side", () => {
  let gw: RunningGateway;
  beforeAll(async () => void (gw = await startGateway(MOCK)));
  afterAll(() => gw.stop());

  test("the Bedrock runtime client with its default handler: Converse and ConverseStream", async () => {
    const result = await bedrockFromNode(gw.data);
    expect(result.error).toBeUndefined();
    expect(result.converse).toBe("mock: hello over h2");
    expect(result.stream).toBe("mock: hello over h2");
    expect(result.stop).toBe("end_turn");
  });

  test("curl with prior knowledge gets HTTP/2; plain curl HTTP/1.1, the same answer", () => {
    const h2 = curl(`${gw.data}/v1/chat/completions`, ["--http2-prior-knowledge"]);
    const h1 = curl(`${gw.data}/v1/chat/completions`, []);
    expect([h2.version, h1.version]).toEqual(["2", "1.1"]);
    expect(JSON.parse(h2.body).choices[0].message.content).toBe("mock: hi");
    expect(JSON.parse(h1.body).choices[0].message.content).toBe("mock: hi");
  });
});

describe("TLS: h2 by ALPN, HTTP/1.1 for clients that do not offer it", () => {
  let gw: RunningGateway;
  let dir: string;
  beforeAll(async () => {
    dir = makeTlsDir();
    gw = await startGateway(`${MOCK}tls: {cert_file: ${dir}/cert.pem, key_file: ${dir}/key.pem}\n`, { scheme: "https" });
  });
  afterAll(() => gw.stop());

  test("the Bedrock runtime client with its default handler, trusting the CA as Node users do", async () => {
    const result = await bedrockFromNode(gw.data, { NODE_EXTRA_CA_CERTS: join(dir, "ca.pem") });
    expect(result.error).toBeUndefined();
    expect(result.converse).toBe("mock: hello over h2");
    expect(result.stream).toBe("mock: hello over h2");
  });

  test("curl negotiates h2 by ALPN; with --http1.1 it gets HTTP/1.1; fetch (HTTP/1.1) unchanged", async () => {
    const h2 = curl(`${gw.data}/v1/chat/completions`, ["--cacert", join(dir, "ca.pem")]);
    const h1 = curl(`${gw.data}/v1/chat/completions`, ["--cacert", join(dir, "ca.pem"), "--http1.1"]);
    expect([h2.version, h1.version]).toEqual(["2", "1.1"]);
    expect(JSON.parse(h2.body).choices[0].message.content).toBe("mock: hi");
    const viaFetch = await fetch(`${gw.data}/healthz`, { tls: { ca: await Bun.file(join(dir, "ca.pem")).text() } });
    expect(viaFetch.status).toBe(200);
  });
});
