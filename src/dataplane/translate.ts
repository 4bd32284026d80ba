// Another protocol upstream: IR request -> egress wire, upstream answer -> IR -> ingress wire. Streams
// are translated event by event as they arrive (bytes -> IR parts -> bytes); nothing is buffered whole.
import { irError, type IrError, type IrRequest } from "../ir/index.ts";
import { adapterFor } from "../protocols/registry.ts";
import { renameTools, restoreContent, restorePart, type ToolRenaming } from "../protocols/tool-names.ts";
import type { ProtocolAdapter, StreamWriter } from "../protocols/types.ts";
import type { Exchange } from "./pipeline.ts";
import { noAnswerError, sendUpstream } from "./upstream-call.ts";

export async function translate(exchange: Exchange, request: IrRequest): Promise<Response> {
  const { ingress, lane, warn } = exchange;
  const egress = adapterFor(lane.provider.protocol);
  if (!egress) return ingress.encodeError(irError("api_error", `provider ${lane.provider.name} speaks ${lane.provider.protocol}, which this build cannot call`, { status: 501 }));
  const renaming = renameTools(request, egress.toolNames, warn);
  const encoded = egress.encodeRequest(renaming?.request ?? request, lane.upstreamModel);
  encoded.warnings.forEach(warn);
  const outcome = await sendUpstream(exchange, egress, { path: encoded.path, body: JSON.stringify(encoded.body) });
  if (!outcome.ok) return ingress.encodeError(noAnswerError(outcome));
  const upstream = outcome.response;
  if (!upstream.ok) return ingress.encodeError(egress.decodeError(upstream.status, await upstream.text(), upstream.headers));

  if (request.stream) {
    if (!upstream.body) {
      return ingress.encodeError(irError("api_error", "upstream sent an empty stream", { status: 502 }));
    }
    return new Response(translatedStream(upstream.body, egress, ingress, request, warn, lane.upstreamModel, renaming), { headers: ingress.streamHeaders });
  }
  let wire: unknown;
  try {
    wire = await upstream.json();
  } catch {
    return ingress.encodeError(irError("api_error", "upstream answered with a body that is not JSON", { status: 502, failure: "transient" }));
  }
  const decoded = egress.decodeResponse(wire);
  if (!decoded.ok) return ingress.encodeError({ ...decoded.error, status: 502, kind: "api_error" });
  decoded.warnings.forEach(warn);
  // Some answers (Cohere's) do not name their model: the lane's upstream model is what served it.
  let response = decoded.value.model === "" ? { ...decoded.value, model: lane.upstreamModel } : decoded.value;
  if (renaming) response = { ...response, content: restoreContent(response.content, renaming) };
  return Response.json(ingress.encodeResponse(response, warn));
}

/**
 * Upstream stream bytes -> IR parts -> the client's wire bytes, the encoding done in the same stage that
 * reads each part (one hop less per event than a separate encoder stream: the first event's latency).
 * A stream that breaks, or ends without finishing, ends with an IR error part, so the client sees its
 * protocol's in-stream error rather than a silent truncation.
 */
export function translatedStream(
  body: ReadableStream<Uint8Array>,
  egress: ProtocolAdapter,
  ingress: ProtocolAdapter,
  request: IrRequest,
  warn: (warning: string) => void,
  /** Named in the start part when the upstream's stream does not name its model. */
  upstreamModel: string,
  renaming?: ToolRenaming,
): ReadableStream<Uint8Array> {
  const reader = body.pipeThrough(egress.createStreamDecoder()).getReader();
  let ended = false;
  let emitted = false;
  let writer: StreamWriter | undefined;
  const finish = (controller: ReadableStreamDefaultController<Uint8Array>, error?: IrError) => {
    if (error) writer?.accept({ type: "error", error });
    writer?.end();
    ended = true;
    controller.close();
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      writer = ingress.createStreamWriter(request, warn, (bytes) => {
        emitted = true;
        controller.enqueue(bytes);
      });
    },
    async pull(controller) {
      // Keep reading until a part produced bytes (or the stream ended): many parts (usage, block starts)
      // produce none, and a pull that enqueues nothing is not called again.
      emitted = false;
      while (!ended && !emitted) {
        try {
          const { done, value } = await reader.read();
          if (done) return finish(controller, irError("api_error", "the upstream stream ended before it finished", { status: 502, failure: "transient" }));
          const part = value.type === "start" && value.model === "" ? { ...value, model: upstreamModel } : value;
          writer?.accept(renaming ? restorePart(part, renaming) : part);
          if (value.type === "finish" || value.type === "error") {
            finish(controller);
            void reader.cancel().catch(() => {});
          }
        } catch {
          finish(controller, irError("api_error", "the upstream stream broke off", { status: 502, failure: "transient" }));
        }
      }
    },
    cancel(reason) {
      // The client went away: stop reading, which aborts the upstream body.
      ended = true;
      return reader.cancel(reason);
    },
  });
}
