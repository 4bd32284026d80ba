// The resolved config: built once per load or apply, deep-frozen, and swapped whole. A request reads
// `holder.current` once at its start and keeps that snapshot to its end.
import type { PoolSettings } from "../transport/upstream.ts";
import type { ResolvedProvider } from "../providers/provider.ts";
import type { Lane } from "../routing/lane.ts";
import type { BreakerSettings, FailoverSettings, Pool } from "../routing/pool.ts";
import type { GatewayConfig } from "./schema.ts";
import type { Secret } from "./secret.ts";
import type { IdentityProvider } from "../identity/settings.ts";
import type { TeamConfig } from "../identity/team.ts";

export interface ListenerSettings {
  readonly hostname: string;
  readonly port: number;
  readonly tls: { readonly cert: string; readonly key: string; readonly ca: string | undefined } | undefined;
}

export interface AdminToken {
  readonly name: string;
  readonly token: Secret;
  readonly scope: "read-only" | "full";
}

export interface ClientToken {
  readonly name: string;
  readonly token: Secret;
}

export type StoreSettings =
  | { readonly module: "sqlite"; readonly path: string }
  | { readonly module: "postgres"; readonly url: Secret; readonly schema: string; readonly poolSize: number; readonly connectTimeoutSecs: number; readonly spoolPath: string };

/** An `export:` entry as the exporters are built from it: header values that were references are Secrets. */
export interface ExportEntry {
  readonly name: string;
  readonly module: string;
  readonly streams: readonly ("metrics" | "traces" | "logs")[];
  readonly settings: Readonly<Record<string, unknown>>;
}

export interface Snapshot {
  /** config_version: 0 at boot, +1 per API apply (process-local). */
  readonly version: number;
  /** Where it came from: a file path, or "embedded default". */
  readonly source: string;
  /** The validated tree with every default filled in. Secret references stay references here. */
  readonly config: Readonly<GatewayConfig>;
  readonly providers: ReadonlyMap<string, ResolvedProvider>;
  readonly lanes: ReadonlyMap<string, Lane>;
  /** Named pools and the implicit one-lane pools of bare model aliases. */
  readonly pools: ReadonlyMap<string, Pool>;
  /** Pools whose name has a `*`, in config order: they serve the model names they match (see poolFor). */
  readonly poolPatterns: readonly { readonly pattern: RegExp; readonly pool: Pool }[];
  /** Every name a caller may send as a model (the keys of `pools`), sorted, and listed once for the unknown-model answer. */
  readonly modelNames: { readonly names: readonly string[]; readonly listed: string };
  /** The `routing:` defaults: the settings of the lane-default cell direct routes use. */
  readonly laneDefaults: { readonly breaker: BreakerSettings; readonly failover: FailoverSettings };
  readonly globalHooks: readonly string[];
  readonly listeners: { readonly data: ListenerSettings; readonly admin: ListenerSettings };
  readonly auth: {
    readonly chain: readonly string[];
    readonly adminChain: readonly string[];
    readonly adminTokens: readonly AdminToken[];
    /** The `tokens` module's static client tokens. */
    readonly tokens: readonly ClientToken[];
    /** Signs and verifies virtual keys (the `keys` module); unset = no keys can be minted or admitted. */
    readonly signingKey: Secret | undefined;
    readonly upstreamCredentials: "own" | "passthrough";
  };
  /** `store:` as the boot opens it (boot-scoped): sqlite's file as configured, or the fleet's PostgreSQL. */
  readonly store: StoreSettings;
  /** The `export:` entries; the running exporters are built from them at boot and by POST /plugins/reload. */
  readonly export: readonly ExportEntry[];
  /** Identity providers in map order, and what the token exchange reads (design/identity.md). */
  readonly identity: {
    readonly providers: readonly IdentityProvider[];
    /** Without a trailing slash; the base of the sign-in callback and the exchange's base_url. */
    readonly publicUrl: string | undefined;
    readonly keyTtlSecs: number;
    readonly bindings: TeamConfig;
  };
  /** The `limits` the upstream client reads on every call, in the units it uses. */
  readonly limits: { readonly upstreamTimeoutMs: number; readonly pool: PoolSettings; readonly bodyReadTimeoutMs: number; readonly maxUpstreamResponseBytes: number };
  /** InfoView.config_persistence: not locked, and the overlay's directory is writable. */
  readonly configPersistence: boolean;
  /** Things an operator should hear about at boot; they do not stop it. */
  readonly warnings: readonly string[];
}

/** Most names an unknown-model answer lists before "and N more". */
export const LISTED_NAMES = 20;

/** `a`, `b`, `c`, or the first 20 and "and N more". */
export function nameList(names: readonly string[]): string {
  const shown = names.slice(0, LISTED_NAMES).map((n) => `\`${n}\``).join(", ");
  return names.length > LISTED_NAMES ? `${shown} and ${names.length - LISTED_NAMES} more` : shown;
}

function deepFreeze<T>(value: T, seen = new WeakSet<object>()): T {
  if (typeof value !== "object" || value === null || seen.has(value)) return value;
  seen.add(value);
  if (value instanceof Map) for (const v of value.values()) deepFreeze(v, seen);
  else for (const v of Object.values(value)) deepFreeze(v, seen);
  return Object.freeze(value);
}

export function freezeSnapshot(snapshot: Snapshot): Snapshot {
  return deepFreeze(snapshot);
}

/**
 * The pool a requested model name reaches: the pool or alias of exactly that name, else the first pool
 * (in config order) whose `*` pattern matches it. Patterns are tried only when no exact name exists.
 */
export function poolFor(snapshot: Snapshot, model: string): Pool | undefined {
  const exact = snapshot.pools.get(model);
  if (exact !== undefined || snapshot.poolPatterns.length === 0) return exact;
  return snapshot.poolPatterns.find((p) => p.pattern.test(model))?.pool;
}

/** Holds the live snapshot; a swap is one reference assignment, so readers never see a half-built config. */
export class ConfigHolder {
  #current: Snapshot;
  constructor(initial: Snapshot) {
    this.#current = initial;
  }
  get current(): Snapshot {
    return this.#current;
  }
  swap(next: Snapshot): Snapshot {
    const previous = this.#current;
    this.#current = next;
    for (const listener of this.#listeners) listener(next);
    return previous;
  }
  /** Told each new snapshot as it goes live (the hook runtime builds its instances then, not on a request). */
  onSwap(listener: (next: Snapshot) => void): void {
    this.#listeners.push(listener);
  }
  readonly #listeners: ((next: Snapshot) => void)[] = [];
}
