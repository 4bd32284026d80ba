// The token exchange's paths on the data listener, on the built binary, while no identity provider can be
// configured (issue 18 is building them): /auth/token is the exchange's, never the direct route
// POST /{provider}/{model} (which took it as provider `auth`, model `token`), and answers in the gateway's
// envelope, uncached: an exchange is a 400 naming the cause, the sign-in page a 404.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { LISTEN_ANY, json, startGateway, type RunningGateway } from "../support/gateway.ts";

let gw: RunningGateway;
beforeAll(async () => {
  // A provider named `auth` would have made POST /auth/token a direct call to its model `token`.
  gw = await startGateway(`${LISTEN_ANY}providers:\n  auth: {protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: "k"}\nmodels:\n  m: {provider: auth, model: gpt-4o-mini}\n`);
});
afterAll(async () => {
  await gw?.stop();
});

describe("/auth/token with no identity provider", () => {
  for (const path of ["/auth/token", "/auth/token/refresh"]) {
    test(`POST ${path}: 400 invalid_request naming the missing provider, not sent to a provider`, async () => {
      const answer = await fetch(`${gw.data}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id_token: "eyJ.x.y" }) });
      expect(answer.status).toBe(400);
      expect(answer.headers.get("cache-control")).toBe("no-store");
      const body = (await json(answer)) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("invalid_request");
      expect(body.error.message).toContain("no identity provider is configured");
    });
  }

  test("GET /auth/token: 404, no sign-in page", async () => {
    const answer = await fetch(`${gw.data}/auth/token`);
    expect(answer.status).toBe(404);
    expect(answer.headers.get("cache-control")).toBe("no-store");
    expect(((await json(answer)) as { error: { code: string } }).error.code).toBe("not_found");
  });

  test("another path under the provider named auth is still its direct route", async () => {
    // The direct route reaches the provider (nothing listens on port 9): a transport fault, not a 404 of the gateway's.
    const answer = await fetch(`${gw.data}/auth/gpt-4o-mini`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "x", messages: [{ role: "user", content: "hi" }] }) });
    expect(answer.status).toBeGreaterThanOrEqual(500);
    expect(((await json(answer)) as { error: { type: string } }).error.type).toBeDefined();
  });
});
