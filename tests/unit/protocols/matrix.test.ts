// The adapter matrix: every golden fixture of every protocol through every other adapter. Requests go
// ingress decode -> IR -> each egress encode -> that egress's own decode, and what the IR carried must
// come back or be named by an encoder warning. Responses and streams go decode -> IR -> each ingress
// encoder -> that adapter's own decoder (both face the same wire format), with the bytes cut in awkward
// pieces. Then one conformance block asks the same questions of all six adapters.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { EventStreamCodec } from "@smithy/core/event-streams";
import { fromUtf8, toUtf8 } from "@smithy/core/serde";
import { inputTotal, irError, mergeUsage, ZERO_USAGE, type IrAssistantPart, type IrErrorKind, type IrFinishReason, type IrRequest, type IrStreamPart, type IrUsage } from "../../../src/ir/index.ts";
import { estimateTokens, requestTextSize } from "../../../src/ir/estimate.ts";
import { adapterFor } from "../../../src/protocols/registry.ts";
import type { IngressContext, ProtocolAdapter, WireProtocol } from "../../../src/protocols/types.ts";
import { parserTransform } from "../../../src/transport/push-parser.ts";
import { wireBytes } from "../../../src/protocols/stream-writer.ts";

// ---- adapters and fixtures -----------------------------------------------------------------------------

type Json = Record<string, unknown>;
const PROTOCOLS: readonly WireProtocol[] = ["openai", "anthropic", "gemini", "bedrock", "cohere", "responses"];
const adapter = (name: WireProtocol): ProtocolAdapter => {
  const found = adapterFor(name);
  if (!found) throw new Error(`no adapter registered for ${name}`);
  return found;
};
const ADAPTERS = PROTOCOLS.map(adapter);
const geminiArray = adapter("gemini").jsonArrayStream;
/** Stream encoders to test: the six, plus Gemini's JSON-array form (`:streamGenerateContent` without alt=sse). */
const STREAM_TARGETS: readonly [string, ProtocolAdapter][] = [...ADAPTERS.map((a) => [a.name, a] as [string, ProtocolAdapter]), ...(geminiArray ? [["gemini (JSON array)", geminiArray] as [string, ProtocolAdapter]] : [])];

const UPSTREAM = "upstream-model";
const utf8 = new TextEncoder();
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

interface RequestCase {
  label: string;
  wire: unknown;
  context: IngressContext;
}
interface WireCase {
  label: string;
  wire: unknown;
}
interface StreamCase {
  label: string;
  bytes: Uint8Array;
}
interface Cases {
  requests: RequestCase[];
  responses: WireCase[];
  streams: StreamCase[];
}

/** Bedrock stream fixtures list events; the AWS SDK's own codec frames them (not this repository's). */
const smithy = new EventStreamCodec(toUtf8, fromUtf8);
const framesOf = (events: readonly { type: string; payload: unknown }[]) =>
  concat(
    events.map(({ type, payload }) =>
      smithy.encode({
        headers: { ":event-type": { type: "string", value: type }, ":content-type": { type: "string", value: "application/json" }, ":message-type": { type: "string", value: "event" } },
        body: utf8.encode(JSON.stringify(payload)),
      }),
    ),
  );

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The fixture files differ in layout per protocol; this reads each kind wherever it is. */
function loadCases(protocol: WireProtocol): Cases {
  const dir = join(import.meta.dir, "../../fixtures/protocols", protocol);
  const cases: Cases = { requests: [], responses: [], streams: [] };
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".json")).sort()) {
    const f = JSON.parse(readFileSync(join(dir, file), "utf8")) as Json;
    const label = `${protocol}/${file}`;
    // OpenAI groups request and response cases under members.
    for (const key of ["request", "toolResultTurn"]) {
      const c = f[key];
      if (isObject(c) && isObject(c.wire)) cases.requests.push({ label: `${label}#${key}`, wire: c.wire, context: {} });
    }
    if (isObject(f.response) && isObject(f.response.wire)) cases.responses.push({ label: `${label}#response`, wire: f.response.wire });
    if (Array.isArray(f.sse)) cases.streams.push({ label, bytes: utf8.encode((f.sse as string[]).join("")) });
    // Responses stream fixtures carry the wire request that opened the stream.
    if (protocol === "responses" && isObject(f.request)) cases.requests.push({ label: `${label}#request`, wire: f.request, context: {} });

    if (isObject(f.wire) && isObject(f.ir) && "messages" in f.ir) {
      const context: IngressContext =
        protocol === "gemini" ? { pathModel: String(f.pathModel), pathStream: false } : protocol === "bedrock" ? { pathModel: String(f.modelId), pathStream: String(f.path).endsWith("-stream") } : {};
      cases.requests.push({ label, wire: f.wire, context });
    }
    if (isObject(f.wire) && isObject(f.ir) && "finishReason" in f.ir) cases.responses.push({ label, wire: f.wire });
    if (typeof f.wire === "string") cases.streams.push({ label, bytes: utf8.encode(f.wire) });
    if (Array.isArray(f.events)) cases.streams.push({ label, bytes: framesOf(f.events as { type: string; payload: unknown }[]) });
  }
  return cases;
}
const CASES = new Map(PROTOCOLS.map((p) => [p, loadCases(p)] as const));

// ---- helpers ---------------------------------------------------------------------------------------------

/** 1, 3, 7, 1, 3, 7, ... bytes at a time: events, JSON, frames and multi-byte characters cut anywhere. */
function awkward(bytes: Uint8Array): Uint8Array[] {
  const sizes = [1, 3, 7];
  const out: Uint8Array[] = [];
  for (let at = 0, i = 0; at < bytes.length; i += 1) {
    const size = sizes[i % sizes.length] ?? 1;
    out.push(bytes.slice(at, at + size));
    at += size;
  }
  return out;
}

async function decodeStream(target: ProtocolAdapter, bytes: Uint8Array): Promise<IrStreamPart[]> {
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of awkward(bytes)) controller.enqueue(piece);
      controller.close();
    },
  });
  const out: IrStreamPart[] = [];
  for await (const part of source.pipeThrough(parserTransform(target.createStreamParser()))) out.push(part);
  return out;
}

const STREAM_REQUEST: IrRequest = { model: "pool", system: [], messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }], tools: [], sampling: {}, stream: true, includeUsage: true };

function writeStream(target: ProtocolAdapter, parts: readonly IrStreamPart[], warnings: string[] = []): Uint8Array {
  const chunks: Uint8Array[] = [];
  const writer = target.createStreamWriter(STREAM_REQUEST, (w) => warnings.push(w), (chunk) => chunks.push(wireBytes(chunk)));
  for (const part of parts) writer.accept(part);
  writer.end();
  return concat(chunks);
}

/** Tool arguments compare as parsed JSON (key order and spacing are the encoder's); "" is no arguments. */
function parsedArguments(text: string): unknown {
  try {
    return JSON.parse(text.trim() === "" ? "{}" : text);
  } catch {
    return { unparsable: text };
  }
}
/** JSON with sorted keys, so equal values compare equal as strings. */
function canonical(value: unknown): string {
  const sort = (v: unknown): unknown => (Array.isArray(v) ? v.map(sort) : isObject(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort(v[k])])) : v);
  return JSON.stringify(sort(value));
}
const squash = (text: string) => text.replace(/\s+/g, " ").trim();

// ---- requests: what the IR carries ---------------------------------------------------------------------

/** Gemini carries a tool result as a JSON object (functionResponse.response), so JSON text compares parsed. */
function resultContent(text: string): unknown {
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? { json: canonical(parsed) } : text;
  } catch {
    return text;
  }
}

/**
 * What must survive every egress: roles and text (adjacent same-role turns merged, since some vendors
 * require alternation), system text, tool names, tool calls with ids and arguments, tool results.
 */
function conversation(ir: IrRequest) {
  const turns: { role: string; text: string }[] = [];
  for (const m of ir.messages) {
    const text = (m.content as readonly { type: string; text?: string }[]).flatMap((p) => (p.type === "text" && p.text !== undefined ? [p.text] : [])).join("");
    const last = turns.at(-1);
    if (last && last.role === m.role) last.text += text;
    else turns.push({ role: m.role, text });
  }
  return {
    stream: ir.stream,
    system: squash(ir.system.map((p) => p.text).join("\n")),
    turns,
    tools: ir.tools.map((t) => t.name),
    toolCalls: ir.messages.flatMap((m) => (m.role === "assistant" ? m.content.flatMap((p) => (p.type === "tool_call" ? [{ id: p.id, name: p.name, arguments: parsedArguments(p.arguments) }] : [])) : [])),
    toolResults: ir.messages.flatMap((m) =>
      m.role === "tool" ? m.content.map((r) => ({ toolCallId: r.toolCallId, content: resultContent(r.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("")) })) : [],
    ),
  };
}

/**
 * What an egress may lack, as `feature -> what a warning about its loss must mention`. A feature that
 * is gone (or changed) after the round trip needs an encoder warning matching its pattern.
 */
function features(ir: IrRequest): Map<string, RegExp> {
  const out = new Map<string, RegExp>();
  const sampling: Record<string, RegExp> = {
    temperature: /temperature/i,
    topP: /top.?p/i,
    topK: /top.?k/i,
    maxTokens: /max/i,
    stop: /stop/i,
    seed: /seed/i,
    frequencyPenalty: /frequency/i,
    presencePenalty: /presence/i,
  };
  for (const [key, value] of Object.entries(ir.sampling)) if (value !== undefined) out.set(`sampling.${key}=${canonical(value)}`, sampling[key] ?? new RegExp(key, "i"));
  // `auto` is every vendor's default when tools are given (Cohere has no word for it), so absent equals auto.
  if (ir.toolChoice && ir.toolChoice.type !== "auto") out.set(`toolChoice=${canonical(ir.toolChoice)}`, /tool.?choice|tool.?config|function.?calling/i);
  if (ir.parallelToolCalls !== undefined) out.set(`parallelToolCalls=${ir.parallelToolCalls}`, /parallel/i);
  if (ir.responseFormat) out.set(`responseFormat=${canonical(ir.responseFormat)}`, /format|schema|json/i);
  // Effort and budget convert into each other; only presence is the IR's promise.
  if (ir.reasoning) out.set("reasoning", /reason|think|effort|budget/i);
  if (ir.user !== undefined) out.set(`user=${ir.user}`, /user/i);
  for (const t of ir.tools) {
    if (t.description !== undefined) out.set(`tool ${t.name} description=${t.description}`, /description/i);
    out.set(`tool ${t.name} parameters=${canonical(t.parameters)}`, /schema|parameter/i);
    if (t.strict !== undefined) out.set(`tool ${t.name} strict=${t.strict}`, /strict/i);
  }
  for (const m of ir.messages) {
    for (const p of m.content) {
      if (p.type === "image") out.set(`image ${canonical(p.source)}`, /image/i);
      if (p.type === "document") out.set(`document ${canonical(p.source)}${p.title === undefined ? "" : ` title=${p.title}`}`, /document|file|pdf/i);
      if (p.type === "reasoning") out.set(`reasoning ${canonical({ text: p.text, signature: p.signature, redacted: p.redactedData })}`, /reason|think|signature/i);
      if (p.type === "tool_result") {
        if (p.isError) out.set(`tool result ${p.toolCallId} isError`, /error/i);
        for (const c of p.content) if (c.type === "image") out.set(`tool result ${p.toolCallId} image ${canonical(c.source)}`, /image/i);
      }
    }
  }
  return out;
}

/** Features of `before` missing from `after` that no warning names. */
function silentlyDropped(before: IrRequest, after: IrRequest, warnings: readonly string[]): string[] {
  const kept = features(after);
  return [...features(before)].filter(([feature, mention]) => !kept.has(feature) && !warnings.some((w) => mention.test(w))).map(([feature]) => feature);
}

function decodedIngress(protocol: WireProtocol, c: RequestCase): IrRequest {
  const decoded = adapter(protocol).decodeRequest(c.wire, c.context);
  if (!decoded.ok) throw new Error(`${c.label} does not decode: ${decoded.error.message}`);
  return decoded.value;
}

describe("request matrix: ingress fixture -> IR -> egress encode -> egress decode", () => {
  test("every protocol has request, response and stream fixtures to feed the matrix", () => {
    for (const p of PROTOCOLS) {
      const c = CASES.get(p);
      expect({ p, requests: (c?.requests.length ?? 0) >= 3, responses: (c?.responses.length ?? 0) >= 1, streams: (c?.streams.length ?? 0) >= 2 }).toEqual({ p, requests: true, responses: true, streams: true });
    }
  });

  for (const ingress of PROTOCOLS) {
    for (const c of CASES.get(ingress)?.requests ?? []) {
      for (const egress of ADAPTERS) {
        test(`${c.label} -> ${egress.name}`, () => {
          const before = decodedIngress(ingress, c);
          const encoded = egress.encodeRequest(before, UPSTREAM);
          expect(encoded.path).toBe(egress.upstreamPath(UPSTREAM, before.stream));
          // A body the egress's own decoder accepts is a valid request in its wire format.
          const back = egress.decodeRequest(JSON.parse(JSON.stringify(encoded.body)), { pathModel: UPSTREAM, pathStream: before.stream });
          if (!back.ok) throw new Error(`${egress.name} rejects its own encoding: ${back.error.message}`);
          expect(back.value.model).toBe(UPSTREAM);
          expect(conversation(back.value)).toEqual(conversation(before));
          expect({ silentlyDropped: silentlyDropped(before, back.value, encoded.warnings), warnings: encoded.warnings }).toEqual({ silentlyDropped: [], warnings: encoded.warnings });
        });
      }
    }
  }
});

// ---- responses and streams: what the client sees -----------------------------------------------------

interface Outcome {
  text: string;
  toolCalls: { id: string; name: string; arguments: unknown }[];
  finish: IrFinishReason["unified"] | undefined;
  input: number;
  output: number;
}
const reasoningOf = (content: readonly IrAssistantPart[]) => content.flatMap((p) => (p.type === "reasoning" ? [p.text] : [])).join("");

function outcomeOf(content: readonly IrAssistantPart[], finish: IrFinishReason | undefined, usage: IrUsage): Outcome {
  return {
    text: content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join(""),
    toolCalls: content.flatMap((p) => (p.type === "tool_call" ? [{ id: p.id, name: p.name, arguments: parsedArguments(p.arguments) }] : [])),
    finish: finish?.unified,
    input: inputTotal(usage),
    output: usage.output,
  };
}

/** A stream folded into what it told the client, plus whether it ended with an in-stream error. */
function foldStream(parts: readonly IrStreamPart[]): { content: IrAssistantPart[]; finish?: IrFinishReason; usage: IrUsage; error?: string; last?: string } {
  const blocks = new Map<string, { type: "text" | "reasoning"; text: string } | { type: "tool_call"; id: string; name: string; arguments: string }>();
  let usage = ZERO_USAGE;
  let finish: IrFinishReason | undefined;
  let error: string | undefined;
  for (const p of parts) {
    if (p.type === "text-start") blocks.set(p.id, { type: "text", text: "" });
    if (p.type === "reasoning-start") blocks.set(p.id, { type: "reasoning", text: "" });
    if (p.type === "tool-call-start") blocks.set(p.id, { type: "tool_call", id: p.toolCallId, name: p.name, arguments: "" });
    const block = "id" in p ? blocks.get(p.id) : undefined;
    if ((p.type === "text-delta" || p.type === "reasoning-delta") && block && block.type !== "tool_call") block.text += p.delta;
    if (p.type === "tool-call-delta" && block?.type === "tool_call") block.arguments += p.argumentsDelta;
    if (p.type === "usage") usage = mergeUsage(usage, p.usage);
    if (p.type === "finish") finish = p.finishReason;
    if (p.type === "error") error = p.error.message;
  }
  const content = [...blocks.values()].map((b): IrAssistantPart => (b.type === "tool_call" ? b : { type: b.type, text: b.text }));
  return { content, usage, ...(finish && { finish }), ...(error !== undefined && { error }), ...(parts.at(-1) && { last: parts.at(-1)?.type }) };
}

describe("response matrix: upstream fixture -> IR -> each ingress encodeResponse -> its decodeResponse", () => {
  for (const source of PROTOCOLS) {
    for (const c of CASES.get(source)?.responses ?? []) {
      for (const target of ADAPTERS) {
        test(`${c.label} -> ${target.name}`, () => {
          const decoded = adapter(source).decodeResponse(c.wire);
          if (!decoded.ok) throw new Error(`${c.label} does not decode: ${decoded.error.message}`);
          const warnings: string[] = [];
          const body = JSON.parse(JSON.stringify(target.encodeResponse(decoded.value, (w) => warnings.push(w))));
          const back = target.decodeResponse(body);
          if (!back.ok) throw new Error(`${target.name} rejects its own response: ${back.error.message}`);
          expect(outcomeOf(back.value.content, back.value.finishReason, back.value.usage)).toEqual(outcomeOf(decoded.value.content, decoded.value.finishReason, decoded.value.usage));
          if (reasoningOf(back.value.content) !== reasoningOf(decoded.value.content)) expect(warnings.some((w) => /reason|think/i.test(w))).toBe(true);
          // The metering tap reads the same totals from the wire body.
          const metered = mergeUsage(ZERO_USAGE, target.usageFromResponse(body) ?? {});
          expect({ input: inputTotal(metered), output: metered.output }).toEqual({ input: inputTotal(decoded.value.usage), output: decoded.value.usage.output });
        });
      }
    }
  }
});

describe("stream matrix: upstream fixture (awkward chunks) -> IR -> each ingress stream writer -> its stream decoder", () => {
  for (const source of PROTOCOLS) {
    for (const c of CASES.get(source)?.streams ?? []) {
      for (const [name, target] of STREAM_TARGETS) {
        test(`${c.label} -> ${name}`, async () => {
          const parts = await decodeStream(adapter(source), c.bytes);
          const sent = foldStream(parts);
          expect(sent.error).toBeUndefined();
          const warnings: string[] = [];
          const received = foldStream(await decodeStream(target, writeStream(target, parts, warnings)));
          expect(received.error).toBeUndefined();
          expect(received.last).toBe("finish");
          const expected = outcomeOf(sent.content, sent.finish, sent.usage);
          // Anthropic's message_start always carries input: an upstream that reports none leaves the request's estimate there.
          if (name === "anthropic" && expected.input === 0) expected.input = estimateTokens(requestTextSize(STREAM_REQUEST));
          expect(outcomeOf(received.content, received.finish, received.usage)).toEqual(expected);
          if (reasoningOf(received.content) !== reasoningOf(sent.content)) expect(warnings.some((w) => /reason|think/i.test(w))).toBe(true);
        });
      }
    }
  }
});

// ---- conformance: the same questions of all six ----------------------------------------------------------

/** shared/design/protocols.md, "Vendor-native errors the gateway generates", plus 404 for an unknown model. */
const ERROR_TABLE: Record<WireProtocol, Partial<Record<IrErrorKind, [number, string | undefined]>>> = {
  openai: { invalid_request: [400, "invalid_request_error"], authentication: [401, "invalid_request_error"], permission: [403, "permission_error"], not_found: [404, undefined], rate_limit: [429, "rate_limit_error"], insufficient_quota: [429, "insufficient_quota"], overloaded: [503, undefined] },
  responses: { invalid_request: [400, "invalid_request_error"], authentication: [401, "invalid_request_error"], permission: [403, "permission_error"], not_found: [404, undefined], rate_limit: [429, "rate_limit_error"], insufficient_quota: [429, "insufficient_quota"], overloaded: [503, undefined] },
  anthropic: { invalid_request: [400, "invalid_request_error"], authentication: [401, "authentication_error"], permission: [403, "permission_error"], not_found: [404, "not_found_error"], rate_limit: [429, "rate_limit_error"], insufficient_quota: [429, "insufficient_quota"], overloaded: [529, "overloaded_error"] },
  gemini: { invalid_request: [400, "INVALID_ARGUMENT"], authentication: [401, "UNAUTHENTICATED"], permission: [403, "PERMISSION_DENIED"], not_found: [404, "NOT_FOUND"], rate_limit: [429, "RESOURCE_EXHAUSTED"], insufficient_quota: [429, "RESOURCE_EXHAUSTED"], overloaded: [503, "UNAVAILABLE"] },
  bedrock: { invalid_request: [400, "ValidationException"], authentication: [403, "UnrecognizedClientException"], permission: [403, "AccessDeniedException"], not_found: [404, "ResourceNotFoundException"], rate_limit: [429, "ThrottlingException"], insufficient_quota: [400, "ValidationException"], overloaded: [503, "ServiceUnavailableException"] },
  cohere: { invalid_request: [400, undefined], authentication: [401, undefined], permission: [403, undefined], not_found: [404, undefined], rate_limit: [429, undefined], insufficient_quota: [429, undefined], overloaded: [503, undefined] },
};

/** Where each vendor puts the word the table names: the error type, the gRPC status, the exception header. */
function vendorWord(protocol: WireProtocol, response: Response, body: Json): unknown {
  const inner = isObject(body.error) ? body.error : {};
  if (protocol === "gemini") return inner.status;
  if (protocol === "bedrock") return response.headers.get("x-amzn-errortype");
  return inner.type;
}
/** `error.type: insufficient_quota`, inside the vendor's error object, or at the top for Bedrock and Cohere. */
function quotaType(protocol: WireProtocol, body: Json): unknown {
  if (protocol === "bedrock" || protocol === "cohere") return body.type;
  return isObject(body.error) ? body.error.type : undefined;
}

const CREDENTIAL_HEADERS: Record<WireProtocol, [string, string, Record<string, string>][]> = {
  openai: [["Authorization: Bearer", "", { authorization: "Bearer k-1" }]],
  responses: [["Authorization: Bearer", "", { authorization: "Bearer k-1" }]],
  cohere: [["Authorization: Bearer", "", { authorization: "Bearer k-1" }]],
  bedrock: [["Authorization: Bearer (a Bedrock API key)", "", { authorization: "Bearer k-1" }]],
  anthropic: [
    ["x-api-key", "", { "x-api-key": "k-1" }],
    ["Authorization: Bearer", "", { authorization: "Bearer k-1" }],
  ],
  gemini: [
    ["x-goog-api-key", "", { "x-goog-api-key": "k-1" }],
    ["?key=", "?key=k-1", {}],
  ],
};

/** A body of the right JSON type whose central member has the wrong type. */
const WRONG_TYPE: Record<WireProtocol, Json> = {
  openai: { model: "m", messages: "Hi" },
  responses: { model: "m", input: 42 },
  anthropic: { model: "m", max_tokens: 16, messages: "Hi" },
  cohere: { model: "m", messages: "Hi" },
  gemini: { contents: "Hi" },
  bedrock: { messages: "Hi" },
};
const PATHS: Record<WireProtocol, [string, string]> = {
  openai: ["/chat/completions", "/chat/completions"],
  responses: ["/responses", "/responses"],
  anthropic: ["/v1/messages", "/v1/messages"],
  cohere: ["/v2/chat", "/v2/chat"],
  gemini: ["/v1beta/models/m-1:generateContent", "/v1beta/models/m-1:streamGenerateContent?alt=sse"],
  bedrock: ["/model/m-1/converse", "/model/m-1/converse-stream"],
};
const MODEL_IN_PATH = new Set<WireProtocol>(["gemini", "bedrock"]);

const STREAM_PARTS: IrStreamPart[] = [
  { type: "start", id: "msg-1", model: "m-1", created: 1_700_000_000 },
  { type: "usage", usage: { inputNoCache: 5 } },
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: "par" },
];

describe("conformance, all six adapters", () => {
  for (const a of ADAPTERS) {
    const p = a.name;
    describe(p, () => {
      for (const [kind, [status, word]] of Object.entries(ERROR_TABLE[p]) as [IrErrorKind, [number, string | undefined]][]) {
        test(`encodeError(${kind}) is ${status}${word ? ` ${word}` : ""}`, async () => {
          const response = a.encodeError(irError(kind, `gateway says ${kind}`, { retryAfterSecs: 7 }));
          expect(response.status).toBe(status);
          const text = await response.text();
          const body = JSON.parse(text) as Json;
          if (word !== undefined) expect(vendorWord(p, response, body)).toBe(word);
          if (kind === "insufficient_quota") expect(quotaType(p, body)).toBe("insufficient_quota");
          expect(text).toContain(`gateway says ${kind}`);
          if ((p === "openai" || p === "responses" || p === "anthropic") && (kind === "rate_limit" || kind === "overloaded")) expect(response.headers.get("retry-after")).toBe("7");
        });
        // A gateway upstream's spent budget must read back as quota (bench the lane), not a rate limit or the caller's fault.
        test(`decodeError reads the kind of its own encodeError(${kind}) back`, async () => {
          const response = a.encodeError(irError(kind, `gateway says ${kind}`));
          const decoded = a.decodeError(response.status, await response.text(), response.headers);
          expect(decoded.kind).toBe(kind);
          if (kind === "insufficient_quota") expect(decoded.failure).toBe("quota");
        });
      }

      for (const [name, query, headers] of CREDENTIAL_HEADERS[p]) {
        test(`clientCredential reads ${name}`, () => {
          expect(a.clientCredential(new Request(`http://gateway.test/x${query}`, { method: "POST", headers }))).toBe("k-1");
        });
      }
      test("clientCredential is undefined without the protocol's header (another vendor's header does not count)", () => {
        expect(a.clientCredential(new Request("http://gateway.test/x", { method: "POST" }))).toBeUndefined();
        const foreign: Record<string, string> = p === "gemini" ? { authorization: "Bearer k-1" } : { "x-goog-api-key": "k-1" };
        expect(a.clientCredential(new Request("http://gateway.test/x", { method: "POST", headers: foreign }))).toBeUndefined();
      });
      test("authHeaders carry the provider's key", () => {
        expect(Object.values(a.authHeaders("k-9")).some((v) => v.includes("k-9"))).toBe(true);
      });

      test("a malformed request body is a 400 invalid_request in the protocol's own shape, never a throw", async () => {
        const context: IngressContext = { pathModel: "m-1", pathStream: false };
        for (const body of [null, undefined, "Hi", 42, [], [{ role: "user" }], WRONG_TYPE[p]]) {
          const decoded = a.decodeRequest(body, context);
          expect({ body, ok: decoded.ok }).toEqual({ body, ok: false });
          if (decoded.ok) continue;
          expect({ body, kind: decoded.error.kind, status: decoded.error.status }).toEqual({ body, kind: "invalid_request", status: 400 });
          expect(a.encodeError(decoded.error).status).toBe(400);
        }
      });
      test("a malformed upstream response is an error, never a throw", () => {
        for (const body of [null, "Hi", 42, [], { candidates: "x", output: "x", message: 7, content: "x" }]) expect(a.decodeResponse(body).ok).toBe(false);
      });

      test(`upstreamPath is ${PATHS[p].join(" / ")}, and encodeRequest uses it`, () => {
        expect([a.upstreamPath("m-1", false), a.upstreamPath("m-1", true)]).toEqual(PATHS[p]);
        for (const stream of [false, true]) expect(a.encodeRequest({ ...STREAM_REQUEST, stream }, "m-1").path).toBe(a.upstreamPath("m-1", stream));
      });
      test(MODEL_IN_PATH.has(p) ? "rewriteModel leaves the body alone (the model is a path segment)" : "rewriteModel replaces `model` and keeps every other member", () => {
        const body = { model: "client-pool", messages: [{ role: "user", content: "Hi" }], vendor_extra: { kept: true } };
        const rewritten = a.rewriteModel(structuredClone(body), "m-up");
        expect(rewritten).toEqual(MODEL_IN_PATH.has(p) ? body : { ...body, model: "m-up" });
      });

      test("the metering tap reads the usage of an encoded response", () => {
        const usage = { inputNoCache: 11, inputCacheRead: 0, inputCacheWrite: 0, output: 7, outputReasoning: 0 };
        const body = JSON.parse(JSON.stringify(a.encodeResponse({ id: "r-1", model: "m-1", created: 1_700_000_000, content: [{ type: "text", text: "ok" }], finishReason: { unified: "stop" }, usage }, () => {})));
        const metered = mergeUsage(ZERO_USAGE, a.usageFromResponse(body) ?? {});
        expect({ input: inputTotal(metered), output: metered.output }).toEqual({ input: 11, output: 7 });
      });

      test("an error part after the stream began ends it with an in-stream error its own decoder reads", async () => {
        const parts = await decodeStream(a, writeStream(a, [...STREAM_PARTS, { type: "error", error: irError("overloaded", "upstream fell over") }]));
        const folded = foldStream(parts);
        expect(folded.content).toEqual([{ type: "text", text: "par" }]);
        expect(folded.last).toBe("error");
        expect(folded.finish).toBeUndefined();
      });
      test("a stream that ends with neither finish nor error says so in-stream (never a silent truncation)", async () => {
        const folded = foldStream(await decodeStream(a, writeStream(a, STREAM_PARTS)));
        expect(folded.last).toBe("error");
      });
    });
  }
});
