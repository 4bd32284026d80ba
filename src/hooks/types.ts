// The hook module contract (design: hooks-plugins.md, "The module contract") and the seams between the
// three parts of the hooks feature: plugins (src/plugins: signed tarballs, loading an entry module), the
// hook runtime (src/hooks: instances, gates and taps on the request path) and the admin routes (src/admin:
// /hooks views, health, status, schema). Each part depends on these types, not on the others' code.
import type { Snapshot } from "../config/snapshot.ts";

/** A plugin reference as a HookCfg's `transport.target` writes it: `<publisher>/<name>` or `...@<version>`. */
export type PluginRef = string;

export interface HookContext {
  /** The hook's own name (the HookCfg's key). */
  readonly name: string;
  /** A log line under the hook's name; never pass a prompt or a settings value. */
  log(level: "debug" | "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>): void;
}

/** A hook module's default export (a plugin's entry, or a compiled-in hook). */
export interface HookModule {
  readonly kind: "hook";
  /** JSON Schema of the settings: GET /hooks/{name}/schema; settings are checked against it at register time. */
  readonly settingsSchema?: Record<string, unknown>;
  /** `settings` with secret references resolved. */
  create(settings: Record<string, unknown>, ctx: HookContext): HookInstance | Promise<HookInstance>;
}

export interface HookInstance {
  gate?(call: GateCall): GateDecision | Promise<GateDecision>;
  tap?(event: TapEvent): unknown;
  status?(): HookReportedStatus | Promise<HookReportedStatus>;
  close?(): unknown;
}

export interface GateCandidate {
  readonly lane: string;
  readonly provider: string;
  readonly model: string;
  readonly weight: number;
  readonly state: "closed" | "half_open" | "open";
}

export interface GatePrompt {
  readonly system: string | null;
  readonly messages: readonly { readonly role: string; readonly text: string }[];
}

/** What a gate is asked (plain JSON-safe object). `prompt` only with prompt ro/rw, `user` only with user ro. */
export interface GateCall {
  readonly stage: "request";
  readonly hook: string;
  readonly pool: string;
  /** As requested. */
  readonly model: string;
  readonly ingress_protocol: string;
  readonly stream: boolean;
  /** In config order. */
  readonly candidates: readonly GateCandidate[];
  readonly prompt?: GatePrompt;
  readonly user?: { readonly principal: string | null; readonly key_id: string | null; readonly group: string | null };
  readonly request_id: string;
}

export type GateDecision =
  | { readonly verb: "continue" }
  | { readonly verb: "abstain" }
  | { readonly verb: "reject"; readonly status: number; readonly message: string }
  | { readonly verb: "transform"; readonly prompt: { readonly system?: string | null; readonly messages: readonly { readonly role: string; readonly text: string }[] } }
  | { readonly verb: "route"; readonly order: readonly string[] };

export type TapStage = "request" | "candidate" | "routing" | "response";

/** What a tap is told; fire-and-forget. */
export interface TapEvent {
  readonly stage: TapStage;
  readonly hook: string;
  readonly pool: string;
  readonly model: string;
  readonly ingress_protocol: string;
  readonly request_id: string;
  /** candidate, routing, response: the lane tried / chosen / that answered. */
  readonly lane?: string;
  /** response: the answer's status, usage and duration. */
  readonly status?: number;
  readonly usage?: { readonly input: number; readonly output: number };
  readonly duration_ms?: number;
}

/** HookReportedStatus (spec) plus the hook's own metrics. */
export interface HookReportedStatus {
  readonly settings_keys: readonly string[];
  readonly settings_version: number;
  readonly metrics?: readonly Record<string, unknown>[];
}

/** Loads a `kind: hook` plugin's entry module (src/plugins); compiled-in hooks do not come through here. */
export type HookModuleLoader = (ref: PluginRef) => Promise<HookModule>;

/** What the admin routes ask the running hooks (implemented by the hook runtime). */
export interface HookRuntimeView {
  /** Loads and creates a change's new or changed hooks; `hooks.<name>: <reason>` for each that cannot be (refuse the change). */
  prepare(snapshot: Snapshot): Promise<string[]>;
  /** HookHealthView's reachable/detail: does the hook resolve to a loaded `kind: hook` module? */
  health(name: string): { readonly reachable: boolean; readonly detail: string | null };
  /** The instance's status() within `timeoutMs`, or undefined (no answer, no instance, or no status member). */
  reported(name: string, timeoutMs: number): Promise<HookReportedStatus | undefined>;
  /** The module's settingsSchema, or null when it has none (or the hook is not loaded). */
  schema(name: string): Record<string, unknown> | null;
  /** The hook's own counters for /status (e.g. events dropped). */
  metrics(name: string): readonly Record<string, unknown>[];
}
