// Same protocol both sides: the client's body goes up with only the model rewritten, and the upstream's
// bytes come back unchanged, so members the IR does not model survive both ways. Usage is still read
// (non-stream) or tapped from the stream on the side, for metering.
import { mergeUsage, ZERO_USAGE, type IrUsage } from "../ir/index.ts";
import type { ProtocolAdapter } from "../protocols/types.ts";
import { relayHeaders } from "../transport/upstream.ts";
import type { Exchange } from "./pipeline.ts";
import { noAnswerError, sendUpstream } from "./upstream-call.ts";

/** Client headers a vendor's SDK sends that change the upstream's behaviour, forwarded as they are. */
const FORWARDED_HEADERS: Partial<Record<string, readonly string[]>> = {
  anthropic: ["anthropic-version", "anthropic-beta"],
};

function forwarded(adapter: ProtocolAdapter, request: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS[adapter.name] ?? []) {
    const value = request.headers.get(name);
    if (value !== null) out[name] = value;
  }
  return out;
}

export async function passThrough(exchange: Exchange): Promise<Response> {
  const { ingress, lane, body, request, deps, context } = exchange;
  const stream = context.pathStream ?? body.stream === true;
  const upstreamBody = JSON.stringify(ingress.rewriteModel(body, lane.upstreamModel));
  const outcome = await sendUpstream(exchange, ingress, { path: ingress.upstreamPath(lane.upstreamModel, stream), body: upstreamBody, headers: forwarded(ingress, request) });
  if (!outcome.ok) return ingress.encodeError(noAnswerError(outcome));
  const upstream = outcome.response;
  const headers = relayHeaders(upstream.headers);
  const record = (usage: IrUsage) => deps.logger.debug("usage", { model: exchange.model, lane: lane.name, ...usage });

  if (!upstream.ok || !(upstream.headers.get("content-type") ?? "").includes("text/event-stream") || !upstream.body) {
    const text = await upstream.text();
    if (upstream.ok) {
      try {
        const usage = ingress.usageFromResponse(JSON.parse(text));
        if (usage) record(mergeUsage(ZERO_USAGE, usage));
      } catch {
        exchange.warn("upstream response is not JSON; no usage recorded");
      }
    }
    return new Response(text, { status: upstream.status, headers });
  }
  return new Response(tapUsage(upstream.body, ingress, record), { status: upstream.status, headers });
}

/**
 * Passes the bytes through untouched and feeds a copy to the protocol's stream decoder to read usage.
 * Backpressure follows the client; the decoder sees each chunk as it passes.
 */
function tapUsage(body: ReadableStream<Uint8Array>, adapter: ProtocolAdapter, record: (usage: IrUsage) => void): ReadableStream<Uint8Array> {
  const decoder = adapter.createStreamDecoder();
  const writer = decoder.writable.getWriter();
  let usage = ZERO_USAGE;
  void decoder.readable
    .pipeTo(
      new WritableStream({
        write(part) {
          if (part.type === "usage") usage = mergeUsage(usage, part.usage);
        },
        close() {
          record(usage);
        },
      }),
    )
    .catch(() => {});
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        controller.enqueue(chunk);
        writer.write(chunk).catch(() => {});
      },
      flush() {
        writer.close().catch(() => {});
      },
    }),
  );
}

