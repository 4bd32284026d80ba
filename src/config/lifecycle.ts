// The config's life after boot: API applies, rollbacks, reloads from disk and the settings overlay, each
// a new snapshot swapped whole (config_version +1, process-local), with the last N versions retained for
// history, diff and rollback. Every change is validated exactly as boot validates. A change is planned
// (checked and loaded) here and swapped in by its plan's `swap`, which the admin layer calls only once
// the change's audit entry (and the overlay file of a settings change) has committed; plans run one at a
// time in the audit log's turn, and `swap` refuses a plan the config has moved on from, so two concurrent
// changes holding the same expected version can never both win.
//
// What is live: effective = base (file, or the last API apply/rollback) + overlay (PUT /config/settings),
// except the boot-scoped members below, which stay as the process booted until a restart (sockets, TLS,
// the store and the upstream connection pools are built once). The overlay file keeps them for the next
// boot, and views name them in `reload_to_apply`.
import { Concealed } from "./interpolate.ts";
import { loadConfigTree, parseConfigText, type LoadContext, type LoadResult, type ParseResult } from "./load.ts";
import type { ConfigHolder, Snapshot } from "./snapshot.ts";
import { sourceText } from "./source.ts";

export type ConfigTree = Record<string, unknown>;

export interface ConfigVersionRecord {
  readonly version: number;
  /** Unix seconds of commit. */
  readonly ts: number;
  readonly principal: string;
  readonly summary: string;
  /** The base tree of this version (without the overlay): what a rollback restores. */
  readonly base: ConfigTree;
  /** The overlay over it at this version (GET /config/source shows the two merged). */
  readonly overlay: ConfigTree;
  readonly snapshot: Snapshot;
  /**
   * HookDesiredStatus.settings_version of each hook at this version: bumped by each PUT of the hook and by
   * any other change of its settings; never reused in this process, deletes and rollbacks included.
   */
  readonly hookSettingsVersions: Readonly<Record<string, number>>;
}

export interface Mutation {
  readonly principal: string;
  readonly summary: string;
  readonly expectedVersion?: number;
  /** PUT /hooks/{name}: the hook whose settings_version this change bumps even when its settings are unchanged. */
  readonly registersHook?: string;
}

export type Refused = { readonly ok: false; readonly code: "version_conflict" | "invalid_request" | "not_found"; readonly message: string; readonly errors?: readonly string[] };

/** A file written beside its target, put in place inside the change's transaction, restored if that fails. */
export interface StagedFile {
  /** Synchronous: runs inside the audit entry's transaction. */
  install(): void;
  /** Removes the staged file, or puts the previous one back when it was installed. */
  discard(): Promise<void>;
}

/** A checked change, not yet live. */
export interface Plan {
  readonly ok: true;
  readonly snapshot: Snapshot;
  /** Boot-scoped members a settings change set (what its answer names in reload_to_apply). */
  readonly reloadToApply?: string[];
  /** Boot-scoped members a settings change set that the command line overrides (--listen ...). */
  readonly setByCommandLine?: string[];
  /** The overlay file of a settings change, to stage before the commit and install within it. */
  readonly overlayFile?: () => Promise<StagedFile>;
  /** Makes it live: the new snapshot, base and overlay, and a retained version. Throws if the config moved on. */
  swap(): void;
  /** A fleet's: stores the version, synchronously, inside the change's audit transaction (config/fleet.ts). */
  write?(): void;
  /** The change named an expected version (a fleet retries one that lost a race only when it did not). */
  readonly expected?: boolean;
}
export type Planned = Plan | Refused;

/** Settable root sections of PUT /config/settings (spec ConfigSettingsView). */
export const SETTINGS_SECTIONS = ["rate_card", "per_request_fee", "security", "health", "routing", "limits", "advanced", "listen", "admin_listen", "tls", "admin_tls", "admin_require_mtls", "store"] as const;

/** Members that take effect on restart only, as dotted paths (a section name covers the whole section). */
/** Sections a replica of a fleet always takes from its own file (its sockets, TLS and store); boot-scoped too. */
export const PER_REPLICA_SECTIONS = ["listen", "admin_listen", "tls", "admin_tls", "admin_require_mtls", "store"] as const;

export const BOOT_SCOPED = [
  ...PER_REPLICA_SECTIONS,
  "limits.upstream_request_timeout_secs",
  "limits.pool_max_idle_per_host",
  "limits.pool_idle_timeout_secs",
  "limits.max_inbound_concurrent",
  "advanced.response_headers",
] as const;

export interface LifecycleDeps {
  readonly holder: ConfigHolder;
  readonly env: LoadContext["env"];
  /** Epoch milliseconds. */
  readonly now: () => number;
  /** The base tree the process booted from (file or embedded default), before the overlay. */
  readonly bootBase: ConfigTree;
  /** The overlay read at boot (already part of the boot snapshot). */
  readonly bootOverlay: ConfigTree;
  /** Values the boot config took from the environment: the base holds them, no error may show them. */
  readonly bootConcealed?: Concealed;
  /** Re-reads the config file (POST /config/reload); undefined for the embedded default. */
  readonly readFile?: () => { ok: true; text: string } | { ok: false; error: string };
  /** Writes the overlay (PUT /config/settings) beside the overlay file, to be installed at the commit. */
  readonly stageOverlay: (overlay: ConfigTree) => Promise<StagedFile>;
  /** What the command line sets (--listen ...: config/listen.ts), over every effective tree, as at boot. */
  readonly commandLine?: ConfigTree;
  /** A fleet's: each new version, as it commits (inside its audit transaction). */
  readonly versionWritten?: (version: VersionContent) => void;
}

/** A version as a fleet stores it: who, what, and the base and overlay that make it. */
export interface VersionContent {
  readonly version: number;
  /** Unix seconds. */
  readonly ts: number;
  readonly principal: string;
  readonly summary: string;
  readonly base: ConfigTree;
  readonly overlay: ConfigTree;
}

const clone = <T>(value: T): T => structuredClone(value);
const isObject = (value: unknown): value is ConfigTree => typeof value === "object" && value !== null && !Array.isArray(value);

/** JSON with object members in name order: equal trees written in another order compare equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isObject(value)) return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  return JSON.stringify(value) ?? "null";
}
export const sameTree = (a: unknown, b: unknown): boolean => canonical(a) === canonical(b);

/** `overlay` over `base`: objects merge member by member, anything else (lists too) replaces. */
export function mergeTrees(base: ConfigTree, overlay: ConfigTree): ConfigTree {
  const out: ConfigTree = clone(base);
  for (const [key, value] of Object.entries(overlay)) {
    out[key] = isObject(value) && isObject(out[key]) ? mergeTrees(out[key] as ConfigTree, value) : clone(value);
  }
  return out;
}

function getPath(tree: ConfigTree, path: string): unknown {
  let node: unknown = tree;
  for (const part of path.split(".")) node = isObject(node) ? node[part] : undefined;
  return node;
}

function setPath(tree: ConfigTree, path: string, value: unknown): void {
  const parts = path.split(".");
  let node = tree;
  for (const part of parts.slice(0, -1)) {
    if (!isObject(node[part])) {
      if (value === undefined) return;
      node[part] = {};
    }
    node = node[part] as ConfigTree;
  }
  const last = parts[parts.length - 1]!;
  if (value === undefined) delete node[last];
  else node[last] = clone(value);
}

/** The boot-scoped paths an overlay sets (what a settings PUT must name in reload_to_apply). */
export function bootScopedIn(overlay: ConfigTree): string[] {
  return BOOT_SCOPED.filter((path) => getPath(overlay, path) !== undefined);
}

export class ConfigLifecycle {
  readonly #deps: LifecycleDeps;
  /** Oldest first. */
  #versions: ConfigVersionRecord[] = [];
  #base: ConfigTree;
  #overlay: ConfigTree;
  /** Boot-scoped values as booted: every later snapshot keeps them. */
  readonly #pinned: ConfigTree;
  /** Every value a base ever took from the environment (boot, applies, reloads): kept out of all errors. */
  readonly #concealed = new Concealed();
  /** The last settings_version each hook name had: a deleted and re-registered hook counts on from it. */
  readonly #hookVersionHigh = new Map<string, number>();

  constructor(deps: LifecycleDeps) {
    this.#deps = deps;
    this.#base = clone(deps.bootBase);
    this.#overlay = clone(deps.bootOverlay);
    this.#concealed.addAll(deps.bootConcealed);
    const booted = this.#effective(this.#base, this.#overlay);
    this.#pinned = {};
    for (const path of BOOT_SCOPED) setPath(this.#pinned, path, getPath(booted, path));
    this.#retain(deps.holder.current, this.#base, this.#overlay, { principal: "boot", summary: "config.boot" });
  }

  get current(): Snapshot {
    return this.#deps.holder.current;
  }

  get overlay(): ConfigTree {
    return clone(this.#overlay);
  }

  /** Retained versions, oldest first. */
  versions(): readonly ConfigVersionRecord[] {
    return this.#versions;
  }

  version(v: number): ConfigVersionRecord | undefined {
    return this.#versions.find((r) => r.version === v);
  }

  /** POST /config/apply: a whole new base (`concealed`: what its text took from the environment). */
  apply(tree: unknown, m: Mutation, concealed?: Concealed): Planned {
    this.#concealed.addAll(concealed);
    if (!isObject(tree)) return { ok: false, code: "invalid_request", message: "config: expected a mapping of config sections" };
    return this.#plan(tree, this.#overlay, m);
  }

  /** A change to the current base (PUT /admin-auth and other one-section edits). */
  edit(change: (base: ConfigTree) => ConfigTree, m: Mutation): Planned {
    return this.#plan(change(clone(this.#base)), this.#overlay, m);
  }

  /** POST /config/rollback: the retained version's base, with today's overlay, as a new version. */
  rollback(version: number, m: Mutation): Planned {
    const record = this.version(version);
    if (!record) return { ok: false, code: "not_found", message: `config version ${version} is not retained (kept: ${this.#versions.map((r) => r.version).join(", ")})` };
    return this.#plan(record.base, this.#overlay, m);
  }

  /** POST /config/reload: the file as it is now, with the overlay. */
  reload(m: Mutation): Planned {
    const read = this.#deps.readFile?.();
    if (read && !read.ok) return { ok: false, code: "invalid_request", message: read.error };
    let base = this.#deps.bootBase;
    if (read) {
      const parsed = parseConfigText(read.text, this.current.source, this.#deps.env);
      if (!parsed.ok) return { ok: false, code: "invalid_request", message: `config file is invalid: ${parsed.errors.join("; ")}`, errors: parsed.errors };
      this.#concealed.addAll(parsed.concealed);
      if (!isObject(parsed.tree)) return { ok: false, code: "invalid_request", message: "config file: expected a mapping of config sections" };
      base = parsed.tree;
    }
    return this.#plan(base, this.#overlay, m);
  }

  /**
   * PUT /config/settings: `patch` merged into the overlay (`null` removes a member, so the file's value
   * shows again), validated over the current base. The plan carries the overlay file, so the file, the
   * audit entry and the live snapshot change together.
   */
  putSettings(patch: ConfigTree, m: Mutation): Planned {
    const overlay = withoutNulls(mergeTrees(this.#overlay, patch));
    const planned = this.#plan(this.#base, overlay, m);
    if (!planned.ok) return planned;
    // A member the command line sets stays as it says after a restart too: no restart would apply it.
    const commandLine = this.#deps.commandLine ?? {};
    const touched = bootScopedIn(patch);
    const setByCommandLine = touched.filter((path) => getPath(commandLine, path) !== undefined);
    const reloadToApply = touched.filter((path) => !setByCommandLine.includes(path));
    return { ...planned, reloadToApply, setByCommandLine, overlayFile: () => this.#deps.stageOverlay(overlay) };
  }

  /**
   * A version another replica committed (config/fleet.ts), made this replica's: checked as boot checks
   * it, boot-scoped members kept as this replica booted; no expected version, no lock (it is already the
   * fleet's). `concealed`: what its base took from this replica's environment.
   */
  adopt(content: VersionContent, concealed?: Concealed): Planned {
    this.#concealed.addAll(concealed);
    const loaded = this.#load(this.#effective(content.base, content.overlay), content.version);
    if (!loaded.ok) return loaded;
    const { snapshot } = loaded;
    return {
      ok: true,
      snapshot,
      swap: () => {
        if (this.current.version > snapshot.version) throw new Error(`config is at version ${this.current.version}, past version ${snapshot.version}`);
        this.#deps.holder.swap(snapshot);
        this.#base = clone(content.base);
        this.#overlay = clone(content.overlay);
        this.#retain(snapshot, this.#base, this.#overlay, content);
      },
    };
  }

  /** Forgets the retained versions: a replica joining a fleet keeps the fleet's, not its own boot's. */
  forgetVersions(): void {
    this.#versions = [];
  }

  /** The base and overlay of the current version, as a fleet stores its first (version 0). */
  currentContent(): VersionContent {
    const record = this.#versions.at(-1)!;
    return { version: this.current.version, ts: record.ts, principal: record.principal, summary: record.summary, base: this.#base, overlay: this.#overlay };
  }

  /** JSON of `tree` with every value taken from the environment written back as its `${VAR}`, and a literal `${` escaped. */
  storedText(tree: ConfigTree): string {
    return this.#written(JSON.stringify(tree));
  }

  /** GET /config/source: the version's base with its overlay as YAML, as written, no secret in it (config/source.ts). */
  source(record: ConfigVersionRecord): string {
    return sourceText(mergeTrees(record.base, record.overlay), this.#written);
  }

  /** A text as it was written: a literal `${` escaped, each value taken from the environment as its `${VAR}`. */
  // A function, not "$${": in a replacement string `$$` stands for one `$`, which left every `${` unescaped.
  readonly #written = (text: string): string => this.#concealed.scrub(text.replaceAll("${", () => "$${"));

  /** The tree a process with this command line runs: base, the overlay over it, the command line over both. */
  #effective(base: ConfigTree, overlay: ConfigTree): ConfigTree {
    const merged = mergeTrees(base, overlay);
    return this.#deps.commandLine ? mergeTrees(merged, this.#deps.commandLine) : merged;
  }

  #check(m: Mutation): Refused | undefined {
    if (this.current.config.config?.locked) return { ok: false, code: "invalid_request", message: "config is locked (config.locked: true): admin config mutations are refused" };
    if (m.expectedVersion !== undefined && m.expectedVersion !== this.current.version) {
      return { ok: false, code: "version_conflict", message: `expected config_version ${m.expectedVersion}, current is ${this.current.version}` };
    }
    return undefined;
  }

  #load(effective: ConfigTree, version = this.current.version + 1): { ok: true; snapshot: Snapshot } | Refused {
    // Checked as given first, boot-scoped members included: that is what the next boot will load, and a
    // value that would stop it (a bad listen address in the overlay) must be refused now, not then.
    const asGiven = loadConfigTree(effective, this.current.source, { env: this.#deps.env, version, concealed: this.#concealed });
    if (!asGiven.ok) return { ok: false, code: "invalid_request", message: `config invalid: ${asGiven.errors.join("; ")}`, errors: asGiven.errors };
    // Boot-scoped members stay as booted: the running sockets, TLS, store and pools are those.
    const live = clone(effective);
    for (const path of BOOT_SCOPED) setPath(live, path, getPath(this.#pinned, path));
    const loaded = loadConfigTree(live, this.current.source, { env: this.#deps.env, version, concealed: this.#concealed });
    if (!loaded.ok) return { ok: false, code: "invalid_request", message: `config invalid: ${loaded.errors.join("; ")}`, errors: loaded.errors };
    return loaded;
  }

  #plan(base: ConfigTree, overlay: ConfigTree, m: Mutation): Planned {
    const refused = this.#check(m);
    if (refused) return refused;
    const loaded = this.#load(this.#effective(base, overlay));
    if (!loaded.ok) return loaded;
    const { snapshot } = loaded;
    const written = this.#deps.versionWritten;
    // One reading of the clock: the version a fleet stores and the one retained here say the same second.
    const ts = Math.floor(this.#deps.now() / 1000);
    return {
      ok: true,
      snapshot,
      expected: m.expectedVersion !== undefined,
      write: written && (() => written({ version: snapshot.version, ts, principal: m.principal, summary: m.summary, base, overlay })),
      swap: () => {
        if (this.current.version + 1 !== snapshot.version) throw new Error(`config moved on to version ${this.current.version} while version ${snapshot.version} was being committed`);
        this.#deps.holder.swap(snapshot);
        this.#base = base === this.#base ? base : clone(base);
        this.#overlay = overlay;
        this.#retain(snapshot, this.#base, overlay, { ...m, ts });
      },
    };
  }

  #retain(snapshot: Snapshot, base: ConfigTree, overlay: ConfigTree, m: Pick<Mutation, "principal" | "summary" | "registersHook"> & { readonly ts?: number }): void {
    const previous = this.#versions.at(-1);
    const hookSettingsVersions: Record<string, number> = {};
    for (const [name, hook] of Object.entries(snapshot.config.hooks ?? {})) {
      const before = previous?.snapshot.config.hooks?.[name];
      const same = before !== undefined && m.registersHook !== name && sameTree(before.settings ?? {}, hook.settings ?? {});
      const kept = same ? previous?.hookSettingsVersions[name] : undefined;
      hookSettingsVersions[name] = kept ?? (this.#hookVersionHigh.get(name) ?? 0) + 1;
      this.#hookVersionHigh.set(name, hookSettingsVersions[name]);
    }
    const { principal, summary } = m;
    this.#versions.push({ version: snapshot.version, ts: m.ts ?? Math.floor(this.#deps.now() / 1000), principal, summary, base, overlay, snapshot, hookSettingsVersions });
    const keep = snapshot.config.advanced?.config_versions_retained ?? 100;
    if (this.#versions.length > keep) this.#versions = this.#versions.slice(this.#versions.length - keep);
  }
}

function withoutNulls(tree: ConfigTree): ConfigTree {
  const out: ConfigTree = {};
  for (const [key, value] of Object.entries(tree)) {
    if (value === null) continue;
    const inner = isObject(value) ? withoutNulls(value) : value;
    if (isObject(inner) && Object.keys(inner).length === 0) continue;
    out[key] = inner;
  }
  return out;
}

/** Boot: the file's tree with the overlay and the command line over it, loaded as the first snapshot (version 0). */
export function loadBoot(parsed: ParseResult, source: string, overlay: ConfigTree, env: LoadContext["env"], commandLine: ConfigTree = {}): { result: LoadResult; base: ConfigTree; concealed?: Concealed } {
  if (!parsed.ok) return { result: parsed, base: {} };
  const { concealed } = parsed;
  if (!isObject(parsed.tree)) return { result: loadConfigTree(parsed.tree, source, { env, concealed }), base: {}, concealed };
  return { result: loadConfigTree(mergeTrees(mergeTrees(parsed.tree, overlay), commandLine), source, { env, concealed }), base: parsed.tree, concealed };
}
