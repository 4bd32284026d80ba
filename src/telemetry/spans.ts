// What a traced request's spans say (design/telemetry.md, "Traces"; the OpenTelemetry GenAI conventions):
// a SERVER span for the request and a CLIENT span per upstream attempt. writeSpans is the one place that
// decides each span's fields and attributes, in order; it writes them to a SpanOut. spanObjects() makes
// SpanData of them (the http/json encoding, tests); the otlp exporter's protobuf SpanOut writes their
// bytes straight into its batch, so a traced request builds no span objects at all.
import type { Lane } from "../routing/lane.ts";
import type { AttributeValue, FinishedTrace, SpanData } from "./records.ts";

/**
 * An attribute key writeSpans uses, numbered (0, 1, ...) so that an encoder can keep what it derives
 * from each (its encoded bytes) in an array instead of looking the key's text up per attribute.
 */
export interface AttributeKey {
  readonly name: string;
  readonly id: number;
}

const KEYS: AttributeKey[] = [];
const key = (name: string): AttributeKey => {
  const k = { name, id: KEYS.length };
  KEYS.push(k);
  return k;
};

const K = {
  operation: key("gen_ai.operation.name"),
  requestModel: key("gen_ai.request.model"),
  ingress: key("gateway.ingress_protocol"),
  maxTokens: key("gen_ai.request.max_tokens"),
  temperature: key("gen_ai.request.temperature"),
  status: key("http.response.status_code"),
  errorType: key("error.type"),
  inputTokens: key("gen_ai.usage.input_tokens"),
  outputTokens: key("gen_ai.usage.output_tokens"),
  cacheRead: key("gen_ai.usage.cache_read.input_tokens"),
  cacheWrite: key("gen_ai.usage.cache_creation.input_tokens"),
  requestId: key("gateway.request_id"),
  pool: key("gateway.pool"),
  outcome: key("gateway.outcome"),
  attempts: key("gateway.attempts"),
  keyId: key("gateway.key_id"),
  group: key("gateway.group"),
  attempt: key("gateway.attempt"),
  failoverReason: key("gateway.failover_reason"),
};

/** Where writeSpans writes: a span's head, its attributes in order, its status. */
export interface SpanOut {
  begin(trace: FinishedTrace, kind: "server" | "client", spanId: string, parentSpanId: string | null, name: string, startMs: number, endMs: number, shared: SharedAttributes | undefined): void;
  /** A count: a non-negative integer (tokens, a status code, an attempt number). */
  count(key: AttributeKey, value: number): void;
  /** Any other number, as the caller sent it (a max_tokens, a temperature). */
  number(key: AttributeKey, value: number): void;
  /** A string from a small set (a pool's name, an outcome, an error class). */
  text(key: AttributeKey, value: string): void;
  /** A string of this request's own (its id, a key id, a group, a model no route took). */
  unique(key: AttributeKey, value: string): void;
  end(status: SpanData["status"]): void;
}

export type SharedAttributes = Readonly<Record<string, AttributeValue>>;

const UNSET = Object.freeze({ code: "unset" as const });

/** GenAI's provider names (gen_ai.provider.name) by wire protocol. */
const PROVIDER_NAME: Readonly<Record<string, string>> = { openai: "openai", responses: "openai", anthropic: "anthropic", gemini: "gcp.gemini", bedrock: "aws.bedrock", cohere: "cohere", mock: "gateway.mock" };

export function writeSpans(t: FinishedTrace, out: SpanOut): void {
  const record = t.record;
  const operation = t.record.ingress_protocol === "gemini" ? "generate_content" : "chat";
  const last = t.attempts.at(-1);
  const failed = record.outcome === "exhausted" || record.outcome === "error";
  const u = record.usage;
  const base = t.arrivalMs - t.startMs;
  const shared = last ? sharedAttributes(last.lane, record.ingress_protocol, operation, record.model) : undefined;
  // What a route or lane always says is in `shared`, built once (sharedAttributes).
  out.begin(t, "server", t.spanId, t.parentSpanId, shared?.serverName ?? `${operation} ${record.model}`, t.arrivalMs, base + t.endMs, shared?.server);
  if (!last) {
    out.text(K.operation, operation);
    out.unique(K.requestModel, record.model);
    out.text(K.ingress, record.ingress_protocol);
  }
  if (t.maxTokens !== undefined) out.number(K.maxTokens, t.maxTokens);
  if (t.temperature !== undefined) out.number(K.temperature, t.temperature);
  out.count(K.status, record.status);
  if (failed) out.text(K.errorType, record.error?.class ?? "internal");
  if (u) usage(out, u);
  out.unique(K.requestId, record.request_id);
  if (record.pool !== null) out.text(K.pool, record.pool);
  out.text(K.outcome, record.outcome);
  out.count(K.attempts, record.attempts);
  if (record.key_id !== null) out.unique(K.keyId, record.key_id);
  if (record.group !== null) out.unique(K.group, record.group);
  out.end(failed ? { code: "error", message: record.error?.message } : UNSET);
  for (const attempt of t.attempts) {
    const sets = sharedAttributes(attempt.lane, record.ingress_protocol, operation, record.model);
    out.begin(t, "client", attempt.spanId, t.spanId, sets.clientName, base + attempt.startMs, base + (attempt.endMs ?? t.endMs), sets.client);
    if (attempt === last && u) usage(out, u);
    if (attempt.status !== undefined) out.count(K.status, attempt.status);
    if (attempt.error !== undefined) out.text(K.errorType, attempt.error);
    if (record.pool !== null) out.text(K.pool, record.pool);
    out.count(K.attempt, attempt.number);
    if (attempt.failoverReason !== undefined) out.text(K.failoverReason, attempt.failoverReason);
    out.end(attempt.error !== undefined ? { code: "error", message: attempt.error } : UNSET);
  }
}

function usage(out: SpanOut, u: NonNullable<FinishedTrace["record"]["usage"]>): void {
  out.count(K.inputTokens, u.input_tokens);
  out.count(K.outputTokens, u.output_tokens);
  out.count(K.cacheRead, u.cache_read_tokens);
  out.count(K.cacheWrite, u.cache_write_tokens);
}

/** A trace's spans as objects: what the http/json encoder and any object-taking exporter read. */
export function spanObjects(t: FinishedTrace): SpanData[] {
  const spans: SpanData[] = [];
  let head: Omit<SpanData, "status"> | undefined;
  let attributes: Record<string, AttributeValue> = {};
  const set = (key: AttributeKey, value: AttributeValue) => void (attributes[key.name] = value);
  writeSpans(t, {
    begin(trace, kind, spanId, parentSpanId, name, startMs, endMs, shared) {
      attributes = {};
      head = { traceId: trace.traceId, spanId, parentSpanId, traceState: trace.traceState, name, kind, startTimeUnixNano: nanos(startMs), endTimeUnixNano: nanos(endMs), attributes, ...(shared && { shared }) };
    },
    count: set,
    number: set,
    text: set,
    unique: set,
    end(status) {
      spans.push({ ...head!, status });
    },
  });
  return spans;
}

/** Epoch milliseconds (a double) as nanoseconds; the otlp protobuf SpanOut writes the same integer. */
export const nanos = (ms: number): bigint => BigInt(Math.round(ms * 1e6));

interface LaneSets {
  /** The CLIENT span's: the lane, its upstream and model. */
  readonly client: SharedAttributes;
  readonly clientName: string;
  /** Both spans' sets when this lane answered, by requested model: what sharedAttributes answers. */
  readonly server: Map<string, SpanSets>;
}

interface SpanSets {
  readonly server: SharedAttributes;
  readonly serverName: string;
  readonly client: SharedAttributes;
  readonly clientName: string;
}

const laneSets = new WeakMap<Lane, Map<string, LaneSets>>();
/** SERVER attribute sets kept per lane and ingress protocol: the requested models a config routes to it. */
const MAX_SERVER_SETS = 256;

/**
 * The attributes every span of this lane (and, for the SERVER span, this ingress and requested model)
 * has alike, and the spans' names, built once and reused: an encoder copies their bytes instead of
 * encoding them per request. A lane is replaced with its config, and these with it.
 */
function sharedAttributes(lane: Lane, ingress: string, operation: string, model: string): SpanSets {
  // By ingress protocol (which decides the operation), then by requested model: no key is built per request.
  let byIngress = laneSets.get(lane);
  if (byIngress === undefined) laneSets.set(lane, (byIngress = new Map()));
  let sets = byIngress.get(ingress);
  if (sets === undefined) {
    const provider = PROVIDER_NAME[lane.provider.protocol] ?? lane.provider.protocol;
    const client: Record<string, AttributeValue> = { "gen_ai.operation.name": operation, "gen_ai.request.model": lane.upstreamModel, "gen_ai.provider.name": provider, "gen_ai.response.model": lane.upstreamModel };
    const address = upstreamAddress(lane);
    if (address) {
      client["server.address"] = address.host;
      client["server.port"] = address.port;
    }
    client["gateway.lane"] = lane.name;
    byIngress.set(ingress, (sets = { client: Object.freeze(client), clientName: `${operation} ${lane.upstreamModel}`, server: new Map() }));
  }
  let server = sets.server.get(model);
  if (server === undefined) {
    const provider = sets.client["gen_ai.provider.name"]!;
    server = {
      server: Object.freeze({ "gen_ai.operation.name": operation, "gen_ai.request.model": model, "gen_ai.provider.name": provider, "gen_ai.response.model": lane.upstreamModel, "gateway.ingress_protocol": ingress }),
      serverName: `${operation} ${model}`,
      client: sets.client,
      clientName: sets.clientName,
    };
    if (sets.server.size < MAX_SERVER_SETS) sets.server.set(model, server);
  }
  return server;
}

/** The upstream's host and port, from the provider's base URL. */
function upstreamAddress(lane: Lane): { host: string; port: number } | undefined {
  const base = lane.provider.baseUrl;
  if (base === undefined || !URL.canParse(base)) return undefined;
  const url = new URL(base);
  return { host: url.hostname, port: url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80 };
}
