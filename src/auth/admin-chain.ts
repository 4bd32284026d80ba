// The admin chain: each module in order either admits the caller with a scope or abstains; when none
// admits, the answer is 401. An empty chain is the open posture (anonymous, full authority).
import { secretEquals } from "../config/secret.ts";
import type { Snapshot } from "../config/snapshot.ts";

export type AdminScope = "read-only" | "full";
export interface AdminPrincipal {
  /** Audit principal: `admin` for an operator token, `anonymous` on an open plane. */
  readonly id: string;
  readonly scope: AdminScope;
}

const ANONYMOUS: AdminPrincipal = Object.freeze({ id: "anonymous", scope: "full" });

/** `x-admin-token: T` or `Authorization: Bearer T` (spec: both accepted). */
export function presentedAdminToken(headers: Headers): string | undefined {
  const direct = headers.get("x-admin-token");
  if (direct) return direct;
  const authorization = headers.get("authorization");
  const match = authorization ? /^Bearer\s+(.+)$/i.exec(authorization) : null;
  return match?.[1]?.trim();
}

type AdminModule = (snapshot: Snapshot, headers: Headers) => AdminPrincipal | undefined;

/** Compiled-in admin modules by name. */
export const ADMIN_MODULES: Readonly<Record<string, AdminModule>> = {
  "admin-tokens": (snapshot, headers) => {
    const presented = presentedAdminToken(headers);
    if (presented === undefined) return undefined;
    // Compare against every token, so the time taken does not tell which one (if any) matched.
    let admitted: AdminPrincipal | undefined;
    for (const t of snapshot.auth.adminTokens) {
      if (secretEquals(t.token, presented) && admitted === undefined) admitted = { id: "admin", scope: t.scope };
    }
    return admitted;
  },
};

export function authenticateAdmin(snapshot: Snapshot, headers: Headers): AdminPrincipal | undefined {
  if (snapshot.auth.adminChain.length === 0) return ANONYMOUS;
  for (const name of snapshot.auth.adminChain) {
    const principal = ADMIN_MODULES[name]?.(snapshot, headers);
    if (principal) return principal;
  }
  return undefined;
}
