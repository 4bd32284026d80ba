// POST /auth/token's input: both forms, the instance chosen by name, by being the only oidc one, or by the
// token's issuer; every refusal of the design's table with its status.
import { describe, expect, test } from "bun:test";
import { readExchangeRequest, type ProviderInstance } from "../../src/identity/exchange-request.ts";

const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
const jwt = (iss: string) => `${part({ alg: "RS256", kid: "k" })}.${part({ iss, sub: "alice", aud: "gw", exp: 2_000_000_000 })}.c2ln`;
const CORP: ProviderInstance = { name: "corp", module: "oidc", issuer: "https://corp.example" };
const PARTNER: ProviderInstance = { name: "partner", module: "oidc", issuer: "https://partner.example" };
const FORGE: ProviderInstance = { name: "forge", module: "forge" };

describe("POST /auth/token input", () => {
  test("the JSON form, with or without a provider", () => {
    const token = jwt("https://corp.example");
    expect(readExchangeRequest(JSON.stringify({ id_token: token }), null, [CORP, FORGE])).toEqual({ ok: true, token, instance: CORP });
    expect(readExchangeRequest(JSON.stringify({ id_token: token, provider: "partner" }), null, [CORP, PARTNER])).toEqual({ ok: true, token, instance: PARTNER });
  });

  test("the Bearer form, with an optional body naming the provider", () => {
    const token = jwt("https://partner.example");
    expect(readExchangeRequest("", `Bearer ${token}`, [CORP])).toEqual({ ok: true, token, instance: CORP });
    expect(readExchangeRequest(JSON.stringify({ provider: "corp" }), `bearer ${token}`, [CORP, PARTNER])).toEqual({ ok: true, token, instance: CORP });
  });

  test("several oidc instances: the one whose issuer is the token's", () => {
    const token = jwt("https://partner.example");
    expect(readExchangeRequest("", `Bearer ${token}`, [CORP, PARTNER])).toEqual({ ok: true, token, instance: PARTNER });
  });

  const refusals: [string, string, string | null, readonly ProviderInstance[], number][] = [
    ["not JSON", "{oops", null, [CORP], 400],
    ["not an object", "[1]", null, [CORP], 400],
    ["unknown member", JSON.stringify({ id_token: jwt("x"), scope: "all" }), null, [CORP], 400],
    ["id_token not a string", JSON.stringify({ id_token: 5 }), null, [CORP], 400],
    ["provider unknown", JSON.stringify({ id_token: jwt("x"), provider: "nope" }), null, [CORP], 400],
    ["provider not oidc", JSON.stringify({ id_token: jwt("x"), provider: "forge" }), null, [CORP, FORGE], 400],
    ["ambiguous: no issuer matches", JSON.stringify({ id_token: jwt("https://other.example") }), null, [CORP, PARTNER], 400],
    ["ambiguous: not a JWT", JSON.stringify({ id_token: "opaque" }), null, [CORP, PARTNER], 400],
    ["no oidc instance", JSON.stringify({ id_token: jwt("x") }), null, [FORGE], 400],
    ["the token twice", JSON.stringify({ id_token: jwt("x") }), `Bearer ${jwt("x")}`, [CORP], 400],
    ["no token", "", null, [CORP], 401],
    ["no token, a provider named", JSON.stringify({ provider: "corp" }), null, [CORP], 401],
    ["not a Bearer credential", "", "Basic YTpi", [CORP], 401],
  ];
  for (const [name, text, authorization, instances, status] of refusals) {
    test(`refused: ${name} (${status})`, () => {
      const answer = readExchangeRequest(text, authorization, instances);
      expect(answer.ok).toBe(false);
      if (!answer.ok) expect([answer.status as number, answer.code as string]).toEqual([status, status === 400 ? "invalid_request" : "unauthorized"]);
    });
  }
});
