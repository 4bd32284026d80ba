// Same protocol both sides: the client's body goes up with only the model rewritten, and the upstream's
// bytes come back unchanged, so members the IR does not model survive both ways. Usage is still read
// (non-stream) or tapped from the stream on the side, for metering.
import { answerSize, responseTextSize, withEstimate } from "../ir/estimate.ts";
import { isWholeObject, parseOrUndefined, streamUsageCut, usageMember } from "./usage-cut.ts";
import { inputTotal, irError, mergeUsage, ZERO_USAGE, type IrError, type IrUsage } from "../ir/index.ts";
import { pushBody, type PushOut } from "../http/push-stream.ts";
import type { ByteFilter, ProtocolAdapter } from "../protocols/types.ts";
import type { AttemptResult, LaneTicket } from "../routing/failover.ts";
import { utf8, type AnswerRead } from "../transport/answer.ts";
import type { BodySink, UpstreamBody } from "../transport/body.ts";
import { isClientGone, relayHeaders, type UpstreamAnswer, type UpstreamOutcome } from "../transport/upstream.ts";
import { streamTicket, type Exchange } from "./exchange.ts";
import { badAnswerFailure, contentTypeProblem, firstPiece, markEstimate, noAnswerFailure, readWhole, sendUpstream } from "./upstream-call.ts";

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

export async function passThrough(exchange: Exchange, ticket: LaneTicket): Promise<AttemptResult<Response>> {
  const { ingress, lane, body, request, deps, context } = exchange;
  const stream = context.pathStream ?? body.stream === true;
  const rewritten = ingress.rewriteModel(body, lane.upstreamModel);
  // A metered stream asks for usage where the protocol must ask (and takes the answer out for the client).
  const filter = stream && exchange.meter ? ingress.askForStreamUsage?.(rewritten) : undefined;
  const upstreamBody = JSON.stringify(rewritten);
  const outcome = await sendUpstream(exchange, ingress, { path: ingress.upstreamPath(lane.upstreamModel, stream), body: upstreamBody, whole: !stream, headers: forwarded(ingress, request) });
  if (!outcome.ok) return noAnswerFailure(ingress, outcome);
  const upstream = outcome.answer;
  const headers = relayHeaders(upstream.headers);
  const record = (usage: IrUsage, estimated = false) => {
    if (estimated && exchange.meter) markEstimate(exchange, usage);
    exchange.meter?.usage(usage, lane.name);
    if (deps.logger.enabled("debug")) deps.logger.debug("usage", { model: exchange.model, lane: lane.name, ...usage });
  };

  if (!upstream.ok) {
    // The vendor's own error, relayed byte for byte when the caller is to hear it.
    const read = await readWhole(exchange, ticket, outcome);
    if (!read.ok) return noAnswerFailure(ingress, read);
    return { ok: false, error: ingress.decodeError(upstream.status, utf8.decode(read.bytes), upstream.headers), cause: "upstream", relay: () => new Response(read.bytes, { status: upstream.status, headers }) };
  }
  // Streams are SSE, AWS event-stream frames (Bedrock) or a streamed JSON array (Gemini without alt=sse):
  // what the request asked for decides, and the upstream's content type must be that stream's.
  if (!stream) return wholeAnswer(exchange, ticket, outcome, headers, record, upstreamBody.length);
  const wrongType = contentTypeProblem(upstream.headers, ingress.streamHeaders["content-type"]);
  if (wrongType) return badAnswerFailure(ingress, wrongType, upstream.body);
  // Nothing reaches the client before the upstream's first bytes: until then the request may fail over.
  const first = await firstPiece(upstream.body, ingress);
  if (!first.ok) return first.failure;
  // Usage is read only where it goes somewhere: a meter, or the debug log.
  const tap = { adapter: ingress, record, ticket: streamTicket(exchange, ticket), filter, requestSize: upstreamBody.length, wanted: exchange.meter !== undefined || deps.logger.enabled("debug") };
  const relay = new StreamRelay(upstream.body, first.value, tap);
  return { ok: true, value: new Response(pushBody(relay.start, relay.cancel), { status: upstream.status, headers }), settlesLater: true };
}

/**
 * A non-stream 2xx, read whole within the cap and deadline, relayed as the very bytes that came only when
 * it is the vendor's JSON: a JSON content type and a JSON object. Anything else (HTML from a proxy, binary,
 * a truncated body) is an upstream fault the pool may fail over from; its body is never quoted.
 */
function wholeAnswer(exchange: Exchange, ticket: LaneTicket, outcome: Answered, headers: RelayedHeaders, record: Recorder, requestSize: number): AttemptResult<Response> | Promise<AttemptResult<Response>> {
  const upstream = outcome.answer;
  const wrongType = contentTypeProblem(upstream.headers);
  if (wrongType) return badAnswerFailure(exchange.ingress, wrongType, upstream.body);
  // Usually the answer is already here and read without a promise (answer.ts); then so is this.
  const read = readWhole(exchange, ticket, outcome);
  return read instanceof Promise ? read.then((r) => judgeWhole(exchange, upstream, r, headers, record, requestSize)) : judgeWhole(exchange, upstream, read, headers, record, requestSize);
}

/** Headers as a Response's init takes them (relayHeaders). */
type RelayedHeaders = [string, string][];

type Recorder = (usage: IrUsage, estimated?: boolean) => void;

function judgeWhole(exchange: Exchange, upstream: UpstreamAnswer, read: AnswerRead, headers: RelayedHeaders, record: Recorder, requestSize: number): AttemptResult<Response> {
  const { ingress } = exchange;
  if (!read.ok) return noAnswerFailure(ingress, read);
  const bytes = read.bytes;
  // Judged by its structure in one pass over the bytes, not parsed: parsing every answer into objects only
  // to relay its bytes cost ~3.5 µs of a ~35 µs request under load (docs/performance.md).
  if (!isWholeObject(bytes)) return badAnswerFailure(ingress, "the upstream answered 2xx with a body that is not a whole JSON object");
  const ok: AttemptResult<Response> = { ok: true, value: new Response(bytes, { status: upstream.status, headers }) };
  // Usage is read only where it goes somewhere (a meter, the debug log), and then only its own member.
  if (!exchange.meter && !exchange.deps.logger.enabled("debug")) return ok;
  const body = usageMember(bytes);
  const reported = body === undefined ? undefined : ingress.usageFromResponse(body);
  if (!reported) exchange.warn("no usage found in the upstream response");
  const usage = reported ? mergeUsage(ZERO_USAGE, reported) : ZERO_USAGE;
  // A served answer is never charged zero: what the upstream left at zero is estimated, as for a stream
  // (the answer is decoded for its text only then, which the vendors' own servers never need).
  if (exchange.meter && (inputTotal(usage) === 0 || usage.output === 0)) {
    const whole = parseOrUndefined(utf8.decode(bytes));
    const decoded = whole === undefined ? undefined : ingress.decodeResponse(whole);
    const estimate = withEstimate(usage, requestSize, decoded?.ok ? responseTextSize(decoded.value) : bytes.byteLength);
    record(estimate.usage, estimate.estimated);
  } else if (reported) record(usage);
  return ok;
}

type Answered = Extract<UpstreamOutcome, { ok: true }>;

/** How much of a stream's start and end is kept for reading usage (it sits in the first and last events). */
const EDGE_BYTES = 8192;

interface Tap {
  readonly adapter: ProtocolAdapter;
  /** Told the stream's usage once it settles; `estimated` when the upstream reported none (docs/operations.md). */
  readonly record: (usage: IrUsage, estimated?: boolean) => void;
  readonly ticket: LaneTicket;
  /** Takes out of the relayed bytes what the gateway asked for and the client did not (OpenAI's usage chunk). */
  readonly filter: ByteFilter | undefined;
  /** Characters of the request sent upstream, for the input estimate. */
  readonly requestSize: number;
  /** Whether anyone takes the usage (a meter, the debug log); if not, nothing is kept or parsed for it. */
  readonly wanted: boolean;
}

/**
 * Relays the bytes untouched (or through the tap's filter) as the upstream client hands them over, straight
 * into the client's response: no stream object, reader or promise per piece. Only the stream's first and
 * last EDGE_BYTES are kept; at the end those are decoded once for usage (Anthropic reports input in
 * message_start and output in message_delta; OpenAI in the last chunk). Decoding every chunk as it passed
 * cost more than the whole relay. The edges are the upstream's own bytes, so a usage chunk the filter cut
 * still counts.
 */
class StreamRelay implements BodySink {
  private out: PushOut | undefined;
  private readonly head: Uint8Array[] = [];
  private headBytes = 0;
  private tail: Uint8Array[] = [];
  private tailBytes = 0;
  private totalBytes = 0;
  /** The last bytes that went out: whether a break fell between events. */
  private last: Uint8Array;
  private settled = false;

  constructor(
    private readonly body: UpstreamBody,
    first: Uint8Array,
    private readonly tap: Tap,
  ) {
    this.last = first;
  }

  /** The client started reading: the first piece, then every later one as it comes. */
  readonly start = (out: PushOut): void => {
    this.out = out;
    this.chunk(this.last);
    this.body.pipe(this);
  };

  /** The client left (agents hang up once they have the final event): what it was sent still counts. */
  readonly cancel = (): void => {
    this.body.cancel();
    this.finish(RELEASED);
  };

  private readonly resume = (): void => this.body.resume();

  chunk(bytes: Uint8Array): void {
    if (this.tap.wanted) this.keep(bytes);
    const sent = this.tap.filter ? this.tap.filter.push(bytes) : bytes;
    if (sent.byteLength === 0) return;
    this.last = sent;
    if (!this.out!.write(sent)) {
      // The client reads slower than the upstream writes: stop reading the upstream until it drains.
      this.body.pause();
      this.out!.onDrain(this.resume);
    }
  }

  end(): void {
    const rest = this.tap.filter?.flush();
    if (rest && rest.byteLength > 0) this.out!.write(rest);
    this.finish(ENDED);
    this.out!.end();
  }

  fail(error: Error): void {
    // The client's leaving aborts the upstream call too: that is the client's doing, not the lane's.
    if (isClientGone(error)) return this.finish(RELEASED);
    const broke = irError("api_error", "the upstream stream broke off", { status: 502, failure: "transient" });
    // What was served before the break still counts.
    this.finish(broke);
    // The protocol's own in-stream error when the cut fell between events; else the connection resets.
    const ending = this.tap.adapter.streamBreak?.(broke, this.last);
    if (!ending) return this.out!.abort(error);
    this.out!.write(ending);
    this.out!.end();
  }

  private keep(chunk: Uint8Array): void {
    this.totalBytes += chunk.byteLength;
    if (this.headBytes < EDGE_BYTES) {
      this.head.push(chunk);
      this.headBytes += chunk.byteLength;
      return;
    }
    const tail = this.tail;
    tail.push(chunk);
    this.tailBytes += chunk.byteLength;
    while (tail.length > 1 && this.tailBytes - tail[0]!.byteLength >= EDGE_BYTES) this.tailBytes -= tail.shift()!.byteLength;
  }

  /**
   * Reads the usage and charges it; the ticket is told only then, as it frees the request's reservation:
   * freed before the charge, the tokens would be in neither, and requests admitted meanwhile overshoot a cap.
   */
  private finish(how: typeof ENDED | typeof RELEASED | IrError): void {
    if (this.settled) return;
    this.settled = true;
    if (!this.tap.wanted) return this.tell(how);
    try {
      this.charge();
    } finally {
      // Told however the charge went: a slot must never stay held.
      this.tell(how);
    }
  }

  private tell(how: typeof ENDED | typeof RELEASED | IrError): void {
    const { ticket } = this.tap;
    if (how === ENDED) ticket.ok();
    else if (how === RELEASED) ticket.released();
    else ticket.broke(how);
  }

  /**
   * The usage cut from the kept edges' bytes (streamUsageCut), nothing else decoded or parsed. Only when the
   * upstream reported none, or left part of it at zero, is the head decoded as the stream it is, to count its
   * characters of answer (text, reasoning, tool arguments), and the answer's size extrapolated from the head's
   * share of it for an estimate.
   */
  private charge(): void {
    const { head, tail, headBytes, totalBytes, tap } = this;
    this.tail = [];
    const cut = streamUsageCut(head, tail.length === 0 ? head : tail, tap.adapter.usageFromResponse);
    if (cut && inputTotal(cut) > 0 && cut.output > 0) return tap.record(cut);
    const headText = answerChars(tap.adapter, head);
    const outputSize = headBytes >= totalBytes ? headText : Math.round((headText * totalBytes) / headBytes);
    const estimate = withEstimate(cut ?? ZERO_USAGE, tap.requestSize, outputSize);
    tap.record(estimate.usage, estimate.estimated);
  }
}

const ENDED = Symbol("ended");
const RELEASED = Symbol("released");

/** Characters of answer in the head's events, decoded as the stream they are (an estimate's input). */
function answerChars(adapter: ProtocolAdapter, head: readonly Uint8Array[]): number {
  let answered = 0;
  const parser = adapter.createStreamParser();
  try {
    for (const piece of head) for (const part of parser.push(piece)) answered += answerSize(part);
    for (const part of parser.end()) answered += answerSize(part);
  } catch {
    // the head cut mid-event may not parse; what was read before still counts
  }
  return answered;
}
