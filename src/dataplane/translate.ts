// Another protocol upstream: IR request -> egress wire, upstream answer -> IR -> ingress wire. Streams
// are translated event by event as they arrive (bytes -> IR parts -> bytes); nothing is buffered whole.
import { inputTotal, irError, mergeUsage, ZERO_USAGE, type IrError, type IrRequest, type IrStreamPart, type IrUsage } from "../ir/index.ts";
import { answerSize, requestTextSize, responseTextSize, withEstimate } from "../ir/estimate.ts";
import { adapterFor } from "../protocols/registry.ts";
import { renameTools, restoreContent, restorePart, type ToolRenaming } from "../protocols/tool-names.ts";
import type { ProtocolAdapter, StreamWriter } from "../protocols/types.ts";
import type { AttemptResult, LaneTicket } from "../routing/failover.ts";
import { utf8 } from "../transport/answer.ts";
import type { UpstreamBody } from "../transport/body.ts";
import { SseEventTooLarge } from "../transport/sse.ts";
import { streamTicket, type Exchange } from "./exchange.ts";
import { badAnswerFailure, contentTypeProblem, firstOf, markEstimate, noAnswerFailure, readWhole, sendUpstream } from "./upstream-call.ts";

export async function translate(exchange: Exchange, request: IrRequest, ticket: LaneTicket): Promise<AttemptResult<Response>> {
  const { ingress, lane, warn } = exchange;
  const egress = adapterFor(lane.provider.protocol);
  if (!egress) {
    const error = irError("api_error", `provider ${lane.provider.name} speaks ${lane.provider.protocol}, which this build cannot call`, { status: 501, failure: "transient" });
    return { ok: false, error, cause: "upstream", relay: () => ingress.encodeError(error) };
  }
  const renaming = renameTools(request, egress.toolNames, warn);
  const encoded = egress.encodeRequest(renaming?.request ?? request, lane.upstreamModel);
  encoded.warnings.forEach(warn);
  const outcome = await sendUpstream(exchange, egress, { path: encoded.path, body: JSON.stringify(encoded.body), whole: !request.stream });
  if (!outcome.ok) return noAnswerFailure(ingress, outcome);
  const upstream = outcome.answer;
  if (!upstream.ok) {
    const read = await readWhole(exchange, ticket, outcome);
    if (!read.ok) return noAnswerFailure(ingress, read);
    const error = egress.decodeError(upstream.status, utf8.decode(read.bytes), upstream.headers);
    return { ok: false, error, cause: "upstream", relay: () => ingress.encodeError(error) };
  }

  if (request.stream) {
    const wrongType = contentTypeProblem(upstream.headers, egress.streamHeaders["content-type"]);
    if (wrongType) return badAnswerFailure(ingress, wrongType, upstream.body);
    // Nothing reaches the client before the upstream's first part: until then the request may fail
    // over, including when that part is the upstream's own in-stream error.
    const reader = streamOf(upstream.body).pipeThrough(egress.createStreamDecoder()).getReader();
    const first = await firstOf<IrStreamPart>(reader, ingress);
    if (!first.ok) return first.failure;
    if (first.value.type === "error") {
      const error = first.value.error;
      void reader.cancel().catch(() => {});
      return { ok: false, error, cause: "upstream", relay: () => ingress.encodeError(error) };
    }
    const meter = exchange.meter;
    const settle = (reported: IrUsage, answerSize: number) => {
      // What the upstream left at zero is estimated (docs/operations.md, "Stream usage and estimates").
      const { usage, estimated } = withEstimate(reported, requestTextSize(request), answerSize);
      if (estimated) markEstimate(exchange, usage);
      meter?.usage(usage, lane.name);
    };
    const body = translatedStream(first.value, reader, ingress, request, warn, lane.upstreamModel, streamTicket(exchange, ticket), renaming, meter && settle);
    return { ok: true, value: new Response(body, { headers: ingress.streamHeaders }), settlesLater: true };
  }
  const wrongType = contentTypeProblem(upstream.headers);
  if (wrongType) return badAnswerFailure(ingress, wrongType, upstream.body);
  // Usually already here and read without a promise (answer.ts): then there is nothing to wait for.
  const pending = readWhole(exchange, ticket, outcome);
  const read = pending instanceof Promise ? await pending : pending;
  if (!read.ok) return noAnswerFailure(ingress, read);
  let wire: unknown;
  try {
    wire = JSON.parse(utf8.decode(read.bytes));
  } catch {
    return badAnswerFailure(ingress, "the upstream answered 2xx with a body that is not JSON");
  }
  const decoded = egress.decodeResponse(wire);
  if (!decoded.ok) {
    const error: IrError = { ...decoded.error, status: 502, kind: "api_error", failure: "transient" };
    return { ok: false, error, cause: "upstream", relay: () => ingress.encodeError(error) };
  }
  decoded.warnings.forEach(warn);
  const reported = decoded.value.usage;
  if (exchange.meter && (inputTotal(reported) === 0 || reported.output === 0)) {
    // A served answer is never charged zero: what the upstream left at zero is estimated, as for a stream.
    const { usage, estimated } = withEstimate(reported, requestTextSize(request), responseTextSize(decoded.value));
    if (estimated) markEstimate(exchange, usage);
    exchange.meter.usage(usage, lane.name);
  } else exchange.meter?.usage(reported, lane.name);
  // Some answers (Cohere's) do not name their model: the lane's upstream model is what served it.
  let response = decoded.value.model === "" ? { ...decoded.value, model: lane.upstreamModel } : decoded.value;
  if (renaming) response = { ...response, content: restoreContent(response.content, renaming) };
  return { ok: true, value: Response.json(ingress.encodeResponse(response, warn)) };
}

// Structural: the reader of a piped stream is typed by node:stream/web, not the DOM lib.
type PartReader = { read(): Promise<{ done: true; value?: IrStreamPart } | { done: false; value: IrStreamPart }>; cancel(reason?: unknown): Promise<void> };

/**
 * IR parts (the first already read) -> the client's wire bytes, the encoding done in the same stage
 * that reads each part (one hop less per event than a separate encoder stream: the first event's
 * latency). A stream that breaks, or ends without finishing, ends with an IR error part, so the client
 * sees its protocol's in-stream error rather than a silent truncation; the lane's ticket hears it too.
 */
export function translatedStream(
  first: IrStreamPart,
  reader: PartReader,
  ingress: ProtocolAdapter,
  request: IrRequest,
  warn: (warning: string) => void,
  /** Named in the start part when the upstream's stream does not name its model. */
  upstreamModel: string,
  ticket: LaneTicket,
  renaming?: ToolRenaming,
  /** Told the stream's usage and the characters of answer it carried, once, when it settles (metering). */
  onUsage?: (usage: IrUsage, answerSize: number) => void,
): ReadableStream<Uint8Array> {
  let ended = false;
  let emitted = false;
  let writer: StreamWriter | undefined;
  let usage = ZERO_USAGE;
  let answered = 0;
  let reported = false;
  const report = () => {
    if (reported || !onUsage) return;
    reported = true;
    onUsage(usage, answered);
  };
  const finish = (controller: ReadableStreamDefaultController<Uint8Array>, error?: IrError) => {
    report();
    if (error) {
      writer?.accept({ type: "error", error });
      ticket.broke(error);
    } else ticket.ok();
    writer?.end();
    ended = true;
    controller.close();
  };
  const accept = (controller: ReadableStreamDefaultController<Uint8Array>, value: IrStreamPart) => {
    if (value.type === "usage") usage = mergeUsage(usage, value.usage);
    else answered += answerSize(value);
    const part = value.type === "start" && value.model === "" ? { ...value, model: upstreamModel } : value;
    writer?.accept(renaming ? restorePart(part, renaming) : part);
    if (value.type === "finish") {
      finish(controller);
      void reader.cancel().catch(() => {});
    } else if (value.type === "error") {
      // The in-stream error is already written: the lane hears it, the writer ends.
      report();
      ticket.broke(value.error);
      writer?.end();
      ended = true;
      controller.close();
      void reader.cancel().catch(() => {});
    }
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      writer = ingress.createStreamWriter(request, warn, (bytes) => {
        emitted = true;
        controller.enqueue(bytes);
      });
      accept(controller, first);
    },
    async pull(controller) {
      // Keep reading until a part produced bytes (or the stream ended): many parts (usage, block starts)
      // produce none, and a pull that enqueues nothing is not called again.
      emitted = false;
      while (!ended && !emitted) {
        try {
          const { done, value } = await reader.read();
          if (done) return finish(controller, irError("api_error", "the upstream stream ended before it finished", { status: 502, failure: "transient" }));
          accept(controller, value);
        } catch (error) {
          finish(controller, irError("api_error", error instanceof SseEventTooLarge ? error.message : "the upstream stream broke off", { status: 502, failure: "transient" }));
        }
      }
    },
    cancel(reason) {
      // The client went away: stop reading, which aborts the upstream body. What was used still counts.
      ended = true;
      report();
      ticket.released();
      return reader.cancel(reason);
    },
  });
}

/** The body as a ReadableStream, for the decoder's TransformStream. */
function streamOf(body: UpstreamBody): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const piece = await body.read();
      if (piece === null) controller.close();
      else controller.enqueue(piece);
    },
    cancel: () => body.cancel(),
  });
}
