// Admin read shapes as TypeBox schemas: Elysia checks every response against them, and the OpenAPI
// description is generated from the same objects. Wire names are the spec's and are frozen.
import { Type, type Static } from "@sinclair/typebox";
import { GatewayConfig } from "../config/schema.ts";
import { SETTINGS_SECTIONS } from "../config/lifecycle.ts";

const Uint = Type.Integer({ minimum: 0 });
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const ErrorEnvelope = Type.Object({
  error: Type.Object({
    code: Type.Union(
      ["not_found", "unauthorized", "method_not_allowed", "forbidden", "invalid_request", "version_conflict", "conflict", "rate_limited", "internal"].map((c) => Type.Literal(c)),
    ),
    message: Type.String(),
  }),
});

export const InfoView = Type.Object({
  version: Type.String(),
  build: Type.Object({
    auth_modules: Type.Array(Type.String()),
    hook_plugins: Type.Array(Type.String()),
    weighted_floor: Type.Literal(true),
    commit: Type.String({ description: "git commit the binary was built from (`-dirty`: uncommitted changes; `unknown`: not built in a checkout; `source`: run from source), as `--version` prints" }),
    target: Type.String({ description: "release target the binary was built for (`linux-x64`, `darwin-arm64`, ...; `source`: run from source), as `--version` prints" }),
  }),
  uptime_seconds: Nullable(Uint),
  started_at: Nullable(Uint),
  topology: Type.Object({
    models: Type.Array(Type.String(), { description: "model aliases (lanes)" }),
    pools: Type.Array(Type.String(), { description: "named pools" }),
    providers: Type.Array(Type.String()),
  }),
  config_persistence: Type.Boolean(),
  config_version: Uint,
  store: Type.Object(
    {
      module: Type.Union([Type.Literal("sqlite"), Type.Literal("postgres")]),
      state: Type.Union([Type.Literal("ok"), Type.Literal("unavailable")], { description: "unavailable while the store refuses this replica's writes (its ledger batches or heartbeat)" }),
      replica_id: Nullable(Type.String({ description: "this replica's id in a fleet (GET /replicas); null for sqlite" })),
      schema_version: Uint,
      spooled_rows: Uint,
    },
    { description: "spooled_rows: metering rows of served requests not yet in the store (kept and retried)" },
  ),
});
export type InfoView = Static<typeof InfoView>;
export type StoreStatus = InfoView["store"];

export const AuthView = Type.Object({
  chain: Type.Array(Type.String()),
  upstream_credentials: Type.Union([Type.Literal("own"), Type.Literal("passthrough")]),
  open: Type.Boolean(),
});
export type AuthView = Static<typeof AuthView>;

export const AdminAuthView = Type.Object({
  configured: Type.Boolean(),
  modules: Type.Array(Type.String()),
});

const BreakerView = Type.Object({
  error_rate: Type.Number(),
  window_secs: Type.Number(),
  min_requests: Uint,
  consecutive_n: Uint,
  base_cooldown_secs: Type.Number(),
  max_cooldown_secs: Type.Number(),
});

export const PoolView = Type.Object({
  name: Type.String(),
  members: Type.Array(Type.Object({ model: Type.String(), weight: Type.Number() })),
  breaker: BreakerView,
  failover: Type.Object({ max_hops: Uint, timeout_secs: Type.Number() }),
  on_exhausted: Type.String(),
  hooks: Type.Array(Type.String()),
  implicit: Type.Boolean({ description: "true for the one-lane pool of a model alias no pool names" }),
});

export const ModelView = Type.Object({
  name: Type.String(),
  provider: Type.String(),
  model: Type.String({ description: "the upstream's model name" }),
  context_window: Nullable(Uint),
  max_concurrent: Nullable(Uint),
  max_requests: Nullable(Uint),
});

export const ProviderView = Type.Object({
  name: Type.String(),
  protocol: Type.String(),
  base_url: Nullable(Type.String()),
  region: Nullable(Type.String()),
  api_key_configured: Type.Boolean({ description: "whether a non-empty key is configured; never the key" }),
  header_names: Type.Array(Type.String()),
  query_names: Type.Array(Type.String()),
  health: Type.Object({ mode: Type.String(), interval_secs: Type.Number(), timeout_secs: Type.Number() }),
});

export const HookView = Type.Object({
  name: Type.String(),
  kind: Type.String(),
  transport: Type.Object({ kind: Type.String(), target: Nullable(Type.String()) }),
  prompt: Type.String(),
  user: Type.String(),
  priority: Type.Integer({ minimum: 0, maximum: 65535 }),
  at: Nullable(Type.String()),
  on_error: Type.String(),
  timeout_ms: Uint,
  settings_keys: Type.Array(Type.String()),
  global: Type.Boolean(),
});

const HookTransportView = HookView.properties.transport;
export const HookHealthView = Type.Object({
  name: Type.String(),
  transport: HookTransportView,
  reachable: Nullable(Type.Boolean({ description: "true = resolves to a loaded kind: hook module; a plugin-load check only (opens no connection, fires nothing)" })),
  detail: Nullable(Type.String()),
});
const SettingsKeys = Type.Array(Type.String(), { description: "sorted key names of the settings bag, never values" });
export const HookStatusView = Type.Object({
  name: Type.String(),
  desired: Type.Object({ settings_keys: SettingsKeys, settings_version: Uint }),
  reported: Nullable(Type.Object({ settings_keys: Nullable(SettingsKeys), settings_version: Nullable(Uint) })),
  drift: Nullable(Type.Boolean()),
  drift_keys: Type.Array(Type.String(), { description: "desired key names the hook is not running; empty when it did not answer" }),
  metrics: Type.Array(Type.Record(Type.String(), Type.Unknown(), { description: "name, type, value and optionally labels, quantiles, help, unit, ..." })),
  as_of: Uint,
  source: Type.Literal("live"),
  note: Type.Optional(Nullable(Type.String({ description: "present only when the hook did not answer (then reported and drift are null)" }))),
});
export const HookSchemaView = Type.Object({ name: Type.String(), schema: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: "the module's settings JSON Schema" })) });
export const HookChangeView = Type.Object({ applied: Type.Boolean(), config_version: Uint, hook: Type.Optional(HookView), note: Type.String() });

export const EffectiveConfigView = Type.Object({
  version: Uint,
  auth: AuthView,
  pools: Type.Array(PoolView),
  models: Type.Array(ModelView),
  providers: Type.Array(ProviderView),
  hooks: Type.Array(HookView),
  global_hooks: Type.Array(Type.String()),
});
export type EffectiveConfigView = Static<typeof EffectiveConfigView>;

export const ConfigValidateView = Type.Object({ ok: Type.Boolean(), errors: Type.Array(Type.String()) });

/** `{"config": {...}}` or `{"yaml": "..."}`, exactly one (gaps.md). */
export const ConfigBody = Type.Union(
  [
    Type.Object({ config: Type.Record(Type.String(), Type.Unknown()) }, { additionalProperties: false }),
    Type.Object({ yaml: Type.String() }, { additionalProperties: false }),
  ],
  { description: 'an object {"config": <config object>} or {"yaml": "<config file text>"}, exactly one member' },
);

/** Optimistic concurrency (gaps.md): the config_version the caller last read; also `If-Match`. */
export const ExpectedVersion = Type.Optional(Type.Integer({ minimum: 0, description: "refuse with 409 version_conflict unless this is the current config_version" }));

/** POST /config/apply: the ConfigBody wrapper plus `expected_version`. */
export const ConfigApplyBody = Type.Union(
  [
    Type.Object({ config: Type.Record(Type.String(), Type.Unknown()), expected_version: ExpectedVersion }, { additionalProperties: false }),
    Type.Object({ yaml: Type.String(), expected_version: ExpectedVersion }, { additionalProperties: false }),
  ],
  { description: 'an object {"config": <config object>} or {"yaml": "<config file text>"}, exactly one, plus an optional expected_version' },
);
export type ConfigApplyBody = Static<typeof ConfigApplyBody>;
export const ConfigRollbackBody = Type.Object({ version: Uint, expected_version: ExpectedVersion }, { additionalProperties: false });
export type ConfigRollbackBody = Static<typeof ConfigRollbackBody>;
export const ConfigReloadBody = Type.Union([Type.Null(), Type.Object({ expected_version: ExpectedVersion }, { additionalProperties: false })]);

export const ConfigApplyView = Type.Object({ applied: Type.Boolean(), config_version: Uint, note: Type.String() });
export const ConfigReloadView = Type.Object({ reloaded: Type.Boolean(), config_version: Uint });
export const ConfigRollbackView = Type.Object({ restored_version: Uint, config_version: Uint });
export const ConfigVersion = Type.Object({ version: Uint, ts: Uint, principal: Type.String(), summary: Type.String() });
export type ConfigVersion = Static<typeof ConfigVersion>;
export const ConfigVersionPageView = Type.Object({ items: Type.Array(ConfigVersion), next_cursor: Nullable(Type.String()) });
export const ConfigVersionDetailView = Type.Object({
  version: Uint,
  ts: Uint,
  principal: Type.String(),
  summary: Type.String(),
  hooks: Type.Record(Type.String(), HookView),
  global_hooks: Type.Array(Type.String()),
});
export const ConfigDiffView = Type.Object({
  from: Uint,
  to: Uint,
  hooks: Type.Object({ added: Type.Array(Type.String()), removed: Type.Array(Type.String()), changed: Type.Array(Type.String()) }),
  global_hooks: Type.Optional(Nullable(Type.Object({ from: Type.Array(Type.String()), to: Type.Array(Type.String()) }))),
  lines: Type.Array(
    Type.Object({ op: Type.Union([Type.Literal("="), Type.Literal("+"), Type.Literal("-")], { description: "= both, - only in from, + only in to" }), text: Type.String() }),
    { description: "the line diff of the two versions' sources (GET /config/versions/{v}/source), every line of both in order" },
  ),
  truncated: Type.Boolean({ description: "true: lines holds the first 20000 lines of the diff, or a source was over 1 MiB and only its first 1 MiB was compared" }),
});

export const ConfigDiffQuery = Type.Object({ from: Type.Optional(Type.String()), to: Type.Optional(Type.String()) });

export const ConfigSettingsView = Type.Object({
  applied: Type.Boolean(),
  config_version: Uint,
  settings: Type.Record(Type.String(), Type.Unknown(), { description: "the operator-set overlay; store.settings shown as settings_keys (names only)" }),
  note: Type.Optional(Nullable(Type.String())),
  reload_to_apply: Type.Array(Type.String()),
});
export type ConfigSettingsView = Static<typeof ConfigSettingsView>;

export const AuditEntry = Type.Object({
  seq: Uint,
  ts: Uint,
  action: Type.String(),
  resource: Type.String(),
  outcome: Type.Union([Type.Literal("applied"), Type.Literal("rejected")]),
  principal: Type.String(),
  credential: Nullable(Type.String({ description: "additive: which credential of the principal acted, e.g. admin-tokens:<name>, the token's name in auth.admin_tokens; null when none (open plane, older entries)" })),
  prev_hash: Type.String(),
  hash: Type.String(),
});
export const AuditPageView = Type.Object({ items: Type.Array(AuditEntry), next_cursor: Nullable(Type.String()) });
export const AuditVerifyView = Type.Object({ ok: Type.Boolean(), checked: Uint, first_bad_seq: Nullable(Uint), reason: Nullable(Type.String()) });
export const PageQuery = Type.Object({ limit: Type.Optional(Type.String()), cursor: Type.Optional(Type.String()) });

/** PUT /admin-auth (gaps.md "Admin auth"). */
export const AdminAuthPutBody = Type.Object(
  {
    modules: Type.Array(Type.String({ minLength: 1 }), { maxItems: 16, description: "the admin chain in order; [] = open, needs allow_open" }),
    allow_open: Type.Optional(Type.Boolean({ description: "required with modules: [] (an open admin plane is full authority to anyone who can reach it)" })),
    expected_version: ExpectedVersion,
  },
  { additionalProperties: false },
);
export const AdminAuthPutView = Type.Object({ configured: Type.Boolean(), modules: Type.Array(Type.String()), applied: Type.Boolean(), config_version: Uint, note: Type.String() });

/**
 * PUT /config/settings: any of the settable root sections (each as the config file spells it; `null`
 * removes it from the overlay), plus `expected_version`. Checked in full by the config's own validation.
 */
export const ConfigSettingsBody = Type.Object(
  {
    ...Object.fromEntries(
      SETTINGS_SECTIONS.map((section) => [
        section,
        Type.Optional(Type.Union([GatewayConfig.properties[section], Type.Null()])),
      ]),
    ),
    expected_version: ExpectedVersion,
  },
  { additionalProperties: false },
);
