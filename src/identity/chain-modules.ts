// `oidc` in a chain (design/identity.md): a bearer that is an ID token, verified against the issuer's live
// key set. In auth.chain the person is admitted as their identity, charged to their per-person leaf under
// the team (provisioned on their first request); in admin_auth they get the scope of their admin_scope
// bindings, capped by the provider's max_admin_scope. A chain entry `oidc` means every oidc instance (the
// token's `iss` picks which); an instance name means that one. A decision is cached until the token's
// `exp` (never beyond), so a request with a known token costs a map lookup; only a token not seen before
// waits for verification. Refusals are not cached: a flood of bad tokens cannot push real decisions out.
import type { AdminPrincipal } from "../auth/admin-chain.ts";
import type { CredentialCache } from "../auth/credential-cache.ts";
import type { IngressPrincipal } from "../auth/ingress-chain.ts";
import type { Snapshot } from "../config/snapshot.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { GroupResolver } from "../governance/types.ts";
import { teamProblem } from "./exchange.ts";
import type { IdentityService } from "./service.ts";
import type { OidcProvider } from "./settings.ts";
import { adminScopeFor, leafGroup } from "./team.ts";

interface Decision<P> {
  readonly provider: string;
  readonly principal: P;
  /** Epoch milliseconds: the token's exp. */
  readonly until: number;
}

/**
 * Compact JWS: a JSON header (`eyJ`) and three parts. Anything else is another module's credential. Read
 * in place (no split): every request with an ID token runs it.
 */
function looksLikeJwt(token: string): boolean {
  if (!token.startsWith("eyJ")) return false;
  const first = token.indexOf(".");
  const second = first === -1 ? -1 : token.indexOf(".", first + 1);
  return second !== -1 && token.indexOf(".", second + 1) === -1;
}

/**
 * The oidc instances a chain entry stands for, narrowed by the token's (unverified) issuer to one. jose
 * is loaded here, on a token's first use, not at start (see service.ts).
 */
async function providerFor(snapshot: Snapshot, entry: string, token: string): Promise<OidcProvider | undefined> {
  const oidc = snapshot.identity.providers.filter((p): p is OidcProvider => p.module === "oidc" && (entry === "oidc" || p.name === entry));
  if (oidc.length <= 1) return oidc[0];
  const { decodeJwt } = await import("jose");
  let issuer: unknown;
  try {
    issuer = decodeJwt(token).iss;
  } catch {
    return undefined;
  }
  return oidc.find((p) => p.issuer === issuer);
}

export interface OidcModuleDeps {
  readonly identity: Pick<IdentityService, "verifyOidc">;
  readonly groups: GroupResolver | undefined;
  readonly logger?: Logger;
  /** Epoch milliseconds. */
  readonly now: () => number;
}

export class OidcChainModules {
  constructor(private readonly deps: OidcModuleDeps) {}

  /** The ingress module for `entry`: a cached decision now, a new token's after verification. */
  ingress(snapshot: Snapshot, entry: string, token: string | undefined, cache: CredentialCache): IngressPrincipal | undefined | Promise<IngressPrincipal | undefined> {
    if (token === undefined || !looksLikeJwt(token)) return undefined;
    const cached = cache.get<Decision<IngressPrincipal>>("oidc", token, snapshot);
    if (cached !== undefined && cached.until > this.deps.now()) return entry === "oidc" || cached.provider === entry ? cached.principal : undefined;
    return this.#admitIngress(snapshot, entry, token, cache);
  }

  async #admitIngress(snapshot: Snapshot, entry: string, token: string, cache: CredentialCache): Promise<IngressPrincipal | undefined> {
    const provider = await providerFor(snapshot, entry, token);
    if (!provider) return undefined;
    const checked = await this.#verify(provider, token);
    if (!checked) return undefined;
    const { person } = checked;
    const placed = teamProblem(person, snapshot.identity.bindings, this.deps.groups);
    if ("problem" in placed) return Object.freeze({ id: person.identity, module: "oidc", refusal: placed.problem });
    const leaf = leafGroup(person.identity, placed.team);
    if (!this.deps.groups?.exists(leaf)) {
      const made = await this.deps.groups!.resolveForMint(leaf, placed.team, person.identity);
      if (!made.ok) return Object.freeze({ id: person.identity, module: "oidc", refusal: made.message });
    }
    const principal: IngressPrincipal = Object.freeze({ id: person.identity, module: "oidc", group: leaf });
    cache.set("oidc", token, { provider: provider.name, principal, until: checked.exp * 1000 } satisfies Decision<IngressPrincipal>, snapshot);
    return principal;
  }

  /** The admin module for `entry`: the person's admin scope, or a refusal (403) when they have none. */
  admin(snapshot: Snapshot, entry: string, token: string | undefined, cache: CredentialCache | undefined): AdminPrincipal | undefined | Promise<AdminPrincipal | undefined> {
    if (token === undefined || !looksLikeJwt(token)) return undefined;
    const cached = cache?.get<Decision<AdminPrincipal>>("oidc-admin", token, snapshot);
    if (cached !== undefined && cached.until > this.deps.now()) return entry === "oidc" || cached.provider === entry ? cached.principal : undefined;
    return this.#admitAdmin(snapshot, entry, token, cache);
  }

  async #admitAdmin(snapshot: Snapshot, entry: string, token: string, cache: CredentialCache | undefined): Promise<AdminPrincipal | undefined> {
    const provider = await providerFor(snapshot, entry, token);
    if (!provider || provider.maxAdminScope === "none") return undefined;
    const checked = await this.#verify(provider, token);
    if (!checked) return undefined;
    const { person } = checked;
    const scope = adminScopeFor(provider.name, person.groups, snapshot.identity.bindings, provider.maxAdminScope);
    const credential = `oidc:${provider.name}`;
    const principal: AdminPrincipal = Object.freeze(
      scope === undefined
        ? { id: person.identity, scope: "read-only" as const, credential, refusal: `${person.identity} has no admin_scope binding in role_bindings.${provider.name}` }
        : { id: person.identity, scope, credential },
    );
    cache?.set("oidc-admin", token, { provider: provider.name, principal, until: checked.exp * 1000 } satisfies Decision<AdminPrincipal>, snapshot);
    return principal;
  }

  async #verify(provider: OidcProvider, token: string) {
    const checked = await this.deps.identity.verifyOidc(provider, token);
    if (checked.ok) return checked;
    if (checked.kind === "unreachable") this.deps.logger?.warn("identity provider unreachable", { provider: provider.name, cause: checked.reason });
    return undefined;
  }
}
