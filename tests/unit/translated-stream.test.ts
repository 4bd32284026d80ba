// translatedStream (dataplane/translate.ts) on the push path, against an upstream body that records what
// was done to it: what the client reads, what the lane's ticket hears, and when the body is given up
// (its connection closed) or read to its end (its connection reusable).
import { describe, expect, test } from "bun:test";
import { translatedStream } from "../../src/dataplane/translate.ts";
import type { IrRequest, IrStreamPart } from "../../src/ir/index.ts";
import { adapterFor } from "../../src/protocols/registry.ts";
import type { BodySink, UpstreamBody } from "../../src/transport/body.ts";

const openai = adapterFor("openai")!;
const anthropic = adapterFor("anthropic")!;
const request: IrRequest = { model: "m", system: [], messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], tools: [], sampling: {}, stream: true };
const encode = (text: string) => new TextEncoder().encode(text);
const event = (name: string, data: object) => encode(`event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`);
const START = event("message_start", { message: { id: "msg_1", type: "message", role: "assistant", model: "", content: [], usage: { input_tokens: 3, output_tokens: 1 } } });
const TEXT = [event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }), event("content_block_delta", { index: 0, delta: { type: "text_delta", text: "hello" } })];
const END = [event("content_block_stop", { index: 0 }), event("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 5 } }), event("message_stop", {})];

/** An upstream body whose piped pieces are `rest`, then `ending` (its end, a break, or nothing: it stays open). */
function recordedBody(rest: Uint8Array[], ending: "end" | "break" | "open") {
  const log: string[] = [];
  const body: UpstreamBody = {
    read: async () => null,
    pipe(sink: BodySink) {
      log.push("pipe");
      queueMicrotask(() => {
        for (const piece of rest) if (!log.includes("cancel")) sink.chunk(piece);
        if (log.includes("cancel")) return;
        if (ending === "end") (log.push("end"), sink.end());
        if (ending === "break") sink.fail(new Error("connection reset"));
      });
    },
    pause: () => log.push("pause"),
    resume: () => log.push("resume"),
    cancel: () => log.push("cancel"),
  };
  return { body, log };
}

function run(first: Uint8Array[], rest: Uint8Array[], ending: "end" | "break" | "open", ended = false) {
  const parser = anthropic.createStreamParser();
  const parts: IrStreamPart[] = first.flatMap((piece) => parser.push(piece));
  if (ended) parts.push(...parser.end());
  const { body, log } = recordedBody(rest, ending);
  const heard: string[] = [];
  const usage: number[] = [];
  const ticket = { ok: () => heard.push("ok"), broke: (e: { message: string }) => heard.push(`broke: ${e.message}`), released: () => heard.push("released") };
  const stream = translatedStream({ first: parts, ended, body, parser }, openai, request, () => {}, "upstream-model", ticket, undefined, (u) => usage.push(u.output));
  return { stream, log, heard, usage };
}

describe("translatedStream on the push path", () => {
  test("a stream read whole: the client gets the translation, the ticket hears ok once, usage is told once, the body is read to its end", async () => {
    const { stream, log, heard, usage } = run([START], [...TEXT, ...END], "end");
    const text = await new Response(stream).text();
    expect(text).toContain('"model":"upstream-model"');
    expect(text).toContain('"content":"hello"');
    expect(text).toEndWith("data: [DONE]\n\n");
    expect(heard).toEqual(["ok"]);
    expect(usage).toEqual([5]);
    expect(log).toEqual(["pipe", "end"]);
  });

  test("a stream whose finish came with its first piece is still read to its end, not given up", async () => {
    const { stream, log, heard } = run([START, ...TEXT, ...END], [], "end");
    expect(await new Response(stream).text()).toEndWith("data: [DONE]\n\n");
    await Bun.sleep(0);
    expect(heard).toEqual(["ok"]);
    expect(log).toEqual(["pipe", "end"]);
  });

  test("bytes after the stream's finish give the body up", async () => {
    const { stream, log } = run([START], [...TEXT, ...END, event("ping", {})], "open");
    await new Response(stream).text();
    expect(log).toEqual(["pipe", "cancel"]);
  });

  test("a break mid-stream: the client's in-stream error, the ticket hears it, the body is given up", async () => {
    const { stream, log, heard, usage } = run([START], TEXT, "break");
    const text = await new Response(stream).text();
    expect(text).toContain('"content":"hello"');
    expect(text).toContain('data: {"error":{"message":"the upstream stream broke off"');
    expect(heard).toEqual(["broke: the upstream stream broke off"]);
    expect(usage).toHaveLength(1);
    expect(log).toEqual(["pipe", "cancel"]);
  });

  test("an end without a finish: the client's in-stream error naming it (the parser's words)", async () => {
    const { stream, heard } = run([START], TEXT, "end");
    expect(await new Response(stream).text()).toContain('data: {"error":{"message":"the upstream stream ended before message_stop"');
    expect(heard).toEqual(["broke: the upstream stream ended before message_stop"]);
  });

  test("a body that ended while its first parts were read, without a finish, is not piped", async () => {
    const { stream, log, heard } = run([START, ...TEXT], [], "open", true);
    expect(await new Response(stream).text()).toContain('"error"');
    expect(heard).toHaveLength(1);
    expect(heard[0]).toStartWith("broke: ");
    expect(log).not.toContain("pipe");
  });

  test("the client leaving: the ticket is released, usage told once, the body given up", async () => {
    const { stream, log, heard, usage } = run([START], TEXT, "open");
    const reader = stream.getReader();
    expect((await reader.read()).done).toBe(false);
    await reader.cancel();
    expect(heard).toEqual(["released"]);
    expect(usage).toHaveLength(1);
    expect(log).toContain("cancel");
  });
});
