// Same protocol both sides: the client's body goes up with only the model rewritten, and the upstream's
// bytes come back unchanged, so members the IR does not model survive both ways. Usage is still read
// (non-stream) or tapped from the stream on the side, for metering.
import { answerSize, responseTextSize, withEstimate } from "../ir/estimate.ts";
import { inputTotal, irError, mergeUsage, ZERO_USAGE, type IrStreamPart, type IrUsage } from "../ir/index.ts";
import type { ByteFilter, ProtocolAdapter } from "../protocols/types.ts";
import type { AttemptResult, LaneTicket } from "../routing/failover.ts";
import { utf8, type AnswerRead } from "../transport/answer.ts";
import { relayHeaders, type UpstreamOutcome } from "../transport/upstream.ts";
import { streamTicket, type Exchange } from "./exchange.ts";
import { badAnswerFailure, contentTypeProblem, firstOf, markEstimate, noAnswerFailure, readWhole, sendUpstream } from "./upstream-call.ts";

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
  const upstream = outcome.response;
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
  if (!upstream.body) return badAnswerFailure(ingress, "upstream sent an empty stream");
  const wrongType = contentTypeProblem(upstream.headers, ingress.streamHeaders["content-type"]);
  if (wrongType) return badAnswerFailure(ingress, wrongType, upstream.body);
  // Nothing reaches the client before the upstream's first bytes: until then the request may fail over.
  const reader: ByteReader = upstream.body.getReader();
  const first = await firstOf(reader, ingress);
  if (!first.ok) return first.failure;
  // Usage is read only where it goes somewhere: a meter, or the debug log.
  const tap = { adapter: ingress, record, ticket: streamTicket(exchange, ticket), filter, requestSize: upstreamBody.length, wanted: exchange.meter !== undefined || deps.logger.enabled("debug") };
  return { ok: true, value: new Response(tapUsage(first.value, reader, tap), { status: upstream.status, headers }), settlesLater: true };
}

/**
 * A non-stream 2xx, read whole within the cap and deadline, relayed as the very bytes that came only when
 * it is the vendor's JSON: a JSON content type and a JSON object. Anything else (HTML from a proxy, binary,
 * a truncated body) is an upstream fault the pool may fail over from; its body is never quoted.
 */
function wholeAnswer(exchange: Exchange, ticket: LaneTicket, outcome: Answered, headers: Headers, record: Recorder, requestSize: number): AttemptResult<Response> | Promise<AttemptResult<Response>> {
  const upstream = outcome.response;
  const wrongType = contentTypeProblem(upstream.headers);
  if (wrongType) return badAnswerFailure(exchange.ingress, wrongType, upstream.body);
  // Usually the answer is already here and read without a promise (answer.ts); then so is this.
  const read = readWhole(exchange, ticket, outcome);
  return read instanceof Promise ? read.then((r) => judgeWhole(exchange, upstream, r, headers, record, requestSize)) : judgeWhole(exchange, upstream, read, headers, record, requestSize);
}

type Recorder = (usage: IrUsage, estimated?: boolean) => void;

function judgeWhole(exchange: Exchange, upstream: Response, read: AnswerRead, headers: Headers, record: Recorder, requestSize: number): AttemptResult<Response> {
  const { ingress } = exchange;
  if (!read.ok) return noAnswerFailure(ingress, read);
  const bytes = read.bytes;
  // Small answers are parsed whole (which also proves them JSON); larger ones are checked by one pass over
  // their bytes and only their usage member is parsed.
  let body: unknown;
  if (bytes.byteLength < WHOLE_PARSE_BYTES) {
    body = parseOrUndefined(utf8.decode(bytes));
    if (typeof body !== "object" || body === null || Array.isArray(body)) body = undefined;
  } else if (isWholeObject(bytes)) body = usageMember(utf8.decode(bytes));
  if (body === undefined) return badAnswerFailure(ingress, "the upstream answered 2xx with a body that is not a whole JSON object");
  const reported = ingress.usageFromResponse(body);
  if (!reported) exchange.warn("no usage found in the upstream response");
  const usage = reported ? mergeUsage(ZERO_USAGE, reported) : ZERO_USAGE;
  // A served answer is never charged zero: what the upstream left at zero is estimated, as for a stream
  // (the answer is decoded for its text only then, which the vendors' own servers never need).
  if (exchange.meter && (inputTotal(usage) === 0 || usage.output === 0)) {
    const decoded = ingress.decodeResponse(body);
    const estimate = withEstimate(usage, requestSize, decoded.ok ? responseTextSize(decoded.value) : bytes.byteLength);
    record(estimate.usage, estimate.estimated);
  } else if (reported) record(usage);
  return { ok: true, value: new Response(bytes, { status: upstream.status, headers }) };
}

type Answered = Extract<UpstreamOutcome, { ok: true }>;

/** Below this size the native JSON.parse of the whole body beats cutting the usage out (measured on a 945-byte answer: 0.7 vs 1.1 µs). */
const WHOLE_PARSE_BYTES = 16384;

/**
 * Whether the bytes are one JSON object by their structure: `{` first, brackets balanced outside strings,
 * the outermost closing at the last non-space byte. Not a full validation, but one linear pass that tells
 * a truncated, HTML or binary body from the vendor's JSON without building the answer as objects.
 */
export function isWholeObject(bytes: Uint8Array): boolean {
  let end = bytes.length;
  while (end > 0 && isSpace(bytes[end - 1]!)) end--;
  let i = 0;
  while (i < end && isSpace(bytes[i]!)) i++;
  if (bytes[i] !== OPEN || bytes[end - 1] !== CLOSE) return false;
  let depth = 0;
  for (; i < end; i++) {
    const c = bytes[i]!;
    if (c === QUOTE) {
      i = closingQuote(bytes, i + 1);
      if (i === -1) return false;
    } else if (c === OPEN || c === OPEN_BRACKET) depth++;
    else if ((c === CLOSE || c === CLOSE_BRACKET) && --depth <= 0) return depth === 0 && i === end - 1;
  }
  return false;
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * `{"usage": {...}}` cut out of a response body: both vendors put the top-level usage object last, so
 * parsing that object alone (bracket-matched from the last `"usage":` key) spares building the whole
 * answer as objects on every request. Falls back to the whole body when the cut does not parse.
 */
export function usageMember(text: string): unknown {
  const key = text.lastIndexOf('"usage"');
  const open = key > 0 && text[key - 1] !== "\\" ? objectAfterColon(text, key + 7) : -1;
  if (open !== -1) {
    let depth = 0;
    let inString = false;
    for (let i = open; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (inString) {
        if (c === BACKSLASH) i++;
        else if (c === QUOTE) inString = false;
      } else if (c === QUOTE) inString = true;
      else if (c === OPEN) depth++;
      else if (c === CLOSE && --depth === 0) {
        const usage = parseOrUndefined(text.slice(open, i + 1));
        if (usage !== undefined) return { usage };
        break;
      }
    }
  }
  return parseOrUndefined(text);
}

/**
 * Where the string opened just before `from` closes, or -1. Most of an answer's bytes are its text, so this
 * is most of isWholeObject's time: a short stretch byte by byte (keys, tokens, text dense with escapes),
 * then the native search to the next quote, which is escaped when an odd run of backslashes precedes it.
 */
function closingQuote(bytes: Uint8Array, from: number): number {
  let i = from;
  for (;;) {
    const near = Math.min(bytes.length, i + 32);
    for (; i < near; i++) {
      const c = bytes[i]!;
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) return i;
    }
    const close = i < bytes.length ? bytes.indexOf(QUOTE, i) : -1;
    if (close === -1) return -1;
    let slashes = 0;
    while (bytes[close - 1 - slashes] === BACKSLASH) slashes++;
    if ((slashes & 1) === 0) return close;
    i = close + 1;
  }
}

const [BACKSLASH, QUOTE, OPEN, CLOSE, COLON, OPEN_BRACKET, CLOSE_BRACKET] = ["\\", '"', "{", "}", ":", "[", "]"].map((c) => c.charCodeAt(0)) as [number, number, number, number, number, number, number];
const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Index of the `{` after `: ` at `from` (JSON whitespace allowed), or -1 when a key is not followed by an object. */
function objectAfterColon(text: string, from: number): number {
  let i = from;
  while (isSpace(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i++) !== COLON) return -1;
  while (isSpace(text.charCodeAt(i))) i++;
  return text.charCodeAt(i) === OPEN ? i : -1;
}

type ByteReader = Pick<ReadableStreamDefaultReader<Uint8Array>, "read" | "cancel">;

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
 * Relays the bytes untouched (or through the tap's filter), keeping only the stream's first and last
 * EDGE_BYTES; at the end those are decoded once for usage (Anthropic reports input in message_start and
 * output in message_delta; OpenAI in the last chunk). Decoding every chunk as it passed cost more than
 * the whole relay. The edges are the upstream's own bytes, so a usage chunk the filter cut still counts.
 */
function tapUsage(first: Uint8Array, reader: ByteReader, tap: Tap): ReadableStream<Uint8Array> {
  const { adapter, ticket, filter } = tap;
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let tail: Uint8Array[] = [];
  let tailBytes = 0;
  let totalBytes = 0;
  let last = first;
  const keep = (chunk: Uint8Array) => {
    if (!tap.wanted) return;
    totalBytes += chunk.byteLength;
    if (headBytes < EDGE_BYTES) {
      head.push(chunk);
      headBytes += chunk.byteLength;
      return;
    }
    tail.push(chunk);
    tailBytes += chunk.byteLength;
    while (tail.length > 1 && tailBytes - tail[0]!.byteLength >= EDGE_BYTES) tailBytes -= tail.shift()!.byteLength;
  };
  /** Whether anything went out (a filter may hold a chunk back whole). */
  const relay = (controller: ReadableStreamDefaultController<Uint8Array>, chunk: Uint8Array): boolean => {
    keep(chunk);
    const out = filter ? filter.push(chunk) : chunk;
    if (out.byteLength === 0) return false;
    last = out;
    controller.enqueue(out);
    return true;
  };
  let settled: Promise<void> | undefined;
  /**
   * Reads the usage and charges it; the ticket is told only then, as it frees the request's reservation:
   * freed before the charge, the tokens would be in neither, and requests admitted meanwhile overshoot a cap.
   */
  const finish = (tell: () => void) => {
    if (settled) return;
    if (!tap.wanted) {
      settled = Promise.resolve();
      return tell();
    }
    settled = usageFromEdges(adapter, head, tail).then(({ usage, headText }) => {
      // What the upstream left at zero is estimated: the answer's size extrapolated from the head's share of text.
      const outputSize = headBytes >= totalBytes ? headText : Math.round((headText * totalBytes) / headBytes);
      const estimate = withEstimate(usage, tap.requestSize, outputSize);
      tap.record(estimate.usage, estimate.estimated);
    }, () => {});
    // Told however the charge went: a slot must never stay held.
    void settled.then(tell, tell);
    tail = [];
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      relay(controller, first);
    },
    async pull(controller) {
      try {
        // A pull that enqueues nothing is not called again: read on until something goes out.
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            const rest = filter?.flush();
            if (rest && rest.byteLength > 0) controller.enqueue(rest);
            finish(() => ticket.ok());
            controller.close();
            return;
          }
          if (relay(controller, value)) return;
        }
      } catch (error) {
        const broke = irError("api_error", "the upstream stream broke off", { status: 502, failure: "transient" });
        // What was served before the break still counts.
        finish(() => ticket.broke(broke));
        // The protocol's own in-stream error when the cut fell between events; else the connection resets.
        const ending = adapter.streamBreak?.(broke, last);
        if (!ending) return controller.error(error);
        controller.enqueue(ending);
        controller.close();
      }
    },
    cancel(reason) {
      // The client left (agents hang up once they have the final event): what it was sent still counts.
      finish(() => ticket.released());
      return reader.cancel(reason);
    },
  });
}

/**
 * Usage from the kept edges: one pass when they join up, else head and tail apart. The tail may start
 * mid-event, and its last event may be longer than the tail (Responses' `response.completed` repeats the
 * whole answer before its usage): then the last `"usage"` object in the tail is cut out and read alone.
 */
async function usageFromEdges(adapter: ProtocolAdapter, head: Uint8Array[], tail: Uint8Array[]): Promise<{ usage: IrUsage; headText: number }> {
  let usage = ZERO_USAGE;
  /** Characters of answer (text, reasoning, tool arguments) in the head, for an estimate. */
  let headText = 0;
  for (const segment of tail.length === 0 ? [head] : [head, tail]) {
    let found = false;
    const take = (parts: readonly IrStreamPart[]) => {
      for (const part of parts) {
        if (segment === head) headText += answerSize(part);
        if (part.type !== "usage") continue;
        usage = mergeUsage(usage, part.usage);
        found = true;
      }
    };
    const parser = adapter.createStreamParser();
    try {
      for (const piece of segment) take(parser.push(piece));
      take(parser.end());
    } catch {
      // a tail cut mid-event may not parse; what was read before still counts
    }
    if (found || segment === head) continue;
    const cut = adapter.usageFromResponse(usageMember(await new Blob(segment).text()));
    if (cut) usage = mergeUsage(usage, cut);
  }
  return { usage, headText };
}
