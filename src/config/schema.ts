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
// Upper bounds on numbers, so a value no one means (1e300 in a PUT /config/settings) is refused with its
// path instead of overflowing a timer (setTimeout fires at once past 2^31 ms) or a counter.
/** Seconds: a day is longer than any deadline, cooldown or drain an operator sets. */
const SECS_MAX = 86400;
/** Counts of requests, connections, slots and weights. */
const COUNT_MAX = 1_000_000_000;
/** Bytes: Bun's own cap on a body (http/serve.ts HARD_CAP_BYTES). */
const BYTES_MAX = 4 * 1024 * 1024 * 1024;
/** A signed 32-bit integer, what vendors take for token counts. */
const INT32_MAX = 2 ** 31 - 1;
/** Cost units per 1M tokens or per request. */
const PRICE_MAX = 1_000_000_000;

export const NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$";
/**
 * A group's name over the admin API: a name as above, or a token exchange's per-person leaf
 * `<identity>@<team>` (design/identity.md), the identity `user:<OIDC sub>` or `forge:<login>`; an OIDC sub
 * is up to 255 printable ASCII characters. Admin paths take it percent-encoded. Every part is bounded, so
 * matching stays linear enough on hostile input.
 */
export const GROUP_NAME_PATTERN = "^(?:[A-Za-z0-9][A-Za-z0-9._@-]{0,127}|(?:user|forge):[!-~]{1,255}@[A-Za-z0-9][A-Za-z0-9._@-]{0,127})$";
const NameMap = <T extends TSchema>(value: T, description: string) =>
  Type.Record(Type.String({ pattern: NAME_PATTERN }), value, {
    description,
    default: {},
    additionalProperties: false,
    "x-key": "a name of letters, digits and . _ @ - (at most 128, starting with a letter or digit)",
  });

export const SecretRef = Type.Union(
  [
    // A name only: a secret pasted here by mistake is refused without being repeated (x-secret).
    Strict({ env: Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]{0,255}$", description: "environment variable holding the secret", "x-secret": true, "x-expected": "an environment variable name (letters, digits, _; not starting with a digit)" }) }),
    Strict({ file: Type.String({ minLength: 1, description: "file holding the secret (trailing newline trimmed)" }) }),
  ],
  // x-secret: an error about this member never quotes its value (schema-errors.ts).
  { description: "a secret reference {env: NAME} or {file: PATH}", "x-secret": true },
);
export type SecretRef = Static<typeof SecretRef>;

/** `<n>d`, `<n>h`, `<n>m`, `<n>s`. */
export const Duration = Type.String({ pattern: "^[0-9]+[dhms]$", "x-expected": "a duration such as 90d, 12h, 30m, 45s" });
export const Url = (description: string) => Type.String({ pattern: "^https?://[^\\s]+$", description, "x-expected": "an http(s) URL" });
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
  { "x-restart": true, description: "TLS for the data-plane listener; absent = plain HTTP" },
);
const AdminTlsBlock = Strict(
  {
    cert_file: Type.String({ minLength: 1, description: "PEM certificate chain, leaf first" }),
    key_file: Type.String({ minLength: 1, description: "PEM private key (PKCS#8, PKCS#1 or SEC1)" }),
    client_ca_file: Type.Optional(Type.String({ minLength: 1, description: "required with admin_require_mtls" })),
  },
  { "x-restart": true, description: "TLS for the admin-plane listener; absent = plain HTTP" },
);

export const PROTOCOLS = ["openai", "anthropic", "gemini", "bedrock", "cohere", "responses", "mock"] as const;
export type ProtocolName = (typeof PROTOCOLS)[number];

const HealthCfg = Strict({
  mode: Type.Optional(Enum(["none", "dead", "active"], { description: "none | dead (probe tripped lanes) | active (probe all lanes)" })),
  interval_secs: Type.Optional(Type.Number({ minimum: 1, maximum: SECS_MAX, description: "probe interval, floored at 1 s" })),
  timeout_secs: Type.Optional(Type.Number({ minimum: 1, maximum: SECS_MAX, description: "probe timeout, floored at 1 s" })),
});

const ProviderCfg = Strict({
  protocol: Enum(PROTOCOLS),
  base_url: Type.Optional(Url("upstream base URL (vendor convention); defaults to the vendor's public endpoint")),
  api_key: Type.Optional(Type.Union([SecretRef, Type.String()], { description: "a secret reference or a string (typically ${VAR})", "x-secret": true })),
  // x-secret on the maps and token entries too: a value written where the map or entry belongs (a
  // header line, a bare token in the list) is the secret itself, and must not be quoted back either.
  headers: Type.Optional(Type.Record(Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" }), Type.String({ "x-secret": true }), { description: "extra static headers sent upstream", "x-secret": true, additionalProperties: false, "x-key": "an HTTP header name (letters, digits and ! # $ % & ' * + . ^ _ ` | ~ -)" })),
  query: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String({ "x-secret": true }), { description: "extra query parameters sent upstream", "x-secret": true })),
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
  context_window: Type.Optional(Type.Integer({ minimum: 1, maximum: INT32_MAX, description: "tokens; used by context-length failover" })),
  max_concurrent: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: COUNT_MAX }), Type.Null()], { description: "per-lane cap across all pools; null = none", default: null })),
  max_requests: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()], { description: "per-lane lifetime budget; null = none", default: null })),
});
export type ModelCfg = Static<typeof ModelCfg>;

export const BreakerCfg = Strict({
  error_rate: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 0.5, description: "trip when this share of the outcomes in window_secs failed" })),
  window_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: SECS_MAX, default: 60, description: "window of the error_rate trip" })),
  min_requests: Type.Optional(Type.Integer({ minimum: 1, maximum: COUNT_MAX, default: 5, description: "outcomes in the window before error_rate can trip" })),
  consecutive_n: Type.Optional(Type.Integer({ minimum: 1, maximum: COUNT_MAX, default: 3, description: "consecutive failures that trip the breaker" })),
  base_cooldown_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: SECS_MAX, default: 15, description: "first cooldown; it doubles on each further trip" })),
  max_cooldown_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: SECS_MAX, default: 120, description: "ceiling of the doubling cooldown (an upstream Retry-After may exceed it)" })),
});
export const FailoverCfg = Strict({
  max_hops: Type.Optional(Type.Integer({ minimum: 1, maximum: 64, default: 3, description: "most lanes one request tries" })),
  timeout_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: SECS_MAX, default: 120, description: "deadline for one request across all its hops" })),
});
export const OnExhausted = Type.String({
  pattern: "^(reject|status_503|least_bad|fallback_pool:[A-Za-z0-9][A-Za-z0-9._@-]{0,127})$",
  "x-expected": "reject | status_503 | least_bad | fallback_pool:<pool>",
  description: "when no member can serve: reject or status_503 (refuse), least_bad (the member whose cooldown ends soonest), fallback_pool:<pool> (try that pool)",
});

const PoolMember = Strict({
  model: Type.String({ description: "a key of models" }),
  weight: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: COUNT_MAX, default: 1, description: "relative share of the pool's traffic" })),
});
const PoolCfg = Strict({
  members: Type.Array(PoolMember, { minItems: 1, description: "the lanes the pool routes across" }),
  breaker: Type.Optional(BreakerCfg),
  failover: Type.Optional(FailoverCfg),
  on_exhausted: Type.Optional(OnExhausted),
  hooks: Type.Optional(Type.Array(Type.String(), { description: "hooks fired for this pool" })),
});
export type PoolCfg = Static<typeof PoolCfg>;

// `pools.hooks` is reserved for the global hooks; every other key is a pool.
const PoolsCfg = Type.Object(
  { hooks: Type.Optional(Type.Array(Type.String(), { description: "RESERVED: hooks fired for every pool (global hooks)" })) },
  { additionalProperties: PoolCfg, patternProperties: {}, description: "pool name -> pool; the key `hooks` is reserved. A name with `*` (e.g. `claude-*`) also serves every requested model name it matches that no pool or alias has exactly (first such pool in file order wins)", default: {} },
);

const RateCardEntry = Strict({
  input: Type.Number({ minimum: 0, maximum: PRICE_MAX, description: "per 1M uncached input tokens" }),
  output: Type.Number({ minimum: 0, maximum: PRICE_MAX, description: "per 1M output tokens" }),
  cache_read: Type.Optional(Type.Number({ minimum: 0, maximum: PRICE_MAX, default: 0, description: "per 1M cache-read input tokens" })),
  cache_creation: Type.Optional(Type.Number({ minimum: 0, maximum: PRICE_MAX, default: 0, description: "per 1M cache-creation input tokens" })),
});

export const ADMIN_SCOPES = ["read-only", "full"] as const;
const AuthCfg = Strict({
  chain: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { default: [], description: "ordered ingress modules: tokens | keys | oidc | <identity provider> | <plugin>; [] = open" })),
  signing_key: Type.Optional(SecretRef),
  key_ttl: Type.Optional(Type.String({ ...Duration, default: "90d", description: "validity of the keys token exchange issues" })),
  tokens: Type.Optional(Type.Array(Strict({ name: Type.String({ minLength: 1, description: "label of the token" }), token: SecretRef }, { "x-secret": true }), { default: [], description: "static client tokens (the tokens module)" })),
  admin_auth: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { default: [], description: "admin chain: admin-tokens | oidc | <identity provider>; [] = open admin plane" })),
  admin_tokens: Type.Optional(
    Type.Array(Strict({ name: Type.Optional(Type.String({ minLength: 1, description: "label of the token" })), token: SecretRef, scope: Type.Optional(Enum(ADMIN_SCOPES, { default: "full" })) }, { "x-secret": true }), { default: [], description: "admin-plane bearer tokens (the admin-tokens module)" }),
  ),
}, { default: {} });

const WINDOWS = ["minute", "hour", "day", "month", "total"] as const;
const NullableUint = (description: string) => Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description }));
const LimitPool = Type.Optional(Type.Union([Type.String(), Type.Null()], { description: "limit only requests routed to this pool; absent or null = every pool" }));
const WindowLimit = Strict({
  window: Enum(WINDOWS),
  requests: NullableUint("requests admitted per window (failures are not refunded); over it: 429 + Retry-After"),
  tokens: NullableUint("tokens of all tiers per window, charged when the answer's usage is known; over it: 429 + Retry-After"),
  budget_cents: NullableUint("spend per window, in rate_card cost units (one unit = one cent); over it: insufficient_quota"),
  pool: LimitPool,
});
const ConcurrentLimit = Strict({ concurrent: Type.Integer({ minimum: 1, description: "most requests in flight at once (streams hold a slot until they end)" }), pool: LimitPool });
export const LimitCfg = Type.Union([WindowLimit, ConcurrentLimit], {
  description: "a windowed limit {window, requests?, tokens?, budget_cents?, pool?} or {concurrent, pool?}",
});
const GroupCfg = Strict({
  parent: Type.Optional(Type.String({ description: "parent group; limits are ANDed up the parent chain" })),
  enabled: Type.Optional(Type.Boolean({ default: true, description: "false freezes the group: every request through it is rejected" })),
  limits: Type.Optional(Type.Array(LimitCfg, { default: [], description: "enforced together (AND)" })),
  child_default: Type.Optional(Type.Array(LimitCfg, { description: "limit template for children auto-provisioned under this group" })),
});

const IdentityProviderCfg = Strict({
  module: Type.String({ minLength: 1, description: "oidc | forge (auth plugins are not loaded by this build)" }),
  settings: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { default: {}, description: "module settings, checked by the module's schema (oidc: issuer, audience, role_claim, jwks_url, ca_cert_pem; forge: client_id, scopes, api_base, authorize_base, token_base, fetch_orgs, ca_cert_pem; docs/identity.md)" })),
  browser_login: Type.Optional(Strict({ client_secret: SecretRef, client_id: Type.Optional(Type.String({ minLength: 1 })) }, { "x-secret": true })),
  max_admin_scope: Type.Optional(Enum(["none", "read-only", "full"], { default: "read-only" })),
});
const RoleBinding = Type.Union([Strict({ group: Type.String({ minLength: 1 }) }), Strict({ admin_scope: Enum(ADMIN_SCOPES) })], {
  description: "{group: <group>} or {admin_scope: read-only | full}",
});

export const HOOK_TERMINALS = ["weighted", "reject", "first", "nothing"] as const;
export const HookCfg = Strict({
  kind: Enum(["gate", "tap"]),
  transport: Type.Optional(Strict({ kind: Enum(["plugin", "none"]), target: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()])) })),
  builtin: Type.Optional(Type.String({ minLength: 1, description: "a compiled-in hook (http-gate | regex-redact) instead of a plugin transport" })),
  prompt: Type.Optional(Enum(["no", "ro", "rw"], { default: "no" })),
  user: Type.Optional(Enum(["no", "ro"], { default: "no" })),
  priority: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535, default: 0, description: "transform-chain order and reject tie-break" })),
  at: Type.Optional(Type.Union([Enum(["request", "candidate", "routing", "response"]), Type.Null()], { description: "tap stage; null for a gate" })),
  on_error: Type.Optional(Type.String({ minLength: 1, default: "weighted", description: "weighted | reject | first | nothing | <fallback hook>" })),
  timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 60000, default: 200, description: "gate decision deadline (milliseconds)" })),
  settings: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { default: {}, description: "settings bag handed to the hook" })),
  global: Type.Optional(Type.Boolean({ default: false, description: "fire on every request, as if listed in pools.hooks" })),
});
export type HookCfg = Static<typeof HookCfg>;

const PluginsCfg = Strict({
  dir: Type.Optional(Type.String({ minLength: 1, default: "./plugins", description: "directory of installed plugins" })),
  trusted_keys: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String({ pattern: "^[0-9a-fA-F]{64}$" }), { default: {}, description: "publisher -> ed25519 public key (hex)" })),
  allowlist: Type.Optional(Type.Array(Type.String({ pattern: "^[A-Za-z0-9*._-]+/[A-Za-z0-9*._-]+$" }), { default: [], description: "<publisher>/<plugin> entries allowed to load; * is a wildcard" })),
  fetch: Type.Optional(Type.Array(Type.String({ pattern: "^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*@[0-9A-Za-z.+-]+$" }), { default: [], description: "plugins fetched and installed at boot (only then), as <owner>/<plugin>@<version>; a failure stops the boot" })),
  registry_url: Type.Optional(Url("base URL plugins are fetched from: <registry_url>/<owner>/<plugin>/<version>.tar.gz")),
}, { default: {}, description: "signed plugins: where they are installed and whom to trust (docs/operations.md, Plugins and the trust posture)" });

export const EXPORT_STREAMS = ["metrics", "traces", "logs"] as const;
const ExportCfg = Strict({
  module: Type.String({ minLength: 1, description: "prometheus | otlp | file | webhook | <exporter plugin>" }),
  settings: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { default: {}, description: "module settings (required: file path, webhook url, otlp endpoint)" })),
  streams: Type.Optional(Type.Array(Enum(EXPORT_STREAMS), { description: "subscribed streams; a built-in module carries only its own" })),
  fields: Type.Optional(Type.Unknown({ description: "parsed, but rejected by every built-in module" })),
});

const LimitsCfg = Strict({
  upstream_request_timeout_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: SECS_MAX, default: 300, "x-restart": true, description: "longest an upstream may stay silent: before its answer starts (504) and between its bytes (checked every 250 ms)" })),
  pool_max_idle_per_host: Type.Optional(Type.Integer({ minimum: 0, maximum: COUNT_MAX, default: 64, "x-restart": true, description: "idle keep-alive connections kept per upstream host" })),
  pool_idle_timeout_secs: Type.Optional(Type.Number({ minimum: 0, maximum: SECS_MAX, default: 90, "x-restart": true, description: "how long an idle upstream connection is kept" })),
  max_inbound_concurrent: Type.Optional(Type.Integer({ minimum: 1, maximum: COUNT_MAX, default: 4096, "x-restart": true, description: "global cap on concurrent data-plane requests" })),
  body_read_timeout_secs: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 3600, default: 30, description: "longest a request's body (a model request's or an admin one's) may take to arrive once its headers have; past it 408 and the connection is closed, freeing a model request's max_inbound_concurrent slot" })),
  shutdown_drain_secs: Type.Optional(Type.Number({ minimum: 0, maximum: SECS_MAX, default: 30, description: "how long SIGTERM waits for in-flight requests before closing them" })),
  max_upstream_response_bytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: BYTES_MAX, default: 33554432, description: "largest upstream answer read whole (non-stream answers and error bodies; counted after decompression); past it the read stops and the caller gets a 502, the lane a transient fault (streams are not read whole and are not capped)" })),
}, { default: {} });

/** A browser origin as sent in `Origin`: scheme://host[:port], no path. */
const Origin = (star: boolean) =>
  Type.String({ pattern: `^(${star ? "\\*|" : ""}https?://[^/\\s]+)$`, "x-expected": `an origin such as https://app.example.com (scheme, host, optional port; no path)${star ? " or *" : ""}` });

const SecurityCfg = Strict({
  max_body_bytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: BYTES_MAX, default: 33554432, description: "data-plane request body limit (bytes)" })),
  admin_max_body_bytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: BYTES_MAX, default: 8388608, description: "admin-plane request body limit (bytes)" })),
  admin_rate_limit: Type.Optional(Strict({
    per_second: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: COUNT_MAX, default: 20, description: "admin requests per second per source address (sustained)" })),
    burst: Type.Optional(Type.Integer({ minimum: 1, maximum: COUNT_MAX, default: 100, description: "admin requests a source address may make at once before the rate applies" })),
  }, { default: {}, description: "past it the admin plane answers 429 rate_limited with Retry-After" })),
  allowed_origins: Type.Optional(Type.Array(Origin(true), { default: [], description: "browser origins the data plane answers with CORS (preflight included); any other Origin is 403. `*` allows every origin" })),
  admin_allowed_origins: Type.Optional(Type.Array(Origin(false), { default: [], description: "browser origins besides the admin listener's own that may call the admin API; any other Origin is 403" })),
  admin_allowed_hosts: Type.Optional(Type.Array(Type.String({ pattern: "^([A-Za-z0-9._-]+|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?$", "x-expected": "a host name or address, optionally with :port" }), {
    default: [],
    description: "Host header values the admin listener accepts besides its own address (and localhost on a loopback listener); a name without :port matches any port",
  })),
}, { default: {} });

const AdvancedCfg = Strict({
  response_headers: Type.Optional(Strict({
    server_timing: Type.Optional(Type.Boolean({ default: true })),
    route_policy: Type.Optional(Type.Boolean({ default: true })),
  }, { default: {}, "x-restart": true })),
  config_versions_retained: Type.Optional(Type.Integer({ minimum: 1, maximum: 100000, default: 100, description: "config versions kept for history, diff and rollback" })),
}, { default: {} });

export const GatewayConfig = Strict({
  listen: Type.Optional(Type.String({ ...ListenAddress, default: "127.0.0.1:8080", description: "data-plane listener; --listen, --port or GATEWAY_LISTEN override it" })),
  admin_listen: Type.Optional(Type.String({ ...ListenAddress, default: "127.0.0.1:8081", description: "admin-plane listener; --admin-listen or GATEWAY_ADMIN_LISTEN override it" })),
  public_url: Type.Optional(Url("base of /auth/token and of what clients point at")),
  tls: Type.Optional(TlsBlock),
  admin_tls: Type.Optional(AdminTlsBlock),
  admin_require_mtls: Type.Optional(Type.Boolean({ default: false, "x-restart": true, description: "admin clients must present a certificate chaining to admin_tls.client_ca_file" })),
  // store.settings defaults are "x-default" (documented, applied by resolve.ts): each module's own, so a
  // member left unset is not filled in for the other module, where it would be refused.
  store: Type.Optional(Strict({
    module: Enum(["sqlite", "postgres"], { default: "sqlite", description: "sqlite: one process's embedded file; postgres: one database shared by a fleet of replicas (docs/operations.md, \"Running several replicas\")" }),
    settings: Type.Optional(Strict({
      path: Type.Optional(Type.String({ minLength: 1, "x-default": "./gateway.db", description: "sqlite: database file; relative to the working directory; :memory: for a throwaway store" })),
      url: Type.Optional({ ...SecretRef, description: "postgres (required): a secret reference {env: NAME} or {file: PATH} holding the libpq URL, postgres://user:password@host:5432/db?sslmode=require" }),
      pool_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, "x-default": 10, description: "postgres: connections per replica" })),
      schema: Type.Optional(Type.String({ pattern: "^[a-z_][a-z0-9_]{0,62}$", "x-default": "public", description: "postgres: schema of the tables, created if absent", "x-expected": "a plain lower-case schema name" })),
      connect_timeout_secs: Type.Optional(Type.Integer({ minimum: 1, maximum: 60, "x-default": 5, description: "postgres: how long the boot keeps trying to connect" })),
      spool_path: Type.Optional(Type.String({ minLength: 1, "x-default": "./gateway.spool", description: "postgres: this replica's metering spool: ledger rows of requests served while the database is unreachable, fsynced, written to it exactly once when it returns (or at the next boot); one live process per file" })),
      on_unavailable: Type.Optional(Enum(["fail_closed", "fail_open"], { default: "fail_closed", description: "once the store has refused writes and max_unsaved_rows metering rows wait in memory: fail_closed answers metered requests 503 store unavailable, fail_open serves them and drops their rows; with postgres also when a reservation for a limited request cannot reach the database within 1 s: fail_closed answers 503 store unavailable, fail_open admits it unchecked" })),
      max_unsaved_rows: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000, default: 100_000, description: "ledger rows (sums per second, key, pool and model) kept in memory and retried while the store refuses writes" })),
    }, { default: {} })),
  }, { default: { module: "sqlite" }, "x-restart": true, description: "where keys, groups, the ledger, audit and config versions are kept" })),
  config: Type.Optional(Strict({
    locked: Type.Optional(Type.Boolean({ default: false, description: "true refuses every admin config mutation" })),
    overlay: Type.Optional(Type.String({ minLength: 1, default: "./gateway.overlay.yaml", description: "where API-applied changes persist" })),
  }, { default: {} })),
  upstream_credentials: Type.Optional(Enum(["own", "passthrough"], { default: "own" })),
  providers: Type.Optional(NameMap(ProviderCfg, "provider name -> upstream endpoint")),
  models: Type.Optional(NameMap(ModelCfg, "model alias -> lane (a provider plus the upstream's model name)")),
  pools: Type.Optional(PoolsCfg),
  rate_card: Type.Optional(Type.Record(Type.String({ minLength: 1 }), RateCardEntry, { default: {}, description: "abstract cost units per 1M tokens, by model alias (the models: key that served the request); one unit counts as one cent of budget_cents" })),
  per_request_fee: Type.Optional(Type.Number({ minimum: 0, maximum: PRICE_MAX, default: 0, description: "abstract cost units per admitted request (charged at admission)" })),
  auth: Type.Optional(AuthCfg),
  groups: Type.Optional(NameMap(GroupCfg, "group name -> limits")),
  "identity-providers": Type.Optional(NameMap(IdentityProviderCfg, "instance name -> identity provider")),
  role_bindings: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.Record(Type.String({ minLength: 1 }), RoleBinding), { default: {}, description: "identity-provider instance -> role-claim value -> binding" })),
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
