// A zero-delay imitation of the two vendor upstreams for the data-plane benchmark (bench/dataplane.ts).
//   POST /v1/chat/completions  OpenAI chat completions: a `chat.completion`, or with `"stream": true`
//                              19 `data: {chat.completion.chunk}` events ending with `data: [DONE]`.
//   POST /v1/messages          Anthropic messages: a `message`, or with `"stream": true` 21 named events
//                              (message_start ... content_block_delta x15 ... message_delta, message_stop).
//   GET  /stats                requests answered so far (the benchmark's sanity check).
// Every answer's bytes are built once at start; a request costs reading its body and one or two writes.
// Run: `bun bench/upstream.ts [port]` (0 or none: the OS picks); prints {"msg":"upstream started","data":"host:port"}.

const encoder = new TextEncoder();
const CREATED = 1_763_800_000;
const OPENAI_ID = "chatcmpl-CdBench7f3a9c2e4b1d0a8f6e5c";
const ANTHROPIC_ID = "msg_01BenchXq7vYb3kTz9LmN4pRs";
const OPENAI_MODEL = "gpt-4o-mini-2024-07-18";
const ANTHROPIC_MODEL = "claude-haiku-4-5-20251001";
const FINGERPRINT = "fp_560af6e559";
// ASCII only, so byte and character counts agree for the benchmark's raw HTTP client.
const DELTAS = [
  "The most likely cause",
  " is that the cache key",
  " now includes the compiler's",
  " version string, so every",
  " entry written before the bump",
  " is treated as stale.",
  " Check first whether the",
  " toolchain hash in your",
  " cache key changed between",
  " the last hit and the",
  " first miss; if it did,",
  " the misses are expected",
  " and the cache will refill",
  " after one full build on",
  " the new compiler.",
];
const ANSWER = DELTAS.join("");
const INPUT_TOKENS = 52;
const OUTPUT_TOKENS = 61;

// --- OpenAI ---------------------------------------------------------------------------------------------
const openaiUsage = {
  prompt_tokens: INPUT_TOKENS,
  completion_tokens: OUTPUT_TOKENS,
  total_tokens: INPUT_TOKENS + OUTPUT_TOKENS,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};
const openaiCompletion = encoder.encode(
  JSON.stringify({
    id: OPENAI_ID,
    object: "chat.completion",
    created: CREATED,
    model: OPENAI_MODEL,
    choices: [{ index: 0, message: { role: "assistant", content: ANSWER, refusal: null, annotations: [] }, logprobs: null, finish_reason: "stop" }],
    usage: openaiUsage,
    service_tier: "default",
    system_fingerprint: FINGERPRINT,
  }),
);
const chunk = (choices: unknown[], usage: unknown = null) =>
  `data: ${JSON.stringify({ id: OPENAI_ID, object: "chat.completion.chunk", created: CREATED, model: OPENAI_MODEL, service_tier: "default", system_fingerprint: FINGERPRINT, choices, usage })}\n\n`;
const openaiEvents = [
  chunk([{ index: 0, delta: { role: "assistant", content: "", refusal: null }, logprobs: null, finish_reason: null }]),
  ...DELTAS.map((content) => chunk([{ index: 0, delta: { content }, logprobs: null, finish_reason: null }])),
  chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }]),
  chunk([], openaiUsage), // the request asked for stream_options.include_usage
  "data: [DONE]\n\n",
].map((event) => encoder.encode(event));

// --- Anthropic ------------------------------------------------------------------------------------------
const anthropicUsage = (output: number) => ({
  input_tokens: INPUT_TOKENS,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
  output_tokens: output,
  service_tier: "standard",
});
const anthropicMessage = encoder.encode(
  JSON.stringify({
    model: ANTHROPIC_MODEL,
    id: ANTHROPIC_ID,
    type: "message",
    role: "assistant",
    content: [{ type: "text", text: ANSWER }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: anthropicUsage(OUTPUT_TOKENS),
  }),
);
const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
const anthropicEvents = [
  event("message_start", {
    type: "message_start",
    message: { model: ANTHROPIC_MODEL, id: ANTHROPIC_ID, type: "message", role: "assistant", content: [], stop_reason: null, stop_sequence: null, usage: anthropicUsage(1) },
  }),
  event("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
  event("ping", { type: "ping" }),
  ...DELTAS.map((text) => event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })),
  event("content_block_stop", { type: "content_block_stop", index: 0 }),
  event("message_delta", {
    type: "message_delta",
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { input_tokens: INPUT_TOKENS, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: OUTPUT_TOKENS },
  }),
  event("message_stop", { type: "message_stop" }),
].map((event) => encoder.encode(event));

// --- Serving --------------------------------------------------------------------------------------------
const JSON_TYPE = "application/json";
const SSE_TYPE = "text/event-stream; charset=utf-8";
const OPENAI_HEADERS = { "x-request-id": "req_bench0openai", "openai-processing-ms": "312", "x-ratelimit-remaining-requests": "9999" };
const ANTHROPIC_HEADERS = { "request-id": "req_011Bench0anthropic", "anthropic-ratelimit-requests-remaining": "3999" };
const STREAM_REQUESTED = /"stream"\s*:\s*true/;

// How a stream's events go out. Bun.serve coalesces writes made in one turn of its loop, so a truly
// zero-delay stream leaves as one write; `first` (the default) sends the first event alone and the rest
// one loop turn later, so a client's time to first event means something; `event` sends every event on
// its own turn (what a vendor's trickling stream looks like to a proxy; costs the upstream ~8 us/event).
const CHUNKING = (process.env.UPSTREAM_CHUNKING ?? "first") as "first" | "event" | "whole";
if (!["first", "event", "whole"].includes(CHUNKING)) throw new Error(`UPSTREAM_CHUNKING: first | event | whole, not ${CHUNKING}`);

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), (at += p.length));
  return out;
}
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

interface StreamBytes {
  readonly events: Uint8Array[];
  readonly rest: Uint8Array;
  readonly whole: Uint8Array;
}
const streamBytes = (events: Uint8Array[]): StreamBytes => ({ events, rest: concat(events.slice(1)), whole: concat(events) });
const openaiStream = streamBytes(openaiEvents);
const anthropicStream = streamBytes(anthropicEvents);

function eventStream(bytes: StreamBytes): ReadableStream<Uint8Array> | Uint8Array {
  if (CHUNKING === "whole") return bytes.whole;
  return new ReadableStream({
    type: "direct",
    async pull(controller) {
      if (CHUNKING === "first") {
        controller.write(bytes.events[0]!);
        controller.flush();
        await nextTurn();
        controller.write(bytes.rest);
      } else {
        for (const event of bytes.events) {
          controller.write(event);
          controller.flush();
          await nextTurn();
        }
      }
      controller.close();
    },
  });
}

function answer(nonStream: Uint8Array, stream: StreamBytes, vendorHeaders: Record<string, string>, streamed: boolean): Response {
  if (!streamed) return new Response(nonStream, { headers: { "content-type": JSON_TYPE, ...vendorHeaders } });
  return new Response(eventStream(stream), { headers: { "content-type": SSE_TYPE, "cache-control": "no-cache", ...vendorHeaders } });
}

let served = 0;
export const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(Bun.argv[2] ?? process.env.UPSTREAM_PORT ?? 0),
  idleTimeout: 120,
  async fetch(request) {
    const path = new URL(request.url).pathname;
    if (request.method === "GET" && path === "/stats") return Response.json({ served });
    if (request.method !== "POST") return new Response("not found", { status: 404 });
    const stream = STREAM_REQUESTED.test(await request.text());
    served++;
    if (path === "/v1/chat/completions") return answer(openaiCompletion, openaiStream, OPENAI_HEADERS, stream);
    if (path === "/v1/messages") return answer(anthropicMessage, anthropicStream, ANTHROPIC_HEADERS, stream);
    return Response.json({ error: { message: `no route ${path}`, type: "invalid_request_error" } }, { status: 404 });
  },
});
console.log(JSON.stringify({ msg: "upstream started", data: `${server.hostname}:${server.port}`, chunking: CHUNKING }));
