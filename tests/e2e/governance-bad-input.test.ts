// Bad input on the governance surface, on the built binary: every malformed body, query, id or
// credential gets a clear error in the right envelope (the admin envelope on the admin plane, the
// calling vendor's native shape on the data plane), never a 500, and nothing already stored changes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { json, LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_SIGNING_KEY: "bad-input-signing-key-9f8e7d", GW_ADMIN: "bad-input-admin-token-3c4d" };

const CONFIG = `${LISTEN_ANY}
store: {module: sqlite, settings: {path: ./state/gateway.db}}
# Many admin calls in a burst: above the default admin rate limit (20/s, burst 100).
security: {admin_rate_limit: {per_second: 1000, burst: 10000}}
providers:
  local: {protocol: mock}
models:
  mock-1: {provider: local}
pools:
  chat: {members: [{model: mock-1}]}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
groups:
  org: {limits: [{window: day, requests: 1000}]}
`;

let gw: RunningGateway;
let key: { id: string; token: string };
beforeAll(async () => {
  gw = await startGateway(CONFIG, { env: ENV });
  const created = await raw("POST", "/keys", JSON.stringify({ name: "kept", group: "org" }));
  expect(created.status).toBe(201);
  key = (await json(created)) as { id: string; token: string };
  const team = await raw("POST", "/groups", JSON.stringify({ name: "team", parent: "org" }));
  expect({ status: team.status, body: await team.text() }).toMatchObject({ status: 201 });
});
afterAll(async () => {
  await gw?.stop();
});

function raw(method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gw.admin}${path}`, { method, body, headers: { "x-admin-token": ENV.GW_ADMIN, "content-type": "application/json", ...headers } });
}

/** [what, method, path, body, expected status] */
type Case = [string, string, string, string | undefined, number];
const long = "x".repeat(100_000);

const ADMIN_CASES: Case[] = [
  ["POST /keys non-JSON", "POST", "/keys", "{not json", 400],
  ["POST /keys array body", "POST", "/keys", "[]", 400],
  ["POST /keys null body", "POST", "/keys", "null", 400],
  ["POST /keys string body", "POST", "/keys", '"key"', 400],
  ["POST /keys number name", "POST", "/keys", '{"name": 5}', 400],
  ["POST /keys unknown member", "POST", "/keys", '{"name": "a", "rpm": 5}', 400],
  ["POST /keys huge name", "POST", "/keys", JSON.stringify({ name: long }), 400],
  ["POST /keys bad expires_at", "POST", "/keys", '{"name": "a", "expires_at": "tomorrow"}', 400],
  ["POST /keys negative expires_in", "POST", "/keys", '{"name": "a", "expires_in": -5}', 400],
  ["POST /keys both expiries", "POST", "/keys", '{"name": "a", "expires_in": 60, "expires_at": 4102444800}', 400],
  ["POST /keys unknown group", "POST", "/keys", '{"name": "a", "group": "nope"}', 400],
  ["POST /keys allowed_pools not a list", "POST", "/keys", '{"name": "a", "allowed_pools": "chat"}', 400],
  ["POST /keys allowed_pools of numbers", "POST", "/keys", '{"name": "a", "allowed_pools": [1]}', 400],
  ["POST /keys labels not strings", "POST", "/keys", '{"name": "a", "labels": {"team": 1}}', 400],
  ["GET /keys limit=-1", "GET", "/keys?limit=-1", undefined, 400],
  ["GET /keys limit=0", "GET", "/keys?limit=0", undefined, 400],
  ["GET /keys limit=abc", "GET", "/keys?limit=abc", undefined, 400],
  ["GET /keys limit=100000", "GET", "/keys?limit=100000", undefined, 400],
  ["GET /keys cursor garbage", "GET", "/keys?cursor=%%%garbage", undefined, 400],
  ["GET /keys include=bogus", "GET", "/keys?include=bogus", undefined, 400],
  ["GET /keys/{unknown}", "GET", "/keys/key_doesnotexist", undefined, 404],
  ["GET /keys/{malformed}", "GET", `/keys/${encodeURIComponent("../../etc")}`, undefined, 404],
  ["PATCH /keys/{unknown}", "PATCH", "/keys/key_doesnotexist", '{"name": "b"}', 404],
  ["DELETE /keys/{unknown}", "DELETE", "/keys/key_doesnotexist", undefined, 404],
  ["POST /keys/{unknown}/revoke", "POST", "/keys/key_doesnotexist/revoke", undefined, 404],
  ["GET /keys/{unknown}/usage", "GET", "/keys/key_doesnotexist/usage", undefined, 404],
  ["POST /groups non-JSON", "POST", "/groups", "{", 400],
  ["POST /groups bad window", "POST", "/groups", '{"name": "g1", "limits": [{"window": "fortnight", "requests": 1}]}', 400],
  ["POST /groups negative limit", "POST", "/groups", '{"name": "g1", "limits": [{"window": "day", "requests": -1}]}', 400],
  ["POST /groups bad name", "POST", "/groups", '{"name": "has space"}', 400],
  ["POST /groups unknown parent", "POST", "/groups", '{"name": "g1", "parent": "nope"}', 400],
  ["POST /groups existing name", "POST", "/groups", '{"name": "team", "parent": "org"}', 409],
  ["POST /groups config-file name", "POST", "/groups", '{"name": "org"}', 409],
  ["PATCH /groups/{config} (read-only)", "PATCH", "/groups/org", '{"enabled": false}', 409],
  ["PATCH /groups/{unknown}", "PATCH", "/groups/nope", '{"enabled": false}', 404],
  ["PATCH /groups cycle", "PATCH", "/groups/team", '{"parent": "team"}', 400],
  ["DELETE /groups/{unknown}", "DELETE", "/groups/nope", undefined, 404],
  ["DELETE /groups/{config}", "DELETE", "/groups/org", undefined, 409],
  ["GET /groups/{unknown}/usage", "GET", "/groups/nope/usage", undefined, 404],
  ["GET /usage/keys from=abc", "GET", "/usage/keys?from=abc", undefined, 400],
  ["GET /usage/keys to=-1", "GET", "/usage/keys?to=-1", undefined, 400],
  ["POST /groups 65 limits", "POST", "/groups", JSON.stringify({ name: "g1", limits: Array.from({ length: 65 }, () => ({ window: "day", requests: 1 })) }), 400],
  ["POST /keys 1000 allowed_pools", "POST", "/keys", JSON.stringify({ name: "a", allowed_pools: Array.from({ length: 1000 }, (_, i) => `p${i}`) }), 400],
  ["POST /keys huge label value", "POST", "/keys", JSON.stringify({ name: "a", labels: { team: long } }), 400],
  ["PATCH /keys/{id} name null", "PATCH", "/keys/KEY", '{"name": null}', 400],
  ["PATCH /keys/{id} unknown member", "PATCH", "/keys/KEY", '{"budget_cents": 5}', 400],
  ["PATCH /keys/{id} non-JSON", "PATCH", "/keys/KEY", "{", 400],
  ["POST /auth/cache/flush non-JSON", "POST", "/auth/cache/flush", "{oops", 400],
  ["POST /auth/cache/flush wrong type", "POST", "/auth/cache/flush", '{"module": 5}', 400],
];

describe("admin plane: bad input answers the admin envelope, never a 500", () => {
  for (const [what, method, path, body, status] of ADMIN_CASES) {
    test(what, async () => {
      const response = await raw(method, path.replace("KEY", key.id), body);
      const text = await response.text();
      expect({ what, status: response.status }).toEqual({ what, status });
      const envelope = JSON.parse(text) as { error?: { code?: string; message?: string } };
      expect(typeof envelope.error?.code).toBe("string");
      expect(envelope.error!.message!.length).toBeGreaterThan(0);
      expect(text).not.toContain("    at ");
      expect(text).not.toContain(ENV.GW_SIGNING_KEY);
    });
  }

  test("nothing stored was changed by the refused calls", async () => {
    const kept = await json(await raw("GET", `/keys/${key.id}`));
    expect(kept).toMatchObject({ id: key.id, name: "kept", group: "org", state: "active" });
    const listed = (await json(await raw("GET", "/keys"))) as { items: { name: string }[] };
    expect(listed.items.map((k) => k.name)).toEqual(["kept"]);
    expect(kept.labels).toEqual({});
    const groups = (await json(await raw("GET", "/groups"))) as { items: { name: string }[] };
    expect(groups.items.map((g) => g.name).sort()).toEqual(["org", "team"]);
    const team = await json(await raw("GET", "/groups/team"));
    expect(team).toMatchObject({ name: "team", parent: "org" });
  });

  // gaps.md "Keys": revoke accepts any state and is idempotent; deleting a tombstoned key is 404.
  test("revoke twice, revoke after delete, delete twice", async () => {
    const created = (await json(await raw("POST", "/keys", JSON.stringify({ name: "twice" })))) as { id: string };
    expect((await raw("POST", `/keys/${created.id}/revoke`)).status).toBe(200);
    const again = await raw("POST", `/keys/${created.id}/revoke`);
    expect(again.status).toBe(200);
    expect(await json(again)).toMatchObject({ id: created.id, state: "revoked" });
    expect((await raw("DELETE", `/keys/${created.id}`)).status).toBe(200);
    const afterDelete = await raw("POST", `/keys/${created.id}/revoke`);
    expect(afterDelete.status).toBe(200);
    expect(await json(afterDelete)).toMatchObject({ id: created.id, state: "tombstoned" });
    const deleteAgain = await raw("DELETE", `/keys/${created.id}`);
    expect(deleteAgain.status).toBe(404);
    expect(((await json(deleteAgain)) as { error: { code: string } }).error.code).toBe("not_found");
    const patched = await raw("PATCH", `/keys/${created.id}`, '{"name": "back"}');
    expect(patched.status).toBe(409);
  });
});

/** Malformed virtual keys on each protocol's own credential header: refused in that protocol's shape (AWS answers a bad credential 403). */
describe("data plane: malformed keys are refused in the calling protocol's shape", () => {
  const good = () => key.token;
  const FORGERIES: [string, () => string][] = [
    ["truncated", () => good().slice(0, good().length - 10)],
    ["bad base64 payload", () => `gwk_@@@@.${good().split(".")[1]}`],
    ["wrong signature", () => `${good().split(".")[0]}.${"A".repeat(43)}`],
    ["extra characters", () => `${good()}xyz`],
    ["no dot", () => "gwk_abcdef"],
    // Long but under the HTTP server's header bound (past it the server answers 431 before we see it).
    ["very long", () => `gwk_${"a".repeat(6_000)}.sig`],
  ];
  const body = (payload: unknown) => JSON.stringify(payload);
  const CALLS: [string, (t: string) => Promise<Response>, (b: any) => boolean][] = [
    ["OpenAI Bearer", (t) => fetch(`${gw.data}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${t}`, "content-type": "application/json" }, body: body({ model: "chat", messages: [{ role: "user", content: "hi" }] }) }), (b) => typeof b.error?.message === "string" && b.error.type !== undefined],
    ["Anthropic x-api-key", (t) => fetch(`${gw.data}/v1/messages`, { method: "POST", headers: { "x-api-key": t, "anthropic-version": "2023-06-01", "content-type": "application/json" }, body: body({ model: "chat", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }) }), (b) => b.type === "error" && b.error?.type === "authentication_error"],
    ["Gemini x-goog-api-key", (t) => fetch(`${gw.data}/v1beta/models/chat:generateContent`, { method: "POST", headers: { "x-goog-api-key": t, "content-type": "application/json" }, body: body({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }) }), (b) => b.error?.code === 401 && typeof b.error.status === "string"],
    ["Gemini ?key=", (t) => fetch(`${gw.data}/v1beta/models/chat:generateContent?key=${encodeURIComponent(t)}`, { method: "POST", headers: { "content-type": "application/json" }, body: body({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }) }), (b) => b.error?.code === 401],
    ["Cohere Bearer", (t) => fetch(`${gw.data}/v2/chat`, { method: "POST", headers: { authorization: `Bearer ${t}`, "content-type": "application/json" }, body: body({ model: "chat", messages: [{ role: "user", content: "hi" }] }) }), (b) => typeof b.message === "string"],
    ["Responses Bearer", (t) => fetch(`${gw.data}/v1/responses`, { method: "POST", headers: { authorization: `Bearer ${t}`, "content-type": "application/json" }, body: body({ model: "chat", input: "hi" }) }), (b) => typeof b.error?.message === "string"],
    ["Bedrock Bearer", (t) => fetch(`${gw.data}/model/chat/converse`, { method: "POST", headers: { authorization: `Bearer ${t}`, "content-type": "application/json" }, body: body({ messages: [{ role: "user", content: [{ text: "hi" }] }] }) }), (b) => typeof b.message === "string"],
  ];
  for (const [forgery, token] of FORGERIES) {
    for (const [protocol, call, native] of CALLS) {
      test(`${forgery} key on ${protocol}`, async () => {
        const response = await call(token());
        const text = await response.text();
        expect({ protocol, status: response.status }).toEqual({ protocol, status: protocol.startsWith("Bedrock") ? 403 : 401 });
        expect(native(JSON.parse(text))).toBe(true);
        expect(text).not.toContain("    at ");
      });
    }
  }

  const SIGV4: [string, string][] = [
    ["missing parts", "AWS4-HMAC-SHA256 Credential=GWKA0000000000000000"],
    ["bad date scope", "AWS4-HMAC-SHA256 Credential=GWKA0000000000000000/notadate/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"],
    ["unknown access key", "AWS4-HMAC-SHA256 Credential=GWKAFFFFFFFFFFFFFFFF/20261124/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + "0".repeat(64)],
    ["garbage after scheme", "AWS4-HMAC-SHA256 ,,,===,,,"],
  ];
  for (const [what, authorization] of SIGV4) {
    test(`SigV4 ${what}: Bedrock-native 403`, async () => {
      const response = await fetch(`${gw.data}/model/chat/converse`, {
        method: "POST",
        headers: { authorization, "x-amz-date": "20261124T000000Z", "content-type": "application/json" },
        body: body({ messages: [{ role: "user", content: [{ text: "hi" }] }] }),
      });
      const text = await response.text();
      expect({ what, status: response.status }).toEqual({ what, status: 403 });
      expect(typeof (JSON.parse(text) as { message?: unknown }).message).toBe("string");
      expect(text).not.toContain("    at ");
    });
  }

  test("the genuine key still works after the forgeries", async () => {
    const [, call] = CALLS[0]!;
    expect((await call(key.token)).status).toBe(200);
  });
});
