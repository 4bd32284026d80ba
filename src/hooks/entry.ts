// One running hook: its module (compiled in, or a plugin through the loader) and the instance created
// from its settings. Created off the request path; until the instance exists (or when it could not be
// made) the hook answers as "not loaded", and a gate then takes its on_error. Settings are checked
// against the module's settingsSchema before create() sees them.
import type { HookCfg } from "../config/schema.ts";
import type { Logger } from "../telemetry/logger.ts";
import { COMPILED_HOOKS } from "./compiled.ts";
import { settingsErrors } from "./settings-check.ts";
import type { HookInstance, HookModule, HookModuleLoader } from "./types.ts";

export const NOT_YET = "not loaded yet";

export class HookEntry {
  module: HookModule | undefined;
  instance: HookInstance | undefined;
  /** Why the hook cannot run (null once it runs). */
  failure: string | null = NOT_YET;
  private closed = false;
  readonly ready: Promise<void>;

  constructor(
    readonly name: string,
    readonly cfg: HookCfg,
    /** (source, settings) as one string: an entry is reused across snapshots while this is unchanged. */
    readonly key: string,
    loader: HookModuleLoader | undefined,
    logger: Logger,
  ) {
    this.ready = this.start(loader, logger).catch((error: unknown) => {
      this.failure = error instanceof Error ? error.message : String(error);
    });
  }

  private async start(loader: HookModuleLoader | undefined, logger: Logger): Promise<void> {
    const module = await moduleOf(this.cfg, loader);
    if (module.kind !== "hook") throw new Error(`module kind is ${String(module.kind)}, not hook`);
    const wrong = module.settingsSchema ? settingsErrors(module.settingsSchema, this.cfg.settings ?? {}) : [];
    if (wrong.length > 0) throw new Error(`settings do not match the hook's settingsSchema: ${wrong.join("; ")}`);
    const member = this.cfg.kind === "gate" ? "gate" : "tap";
    const log = logger.child({ hook: this.name });
    const ctx = { name: this.name, log: (level: "debug" | "info" | "warn" | "error", msg: string, fields?: Record<string, unknown>) => log[level](msg, fields) };
    const instance = await module.create(await resolveSecretRefs(this.cfg.settings ?? {}), ctx);
    if (typeof instance?.[member] !== "function") throw new Error(`the ${this.cfg.kind} instance has no ${member}() member`);
    this.module = module;
    if (this.closed) return void instance.close?.();
    this.instance = instance;
    this.failure = null;
  }

  close(): void {
    this.closed = true;
    const instance = this.instance;
    this.instance = undefined;
    try {
      void Promise.resolve(instance?.close?.()).catch(() => undefined);
    } catch {
      // A close that throws is the hook's problem; the hook is gone either way.
    }
  }
}

async function moduleOf(cfg: HookCfg, loader: HookModuleLoader | undefined): Promise<HookModule> {
  if (cfg.builtin !== undefined) {
    const module = COMPILED_HOOKS[cfg.builtin];
    if (!module) throw new Error(`no compiled-in hook ${cfg.builtin}`);
    return module;
  }
  const target = cfg.transport?.kind === "plugin" ? cfg.transport.target : undefined;
  if (!target) throw new Error("no plugin or builtin named");
  if (!loader) throw new Error(`plugin ${target} not loaded (no plugin loader in this process)`);
  return loader(target);
}

/** The settings with each `{env: NAME}` / `{file: path}` member replaced by the secret it names. */
export async function resolveSecretRefs(value: unknown): Promise<Record<string, unknown>> {
  return (await resolveValue(value)) as Record<string, unknown>;
}

async function resolveValue(value: unknown): Promise<unknown> {
  if (Array.isArray(value)) return Promise.all(value.map(resolveValue));
  if (typeof value !== "object" || value === null) return value;
  const keys = Object.keys(value);
  const bag = value as Record<string, unknown>;
  if (keys.length === 1 && keys[0] === "env" && typeof bag.env === "string") {
    const secret = process.env[bag.env];
    if (secret === undefined || secret === "") throw new Error(`settings: environment variable ${bag.env} is not set`);
    return secret;
  }
  if (keys.length === 1 && keys[0] === "file" && typeof bag.file === "string") return (await Bun.file(bag.file).text()).replace(/\r?\n$/, "");
  const out: Record<string, unknown> = {};
  for (const key of keys) out[key] = await resolveValue(bag[key]);
  return out;
}
