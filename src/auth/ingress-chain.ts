// The ingress chain: each module in order admits the caller or abstains; when none admits, the
// request is refused. An empty chain is the open front door. Modules join as they are built
// (`tokens` and `keys` with governance); until then a non-empty chain admits nobody: fail closed.
import type { Snapshot } from "../config/snapshot.ts";

export interface IngressPrincipal {
  /** Key id, token name or identity; `anonymous` on an open front door. */
  readonly id: string;
  readonly module: string;
}

const ANONYMOUS: IngressPrincipal = Object.freeze({ id: "anonymous", module: "open" });

type IngressModule = (snapshot: Snapshot, request: Request) => IngressPrincipal | undefined;

/** Compiled-in ingress modules by name. */
export const INGRESS_MODULES: Readonly<Record<string, IngressModule>> = {};

export function authenticateIngress(snapshot: Snapshot, request: Request): IngressPrincipal | undefined {
  if (snapshot.auth.chain.length === 0) return ANONYMOUS;
  for (const name of snapshot.auth.chain) {
    const principal = INGRESS_MODULES[name]?.(snapshot, request);
    if (principal) return principal;
  }
  return undefined;
}
