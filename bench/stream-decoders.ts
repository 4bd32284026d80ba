// Microbenchmark of a translated stream's decode+encode, per streamed answer of bench/upstream.ts's shape
// (issue 15): the old path (the upstream body piped through a decoder TransformStream, read part by part,
// encoded into a pull-based ReadableStream) against the push path (translate.ts translatedStream: the
// body piped piece -> parser -> writer -> Bun's direct stream), both consumed by Bun natively as a
// server's response body is. Also the bare decode+encode (no stream objects), and the push parser's array
// form against a callback form. Not a load test: one process, sequential answers.
// Run: `npx bun bench/stream-decoders.ts [answers]`.
import { createParser } from "eventsource-parser";
import { answerSize } from "../src/ir/estimate.ts";
import { mergeUsage, ZERO_USAGE, type IrRequest, type IrStreamPart } from "../src/ir/index.ts";
import { readFirstParts, translatedStream } from "../src/dataplane/translate.ts";
import { adapterFor } from "../src/protocols/registry.ts";
import { wireBytes } from "../src/protocols/stream-writer.ts";
import type { ProtocolAdapter, WireProtocol } from "../src/protocols/types.ts";
import type { LaneTicket } from "../src/routing/failover.ts";
import { bodyFromStream } from "../tests/support/body.ts";
import { parserTransform } from "../src/transport/push-parser.ts";
import { MAX_SSE_EVENT_BYTES, sseParser, type SseEvent } from "../src/transport/sse.ts";
import { STREAMS } from "./upstream.ts";

const ANSWERS = Number(Bun.argv[2] ?? 4000);
const request: IrRequest = { model: "m", system: [], messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], tools: [], sampling: {}, stream: true, includeUsage: true };
const ticket: LaneTicket = { ok() {}, broke() {}, released() {} };
const warn = () => {};
const adapter = (name: WireProtocol) => adapterFor(name)!;

const PAIRS: [string, ProtocolAdapter, ProtocolAdapter, (typeof STREAMS)[keyof typeof STREAMS]][] = [
  ["openai <- anthropic", adapter("openai"), adapter("anthropic"), STREAMS.anthropic],
  ["anthropic <- openai", adapter("anthropic"), adapter("openai"), STREAMS.openai],
  ["gemini <- bedrock", adapter("gemini"), adapter("bedrock"), STREAMS.bedrock],
  ["responses <- anthropic", adapter("responses"), adapter("anthropic"), STREAMS.anthropic],
];

/** The start part names the lane's model when the upstream's stream does not (Bedrock), as translate.ts does. */
const named = (part: IrStreamPart): IrStreamPart => (part.type === "start" && part.model === "" ? { ...part, model: "m" } : part);

/** The upstream body as fetch hands it over: one piece per network read. */
const bodyOf = (pieces: readonly Uint8Array[]) => {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at < pieces.length) controller.enqueue(pieces[at++]!);
      else controller.close();
    },
  });
};

/** The translate path before issue 15 (translate.ts at d84e8a7), with the same decoders behind a TransformStream. */
async function oldPath(ingress: ProtocolAdapter, egress: ProtocolAdapter, pieces: readonly Uint8Array[]): Promise<number> {
  const reader = bodyOf(pieces).pipeThrough(parserTransform(egress.createStreamParser())).getReader();
  const first = await reader.read();
  let ended = false;
  let emitted = false;
  let usage = ZERO_USAGE;
  let answered = 0;
  let writer: ReturnType<ProtocolAdapter["createStreamWriter"]> | undefined;
  const finish = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    writer?.end();
    ended = true;
    controller.close();
  };
  const accept = (controller: ReadableStreamDefaultController<Uint8Array>, value: IrStreamPart) => {
    if (value.type === "usage") usage = mergeUsage(usage, value.usage);
    else answered += answerSize(value);
    writer?.accept(named(value));
    if (value.type === "finish" || value.type === "error") {
      finish(controller);
      void reader.cancel().catch(() => {});
    }
  };
  const out = new ReadableStream<Uint8Array>({
    start(controller) {
      writer = ingress.createStreamWriter(request, warn, (bytes) => {
        emitted = true;
        controller.enqueue(wireBytes(bytes));
      });
      accept(controller, first.value!);
    },
    async pull(controller) {
      emitted = false;
      while (!ended && !emitted) {
        const { done, value } = await reader.read();
        if (done) return finish(controller);
        accept(controller, value);
      }
    },
  });
  return (await new Response(out).arrayBuffer()).byteLength;
}

async function pushPath(ingress: ProtocolAdapter, egress: ProtocolAdapter, pieces: readonly Uint8Array[]): Promise<number> {
  const body = bodyFromStream(bodyOf(pieces));
  const parser = egress.createStreamParser();
  const { parts: first, ended } = await readFirstParts(body, parser);
  const out = translatedStream({ first, ended, body, parser }, ingress, request, warn, "m", ticket, undefined, () => {});
  return (await new Response(out).arrayBuffer()).byteLength;
}

/** Decode+encode alone: what the push path costs once its source and sink are native (text encoded once a piece, as translate.ts does). */
function bare(ingress: ProtocolAdapter, egress: ProtocolAdapter, pieces: readonly Uint8Array[]): number {
  let bytes = 0;
  let text = "";
  const parser = egress.createStreamParser();
  const writer = ingress.createStreamWriter(request, warn, (chunk) => (typeof chunk === "string" ? (text += chunk) : (bytes += chunk.byteLength)));
  const sent = () => {
    bytes += encoder.encode(text).byteLength;
    text = "";
  };
  for (const piece of pieces) {
    for (const part of parser.push(piece)) writer.accept(named(part));
    sent();
  }
  for (const part of parser.end()) writer.accept(named(part));
  writer.end();
  sent();
  return bytes;
}
const encoder = new TextEncoder();

/** Microseconds per answer of each run, in interleaved rounds, the best round of each (the machine is shared: noise only adds). */
async function time(runs: readonly (() => unknown)[], rounds = 8): Promise<number[]> {
  const best = runs.map(() => Infinity);
  const each = Math.ceil(ANSWERS / rounds);
  for (const run of runs) for (let i = 0; i < each; i++) await run();
  for (let round = 0; round < rounds; round++) {
    for (const [i, run] of runs.entries()) {
      const began = Bun.nanoseconds();
      for (let n = 0; n < each; n++) await run();
      best[i] = Math.min(best[i] ?? Infinity, (Bun.nanoseconds() - began) / each / 1000);
    }
  }
  return best;
}

const us = (n: number) => `${n.toFixed(1)} us`;
for (const chunking of ["first", "event"] as const) {
  console.log(`\nupstream pieces: ${chunking === "first" ? "the first event, then the rest in one piece (bench/upstream.ts default)" : "one piece per event"}`);
  console.log("pair                      old path   push path   bare decode+encode");
  for (const [name, ingress, egress, stream] of PAIRS) {
    const pieces = chunking === "first" ? [stream.events[0]!, stream.rest] : stream.events;
    const sizes = [await oldPath(ingress, egress, pieces), await pushPath(ingress, egress, pieces), bare(ingress, egress, pieces)];
    if (new Set(sizes).size !== 1) throw new Error(`${name}: the paths wrote different sizes ${sizes}`);
    const [old, push, raw] = await time([() => oldPath(ingress, egress, pieces), () => pushPath(ingress, egress, pieces), () => bare(ingress, egress, pieces)]);
    console.log(`${name.padEnd(24)} ${us(old!).padStart(9)} ${us(push!).padStart(11)} ${us(raw!).padStart(14)}`);
  }
}

// The parser's two possible forms on the same SSE steps (which return each event's parts as an array, as
// every protocol's do): the parts returned per push, or handed one by one to a callback.
function callbackParser(onEvent: (event: SseEvent) => readonly SseEvent[], emit: (event: SseEvent) => void) {
  const text = new TextDecoder();
  const parser = createParser({
    maxBufferSize: MAX_SSE_EVENT_BYTES,
    onEvent: (m) => {
      for (const made of onEvent(m.event ? { event: m.event, data: m.data } : { data: m.data })) emit(made);
    },
  });
  return { push: (bytes: Uint8Array) => parser.feed(text.decode(bytes, { stream: true })) };
}
const sink: SseEvent[] = [];
const events = STREAMS.anthropic.events;
const forms: [string, () => void][] = [
  [
    "array (push returns the parts)",
    () => {
      const parser = sseParser<SseEvent>({ onEvent: (e) => [e], onEnd: () => [] });
      for (const piece of events) for (const e of parser.push(piece)) sink.push(e);
      sink.length = 0;
    },
  ],
  [
    "callback (push calls emit)",
    () => {
      const parser = callbackParser((e) => [e], (e) => sink.push(e));
      for (const piece of events) parser.push(piece);
      sink.length = 0;
    },
  ],
];
const best = forms.map(() => Infinity);
const ROUNDS = ANSWERS * 2;
for (let round = 0; round < 10; round++) {
  for (const [i, [, run]] of forms.entries()) {
    const began = Bun.nanoseconds();
    for (let n = 0; n < ROUNDS; n++) run();
    if (round > 0) best[i] = Math.min(best[i]!, (Bun.nanoseconds() - began) / ROUNDS / 1000);
  }
}
for (const [i, [form]] of forms.entries()) console.log(`parser form ${form}: ${us(best[i]!)} per answer (21 events, one piece each)`);
