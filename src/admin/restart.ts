// POST /restart: 202 at once, then the process drains like on SIGTERM and comes back with the same
// binary, arguments and environment, so restart-only settings (reload_to_apply) take effect.
import { Type } from "@sinclair/typebox";
import { jsonController } from "../http/elysia.ts";
import { GatewayError } from "../http/errors.ts";
import { audit } from "./audited.ts";
import type { AdminDeps } from "./deps.ts";
import { principalOf } from "./principal.ts";

export const RestartView = Type.Object({ restarting: Type.Boolean() });

export const restartController = (deps: AdminDeps) =>
  jsonController("admin.restart").post(
    "/restart",
    async ({ request, set }) => {
      if (!deps.restart) {
        await audit(deps, request, "gateway.restart", "gateway", "rejected");
        throw new GatewayError("internal", "this process cannot restart itself");
      }
      // Scheduled only once its entry is stored: an entry that cannot be is a 500 and no restart.
      // After this answer is on its way: the drain waits for in-flight requests, this one included.
      const schedule = () => void setTimeout(deps.restart!, 50);
      if (deps.audit) await deps.audit.commit({ action: "gateway.restart", resource: "gateway", principal: principalOf(request) }, () => ({ apply: schedule }));
      else schedule();
      set.status = 202;
      return { restarting: true };
    },
    { response: { 202: RestartView } },
  );
