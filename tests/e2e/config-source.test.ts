// The config as written, on the built binary (design/console.md, Configuration): GET /config/source and
// /config/versions/{v}/source show base with overlay as YAML, a key from the environment as its ${VAR}
// and an inline one as <redacted-by-gateway>, never either value, to a read-only principal too; an applied change
// shows in the source and as -/+ lines in GET /config/diff; a rollback's source is the first again.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

const UP_KEY = "sk-upstream-from-env-7c41d9e2";
const INLINE = "sk-inline-literal-0b3f6a85";
const ENV = { GW_ADMIN: "source-admin-token-1a2b3c", GW_READER: "source-reader-token-4d5e6f", UP_KEY };
const SECRETS = [UP_KEY, INLINE, ENV.GW_ADMIN, ENV.GW_READER];
const CONFIG = `${LISTEN_ANY}store: {module: sqlite, settings: {path: ./state/gateway.db}}
providers:
  local: {protocol: mock}
  up: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: "\${UP_KEY}"}
  inline: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: "${INLINE}"}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
per_request_fee: 0
auth:
  chain: []
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}, {name: reader, token: {env: GW_READER}, scope: read-only}]
`;

let gw: RunningGateway;
/** Every admin answer's text, to look for a secret in all of them at the end. */
const answers: string[] = [];
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
});
afterAll(async () => {
  await gw?.stop();
});

async function admin(path: string, init: RequestInit & { token?: string } = {}) {
  const response = await fetch(`${gw.admin}${path}`, { ...init, headers: { "x-admin-token": init.token ?? ENV.GW_ADMIN, "content-type": "application/json" } });
  const text = await response.text();
  answers.push(text);
  return { status: response.status, body: JSON.parse(text) };
}
const reader = (path: string) => admin(path, { token: ENV.GW_READER });

describe("the config as written", () => {
  test("apply, source, diff, rollback: the change shows as -/+ and the rolled-back source is the first again", async () => {
    const first = await reader("/config/source");
    expect(first.status).toBe(200);
    const v0 = first.body.version as number;
    expect(first.body.yaml).toContain("api_key: ${UP_KEY}");
    expect(first.body.yaml).toContain("api_key: <redacted-by-gateway>");
    expect(first.body.yaml).toContain("per_request_fee: 0\n");
    expect(first.body.yaml).toContain("env: GW_READER");

    const applied = await admin("/config/apply", { method: "POST", body: JSON.stringify({ yaml: CONFIG.replace("per_request_fee: 0\n", "per_request_fee: 0.5\n") }) });
    expect(applied.status).toBe(200);
    const v1 = applied.body.config_version as number;
    const changed = await reader("/config/source");
    expect(changed.body).toMatchObject({ version: v1 });
    expect(changed.body.yaml).toContain("per_request_fee: 0.5\n");
    expect(changed.body.yaml).toContain("api_key: ${UP_KEY}");

    const diff = await reader(`/config/diff?from=${v0}&to=${v1}`);
    expect(diff.status).toBe(200);
    expect(diff.body).toMatchObject({ from: v0, to: v1, hooks: { added: [], removed: [], changed: [] }, truncated: false });
    expect(diff.body.lines.filter((l: { op: string }) => l.op !== "=")).toEqual([
      { op: "-", text: "per_request_fee: 0" },
      { op: "+", text: "per_request_fee: 0.5" },
    ]);
    // Every line of the two sources, in order.
    const sides = (op: string) => diff.body.lines.filter((l: { op: string }) => l.op !== op).map((l: { text: string }) => `${l.text}\n`).join("");
    expect(sides("+")).toBe(first.body.yaml);
    expect(sides("-")).toBe(changed.body.yaml);

    const rolledBack = await admin("/config/rollback", { method: "POST", body: JSON.stringify({ version: v0 }) });
    expect(rolledBack.status).toBe(200);
    const again = await reader("/config/source");
    expect(again.body).toEqual({ version: rolledBack.body.config_version, yaml: first.body.yaml });
    expect((await reader(`/config/versions/${v1}/source`)).body).toEqual(changed.body);
    expect((await reader(`/config/versions/${v0}/source`)).body).toEqual(first.body);
  });

  test("a version not retained is 404, a malformed one 400, in the admin envelope", async () => {
    const missing = await reader("/config/versions/999999/source");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("not_found");
    expect(missing.body.error.message).toContain("999999");
    for (const bad of ["abc", "-1", "1e3", "9".repeat(40)]) {
      const malformed = await reader(`/config/versions/${bad}/source`);
      expect(malformed.status).toBe(400);
      expect(malformed.body.error.code).toBe("invalid_request");
    }
    expect((await reader("/config/diff?from=0&to=x")).status).toBe(400);
  });

  test("no answer holds a secret: not the key from the environment, not the inline one, not an admin token", async () => {
    await reader("/config");
    await reader("/config/versions");
    await admin("/config/source");
    expect(answers.length).toBeGreaterThan(10);
    const all = answers.join("\n");
    for (const secret of SECRETS) expect(all).not.toContain(secret);
    expect(all).toContain("${UP_KEY}");
  });
});
