// Another protocol upstream: IR request -> egress wire, upstream answer -> IR -> ingress wire. Streams
// are translated event by event as they arrive (bytes -> IR parts -> bytes); nothing is buffered whole.
import { inputTotal, irError, mergeUsage, ZERO_USAGE, type IrError, type IrRequest, type IrStreamPart, type IrUsage } from "../ir/index.ts";
import { answerSize, requestTextSize, responseTextSize, withEstimate } from "../ir/estimate.ts";
import { adapterFor } from "../protocols/registry.ts";
import { renameTools, restoreContent, restorePart, type ToolRenaming } from "../protocols/tool-names.ts";
import type { ProtocolAdapter, StreamParser } from "../protocols/types.ts";
import { wireBytes } from "../protocols/stream-writer.ts";
import type { AttemptResult, LaneTicket } from "../routing/failover.ts";
import { pushBody, type PushOut } from "../http/push-stream.ts";
import { utf8 } from "../transport/answer.ts";
import type { UpstreamBody } from "../transport/body.ts";
import { isClientGone } from "../transport/upstream.ts";
import { SseEventTooLarge } from "../transport/sse.ts";
import { streamTicket, type Exchange } from "./exchange.ts";
import { badAnswerFailure, contentTypeProblem, endedBeforeFirst, failedBeforeFirst, markEstimate, noAnswerFailure, readWhole, sendUpstream } from "./upstream-call.ts";

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
    const body = upstream.body;
    const parser = egress.createStreamParser();
    const first = await firstParts(body, parser, ingress);
    if (!first.ok) return first.failure;
    if (first.parts[0]!.type === "error") {
      const error = first.parts[0].error;
      body.cancel();
      return { ok: false, error, cause: "upstream", relay: () => ingress.encodeError(error) };
    }
    const meter = exchange.meter;
    const settle = (reported: IrUsage, answerSize: number) => {
      // What the upstream left at zero is estimated (docs/operations.md, "Stream usage and estimates").
      const { usage, estimated } = withEstimate(reported, () => requestTextSize(request), answerSize);
      if (estimated) markEstimate(exchange, usage);
      meter?.usage(usage, lane.name);
    };
    const source: TranslatedSource = { first: first.parts, ended: first.ended, body, parser };
    const out = translatedStream(source, ingress, request, warn, lane.upstreamModel, streamTicket(exchange, ticket), renaming, meter && settle);
    return { ok: true, value: new Response(out, { headers: ingress.streamHeaders }), settlesLater: true };
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

/** The first parts of an upstream stream, or the failure that came before any. */
type FirstParts = { ok: true; parts: readonly IrStreamPart[]; ended: boolean } | { ok: false; failure: AttemptResult<Response> };

/**
 * Reads the body's first pieces into the parser until it yields a part (several may come at once), the
 * body ends (the parser's end says what that makes), or it fails. A failure gives the body up.
 */
async function firstParts(body: UpstreamBody, parser: StreamParser, ingress: ProtocolAdapter): Promise<FirstParts> {
  try {
    const { parts, ended } = await readFirstParts(body, parser);
    return parts.length > 0 ? { ok: true, parts, ended } : { ok: false, failure: endedBeforeFirst(ingress) };
  } catch (error) {
    body.cancel();
    return { ok: false, failure: failedBeforeFirst(ingress, error) };
  }
}

/** The body's pieces through the parser until it yields a part or the body ends (none then: it ended first); what the body or parser throws is thrown. */
export async function readFirstParts(body: UpstreamBody, parser: StreamParser): Promise<{ parts: readonly IrStreamPart[]; ended: boolean }> {
  for (;;) {
    const piece = await body.read();
    const parts = piece === null ? parser.end() : parser.push(piece);
    if (parts.length > 0 || piece === null) return { parts, ended: piece === null };
  }
}

/** An upstream stream whose first parts are read: the rest of its body and the parser that read them. */
export interface TranslatedSource {
  readonly first: readonly IrStreamPart[];
  /** The body ended while the first parts were read (they came from the parser's end). */
  readonly ended: boolean;
  readonly body: UpstreamBody;
  readonly parser: StreamParser;
}

const brokeOff = (error: unknown) => irError("api_error", error instanceof SseEventTooLarge ? error.message : "the upstream stream broke off", { status: 502, failure: "transient" });
const endedEarly = () => irError("api_error", "the upstream stream ended before it finished", { status: 502, failure: "transient" });

/**
 * IR parts (the first already read) -> the client's wire bytes, in one synchronous pass per piece of the
 * upstream's body: piece -> parser -> writer -> the client's response, no stream object or promise per
 * piece or part. A stream that breaks, or ends without finishing, ends with an IR error part, so the
 * client sees its protocol's in-stream error rather than a silent truncation; the lane's ticket hears
 * it too. A client that reads slower than the upstream writes pauses the body until its buffer drains.
 */
export function translatedStream(
  source: TranslatedSource,
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
  const { body, parser } = source;
  let ended = false;
  let gaveUp = false;
  const giveUp = () => {
    gaveUp = true;
    body.cancel();
  };
  let usage = ZERO_USAGE;
  let answered = 0;
  let reported = false;
  const report = () => {
    if (reported || !onUsage) return;
    reported = true;
    onUsage(usage, answered);
  };
  const start = (out: PushOut) => {
    let full = false;
    // What one piece's parts make goes out in one write: a write into the response per event cost more
    // than joining the events' text, and an encode per event more than one of their joined text.
    let text = "";
    let held: Uint8Array[] = [];
    const writer = ingress.createStreamWriter(request, warn, (chunk) => {
      if (typeof chunk === "string") return void (text += chunk);
      if (text !== "") held.push(wireBytes(text));
      text = "";
      held.push(chunk);
    });
    const send = () => {
      let written: boolean;
      if (held.length === 0) {
        // Text alone (every writer but Bedrock's) goes out as text: Bun encodes it into the response's own
        // buffer, where an encode here made an array per piece that was copied there (~5% of a translated stream).
        if (text === "") return;
        written = out.write(text);
      } else {
        if (text !== "") held.push(wireBytes(text));
        written = out.write(held.length === 1 ? held[0]! : Buffer.concat(held));
        held = [];
      }
      text = "";
      if (!written) full = true;
    };
    const close = () => {
      ended = true;
      writer.end();
      send();
      out.end();
    };
    /** A stream that failed on this side of the upstream's events: the client hears the protocol's in-stream error. */
    const fail = (error: IrError) => {
      if (ended) return;
      report();
      writer.accept({ type: "error", error });
      ticket.broke(error);
      close();
      giveUp();
    };
    const accept = (parts: readonly IrStreamPart[]) => {
      for (const value of parts) {
        if (ended) return;
        if (value.type === "usage") usage = mergeUsage(usage, value.usage);
        else answered += answerSize(value);
        const part = value.type === "start" && value.model === "" ? { ...value, model: upstreamModel } : value;
        writer.accept(renaming ? restorePart(part, renaming) : part);
        if (value.type !== "finish" && value.type !== "error") continue;
        // The in-stream error is already written: the lane hears it, the writer ends.
        report();
        if (value.type === "error") ticket.broke(value.error);
        else ticket.ok();
        close();
        // A finished stream's body is still read to its end (normally already here): its connection may then be reused.
        if (value.type === "error") giveUp();
      }
    };
    accept(source.first);
    send();
    if (source.ended) return fail(endedEarly());
    if (gaveUp) return;
    body.pipe({
      chunk(bytes) {
        // An upstream that writes past its stream's end is not read on.
        if (ended) return giveUp();
        try {
          accept(parser.push(bytes));
        } catch (error) {
          return fail(brokeOff(error));
        }
        send();
        if (!full || ended) return;
        full = false;
        body.pause();
        out.onDrain(() => body.resume());
      },
      end() {
        if (ended) return;
        try {
          accept(parser.end());
        } catch (error) {
          return fail(brokeOff(error));
        }
        fail(endedEarly());
      },
      fail(error) {
        // The client's leaving aborts the upstream call too: that is the client's doing, not the lane's.
        if (isClientGone(error)) leave();
        else fail(brokeOff(error));
      },
    });
  };
  // The client went away: stop reading, which gives the upstream body up. What was used still counts.
  const leave = () => {
    if (ended) return;
    ended = true;
    report();
    ticket.released();
    giveUp();
  };
  return pushBody(start, leave);
}
