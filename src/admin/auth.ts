// GET /auth (the ingress chain) and GET /admin-auth (the admin chain).
import { jsonController } from "../http/elysia.ts";
import type { Snapshot } from "../config/snapshot.ts";
import type { AdminDeps } from "./deps.ts";
import { AdminAuthView, AuthView } from "./views.ts";

export function authView(snapshot: Snapshot): AuthView {
  return { chain: [...snapshot.auth.chain], upstream_credentials: snapshot.auth.upstreamCredentials, open: snapshot.auth.chain.length === 0 };
}

export const authController = (deps: AdminDeps) =>
  jsonController("admin.auth")
    .get("/auth", () => authView(deps.holder.current), { response: { 200: AuthView } })
    .get(
      "/admin-auth",
      () => {
        const modules = [...deps.holder.current.auth.adminChain];
        return { configured: modules.length > 0, modules };
      },
      { response: { 200: AdminAuthView } },
    );
