// Key request and response shapes as TypeBox schemas (spec "Key resources", gaps.md "Keys"). The
// request schemas are checked by admin/key-requests.ts, not by Elysia, so a refused body is audited
// and a removed legacy member is named as such.
import { Type, type Static } from "@sinclair/typebox";

const Uint = Type.Integer({ minimum: 0 });
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
// Bounds keep one request from storing megabytes per key (every key is held in memory and echoed on metrics).
const PoolList = Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 256, description: "pool names; [] = none" });
const Labels = Type.Record(Type.String({ minLength: 1, maxLength: 64 }), Type.String({ maxLength: 256 }), { maxProperties: 32, description: "echoed onto the key's metric series" });
// A per-person leaf (`user:<sub>@<team>`) runs longer than other names; the group's own pattern is checked
// where it is provisioned (governance/groups.ts), and a named group must exist.
const GroupName = Type.String({ minLength: 1, maxLength: 512 });
const KeyName = Type.String({ minLength: 1, maxLength: 200 });

export const CreateKeyReq = Type.Object(
  {
    name: KeyName,
    allowed_pools: Type.Optional(Nullable(PoolList)),
    expires_at: Type.Optional(Nullable(Type.Integer({ minimum: 0, description: "Unix seconds" }))),
    expires_in: Type.Optional(Nullable(Type.String({ pattern: "^[0-9]+[dhms]$", "x-expected": "a duration such as 30d, 12h, 30m, 45s" }))),
    group: Type.Optional(Nullable(GroupName)),
    parent: Type.Optional(Nullable(GroupName)),
    issue_aws_credential: Type.Optional(Type.Boolean()),
    labels: Type.Optional(Labels),
  },
  { additionalProperties: false },
);
export type CreateKeyReq = Static<typeof CreateKeyReq>;

/** PATCH /keys/{id}: absent = unchanged, null = clear, value = set (name and enabled cannot be cleared). */
export const UpdateKeyReq = Type.Object(
  {
    name: Type.Optional(KeyName),
    enabled: Type.Optional(Type.Boolean()),
    allowed_pools: Type.Optional(Nullable(PoolList)),
    labels: Type.Optional(Nullable(Labels)),
    group: Type.Optional(Nullable(GroupName)),
  },
  { additionalProperties: false },
);
export type UpdateKeyReq = Static<typeof UpdateKeyReq>;

const keyFields = {
  id: Type.String(),
  name: Type.String(),
  allowed_pools: Nullable(Type.Array(Type.String())),
  group: Nullable(Type.String()),
  enabled: Type.Boolean(),
  created_at: Uint,
  labels: Type.Record(Type.String(), Type.String()),
  state: Type.Union([Type.Literal("active"), Type.Literal("disabled"), Type.Literal("revoked"), Type.Literal("tombstoned")]),
};

/** Never the token or its hash. */
export const KeyView = Type.Object(keyFields);
export type KeyView = Static<typeof KeyView>;

export const CreatedKeyView = Type.Object({
  ...keyFields,
  token: Type.String({ description: "shown exactly once" }),
  expires_at: Uint,
  group_provisioned: Type.Boolean(),
  aws_access_key_id: Type.Optional(Nullable(Type.String())),
  aws_secret_access_key: Type.Optional(Nullable(Type.String({ description: "shown exactly once" }))),
});
export type CreatedKeyView = Static<typeof CreatedKeyView>;

/** GET /keys: checked by parseKeyListQuery (so a refusal names the parameter); declared for the OpenAPI document. */
export const KeyListQuery = Type.Object({
  limit: Type.Optional(Type.String({ description: "page size, 1 to 500 (default 50)" })),
  cursor: Type.Optional(Type.String({ description: "the previous page's next_cursor" })),
  include: Type.Optional(Type.String({ description: "`tombstoned` adds deleted keys" })),
});
export const KeyPageView = Type.Object({ items: Type.Array(KeyView), next_cursor: Nullable(Type.String()) });
export type KeyPageView = Static<typeof KeyPageView>;

/** Extra members are ignored (spec "Other views"). */
export const FlushCacheReq = Type.Object({ module: Type.Optional(Nullable(Type.String())) });
export const CacheFlushView = Type.Object({ flushed: Uint });
