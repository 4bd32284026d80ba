// The whole config tree as one TypeBox schema: validation, the TS types, the generated reference in
// docs/configuration.md and (later) the admin OpenAPI description all come from here.
// Custom annotations: `x-restart: true` marks a member that takes effect only on restart.
import { Type, type Static, type TSchema, type ObjectOptions, type TProperties, type TLiteral } from "@sinclair/typebox";

/** An object that rejects unknown members (the config never ignores a typo). */
export const Strict = <T extends TProperties>(properties: T, options: ObjectOptions = {}) =>
  Type.Object(properties, { additionalProperties: false, ...options });

/** A closed set of words; its description doubles as the error message. */
export const Enum = <const T extends readonly string[]>(values: T, options: { default?: T[number]; description?: string } = {}) =>
  Type.Union(values.map((v) => Type.Literal(v)) as TLiteral<T[number]>[], {
    description: `one of ${values.join(" | ")}`,
    ...options,
  });

/** Names of providers, models, pools, groups, hooks: safe in URL paths and metric labels. */
export const NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$";
const NameMap = <T extends TSchema>(value: T, description: string) =>
  Type.Record(Type.String({ pattern: NAME_PATTERN }), value, {
    description,
    default: {},
    additionalProperties: false,
    "x-key": "a name of letters, digits and . _ @ - (at most 128, starting with a letter or digit)",
  });

export const SecretRef = Type.Union(
  [
    Strict({ env: Type.String({ minLength: 1, description: "environment variable holding the secret" }) }),
    Strict({ file: Type.String({ minLength: 1, description: "file holding the secret (trailing newline trimmed)" }) }),
  ],
  { description: "a secret reference {env: NAME} or {file: PATH}" },
);
export type SecretRef = Static<typeof SecretRef>;

/** `<n>d`, `<n>h`, `<n>m`, `<n>s`. */
export const Duration = Type.String({ pattern: "^[0-9]+[dhms]$", "x-expected": "a duration such as 90d, 12h, 30m, 45s" });
const Url = (description: string) => Type.String({ pattern: "^https?://[^\\s]+$", description, "x-expected": "an http(s) URL" });
/** `host:port`; IPv6 hosts in brackets. */
export const ListenAddress = Type.String({
  pattern: "^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]*):[0-9]{1,5}$",
  "x-expected": "an address host:port (IPv6 as [::1]:port)",
  "x-restart": true,
});

const TlsBlock = Strict(
  {
    cert_file: Type.String({ minLength: 1, description: "PEM certificate chain, leaf first" }),
    key_file: Type.String({ minLength: 1, description: "PEM private key (PKCS#8, PKCS#1 or SEC1)" }),
    client_ca_file: Type.Optional(Type.String({ minLength: 1, description: "PEM CA; when set, clients must present a certificate chaining to it (mTLS)" })),
  },
  { "x-restart": true },
);
const AdminTlsBlock = Strict(
  {
    cert_file: Type.String({ minLength: 1 }),
    key_file: Type.String({ minLength: 1 }),
    client_ca_file: Type.Optional(Type.String({ minLength: 1, description: "required with admin_require_mtls" })),
  },
  { "x-restart": true },
);

export const PROTOCOLS = ["openai", "anthropic", "gemini", "bedrock", "cohere", "responses", "mock"] as const;
export type ProtocolName = (typeof PROTOCOLS)[number];

const HealthCfg = Strict({
  mode: Type.Optional(Enum(["none", "dead", "active"], { description: "none | dead (probe tripped lanes) | active (probe all lanes)" })),
  interval_secs: Type.Optional(Type.Number({ minimum: 1, description: "probe interval, floored at 1 s" })),
  timeout_secs: Type.Optional(Type.Number({ minimum: 1, description: "probe timeout, floored at 1 s" })),
});

const ProviderCfg = Strict({
  protocol: Enum(PROTOCOLS),
  base_url: Type.Optional(Url("upstream base URL (vendor convention); defaults to the vendor's public endpoint")),
  api_key: Type.Optional(Type.Union([SecretRef, Type.String()], { description: "a secret reference or a string (typically ${VAR})" })),
  headers: Type.Optional(Type.Record(Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" }), Type.String(), { description: "extra static headers sent upstream" })),
  query: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String(), { description: "extra query parameters sent upstream" })),
  health: Type.Optional(HealthCfg),
  region: Type.Optional(Type.String({ pattern: "^[a-z0-9-]+$", description: "AWS region (bedrock)" })),
  aws_access_key_id: Type.Optional(SecretRef),
  aws_secret_access_key: Type.Optional(SecretRef),
  aws_session_token: Type.Optional(SecretRef),
  latency_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 600000, description: "mock only: delay before answering" })),
});
export type ProviderCfg = Static<typeof ProviderCfg>;

const ModelCfg = Strict({
  provider: Type.String({ description: "a key of providers" }),
  model: Type.Optional(Type.String({ minLength: 1, description: "the upstream's model name; defaults to this model's key" })),
  context_window: Type.Optional(Type.Integer({ minimum: 1, description: "tokens; used by context-length failover" })),
  max_concurrent: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: "per-lane cap across all pools; null = none", default: null })),
  max_requests: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: "per-lane lifetime budget; null = none", default: null })),
});
export type ModelCfg = Static<typeof ModelCfg>;

export const BreakerCfg = Strict({
  error_rate: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 0.5 })),
  window_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, default: 60 })),
  min_requests: Type.Optional(Type.Integer({ minimum: 1, default: 5 })),
  consecutive_n: Type.Optional(Type.Integer({ minimum: 1, default: 3 })),
  base_cooldown_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, default: 15 })),
  max_cooldown_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, default: 120 })),
});
export const FailoverCfg = Strict({
  max_hops: Type.Optional(Type.Integer({ minimum: 1, default: 3 })),
  timeout_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, default: 120 })),
});
export const OnExhausted = Type.String({
  pattern: "^(reject|status_503|least_bad|fallback_pool:[A-Za-z0-9][A-Za-z0-9._@-]{0,127})$",
  "x-expected": "reject | status_503 | least_bad | fallback_pool:<pool>",
});

const PoolMember = Strict({
  model: Type.String({ description: "a key of models" }),
  weight: Type.Optional(Type.Number({ exclusiveMinimum: 0, default: 1 })),
});
const PoolCfg = Strict({
  members: Type.Array(PoolMember, { minItems: 1 }),
  breaker: Type.Optional(BreakerCfg),
  failover: Type.Optional(FailoverCfg),
  on_exhausted: Type.Optional(OnExhausted),
  hooks: Type.Optional(Type.Array(Type.String(), { description: "hooks fired for this pool" })),
});
export type PoolCfg = Static<typeof PoolCfg>;

// `pools.hooks` is reserved for the global hooks; every other key is a pool.
const PoolsCfg = Type.Object(
  { hooks: Type.Optional(Type.Array(Type.String(), { description: "RESERVED: hooks fired for every pool (global hooks)" })) },
  { additionalProperties: PoolCfg, patternProperties: {}, description: "pool name -> pool; the key `hooks` is reserved", default: {} },
);

const RateCardEntry = Strict({
  input: Type.Number({ minimum: 0 }),
  output: Type.Number({ minimum: 0 }),
  cache_read: Type.Optional(Type.Number({ minimum: 0, default: 0 })),
  cache_creation: Type.Optional(Type.Number({ minimum: 0, default: 0 })),
});

export const ADMIN_SCOPES = ["read-only", "full"] as const;
const AuthCfg = Strict({
  chain: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { default: [], description: "ordered ingress modules: tokens | keys | oidc | <identity provider> | <plugin>; [] = open" })),
  signing_key: Type.Optional(SecretRef),
  key_ttl: Type.Optional(Type.String({ ...Duration, default: "90d" })),
  tokens: Type.Optional(Type.Array(Strict({ name: Type.String({ minLength: 1 }), token: SecretRef }), { default: [] })),
  admin_auth: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { default: [], description: "admin chain: admin-tokens | oidc | <identity provider>; [] = open admin plane" })),
  admin_tokens: Type.Optional(
    Type.Array(Strict({ name: Type.Optional(Type.String({ minLength: 1 })), token: SecretRef, scope: Type.Optional(Enum(ADMIN_SCOPES, { default: "full" })) }), { default: [] }),
  ),
}, { default: {} });

const WINDOWS = ["minute", "hour", "day", "month", "total"] as const;
const NullableUint = Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]));
const WindowLimit = Strict({
  window: Enum(WINDOWS),
  requests: NullableUint,
  tokens: NullableUint,
  budget_cents: NullableUint,
  pool: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});
const ConcurrentLimit = Strict({ concurrent: Type.Integer({ minimum: 1 }), pool: Type.Optional(Type.Union([Type.String(), Type.Null()])) });
export const LimitCfg = Type.Union([WindowLimit, ConcurrentLimit], {
  description: "a windowed limit {window, requests?, tokens?, budget_cents?, pool?} or {concurrent, pool?}",
});
const GroupCfg = Strict({
  parent: Type.Optional(Type.String()),
  enabled: Type.Optional(Type.Boolean({ default: true })),
  limits: Type.Optional(Type.Array(LimitCfg, { default: [] })),
  child_default: Type.Optional(Type.Array(LimitCfg)),
});

const IdentityProviderCfg = Strict({
  module: Type.String({ minLength: 1, description: "oidc | forge | <auth plugin>" }),
  settings: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { default: {} })),
  browser_login: Type.Optional(Strict({ client_secret: SecretRef, client_id: Type.Optional(Type.String({ minLength: 1 })) })),
  max_admin_scope: Type.Optional(Enum(["none", "read-only", "full"], { default: "read-only" })),
});
const RoleBinding = Type.Union([Strict({ group: Type.String({ minLength: 1 }) }), Strict({ admin_scope: Enum(ADMIN_SCOPES) })], {
  description: "{group: <group>} or {admin_scope: read-only | full}",
});

export const HOOK_TERMINALS = ["weighted", "reject", "first", "nothing"] as const;
export const HookCfg = Strict({
  kind: Enum(["gate", "tap"]),
  transport: Type.Optional(Strict({ kind: Enum(["plugin", "none"]), target: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])) })),
  prompt: Type.Optional(Enum(["no", "ro", "rw"], { default: "no" })),
  user: Type.Optional(Enum(["no", "ro"], { default: "no" })),
  priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535, default: 0 })),
  at: Type.Optional(Type.Union([Enum(["request", "candidate", "routing", "response"]), Type.Null()], { description: "tap stage; null for a gate" })),
  on_error: Type.Optional(Type.String({ minLength: 1, default: "weighted", description: "weighted | reject | first | nothing | <fallback hook>" })),
  timeout_ms: Type.Optional(Type.Integer({ minimum: 1, default: 200 })),
  settings: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { default: {} })),
  global: Type.Optional(Type.Boolean({ default: false })),
});
export type HookCfg = Static<typeof HookCfg>;

const PluginsCfg = Strict({
  dir: Type.Optional(Type.String({ minLength: 1, default: "./plugins" })),
  trusted_keys: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String({ pattern: "^[0-9a-fA-F]{64}$" }), { default: {}, description: "publisher -> ed25519 public key (hex)" })),
  allowlist: Type.Optional(Type.Array(Type.String({ pattern: "^[A-Za-z0-9*._-]+/[A-Za-z0-9*._-]+$" }), { default: [] })),
  fetch: Type.Optional(Type.Array(Type.String({ pattern: "^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+@[0-9A-Za-z.+-]+$" }), { default: [] })),
  registry_url: Type.Optional(Url("base URL plugins are fetched from")),
}, { default: {} });

export const EXPORT_STREAMS = ["metrics", "traces", "logs"] as const;
const ExportCfg = Strict({
  module: Type.String({ minLength: 1, description: "prometheus | otlp | file | webhook | <exporter plugin>" }),
  settings: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { default: {} })),
  streams: Type.Optional(Type.Array(Enum(EXPORT_STREAMS))),
  fields: Type.Optional(Type.Unknown({ description: "parsed, but rejected by every built-in module" })),
});

const LimitsCfg = Strict({
  upstream_request_timeout_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, default: 300, "x-restart": true })),
  pool_max_idle_per_host: Type.Optional(Type.Integer({ minimum: 0, default: 64, "x-restart": true })),
  pool_idle_timeout_secs: Type.Optional(Type.Number({ minimum: 0, default: 90, "x-restart": true })),
  max_inbound_concurrent: Type.Optional(Type.Integer({ minimum: 1, default: 4096, "x-restart": true })),
  shutdown_drain_secs: Type.Optional(Type.Number({ minimum: 0, default: 30, description: "how long SIGTERM waits for in-flight requests before closing them" })),
}, { default: {} });

const SecurityCfg = Strict({
  max_body_bytes: Type.Optional(Type.Integer({ minimum: 1024, default: 33554432, description: "data-plane request body limit (bytes)" })),
  admin_max_body_bytes: Type.Optional(Type.Integer({ minimum: 1024, default: 8388608, description: "admin-plane request body limit (bytes)" })),
}, { default: {} });

const AdvancedCfg = Strict({
  response_headers: Type.Optional(Strict({
    server_timing: Type.Optional(Type.Boolean({ default: true })),
    route_policy: Type.Optional(Type.Boolean({ default: true })),
  }, { default: {}, "x-restart": true })),
  config_versions_retained: Type.Optional(Type.Integer({ minimum: 1, default: 100 })),
}, { default: {} });

export const GatewayConfig = Strict({
  listen: Type.Optional(Type.String({ ...ListenAddress, default: "127.0.0.1:8080", description: "data-plane listener" })),
  admin_listen: Type.Optional(Type.String({ ...ListenAddress, default: "127.0.0.1:8081", description: "admin-plane listener" })),
  public_url: Type.Optional(Url("base of /auth/token and of what clients point at")),
  tls: Type.Optional(TlsBlock),
  admin_tls: Type.Optional(AdminTlsBlock),
  admin_require_mtls: Type.Optional(Type.Boolean({ default: false, "x-restart": true })),
  store: Type.Optional(Strict({
    module: Enum(["sqlite"], { default: "sqlite" }),
    settings: Type.Optional(Strict({ path: Type.Optional(Type.String({ minLength: 1, default: "./gateway.db", description: "database file; relative to the working directory; :memory: for a throwaway store" })) }, { default: {} })),
  }, { default: { module: "sqlite" }, "x-restart": true })),
  config: Type.Optional(Strict({
    locked: Type.Optional(Type.Boolean({ default: false, description: "true refuses every admin config mutation" })),
    overlay: Type.Optional(Type.String({ minLength: 1, default: "./gateway.overlay.yaml", description: "where API-applied changes persist" })),
  }, { default: {} })),
  upstream_credentials: Type.Optional(Enum(["own", "passthrough"], { default: "own" })),
  providers: Type.Optional(NameMap(ProviderCfg, "provider name -> upstream endpoint")),
  models: Type.Optional(NameMap(ModelCfg, "model alias -> lane (a provider plus the upstream's model name)")),
  pools: Type.Optional(PoolsCfg),
  rate_card: Type.Optional(Type.Record(Type.String({ minLength: 1 }), RateCardEntry, { default: {}, description: "abstract cost units per 1M tokens, by model name" })),
  per_request_fee: Type.Optional(Type.Number({ minimum: 0, default: 0 })),
  auth: Type.Optional(AuthCfg),
  groups: Type.Optional(NameMap(GroupCfg, "group name -> limits")),
  "identity-providers": Type.Optional(NameMap(IdentityProviderCfg, "instance name -> identity provider")),
  role_bindings: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.Record(Type.String({ minLength: 1 }), RoleBinding), { default: {} })),
  default_team: Type.Optional(Type.String({ minLength: 1, description: "group for sign-ins with no matching binding" })),
  hooks: Type.Optional(NameMap(HookCfg, "hook name -> hook")),
  plugins: Type.Optional(PluginsCfg),
  export: Type.Optional(NameMap(ExportCfg, "exporter instance name -> exporter")),
  limits: Type.Optional(LimitsCfg),
  routing: Type.Optional(Strict({
    breaker: Type.Optional(BreakerCfg),
    failover: Type.Optional(FailoverCfg),
    on_exhausted: Type.Optional(Type.String({ ...OnExhausted, default: "reject" })),
  }, { default: {}, description: "pool defaults applied where a pool is silent" })),
  health: Type.Optional(HealthCfg),
  security: Type.Optional(SecurityCfg),
  advanced: Type.Optional(AdvancedCfg),
});
export type GatewayConfig = Static<typeof GatewayConfig>;
