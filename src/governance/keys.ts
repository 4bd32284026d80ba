// Virtual keys: mint, read, change, revoke, delete. Each mutation's store write and its audit entry
// commit in one transaction (AuditLog.commit), and only then is the in-memory registry changed (before
// the call answers, so the data plane sees it on the next request); a refused one is audited as
// `rejected` and changes nothing, and one whose entry cannot be stored changes nothing either.
import type { Secret } from "../config/secret.ts";
import { GatewayError, type ErrorCode } from "../http/errors.ts";
import type { KeyCursor, KeyRecord, KeyStore } from "../store/keys.ts";
import { keyState, type KeyRegistry } from "./key-registry.ts";
import { awsCredential, mintToken, tokenHash } from "./token.ts";
import type { AuditAttempt, AuditSink, Change, GroupResolver } from "./types.ts";

/** A checked POST /keys body, expiry resolved to an instant. */
export interface NewKey {
  readonly name: string;
  readonly allowedPools: readonly string[] | null;
  /** Unix seconds. */
  readonly expiresAt: number;
  readonly group: string | null;
  readonly parent: string | null;
  readonly issueAwsCredential: boolean;
  readonly labels: Readonly<Record<string, string>>;
  /** A derived id (the token exchange's, governance/token.ts exchangedKeyId); else a random one. */
  readonly id?: string;
}

/** A checked PATCH /keys/{id} body: a member present is set (labels already `{}` for a clear). */
export interface KeyChanges {
  readonly name?: string;
  readonly enabled?: boolean;
  readonly allowedPools?: readonly string[] | null;
  readonly labels?: Readonly<Record<string, string>>;
  readonly group?: string | null;
}

export interface MintedKey {
  readonly record: KeyRecord;
  /** Shown once; nothing keeps it. */
  readonly token: string;
  readonly groupProvisioned: boolean;
  readonly aws?: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

export interface KeyServiceDeps {
  readonly store: KeyStore;
  readonly registry: KeyRegistry;
  readonly audit: AuditSink;
  /** The mint rules' groups; absent = no groups exist, so naming one is refused. */
  readonly groups?: GroupResolver;
  /** Read per call, so a config apply that changes `auth.signing_key` is followed. */
  readonly signingKey: () => Secret | undefined;
  /** Epoch milliseconds. */
  readonly now: () => number;
  readonly newId?: () => string;
}

const randomKeyId = () => `key_${Buffer.from(crypto.getRandomValues(new Uint8Array(12))).toString("hex")}`;

export class KeyService {
  constructor(private readonly deps: KeyServiceDeps) {}

  /** Loads every stored key into the registry (boot). */
  async load(): Promise<number> {
    const records = await this.deps.store.all();
    this.deps.registry.load(records);
    return records.length;
  }

  /** Reloads these keys from the store into the registry (another replica changed them). */
  async refresh(ids: readonly string[]): Promise<void> {
    for (const record of await this.deps.store.byIds(ids)) this.deps.registry.put(record);
  }

  async create(input: NewKey, principal: string): Promise<MintedKey> {
    const signingKey = this.deps.signingKey();
    if (signingKey === undefined) return this.refuse("key.create", "key", principal, "invalid_request", "auth.signing_key is not configured, so no key can be minted");
    let groupProvisioned = false;
    if (input.group !== null) {
      const groups = this.deps.groups;
      if (!groups) return this.refuse("key.create", "key", principal, "invalid_request", `/group: group ${JSON.stringify(input.group)} does not exist`);
      const resolved = await groups.resolveForMint(input.group, input.parent, principal);
      if (!resolved.ok) return this.refuse("key.create", "key", principal, resolved.code, resolved.message);
      groupProvisioned = resolved.provisioned;
    }
    const id = input.id ?? (this.deps.newId ?? randomKeyId)();
    const secret = signingKey.reveal();
    const token = mintToken({ kid: id, sub: input.name, exp: input.expiresAt }, secret);
    const aws = input.issueAwsCredential ? awsCredential(id, secret) : undefined;
    const record: KeyRecord = {
      id,
      name: input.name,
      subject: input.name,
      tokenHash: tokenHash(token),
      allowedPools: input.allowedPools,
      group: input.group,
      labels: input.labels,
      enabled: true,
      createdAt: this.nowSecs(),
      expiresAt: input.expiresAt,
      revokedAt: null,
      deletedAt: null,
      awsAccessKeyId: aws?.accessKeyId ?? null,
    };
    const minted: MintedKey = { record, token, groupProvisioned, ...(aws && { aws }) };
    return this.deps.audit.commit(this.attempt("key.create", id, principal), () => {
      // The group may have been deleted while the key was minted.
      if (input.group !== null && !this.deps.groups?.exists(input.group)) throw new GatewayError("conflict", `group ${input.group} was deleted while the key was being created`);
      if (this.deps.registry.get(id)) throw new GatewayError("conflict", `key ${id} already exists`);
      return { write: () => this.deps.store.insert(record), apply: () => (this.deps.registry.put(record), minted) };
    });
  }

  /** A key by id; tombstoned ones only when asked for. */
  get(id: string, includeTombstoned = false): KeyRecord {
    const record = this.deps.registry.get(id);
    if (!record || (record.deletedAt !== null && !includeTombstoned)) throw new GatewayError("not_found", `no key ${JSON.stringify(id)}`);
    return record;
  }

  async page(limit: number, after: KeyCursor | undefined, includeTombstoned: boolean): Promise<{ items: KeyRecord[]; next: KeyCursor | null }> {
    // From memory, which holds every key (a store that is down does not stop the list); one more than
    // asked says whether another page exists.
    const rows = this.deps.registry.page(limit + 1, after, includeTombstoned);
    const items = rows.slice(0, limit);
    const last = items.at(-1);
    return { items, next: rows.length > limit && last ? { createdAt: last.createdAt, id: last.id } : null };
  }

  async update(id: string, changes: KeyChanges, principal: string): Promise<KeyRecord> {
    // Checked inside the commit's turn, so a concurrent revoke cannot be undone by this change.
    return this.deps.audit.commit(this.attempt("key.update", id, principal), () => {
      const current = this.existing(id, true);
      const state = keyState(current);
      if (state === "revoked" || state === "tombstoned") throw new GatewayError("conflict", `key ${id} is ${state} and cannot be changed`);
      if (changes.group !== undefined && changes.group !== null && !this.deps.groups?.exists(changes.group)) {
        throw new GatewayError("invalid_request", `/group: group ${JSON.stringify(changes.group)} does not exist`);
      }
      return this.replace({
        ...current,
        ...(changes.name !== undefined && { name: changes.name }),
        ...(changes.enabled !== undefined && { enabled: changes.enabled }),
        ...(changes.allowedPools !== undefined && { allowedPools: changes.allowedPools }),
        ...(changes.labels !== undefined && { labels: changes.labels }),
        ...(changes.group !== undefined && { group: changes.group }),
      });
    });
  }

  /** Idempotent: a revoked key answers as it is. */
  async revoke(id: string, principal: string): Promise<KeyRecord> {
    return this.deps.audit.commit(this.attempt("key.revoke", id, principal), () => {
      const current = this.existing(id, true);
      return current.revokedAt !== null ? { apply: () => current } : this.replace({ ...current, revokedAt: this.nowSecs() });
    });
  }

  /** Tombstones: the key is refused for good and its token hash dropped; the row stays for history. */
  async remove(id: string, principal: string): Promise<KeyRecord> {
    return this.deps.audit.commit(this.attempt("key.delete", id, principal), () => {
      const current = this.existing(id);
      return this.replace({ ...current, deletedAt: this.nowSecs(), tokenHash: "" });
    });
  }

  private replace(record: KeyRecord): Change<KeyRecord> {
    return { write: () => this.deps.store.update(record), apply: () => (this.deps.registry.put(record), record) };
  }

  private existing(id: string, includeTombstoned = false): KeyRecord {
    const record = this.deps.registry.get(id);
    if (!record || (record.deletedAt !== null && !includeTombstoned)) throw new GatewayError("not_found", `no key ${JSON.stringify(id)}`);
    return record;
  }

  /** Audits a refused mutation, then throws the answer for it. */
  async refuse(action: string, id: string, principal: string, code: ErrorCode, message: string): Promise<never> {
    await this.audit(action, id, "rejected", principal);
    throw new GatewayError(code, message);
  }

  private audit(action: string, id: string, outcome: "applied" | "rejected", principal: string): Promise<void> {
    return this.deps.audit.record({ ...this.attempt(action, id, principal), outcome });
  }

  private attempt(action: string, id: string, principal: string): AuditAttempt {
    return { action, resource: id === "key" ? "key" : `key:${id}`, principal };
  }

  private nowSecs(): number {
    return Math.floor(this.deps.now() / 1000);
  }
}
