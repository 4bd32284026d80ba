// Imitation of Bedrock's Converse API (POST /model/{modelId}/converse and /converse-stream, the modelId
// URL-encoded in the path; a provider base_url / SDK endpoint is the host root). It checks what it
// receives as strictly as Bedrock (bedrock-validate.ts) and answers in Converse's wire format. Responses
// are typed with the official SDK's own types, so a member the SDK declares cannot be misspelt.
// Facts used here:
//  - auth: `Authorization: Bearer <key>` (a Bedrock API key), or SigV4 (service `bedrock`, this
//    imitation's region), verified with src/transport/sigv4.ts. Refusals are 403 with `x-amzn-ErrorType`:
//    an unknown key (API key or access key id) is UnrecognizedClientException "The security token
//    included in the request is invalid."; any other signing fault is InvalidSignatureException, a wrong
//    secret with AWS's "The request signature we calculated does not match ..." (as bedrock-runtime
//    answers it: aws-beam/aws-erlang issue #161). The verifier's reason goes on the request record;
//  - errors: HTTP status, `x-amzn-ErrorType: <Name>Exception`, body {"message"}, and `x-amzn-RequestId`
//    on every response (the SDK reads both); a body that is not JSON is a SerializationException;
//  - stream (API_runtime_ConverseStream.html): `application/vnd.amazon.eventstream` messages with
//    `:message-type: event`, `:event-type: <member>`, `:content-type: application/json`: messageStart
//    {role}, for a tool call contentBlockStart {start.toolUse {toolUseId, name}}, contentBlockDelta
//    ({delta.text} or {delta.toolUse.input} partial JSON text), contentBlockStop, messageStop {stopReason},
//    metadata {usage, metrics}. A text block has no contentBlockStart. A scripted error is an
//    `:message-type: exception` message whose `:exception-type` is the ConverseStreamOutput member.
import type { ConverseResponse, ConverseStreamOutput, TokenUsage } from "@aws-sdk/client-bedrock-runtime";
import { encodeEventStreamMessage } from "../../../src/transport/eventstream.ts";
import { verifyRequest } from "../../../src/transport/sigv4.ts";
import { validateConverse } from "./bedrock-validate.ts";
import {
  EXTRA_MEMBER,
  SCRIPTED_USAGE,
  bearerToken,
  isJsonContentType,
  isObject,
  jsonResponse,
  nextId,
  pieces,
  planReply,
  sleep,
  sseBody,
  startUpstream,
  tokenCount,
  type Behaviour,
  type Conversation,
  type RecordedRequest,
  type Reply,
  type ScriptedError,
  type Upstream,
  type UpstreamOptions,
} from "./common.ts";

/** The Bedrock API key accepted as `Authorization: Bearer`. */
export const BEDROCK_DEFAULT_KEY = "ABSKbedrock-imitation";
export const BEDROCK_DEFAULT_REGION = "us-east-1";
/** AWS's documented example key pair (IAM User Guide), accepted for SigV4. */
export const BEDROCK_DEFAULT_CREDENTIALS = { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" } as const;

export interface BedrockUpstreamOptions extends UpstreamOptions {
  /** The region SigV4 credential scopes must name (default us-east-1). */
  readonly region?: string;
  /** The access key pairs accepted for SigV4 (default BEDROCK_DEFAULT_CREDENTIALS). */
  readonly credentials?: readonly { readonly accessKeyId: string; readonly secretAccessKey: string }[];
}

export interface BedrockUpstream extends Upstream {
  readonly region: string;
  readonly credentials: readonly { readonly accessKeyId: string; readonly secretAccessKey: string }[];
}

const ROUTE = /^\/model\/([^/]+)\/(converse|converse-stream)$/;
const SIGNATURE_MISMATCH =
  "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.";
const INVALID_TOKEN = "The security token included in the request is invalid.";

/** Scripted status -> exception, non-stream (Converse "Errors") and in a stream (ConverseStreamOutput member). */
const EXCEPTIONS: Record<number, { type: string; member: string }> = {
  400: { type: "ValidationException", member: "validationException" },
  403: { type: "AccessDeniedException", member: "validationException" },
  404: { type: "ResourceNotFoundException", member: "validationException" },
  408: { type: "ModelTimeoutException", member: "modelStreamErrorException" },
  424: { type: "ModelErrorException", member: "modelStreamErrorException" },
  429: { type: "ThrottlingException", member: "throttlingException" },
  500: { type: "InternalServerException", member: "internalServerException" },
  503: { type: "ServiceUnavailableException", member: "serviceUnavailableException" },
};
const DEFAULT_MESSAGES: Record<number, string> = { 429: "Too many requests, please wait before trying again.", 503: "Bedrock is unable to process your request." };

export function startBedrockUpstream(options: BedrockUpstreamOptions = {}): BedrockUpstream {
  const apiKey = options.apiKey ?? BEDROCK_DEFAULT_KEY;
  const region = options.region ?? BEDROCK_DEFAULT_REGION;
  const credentials = options.credentials ?? [BEDROCK_DEFAULT_CREDENTIALS];
  const secrets = new Map(credentials.map((c) => [c.accessKeyId, c.secretAccessKey]));
  const upstream = startUpstream(apiKey, "", async (request, record, take) => {
    const headers = { "x-amzn-requestid": crypto.randomUUID() };
    const refuse = (status: number, type: string, message: string): Response => {
      record.problem = message;
      return jsonResponse(status, { message }, { ...headers, "x-amzn-errortype": type });
    };
    const route = new URL(request.url).pathname.match(ROUTE);
    if (request.method !== "POST" || !route) return refuse(404, "UnknownOperationException", "Unknown operation");
    const refusal = authenticate(request, record, apiKey, secrets, region);
    if (refusal) return refuse(403, refusal.type, refusal.message);
    let modelId: string;
    try {
      modelId = decodeURIComponent(route[1]!);
    } catch {
      return refuse(400, "ValidationException", "1 validation error detected: Value at 'modelId' failed to satisfy constraint: Member must be URL-encoded");
    }
    // The SDK always sends application/json; a body Bedrock cannot read as JSON is a SerializationException.
    if (!isJsonContentType(request.headers.get("content-type"))) return refuse(400, "SerializationException", "Expected content-type application/json");
    try {
      record.body = JSON.parse(record.rawBody);
    } catch (error) {
      return refuse(400, "SerializationException", `Could not parse the request body as JSON: ${(error as Error).message}`);
    }
    const problem = validateConverse(record.body, modelId);
    if (problem) return refuse(400, "ValidationException", problem);
    record.valid = true;

    const began = Date.now();
    const body = record.body as Record<string, unknown>;
    const conversation = readConversation(body);
    const behaviour = take(conversation.lastUserText);
    if (behaviour) record.behaviour = behaviour;
    if (behaviour?.delayMs) await sleep(behaviour.delayMs);
    const stream = route[2] === "converse-stream";
    if (behaviour?.error && !stream) return scriptedError(behaviour.error, headers);
    const answer = new Answer(planReply(conversation, behaviour, options), behaviour, promptText(body), began);
    const frames = behaviour?.error ? [exceptionFrame(behaviour.error)] : answer.frames();
    if (!stream) return jsonResponse(200, answer.response(), headers);
    return new Response(sseBody(frames, behaviour?.cutAfterEvents), { status: 200, headers: { ...headers, "content-type": "application/vnd.amazon.eventstream" } });
  });
  return { ...upstream, region, credentials };
}

/** Bearer API key or SigV4; undefined when the request may pass. */
function authenticate(request: Request, record: RecordedRequest, apiKey: string, secrets: Map<string, string>, region: string): { type: string; message: string } | undefined {
  const authorization = request.headers.get("authorization");
  const bearer = bearerToken(authorization);
  if (bearer !== null) return bearer === apiKey ? undefined : { type: "UnrecognizedClientException", message: INVALID_TOKEN };
  // The body as text re-encodes to the bytes sent for any UTF-8 body, which is all Converse takes.
  const result = verifyRequest({ method: request.method, url: request.url, headers: request.headers, body: record.rawBody }, (id) => secrets.get(id), { service: "bedrock", region });
  record.verification = result.ok ? { ok: true, accessKeyId: result.accessKeyId } : { ok: false, reason: result.reason };
  if (result.ok) return undefined;
  if (authorization === null) return { type: "MissingAuthenticationTokenException", message: "Missing Authentication Token" };
  if (result.reason.startsWith("unknown access key id")) return { type: "UnrecognizedClientException", message: INVALID_TOKEN };
  return { type: "InvalidSignatureException", message: result.reason.startsWith("signature does not match") ? SIGNATURE_MISMATCH : result.reason };
}

function scriptedError(error: ScriptedError, headers: Record<string, string>): Response {
  const extra: Record<string, string> = { ...headers, ...error.headers, "x-amzn-errortype": error.type ?? EXCEPTIONS[error.status]?.type ?? "InternalServerException" };
  if (error.retryAfter !== undefined) extra["retry-after"] = String(error.retryAfter);
  return jsonResponse(error.status, { message: error.message ?? DEFAULT_MESSAGES[error.status] ?? `Scripted error ${error.status}.` }, extra);
}

function exceptionFrame(error: ScriptedError): Uint8Array {
  const member = EXCEPTIONS[error.status]?.member ?? "internalServerException";
  const message = error.message ?? DEFAULT_MESSAGES[error.status] ?? `Scripted error ${error.status}.`;
  return encodeEventStreamMessage({ ":exception-type": member, ":content-type": "application/json", ":message-type": "exception" }, new TextEncoder().encode(JSON.stringify({ message })));
}

type Block = Record<string, unknown>;
const blocksOf = (message: unknown): Block[] => (isObject(message) && Array.isArray(message.content) ? (message.content as Block[]) : []);

/** Text of content blocks, tool results' text included. */
function contentText(blocks: Block[]): string {
  return blocks
    .map((block) => {
      if (typeof block.text === "string") return block.text;
      if (isObject(block.toolResult)) return contentText(blocksOf(block.toolResult));
      if (isObject(block.json)) return JSON.stringify(block.json);
      return "";
    })
    .join("");
}

function readConversation(body: Record<string, unknown>): Conversation {
  const messages = body.messages as Block[];
  const last = messages.at(-1)!;
  const results = last.role === "user" ? blocksOf(last).filter((b) => isObject(b.toolResult)) : [];
  const lastUser = messages.findLast((m) => m.role === "user");
  const tools = isObject(body.toolConfig) ? (body.toolConfig.tools as Block[]) : [];
  const specs = tools.filter((t) => isObject(t.toolSpec)).map((t) => t.toolSpec as { name: string });
  return {
    tools: specs.map((s) => s.name),
    endsWithUser: last.role === "user" && results.length === 0,
    toolResultText: results.length > 0 ? results.map((r) => contentText(blocksOf(r.toolResult))).join("\n") : undefined,
    lastUserText: lastUser ? contentText(blocksOf(lastUser).filter((b) => typeof b.text === "string")) : "",
    wantsJson: false,
  };
}

function promptText(body: Record<string, unknown>): string {
  const system = Array.isArray(body.system) ? contentText(body.system as Block[]) : "";
  return [system, ...(body.messages as Block[]).map((m) => contentText(blocksOf(m)))].join("\n");
}

/** One answer, rendered as a ConverseResponse or as its event stream. */
class Answer {
  private readonly toolUseId = nextId("tooluse_imit", 12);

  constructor(
    private readonly reply: Reply,
    private readonly behaviour: Behaviour | undefined,
    private readonly prompt: string,
    private readonly began: number,
  ) {}

  private usage(): TokenUsage {
    const detailed = this.behaviour?.detailedUsage === true;
    const inputTokens = tokenCount(this.prompt);
    const outputTokens = tokenCount(this.reply.kind === "text" ? this.reply.text : this.reply.name + this.reply.arguments);
    // inputTokens is the uncached input only; the total counts cache reads and writes too (prompt-caching guide).
    const read = detailed ? SCRIPTED_USAGE.cacheReadInputTokens : 0;
    const write = detailed ? SCRIPTED_USAGE.cacheCreationInputTokens : 0;
    return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens + read + write, ...(detailed && { cacheReadInputTokens: read, cacheWriteInputTokens: write }) };
  }

  private stopReason() {
    return this.reply.kind === "text" ? ("end_turn" as const) : ("tool_use" as const);
  }

  private metrics() {
    return { latencyMs: Math.max(1, Date.now() - this.began) };
  }

  private extra(): Record<string, unknown> {
    return this.behaviour?.extraMember ? EXTRA_MEMBER : {};
  }

  response(): ConverseResponse & Record<string, unknown> {
    const reply = this.reply;
    const block = reply.kind === "text" ? { text: reply.text } : { toolUse: { toolUseId: this.toolUseId, name: reply.name, input: JSON.parse(reply.arguments) } };
    return { output: { message: { role: "assistant", content: [block] } }, stopReason: this.stopReason(), usage: this.usage(), metrics: this.metrics(), ...this.extra() };
  }

  frames(): Uint8Array[] {
    const encoder = new TextEncoder();
    const event = (output: ConverseStreamOutput): Uint8Array => {
      const [type, payload] = Object.entries(output)[0]!;
      return encodeEventStreamMessage({ ":event-type": type, ":content-type": "application/json", ":message-type": "event" }, encoder.encode(JSON.stringify({ ...payload, ...this.extra() })));
    };
    const reply = this.reply;
    const frames = [event({ messageStart: { role: "assistant" } })];
    if (reply.kind === "tool_call") frames.push(event({ contentBlockStart: { contentBlockIndex: 0, start: { toolUse: { toolUseId: this.toolUseId, name: reply.name } } } }));
    for (const piece of pieces(reply.kind === "text" ? reply.text : reply.arguments)) {
      frames.push(event({ contentBlockDelta: { contentBlockIndex: 0, delta: reply.kind === "text" ? { text: piece } : { toolUse: { input: piece } } } }));
    }
    frames.push(
      event({ contentBlockStop: { contentBlockIndex: 0 } }),
      event({ messageStop: { stopReason: this.stopReason() } }),
      event({ metadata: { usage: this.usage(), metrics: this.metrics() } }),
    );
    return frames;
  }
}
