// An OIDC provider's tokens checked by jose (design/identity.md, "Token verification"): RS/PS/ES 256-512
// or EdDSA only (never `none`, never HS*, so a public key can never be used as an HMAC secret), the key by
// `kid` from the provider's JWKS, `iss` and `aud` exact, `exp` and `sub` required, 60 s of clock leeway.
// Discovery and the JWKS are fetched on first use (a boot never waits on an issuer), the set kept 10 min;
// an unknown `kid` refetches at most once per 5 s, so a flood of forged kids cannot make a refetch storm.
// Everything read from the issuer is bounded in size, time and nesting.
import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTPayload, type JWSHeaderParameters, type FlattenedJWSInput } from "jose";
import type * as Tls from "node:tls";
import { boundedText } from "../http/bounded-body.ts";
import { jsonTextTooDeep } from "../http/json-depth.ts";

export interface OidcSettings {
  readonly issuer: string;
  readonly audience: string;
  /** The JWKS location; else discovery's `jwks_uri`. */
  readonly jwks_url?: string;
  /** PEM text of a CA trusted besides the public roots, for this provider's HTTPS only. */
  readonly ca_cert_pem?: string;
}

export const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];
export const CLOCK_LEEWAY_SECONDS = 60;
export const JWKS_MAX_AGE_MS = 10 * 60_000;
export const UNKNOWN_KID_REFETCH_MS = 5_000;
export const ISSUER_TIMEOUT_MS = 5_000;
/** A discovery document or a key set larger than this is refused (real ones are a few KiB). */
export const ISSUER_MAX_BYTES = 256 * 1024;

/** A verified token's identity, or why not: `invalid` is the token's fault (401), `unreachable` the issuer's (500 / 502). */
export type Verdict = { readonly ok: true; readonly sub: string; readonly claims: JWTPayload } | { readonly ok: false; readonly kind: "invalid" | "unreachable"; readonly reason: string };

type KeyResolver = (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey>;

export class OidcVerifier {
  readonly #settings: OidcSettings;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  readonly #refetchMs: number;
  #keys: Promise<KeyResolver> | undefined;

  /** `unknownKidRefetchMs` shortens the refetch bound for tests (jose reads the wall clock for it). */
  constructor(settings: OidcSettings, deps: { fetch?: typeof fetch; now?: () => number; unknownKidRefetchMs?: number } = {}) {
    this.#settings = settings;
    this.#now = deps.now ?? Date.now;
    this.#refetchMs = deps.unknownKidRefetchMs ?? UNKNOWN_KID_REFETCH_MS;
    const ca = settings.ca_cert_pem;
    const base = deps.fetch ?? fetch;
    // Bun's `tls.ca` replaces the default roots: the public ones are passed along with the provider's own.
    // node:tls is required only then: the bundle hoists a builtin's import, and every start would load it.
    const roots = ca ? (require("node:tls") as typeof Tls).rootCertificates : [];
    this.#fetch = (ca ? (url: string | URL | Request, init?: RequestInit) => base(url, { ...init, tls: { ca: [...roots, ca] } } as RequestInit) : base) as typeof fetch;
  }

  async verify(token: string): Promise<Verdict> {
    let keys: KeyResolver;
    try {
      keys = await (this.#keys ??= this.#resolver());
    } catch (error) {
      this.#keys = undefined; // the next token tries discovery again
      return { ok: false, kind: "unreachable", reason: (error as Error).message };
    }
    try {
      const { payload } = await jwtVerify(token, keys, {
        algorithms: ALGORITHMS,
        issuer: this.#settings.issuer,
        audience: this.#settings.audience,
        clockTolerance: CLOCK_LEEWAY_SECONDS,
        requiredClaims: ["exp", "sub"],
        currentDate: new Date(this.#now()),
      });
      if (typeof payload.sub !== "string" || payload.sub === "") return { ok: false, kind: "invalid", reason: "token has no subject" };
      return { ok: true, sub: payload.sub, claims: payload };
    } catch (error) {
      return verdictOf(error);
    }
  }

  async #resolver(): Promise<KeyResolver> {
    const jwksUrl = this.#settings.jwks_url ?? (await this.#discover());
    const remote = createRemoteJWKSet(new URL(jwksUrl), {
      cacheMaxAge: JWKS_MAX_AGE_MS,
      cooldownDuration: this.#refetchMs,
      timeoutDuration: ISSUER_TIMEOUT_MS,
      // jose asks for a 200 with JSON; the body is read bounded first and handed back as a fresh answer.
      [customFetch]: async (url, init) => {
        const answer = await this.#fetch(url, init);
        const text = await boundedText(answer, ISSUER_MAX_BYTES, "JWKS");
        if (jsonTextTooDeep(text)) throw new Error("JWKS nests JSON too deep");
        return new Response(text, { status: answer.status, headers: answer.headers });
      },
    });
    return remote as KeyResolver;
  }

  /** The discovery document's `jwks_uri`, after checking it names this issuer. */
  async #discover(): Promise<string> {
    const url = `${this.#settings.issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
    let answer: Response;
    try {
      answer = await this.#fetch(url, { redirect: "manual", signal: AbortSignal.timeout(ISSUER_TIMEOUT_MS) });
    } catch (error) {
      throw new Error(`discovery ${url}: ${(error as Error).message}`);
    }
    if (answer.status !== 200) {
      void answer.body?.cancel();
      throw new Error(`discovery ${url}: HTTP ${answer.status}`);
    }
    const text = await boundedText(answer, ISSUER_MAX_BYTES, `discovery ${url}`);
    if (jsonTextTooDeep(text)) throw new Error(`discovery ${url}: JSON nested too deep`);
    let document: { issuer?: unknown; jwks_uri?: unknown };
    try {
      document = JSON.parse(text) as typeof document;
    } catch {
      throw new Error(`discovery ${url}: not JSON`);
    }
    if (document?.issuer !== this.#settings.issuer) throw new Error(`discovery ${url}: names issuer ${JSON.stringify(String(document?.issuer)).slice(0, 200)}, not ${this.#settings.issuer}`);
    if (typeof document.jwks_uri !== "string" || !/^https?:\/\//.test(document.jwks_uri)) throw new Error(`discovery ${url}: no jwks_uri`);
    return document.jwks_uri;
  }
}

/** jose's refusals, as the caller's 401 (the token) or 500 (the issuer). */
function verdictOf(error: unknown): Verdict {
  if (error instanceof errors.JWKSTimeout) return { ok: false, kind: "unreachable", reason: "JWKS fetch timed out" };
  if (error instanceof errors.JWTExpired) return { ok: false, kind: "invalid", reason: "token expired" };
  if (error instanceof errors.JWTClaimValidationFailed) return { ok: false, kind: "invalid", reason: `claim ${error.claim} ${error.reason === "missing" ? "missing" : "invalid"}` };
  if (error instanceof errors.JOSEAlgNotAllowed) return { ok: false, kind: "invalid", reason: "algorithm not allowed" };
  if (error instanceof errors.JWKSNoMatchingKey) return { ok: false, kind: "invalid", reason: "no key in the provider's JWKS matches the token" };
  if (error instanceof errors.JWSSignatureVerificationFailed) return { ok: false, kind: "invalid", reason: "signature does not verify" };
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid || error instanceof errors.JOSENotSupported || error instanceof errors.JWKSMultipleMatchingKeys) return { ok: false, kind: "invalid", reason: "token is not a valid JWT" };
  // The rest is the issuer's: a non-200 or malformed JWKS (jose's generic error), a network or TLS fault.
  return { ok: false, kind: "unreachable", reason: `JWKS: ${(error as Error).message}` };
}
