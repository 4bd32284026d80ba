// The identity runtime one process keeps: a verifier per oidc instance (each holding its issuer's key set,
// kept across config applies that leave the instance's settings as they were, so an apply does not make
// every provider refetch), the token exchange, and what the chains and routes ask of them.
import type { OidcProvider } from "./settings.ts";
import type { Expect, OidcVerifier, Verdict } from "./verify.ts";
import { TokenExchange, type ExchangeDeps, type SignedIn } from "./exchange.ts";
import { claimGroups, oidcIdentity } from "./team.ts";
import { OidcChainModules } from "./chain-modules.ts";
import { SignInStates } from "./sign-in-state.ts";
import type { Logger } from "../telemetry/logger.ts";

/** A sub that can name a group (config/schema.ts GROUP_NAME_PATTERN): printable ASCII, at most 255. */
const USABLE_SUB = /^[\x21-\x7e]{1,255}$/;

/** A verified ID token's person, until when the decision holds (its `exp`, unix seconds). */
export type OidcCheck =
  | { readonly ok: true; readonly person: SignedIn; readonly exp: number }
  | { readonly ok: false; readonly kind: "invalid" | "unreachable" | "unusable"; readonly reason: string };

export interface IdentityDeps extends ExchangeDeps {
  /** The issuers' HTTP client (tests hand in their own). */
  readonly fetch?: typeof fetch;
  readonly logger?: Logger;
}

export class IdentityService {
  readonly exchange: TokenExchange;
  /** `oidc` and instance entries of auth.chain and auth.admin_auth. */
  readonly modules: OidcChainModules;
  /** Browser sign-ins' states redeemed by this process (each is single use). */
  readonly signIns = new SignInStates();
  readonly #fetch: typeof fetch | undefined;
  readonly #verifiers = new Map<string, { readonly settings: string; readonly verifier: OidcVerifier }>();

  constructor(deps: IdentityDeps) {
    this.exchange = new TokenExchange(deps);
    this.modules = new OidcChainModules({ identity: this, groups: deps.groups, now: deps.now, ...(deps.logger && { logger: deps.logger }) });
    this.#fetch = deps.fetch;
  }

  /**
   * The instance's verifier; a new one (with an empty key set) only when its settings changed. jose is
   * loaded with the first one: a gateway with no oidc provider never evaluates it, and no start waits on it.
   */
  async verifier(provider: OidcProvider): Promise<OidcVerifier> {
    const settings = JSON.stringify([provider.issuer, provider.audience, provider.jwksUrl, provider.caCertPem]);
    const held = this.#verifiers.get(provider.name);
    if (held?.settings === settings) return held.verifier;
    const { OidcVerifier } = await import("./verify.ts");
    const again = this.#verifiers.get(provider.name);
    if (again?.settings === settings) return again.verifier;
    const verifier = new OidcVerifier(
      { issuer: provider.issuer, audience: provider.audience, ...(provider.jwksUrl && { jwks_url: provider.jwksUrl }), ...(provider.caCertPem && { ca_cert_pem: provider.caCertPem }) },
      { ...(this.#fetch && { fetch: this.#fetch }) },
    );
    this.#verifiers.set(provider.name, { settings, verifier });
    return verifier;
  }

  /** An ID token checked by the instance: the person it names and their groups (role_claim). */
  async verifyOidc(provider: OidcProvider, token: string, expect: Expect = {}): Promise<OidcCheck> {
    const verdict: Verdict = await (await this.verifier(provider)).verify(token, expect);
    if (!verdict.ok) return verdict;
    if (!USABLE_SUB.test(verdict.sub)) return { ok: false, kind: "unusable", reason: "the token's subject is not 1 to 255 printable ASCII characters, so it cannot name a group" };
    const person: SignedIn = { provider: provider.name, identity: oidcIdentity(verdict.sub), groups: claimGroups(verdict.claims, provider.roleClaim) };
    return { ok: true, person, exp: verdict.claims.exp! };
  }
}
