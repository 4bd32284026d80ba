// What every client protocol's translated stream writes for a fixed set of upstream streams, cut into
// pieces three ways, through translate.ts translatedStream: the bytes, the usage it meters and the
// warnings. tests/unit/translated-golden.test.ts compares each case with the digest recorded in
// tests/fixtures/translated-streams.json, so a faster parser or writer (issue 15) must write exactly
// what the generic code wrote. The upstream streams are recorded there too (bench/upstream.ts's, and
// ones made by each protocol's own writer from IR parts with every escape JSON has), so the cases do
// not move when a writer changes.
import { readFirstParts, translatedStream } from "../../src/dataplane/translate.ts";
import type { IrRequest, IrStreamPart } from "../../src/ir/index.ts";
import * as anthropic from "../../src/protocols/anthropic/stream.ts";
import * as bedrock from "../../src/protocols/bedrock/stream.ts";
import * as cohere from "../../src/protocols/cohere/stream.ts";
import * as gemini from "../../src/protocols/gemini/stream.ts";
import * as openai from "../../src/protocols/openai/stream.ts";
import * as responses from "../../src/protocols/responses/stream.ts";
import { wireBytes } from "../../src/protocols/stream-writer.ts";
import type { ProtocolAdapter, StreamParser, StreamWriter, WireChunk } from "../../src/protocols/types.ts";
import type { UpstreamBody } from "../../src/transport/body.ts";
import { STREAMS } from "../../bench/upstream.ts";

const NOW = 1_764_000_000_000;
const now = () => NOW;

/** Every upstream protocol's parser, with a fixed clock and id so the output is the same on every run. */
export const PARSERS: Record<string, () => StreamParser> = {
  openai: () => openai.createStreamParser(),
  anthropic: () => anthropic.createStreamParser(now),
  responses: () => responses.createStreamParser(),
  gemini: () => gemini.createStreamParser(now),
  geminiArray: () => gemini.createArrayStreamParser(now),
  bedrock: () => bedrock.createStreamParser(now, () => "bedrock-fixed-id"),
  cohere: () => cohere.createStreamParser(now),
};

type Writer = (request: IrRequest, warn: (w: string) => void, emit: (chunk: WireChunk) => void) => StreamWriter;
/** Every client protocol's writer. */
export const WRITERS: Record<string, Writer> = {
  openai: openai.createStreamWriter,
  anthropic: anthropic.createStreamWriter,
  responses: responses.createStreamWriter,
  gemini: gemini.createStreamWriter,
  geminiArray: gemini.createArrayStreamWriter,
  bedrock: (request, warn, emit) => bedrock.createStreamWriter(request, warn, emit, now),
  cohere: cohere.createStreamWriter,
};

const REQUESTS: Record<string, IrRequest> = {
  usage: { model: "client-model", system: [{ type: "text", text: "be brief" }], messages: [{ role: "user", content: [{ type: "text", text: "hi there" }] }], tools: [], sampling: { temperature: 0.5 }, stream: true, includeUsage: true },
  plain: { model: "client-model", system: [], messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], tools: [], sampling: {}, stream: true },
};

/** Text JSON escapes differently from plain ASCII: quotes, backslashes, controls, U+2028/2029, lone and paired surrogates. */
export const TRICKY_TEXTS = ['say "hi" \\ back\\slash /', "ctrl \u0000\u0001\u0008\t\n\f\r\u001f\u007f end", "line\u2028para\u2029sep", "lone \ud800 high", "lone \udc00 low", "astral 😀 𝄞 pair", "é 中文 ümlaut", "</script><!--", "{\"json\":[1,2]}", " ", "x"];

/** IR streams the synthetic upstreams are written from (by each upstream protocol's own writer). */
const SYNTHETIC: Record<string, IrStreamPart[]> = {
  text: [
    { type: "start", id: "resp_syn1", model: "up-model", created: 1_700_000_000 },
    { type: "usage", usage: { inputNoCache: 12, inputCacheRead: 3 } },
    { type: "text-start", id: "t" },
    ...TRICKY_TEXTS.map((delta) => ({ type: "text-delta" as const, id: "t", delta })),
    { type: "text-end", id: "t" },
    { type: "usage", usage: { output: 21 } },
    { type: "finish", finishReason: { unified: "stop", raw: "stop" } },
  ],
  mixed: [
    { type: "start", id: "resp_syn2", model: "up-model", created: 1_700_000_001 },
    { type: "usage", usage: { inputNoCache: 40 } },
    { type: "reasoning-start", id: "r" },
    { type: "reasoning-delta", id: "r", delta: 'think "twice"\n' },
    { type: "reasoning-delta", id: "r", delta: "then \u2028 act" },
    { type: "reasoning-signature", id: "r", signature: "c2lnbmF0dXJl" },
    { type: "reasoning-end", id: "r" },
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "Let me \"check\" \\ that 😀" },
    { type: "text-end", id: "t" },
    { type: "tool-call-start", id: "c", toolCallId: "call_abc", name: "get_weather" },
    { type: "tool-call-delta", id: "c", argumentsDelta: '{"city":' },
    { type: "tool-call-delta", id: "c", argumentsDelta: '"Par\\"is \\u2028"}' },
    { type: "tool-call-end", id: "c" },
    { type: "usage", usage: { output: 33, outputReasoning: 7 } },
    { type: "finish", finishReason: { unified: "tool_calls", raw: "tool_use" } },
  ],
};

function writeUpstream(protocol: string, parts: readonly IrStreamPart[]): Uint8Array[] {
  const events: Uint8Array[] = [];
  const writer = WRITERS[protocol]!(REQUESTS.usage!, () => {}, (chunk) => events.push(wireBytes(chunk)));
  for (const part of parts) writer.accept(part);
  writer.end();
  return events;
}

/** Every upstream stream of the cases, event by event: bench/upstream.ts's and the synthetic ones. */
export function upstreamStreams(): Record<string, { protocol: string; events: Uint8Array[] }> {
  const out: Record<string, { protocol: string; events: Uint8Array[] }> = {};
  const bench: Record<string, keyof typeof STREAMS> = { openai: "openai", anthropic: "anthropic", responses: "responses", gemini: "geminiSse", geminiArray: "geminiArray", bedrock: "bedrock", cohere: "cohere" };
  for (const [protocol, name] of Object.entries(bench)) out[`bench-${protocol}`] = { protocol, events: STREAMS[name].events };
  for (const protocol of Object.keys(PARSERS)) for (const [name, parts] of Object.entries(SYNTHETIC)) out[`${name}-${protocol}`] = { protocol, events: writeUpstream(protocol, parts) };
  return out;
}

const concat = (events: readonly Uint8Array[]) => Buffer.concat(events);
/** The ways an upstream's bytes arrive: first event then the rest (bench/upstream.ts), one piece per event, 7-byte pieces (cutting UTF-8 and frames). */
export const CHUNKINGS: Record<string, (events: readonly Uint8Array[]) => Uint8Array[]> = {
  first: (events) => [events[0]!, concat(events.slice(1))],
  event: (events) => [...events],
  bytes7: (events) => {
    const all = concat(events);
    const out: Uint8Array[] = [];
    for (let at = 0; at < all.length; at += 7) out.push(all.subarray(at, at + 7));
    return out;
  },
};

function bodyOf(pieces: readonly Uint8Array[]): UpstreamBody {
  let at = 0;
  let cancelled = false;
  return {
    read: async () => (at < pieces.length ? pieces[at++]! : null),
    pipe(sink) {
      queueMicrotask(() => {
        while (at < pieces.length && !cancelled) sink.chunk(pieces[at++]!);
        if (!cancelled) sink.end();
      });
    },
    pause() {},
    resume() {},
    cancel: () => void (cancelled = true),
  };
}

/** What translatedStream gives a client of `writer` for these upstream pieces: bytes, metered usage, warnings. */
export async function translateCase(parserOf: () => StreamParser, writer: Writer, request: IrRequest, pieces: readonly Uint8Array[]): Promise<string> {
  const warnings: string[] = [];
  const metered: string[] = [];
  const ingress = { createStreamWriter: writer } as unknown as ProtocolAdapter;
  const body = bodyOf(pieces);
  const parser = parserOf();
  const { parts: first, ended } = await readFirstParts(body, parser);
  if (first.length === 0) return "no parts";
  const ticket = { ok: () => metered.push("ok"), broke: (e: { message: string }) => metered.push(`broke: ${e.message}`), released: () => metered.push("released") };
  const out = translatedStream({ first, ended, body, parser }, ingress, request, (w) => warnings.push(w), "lane-model", ticket, undefined, (usage, size) => metered.push(`${JSON.stringify(usage)} ${size}`));
  const bytes = Buffer.from(await new Response(out).arrayBuffer());
  return `${bytes.toString("base64")}\n${metered.join("\n")}\n${warnings.join("\n")}`;
}

/** Every case: name -> its output. */
export async function allCases(streams: Record<string, { protocol: string; events: Uint8Array[] }>): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [streamName, { protocol, events }] of Object.entries(streams)) {
    for (const [chunking, cut] of Object.entries(CHUNKINGS)) {
      for (const [client, writer] of Object.entries(WRITERS)) {
        for (const [requestName, request] of Object.entries(REQUESTS)) {
          out[`${streamName} ${chunking} -> ${client} (${requestName})`] = await translateCase(PARSERS[protocol]!, writer, request, cut(events));
        }
      }
    }
  }
  return out;
}
