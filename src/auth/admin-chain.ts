// The admin chain (rules in chain.ts): a refused caller gets 401; the open posture is anonymous with
// full authority.
import { secretEquals } from "../config/secret.ts";
import { bearerToken } from "../http/credentials.ts";
import { runChain, type ChainModule } from "./chain.ts";
import type { CredentialCache } from "./credential-cache.ts";
import type { IdentityService } from "../identity/service.ts";
import type { Snapshot } from "../config/snapshot.ts";

export type AdminScope = "read-only" | "full";
export interface AdminPrincipal {
  /** Audit principal: `admin` for an operator token, `anonymous` on an open plane. */
  readonly id: string;
  readonly scope: AdminScope;
  /**
   * Which credential acted, for the audit entry's `credential`: `admin-tokens:<name>`, the config's label
   * (default `admin-token-<index>`). Nothing derived from the token: a hash prefix in an entry that
   * read-only principals can read let them test guesses at a weak full-scope token offline.
   */
  readonly credential?: string;
  /** A verified person with no admin binding: 403 on every request, reads too. */
  readonly refusal?: string;
}

const ANONYMOUS: AdminPrincipal = Object.freeze({ id: "anonymous", scope: "full" });

/** `x-admin-token: T` or `Authorization: Bearer T` (spec: both accepted). */
export function presentedAdminToken(headers: Headers): string | undefined {
  const direct = headers.get("x-admin-token");
  if (direct) return direct;
  return bearerToken(headers);
}

/** What the `oidc` admin module needs: the identity runtime and the decision cache. */
export interface AdminServices {
  readonly identity?: IdentityService;
  readonly cache?: CredentialCache;
}

type AdminModule = ChainModule<AdminPrincipal, Snapshot, Headers, AdminServices>;

/** The `admin-tokens` module: an operator token from the config. */
export function adminTokenPrincipal(snapshot: Snapshot, headers: Headers): AdminPrincipal | undefined {
  const presented = presentedAdminToken(headers);
  if (presented === undefined) return undefined;
  // Compare against every token, so the time taken does not tell which one (if any) matched.
  let admitted: AdminPrincipal | undefined;
  for (const t of snapshot.auth.adminTokens) {
    if (secretEquals(t.token, presented) && admitted === undefined) admitted = { id: "admin", scope: t.scope, credential: `admin-tokens:${t.name}` };
  }
  return admitted;
}

/** Compiled-in admin modules by name. */
export const ADMIN_MODULES: Readonly<Record<string, AdminModule>> = {
  "admin-tokens": adminTokenPrincipal,
  oidc: (snapshot, headers, services) => services.identity?.modules.admin(snapshot, "oidc", presentedAdminToken(headers), services.cache),
};

const instanceModules = new Map<string, AdminModule>();
function instanceModule(name: string): AdminModule {
  let module = instanceModules.get(name);
  if (!module) instanceModules.set(name, (module = (snapshot, headers, services) => services.identity?.modules.admin(snapshot, name, presentedAdminToken(headers), services.cache)));
  return module;
}

export function authenticateAdmin(snapshot: Snapshot, headers: Headers, services: AdminServices = {}): AdminPrincipal | undefined | Promise<AdminPrincipal | undefined> {
  return runChain(snapshot.auth.adminChain, ADMIN_MODULES, ANONYMOUS, snapshot, headers, services, instanceModule);
}
