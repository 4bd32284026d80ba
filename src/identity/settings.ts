// An identity provider's settings, one schema per built-in module (spec "Identity providers and role
// bindings"), and the provider as a snapshot holds it: every default filled in, the browser sign-in's
// secret still a Secret. The config check (config/references.ts) reports these schemas' errors with
// their paths; the resolver builds the instances once per config load, never on a request.
import { Type, type Static } from "@sinclair/typebox";
import type { Secret } from "../config/secret.ts";
import { Url } from "../config/schema.ts";

const Pem = Type.String({ minLength: 1, description: "PEM text of a CA certificate trusted besides the public roots" });

export const OidcSettingsCfg = Type.Object(
  {
    issuer: Url("the token's `iss` must equal it; discovery is read from <issuer>/.well-known/openid-configuration"),
    audience: Type.String({ minLength: 1, description: "the token's `aud` must equal it (or hold it); the browser sign-in's client id by default" }),
    role_claim: Type.Optional(Type.String({ minLength: 1, default: "groups", description: "claim read for the person's groups (`roles` for app roles; a string claim such as `hd` binds by its value)" })),
    jwks_url: Type.Optional(Url("the key set; else discovery's jwks_uri")),
    ca_cert_pem: Type.Optional(Pem),
  },
  { additionalProperties: false },
);

/** GitHub's public endpoints; an enterprise forge names its own. */
export const FORGE_DEFAULTS = { api_base: "https://api.github.com", authorize_base: "https://github.com", token_base: "https://github.com", scopes: ["read:org", "read:user"] } as const;

export const ForgeSettingsCfg = Type.Object(
  {
    client_id: Type.String({ minLength: 1, description: "the OAuth app's client id" }),
    scopes: Type.Optional(Type.Array(Type.String({ minLength: 1, pattern: "^[!#-\\[\\]-~]+$" }), { maxItems: 32, description: "scopes asked for (read:org and read:user always)" })),
    api_base: Type.Optional(Url("REST API base (enterprise: https://<host>/api/v3)")),
    authorize_base: Type.Optional(Url("web base of /login/oauth/authorize")),
    token_base: Type.Optional(Url("web base of /login/oauth/access_token")),
    fetch_orgs: Type.Optional(Type.Boolean({ default: true, description: "false: identity from /user alone, no groups" })),
    ca_cert_pem: Type.Optional(Pem),
  },
  { additionalProperties: false },
);

export type AdminCap = "none" | "read-only" | "full";

interface ProviderBase {
  readonly name: string;
  /** Present when the provider offers the hosted sign-in. */
  readonly browserLogin: { readonly clientId: string; readonly clientSecret: Secret } | undefined;
  readonly maxAdminScope: AdminCap;
  /** PEM text trusted besides the public roots for this provider's HTTPS. */
  readonly caCertPem: string | undefined;
}

export interface OidcProvider extends ProviderBase {
  readonly module: "oidc";
  readonly issuer: string;
  readonly audience: string;
  readonly roleClaim: string;
  readonly jwksUrl: string | undefined;
}

export interface ForgeProvider extends ProviderBase {
  readonly module: "forge";
  readonly clientId: string;
  /** De-duplicated, the defaults first. */
  readonly scopes: readonly string[];
  readonly apiBase: string;
  readonly authorizeBase: string;
  readonly tokenBase: string;
  readonly fetchOrgs: boolean;
}

export type IdentityProvider = OidcProvider | ForgeProvider;

const trimSlash = (url: string) => url.replace(/\/+$/, "");

/** The instance a checked config entry describes; `secret` is the resolved client_secret, if any. */
export function identityProvider(name: string, cfg: { module: string; settings?: Record<string, unknown>; browser_login?: { client_id?: string }; max_admin_scope?: AdminCap }, secret: Secret | undefined): IdentityProvider | undefined {
  const maxAdminScope = cfg.max_admin_scope ?? "read-only";
  const settings = cfg.settings ?? {};
  if (cfg.module === "oidc") {
    const s = settings as Static<typeof OidcSettingsCfg>;
    const browserLogin = cfg.browser_login && secret ? { clientId: cfg.browser_login.client_id ?? s.audience, clientSecret: secret } : undefined;
    return { name, module: "oidc", issuer: s.issuer, audience: s.audience, roleClaim: s.role_claim ?? "groups", jwksUrl: s.jwks_url, caCertPem: s.ca_cert_pem, browserLogin, maxAdminScope };
  }
  if (cfg.module === "forge") {
    const s = settings as Static<typeof ForgeSettingsCfg>;
    const browserLogin = cfg.browser_login && secret ? { clientId: cfg.browser_login.client_id ?? s.client_id, clientSecret: secret } : undefined;
    return {
      name,
      module: "forge",
      clientId: s.client_id,
      scopes: [...new Set([...FORGE_DEFAULTS.scopes, ...(s.scopes ?? [])])],
      apiBase: trimSlash(s.api_base ?? FORGE_DEFAULTS.api_base),
      authorizeBase: trimSlash(s.authorize_base ?? FORGE_DEFAULTS.authorize_base),
      tokenBase: trimSlash(s.token_base ?? FORGE_DEFAULTS.token_base),
      fetchOrgs: s.fetch_orgs ?? true,
      caCertPem: s.ca_cert_pem,
      browserLogin,
      maxAdminScope,
    };
  }
  return undefined;
}
