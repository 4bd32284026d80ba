// Imitation of Cohere's Chat API v2 (POST /v2/chat; a provider base_url is the host root,
// http://127.0.0.1:<port>, as the official SDK's environment is https://api.cohere.com). It checks what it
// receives as strictly as Cohere (cohere-validate.ts) and answers in Cohere's wire format. There is no
// Cohere SDK in this repository, so the wire shapes are typed below from the official TypeScript SDK's
// serializers (cohere-ai/cohere-typescript src/serialization: V2ChatResponse, AssistantMessageResponse,
// ToolCallV2, Usage, V2ChatStreamResponse and its events) and the API reference's examples
// (docs.cohere.com/reference/chat, /reference/chat-stream, /v2/docs/streaming).
// Facts used here:
//  - auth: `Authorization: Bearer <key>`; 401 "no api key supplied" / "invalid api token";
//  - non-stream: {id, message {role "assistant", content [{type "text", text}] | tool_plan + tool_calls
//    [{id, type "function", function {name, arguments}}]}, finish_reason "COMPLETE" | "TOOL_CALL", usage
//    {billed_units {input_tokens, output_tokens}, tokens {input_tokens, output_tokens}, cached_tokens?}}.
//    `tokens.input_tokens` counts the prompt template Cohere adds; `billed_units` does not (the docs'
//    example bills 5 of 71 input tokens), so the two differ here too;
//  - stream: `event: <type>\ndata: <json>\n\n`, the event name equal to the data's `type`: message-start
//    {id, delta.message.role}; for text content-start {index, delta.message.content {type "text", text
//    ""}}, content-delta {index, delta.message.content.text}, content-end {index}; for a call
//    tool-plan-delta {delta.message.tool_plan}, tool-call-start {index, delta.message.tool_calls {id,
//    type, function {name, arguments ""}}}, tool-call-delta {index, delta.message.tool_calls.function
//    .arguments}, tool-call-end {index}; then message-end {delta {finish_reason, usage}}; and last
//    `data: [DONE]`, the terminator the SDK's stream reader stops at;
//  - errors: {"id", "message"} (the error reference's shape), with the HTTP status.
import {
  EXTRA_MEMBER,
  SCRIPTED_USAGE,
  bearerToken,
  isJsonContentType,
  isObject,
  jsonResponse,
  namedEvent,
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
import { validateChat } from "./cohere-validate.ts";

export const COHERE_DEFAULT_KEY = "co-imitation-cohere";
const ROUTE = "/v2/chat";
/** The prompt template tokens Cohere counts in `tokens.input_tokens` but does not bill. */
const TEMPLATE_TOKENS = 66;
/** The error reference's 429 text; it publishes none for 5xx, so those get a plain one. */
const DEFAULT_MESSAGES: Record<number, string> = {
  429: "You are past the per minute request limit, please wait and try again later.",
  500: "internal server error",
};

interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}
interface Usage {
  billed_units: { input_tokens: number; output_tokens: number };
  tokens: { input_tokens: number; output_tokens: number };
  cached_tokens?: number;
}
type FinishReason = "COMPLETE" | "TOOL_CALL";
interface ChatResponse {
  id: string;
  message: { role: "assistant"; content?: { type: "text"; text: string }[]; tool_plan?: string; tool_calls?: ToolCall[] };
  finish_reason: FinishReason;
  usage: Usage;
}

/** Cohere ids are UUIDs; these are deterministic within a run. */
const uuid = (): string => `00000000-0000-4000-8000-${nextId("", 12)}`;

export function startCohereUpstream(options: UpstreamOptions = {}): Upstream {
  const apiKey = options.apiKey ?? COHERE_DEFAULT_KEY;
  return startUpstream(apiKey, "", async (request, record, take) => {
    const refuse = (status: number, message: string): Response => {
      record.problem = message;
      return jsonResponse(status, { id: uuid(), message }, {});
    };
    const path = new URL(request.url).pathname;
    if (request.method !== "POST" || path !== ROUTE) return refuse(404, "404 page not found");
    const key = bearerToken(request.headers.get("authorization"));
    if (key === null) return refuse(401, "no api key supplied");
    if (key !== apiKey) return refuse(401, "invalid api token");
    // Cohere's text for a non-JSON content-type is not published; the JSON error's form is used.
    if (!isJsonContentType(request.headers.get("content-type"))) return refuse(400, "invalid json syntax: content-type is not application/json");
    try {
      record.body = JSON.parse(record.rawBody);
    } catch (error) {
      return refuse(400, `invalid json syntax: ${(error as Error).message}`);
    }
    const problem = validateChat(record.body);
    if (problem) return refuse(400, problem);
    record.valid = true;

    const body = record.body as Record<string, unknown>;
    const conversation = readConversation(body);
    const behaviour = take(conversation.lastUserText);
    if (behaviour) record.behaviour = behaviour;
    if (behaviour?.delayMs) await sleep(behaviour.delayMs);
    if (behaviour?.error) return scriptedError(behaviour.error);
    const answer = new Answer(planReply(conversation, behaviour, options), behaviour, promptText(body));
    if (body.stream !== true) return jsonResponse(200, answer.response(), {});
    return new Response(sseBody(answer.frames(), behaviour?.cutAfterEvents), {
      status: 200,
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
    });
  });
}

function scriptedError(error: ScriptedError): Response {
  const headers: Record<string, string> = { ...error.headers };
  if (error.retryAfter !== undefined) headers["retry-after"] = String(error.retryAfter);
  const message = error.message ?? DEFAULT_MESSAGES[error.status] ?? `Scripted error ${error.status}.`;
  return jsonResponse(error.status, { id: uuid(), message }, headers);
}

/** Text of a content value: the string, or the text of its text blocks (documents as their JSON data). */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block) => {
      if (!isObject(block)) return "";
      if (block.type === "text" && typeof block.text === "string") return block.text;
      if (block.type === "document" && isObject(block.document)) return JSON.stringify(block.document.data);
      return "";
    })
    .join("");
}

function readConversation(body: Record<string, unknown>): Conversation {
  const messages = body.messages as Record<string, unknown>[];
  const last = messages.at(-1)!;
  const lastUser = messages.findLast((m) => m.role === "user");
  // The tool messages at the end answer the assistant's calls; their text is what the reply quotes.
  let start = messages.length;
  while (start > 0 && messages[start - 1]!.role === "tool") start -= 1;
  const results = messages.slice(start).map((m) => contentText(m.content));
  const tools = Array.isArray(body.tools) ? (body.tools as Record<string, unknown>[]) : [];
  const functions = tools.filter((t) => t.type === "function" && isObject(t.function));
  return {
    tools: functions.map((t) => (t.function as Record<string, unknown>).name as string),
    endsWithUser: last.role === "user",
    toolResultText: results.length > 0 ? results.join("\n") : undefined,
    lastUserText: lastUser ? contentText(lastUser.content) : "",
    wantsJson: (body.response_format as { type?: string } | undefined)?.type === "json_object",
  };
}

/** All the text the request carries, for the input token count. */
function promptText(body: Record<string, unknown>): string {
  const messages = body.messages as Record<string, unknown>[];
  return messages.map((m) => contentText(m.content) + (Array.isArray(m.tool_calls) ? JSON.stringify(m.tool_calls) : "")).join("\n");
}

/** One answer, rendered either as a chat response or as its event stream. */
class Answer {
  private readonly id = uuid();
  private readonly callId: string;

  constructor(
    private readonly reply: Reply,
    private readonly behaviour: Behaviour | undefined,
    private readonly prompt: string,
  ) {
    // Cohere names a call after its tool: <name>_<12 characters>.
    this.callId = reply.kind === "tool_call" ? `${reply.name}_${nextId("", 12)}` : "";
  }

  private usage(): Usage {
    const reply = this.reply;
    const input = tokenCount(this.prompt);
    const output = tokenCount(reply.kind === "text" ? reply.text : this.toolPlan() + reply.name + reply.arguments);
    return {
      billed_units: { input_tokens: input, output_tokens: output },
      tokens: { input_tokens: input + TEMPLATE_TOKENS, output_tokens: output },
      ...(this.behaviour?.detailedUsage ? { cached_tokens: SCRIPTED_USAGE.cachedTokens } : {}),
    };
  }

  private toolPlan(): string {
    return this.reply.kind === "tool_call" ? `I will use ${this.reply.name} to answer.` : "";
  }

  private finishReason(): FinishReason {
    return this.reply.kind === "text" ? "COMPLETE" : "TOOL_CALL";
  }

  private extra(): Record<string, unknown> {
    return this.behaviour?.extraMember ? EXTRA_MEMBER : {};
  }

  response(): ChatResponse & Record<string, unknown> {
    const reply = this.reply;
    const message: ChatResponse["message"] =
      reply.kind === "text"
        ? { role: "assistant", content: [{ type: "text", text: reply.text }] }
        : { role: "assistant", tool_plan: this.toolPlan(), tool_calls: [{ id: this.callId, type: "function", function: { name: reply.name, arguments: reply.arguments } }] };
    return { id: this.id, message, finish_reason: this.finishReason(), usage: this.usage(), ...this.extra() };
  }

  frames(): string[] {
    const event = (type: string, data: Record<string, unknown>): string => namedEvent(type, { type, ...data, ...this.extra() });
    const reply = this.reply;
    const frames = [event("message-start", { id: this.id, delta: { message: { role: "assistant" } } })];
    if (reply.kind === "text") {
      frames.push(event("content-start", { index: 0, delta: { message: { content: { type: "text", text: "" } } } }));
      for (const text of pieces(reply.text)) frames.push(event("content-delta", { index: 0, delta: { message: { content: { text } } } }));
      frames.push(event("content-end", { index: 0 }));
    } else {
      for (const plan of pieces(this.toolPlan())) frames.push(event("tool-plan-delta", { delta: { message: { tool_plan: plan } } }));
      const start = { id: this.callId, type: "function", function: { name: reply.name, arguments: "" } };
      frames.push(event("tool-call-start", { index: 0, delta: { message: { tool_calls: start } } }));
      for (const args of pieces(reply.arguments)) frames.push(event("tool-call-delta", { index: 0, delta: { message: { tool_calls: { function: { arguments: args } } } } }));
      frames.push(event("tool-call-end", { index: 0 }));
    }
    frames.push(event("message-end", { delta: { finish_reason: this.finishReason(), usage: this.usage() } }));
    frames.push("data: [DONE]\n\n");
    return frames;
  }
}
