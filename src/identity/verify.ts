// An OIDC provider's tokens checked by jose (design/identity.md, "Token verification"): RS/PS/ES 256-512
// or EdDSA only (never `none`, never HS*, so a public key can never be used as an HMAC secret), the key by
// `kid` from the provider's JWKS, `iss` and `aud` exact, `exp` and `sub` required, 60 s of clock leeway.
// Discovery and the JWKS are fetched on first use (a boot never waits on an issuer), the set kept 10 min;
// an unknown `kid` refetches at most once per 5 s, so a flood of forged kids cannot make a refetch storm.
// Everything read from the issuer is bounded in size, time and nesting.
import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTPayload, type JWSHeaderParameters, type FlattenedJWSInput } from "jose";
import { boundedText } from "../http/bounded-body.ts";
import { ISSUER_MAX_BYTES, ISSUER_TIMEOUT_MS, issuerJson, trusting } from "./issuer-http.ts";
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

/** A verified token's identity, or why not: `invalid` is the token's fault (401), `unreachable` the issuer's (500 / 502). */
export type Verdict = { readonly ok: true; readonly sub: string; readonly claims: JWTPayload } | { readonly ok: false; readonly kind: "invalid" | "unreachable"; readonly reason: string };

type KeyResolver = (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey>;

/** What the browser sign-in needs of the discovery document besides the key set. */
export interface Discovery {
  readonly jwks_uri: string;
  readonly authorization_endpoint: string | undefined;
  readonly token_endpoint: string | undefined;
}

/** What one check expects besides the provider's settings: the sign-in's client id and nonce. */
export interface Expect {
  readonly audience?: string;
  readonly nonce?: string;
}

export class OidcVerifier {
  readonly #settings: OidcSettings;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  readonly #refetchMs: number;
  #keys: Promise<KeyResolver> | undefined;
  #discovery: { readonly at: number; readonly document: Promise<Discovery> } | undefined;

  /** `unknownKidRefetchMs` shortens the refetch bound for tests (jose reads the wall clock for it). */
  constructor(settings: OidcSettings, deps: { fetch?: typeof fetch; now?: () => number; unknownKidRefetchMs?: number } = {}) {
    this.#settings = settings;
    this.#now = deps.now ?? Date.now;
    this.#refetchMs = deps.unknownKidRefetchMs ?? UNKNOWN_KID_REFETCH_MS;
    this.#fetch = trusting(settings.ca_cert_pem, deps.fetch ?? fetch);
  }

  /** The provider's HTTP client: trusts its ca_cert_pem besides the public roots. */
  get http(): typeof fetch {
    return this.#fetch;
  }

  /** The discovery document, kept as long as a key set (a failed read is forgotten at once). */
  discovery(): Promise<Discovery> {
    const now = this.#now();
    if (this.#discovery && now - this.#discovery.at < JWKS_MAX_AGE_MS) return this.#discovery.document;
    const document = this.#discover();
    this.#discovery = { at: now, document };
    document.catch(() => {
      if (this.#discovery?.document === document) this.#discovery = undefined;
    });
    return document;
  }

  async verify(token: string, expect: Expect = {}): Promise<Verdict> {
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
        audience: expect.audience ?? this.#settings.audience,
        clockTolerance: CLOCK_LEEWAY_SECONDS,
        requiredClaims: ["exp", "sub"],
        currentDate: new Date(this.#now()),
      });
      if (typeof payload.sub !== "string" || payload.sub === "") return { ok: false, kind: "invalid", reason: "token has no subject" };
      if (expect.nonce !== undefined && payload.nonce !== expect.nonce) return { ok: false, kind: "invalid", reason: "nonce does not match the sign-in's" };
      return { ok: true, sub: payload.sub, claims: payload };
    } catch (error) {
      return verdictOf(error);
    }
  }

  async #resolver(): Promise<KeyResolver> {
    const jwksUrl = this.#settings.jwks_url ?? (await this.discovery()).jwks_uri;
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

  /** The discovery document, after checking it names this issuer. */
  async #discover(): Promise<Discovery> {
    const url = `${this.#settings.issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
    const read = await issuerJson(this.#fetch, url, {}, `discovery ${url}`);
    if (read.status !== 200) throw new Error(`discovery ${url}: HTTP ${read.status}`);
    const document = (typeof read.body === "object" && read.body !== null ? read.body : {}) as { issuer?: unknown; jwks_uri?: unknown; authorization_endpoint?: unknown; token_endpoint?: unknown };
    if (document?.issuer !== this.#settings.issuer) throw new Error(`discovery ${url}: names issuer ${JSON.stringify(String(document?.issuer)).slice(0, 200)}, not ${this.#settings.issuer}`);
    if (!isHttpUrl(document.jwks_uri)) throw new Error(`discovery ${url}: no jwks_uri`);
    return {
      jwks_uri: document.jwks_uri,
      authorization_endpoint: isHttpUrl(document.authorization_endpoint) ? document.authorization_endpoint : undefined,
      token_endpoint: isHttpUrl(document.token_endpoint) ? document.token_endpoint : undefined,
    };
  }
}

const isHttpUrl = (value: unknown): value is string => typeof value === "string" && /^https?:\/\/[^\s]+$/.test(value);

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
