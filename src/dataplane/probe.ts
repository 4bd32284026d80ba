// The active health probe of one lane: a one-token request in the lane's own protocol, with the
// provider's own key (a billable call, as the spec says). Any 2xx answer is health.
import type { ConfigHolder } from "../config/snapshot.ts";
import type { IrRequest } from "../ir/index.ts";
import { adapterFor } from "../protocols/registry.ts";
import type { LaneProbe } from "../routing/health.ts";
import { readAnswer } from "../transport/answer.ts";
import { callProvider, ownKeyHeaders } from "./upstream-call.ts";

export function laneProbe(holder: ConfigHolder): LaneProbe {
  return async (lane, timeoutMs) => {
    const egress = adapterFor(lane.provider.protocol);
    if (!egress) return false;
    const ping: IrRequest = { model: lane.name, system: [], messages: [{ role: "user", content: [{ type: "text", text: "ping" }] }], tools: [], sampling: { maxTokens: 1 }, stream: false };
    const encoded = egress.encodeRequest(ping, lane.upstreamModel);
    const upstream = { path: encoded.path, body: JSON.stringify(encoded.body), whole: true };
    const snapshot = holder.current;
    const signal = AbortSignal.timeout(timeoutMs);
    const outcome = await callProvider(snapshot, lane.provider, upstream, ownKeyHeaders(egress, lane.provider), signal, true);
    if (!outcome.ok) return false;
    // Read (and so free the connection) within the same cap as any answer read whole.
    const read = await readAnswer(outcome.answer, { maxBytes: snapshot.limits.maxUpstreamResponseBytes, deadline: Infinity, now: Date.now, clientSignal: signal });
    return read.ok && outcome.answer.ok;
  };
}
