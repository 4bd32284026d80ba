// Imitation of OpenAI's Chat Completions endpoint (POST /v1/chat/completions, so a provider base_url is
// http://127.0.0.1:<port>/v1). It checks what it receives as strictly as OpenAI (openai-validate.ts) and
// answers in OpenAI's exact wire format. Response objects are typed with the official SDK's own types
// (ChatCompletion, ChatCompletionChunk), so a member the SDK declares cannot be forgotten or misspelt.
// Facts used here:
//  - non-stream: object "chat.completion", choices[].message {role, content, refusal, annotations,
//    tool_calls?}, logprobs null, finish_reason "stop" | "tool_calls"; usage with prompt/completion token
//    details (OpenAI reports them, zero when nothing was cached or reasoned);
//  - stream: `data: <chunk>\n\n` per "chat.completion.chunk", the first delta carrying the role, tool call
//    arguments as several `function.arguments` deltas, a last delta `{}` with the finish_reason, then, only
//    when stream_options.include_usage is true, a chunk with `choices: []` and the usage (every other
//    chunk then carries `usage: null`), and finally `data: [DONE]`;
//  - errors: {"error": {message, type, param, code}}; the SDK reads `x-request-id`, `retry-after`,
//    `retry-after-ms` and `x-should-retry` from the headers.
// The same server also answers POST /v1/responses (responses.ts), as OpenAI serves both endpoints on one
// host under one key: the credential, JSON and error handling below are shared, the scripts too.
import type OpenAI from "openai";
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
  type Reply,
  type ScriptedError,
  type Upstream,
  type UpstreamOptions,
} from "./common.ts";
import { JSON_PARSE_ERROR, validateChatCompletion, type OpenAIProblem } from "./openai-validate.ts";
import { RESPONSES_ROUTE, ResponsesMemory, serveResponses } from "./responses.ts";

export const OPENAI_DEFAULT_KEY = "sk-imitation-openai";
const ROUTE = "/v1/chat/completions";
const FINGERPRINT = "fp_imitation";

export function startOpenAIUpstream(options: UpstreamOptions = {}): Upstream {
  const apiKey = options.apiKey ?? OPENAI_DEFAULT_KEY;
  const memory = new ResponsesMemory();
  return startUpstream(apiKey, "/v1", async (request, record, take) => {
    const requestId = nextId("req_", 32);
    const headers = { "x-request-id": requestId };
    const refuse = (status: number, problem: OpenAIProblem): Response => {
      record.problem = problem.message;
      return jsonResponse(status, { error: problem }, headers);
    };
    const path = new URL(request.url).pathname;
    if (request.method !== "POST" || (path !== ROUTE && path !== RESPONSES_ROUTE)) {
      return refuse(404, { message: `Invalid URL (${request.method} ${path})`, type: "invalid_request_error", param: null, code: null });
    }
    const authProblem = authenticate(request.headers.get("authorization"), apiKey);
    if (authProblem) return refuse(401, authProblem);
    const parseProblem: OpenAIProblem = { message: JSON_PARSE_ERROR, type: "invalid_request_error", param: null, code: null };
    if (!isJsonContentType(request.headers.get("content-type"))) return refuse(400, parseProblem);
    try {
      record.body = JSON.parse(record.rawBody);
    } catch {
      return refuse(400, parseProblem);
    }
    if (path === RESPONSES_ROUTE) {
      return serveResponses({ record, take, options, headers, memory, refuse, scripted: (error, model) => scriptedError(error, model, headers) });
    }
    const problem = validateChatCompletion(record.body);
    if (problem) return refuse(400, problem);
    record.valid = true;

    const body = record.body as Record<string, unknown>;
    const conversation = readConversation(body);
    const behaviour = take(conversation.lastUserText);
    if (behaviour) record.behaviour = behaviour;
    if (behaviour?.delayMs) await sleep(behaviour.delayMs);
    if (behaviour?.error) return scriptedError(behaviour.error, body.model as string, headers);
    const reply = planReply(conversation, behaviour, options);
    const answer = new Answer(body, reply, behaviour, promptText(body));
    if (body.stream !== true) return jsonResponse(200, answer.completion(), headers);
    const includeUsage = isObject(body.stream_options) && body.stream_options.include_usage === true;
    return new Response(sseBody(answer.frames(includeUsage), behaviour?.cutAfterEvents), {
      status: 200,
      headers: { ...headers, "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
    });
  });
}

/** `Authorization: Bearer <key>`; OpenAI's two 401 texts (no key; wrong key, shown masked). */
function authenticate(header: string | null, apiKey: string): OpenAIProblem | null {
  const key = bearerToken(header);
  if (key === null) {
    return {
      message:
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.",
      type: "invalid_request_error",
      param: null,
      code: null,
    };
  }
  if (key === apiKey) return null;
  const masked = key.length > 8 ? `${key.slice(0, 3)}${"*".repeat(key.length - 7)}${key.slice(-4)}` : "*".repeat(key.length);
  return {
    message: `Incorrect API key provided: ${masked}. You can find your API key at https://platform.openai.com/account/api-keys.`,
    type: "invalid_request_error",
    param: null,
    code: "invalid_api_key",
  };
}

function scriptedError(error: ScriptedError, model: string, base: Record<string, string>): Response {
  const status = error.status;
  const defaults: OpenAIProblem =
    status === 429
      ? {
          message: `Rate limit reached for ${model} in organization org-imitation on requests per min (RPM): Limit 1, Used 1, Requested 1. Please try again in 1s. Visit https://platform.openai.com/account/rate-limits to learn more.`,
          type: "requests",
          param: null,
          code: "rate_limit_exceeded",
        }
      : status >= 500
        ? { message: "The server had an error while processing your request. Sorry about that!", type: "server_error", param: null, code: null }
        : { message: `Scripted error ${status}.`, type: "invalid_request_error", param: null, code: null };
  const problem: OpenAIProblem = {
    message: error.message ?? defaults.message,
    type: error.type ?? defaults.type,
    param: null,
    code: error.code === undefined ? defaults.code : error.code,
  };
  const headers: Record<string, string> = { ...base, ...error.headers };
  if (error.retryAfter !== undefined) headers["retry-after"] = String(error.retryAfter);
  return jsonResponse(status, { error: problem }, headers);
}

/** Text of a content value: the string, or the text of its text parts. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => (isObject(part) && typeof part.text === "string" ? part.text : "")).join("");
}

function readConversation(body: Record<string, unknown>): Conversation {
  const messages = body.messages as Record<string, unknown>[];
  const last = messages.at(-1)!;
  const lastUser = messages.findLast((m) => m.role === "user");
  // The first function tool is the one a scripted call names (custom tools take free text, not JSON).
  const tools = Array.isArray(body.tools) ? (body.tools as Record<string, unknown>[]) : [];
  const functions = tools.filter((t) => t.type === "function");
  // The tool messages at the end answer the assistant's calls; their text is what the reply quotes.
  let start = messages.length;
  while (start > 0 && messages[start - 1]!.role === "tool") start -= 1;
  const results = messages.slice(start).map((m) => contentText(m.content));
  return {
    tools: functions.map((t) => (t.function as Record<string, unknown>).name as string),
    endsWithUser: last.role === "user",
    toolResultText: results.length > 0 ? results.join("\n") : undefined,
    lastUserText: lastUser ? contentText(lastUser.content) : "",
    wantsJson: ["json_object", "json_schema"].includes(String((body.response_format as { type?: string } | undefined)?.type)),
  };
}

/** All the text the request carries, for the prompt token count. */
function promptText(body: Record<string, unknown>): string {
  const messages = body.messages as Record<string, unknown>[];
  return messages
    .map((m) => {
      const calls = Array.isArray(m.tool_calls) ? JSON.stringify(m.tool_calls) : "";
      return contentText(m.content) + calls;
    })
    .join("\n");
}

/** One answer, rendered either as a chat.completion or as its chunk stream. */
class Answer {
  private readonly id = nextId("chatcmpl-imit", 20);
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly model: string;
  private readonly callId = nextId("call_imit", 15);

  constructor(
    body: Record<string, unknown>,
    private readonly reply: Reply,
    private readonly behaviour: Behaviour | undefined,
    private readonly prompt: string,
  ) {
    this.model = body.model as string;
  }

  private usage(): OpenAI.CompletionUsage {
    const detailed = this.behaviour?.detailedUsage === true;
    const out = this.reply.kind === "text" ? this.reply.text : this.reply.name + this.reply.arguments;
    // Cached tokens are a part of the prompt tokens and reasoning tokens a part of the completion tokens.
    const cached = detailed ? SCRIPTED_USAGE.cachedTokens : 0;
    const reasoning = detailed ? SCRIPTED_USAGE.reasoningTokens : 0;
    const prompt = tokenCount(this.prompt) + cached;
    const completion = tokenCount(out) + reasoning;
    return {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    };
  }

  private extra(): Record<string, unknown> {
    return this.behaviour?.extraMember ? EXTRA_MEMBER : {};
  }

  completion(): OpenAI.ChatCompletion & Record<string, unknown> {
    const reply = this.reply;
    const message: OpenAI.ChatCompletion.Choice["message"] =
      reply.kind === "text"
        ? { role: "assistant", content: reply.text, refusal: null, annotations: [] }
        : {
            role: "assistant",
            content: null,
            refusal: null,
            annotations: [],
            tool_calls: [{ id: this.callId, type: "function", function: { name: reply.name, arguments: reply.arguments } }],
          };
    return {
      id: this.id,
      object: "chat.completion",
      created: this.created,
      model: this.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: reply.kind === "text" ? "stop" : "tool_calls" }],
      usage: this.usage(),
      service_tier: "default",
      system_fingerprint: FINGERPRINT,
      ...this.extra(),
    };
  }

  frames(includeUsage: boolean): string[] {
    const chunk = (choices: OpenAI.ChatCompletionChunk.Choice[], usage?: OpenAI.CompletionUsage): string => {
      const value: OpenAI.ChatCompletionChunk & Record<string, unknown> = {
        id: this.id,
        object: "chat.completion.chunk",
        created: this.created,
        model: this.model,
        service_tier: "default",
        system_fingerprint: FINGERPRINT,
        choices,
        // With include_usage every chunk carries `usage`: null until the final usage chunk.
        ...(includeUsage ? { usage: usage ?? null } : {}),
        ...this.extra(),
      };
      return `data: ${JSON.stringify(value)}\n\n`;
    };
    const delta = (d: OpenAI.ChatCompletionChunk.Choice.Delta, finish: OpenAI.ChatCompletionChunk.Choice["finish_reason"] = null): string =>
      chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
    const reply = this.reply;
    const frames: string[] = [];
    if (reply.kind === "text") {
      frames.push(delta({ role: "assistant", content: "", refusal: null }));
      for (const piece of pieces(reply.text)) frames.push(delta({ content: piece }));
      frames.push(delta({}, "stop"));
    } else {
      frames.push(
        delta({ role: "assistant", content: null, refusal: null, tool_calls: [{ index: 0, id: this.callId, type: "function", function: { name: reply.name, arguments: "" } }] }),
      );
      for (const piece of pieces(reply.arguments)) frames.push(delta({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
      frames.push(delta({}, "tool_calls"));
    }
    if (includeUsage) frames.push(chunk([], this.usage()));
    frames.push("data: [DONE]\n\n");
    return frames;
  }
}
