// The ingress chain (rules in chain.ts). Modules join as they are built (`tokens` and `keys` with
// governance); until then a non-empty chain admits nobody: fail closed.
import type { Snapshot } from "../config/snapshot.ts";
import { runChain, type ChainModule } from "./chain.ts";

export interface IngressPrincipal {
  /** Key id, token name or identity; `anonymous` on an open front door. */
  readonly id: string;
  readonly module: string;
  /** The virtual key's group (governance: every limit is charged through it); absent or null = unlimited. */
  readonly group?: string | null;
  /** Pools the credential may reach; absent or null = all, [] = none (a violation is 403). */
  readonly allowedPools?: readonly string[] | null;
  /** The key's labels, echoed onto its metric series. */
  readonly labels?: Readonly<Record<string, string>>;
}

const ANONYMOUS: IngressPrincipal = Object.freeze({ id: "anonymous", module: "open" });

type IngressModule = ChainModule<IngressPrincipal, [Snapshot, Request]>;

/** Compiled-in ingress modules by name. */
export const INGRESS_MODULES: Readonly<Record<string, IngressModule>> = {};

export function authenticateIngress(snapshot: Snapshot, request: Request): IngressPrincipal | undefined {
  return runChain(snapshot.auth.chain, INGRESS_MODULES, ANONYMOUS, snapshot, request);
}
