// Groups: the merged tree of config-file groups and API-created ones (kept in the store), their
// validation, the admin verbs (each committed with its audit entry, memory changed only after), and the
// mint rules keys need (GroupResolver). Config-file groups are read-only through the API: the file is
// their source of truth, and an API edit would be undone by the next reload. A config group wins over an API group of the same name (logged at rebuild).
import { GROUP_NAME_PATTERN } from "../config/schema.ts";
import type { ConfigHolder, Snapshot } from "../config/snapshot.ts";
import { GatewayError } from "../http/errors.ts";
import type { GroupRecord, GroupStore } from "../store/groups.ts";
import type { Logger } from "../telemetry/logger.ts";
import { isWindowLimit, type GroupNode, type Limit } from "./limits.ts";
import type { AuditSink, Change, GroupResolver, MintGroupResult } from "./types.ts";

/** POST /groups (gaps.md GroupCfg). */
export interface GroupCreate {
  readonly name: string;
  readonly parent?: string | null;
  readonly enabled?: boolean;
  readonly limits?: readonly Limit[];
  readonly child_default?: readonly Limit[] | null;
}

/** PATCH /groups/{name}: absent = unchanged, null = clear, value = set. */
export interface GroupPatch {
  readonly enabled?: boolean | null;
  readonly limits?: readonly Limit[] | null;
  readonly child_default?: readonly Limit[] | null;
}

export interface GroupServiceDeps {
  readonly holder: ConfigHolder;
  readonly store: GroupStore;
  readonly audit: AuditSink;
  readonly logger: Logger;
  /** Epoch milliseconds. */
  readonly now: () => number;
  /** Whether any live key is bound to the group (DELETE is refused while one is). */
  readonly hasBoundKeys: (name: string) => boolean;
}

export class GroupService implements GroupResolver {
  readonly #deps: GroupServiceDeps;
  readonly #api = new Map<string, GroupRecord>();
  #builtFrom: Snapshot | undefined;
  #tree: ReadonlyMap<string, GroupNode> = new Map();

  constructor(deps: GroupServiceDeps) {
    this.#deps = deps;
  }

  /** The API groups from the store, replacing those held (boot, and a reload of another replica's changes). */
  async load(): Promise<void> {
    const records = await this.#deps.store.all();
    this.#api.clear();
    for (const record of records) this.#api.set(record.name, record);
    this.#builtFrom = undefined;
  }

  /** The merged tree; the same map until the config is swapped or an API group changes. */
  tree(): ReadonlyMap<string, GroupNode> {
    const snapshot = this.#deps.holder.current;
    if (snapshot !== this.#builtFrom) this.rebuild(snapshot);
    return this.#tree;
  }

  private rebuild(snapshot: Snapshot): void {
    const tree = new Map<string, GroupNode>();
    for (const [name, g] of Object.entries(snapshot.config.groups ?? {})) {
      tree.set(name, { name, parent: g.parent ?? null, enabled: g.enabled ?? true, limits: g.limits ?? [], child_default: g.child_default ?? null, source: "config" });
    }
    for (const record of this.#api.values()) {
      if (tree.has(record.name)) {
        this.#deps.logger.warn("an API-created group is shadowed by the config-file group of the same name", { group: record.name });
        continue;
      }
      tree.set(record.name, { name: record.name, parent: record.parent, enabled: record.enabled, limits: record.limits, child_default: record.child_default, source: "api" });
    }
    this.#tree = tree;
    this.#builtFrom = snapshot;
  }

  private changed(): void {
    this.#builtFrom = undefined;
  }

  get(name: string): GroupNode | undefined {
    return this.tree().get(name);
  }

  exists(name: string): boolean {
    return this.tree().has(name);
  }

  /** The group and every group below it. */
  subtree(name: string): string[] {
    const tree = this.tree();
    const out: string[] = [];
    for (const node of tree.values()) {
      const seen = new Set<string>();
      for (let at: GroupNode | undefined = node; at && !seen.has(at.name); at = at.parent === null ? undefined : tree.get(at.parent)) {
        if (at.name === name) {
          out.push(node.name);
          break;
        }
        seen.add(at.name);
      }
    }
    return out;
  }

  async create(body: GroupCreate, principal: string): Promise<GroupNode> {
    return this.audited("group.create", body.name, principal, () => {
      if (this.exists(body.name)) throw new GatewayError("conflict", `group ${body.name} already exists`);
      const parent = body.parent ?? null;
      if (parent !== null && !this.exists(parent)) throw new GatewayError("invalid_request", `parent: unknown group ${JSON.stringify(parent)}`);
      this.checkLimits(body.limits ?? [], "limits");
      this.checkLimits(body.child_default ?? [], "child_default");
      const record: GroupRecord = { name: body.name, parent, enabled: body.enabled ?? true, limits: body.limits ?? [], child_default: body.child_default ?? null, createdAt: Math.floor(this.#deps.now() / 1000) };
      return { write: () => this.#deps.store.insert(record), apply: () => this.put(record) };
    });
  }

  async update(name: string, patch: GroupPatch, principal: string): Promise<GroupNode> {
    return this.audited("group.update", name, principal, () => {
      const record = this.apiRecord(name);
      if (patch.enabled === null) throw new GatewayError("invalid_request", "enabled: cannot be null (true or false)");
      if (patch.limits) this.checkLimits(patch.limits, "limits");
      if (patch.child_default) this.checkLimits(patch.child_default, "child_default");
      const next: GroupRecord = {
        ...record,
        enabled: patch.enabled ?? record.enabled,
        limits: patch.limits === undefined ? record.limits : (patch.limits ?? []),
        child_default: patch.child_default === undefined ? record.child_default : patch.child_default,
      };
      return { write: () => this.#deps.store.update(next), apply: () => this.put(next) };
    });
  }

  async delete(name: string, principal: string): Promise<void> {
    await this.audited("group.delete", name, principal, () => {
      this.apiRecord(name);
      const children = [...this.tree().values()].filter((node) => node.parent === name).map((node) => node.name);
      if (children.length > 0) throw new GatewayError("conflict", `group ${name} has child groups (${children.join(", ")}); delete them first`);
      if (this.#deps.hasBoundKeys(name)) throw new GatewayError("conflict", `group ${name} has keys bound to it; rebind or delete them first`);
      return {
        write: () => this.#deps.store.delete(name),
        apply: () => {
          this.#api.delete(name);
          this.changed();
        },
      };
    });
  }

  async resolveForMint(group: string, parent: string | null, principal: string): Promise<MintGroupResult> {
    const existing = this.get(group);
    if (existing) {
      if (parent !== null && existing.parent !== parent) {
        return { ok: false, code: "conflict", message: `group ${group} exists under ${existing.parent === null ? "no parent" : `parent ${existing.parent}`}, not ${parent}` };
      }
      return { ok: true, provisioned: false };
    }
    if (parent === null) return { ok: false, code: "invalid_request", message: `group: unknown group ${JSON.stringify(group)}; name a parent to provision it` };
    if (!NAME.test(group)) return { ok: false, code: "invalid_request", message: `group: ${JSON.stringify(group)} is not a valid group name` };
    try {
      await this.create({ name: group, parent, limits: this.inheritedDefault(parent) ?? [] }, principal);
      return { ok: true, provisioned: true };
    } catch (error) {
      // A group that could not be stored with its audit entry is the store's fault (500), not the caller's.
      if (!(error instanceof GatewayError) || error.code === "internal") throw error;
      return { ok: false, code: error.code === "conflict" ? "conflict" : "invalid_request", message: error.message };
    }
  }

  /** The nearest child_default from `parent` upward: what a provisioned leaf starts with. */
  private inheritedDefault(parent: string): readonly Limit[] | null {
    const tree = this.tree();
    const seen = new Set<string>();
    for (let at = tree.get(parent); at && !seen.has(at.name); at = at.parent === null ? undefined : tree.get(at.parent)) {
      if (at.child_default !== null) return at.child_default;
      seen.add(at.name);
    }
    return null;
  }

  private apiRecord(name: string): GroupRecord {
    const node = this.get(name);
    if (!node) throw new GatewayError("not_found", `no group ${name}`);
    const record = this.#api.get(name);
    if (node.source === "config" || !record) {
      throw new GatewayError("conflict", `group ${name} is defined in the config file and is read-only through the API; change it in the config (or POST /config/apply)`);
    }
    return record;
  }

  /** In memory, once the store holds it. */
  private put(record: GroupRecord): GroupNode {
    this.#api.set(record.name, record);
    this.changed();
    return this.get(record.name)!;
  }

  private checkLimits(limits: readonly Limit[], at: string): void {
    const pools = this.#deps.holder.current.pools;
    limits.forEach((limit, i) => {
      if (limit.pool != null && !pools.has(limit.pool)) throw new GatewayError("invalid_request", `/${at}/${i}/pool: unknown pool ${JSON.stringify(limit.pool)}`);
      if (isWindowLimit(limit) && [limit.requests, limit.tokens, limit.budget_cents].every((v) => v === undefined || v === null)) {
        throw new GatewayError("invalid_request", `/${at}/${i}: a windowed limit needs requests, tokens or budget_cents`);
      }
    });
  }

  /** Records a mutation refused before it reached the service (a body that fails its schema). */
  async refuse(action: string, name: string, principal: string, _error: GatewayError): Promise<void> {
    await this.#deps.audit.record({ action, resource: `group:${name}`, principal, outcome: "rejected" });
  }

  /**
   * Checks and plans a mutation in its turn among audited mutations (so two mints provisioning the same
   * leaf cannot both create it), then commits it with its audit entry (spec: every attempt is audited).
   */
  private audited<T>(action: string, name: string, principal: string, plan: () => Change<T>): Promise<T> {
    return this.#deps.audit.commit({ action, resource: `group:${name}`, principal }, plan);
  }
}

const NAME = new RegExp(GROUP_NAME_PATTERN);
