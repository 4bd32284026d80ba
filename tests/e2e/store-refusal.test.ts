// A store that refuses ledger writes, on the built binary (issue 22 class 8), beyond
// limits-hardening.test.ts: past the bound, fail_closed refuses in each of the six callers' protocols
// with 503 (Anthropic 529) and Retry-After: 1; streams served during the outage are written with their
// tokens once the store takes writes again; and a stop while rows are kept says they are lost and the
// next boot says the stop was not clean.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";
import { protocolCalls } from "../support/protocol-calls.ts";
import { OPENAI_DEFAULT_KEY, startOpenAIUpstream } from "../support/upstreams/openai.ts";
import { until } from "../support/until.ts";

const ENV = { GW_SIGNING_KEY: "e2e-store-refusal-signing-91b3", GW_ADMIN: "e2e-store-refusal-admin-0e6c" };
const up = startOpenAIUpstream();

const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db, max_unsaved_rows: 2}}
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  up: {protocol: openai, base_url: "${up.baseURL}", api_key: ${OPENAI_DEFAULT_KEY}}
models:
  gpt: {provider: up, model: gpt-test}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
groups:
  metered: {limits: [{window: day, tokens: 1000000}]}
`;

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
  await up.stop();
});

const admin = (g: RunningGateway, path: string, init: RequestInit = {}) =>
  fetch(`${g.admin}${path}`, { ...init, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json", ...init.headers } });
async function mint(g: RunningGateway): Promise<{ id: string; token: string }> {
  const response = await admin(g, "/keys", { method: "POST", body: JSON.stringify({ name: "k", group: "metered" }) });
  expect(response.status).toBe(201);
  return json(response);
}

/** Every ledger insert fails as on a full disk, from another connection, until freed. */
function ledgerFull(g: RunningGateway) {
  const db = new Database(join(g.dir, "state/gateway.db"));
  db.exec("CREATE TRIGGER disk_full BEFORE INSERT ON ledger BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;");
  return () => {
    db.exec("DROP TRIGGER disk_full;");
    db.close();
  };
}

const health = async (g: RunningGateway) => (await fetch(`${g.data}/healthz`)).text();

/** One stream with its usage shown to the client: the tokens it was charged. */
async function stream(g: RunningGateway, token: string): Promise<number> {
  const response = await fetch(`${g.data}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt", stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: "streamed while the disk is full" }] }),
  });
  expect(response.status).toBe(200);
  return Number((await response.text()).match(/"total_tokens":(\d+)/)![1]);
}


describe("fail_closed past the bound", () => {
  test("every caller's protocol gets its own 503 (Anthropic 529) with Retry-After: 1; streams served before it are written whole after", async () => {
    const keys = await Promise.all([1, 2, 3].map(() => mint(gw)));
    const free = ledgerFull(gw);
    // Two keys' streams: two unsaved sum rows, the bound.
    const served = [await stream(gw, keys[0]!.token), await stream(gw, keys[1]!.token)];
    await until(async () => (await health(gw)) === "degraded");
    for (const [protocol, [path, headers, body]] of Object.entries(protocolCalls(keys[2]!.token, "gpt", "hi"))) {
      const refused = await fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
      expect({ protocol, status: refused.status }).toEqual({ protocol, status: protocol === "anthropic" ? 529 : 503 });
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(await refused.text()).toContain("store unavailable");
    }
    free();
    await until(async () => (await health(gw)) === "ok");
    for (const [i, tokens] of served.entries()) expect(await json(await admin(gw, `/keys/${keys[i]!.id}/usage`))).toMatchObject({ requests: 1, tokens });
    expect((await json(await admin(gw, `/keys/${keys[2]!.id}/usage`))).requests).toBe(0);
  }, 15_000);
});

describe("a stop while rows are kept", () => {
  test("logs them as lost and leaves the store unclean: the next boot says so", async () => {
    const g = await startGateway(CONFIG, { env: ENV });
    let again: RunningGateway | undefined;
    try {
      const { token } = await mint(g);
      const free = ledgerFull(g);
      await stream(g, token);
      await until(async () => (await health(g)) === "degraded");
      expect(await g.stop()).toBe(0);
      free();
      const lost = g.logs.map((line) => JSON.parse(line) as { msg: string; rows?: number }).find((record) => record.msg.includes("these rows are lost"));
      // One request's rows: one, or two when its end fell in the second after its admission (rows are per-second sums).
      expect([1, 2]).toContain(lost?.rows ?? -1);
      again = await startGateway(CONFIG, { env: ENV, dir: g.dir });
      // Not the crash window's "up to 200 ms": what the store refused is missing, and the line says so.
      const lines = again.logs.filter((line) => line.includes("previous run")).map((line) => JSON.parse(line).msg);
      expect(lines).toEqual([`previous run stopped with ${lost!.rows} metering rows the store refused; their requests are missing from usage and limits`]);
      // Said once: the boot after a clean stop of this run has no such line.
      expect(await again.stop()).toBe(0);
      again = await startGateway(CONFIG, { env: ENV, dir: g.dir });
      expect(again.logs.filter((line) => line.includes("previous run"))).toEqual([]);
    } finally {
      await again?.stop();
      await g.stop();
    }
  }, 15_000);
});
