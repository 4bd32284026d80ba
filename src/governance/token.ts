// The virtual key's wire form: `gwk_<base64url(JSON {v,kid,sub,exp})>.<base64url(HMAC-SHA256)>`.
// The fixed prefix lets secret scanners find a leaked key; the MAC over prefix and payload under
// `auth.signing_key` makes it verifiable offline; the store keeps only its sha256 (gaps.md "Keys").
// Bun.CryptoHasher is synchronous, so the hot path verifies without a trip through the event loop.

export const TOKEN_PREFIX = "gwk_";
const VERSION = 1;

/**
 * The latest expiry a key may have: 9999-12-31T23:59:59Z. Past it a date no longer formats (1e300 was
 * a 500) and a second count is no longer exact.
 */
export const MAX_EXPIRES_AT = 253_402_300_799;

export interface TokenClaims {
  readonly kid: string;
  readonly sub: string;
  /** Unix seconds. */
  readonly exp: number;
}

export type TokenCheck = { readonly ok: true; readonly claims: TokenClaims } | { readonly ok: false; readonly reason: "prefix" | "malformed" | "signature" | "expired" };

const mac = (signingKey: string, data: string): Buffer => Buffer.from(new Bun.CryptoHasher("sha256", signingKey).update(data).digest());

export function mintToken(claims: TokenClaims, signingKey: string): string {
  const payload = Buffer.from(JSON.stringify({ v: VERSION, kid: claims.kid, sub: claims.sub, exp: claims.exp })).toString("base64url");
  const signed = `${TOKEN_PREFIX}${payload}`;
  return `${signed}.${mac(signingKey, signed).toString("base64url")}`;
}

/** The signature and the payload's form; expiry only when `nowSecs` is given (the cache keeps the rest). */
export function verifyToken(token: string, signingKey: string, nowSecs?: number): TokenCheck {
  if (!token.startsWith(TOKEN_PREFIX)) return { ok: false, reason: "prefix" };
  const dot = token.lastIndexOf(".");
  if (dot <= TOKEN_PREFIX.length) return { ok: false, reason: "malformed" };
  const encoded = token.slice(dot + 1);
  const presented = Buffer.from(encoded, "base64url");
  // One spelling per signature: base64url's last character has spare bits a decoder ignores.
  if (presented.toString("base64url") !== encoded) return { ok: false, reason: "signature" };
  const expected = mac(signingKey, token.slice(0, dot));
  if (presented.length !== expected.length || !crypto.timingSafeEqual(presented, expected)) return { ok: false, reason: "signature" };
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(token.slice(TOKEN_PREFIX.length, dot), "base64url").toString("utf8"));
  } catch {
    return { ok: false, reason: "malformed" };
  }
  const c = claims as Record<string, unknown>;
  if (c.v !== VERSION || typeof c.kid !== "string" || typeof c.sub !== "string" || typeof c.exp !== "number") return { ok: false, reason: "malformed" };
  if (nowSecs !== undefined && c.exp <= nowSecs) return { ok: false, reason: "expired" };
  return { ok: true, claims: { kid: c.kid, sub: c.sub, exp: c.exp } };
}

export const tokenHash = (token: string): string => new Bun.CryptoHasher("sha256").update(token).digest("hex");

/**
 * The AWS-style pair of a key minted with `issue_aws_credential`, derived from the signing key and the
 * key id, so the secret is never stored and the same pair comes back for the same key. The access key
 * id has AWS's usual shape (20 upper-case characters) so SDKs and log scrubbers treat it as one.
 */
export function awsCredential(kid: string, signingKey: string): { accessKeyId: string; secretAccessKey: string } {
  const id = mac(signingKey, `aws-access-key-id:${kid}`).toString("hex").toUpperCase();
  return { accessKeyId: `GWKA${id.slice(0, 16)}`, secretAccessKey: mac(signingKey, `aws-secret-access-key:${kid}`).toString("base64url").slice(0, 40) };
}

/**
 * The key id of an identity's exchanged key in one generation (design/identity.md, "Exchanged keys"),
 * derived from the signing key, so every exchange within a generation names the same key and, minted with
 * the generation's expiry, the same token (mintToken is a function of id, subject, expiry and signing key).
 * The shape of a minted key's random id; the identity and the generation cannot be read back from it.
 */
export function exchangedKeyId(identity: string, generation: number, signingKey: string): string {
  return `key_${mac(signingKey, `exchanged-key-id:${generation}:${identity}`).toString("hex").slice(0, 24)}`;
}
