// Metering views: GET /keys/{id}/usage (KeyMeteringView), GET /groups/{name}/usage (GroupUsageView),
// GET /usage/keys?from=&to= (KeyUsageView rows, epoch seconds, `to` exclusive), and the console's
// GET /usage/series?by=&range= and GET /usage/today. All are derived from the ledger at read time, priced
// with the current rate card.
import { Type } from "@sinclair/typebox";
import type { UsageService } from "../governance/usage.ts";
import { jsonController } from "../http/elysia.ts";
import { GatewayError } from "../http/errors.ts";
import type { AdminDeps } from "./deps.ts";
import { USAGE_RANGES } from "../governance/usage-series.ts";
import { GroupUsageView, KeyMeteringView, KeyUsagePageView, UsageSeriesView, UsageTodayView } from "./group-views.ts";

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
    .get("/usage/keys", ({ query }) => usageOf(deps).keyUsage(epochSecs(query, "from"), epochSecs(query, "to")), { query: UsageRangeQuery, response: { 200: KeyUsagePageView } })
    .get("/usage/series", ({ query }) => usageOf(deps).series(query.by ?? "model", query.range ?? "24h", query.key_id), { query: UsageSeriesQuery, response: { 200: UsageSeriesView } })
    .get("/usage/today", () => usageOf(deps).today(), { response: { 200: UsageTodayView } });

/** GET /usage/keys: epoch seconds, `to` exclusive; checked by epochSecs. */
const UsageRangeQuery = Type.Object({
  from: Type.Optional(Type.String({ description: "epoch seconds, inclusive" })),
  to: Type.Optional(Type.String({ description: "epoch seconds, exclusive" })),
});

/** The description is what a refusal says it expected: "query /by: expected one of model, key, group, got ...". */
const oneOf = <T extends string>(values: readonly T[]) => Type.Optional(Type.Union(values.map((v) => Type.Literal(v)), { description: `one of ${values.join(", ")}` }));

/** GET /usage/series: what a series is named by (default model) and the span ending now (default 24h). */
const UsageSeriesQuery = Type.Object({
  by: oneOf(["model", "key", "group"] as const),
  range: oneOf(Object.keys(USAGE_RANGES) as (keyof typeof USAGE_RANGES)[]),
  key_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "only this key's usage (one key's usage over time)" })),
});
