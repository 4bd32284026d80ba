// A zero-delay imitation of the vendor upstreams for the data-plane benchmark (bench/dataplane.ts).
//   POST /v1/chat/completions  OpenAI chat completions: a `chat.completion`, or with `"stream": true`
//                              19 `data: {chat.completion.chunk}` events ending with `data: [DONE]`.
//   POST /v1/messages          Anthropic messages: a `message`, or with `"stream": true` 21 named events
//                              (message_start ... content_block_delta x15 ... message_delta, message_stop).
//   POST /v1/responses         OpenAI Responses: a `response`, or with `"stream": true` 22 typed events
//                              (response.created, .in_progress, output_item.added, content_part.added,
//                              output_text.delta x15, output_text.done, content_part.done,
//                              output_item.done, response.completed), each with its sequence_number.
//   POST /v1beta/models/{model}:generateContent        Gemini: a GenerateContentResponse (indented, as
//   POST /v1beta/models/{model}:streamGenerateContent  Google sends it); streamed, 15 chunks, with
//                              `?alt=sse` as `data: ...\r\n\r\n` events, without it as one JSON array.
//   POST /model/{modelId}/converse         Bedrock Converse: a ConverseResponse.
//   POST /model/{modelId}/converse-stream  Bedrock ConverseStream: 19 AWS event-stream binary messages
//                              (messageStart, contentBlockDelta x15, contentBlockStop, messageStop,
//                              metadata), framed by src/transport/eventstream.ts.
//                              A Bedrock request signed with SigV4 (AWS's example key pair, us-east-1) is
//                              verified with src/transport/sigv4.ts for the first VERIFY_SIGNED of them
//                              (a bad one is refused 403 InvalidSignatureException); after that only the
//                              presence of the AWS4-HMAC-SHA256 authorization is counted, to keep the
//                              upstream cheap. Unsigned ones (the benchmark's direct target) are answered.
//   POST /v2/chat              Cohere Chat v2: a chat response, or with `"stream": true` 19 named events
//                              (message-start, content-start, content-delta x15, content-end, message-end
//                              with finish_reason and usage) ending with `data: [DONE]`.
//   GET  /stats                requests answered so far, and the Bedrock signing counts (the benchmark's
//                              sanity check).
// Field names follow the test imitations in tests/support/upstreams/ (written from the vendors' API
// references). Every answer's bytes are built once at start; a request costs reading its body and one or
// two writes.
// Run: `bun bench/upstream.ts [port]` (0 or none: the OS picks); prints {"msg":"upstream started","data":"host:port"}.
import { encodeEventStreamMessage } from "../src/transport/eventstream.ts";
import { verifyRequest } from "../src/transport/sigv4.ts";

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

// --- OpenAI Responses -----------------------------------------------------------------------------------
// The answer to the benchmark's request (instructions, temperature 0.2, max_output_tokens 256), the
// request's settings echoed as OpenAI echoes them. A non-reasoning model, so the output is one message.
const RESPONSES_MODEL = "gpt-4.1-mini-2025-04-14";
const RESPONSE_ID = "resp_0d4c2b7a9e1f3c5b006921a7f0c4e88193b6d2a5f7e9c1b3d5";
const RESPONSE_MESSAGE_ID = "msg_0d4c2b7a9e1f3c5b006921a7f1a2b48193a8c6e4f2d0b9a7c5";
const RESPONSE_INSTRUCTIONS =
  "You are a concise assistant for an internal engineering help desk. Answer in two or three sentences and name the first thing to check.";
const outputText = (text: string) => ({ type: "output_text", annotations: [], logprobs: [], text });
const responseMessage = (status: "in_progress" | "completed") => ({
  id: RESPONSE_MESSAGE_ID,
  type: "message",
  status,
  content: status === "completed" ? [outputText(ANSWER)] : [],
  role: "assistant",
});
const responseObject = (status: "in_progress" | "completed") => ({
  id: RESPONSE_ID,
  object: "response",
  created_at: CREATED,
  status,
  background: false,
  completed_at: status === "completed" ? CREATED + 1 : null,
  error: null,
  incomplete_details: null,
  instructions: RESPONSE_INSTRUCTIONS,
  max_output_tokens: 256,
  max_tool_calls: null,
  model: RESPONSES_MODEL,
  output: status === "completed" ? [responseMessage("completed")] : [],
  parallel_tool_calls: true,
  previous_response_id: null,
  prompt_cache_key: null,
  reasoning: { effort: null, summary: null },
  safety_identifier: null,
  service_tier: "default",
  store: true,
  temperature: 0.2,
  text: { format: { type: "text" }, verbosity: "medium" },
  tool_choice: "auto",
  tools: [],
  top_logprobs: 0,
  top_p: 1,
  truncation: "disabled",
  usage:
    status === "completed"
      ? { input_tokens: INPUT_TOKENS, input_tokens_details: { cached_tokens: 0 }, output_tokens: OUTPUT_TOKENS, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: INPUT_TOKENS + OUTPUT_TOKENS }
      : null,
  user: null,
  metadata: {},
});
const responsesResponse = encoder.encode(JSON.stringify(responseObject("completed")));
let sequence = 0;
const typed = (data: Record<string, unknown> & { type: string }) => event(data.type, { ...data, sequence_number: sequence++ });
// Delta events carry `obfuscation` (padding that hides token lengths) unless the request turns it off.
const obfuscation = (delta: string) => "aBcDeFgHiJkLmNoPqRsTuVwX".slice(0, Math.max(2, 24 - delta.length));
const textAt = { item_id: RESPONSE_MESSAGE_ID, output_index: 0, content_index: 0 };
const responsesEvents = [
  typed({ type: "response.created", response: responseObject("in_progress") }),
  typed({ type: "response.in_progress", response: responseObject("in_progress") }),
  typed({ type: "response.output_item.added", output_index: 0, item: responseMessage("in_progress") }),
  typed({ type: "response.content_part.added", ...textAt, part: outputText("") }),
  ...DELTAS.map((delta) => typed({ type: "response.output_text.delta", ...textAt, delta, logprobs: [], obfuscation: obfuscation(delta) })),
  typed({ type: "response.output_text.done", ...textAt, text: ANSWER, logprobs: [] }),
  typed({ type: "response.content_part.done", ...textAt, part: outputText(ANSWER) }),
  typed({ type: "response.output_item.done", output_index: 0, item: responseMessage("completed") }),
  typed({ type: "response.completed", response: responseObject("completed") }),
].map((event) => encoder.encode(event));

// --- Gemini ---------------------------------------------------------------------------------------------
const GEMINI_MODEL = "gemini-2.5-flash";
const GEMINI_RESPONSE_ID = "bChiaf7sKvWUz7IPq5XH4Ak";
const promptTokensDetails = [{ modality: "TEXT", tokenCount: INPUT_TOKENS }];
const geminiChunk = (text: string, final: boolean) => ({
  candidates: [{ content: { parts: [{ text }], role: "model" }, ...(final ? { finishReason: "STOP" } : {}), index: 0 }],
  usageMetadata: final
    ? { promptTokenCount: INPUT_TOKENS, candidatesTokenCount: OUTPUT_TOKENS, totalTokenCount: INPUT_TOKENS + OUTPUT_TOKENS, promptTokensDetails, candidatesTokensDetails: [{ modality: "TEXT", tokenCount: OUTPUT_TOKENS }] }
    : { promptTokenCount: INPUT_TOKENS, totalTokenCount: INPUT_TOKENS, promptTokensDetails },
  modelVersion: GEMINI_MODEL,
  responseId: GEMINI_RESPONSE_ID,
});
// Google indents its JSON answers (2 spaces); SSE events are one line each, framed with CRLF pairs.
const geminiResponse = encoder.encode(JSON.stringify(geminiChunk(ANSWER, true), null, 2));
const geminiChunks = DELTAS.map((text, i) => geminiChunk(text, i === DELTAS.length - 1));
const geminiSseEvents = geminiChunks.map((c) => encoder.encode(`data: ${JSON.stringify(c)}\r\n\r\n`));
const geminiArrayEvents = [...geminiChunks.map((c, i) => encoder.encode((i === 0 ? "[" : ",\r\n") + JSON.stringify(c, null, 2))), encoder.encode("]")];

// --- Bedrock Converse -----------------------------------------------------------------------------------
const bedrockUsage = { inputTokens: INPUT_TOKENS, outputTokens: OUTPUT_TOKENS, totalTokens: INPUT_TOKENS + OUTPUT_TOKENS };
const bedrockResponse = encoder.encode(
  JSON.stringify({ output: { message: { role: "assistant", content: [{ text: ANSWER }] } }, stopReason: "end_turn", usage: bedrockUsage, metrics: { latencyMs: 412 } }),
);
const bedrockEvent = (type: string, payload: unknown) =>
  encodeEventStreamMessage({ ":event-type": type, ":content-type": "application/json", ":message-type": "event" }, encoder.encode(JSON.stringify(payload)));
const bedrockEvents = [
  bedrockEvent("messageStart", { role: "assistant" }),
  ...DELTAS.map((text) => bedrockEvent("contentBlockDelta", { contentBlockIndex: 0, delta: { text } })),
  bedrockEvent("contentBlockStop", { contentBlockIndex: 0 }),
  bedrockEvent("messageStop", { stopReason: "end_turn" }),
  bedrockEvent("metadata", { usage: bedrockUsage, metrics: { latencyMs: 412 } }),
];
/** AWS's documented example key pair (IAM User Guide); bench/dataplane.ts gives the gateway and the floor the same. */
const BENCH_AWS = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", region: "us-east-1" } as const;
/** Signed Bedrock requests verified in full; the rest are only checked for an AWS4-HMAC-SHA256 authorization. */
const VERIFY_SIGNED = 32;
const signing = { signed: 0, verified: 0, rejected: 0, unsigned: 0, last_rejection: null as string | null };

// --- Cohere Chat v2 ---------------------------------------------------------------------------------------
// As tests/support/upstreams/cohere.ts answers (from the official SDK's serializers and the API reference):
// `tokens.input_tokens` counts the prompt template Cohere adds, `billed_units` does not, so they differ.
const COHERE_ID = "5c2e8f0a-7b1d-4e3a-9c6f-2d8b4a1e0f73";
const COHERE_TEMPLATE_TOKENS = 66;
const cohereUsage = {
  billed_units: { input_tokens: INPUT_TOKENS, output_tokens: OUTPUT_TOKENS },
  tokens: { input_tokens: INPUT_TOKENS + COHERE_TEMPLATE_TOKENS, output_tokens: OUTPUT_TOKENS },
};
const cohereResponse = encoder.encode(
  JSON.stringify({ id: COHERE_ID, message: { role: "assistant", content: [{ type: "text", text: ANSWER }] }, finish_reason: "COMPLETE", usage: cohereUsage }),
);
const cohereEvent = (type: string, data: Record<string, unknown>) => event(type, { type, ...data });
const cohereEvents = [
  cohereEvent("message-start", { id: COHERE_ID, delta: { message: { role: "assistant" } } }),
  cohereEvent("content-start", { index: 0, delta: { message: { content: { type: "text", text: "" } } } }),
  ...DELTAS.map((text) => cohereEvent("content-delta", { index: 0, delta: { message: { content: { text } } } })),
  cohereEvent("content-end", { index: 0 }),
  cohereEvent("message-end", { delta: { finish_reason: "COMPLETE", usage: cohereUsage } }),
  "data: [DONE]\n\n", // the terminator the SDK's stream reader stops at
].map((event) => encoder.encode(event));

// --- Serving --------------------------------------------------------------------------------------------
const JSON_TYPE = "application/json";
const SSE_TYPE = "text/event-stream; charset=utf-8";
const OPENAI_HEADERS = { "x-request-id": "req_bench0openai", "openai-processing-ms": "312", "x-ratelimit-remaining-requests": "9999" };
const ANTHROPIC_HEADERS = { "request-id": "req_011Bench0anthropic", "anthropic-ratelimit-requests-remaining": "3999" };
const GEMINI_HEADERS = { vary: "Origin, X-Origin, Referer", "server-timing": "gfet4t7; dur=412", server: "scaffolding on HTTPServer2" };
const BEDROCK_HEADERS = { "x-amzn-requestid": "5f0c6a1e-9b3d-4c2e-8a7f-1d2b3c4d5e6f" };
const GEMINI_JSON = "application/json; charset=UTF-8";
const EVENTSTREAM_TYPE = "application/vnd.amazon.eventstream";
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
const responsesStream = streamBytes(responsesEvents);
const geminiSseStream = streamBytes(geminiSseEvents);
const geminiArrayStream = streamBytes(geminiArrayEvents);
const bedrockStream = streamBytes(bedrockEvents);
const cohereStream = streamBytes(cohereEvents);
/** Each streamed answer's bytes, event by event. */
export const STREAMS = { openai: openaiStream, anthropic: anthropicStream, responses: responsesStream, geminiSse: geminiSseStream, geminiArray: geminiArrayStream, bedrock: bedrockStream, cohere: cohereStream };

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

function answer(nonStream: Uint8Array, stream: StreamBytes, vendorHeaders: Record<string, string>, streamed: boolean, types = { json: JSON_TYPE, stream: SSE_TYPE }): Response {
  if (!streamed) return new Response(nonStream, { headers: { "content-type": types.json, ...vendorHeaders } });
  return new Response(eventStream(stream), { headers: { "content-type": types.stream, "cache-control": "no-cache", ...vendorHeaders } });
}

const GEMINI_ROUTE = /^\/v1beta\/models\/[^/:]+:(generateContent|streamGenerateContent)$/;
const BEDROCK_ROUTE = /^\/model\/[^/]+\/(converse|converse-stream)$/;
const AWS_SIGNED = /^AWS4-HMAC-SHA256 /;

/** SigV4: the first VERIFY_SIGNED signed requests in full, then the header's presence; undefined = pass. */
function checkSignature(request: Request, body: string): string | undefined {
  const authorization = request.headers.get("authorization");
  if (authorization === null || !AWS_SIGNED.test(authorization)) {
    signing.unsigned++;
    return undefined;
  }
  signing.signed++;
  if (signing.verified + signing.rejected >= VERIFY_SIGNED) return undefined;
  const result = verifyRequest({ method: request.method, url: request.url, headers: request.headers, body }, (id) => (id === BENCH_AWS.accessKeyId ? BENCH_AWS.secretAccessKey : undefined), {
    service: "bedrock",
    region: BENCH_AWS.region,
  });
  if (result.ok) {
    signing.verified++;
    return undefined;
  }
  signing.rejected++;
  signing.last_rejection = result.reason;
  return result.reason;
}

let served = 0;
// Imported (bench/stream-decoders.ts reuses the streamed answers), it serves nothing.
const server = import.meta.main
  ? Bun.serve({
  hostname: "127.0.0.1",
  port: Number(Bun.argv[2] ?? process.env.UPSTREAM_PORT ?? 0),
  idleTimeout: 120,
  async fetch(request) {
    const url = new URL(request.url);
    const path = url.pathname;
    if (request.method === "GET" && path === "/stats") return Response.json({ served, bedrock_signing: signing });
    if (request.method !== "POST") return new Response("not found", { status: 404 });
    const body = await request.text();
    served++;
    if (path === "/v1/chat/completions") return answer(openaiCompletion, openaiStream, OPENAI_HEADERS, STREAM_REQUESTED.test(body));
    if (path === "/v1/messages") return answer(anthropicMessage, anthropicStream, ANTHROPIC_HEADERS, STREAM_REQUESTED.test(body));
    if (path === "/v1/responses") return answer(responsesResponse, responsesStream, OPENAI_HEADERS, STREAM_REQUESTED.test(body));
    if (path === "/v2/chat") return answer(cohereResponse, cohereStream, {}, STREAM_REQUESTED.test(body), { json: JSON_TYPE, stream: "text/event-stream" });
    const gemini = GEMINI_ROUTE.exec(path);
    if (gemini) {
      if (gemini[1] === "generateContent") return answer(geminiResponse, geminiSseStream, GEMINI_HEADERS, false, { json: GEMINI_JSON, stream: SSE_TYPE });
      const sse = url.searchParams.get("alt") === "sse";
      return answer(geminiResponse, sse ? geminiSseStream : geminiArrayStream, GEMINI_HEADERS, true, { json: GEMINI_JSON, stream: sse ? "text/event-stream" : GEMINI_JSON });
    }
    const bedrock = BEDROCK_ROUTE.exec(path);
    if (bedrock) {
      const refused = checkSignature(request, body);
      if (refused) return Response.json({ message: refused }, { status: 403, headers: { ...BEDROCK_HEADERS, "x-amzn-errortype": "InvalidSignatureException" } });
      return answer(bedrockResponse, bedrockStream, BEDROCK_HEADERS, bedrock[1] === "converse-stream", { json: JSON_TYPE, stream: EVENTSTREAM_TYPE });
    }
    return Response.json({ error: { message: `no route ${path}`, type: "invalid_request_error" } }, { status: 404 });
  },
})
  : undefined;
if (server) console.log(JSON.stringify({ msg: "upstream started", data: `${server.hostname}:${server.port}`, chunking: CHUNKING }));
