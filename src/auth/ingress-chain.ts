// The ingress chain (rules in chain.ts): `tokens` (static client tokens from config) and `keys`
// (gateway-signed virtual keys, and the AWS pairs issued with them for inbound SigV4). Each module
// answers from memory: signature checks are cached per module, key state is read from the registry.
import { secretEquals } from "../config/secret.ts";
import type { Snapshot } from "../config/snapshot.ts";
import type { VerifiableRequest } from "../transport/sigv4.ts";
import { runChain, type ChainModule } from "./chain.ts";
import type { CredentialCache } from "./credential-cache.ts";
import type { IdentityService } from "../identity/service.ts";

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
  /** Known but not let in (an OIDC identity with no team): the caller's permission error (403), naming why. */
  readonly refusal?: string;
}

/** What a caller presented. */
export interface IngressCredential {
  /** From the calling protocol's own header (Bearer, x-api-key, x-goog-api-key or ?key=). */
  readonly token: string | undefined;
  /** A SigV4-signed request with the body it signed (Bedrock-style ingress). */
  readonly signed?: VerifiableRequest;
}

/** The `keys` module's checks (governance/key-auth.ts); absent when the gateway runs without a key store. */
export interface KeyAuthenticator {
  token(snapshot: Snapshot, token: string, cache: CredentialCache): IngressPrincipal | undefined;
  sigv4(snapshot: Snapshot, request: VerifiableRequest): IngressPrincipal | undefined;
}

export interface IngressServices {
  readonly cache: CredentialCache;
  readonly keys?: KeyAuthenticator;
  /** The token exchange and the `oidc` module (src/identity); absent without a key store. */
  readonly identity?: IdentityService;
}

const ANONYMOUS: IngressPrincipal = Object.freeze({ id: "anonymous", module: "open" });

type IngressModule = ChainModule<IngressPrincipal, Snapshot, IngressCredential, IngressServices>;

function staticToken(snapshot: Snapshot, credential: IngressCredential, services: IngressServices): IngressPrincipal | undefined {
  const presented = credential.token;
  if (presented === undefined) return undefined;
  const cached = services.cache.get<IngressPrincipal>("tokens", presented, snapshot);
  if (cached) return cached;
  // Compare against every token, so the time taken does not tell which one (if any) matched.
  let admitted: IngressPrincipal | undefined;
  for (const t of snapshot.auth.tokens) {
    if (secretEquals(t.token, presented) && admitted === undefined) admitted = Object.freeze({ id: t.name, module: "tokens" });
  }
  // Only admissions are kept, so a flood of wrong tokens cannot push real decisions out.
  if (admitted) services.cache.set("tokens", presented, admitted, snapshot);
  return admitted;
}

/** Compiled-in ingress modules by name. */
export const INGRESS_MODULES: Readonly<Record<string, IngressModule>> = {
  tokens: staticToken,
  keys: (snapshot, credential, services) => {
    if (!services.keys) return undefined;
    if (credential.signed) return services.keys.sigv4(snapshot, credential.signed);
    return credential.token === undefined ? undefined : services.keys.token(snapshot, credential.token, services.cache);
  },
  oidc: (snapshot, credential, services) => services.identity?.modules.ingress(snapshot, "oidc", credential.token, services.cache),
};

/** An identity-provider instance named in the chain: its own module, made once per name. */
const instanceModules = new Map<string, IngressModule>();
function instanceModule(name: string): IngressModule {
  let module = instanceModules.get(name);
  if (!module) instanceModules.set(name, (module = (snapshot, credential, services) => services.identity?.modules.ingress(snapshot, name, credential.token, services.cache)));
  return module;
}

export class IngressAuth {
  constructor(readonly services: IngressServices) {}

  /** Synchronous unless a module must verify a credential it has not seen (an OIDC token's first use). */
  authenticate(snapshot: Snapshot, credential: IngressCredential): IngressPrincipal | undefined | Promise<IngressPrincipal | undefined> {
    return runChain(snapshot.auth.chain, INGRESS_MODULES, ANONYMOUS, snapshot, credential, this.services, instanceModule);
  }
}
