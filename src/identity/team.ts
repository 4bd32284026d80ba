// Who a signed-in person is, which team they land on and which group they are charged to
// (design/identity.md, "Identity, team, per-person group"). Pure: the callers bring the verified claims
// (oidc) or the forge's `/user` and `/user/orgs`, and the config's role_bindings and default_team.

/** The role_claim read when the provider's settings name none (spec: `groups`; `roles` for app roles). */
export const DEFAULT_ROLE_CLAIM = "groups";

/** A role_bindings entry: a team for the data plane, or an admin scope. */
export type RoleBinding = { readonly group: string } | { readonly admin_scope: "read-only" | "full" };

export interface TeamConfig {
  /** instance -> claim value -> binding, in config order. */
  readonly role_bindings?: Readonly<Record<string, Readonly<Record<string, RoleBinding>>>>;
  readonly default_team?: string;
}

/** An oidc identity of record: `user:<sub>`. */
export const oidcIdentity = (sub: string): string => `user:${sub}`;

/** A forge identity of record: `forge:<login>` (from `{api_base}/user`). */
export const forgeIdentity = (login: string): string => `forge:${login}`;

/** A forge organisation as a group value: `forge:org/<org>` (from `{api_base}/user/orgs`). */
export const forgeOrgGroup = (org: string): string => `forge:org/${org}`;

/**
 * The groups an oidc token carries in its role claim: an array's strings, or the claim itself when it is
 * one string (`role_claim: hd` binds by hosted domain). Anything else carries none.
 */
export function claimGroups(claims: Readonly<Record<string, unknown>>, roleClaim = DEFAULT_ROLE_CLAIM): string[] {
  const value = claims[roleClaim];
  if (typeof value === "string") return value === "" ? [] : [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string" && v !== "");
  return [];
}

/**
 * The team: the first role_bindings.<instance> entry, in config order, with a `group` binding whose key is
 * among the person's groups; else default_team; else none (the caller refuses: 403).
 */
export function teamFor(instance: string, groups: readonly string[], config: TeamConfig): string | undefined {
  const held = new Set(groups);
  for (const [value, binding] of Object.entries(config.role_bindings?.[instance] ?? {})) if ("group" in binding && held.has(value)) return binding.group;
  return config.default_team;
}

/** The per-person leaf under the team, charged with everything the person does: `user:alice@ml`. */
export const leafGroup = (identity: string, team: string): string => `${identity}@${team}`;

/**
 * The highest admin scope the person's groups are bound to, capped by the provider's max_admin_scope
 * (omitted: read-only; `none`: the provider never reaches the admin plane). Undefined: no admin binding.
 */
export function adminScopeFor(instance: string, groups: readonly string[], config: TeamConfig, max: "none" | "read-only" | "full" = "read-only"): "read-only" | "full" | undefined {
  if (max === "none") return undefined;
  const held = new Set(groups);
  let best: "read-only" | "full" | undefined;
  for (const [value, binding] of Object.entries(config.role_bindings?.[instance] ?? {})) {
    if (!("admin_scope" in binding) || !held.has(value)) continue;
    if (binding.admin_scope === "full") best = "full";
    else best ??= "read-only";
  }
  return best === "full" && max === "read-only" ? "read-only" : best;
}
