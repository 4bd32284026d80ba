// GET /audit (newest first, cursor pages) and GET /audit/verify (the hash chain walked end to end).
import type { AuditLog } from "../governance/audit.ts";
import { jsonController } from "../http/elysia.ts";
import { GatewayError } from "../http/errors.ts";
import type { AdminDeps } from "./deps.ts";
import { decodeCursor, encodeCursor, pageLimit } from "./pages.ts";
import { AuditPageView, AuditVerifyView, PageQuery } from "./views.ts";

function auditOf(deps: AdminDeps): AuditLog {
  if (!deps.audit) throw new GatewayError("internal", "the audit log is not available");
  return deps.audit;
}

export const auditController = (deps: AdminDeps) =>
  jsonController("admin.audit")
    .get(
      "/audit",
      async ({ query }) => {
        const limit = pageLimit(query);
        if (!limit.ok) throw new GatewayError("invalid_request", limit.message);
        const before = decodeCursor(query, (v) => (Number.isInteger(v) && (v as number) > 0 ? (v as number) : undefined));
        const rows = await auditOf(deps).page(limit.limit + 1, before);
        const items = rows.slice(0, limit.limit);
        return { items, next_cursor: rows.length > limit.limit ? encodeCursor(items[items.length - 1]!.seq) : null };
      },
      { query: PageQuery, response: { 200: AuditPageView } },
    )
    .get("/audit/verify", () => auditOf(deps).verify(), { response: { 200: AuditVerifyView } });
