// Config mutations through the admin API: the expected version (body member or If-Match), the change
// itself, and its audit record, applied or rejected (spec: every attempted admin mutation is audited).
// The entry (and a settings change's overlay file) commits first; the config goes live only after.
import type { Plan, Planned, Refused, StagedFile } from "../config/lifecycle.ts";
import type { Change } from "../governance/types.ts";
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

/**
 * Plans one config change in the audit log's turn, commits its audit entry (with its overlay file, if
 * any), then makes it live and answers its plan; a refusal is audited as rejected and thrown as the envelope.
 */
export function auditedChange<T extends Planned>(deps: AdminDeps, request: Request, action: string, resource: string, plan: () => T): Promise<Extract<T, Plan>> {
  return auditedChangeBy(deps, principalOf(request), action, resource, plan);
}

/** auditedChange for a change no admin request made (SIGHUP): `principal` names who did. */
export async function auditedChangeBy<T extends Planned>(deps: AdminDeps, principal: string, action: string, resource: string, plan: () => T): Promise<Extract<T, Plan>> {
  let last: T | undefined;
  const toChange = async (): Promise<Change<Extract<T, Plan>>> => {
    // A fleet's expected version is the fleet's: what other replicas committed is taken first. When it
    // cannot be (the database away, a version this replica cannot load), nothing is planned or applied.
    await deps.fleetConfig?.catchUp().catch((error: unknown) => {
      throw new GatewayError("internal", `not applied: the fleet's newer config versions could not be taken (${error instanceof Error ? error.message : String(error)})`);
    });
    const planned = plan();
    last = planned;
    if (!planned.ok) throw refusal(planned);
    // A hook that cannot be loaded and created refuses the change, before anything is stored.
    const unloadable = await deps.hookRuntime.prepare(planned.snapshot);
    if (unloadable.length > 0) throw new GatewayError("invalid_request", unloadable.join("; "));
    let staged: StagedFile | undefined;
    return {
      stage: planned.overlayFile && (async () => void (staged = await planned.overlayFile!())),
      write: () => {
        staged?.install();
        planned.write?.();
      },
      undo: async () => staged?.discard(),
      apply: () => (planned.swap(), planned as Extract<T, Plan>),
    };
  };
  if (deps.audit) {
    // A fleet: another replica may commit the version this change planned to be between its catch-up and
    // its commit (the store refuses the second: VersionTaken). A change that named an expected version
    // has lost (409); one that did not is planned again on the newest version, so both apply, distinctly.
    for (let attempt = 1; ; attempt++) {
      try {
        return await deps.audit.commit({ action, resource, principal }, toChange);
      } catch (error) {
        const retry = error instanceof GatewayError && error.code === "version_conflict" && error.message.includes("another replica") && !(last?.ok && last.expected) && attempt < 3;
        if (!retry) throw error;
      }
    }
  }
  // Apps built by tests without an audit log: the same steps, nothing to record.
  const change = await toChange();
  await change.stage?.();
  change.write?.();
  return change.apply();
}

/** A body the route's schema refuses: audited as rejected, then the envelope names the member. */
export async function refuseBody(deps: AdminDeps, request: Request, action: string, resource: string, message: string): Promise<never> {
  await audit(deps, request, action, resource, "rejected");
  throw new GatewayError("invalid_request", message);
}
