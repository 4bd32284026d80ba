// The `keys` ingress module's checks: a bearer token's signature (cached: it never changes for a given
// token and signing key) and an issued AWS pair's SigV4 signature (per request: it signs the request),
// then the key's state and expiry from the in-memory registry (never cached: a revoke holds at once).
import type { IngressPrincipal, KeyAuthenticator } from "../auth/ingress-chain.ts";
import type { CredentialCache } from "../auth/credential-cache.ts";
import type { Snapshot } from "../config/snapshot.ts";
import { verifyRequest, type VerifiableRequest } from "../transport/sigv4.ts";
import type { KeyRegistry } from "./key-registry.ts";
import { awsCredential, TOKEN_PREFIX, verifyToken, type TokenClaims } from "./token.ts";

/** Bedrock's SigV4 service name; any region is accepted, since the gateway is not regional. */
const SIGV4_SERVICE = "bedrock";

export class RegistryKeyAuthenticator implements KeyAuthenticator {
  constructor(
    private readonly registry: KeyRegistry,
    /** Epoch milliseconds. */
    private readonly now: () => number,
  ) {}

  token(snapshot: Snapshot, token: string, cache: CredentialCache): IngressPrincipal | undefined {
    const signingKey = snapshot.auth.signingKey;
    if (signingKey === undefined || !token.startsWith(TOKEN_PREFIX)) return undefined;
    let claims = cache.get<TokenClaims>("keys", token, snapshot);
    if (!claims) {
      const checked = verifyToken(token, signingKey.reveal());
      if (!checked.ok) return undefined;
      claims = checked.claims;
      cache.set("keys", token, claims, snapshot);
    }
    const nowSecs = Math.floor(this.now() / 1000);
    if (claims.exp <= nowSecs) return undefined;
    return this.registry.admit(claims.kid, nowSecs);
  }

  sigv4(snapshot: Snapshot, request: VerifiableRequest): IngressPrincipal | undefined {
    const signingKey = snapshot.auth.signingKey;
    if (signingKey === undefined) return undefined;
    let kid: string | undefined;
    const lookup = (accessKeyId: string) => {
      kid = this.registry.idByAccessKey(accessKeyId);
      return kid === undefined ? undefined : awsCredential(kid, signingKey.reveal()).secretAccessKey;
    };
    const nowMs = this.now();
    const verified = verifyRequest(request, lookup, { service: SIGV4_SERVICE, now: new Date(nowMs) });
    if (!verified.ok || kid === undefined) return undefined;
    return this.registry.admit(kid, Math.floor(nowMs / 1000));
  }
}
