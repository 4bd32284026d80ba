// spans.ts writeSpans is the one description of a trace's spans; it reaches the wire two ways: as SpanData
// (spanObjects, then encodeSpan or the JSON encoder, both checked against the official serializers in
// otlp-encode.test.ts) and straight into protobuf (ProtobufSpanOut, what the otlp exporter uses). Both
// must give the very same bytes, for every shape of trace.
import { describe, expect, test } from "bun:test";
import { encodeSpan, ProtobufSpanOut } from "../../src/telemetry/otlp/encode-protobuf.ts";
import { ProtoWriter } from "../../src/telemetry/otlp/protobuf-writer.ts";
import type { FinishedTrace } from "../../src/telemetry/records.ts";
import { spanObjects, writeSpans } from "../../src/telemetry/spans.ts";
import { finishedTrace, tracedAttempt, traceLane } from "../support/records.ts";

const lane = traceLane;
const attempt = tracedAttempt;
const trace = finishedTrace;
const primary = lane("gpt", "openai", "https://api.openai.com/v1", "gpt-4o-mini");
const backup = lane("claude", "anthropic", "http://127.0.0.1:8081", "claude-haiku-4-5");

const cases: Record<string, FinishedTrace> = {
  "one attempt, usage, a key, the caller's parent and tracestate": trace({ usage: { input_tokens: 1234, output_tokens: 56, cache_read_tokens: 1000, cache_write_tokens: 0, reasoning_tokens: 0 }, key_id: "key_abc", group: "team-a", pool: "gpt" }, [attempt(primary, 1)], { parentSpanId: "b7ad6b7169203331", traceState: "rojo=00f067aa0ba902b7", maxTokens: 256, temperature: 0.2 }),
  "a failover: the first attempt in error, the second answering": trace({ attempts: 2, outcome: "ok", pool: "chat" }, [attempt(primary, 1, { status: 503, error: "503", failoverReason: "status_503" }), attempt(backup, 2)]),
  "exhausted, no usage, a whole-number temperature and odd max_tokens": trace({ outcome: "exhausted", status: 503, error: { class: "exhausted", message: "every lane failed" }, usage: null }, [attempt(primary, 1, { status: undefined, error: "timeout" })], { temperature: 1, maxTokens: -1.5 }),
  "refused before any lane: the client's model, no shared attributes": trace({ model: "not-a-route-\u00fc\u{1F600}", outcome: "client_error", status: 404, pool: null, usage: null }, []),
  "gemini ingress, a lane with no base URL": trace({ ingress_protocol: "gemini", model: "gemini-pro" }, [attempt(lane("gem", "gemini", undefined, "gemini-2.5-flash"), 1)]),
};

describe("writeSpans: objects and direct protobuf say the same", () => {
  for (const [name, t] of Object.entries(cases)) {
    test(name, () => {
      const viaObjects = new ProtoWriter(64);
      const objects = spanObjects(t);
      for (const span of objects) encodeSpan(viaObjects, span);
      const direct = new ProtoWriter(64);
      writeSpans(t, new ProtobufSpanOut(() => direct));
      expect(direct.finish()).toEqual(viaObjects.finish());
      expect(objects.length).toBe(1 + t.attempts.length);
      expect(objects[0]!.kind).toBe("server");
    });
  }

  test("the SERVER span has the GenAI attributes and the lane's CLIENT spans theirs", () => {
    const [server, first, second] = spanObjects(cases["a failover: the first attempt in error, the second answering"]!);
    const all = (s: typeof server) => ({ ...s!.shared, ...s!.attributes });
    expect(all(server)).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.response.model": "claude-haiku-4-5", "gateway.pool": "chat", "gateway.attempts": 2 });
    expect(all(first)).toMatchObject({ "gateway.lane": "gpt", "server.address": "api.openai.com", "server.port": 443, "error.type": "503", "gateway.failover_reason": "status_503", "gateway.attempt": 1 });
    expect(first!.status).toEqual({ code: "error", message: "503" });
    expect(all(second)).toMatchObject({ "gateway.lane": "claude", "server.address": "127.0.0.1", "server.port": 8081, "gateway.attempt": 2 });
    expect(second!.parentSpanId).toBe(server!.spanId);
  });
});
