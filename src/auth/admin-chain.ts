// The admin chain (rules in chain.ts): a refused caller gets 401; the open posture is anonymous with
// full authority.
import { secretEquals } from "../config/secret.ts";
import { bearerToken } from "../http/credentials.ts";
import { runChain } from "./chain.ts";
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
}

const ANONYMOUS: AdminPrincipal = Object.freeze({ id: "anonymous", scope: "full" });

/** `x-admin-token: T` or `Authorization: Bearer T` (spec: both accepted). */
export function presentedAdminToken(headers: Headers): string | undefined {
  const direct = headers.get("x-admin-token");
  if (direct) return direct;
  return bearerToken(headers);
}

/** Admin modules read the headers alone (runChain passes a third argument they ignore). */
type AdminModule = (snapshot: Snapshot, headers: Headers) => AdminPrincipal | undefined;

/** Compiled-in admin modules by name. */
export const ADMIN_MODULES: Readonly<Record<string, AdminModule>> = {
  "admin-tokens": (snapshot, headers) => {
    const presented = presentedAdminToken(headers);
    if (presented === undefined) return undefined;
    // Compare against every token, so the time taken does not tell which one (if any) matched.
    let admitted: AdminPrincipal | undefined;
    for (const t of snapshot.auth.adminTokens) {
      if (secretEquals(t.token, presented) && admitted === undefined) admitted = { id: "admin", scope: t.scope, credential: `admin-tokens:${t.name}` };
    }
    return admitted;
  },
};

export function authenticateAdmin(snapshot: Snapshot, headers: Headers): AdminPrincipal | undefined {
  return runChain(snapshot.auth.adminChain, ADMIN_MODULES, ANONYMOUS, snapshot, headers, undefined);
}
