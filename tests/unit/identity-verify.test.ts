// The OIDC token check against a local issuer (discovery + JWKS served on loopback, keys made by jose):
// every bad token class refused as the token's fault, the issuer's faults told apart, rotation picked up
// and a flood of unknown kids answered by one refetch.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";
import { OidcVerifier } from "../../src/identity/verify.ts";

type Key = { kid: string; privateKey: CryptoKey; jwk: JWK };
async function makeKey(kid: string, alg = "RS256"): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
}

let served: Key[] = [];
let jwksFetches = 0;
let discoveryStatus = 200;
let server: ReturnType<typeof Bun.serve>;
let issuer = "";
const AUDIENCE = "gateway";

beforeAll(async () => {
  served = [await makeKey("k1")];
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/.well-known/openid-configuration") return Response.json({ issuer, jwks_uri: `${issuer}/jwks` }, { status: discoveryStatus });
      if (path === "/jwks") {
        jwksFetches++;
        return Response.json({ keys: served.map((k) => k.jwk) });
      }
      return new Response("no", { status: 404 });
    },
  });
  issuer = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server?.stop(true));

const now = () => Math.floor(Date.now() / 1000);
function sign(key: Key, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}) {
  const jwt = new SignJWT({ sub: "alice", ...claims }).setProtectedHeader({ alg: key.jwk.alg as string, kid: key.kid, ...header }).setIssuer(issuer).setAudience(AUDIENCE).setIssuedAt();
  if (!("exp" in claims)) jwt.setExpirationTime(now() + 600);
  return jwt.sign(key.privateKey);
}
const verifier = () => new OidcVerifier({ issuer, audience: AUDIENCE });

describe("OIDC token verification", () => {
  test("a good token gives its subject; discovery and the JWKS are fetched once", async () => {
    const v = verifier();
    const before = jwksFetches;
    expect(await v.verify(await sign(served[0]!))).toMatchObject({ ok: true, sub: "alice" });
    expect(await v.verify(await sign(served[0]!, { sub: "bob" }))).toMatchObject({ ok: true, sub: "bob" });
    expect(jwksFetches - before).toBe(1);
  });

  test("every bad token class is the token's fault", async () => {
    const v = verifier();
    const key = served[0]!;
    const other = await makeKey("k1"); // same kid, another key: a forged signature
    const cases: [string, Promise<string> | string][] = [
      ["wrong issuer", new SignJWT({ sub: "a" }).setProtectedHeader({ alg: "RS256", kid: "k1" }).setIssuer("https://evil.example").setAudience(AUDIENCE).setExpirationTime(now() + 60).sign(key.privateKey)],
      ["wrong audience", new SignJWT({ sub: "a" }).setProtectedHeader({ alg: "RS256", kid: "k1" }).setIssuer(issuer).setAudience("other").setExpirationTime(now() + 60).sign(key.privateKey)],
      ["expired past the leeway", sign(key, { exp: now() - 120 })],
      ["not yet valid past the leeway", sign(key, { nbf: now() + 300 })],
      ["bad signature", sign(other)],
      ["missing sub", new SignJWT({}).setProtectedHeader({ alg: "RS256", kid: "k1" }).setIssuer(issuer).setAudience(AUDIENCE).setExpirationTime(now() + 60).sign(key.privateKey)],
      ["missing exp", new SignJWT({ sub: "a" }).setProtectedHeader({ alg: "RS256", kid: "k1" }).setIssuer(issuer).setAudience(AUDIENCE).sign(key.privateKey)],
      ["alg none", unsigned({ alg: "none", kid: "k1" })],
      ["HS256 keyed by the public key", new SignJWT({ sub: "a" }).setProtectedHeader({ alg: "HS256", kid: "k1" }).setIssuer(issuer).setAudience(AUDIENCE).setExpirationTime(now() + 60).sign(new TextEncoder().encode(JSON.stringify(key.jwk)))],
      ["unknown kid", sign(key, {}, { kid: "nobody" })],
      ["not a JWT", "not-a-jwt"],
    ];
    for (const [name, token] of cases) {
      const verdict = await v.verify(await token);
      expect({ name, ok: verdict.ok, kind: verdict.ok ? undefined : verdict.kind }).toEqual({ name, ok: false, kind: "invalid" });
    }
  });

  test("within the leeway an expired token still passes", async () => {
    expect((await verifier().verify(await sign(served[0]!, { exp: now() - 30 }))).ok).toBe(true);
  });

  test("a rotated key is picked up without a restart once the refetch bound has passed, and a flood of unknown kids costs one refetch", async () => {
    const v = new OidcVerifier({ issuer, audience: AUDIENCE }, { unknownKidRefetchMs: 200 });
    expect((await v.verify(await sign(served[0]!))).ok).toBe(true);
    const rotated = await makeKey("k2", "ES256");
    served = [served[0]!, rotated];
    // Right after a fetch the new kid waits for the refetch bound: the set is not fetched again yet.
    const early = jwksFetches;
    expect(await v.verify(await sign(rotated))).toMatchObject({ ok: false, kind: "invalid" });
    expect(jwksFetches).toBe(early);
    await Bun.sleep(250);
    const before = jwksFetches;
    const results = await Promise.all(Array.from({ length: 20 }, async (_, i) => v.verify(await sign(rotated, {}, i === 0 ? {} : { kid: `forged-${i}` }))));
    expect(results.filter((r) => r.ok).length).toBe(1);
    expect(jwksFetches - before).toBe(1);
  });

  test("an unreachable or misconfigured issuer is the issuer's fault, and the next token tries again", async () => {
    discoveryStatus = 500;
    const v = verifier();
    const token = await sign(served[0]!);
    expect(await v.verify(token)).toMatchObject({ ok: false, kind: "unreachable" });
    discoveryStatus = 200;
    expect((await v.verify(token)).ok).toBe(true);
    const nowhere = new OidcVerifier({ issuer: "http://127.0.0.1:9", audience: AUDIENCE });
    expect(await nowhere.verify(token)).toMatchObject({ ok: false, kind: "unreachable" });
    const otherIssuer = new OidcVerifier({ issuer: `${issuer}/other`, audience: AUDIENCE });
    expect(await otherIssuer.verify(token)).toMatchObject({ ok: false, kind: "unreachable" });
  });
});

function unsigned(header: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${part(header)}.${part({ sub: "a", iss: issuer, aud: AUDIENCE, exp: now() + 60 })}.`;
}
