// Governance's services over one store: the key registry and service, the audit log, the ingress
// chain's decision cache and key checks. Built once per process by app.ts.
import { CredentialCache } from "../auth/credential-cache.ts";
import { IngressAuth } from "../auth/ingress-chain.ts";
import type { ConfigHolder } from "../config/snapshot.ts";
import type { Logger } from "../telemetry/logger.ts";
import type { AuditStore } from "../store/audit.ts";
import type { KeyStore } from "../store/keys.ts";
import { AuditLog } from "./audit.ts";
import { RegistryKeyAuthenticator } from "./key-auth.ts";
import { KeyRegistry } from "./key-registry.ts";
import { KeyService } from "./keys.ts";
import { IdentityService } from "../identity/service.ts";
import type { AuditSink, GroupResolver } from "./types.ts";

export interface GovernanceDeps {
  /** The store's audit and keys (store/set.ts). */
  readonly stores: { readonly audit: AuditStore; readonly keys: KeyStore };
  readonly holder: ConfigHolder;
  /** Epoch milliseconds. */
  readonly now: () => number;
  /** The mint rules' groups, given the audit log they record `group.create` in. */
  readonly groups?: (audit: AuditSink) => GroupResolver;
  readonly logger?: Logger;
}

export interface Governance {
  readonly audit: AuditLog;
  readonly keys: KeyService;
  readonly registry: KeyRegistry;
  readonly cache: CredentialCache;
  readonly ingressAuth: IngressAuth;
  /** The token exchange and the oidc chain modules (src/identity). */
  readonly identity: IdentityService;
  /** Checks the audit head and loads the stored keys into the registry; the data plane must not serve before it resolves. */
  load(): Promise<void>;
}

export function buildGovernance(deps: GovernanceDeps): Governance {
  const audit = new AuditLog(deps.stores.audit, deps.now, deps.logger);
  const registry = new KeyRegistry();
  const groupResolver = deps.groups?.(audit);
  const keys = new KeyService({
    store: deps.stores.keys,
    registry,
    audit,
    groups: groupResolver,
    signingKey: () => deps.holder.current.auth.signingKey,
    now: deps.now,
  });
  const cache = new CredentialCache();
  const identity = new IdentityService({ holder: deps.holder, keys, registry, groups: groupResolver, now: deps.now, ...(deps.logger && { logger: deps.logger }) });
  const ingressAuth = new IngressAuth({ cache, keys: new RegistryKeyAuthenticator(registry, deps.now), identity });
  const load = async () => {
    await audit.open();
    await keys.load();
  };
  return { audit, keys, registry, cache, ingressAuth, identity, load };
}
