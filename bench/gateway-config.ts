// What bench/dataplane.ts and bench/startup.ts both give the gateway: the six providers on
// bench/upstream.ts (one per wire protocol), the governance block, their secrets, and minting the
// governed gateway's virtual key. Throwaway values for a loopback benchmark.

/** AWS's documented example key pair (IAM User Guide): the one bench/upstream.ts accepts for SigV4. */
export const AWS = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1" } as const;
/** The gateway's Bedrock provider reads its keys as secret references, {env: ...}. */
export const GATEWAY_ENV = { BENCH_AWS_KEY_ID: AWS.accessKeyId, BENCH_AWS_SECRET: AWS.secretAccessKey };

/** `providers:`, one per wire protocol, all on the upstream imitation at host:port. */
export const providersYaml = (upstream: string) => `providers:
  up-openai: {protocol: openai, base_url: "http://${upstream}/v1", api_key: bench-key}
  up-anthropic: {protocol: anthropic, base_url: "http://${upstream}", api_key: bench-key}
  up-responses: {protocol: responses, base_url: "http://${upstream}/v1", api_key: bench-key}
  up-gemini: {protocol: gemini, base_url: "http://${upstream}", api_key: bench-key}
  up-bedrock: {protocol: bedrock, base_url: "http://${upstream}", region: ${AWS.region}, aws_access_key_id: {env: BENCH_AWS_KEY_ID}, aws_secret_access_key: {env: BENCH_AWS_SECRET}}
  up-cohere: {protocol: cohere, base_url: "http://${upstream}", api_key: bench-key}
`;

/** The governed gateway's admin token and signing key. */
export const GOVERNANCE_ENV = { BENCH_ADMIN_TOKEN: "bench-admin-token-0123456789", BENCH_SIGNING_KEY: "bench-signing-key-0123456789abcdef0123456789abcdef" };
/** Keys, and three levels with every limit kind, none reached in a run: what is measured is the checking and charging. */
export const GOVERNANCE_YAML = `auth:
  chain: [keys]
  signing_key: {env: BENCH_SIGNING_KEY}
  admin_auth: [admin-tokens]
  admin_tokens: [{token: {env: BENCH_ADMIN_TOKEN}, scope: full}]
rate_card:
  gpt-4o-mini: {input: 0.15, output: 0.6}
  claude-haiku-4-5: {input: 1, output: 5}
groups:
  bench-org: {limits: [{window: month, budget_cents: 1000000000000}, {concurrent: 100000}]}
  bench-team: {parent: bench-org, limits: [{window: day, tokens: 1000000000000}, {window: hour, requests: 1000000000000}]}
  bench-dev: {parent: bench-team, limits: [{window: minute, requests: 1000000000, tokens: 1000000000000}, {concurrent: 10000}]}
`;

/** A virtual key for bench-dev (under bench-team, bench-org), minted through the admin API at host:port. */
export async function mintKey(admin: string): Promise<string> {
  const minted = await fetch(`http://${admin}/api/v1/admin/keys`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-admin-token": GOVERNANCE_ENV.BENCH_ADMIN_TOKEN },
    body: JSON.stringify({ name: "bench", group: "bench-dev" }),
  });
  const view = (await minted.json()) as { token?: string };
  if ((minted.status !== 200 && minted.status !== 201) || !view.token) throw new Error(`minting a key: ${minted.status} ${JSON.stringify(view)}`);
  return view.token;
}

/**
 * The `oidc` target: the governed gateway's groups, but `auth.chain` names an OIDC provider whose issuer
 * the benchmark serves itself (discovery and a key set on loopback, fetched once); requests carry an ID
 * token, so what is measured is a cached OIDC decision against a key's check. The person lands on
 * bench-team (default_team): their leaf `user:bench@bench-team` makes the same three levels as bench-dev.
 */
export const oidcYaml = (issuer: string) =>
  GOVERNANCE_YAML.replace("  chain: [keys]\n", "  chain: [bench-idp]\n") +
  `default_team: bench-team
identity-providers:
  bench-idp: {module: oidc, settings: {issuer: "${issuer}", audience: bench}}
`;

/** A loopback OpenID issuer (discovery and JWKS only) and a long-lived ID token it signed for `bench`. */
export async function benchIssuer(): Promise<{ issuer: string; token: string; stop(): void }> {
  const { SignJWT, exportJWK, generateKeyPair } = await import("jose");
  const { privateKey, publicKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "bench", alg: "RS256", use: "sig" };
  let issuer = "";
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/.well-known/openid-configuration") return Response.json({ issuer, jwks_uri: `${issuer}/jwks`, authorization_endpoint: `${issuer}/auth`, token_endpoint: `${issuer}/token` });
      if (path === "/jwks") return Response.json({ keys: [jwk] });
      return new Response("not found", { status: 404 });
    },
  });
  issuer = `http://127.0.0.1:${server.port}`;
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({ sub: "bench", aud: "bench" }).setProtectedHeader({ alg: "RS256", kid: "bench" }).setIssuer(issuer).setIssuedAt(now).setExpirationTime(now + 86_400).sign(privateKey);
  return { issuer, token, stop: () => server.stop(true) };
}

/** The `exported` target's exporters: every request's log line to a file, its spans over OTLP/protobuf. */
export const exportYaml = (logPath: string, tracesEndpoint: string) => `export:
  requests: {module: file, settings: {path: "${logPath}"}}
  traces: {module: otlp, settings: {endpoint: "${tracesEndpoint}", protocol: http/protobuf}}
`;
