// Hook plugins compiled into this binary (InfoView.build.hook_plugins), used with `builtin: <name>` in a
// HookCfg. Signed plugins loaded at run time are listed by GET /plugins, not here.
import { httpGate, httpGateSettingsProblems } from "./http-gate.ts";
import { redactSettingsProblems, regexRedact } from "./regex-redact.ts";
import type { HookModule } from "./types.ts";

export const COMPILED_HOOKS: Readonly<Record<string, HookModule>> = { "http-gate": httpGate, "regex-redact": regexRedact };

/** Settings problems a compiled-in hook's instance would refuse: checked at config load, so a bad one is never stored. */
export const COMPILED_SETTINGS_PROBLEMS: Readonly<Record<string, (settings: Record<string, unknown>) => string[]>> = {
  "http-gate": httpGateSettingsProblems,
  "regex-redact": redactSettingsProblems,
};

export const COMPILED_HOOK_PLUGINS: readonly string[] = Object.keys(COMPILED_HOOKS);
