// Which admin requests are mutations (scope `full`, audited) and which are reads (scope `read-only`):
// one rule for the guard (admin/index.ts) and the OpenAPI document's `x-scope` (admin/openapi.ts).

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
/** POSTs that change nothing (dry runs), open to read-only principals; paths below the admin prefix. */
const DRY_RUNS = new Set(["/config/validate", "/plugins/inspect"]);

/** `path` is below the admin prefix (`/config/apply`, not `/api/v1/admin/config/apply`). */
export const isMutation = (method: string, path: string): boolean => !READ_METHODS.has(method) && !DRY_RUNS.has(path);
