// Imitation of the Gemini API's generateContent (POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent; a provider base_url is the host root, http://127.0.0.1:<port>, as the official
// SDK's baseUrl is). It checks what it receives as strictly as Google (gemini-validate.ts) and answers in
// the Gemini API's wire format. There is no Google SDK in this repository, so the wire shapes are typed
// below from the official JS SDK's types (googleapis/js-genai src/types.ts: GenerateContentResponse,
// Candidate, Part, FunctionCall, GenerateContentResponseUsageMetadata) and the REST reference
// (ai.google.dev/api/generate-content).
// Facts used here:
//  - the key comes as `x-goog-api-key` or `?key=`; none is 403 PERMISSION_DENIED "Method doesn't allow
//    unregistered callers ...", a wrong one 400 INVALID_ARGUMENT "API key not valid. Please pass a valid
//    API key." with an ErrorInfo detail, reason API_KEY_INVALID (a caller error by status, a credential
//    error by reason);
//  - an answer: candidates [{content {parts, role "model"}, finishReason, index}], usageMetadata
//    {promptTokenCount (cached content included), candidatesTokenCount, totalTokenCount (thoughts
//    included), promptTokensDetails, ...}, modelVersion, responseId. A function call is a `functionCall`
//    part {name, args} with finishReason "STOP": the API has no tool-call finish reason, and the
//    imitation sends no call `id` (the Gemini API leaves it unset);
//  - streaming: with `?alt=sse`, `data: <GenerateContentResponse>\r\n\r\n` per chunk (CRLF, as Google
//    frames it; no [DONE]); without it, one JSON array whose elements arrive as they are generated.
//    Every chunk has modelVersion, responseId and the prompt's usage; the last one has finishReason and
//    the full usage. A function call arrives whole, in one chunk;
//  - errors: {"error": {"code", "message", "status", "details"?}}, the status the google.rpc code name
//    of the HTTP status (429 RESOURCE_EXHAUSTED, 503 UNAVAILABLE, ...); Google's JSON is indented.
import {
  EXTRA_MEMBER,
  SCRIPTED_USAGE,
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
  type Reply,
  type ScriptedError,
  type Upstream,
  type UpstreamOptions,
} from "./common.ts";
import { validateGenerateContent, type GeminiProblem } from "./gemini-validate.ts";

export const GEMINI_DEFAULT_KEY = "AIza-imitation-gemini";
const ROUTE = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;
const JSON_TYPE = "application/json; charset=UTF-8";
const INDENT = 2;

/** google.rpc code names by HTTP status, as the Gemini API's troubleshooting page pairs them. */
const STATUSES: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  501: "NOT_IMPLEMENTED",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};
const DEFAULT_MESSAGES: Record<number, string> = {
  429: "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
  500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
  503: "The model is overloaded. Please try again later.",
};
const NO_KEY = "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.";
const BAD_KEY = "API key not valid. Please pass a valid API key.";

interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { name: string; args: Record<string, unknown> };
}
interface ModalityTokenCount {
  modality: "TEXT";
  tokenCount: number;
}
interface UsageMetadata {
  promptTokenCount: number;
  candidatesTokenCount?: number;
  totalTokenCount: number;
  cachedContentTokenCount?: number;
  thoughtsTokenCount?: number;
  promptTokensDetails: ModalityTokenCount[];
  cacheTokensDetails?: ModalityTokenCount[];
  candidatesTokensDetails?: ModalityTokenCount[];
}
interface GenerateContentResponse {
  candidates: { content: { parts: GeminiPart[]; role: "model" }; finishReason?: "STOP"; index: number }[];
  usageMetadata: UsageMetadata;
  modelVersion: string;
  responseId: string;
}

export function startGeminiUpstream(options: UpstreamOptions = {}): Upstream {
  const apiKey = options.apiKey ?? GEMINI_DEFAULT_KEY;
  return startUpstream(apiKey, "", async (request, record, take) => {
    const refuse = (status: number, problem: GeminiProblem): Response => {
      record.problem = problem.message;
      return errorResponse(status, problem.message, STATUSES[status]!, problem.details);
    };
    const url = new URL(request.url);
    const route = url.pathname.match(ROUTE);
    if (request.method !== "POST" || !route) return refuse(404, { message: "Requested entity was not found." });
    // An empty header carries no key, so the query's is used.
    const key = request.headers.get("x-goog-api-key") || url.searchParams.get("key");
    if (!key) return refuse(403, { message: NO_KEY });
    if (key !== apiKey) {
      const info = { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com", metadata: { service: "generativelanguage.googleapis.com" } };
      return refuse(400, { message: BAD_KEY, details: [info, { "@type": "type.googleapis.com/google.rpc.LocalizedMessage", locale: "en-US", message: BAD_KEY }] });
    }
    // Google's text for a non-JSON content-type is not published; the JSON error's form is used.
    if (!isJsonContentType(request.headers.get("content-type"))) return refuse(400, { message: "Invalid JSON payload received. Content-Type is not application/json." });
    try {
      record.body = JSON.parse(record.rawBody);
    } catch (error) {
      return refuse(400, { message: `Invalid JSON payload received. ${(error as Error).message}` });
    }
    const problem = validateGenerateContent(record.body) ?? signatureProblem(record.body as Record<string, unknown>);
    if (problem) return refuse(400, problem);
    record.valid = true;

    const body = record.body as Record<string, unknown>;
    const conversation = readConversation(body);
    const behaviour = take(conversation.lastUserText);
    if (behaviour) record.behaviour = behaviour;
    if (behaviour?.delayMs) await sleep(behaviour.delayMs);
    if (behaviour?.error) return scriptedError(behaviour.error);
    const thinks = behaviour?.reasoning === true && isObject(body.generationConfig) && isObject(body.generationConfig.thinkingConfig) && body.generationConfig.thinkingConfig.includeThoughts === true;
    const answer = new Answer(decodeURIComponent(route[1]!), planReply(conversation, behaviour, options), behaviour, promptText(body), thinks);
    if (route[2] === "generateContent") return jsonResponse(200, answer.response(), { "content-type": JSON_TYPE }, INDENT);
    const sse = url.searchParams.get("alt") === "sse";
    const frames = sse ? answer.chunks().map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`) : jsonArrayFrames(answer.chunks());
    return new Response(sseBody(frames, behaviour?.cutAfterEvents), {
      status: 200,
      headers: { "content-type": sse ? "text/event-stream" : JSON_TYPE },
    });
  });
}

function errorResponse(status: number, message: string, code: string, details?: readonly unknown[], headers: Record<string, string> = {}): Response {
  const error = { code: status, message, status: code, ...(details ? { details } : {}) };
  return jsonResponse(status, { error }, { "content-type": JSON_TYPE, ...headers }, INDENT);
}

function scriptedError(error: ScriptedError): Response {
  // The Gemini API sends no Retry-After header: the delay is a RetryInfo detail.
  const details = typeof error.retryAfter === "number" ? [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${error.retryAfter}s` }] : undefined;
  const message = error.message ?? DEFAULT_MESSAGES[error.status] ?? `Scripted error ${error.status}.`;
  return errorResponse(error.status, message, error.type ?? STATUSES[error.status] ?? "UNKNOWN", details, { ...error.headers });
}

/** The elements of a JSON array, each its own write: `[`, then `,\r\n` between elements, then `]`. */
function jsonArrayFrames(chunks: unknown[]): string[] {
  const frames = chunks.map((chunk, i) => (i === 0 ? "[" : ",\r\n") + JSON.stringify(chunk, null, INDENT));
  frames.push("]");
  return frames;
}

const list = (value: unknown): Record<string, unknown>[] => (value === undefined || value === null ? [] : Array.isArray(value) ? value : [value]) as Record<string, unknown>[];
const partsOf = (content: Record<string, unknown> | undefined): Record<string, unknown>[] => list(content?.parts);
const isUserTurn = (content: Record<string, unknown>): boolean => content.role === undefined || content.role === null || content.role === "" || content.role === "user";
const functionResponseOf = (part: Record<string, unknown>): unknown => part.functionResponse ?? part.function_response;

/** The words of some parts: their text, thoughts left out. */
const partsText = (parts: Record<string, unknown>[]): string => parts.map((p) => (typeof p.text === "string" && p.thought !== true ? p.text : "")).join("");

/** A function response's text: its "output" (or "error") key when it has one, else the whole response, as Google reads it. */
function responseText(response: unknown): string {
  if (!isObject(response)) return "";
  const value = response.output ?? response.error ?? response;
  return typeof value === "string" ? value : JSON.stringify(value);
}

function readConversation(body: Record<string, unknown>): Conversation {
  const contents = list(body.contents);
  const last = contents.at(-1);
  const results = last && isUserTurn(last) ? partsOf(last).map(functionResponseOf).filter(isObject) : [];
  const lastUser = contents.findLast((c) => isUserTurn(c) && partsOf(c).some((p) => typeof p.text === "string"));
  const declarations = list(body.tools).flatMap((tool) => list(tool.functionDeclarations ?? tool.function_declarations));
  return {
    tools: declarations.map((d) => d.name as string),
    endsWithUser: last !== undefined && isUserTurn(last) && results.length === 0,
    toolResultText: results.length > 0 ? results.map((r) => responseText(r.response)).join("\n") : undefined,
    lastUserText: lastUser ? partsText(partsOf(lastUser)) : "",
    wantsJson: isObject(body.generationConfig) && (body.generationConfig.responseMimeType === "application/json" || body.generationConfig.responseJsonSchema !== undefined || body.generationConfig.responseSchema !== undefined),
  };
}

/** All the text the request carries, for the prompt token count. */
function promptText(body: Record<string, unknown>): string {
  const system = body.systemInstruction ?? body.system_instruction;
  const contents = [...(isObject(system) ? [system] : []), ...list(body.contents)];
  return contents
    .flatMap(partsOf)
    .map((p) => (typeof p.text === "string" ? p.text : JSON.stringify(p.functionCall ?? p.function_call ?? functionResponseOf(p) ?? "")))
    .join("\n");
}

/** Calls this imitation made after thinking (name and arguments), with the signature it put on each. */
const signedCalls = new Map<string, string>();
const callKey = (call: Record<string, unknown>): string => `${String(call.name)}:${JSON.stringify(call.args ?? {})}`;
/** The values Google documents for history the model did not produce: accepted in place of a signature. */
const DUMMY_SIGNATURES = new Set(["skip_thought_signature_validator", "context_engineering_is_the_way_to_go"]);

/**
 * Gemini 3's rule for the current turn (the model's steps after the last user text): a functionCall the
 * model made after thinking must come back with the thoughtSignature it carried (or a documented dummy).
 */
function signatureProblem(body: Record<string, unknown>): GeminiProblem | undefined {
  const contents = list(body.contents);
  const lastUserText = contents.findLastIndex((c) => isUserTurn(c) && partsOf(c).some((p) => typeof p.text === "string"));
  for (const [i, content] of contents.entries()) {
    if (i <= lastUserText || isUserTurn(content)) continue;
    for (const [j, part] of partsOf(content).entries()) {
      const call = part.functionCall ?? part.function_call;
      if (!isObject(call)) continue;
      const issued = signedCalls.get(callKey(call));
      if (issued === undefined) continue;
      const signature = part.thoughtSignature ?? part.thought_signature;
      if (signature === undefined) {
        return { message: `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${String(call.name)}\` , position ${j + 1}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.` };
      }
      if (signature !== issued && !DUMMY_SIGNATURES.has(String(signature))) return { message: `Corrupted thought signature at contents[${i}].parts[${j}].` };
    }
  }
  return undefined;
}

const THOUGHT = "Thinking about which tool answers this.";

/** One answer, rendered either as a GenerateContentResponse or as its stream of chunks. */
class Answer {
  private readonly responseId = nextId("imit", 18);
  /** Set when the model thinks first: the thoughtSignature of its step. */
  private readonly signature: string | undefined;

  constructor(
    private readonly model: string,
    private readonly reply: Reply,
    private readonly behaviour: Behaviour | undefined,
    private readonly prompt: string,
    thinks = false,
  ) {
    if (!thinks) return;
    this.signature = Buffer.from(`imitation-thought-signature:${this.responseId}`).toString("base64");
    if (reply.kind === "tool_call") signedCalls.set(callKey({ name: reply.name, args: JSON.parse(reply.arguments) }), this.signature);
  }

  private usage(final: boolean): UsageMetadata {
    const detailed = this.behaviour?.detailedUsage === true;
    const cached = detailed ? SCRIPTED_USAGE.cachedTokens : 0;
    // promptTokenCount includes the cached content; thoughts are outside candidatesTokenCount but inside the total.
    const prompt = tokenCount(this.prompt) + cached;
    const usage: UsageMetadata = { promptTokenCount: prompt, totalTokenCount: prompt, promptTokensDetails: [{ modality: "TEXT", tokenCount: prompt }] };
    if (!final) return usage;
    const reply = this.reply;
    const candidates = tokenCount(reply.kind === "text" ? reply.text : reply.name + reply.arguments);
    const thoughts = detailed ? SCRIPTED_USAGE.reasoningTokens : 0;
    return {
      ...usage,
      candidatesTokenCount: candidates,
      totalTokenCount: prompt + candidates + thoughts,
      ...(detailed ? { cachedContentTokenCount: cached, cacheTokensDetails: [{ modality: "TEXT", tokenCount: cached }], thoughtsTokenCount: thoughts } : {}),
      candidatesTokensDetails: [{ modality: "TEXT", tokenCount: candidates }],
    };
  }

  private chunk(parts: GeminiPart[], final: boolean): GenerateContentResponse & Record<string, unknown> {
    return {
      candidates: [{ content: { parts, role: "model" }, ...(final ? { finishReason: "STOP" as const } : {}), index: 0 }],
      usageMetadata: this.usage(final),
      modelVersion: this.model,
      responseId: this.responseId,
      ...(this.behaviour?.extraMember ? EXTRA_MEMBER : {}),
    };
  }

  /** The thought first when the model thinks; its signature on the function call, or on the last text part. */
  private parts(): GeminiPart[] {
    const reply = this.reply;
    const signed = this.signature === undefined ? {} : { thoughtSignature: this.signature };
    const thought: GeminiPart[] = this.signature === undefined ? [] : [{ text: THOUGHT, thought: true }];
    return reply.kind === "text" ? [...thought, { text: reply.text, ...signed }] : [...thought, { functionCall: { name: reply.name, args: JSON.parse(reply.arguments) as Record<string, unknown> }, ...signed }];
  }

  response(): GenerateContentResponse {
    return this.chunk(this.parts(), true);
  }

  chunks(): GenerateContentResponse[] {
    if (this.reply.kind !== "text") return [this.response()];
    const texts = pieces(this.reply.text);
    const thought = this.signature === undefined ? [] : [this.chunk([{ text: THOUGHT, thought: true }], false)];
    const signed = this.signature === undefined ? {} : { thoughtSignature: this.signature };
    return [...thought, ...texts.map((text, i) => (i === texts.length - 1 ? this.chunk([{ text, ...signed }], true) : this.chunk([{ text }], false)))];
  }
}
