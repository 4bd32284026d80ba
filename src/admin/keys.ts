// Virtual keys on the admin plane: POST/GET /keys, GET/PATCH/DELETE /keys/{id}, POST /keys/{id}/revoke,
// and POST /auth/cache/flush. Bodies are checked by admin/key-requests.ts (so a refusal is audited);
// responses are checked by Elysia against admin/key-views.ts. No view carries a token's hash; the
// token and the AWS secret appear only in the mint's answer.
import { jsonController } from "../http/elysia.ts";
import { requestBody } from "./openapi.ts";
import { GatewayError } from "../http/errors.ts";
import { keyState } from "../governance/key-registry.ts";
import type { KeyService, MintedKey } from "../governance/keys.ts";
import type { KeyRecord } from "../store/keys.ts";
import type { AdminDeps } from "./deps.ts";
import { encodeKeyCursor, parseCreateKeyReq, parseKeyListQuery, parseUpdateKeyReq } from "./key-requests.ts";
import { CacheFlushView, CreatedKeyView, CreateKeyReq, FlushCacheReq, KeyListQuery, KeyPageView, KeyView, UpdateKeyReq } from "./key-views.ts";
import { principalOf } from "./principal.ts";

export function keyView(record: KeyRecord): KeyView {
  return {
    id: record.id,
    name: record.name,
    allowed_pools: record.allowedPools === null ? null : [...record.allowedPools],
    group: record.group,
    enabled: record.enabled,
    created_at: record.createdAt,
    labels: { ...record.labels },
    state: keyState(record),
  };
}

export function createdKeyView(minted: MintedKey): CreatedKeyView {
  return {
    ...keyView(minted.record),
    token: minted.token,
    expires_at: minted.record.expiresAt,
    group_provisioned: minted.groupProvisioned,
    ...(minted.aws && { aws_access_key_id: minted.aws.accessKeyId, aws_secret_access_key: minted.aws.secretAccessKey }),
  };
}

function serviceOf(deps: AdminDeps): KeyService {
  if (!deps.keys) throw new GatewayError("internal", "the key service is not available");
  return deps.keys;
}

export const keysController = (deps: AdminDeps) =>
  jsonController("admin.keys")
    .post(
      "/keys",
      async ({ body, request, set }) => {
        const keys = serviceOf(deps);
        const principal = principalOf(request);
        const checked = parseCreateKeyReq(body, Math.floor(deps.now() / 1000));
        if (!checked.ok) return keys.refuse("key.create", "key", principal, "invalid_request", checked.message);
        const created = createdKeyView(await keys.create(checked.value, principal));
        // 201 like POST /groups: a new resource exists.
        set.status = 201;
        return created;
      },
      { detail: requestBody(CreateKeyReq), response: { 201: CreatedKeyView } },
    )
    .get(
      "/keys",
      async ({ query }) => {
        const checked = parseKeyListQuery(query);
        if (!checked.ok) throw new GatewayError("invalid_request", checked.message);
        const { limit, after, includeTombstoned } = checked.value;
        const page = await serviceOf(deps).page(limit, after, includeTombstoned);
        return { items: page.items.map(keyView), next_cursor: page.next && encodeKeyCursor(page.next) };
      },
      { query: KeyListQuery, response: { 200: KeyPageView } },
    )
    .get("/keys/:id", ({ params, query }) => keyView(serviceOf(deps).get(params.id, query.include === "tombstoned")), { response: { 200: KeyView } })
    .patch(
      "/keys/:id",
      async ({ params, body, request }) => {
        const keys = serviceOf(deps);
        const principal = principalOf(request);
        const checked = parseUpdateKeyReq(body);
        if (!checked.ok) return keys.refuse("key.update", params.id, principal, "invalid_request", checked.message);
        return keyView(await keys.update(params.id, checked.value, principal));
      },
      { detail: requestBody(UpdateKeyReq), response: { 200: KeyView } },
    )
    .post("/keys/:id/revoke", async ({ params, request }) => keyView(await serviceOf(deps).revoke(params.id, principalOf(request))), { response: { 200: KeyView } })
    .delete("/keys/:id", async ({ params, request }) => keyView(await serviceOf(deps).remove(params.id, principalOf(request))), { response: { 200: KeyView } })
    .post(
      "/auth/cache/flush",
      async ({ body, request }) => {
        // FlushCacheReq: an absent body or module flushes every partition; extra members are ignored.
        const module = typeof body === "object" && body !== null && "module" in body ? (body as { module: unknown }).module : undefined;
        if (module !== undefined && module !== null && typeof module !== "string") throw new GatewayError("invalid_request", "/module: expected a string or null");
        const flush = () => ({ flushed: deps.authCache?.flush(module) ?? 0 });
        if (!deps.audit) return flush();
        return deps.audit.commit({ action: "auth.cache_flush", resource: `auth-cache:${module ?? "*"}`, principal: principalOf(request) }, () => ({ apply: flush }));
      },
      { detail: requestBody(FlushCacheReq, false), response: { 200: CacheFlushView } },
    );
