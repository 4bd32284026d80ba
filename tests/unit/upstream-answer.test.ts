// Reading an upstream answer whole (src/transport/answer.ts) and naming transport faults in our own words
// (src/transport/upstream.ts): the cap after decompression in every coding, the deadline, and the causes.
import { expect, test } from "bun:test";
import zlib from "node:zlib";
import { readAnswer, type AnswerBounds } from "../../src/transport/answer.ts";
import { transportCause, type UpstreamAnswer } from "../../src/transport/upstream.ts";
import { bodyFromStream, EMPTY_BODY } from "../support/body.ts";
import { HeaderList } from "../../src/transport/http1-head.ts";
import { contentTypeProblem } from "../../src/dataplane/upstream-call.ts";

const MIB = 1 << 20;
const bounds = (over: Partial<AnswerBounds> = {}): AnswerBounds => ({ maxBytes: MIB, deadline: Infinity, now: Date.now, clientSignal: new AbortController().signal, ...over });
const answer = (body: ConstructorParameters<typeof Response>[0], headers: Record<string, string> = {}) => new Response(body, { headers });
/** A Response as the upstream client's answer; `encoded`: its body is still in its Content-Encoding. */
const upstream = (response: Response, encoded: boolean): UpstreamAnswer => ({ status: response.status, ok: response.ok, headers: new HeaderList([...response.headers].flat()), body: response.body ? bodyFromStream(response.body) : EMPTY_BODY, encoded });
const JSON_BODY = new TextEncoder().encode(JSON.stringify({ id: "x", text: "héllo ".repeat(2000) }));

const CODINGS: Record<string, (data: Uint8Array) => Uint8Array> = {
  gzip: (d) => zlib.gzipSync(d),
  deflate: (d) => zlib.deflateSync(d),
  br: (d) => zlib.brotliCompressSync(d),
  zstd: (d) => zlib.zstdCompressSync(d),
};

test("an encoded answer is inflated, in every coding fetch asks for, and bytes come back unchanged", async () => {
  for (const [coding, compress] of Object.entries(CODINGS)) {
    const read = await readAnswer(upstream(answer(compress(JSON_BODY), { "content-encoding": coding }), true), bounds());
    expect(read.ok && Buffer.from(read.bytes).equals(Buffer.from(JSON_BODY))).toBe(true);
  }
  // Not encoded (a stream call's error body, which Bun inflated): the header is not acted on twice.
  const plain = await readAnswer(upstream(answer(JSON_BODY, { "content-encoding": "gzip" }), false), bounds());
  expect(plain.ok && plain.bytes.byteLength).toBe(JSON_BODY.byteLength);
});

test("past the cap, before or after decompression, the read stops with too_large", async () => {
  const zeros = new Uint8Array(8 * MIB);
  for (const [coding, compress] of Object.entries(CODINGS)) {
    const read = await readAnswer(upstream(answer(compress(zeros), { "content-encoding": coding }), true), bounds());
    expect(read).toMatchObject({ ok: false, reason: "too_large", message: expect.stringContaining("limits.max_upstream_response_bytes (1048576 bytes)") });
  }
  expect(await readAnswer(upstream(answer(zeros), true), bounds())).toMatchObject({ ok: false, reason: "too_large" });
  // A declared length over the cap is refused before a byte is read.
  const declared = answer(new ReadableStream({ pull: () => new Promise(() => {}) }), { "content-length": String(2 * MIB) });
  expect(await readAnswer(upstream(declared, true), bounds())).toMatchObject({ ok: false, reason: "too_large" });
});

test("an unknown or corrupt coding is unreadable, named without quoting the body", async () => {
  expect(await readAnswer(upstream(answer("abc", { "content-encoding": "compress" }), true), bounds())).toMatchObject({ ok: false, reason: "unreadable", message: expect.stringContaining("(compress)") });
  expect(await readAnswer(upstream(answer("not gzip at all", { "content-encoding": "gzip" }), true), bounds())).toMatchObject({ ok: false, reason: "unreadable", message: "the upstream's answer could not be decompressed (gzip)" });
});

test("the deadline is looked at as each piece arrives", async () => {
  let clock = 0;
  const pieces = new ReadableStream<Uint8Array>({
    pull(controller) {
      clock += 1000;
      controller.enqueue(new Uint8Array([0x61]));
    },
  });
  const read = await readAnswer(upstream(answer(pieces), true), bounds({ deadline: 3500, now: () => clock }));
  expect(read).toMatchObject({ ok: false, reason: "timeout", message: expect.stringContaining("failover.timeout_secs") });
  expect(clock).toBe(4000);
});

test("transport errors are put in our own words, never Bun's", () => {
  const error = (code: string, name = "TypeError") => Object.assign(new Error("For more information, pass `verbose: true` in the second argument to fetch()"), { code, name });
  expect(transportCause(error("ECONNREFUSED"))).toBe("connection refused");
  expect(transportCause(error("ECONNRESET"))).toBe("connection reset");
  expect(transportCause(error("ENOTFOUND"))).toBe("DNS lookup failed");
  expect(transportCause(error("UNABLE_TO_VERIFY_LEAF_SIGNATURE"))).toBe("TLS handshake or certificate failed");
  expect(transportCause(error("EPROTO"))).toBe("TLS handshake or certificate failed");
  expect(transportCause(error("", "TimeoutError"))).toBe("timed out");
  expect(transportCause(new Error("anything"))).toBe("connection failed");
});

test("a 2xx content type is judged by its media type", () => {
  const headers = (type?: string) => new Headers(type ? { "content-type": type } : {});
  expect(contentTypeProblem(headers("application/json; charset=utf-8"))).toBeUndefined();
  expect(contentTypeProblem(headers("application/problem+json"))).toBeUndefined();
  expect(contentTypeProblem(headers())).toBeUndefined();
  expect(contentTypeProblem(headers("text/html; charset=utf-8"))).toBe("the upstream answered 2xx with content of type text/html, not JSON");
  expect(contentTypeProblem(headers("Text/Event-Stream; charset=utf-8"), "text/event-stream; charset=utf-8")).toBeUndefined();
  expect(contentTypeProblem(headers("application/json"), "application/vnd.amazon.eventstream")).toBe("the upstream answered 2xx with content of type application/json, not application/vnd.amazon.eventstream");
  expect(contentTypeProblem(headers("<script>"))).toContain("an unrecognised type");
});
