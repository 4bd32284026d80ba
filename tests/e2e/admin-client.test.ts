// The generated TypeScript admin client (clients/admin-client.ts): current with the OpenAPI document,
// and working against the built binary: typed calls, and the error envelope raised as AdminApiError.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { AdminApiError, AdminClient } from "../../clients/admin-client.ts";
import { CLIENT_PATH, renderAdminClient } from "../../scripts/admin-client.ts";
import { LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

const ENV = { GW_ADMIN: "client-admin-token-1c2d", GW_SIGNING_KEY: "client-signing-key-99887766" };
let gw: RunningGateway;
let client: AdminClient;
beforeAll(async () => {
  gw = await startGateway(
    `${LISTEN_ANY}store: {module: sqlite, settings: {path: ./state/gateway.db}}
providers: {local: {protocol: mock}}
models: {mock-1: {provider: local}}
auth:
  chain: [keys]
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: GW_ADMIN}}]
`,
    { env: ENV },
  );
  client = new AdminClient({ baseUrl: gw.admin.replace(/\/api\/v1\/admin$/, ""), token: ENV.GW_ADMIN });
});
afterAll(async () => {
  await gw?.stop();
});

describe("clients/admin-client.ts", () => {
  test("is generated from the current OpenAPI document", () => {
    const current = existsSync(CLIENT_PATH) ? readFileSync(CLIENT_PATH, "utf8") : "";
    if (current !== renderAdminClient()) throw new Error("clients/admin-client.ts is out of date: run `bun scripts/admin-client.ts --write` and commit it");
  });

  test("typed calls reach the real binary", async () => {
    const info = await client.getInfo();
    expect(info.config_version).toBe(0);
    const minted = await client.postKeys({ name: "from-the-client", labels: { team: "ml" } });
    expect(minted.token).toStartWith("gwk_");
    const page = await client.getKeys({ limit: "10" });
    expect(page.items.map((k) => k.id)).toEqual([minted.id]);
    const revoked = await client.postKeysByIdRevoke(minted.id);
    expect(revoked.state).toBe("revoked");
    const settings = await client.putConfigSettings({ per_request_fee: 0.5 });
    expect(settings.applied).toBe(true);
    expect((await client.getConfigVersions()).items[0]!.summary).toBe("config.settings per_request_fee");
  });

  test("the error envelope comes back as AdminApiError with its code and status", async () => {
    const missing = await client.getKeysById("key_nope").catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(AdminApiError);
    expect(missing).toMatchObject({ status: 404, code: "not_found" });
    const anonymous = new AdminClient({ baseUrl: gw.admin.replace(/\/api\/v1\/admin$/, "") });
    await expect(anonymous.getKeys()).rejects.toMatchObject({ status: 401, code: "unauthorized" });
  });
});
