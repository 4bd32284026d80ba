// The admin principal of a request, as the guard in admin/index.ts admitted it, for the audit records
// the controllers write. Kept beside the request object, so no controller re-authenticates.
import type { AdminPrincipal } from "../auth/admin-chain.ts";

const principals = new WeakMap<Request, AdminPrincipal>();

export function rememberPrincipal(request: Request, principal: AdminPrincipal): void {
  principals.set(request, principal);
}

/** The audit principal: `admin`, `anonymous`, or another module's id. */
export function principalOf(request: Request): string {
  return principals.get(request)?.id ?? "anonymous";
}

/** The scope a request was admitted with; `read-only` when none was recorded (the safe reading). */
export function scopeOf(request: Request): AdminPrincipal["scope"] {
  return principals.get(request)?.scope ?? "read-only";
}
