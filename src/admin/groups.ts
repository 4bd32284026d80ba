// Groups on the admin plane: GET /groups, GET/PATCH/DELETE /groups/{name}, POST /groups. Config-file
// groups are listed and read like the others but refused (409 conflict) by PATCH and DELETE: the file
// is their source of truth. Every mutation, applied or refused, is audited by the service.
import type { TSchema } from "@sinclair/typebox";
import { requestBody } from "./openapi.ts";
import type { GroupService } from "../governance/groups.ts";
import type { GroupNode, Limit } from "../governance/limits.ts";
import { isWindowLimit } from "../governance/limits.ts";
import { jsonController } from "../http/elysia.ts";
import { GatewayError } from "../http/errors.ts";
import type { AdminDeps } from "./deps.ts";
import { GroupCfgBody, GroupListView, GroupPatchBody, GroupView, type LimitView } from "./group-views.ts";
import { shape } from "./pages.ts";
import { principalOf } from "./principal.ts";

export function limitView(limit: Limit): LimitView {
  if (isWindowLimit(limit)) {
    return { window: limit.window, requests: limit.requests ?? null, tokens: limit.tokens ?? null, budget_cents: limit.budget_cents ?? null, pool: limit.pool ?? null };
  }
  return { concurrent: limit.concurrent, pool: limit.pool ?? null };
}

export function groupView(node: GroupNode): GroupView {
  return {
    name: node.name,
    enabled: node.enabled,
    limits: node.limits.map(limitView),
    parent: node.parent,
    ...(node.child_default !== null && { child_default: node.child_default.map(limitView) }),
    source: node.source,
  };
}

export function groupsOf(deps: AdminDeps): GroupService {
  if (!deps.groups) throw new GatewayError("internal", "the group service is not available");
  return deps.groups;
}

/**
 * A limit figure past 2^53-1 is not an exact count (1e300 was stored and shown as a cap): the first such
 * member of `limits` or `child_default`, named by its pointer.
 */
function inexactFigure(body: { limits?: unknown; child_default?: unknown }): string | undefined {
  for (const list of ["limits", "child_default"] as const) {
    const limits = body[list];
    if (!Array.isArray(limits)) continue;
    for (const [i, limit] of limits.entries()) {
      for (const [member, value] of Object.entries(limit as object)) {
        if (typeof value === "number" && value > Number.MAX_SAFE_INTEGER) return `/${list}/${i}/${member}: must be at most ${Number.MAX_SAFE_INTEGER}`;
      }
    }
  }
  return undefined;
}

/** The body checked against its schema; a refusal is audited before the 400. */
async function checked<T extends { limits?: unknown; child_default?: unknown }>(groups: GroupService, schema: TSchema, body: unknown, audit: { action: string; name: string; principal: string }): Promise<T> {
  const result = shape<T>(schema, body);
  const message = result.ok ? inexactFigure(result.value) : result.message;
  if (message === undefined) return (result as { value: T }).value;
  await groups.refuse(audit.action, audit.name, audit.principal, new GatewayError("invalid_request", message));
  throw new GatewayError("invalid_request", message);
}

export const groupsController = (deps: AdminDeps) =>
  jsonController("admin.groups")
    .get("/groups", () => ({ items: [...groupsOf(deps).tree().values()].map(groupView) }), { response: { 200: GroupListView } })
    .get(
      "/groups/:name",
      ({ params }) => {
        const node = groupsOf(deps).get(params.name);
        if (!node) throw new GatewayError("not_found", `no group ${params.name}`);
        return groupView(node);
      },
      { response: { 200: GroupView } },
    )
    .post(
      "/groups",
      async ({ body, request, set }) => {
        const groups = groupsOf(deps);
        const principal = principalOf(request);
        const name = typeof (body as { name?: unknown } | null)?.name === "string" ? (body as { name: string }).name : "?";
        const cfg = await checked<GroupCfgBody>(groups, GroupCfgBody, body, { action: "group.create", name, principal });
        const node = await groups.create(cfg, principal);
        set.status = 201;
        return groupView(node);
      },
      { detail: requestBody(GroupCfgBody), response: { 201: GroupView } },
    )
    .patch(
      "/groups/:name",
      async ({ params, body, request }) => {
        const groups = groupsOf(deps);
        const principal = principalOf(request);
        const patch = await checked<GroupPatchBody>(groups, GroupPatchBody, body, { action: "group.update", name: params.name, principal });
        return groupView(await groups.update(params.name, patch, principal));
      },
      { detail: requestBody(GroupPatchBody), response: { 200: GroupView } },
    )
    .delete(
      "/groups/:name",
      async ({ params, request }) => {
        const groups = groupsOf(deps);
        const node = groups.get(params.name);
        await groups.delete(params.name, principalOf(request));
        return groupView(node!);
      },
      { response: { 200: GroupView } },
    );
