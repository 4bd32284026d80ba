// A real OpenID Provider (the oidc-provider package, a Koa app, so run by node, not bun) for the identity
// tests; tests/support/oidc-op.ts starts and drives it. Its whole setup comes in OP_CONFIG (JSON):
//   { port, tls?: { certFile, keyFile }, jwks: { keys: [private JWKs, signing key first] },
//     clients: [{ client_id, client_secret, redirect_uris }], accounts: [{ sub, claims? }] }
// Once it answers it prints one line `{"ready":true,"issuer":...}` on stdout. It exits when its stdin
// closes, so it dies with the test process that spawned it, however that one ends.
import { readFileSync } from "node:fs";
import { createServer as createHttp } from "node:http";
import { createServer as createHttps } from "node:https";
import Provider from "oidc-provider";

const config = JSON.parse(process.env.OP_CONFIG ?? "{}");
const accounts = new Map(config.accounts.map((account) => [account.sub, account]));

// Every extra claim an account carries (groups, email, ...) is made available under a scope, so an
// "openid profile email" request returns it; the email claims under "email" as OIDC Core has them.
const EMAIL_CLAIMS = ["email", "email_verified"];
const extra = new Set(config.accounts.flatMap((account) => Object.keys(account.claims ?? {})));
const profile = ["name", "preferred_username", ...[...extra].filter((claim) => !EMAIL_CLAIMS.includes(claim))];

// Counted before the provider sees the request, so the tests can assert how often a verifier fetched keys.
let jwksFetches = 0;

const server = config.tls
  ? createHttps({ cert: readFileSync(config.tls.certFile), key: readFileSync(config.tls.keyFile) })
  : createHttp();
await new Promise((resolve, reject) => {
  server.once("error", reject);
  server.listen(config.port ?? 0, "127.0.0.1", resolve);
});
const issuer = `${config.tls ? "https" : "http"}://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: config.clients.map((client) => ({
    ...client,
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
    id_token_signed_response_alg: "RS256",
  })),
  jwks: config.jwks,
  // A login name typed in the dev login form is the account's sub; an unknown one finds no account.
  async findAccount(_ctx, sub) {
    const account = accounts.get(sub);
    if (!account) return undefined;
    return { accountId: sub, claims: async () => ({ sub, ...account.claims }) };
  },
  claims: { openid: ["sub"], email: EMAIL_CLAIMS, profile },
  // Scope-requested claims go into the ID token too (OIDC Core would keep them for the UserInfo
  // endpoint): the gateway reads groups and email from the ID token it redeems.
  conformIdTokenClaims: false,
  // PKCE with S256 for every client, as the gateway always sends it.
  pkce: { methods: ["S256"], required: () => true },
  // The dev login and consent pages: their "[ Cancel ]" link aborts with error=access_denied.
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ["oidc-op test cookie key"] },
  ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600 },
});
const callback = provider.callback();

server.on("request", (req, res) => {
  const path = (req.url ?? "").split("?")[0];
  if (path === "/__test/jwks-fetches") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ count: jwksFetches }));
    return;
  }
  if (req.method === "GET" && path === "/jwks") jwksFetches += 1;
  callback(req, res);
});

process.stdin.on("data", () => {});
process.stdin.on("close", () => process.exit(0));
process.stdin.on("end", () => process.exit(0));
process.stdout.write(`${JSON.stringify({ ready: true, issuer })}\n`);
