// Compiled-in `http-gate`: a policy written in any language. The gate call is POSTed as JSON to
// settings.url (with settings.headers, secret references resolved) and the JSON answer is the decision;
// a non-2xx answer, an answer past MAX_ANSWER_BYTES, nested past MAX_JSON_DEPTH or not JSON is an error
// (on_error applies).
// As a tap it POSTs each event the same way (its answer is read and ignored).
import { boundedText } from "../http/bounded-body.ts";
import { jsonTextTooDeep, MAX_JSON_DEPTH } from "../http/json-depth.ts";
import type { GateCall, HookModule, TapEvent } from "./types.ts";

export const MAX_ANSWER_BYTES = 64 * 1024;
/** A call the gate stopped waiting for (timeout_ms) is abandoned here at the latest, so a hung server holds no sockets. */
export const CALL_ABANDON_MS = 10_000;

export function httpGateSettingsProblems(settings: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (typeof settings.url !== "string" || !/^https?:\/\/[^\s]+$/.test(settings.url)) problems.push("url: an http(s) URL");
  const headers = settings.headers;
  if (headers !== undefined && (typeof headers !== "object" || headers === null || Array.isArray(headers))) problems.push("headers: a map of header name -> value (or secret reference)");
  return problems;
}

export const httpGate: HookModule = {
  kind: "hook",
  settingsSchema: {
    type: "object",
    required: ["url"],
    properties: { url: { type: "string" }, headers: { type: "object", additionalProperties: { type: "string" } } },
  },
  create(settings) {
    const problems = httpGateSettingsProblems(settings);
    if (problems.length > 0) throw new Error(problems.join("; "));
    const url = settings.url as string;
    const headers = { ...((settings.headers ?? {}) as Record<string, string>), "content-type": "application/json" };
    return {
      async gate(call: GateCall) {
        const answer = await fetch(url, { method: "POST", headers, body: JSON.stringify(call), signal: AbortSignal.timeout(CALL_ABANDON_MS) });
        if (answer.status < 200 || answer.status > 299) {
          void answer.body?.cancel();
          throw new Error(`policy server answered ${answer.status}`);
        }
        const text = await boundedText(answer, MAX_ANSWER_BYTES, "policy answer");
        // The policy server is read like an upstream: bounded in size above, in nesting here.
        if (jsonTextTooDeep(text)) throw new Error(`policy answer nests JSON deeper than ${MAX_JSON_DEPTH} levels`);
        return JSON.parse(text) as never;
      },
      async tap(event: TapEvent) {
        const answer = await fetch(url, { method: "POST", headers, body: JSON.stringify(event), signal: AbortSignal.timeout(CALL_ABANDON_MS) });
        void answer.body?.cancel();
      },
      status: () => ({ settings_keys: Object.keys(settings).sort(), settings_version: 0 }),
    };
  },
};
