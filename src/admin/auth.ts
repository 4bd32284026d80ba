// GET /auth (the ingress chain), GET /admin-auth and PUT /admin-auth (the admin chain). A PUT is a config
// change like any other (new config_version, expected_version / If-Match, audited), refused when it
// would open the admin plane without `allow_open: true` or lock every caller out.
import { ADMIN_MODULES } from "../auth/admin-chain.ts";
import { requestBody } from "./openapi.ts";
import type { Snapshot } from "../config/snapshot.ts";
import { jsonController } from "../http/elysia.ts";
import { auditedChange, expectedVersion, refuseBody } from "./audited.ts";
import { lifecycleOf } from "./config-changes.ts";
import type { AdminDeps } from "./deps.ts";
import { shape } from "./pages.ts";
import { principalOf } from "./principal.ts";
import { AdminAuthPutBody, AdminAuthPutView, AdminAuthView, AuthView } from "./views.ts";

export function authView(snapshot: Snapshot): AuthView {
  return { chain: [...snapshot.auth.chain], upstream_credentials: snapshot.auth.upstreamCredentials, open: snapshot.auth.chain.length === 0 };
}

function adminAuthView(snapshot: Snapshot) {
  const modules = [...snapshot.auth.adminChain];
  return { configured: modules.length > 0, modules };
}

/** Why a chain may not be set, or undefined when it may. */
function unsafeChain(modules: readonly string[], allowOpen: boolean, snapshot: Snapshot): string | undefined {
  // An identity-provider instance is a module too; the config check then judges it (a forge, max_admin_scope: none).
  const instances = snapshot.identity.providers.map((p) => p.name);
  const unknown = modules.filter((m) => !(m in ADMIN_MODULES) && !instances.includes(m));
  if (unknown.length > 0) return `/modules: unknown admin auth module ${unknown.map((m) => JSON.stringify(m)).join(", ")} (this build has: ${[...Object.keys(ADMIN_MODULES), ...instances].join(", ")})`;
  if (new Set(modules).size !== modules.length) return "/modules: a module is named twice";
  if (modules.length === 0 && !allowOpen) return "/modules: [] opens the admin plane to anyone who can reach it (full authority); send allow_open: true to mean it";
  if (modules.length > 0 && modules.every((m) => m === "admin-tokens") && snapshot.auth.adminTokens.length === 0) {
    return "/modules: admin-tokens alone with no auth.admin_tokens configured would lock every caller out";
  }
  return undefined;
}

export const authController = (deps: AdminDeps) =>
  jsonController("admin.auth")
    .get("/auth", () => authView(deps.holder.current), { response: { 200: AuthView } })
    .get("/admin-auth", () => adminAuthView(deps.holder.current), { response: { 200: AdminAuthView } })
    .put(
      "/admin-auth",
      async ({ body, request }) => {
        const checked = shape<{ modules: string[]; allow_open?: boolean; expected_version?: number }>(AdminAuthPutBody, body);
        if (!checked.ok) return refuseBody(deps, request, "admin_auth.update", "admin_auth", checked.message);
        const { modules, allow_open = false } = checked.value;
        const unsafe = unsafeChain(modules, allow_open, deps.holder.current);
        if (unsafe) return refuseBody(deps, request, "admin_auth.update", "admin_auth", unsafe);
        const expected = expectedVersion(request, checked.value);
        const { snapshot } = await auditedChange(deps, request, "admin_auth.update", "admin_auth", () =>
          lifecycleOf(deps).edit((base) => ({ ...base, auth: { ...((base.auth as object | undefined) ?? {}), admin_auth: [...modules] } }), {
            principal: principalOf(request),
            summary: `admin_auth.update ${modules.join(",") || "(open)"}`,
            expectedVersion: expected,
          }),
        );
        return {
          ...adminAuthView(snapshot),
          applied: true,
          config_version: snapshot.version,
          note: modules.length === 0 ? "the admin plane is open (anonymous, full authority); live now, not written to disk" : "live now; not written to disk (the config file keeps its own auth.admin_auth)",
        };
      },
      { detail: requestBody(AdminAuthPutBody), response: { 200: AdminAuthPutView } },
    );

