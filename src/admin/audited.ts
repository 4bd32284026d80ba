// Config mutations through the admin API: the expected version (body member or If-Match), the change
// itself, and its audit record, applied or rejected (spec: every attempted admin mutation is audited).
import type { Applied, Refused } from "../config/lifecycle.ts";
import { GatewayError } from "../http/errors.ts";
import type { AdminDeps } from "./deps.ts";
import { principalOf } from "./principal.ts";

export async function audit(deps: AdminDeps, request: Request, action: string, resource: string, outcome: "applied" | "rejected"): Promise<void> {
  await deps.audit?.record({ action, resource, outcome, principal: principalOf(request) });
}

/** gaps.md "Optimistic concurrency": `expected_version` in the body, else `If-Match: <config_version>`. */
export function expectedVersion(request: Request, body: unknown): number | undefined {
  const member = typeof body === "object" && body !== null ? (body as { expected_version?: unknown }).expected_version : undefined;
  if (typeof member === "number") return member;
  const header = request.headers.get("if-match");
  if (header === null) return undefined;
  const text = header.trim().replace(/^W\//, "").replace(/^"(.*)"$/, "$1");
  if (!/^[0-9]{1,15}$/.test(text)) throw new GatewayError("invalid_request", `If-Match: expected a config_version (an integer), got ${JSON.stringify(header)}`);
  return Number(text);
}

export function refusal(refused: Refused): GatewayError {
  return new GatewayError(refused.code, refused.message);
}

/** Runs one config change, audits it, and answers its snapshot or throws its refusal as the envelope. */
export async function auditedChange<T extends Applied>(deps: AdminDeps, request: Request, action: string, resource: string, change: () => T | Promise<T>): Promise<Extract<T, { ok: true }>> {
  let result: T;
  try {
    result = await change();
  } catch (error) {
    await audit(deps, request, action, resource, "rejected");
    throw error;
  }
  await audit(deps, request, action, resource, result.ok ? "applied" : "rejected");
  if (!result.ok) throw refusal(result);
  return result as Extract<T, { ok: true }>;
}

/** A body the route's schema refuses: audited as rejected, then the envelope names the member. */
export async function refuseBody(deps: AdminDeps, request: Request, action: string, resource: string, message: string): Promise<never> {
  await audit(deps, request, action, resource, "rejected");
  throw new GatewayError("invalid_request", message);
}
