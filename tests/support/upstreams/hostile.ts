// A hostile upstream: the ways a provider (or a proxy in front of one) answers 2xx with something that is
// not the vendor's answer, breaks an answer off, or answers too much or too slowly. The scenario is the
// first path segment of the request, so a provider's base_url picks it (`baseOf("html")` + "/v1" for an
// OpenAI lane, `baseOf("html")` for an Anthropic one) and one imitation serves lanes of any protocol.
// Answers that HTTP framing cannot produce through Bun.serve (a reset mid-body, a body shorter than its
// content-length) come from a raw TCP server.
import net from "node:net";

/** Text the bad bodies carry, which must never reach a client. */
export const HOSTILE_MARK = "HOSTILE-BODY-7f3a";

/** A valid OpenAI answer with a byte that is not UTF-8 in its text: relayed, it must arrive unchanged. */
export const EXACT_ANSWER = Buffer.concat([
  Buffer.from(`{"id":"chatcmpl-exact","object":"chat.completion","created":1,"model":"exact","choices":[{"index":0,"message":{"role":"assistant","content":"kept `),
  Buffer.from([0xc3]),
  Buffer.from(` as sent"},"finish_reason":"stop"}],  "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n`),
]);

const MIB = 1 << 20;

/** Sizes of the enormous answers: 300 MB sent as it is, and 512 MiB of zeros gzipped to about 0.5 MB. */
export const HUGE_BYTES = 300 * 1000 * 1000;
export const BOMB_INFLATED_BYTES = 512 * MIB;

const json = "application/json";

/** Sizes of the streamed faults: one SSE event of 300 MB that never ends, and 512 MiB of one event gzipped. */
export const SSE_BOMB_INFLATED_BYTES = 512 * MIB;

/** The start of an SSE event none of whose lines ever ends (a 1 MiB `a` at a time). */
const SSE_EVENT_HEAD = 'event: message_start\ndata: {"type":"message_start","id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"';

const LATE_EVENT_START = `event: message_start\ndata: ${JSON.stringify({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", content: [], model: "late", stop_reason: null, stop_sequence: null, usage: { input_tokens: 3, output_tokens: 0 } } })}\n\n`;

function huge(head = '{"id":"huge","text":"'): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(MIB).fill(0x61);
  let sent = 0;
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(head));
    },
    pull(controller) {
      if (sent >= HUGE_BYTES) return controller.close();
      controller.enqueue(chunk);
      sent += chunk.byteLength;
    },
  });
}

/** One byte a second, for as long as `seconds` (the upstream never finishes in time). */
function trickle(seconds: number): ReadableStream<Uint8Array> {
  let left = seconds;
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"id":"'));
    },
    async pull(controller) {
      await Bun.sleep(1000);
      if (left-- <= 0) return controller.close();
      controller.enqueue(new Uint8Array([0x61]));
    },
  });
}

export interface HostileUpstream {
  /** The base URL of a scenario (append "/v1" for an OpenAI lane). */
  baseOf(scenario: string): string;
  /** How many requests each scenario received. */
  readonly hits: Record<string, number>;
  stop(): Promise<void>;
}

const RAW_SCENARIOS = new Set(["reset", "short"]);

export async function startHostileUpstream(): Promise<HostileUpstream> {
  const hits: Record<string, number> = {};
  let bomb: Uint8Array | undefined;
  let sseBomb: Uint8Array | undefined;
  const sse = "text/event-stream";
  const answers: Record<string, () => Response> = {
    html: () => new Response(`<!doctype html><html><body><h1>502 Bad Gateway</h1>${HOSTILE_MARK}</body></html>`, { headers: { "content-type": "text/html; charset=utf-8" } }),
    binary: () => new Response(Uint8Array.from({ length: 4096 }, (_, i) => (i * 37) & 0xff), { headers: { "content-type": "application/octet-stream" } }),
    "binary-json": () => new Response(Uint8Array.from({ length: 4096 }, (_, i) => (i * 37 + 128) & 0xff), { headers: { "content-type": json } }),
    truncated: () => new Response(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"${HOSTILE_MARK}`, { headers: { "content-type": json } }),
    // Over the size where only the usage is cut out: ends in `}` yet the outer object never closes.
    "truncated-large": () =>
      new Response(`{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"${"a".repeat(20_000)}"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}`, { headers: { "content-type": json } }),
    // What a careless OpenAI-compatible server writes: its dict printed, single quotes, whole and balanced.
    "python-json": () => new Response(`{'id': 'chatcmpl-1', 'choices': [{'message': {'content': '${HOSTILE_MARK}'}}]}`, { headers: { "content-type": json } }),
    exact: () => new Response(EXACT_ANSWER, { headers: { "content-type": json } }),
    // A JSON answer whatever was asked: a stream request's 2xx of the wrong content type.
    "stream-json": () => new Response(EXACT_ANSWER, { headers: { "content-type": json } }),
    huge: () => new Response(huge(), { headers: { "content-type": json } }),
    bomb: () => new Response((bomb ??= Bun.gzipSync(new Uint8Array(BOMB_INFLATED_BYTES))), { headers: { "content-type": json, "content-encoding": "gzip" } }),
    trickle: () => new Response(trickle(30), { headers: { "content-type": json } }),
    // A redirect elsewhere (`steal` counts whoever follows it): the provider's key must not go along.
    redirect: () => new Response(HOSTILE_MARK, { status: 307, headers: { location: `http://127.0.0.1:${server.port}/steal/v1/chat/completions`, "content-type": "text/plain" } }),
    "sse-event": () => new Response(huge(SSE_EVENT_HEAD), { headers: { "content-type": sse } }),
    // A real first event (Anthropic's message_start), then one that never ends: cut after bytes went out.
    "sse-late-event": () => new Response(huge(`${LATE_EVENT_START}${SSE_EVENT_HEAD}`), { headers: { "content-type": sse } }),
    "sse-bomb": () =>
      new Response((sseBomb ??= Bun.gzipSync(Buffer.concat([Buffer.from(SSE_EVENT_HEAD), Buffer.alloc(SSE_BOMB_INFLATED_BYTES, 0x61)]))), {
        headers: { "content-type": sse, "content-encoding": "gzip" },
      }),
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(request) {
      await request.arrayBuffer();
      const scenario = new URL(request.url).pathname.split("/")[1] ?? "";
      hits[scenario] = (hits[scenario] ?? 0) + 1;
      return answers[scenario]?.() ?? new Response("no such scenario", { status: 404 });
    },
  });
  // Raw HTTP/1.1: the status line and headers, part of the body, then a reset or an early close.
  const raw = net.createServer((socket) => {
    socket.once("data", (data) => {
      const scenario = /^POST \/([^/ ]+)/.exec(data.toString("latin1"))?.[1] ?? "";
      hits[scenario] = (hits[scenario] ?? 0) + 1;
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"id":"chatcmpl-1","choices":[{"message":{"content":"${HOSTILE_MARK}`);
      setTimeout(() => (scenario === "reset" ? socket.resetAndDestroy() : socket.end()), 20);
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((listening) => raw.listen(0, "127.0.0.1", listening));
  return {
    baseOf: (scenario) => `http://127.0.0.1:${RAW_SCENARIOS.has(scenario) ? (raw.address() as net.AddressInfo).port : server.port}/${scenario}`,
    hits,
    async stop() {
      raw.close();
      await server.stop(true);
    },
  };
}
