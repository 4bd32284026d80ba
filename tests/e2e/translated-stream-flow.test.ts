// A translated stream (OpenAI client, Anthropic upstream) on the push path (translate.ts): the upstream's
// body is read only as fast as the client takes the translation, so a client that stops reading stops
// the upstream too (its writes wait) instead of the gateway holding what the upstream keeps sending; and
// a client that leaves gives the upstream's body up (its connection is closed).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { LISTEN_ANY, startGateway, type RunningGateway } from "../support/gateway.ts";

const event = (name: string, data: object) => new TextEncoder().encode(`event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`);
const HEAD = [
  event("message_start", { message: { id: "msg_1", type: "message", role: "assistant", model: "claude-test", content: [], usage: { input_tokens: 3, output_tokens: 1 } } }),
  event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
];
/** 64 KiB of text deltas in one write. */
const DELTAS = (() => {
  const one = event("content_block_delta", { index: 0, delta: { type: "text_delta", text: "x".repeat(900) } });
  const count = Math.ceil((64 * 1024) / one.length);
  const out = new Uint8Array(one.length * count);
  for (let i = 0; i < count; i++) out.set(one, i * one.length);
  return out;
})();

/** What the endless upstream wrote so far, and whether its stream was given up. */
const upstream = { written: 0, cancelled: false };
const endless = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 30,
  async fetch(request) {
    await request.text();
    upstream.written = 0;
    upstream.cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      type: "direct",
      async pull(controller: { write(bytes: Uint8Array): unknown; flush(): unknown; close(): void }) {
        for (const bytes of HEAD) controller.write(bytes);
        // Each write waits while the gateway is not reading (the socket's buffers are full).
        while (!upstream.cancelled) {
          await controller.write(DELTAS);
          await controller.flush();
          upstream.written += DELTAS.length;
          if (upstream.written > 2_000_000_000) break;
        }
        controller.close();
      },
      cancel() {
        upstream.cancelled = true;
      },
    } as never);
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  },
});

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway(`${LISTEN_ANY}
providers:
  endless: {protocol: anthropic, base_url: "http://127.0.0.1:${endless.port}", api_key: k}
models:
  endless: {provider: endless, model: claude-test}
`);
});
afterAll(async () => {
  await gw?.stop();
  endless.stop(true);
});

const rssMiB = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${gw.proc.pid}/status`, "utf8"))![1]) / 1024;

describe("a translated stream flows at the client's pace", () => {
  test("a client that stops reading stops the upstream; one that leaves gives the upstream's body up", async () => {
    const controller = new AbortController();
    const response = await fetch(`${gw.data}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "endless", stream: true, messages: [{ role: "user", content: "go" }] }),
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toStartWith('data: {"id":"msg_1"');
    const before = rssMiB();
    // The client reads nothing for a while: the upstream, able to write GB a second, must be held back.
    // Once the buffers between them are full its writes stop (a busy machine takes longer to get there).
    let stalled = upstream.written;
    for (let i = 0; i < 20; i++) {
      await Bun.sleep(250);
      if (upstream.written === stalled && i >= 2) break;
      stalled = upstream.written;
    }
    await Bun.sleep(500);
    expect(upstream.written - stalled).toBeLessThan(1 << 20);
    expect(stalled).toBeLessThan(256 << 20);
    expect(rssMiB() - before).toBeLessThan(128);
    // Reading again lets it flow again.
    // What sat in the buffers between them comes first (about 15 MB here), then the upstream writes again.
    let read = 0;
    while (read < 256 << 20 && upstream.written === stalled) read += (await reader.read()).value!.length;
    expect(upstream.written).toBeGreaterThan(stalled);
    controller.abort();
    for (let i = 0; i < 50 && !upstream.cancelled; i++) await Bun.sleep(50);
    expect(upstream.cancelled).toBe(true);
  }, 20_000);
});
