// A real OpenID Provider for the identity tests: the oidc-provider package, run by node as a child
// process (tests/support/oidc-op-server.mjs), on 127.0.0.1, over HTTP or HTTPS. It serves discovery,
// JWKS, the authorization endpoint (code flow, PKCE S256 required) with its dev login and consent pages,
// and a token endpoint taking client_secret_basic. Its RS256 signing key is made here, so a test can sign
// tokens of its own with the very key (and kid) the OP publishes.
import type { Subprocess } from "bun";
import { exportJWK, exportSPKI, generateKeyPair, importJWK, SignJWT, type JWK } from "jose";
import { join } from "node:path";
import type { Page } from "playwright-core";

export interface OpAccount {
  /** Also the login name typed into the OP's login form. */
  sub: string;
  /** Extra claims put into the ID token for scope "openid profile email", e.g. { groups: ["ml"], email }. */
  claims?: Record<string, unknown>;
}

export interface OpClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}

export interface StartedOp {
  /** http://127.0.0.1:PORT, or https://127.0.0.1:PORT with tls. */
  issuer: string;
  jwksUrl: string;
  /** The kid the OP signs with now. */
  kid(): string;
  /** An ID token signed with the OP's current key: iss, iat and exp (+10 min) by default; `claims` override them (undefined drops one), `header` overrides alg/kid/typ: RS384/PS256 etc. sign with the same key, "none" gives an unsigned token, HS256 an HMAC keyed with the public key's PEM (algorithm confusion). */
  sign(claims: Record<string, unknown>, header?: Record<string, unknown>): Promise<string>;
  /** A new signing key (new kid): the OP restarts on the same port, publishing the old key too with keepOld. */
  rotate(opts?: { keepOld?: boolean }): Promise<void>;
  /** GETs of /jwks since startOp, across rotations. */
  jwksFetches(): Promise<number>;
  stop(): Promise<void>;
}

export interface StartOpOptions {
  clients: OpClient[];
  accounts: OpAccount[];
  /** PEM files, e.g. makeTlsDir()'s cert.pem and key.pem; the client then trusts its ca.pem. */
  tls?: { certFile: string; keyFile: string };
  port?: number;
}

const SERVER = join(import.meta.dir, "oidc-op-server.mjs");
const START_TIMEOUT_MS = 15_000;

interface SigningKey {
  kid: string;
  jwk: JWK;
}

async function newSigningKey(): Promise<SigningKey> {
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const kid = `k-${crypto.randomUUID()}`;
  return { kid, jwk: { ...(await exportJWK(privateKey)), kid, alg: "RS256", use: "sig" } };
}

/** The public half of an RSA private JWK, as the OP publishes it. */
function publicJwk(jwk: JWK): JWK {
  const { kty, n, e, kid, alg, use } = jwk;
  return { kty, n, e, kid, alg, use };
}

interface Child {
  proc: Subprocess<"pipe", "pipe", "pipe">;
  issuer: string;
  stderr: string[];
}

/** Spawns the server and reads its ready line; any earlier exit throws with what it wrote on stderr. */
async function spawnOp(config: object): Promise<Child> {
  const proc = Bun.spawn(["node", SERVER], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", OP_CONFIG: JSON.stringify(config) },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr: string[] = [];
  // Both pipes are drained for the child's whole life: a full pipe would stall it.
  void (async () => {
    for await (const chunk of proc.stderr) stderr.push(new TextDecoder().decode(chunk));
    stderr.splice(0, Math.max(0, stderr.length - 50));
  })();
  const reader = proc.stdout.getReader();
  let text = "";
  const timer = setTimeout(() => proc.kill("SIGKILL"), START_TIMEOUT_MS);
  try {
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) {
        await proc.exited;
        throw new Error(`the OIDC provider exited (${proc.exitCode}) before it was ready: ${stderr.join("").slice(-2000)}`);
      }
      text += new TextDecoder().decode(value);
    }
  } finally {
    clearTimeout(timer);
  }
  void (async () => {
    while (!(await reader.read()).done);
  })();
  const ready = JSON.parse(text.slice(0, text.indexOf("\n"))) as { issuer: string };
  return { proc, issuer: ready.issuer, stderr };
}

/** Closing stdin asks the child to exit; a child that has not within 3 s is killed. */
async function stopChild(child: Child): Promise<void> {
  try {
    child.proc.stdin.end();
  } catch {
    // Already closed.
  }
  const timer = setTimeout(() => child.proc.kill("SIGKILL"), 3_000);
  await child.proc.exited;
  clearTimeout(timer);
}

export async function startOp(opts: StartOpOptions): Promise<StartedOp> {
  let current = await newSigningKey();
  let published = [current];
  const base = { clients: opts.clients, accounts: opts.accounts, tls: opts.tls };
  let child = await spawnOp({ ...base, port: opts.port ?? 0, jwks: { keys: published.map((key) => key.jwk) } });
  const issuer = child.issuer;
  const port = Number(new URL(issuer).port);
  let earlierFetches = 0;
  let stopped = false;

  // Our own loopback child, possibly with a self-made certificate: no chain check for this read.
  const count = async (): Promise<number> => {
    const res = await fetch(`${issuer}/__test/jwks-fetches`, { tls: { rejectUnauthorized: false } });
    return ((await res.json()) as { count: number }).count;
  };

  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    kid: () => current.kid,
    async sign(claims, header = {}) {
      const now = Math.floor(Date.now() / 1000);
      const payload: Record<string, unknown> = { iss: issuer, iat: now, exp: now + 600, ...claims };
      for (const key of Object.keys(payload)) if (payload[key] === undefined) delete payload[key];
      const protectedHeader = { alg: "RS256", kid: current.kid, typ: "JWT", ...header } as { alg: string; [k: string]: unknown };
      if (protectedHeader.alg === "none") {
        const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
        return `${part(protectedHeader)}.${part(payload)}.`;
      }
      // HS*: the classic algorithm-confusion forgery, keyed with the OP's public key as PEM text.
      const key = protectedHeader.alg.startsWith("HS")
        ? new TextEncoder().encode(await exportSPKI((await importJWK(publicJwk(current.jwk), "RS256")) as CryptoKey))
        : await importJWK(current.jwk, protectedHeader.alg);
      return new SignJWT(payload).setProtectedHeader(protectedHeader).sign(key);
    },
    async rotate(rotateOpts = {}) {
      const next = await newSigningKey();
      earlierFetches += await count();
      await stopChild(child);
      published = rotateOpts.keepOld ? [next, ...published] : [next];
      current = next;
      // The port was just freed; a bind that still loses the race is tried again for a few seconds.
      for (let attempt = 0; ; attempt++) {
        try {
          child = await spawnOp({ ...base, port, jwks: { keys: published.map((key) => key.jwk) } });
          return;
        } catch (error) {
          if (attempt >= 20 || !String(error).includes("EADDRINUSE")) throw error;
          await Bun.sleep(200);
        }
      }
    },
    async jwksFetches() {
      return earlierFetches + (await count());
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopChild(child);
    },
  };
}

/**
 * In a page showing the OP's login form: signs in as `login` (an account's sub), then passes the consent
 * page if one comes; resolves once the browser has left the OP. The OP keeps a session per browser
 * context, so a second sign-in in the same context goes straight back without any form: use a new
 * context for a fresh one. An unknown login ends on the OP's error page (server_error), and that
 * context's session stays broken.
 */
export async function signInAtOp(page: Page, issuer: string, login: string): Promise<void> {
  const atOp = () => page.url().startsWith(`${issuer}/`);
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', "any password: the dev login checks none");
  // The form's answer is a chain of redirects; the next page committed is consent, or the client.
  const navigated = page.waitForEvent("framenavigated", { predicate: (frame) => frame === page.mainFrame() });
  await page.click("button[type=submit]");
  await navigated;
  await page.waitForLoadState();
  if (atOp() && (await page.locator('input[name="prompt"][value="consent"]').count()) > 0) {
    await Promise.all([page.waitForURL((url) => !url.href.startsWith(`${issuer}/`)), page.click("button[type=submit]")]);
  }
  if (atOp()) throw new Error(`still at the OIDC provider after signing in as ${login}: ${page.url()}`);
}

/** In a page showing the OP's login or consent page: follows its "[ Cancel ]" link, which sends the browser back with error=access_denied. */
export async function cancelAtOp(page: Page, issuer: string): Promise<void> {
  await Promise.all([page.waitForURL((url) => !url.href.startsWith(`${issuer}/`)), page.click("text=[ Cancel ]")]);
}
