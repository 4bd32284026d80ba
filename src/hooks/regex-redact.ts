// Compiled-in `regex-redact`: a prompt `rw` gate that replaces every match of settings.patterns in the
// system text and the messages' texts. Patterns are compiled once, when the instance is created.
import type { GateCall, GateDecision, HookModule } from "./types.ts";

/** The problems of a settings bag (config load refuses them, naming the member). */
export function redactSettingsProblems(settings: Record<string, unknown>): string[] {
  const { patterns, replacement } = settings;
  if (!Array.isArray(patterns) || patterns.length === 0) return ["patterns: a list of at least one regular expression"];
  const problems = patterns.flatMap((p, i) => {
    if (typeof p !== "string") return [`patterns[${i}]: must be a string`];
    try {
      new RegExp(p, "g");
      return [];
    } catch (error) {
      return [`patterns[${i}]: not a valid regular expression (${(error as Error).message})`];
    }
  });
  if (replacement !== undefined && typeof replacement !== "string") problems.push("replacement: must be a string");
  return problems;
}

export const regexRedact: HookModule = {
  kind: "hook",
  settingsSchema: {
    type: "object",
    required: ["patterns"],
    properties: { patterns: { type: "array", items: { type: "string" }, minItems: 1 }, replacement: { type: "string", default: "[redacted]" } },
  },
  create(settings) {
    const problems = redactSettingsProblems(settings);
    if (problems.length > 0) throw new Error(problems.join("; "));
    const patterns = (settings.patterns as string[]).map((p) => new RegExp(p, "g"));
    const replacement = typeof settings.replacement === "string" ? settings.replacement : "[redacted]";
    const redact = (text: string) => patterns.reduce((t, re) => t.replace(re, replacement), text);
    return {
      gate(call: GateCall): GateDecision {
        const prompt = call.prompt;
        if (!prompt) return { verb: "abstain" };
        let changed = false;
        const messages = prompt.messages.map((m) => {
          const text = redact(m.text);
          changed ||= text !== m.text;
          return { role: m.role, text };
        });
        const system = prompt.system === null ? null : redact(prompt.system);
        changed ||= system !== prompt.system;
        return changed ? { verb: "transform", prompt: { system, messages } } : { verb: "continue" };
      },
      status: () => ({ settings_keys: Object.keys(settings).sort(), settings_version: 0 }),
    };
  },
};
