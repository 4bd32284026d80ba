// The seams between governance's parts: keys (mint, state, the ingress `keys` module) need groups for
// the mint rules and both append audit records; enforcement reads a key's group off the principal.

/** Outcome of the spec's mint rules for `POST /keys` (bind, 400 without parent, 409 on mismatch, provision). */
export type MintGroupResult =
  | { readonly ok: true; readonly provisioned: boolean }
  | { readonly ok: false; readonly code: "invalid_request" | "conflict"; readonly message: string };

export interface GroupResolver {
  /** Whether a group of that name exists (config file or API). */
  exists(name: string): boolean;
  /**
   * Mint rules 1-3 for a key that names `group`: an existing group binds (a given `parent` must equal its
   * actual parent, else conflict); a missing one without `parent` is invalid_request; with `parent` it is
   * created as a leaf with the nearest ancestor's child_default, through POST /groups' validation, and
   * audited as `group.create` under `principal`.
   */
  resolveForMint(group: string, parent: string | null, principal: string): Promise<MintGroupResult>;
}

/** One admin mutation, applied or rejected, as the audit log records it (seq, ts and hashes are the log's). */
export interface AuditRecord {
  /** `noun.verb`, e.g. `key.create`, `group.update`. */
  readonly action: string;
  /** e.g. `key:<id>`, `group:<name>`. */
  readonly resource: string;
  readonly outcome: "applied" | "rejected";
  /** `admin`, a key id, or `anonymous`. */
  readonly principal: string;
  /** Which of the principal's credentials acted (never a secret); by default the admin request's own. */
  readonly credential?: string;
}

/** An attempted mutation before its outcome is known. */
export type AuditAttempt = Omit<AuditRecord, "outcome">;

/** What one audited mutation changes, in the order AuditLog.commit runs it. */
export interface Change<T> {
  /** Durable work outside the store, before its transaction (an overlay file written beside its target). */
  readonly stage?: () => Promise<void>;
  /** Store writes, run synchronously inside the transaction that appends the audit entry. */
  readonly write?: () => void;
  /** Undoes `stage` and any file `write` put in place, when the transaction fails. */
  readonly undo?: () => Promise<void>;
  /** The in-memory change, once the transaction has committed, and the caller's answer. Must not throw. */
  readonly apply: () => T;
}

export interface AuditSink {
  record(entry: AuditRecord): Promise<void>;
  /** A mutation and its `applied` entry committed together, or its `rejected` entry if `plan` throws. */
  commit<T>(attempt: AuditAttempt, plan: () => Change<T> | Promise<Change<T>>): Promise<T>;
}
