// Metering views: GET /keys/{id}/usage (KeyMeteringView), GET /groups/{name}/usage (GroupUsageView) and
// GET /usage/keys?from=&to= (KeyUsageView rows, epoch seconds, `to` exclusive). All are derived from
// the ledger at read time, priced with the current rate card.
import { Type } from "@sinclair/typebox";
import type { UsageService } from "../governance/usage.ts";
import { jsonController } from "../http/elysia.ts";
import { GatewayError } from "../http/errors.ts";
import type { AdminDeps } from "./deps.ts";
import { GroupUsageView, KeyMeteringView, KeyUsagePageView } from "./group-views.ts";

function usageOf(deps: AdminDeps): UsageService {
  if (!deps.usage) throw new GatewayError("internal", "metering is not available");
  return deps.usage;
}

/** An optional epoch-seconds query parameter. */
function epochSecs(query: Record<string, string | undefined>, name: string): number | undefined {
  const text = query[name];
  if (text === undefined || text === "") return undefined;
  if (!/^[0-9]{1,12}$/.test(text)) throw new GatewayError("invalid_request", `${name}: expected epoch seconds, got ${JSON.stringify(text)}`);
  return Number(text);
}

export const usageController = (deps: AdminDeps) =>
  jsonController("admin.usage")
    .get("/keys/:id/usage", ({ params }) => usageOf(deps).keyMetering(params.id), { response: { 200: KeyMeteringView } })
    .get("/groups/:name/usage", ({ params }) => usageOf(deps).groupUsage(params.name), { response: { 200: GroupUsageView } })
    .get("/usage/keys", ({ query }) => usageOf(deps).keyUsage(epochSecs(query, "from"), epochSecs(query, "to")), { query: UsageRangeQuery, response: { 200: KeyUsagePageView } });

/** GET /usage/keys: epoch seconds, `to` exclusive; checked by epochSecs. */
const UsageRangeQuery = Type.Object({
  from: Type.Optional(Type.String({ description: "epoch seconds, inclusive" })),
  to: Type.Optional(Type.String({ description: "epoch seconds, exclusive" })),
});
