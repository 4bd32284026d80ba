// The auth module names the config may name, and the ones this build really carries.
// A chain that names a known module this build does not carry fails closed (see docs/configuration.md).
import { ADMIN_MODULES } from "./admin-chain.ts";
import { INGRESS_MODULES } from "./ingress-chain.ts";

/** Ingress (data-plane) modules named by the spec. */
export const INGRESS_AUTH_MODULES = ["tokens", "keys", "oidc"] as const;
/** Admin-plane modules named by the spec. */
export const ADMIN_AUTH_MODULES = ["admin-tokens", "oidc"] as const;
/** Identity-provider modules built into the gateway (others arrive as `kind: auth` plugins). */
export const IDENTITY_MODULES = ["oidc", "forge"] as const;

/** Auth modules compiled into this binary (InfoView.build.auth_modules), read off the chains' registries. */
export const COMPILED_AUTH_MODULES: readonly string[] = [...new Set([...Object.keys(INGRESS_MODULES), ...Object.keys(ADMIN_MODULES), ...IDENTITY_MODULES])].sort();

/** `acme/pii-redactor@1.2.0` -> `pii-redactor`. */
export function pluginName(fetchEntry: string): string {
  const slash = fetchEntry.indexOf("/");
  const at = fetchEntry.lastIndexOf("@");
  return fetchEntry.slice(slash + 1, at === -1 ? undefined : at);
}
