// Group and usage shapes as TypeBox schemas (spec "Group resources", "Key resources" KeyMeteringView and
// KeyUsageView; gaps.md "Groups"). Request bodies are checked in the handler (admin/groups.ts), so a
// refused body is audited like any other refused mutation.
import { Type, type Static } from "@sinclair/typebox";
import { GROUP_NAME_PATTERN, LimitCfg } from "../config/schema.ts";

const Uint = Type.Integer({ minimum: 0 });
const Int = Type.Integer();
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
// Spelled out: Elysia's response typing loses a union built from an array of literals.
const Window = Type.Union([Type.Literal("minute"), Type.Literal("hour"), Type.Literal("day"), Type.Literal("month"), Type.Literal("total")]);
const GroupName = Type.String({ pattern: GROUP_NAME_PATTERN, "x-expected": "a group name of letters, digits and . _ @ - (at most 128), or a per-person leaf user:<sub>@<team> / forge:<login>@<team>" });

/** POST /groups: gaps.md GroupCfg (a config-file group block plus its name). */
export const GroupCfgBody = Type.Object(
  {
    name: GroupName,
    parent: Type.Optional(Nullable(GroupName)),
    enabled: Type.Optional(Type.Boolean()),
    limits: Type.Optional(Type.Array(LimitCfg, { maxItems: 64 })),
    child_default: Type.Optional(Nullable(Type.Array(LimitCfg, { maxItems: 64 }))),
  },
  { additionalProperties: false },
);
export type GroupCfgBody = Static<typeof GroupCfgBody>;

/** PATCH /groups/{name}: absent = unchanged, null = clear (`enabled: null` is refused). */
export const GroupPatchBody = Type.Object(
  {
    enabled: Type.Optional(Nullable(Type.Boolean())),
    limits: Type.Optional(Nullable(Type.Array(LimitCfg, { maxItems: 64 }))),
    child_default: Type.Optional(Nullable(Type.Array(LimitCfg, { maxItems: 64 }))),
  },
  { additionalProperties: false },
);
export type GroupPatchBody = Static<typeof GroupPatchBody>;

export const LimitView = Type.Union([
  Type.Object({ window: Window, requests: Nullable(Uint), tokens: Nullable(Uint), budget_cents: Nullable(Uint), pool: Nullable(Type.String()) }),
  Type.Object({ concurrent: Uint, pool: Nullable(Type.String()) }),
]);
export type LimitView = Static<typeof LimitView>;

export const GroupView = Type.Object({
  name: Type.String(),
  enabled: Type.Boolean(),
  limits: Type.Array(LimitView),
  parent: Nullable(Type.String()),
  child_default: Type.Optional(Type.Array(LimitView)),
  /** Where the group is defined: `config` groups are read-only through the API. */
  source: Type.Union([Type.Literal("config"), Type.Literal("api")]),
});
export type GroupView = Static<typeof GroupView>;

export const GroupListView = Type.Object({ items: Type.Array(GroupView) });

export const GroupBucketUsageView = Type.Object({
  window: Window,
  pool: Type.Optional(Nullable(Type.String())),
  requests: Uint,
  tokens: Uint,
  spend_cents: Int,
  requests_cap: Type.Optional(Nullable(Uint)),
  tokens_cap: Type.Optional(Nullable(Uint)),
  budget_cap: Type.Optional(Nullable(Int)),
  budget_remaining_cents: Type.Optional(Nullable(Int)),
});

export const GroupUsageView = Type.Object({ group: Type.String(), enabled: Type.Boolean(), buckets: Type.Array(GroupBucketUsageView), as_of: Uint });

export const KeyMeteringView = Type.Object({
  id: Type.String(),
  budget_period: Type.Literal("total"),
  window_start: Uint,
  as_of: Uint,
  group: Nullable(Type.String()),
  spend_cents: Int,
  tokens: Uint,
  requests: Uint,
  rate_headroom: Nullable(Type.Number()),
});

export const KeyUsageView = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  tokens_input: Uint,
  tokens_output: Uint,
  tokens_cache_read: Uint,
  tokens_cache_creation: Uint,
  requests: Uint,
  spend_micros: Int,
  last_used_at: Type.Optional(Nullable(Type.Integer({ minimum: 0, description: "additive: epoch seconds of the key's newest request in the range (the ledger's per-second rows)" }))),
});

export const KeyUsagePageView = Type.Object({ items: Type.Array(KeyUsageView) });

/** Requests, tokens (all tiers) and spend of a span, priced with the current rate card. */
const UsageAmounts = { requests: Uint, tokens: Uint, spend_cents: Int };

export const UsageSeriesView = Type.Object({
  by: Type.String(),
  range: Type.String(),
  step_secs: Uint,
  from: Uint,
  to: Uint,
  series: Type.Array(
    Type.Object({
      name: Type.String({ description: "the model, the key id, the group ('(no group)' for keys bound to none), or '(other)': every series past the top 20 by spend" }),
      total: Type.Object(UsageAmounts),
      points: Type.Array(Type.Object({ t: Uint, ...UsageAmounts }), { description: "by step start; steps with no usage are left out" }),
    }),
  ),
});

export const UsageTodayView = Type.Object({ from: Uint, ...UsageAmounts });
