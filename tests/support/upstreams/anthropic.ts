// Imitation of Anthropic's Messages endpoint (POST /v1/messages; a provider base_url is the host root,
// http://127.0.0.1:<port>). It checks what it receives as strictly as Anthropic (anthropic-validate.ts)
// and answers in Anthropic's exact wire format. Response objects are typed with the official SDK's own
// types (Message, RawMessageStreamEvent), so a member the SDK declares cannot be forgotten or misspelt.
// Facts used here:
//  - auth: `x-api-key`, or `Authorization: Bearer <key>`, which is what the official SDKs send since API
//    version 2026-10-21 (SDK 1.0.0; the docs' curl examples still use x-api-key): 401
//    authentication_error "x-api-key header is required" / "invalid x-api-key"; and a required
//    `anthropic-version` header (400 "anthropic-version: header is required", or
//    `anthropic-version: "<v>" is not a valid version`), one of 2023-01-01, 2023-06-01, 2026-10-21;
//  - stream: `event: <type>\ndata: <json>\n\n`, the event name always equal to the data's `type`;
//    message_start (a Message with empty content), then per block content_block_start, deltas
//    (text_delta / input_json_delta with partial JSON strings), content_block_stop; a `ping`; then
//    message_delta (stop_reason and cumulative usage) and message_stop;
//  - errors: {"type":"error","error":{"type","message"},"request_id"} with the type fixed by the status
//    (400 invalid_request_error, 401 authentication_error, 403 permission_error, 404 not_found_error,
//    413 request_too_large, 429 rate_limit_error, 500 api_error, 529 overloaded_error), and a `request-id`
//    header on every response (the SDK reads `request-id`, `retry-after`, `retry-after-ms`, `x-should-retry`).
import type Anthropic from "@anthropic-ai/sdk";
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
import { VERSION_2026_10_21, validateMessages } from "./anthropic-validate.ts";

export const ANTHROPIC_DEFAULT_KEY = "sk-ant-imitation";
/** The versions Anthropic documents for the `anthropic-version` header (its versioning page). */
export const ANTHROPIC_VERSIONS = ["2023-01-01", "2023-06-01", VERSION_2026_10_21];
const ROUTE = "/v1/messages";

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};
const DEFAULT_MESSAGES: Record<number, string> = { 429: "Rate limited. Please try again later.", 500: "Internal server error", 529: "Overloaded" };

export function startAnthropicUpstream(options: UpstreamOptions = {}): Upstream {
  const apiKey = options.apiKey ?? ANTHROPIC_DEFAULT_KEY;
  return startUpstream(apiKey, "", async (request, record, take) => {
    const requestId = nextId("req_imit", 20);
    const headers = { "request-id": requestId };
    const errorResponse: ErrorResponder = (status, message, type = ERROR_TYPES[status] ?? "invalid_request_error", extra = {}) =>
      jsonResponse(status, { type: "error", error: { type, message }, request_id: requestId }, { ...headers, ...extra });
    const refuse = (status: number, message: string): Response => {
      record.problem = message;
      return errorResponse(status, message);
    };
    const path = new URL(request.url).pathname;
    if (request.method !== "POST" || path !== ROUTE) return refuse(404, "Not Found");
    const key = request.headers.get("x-api-key") ?? request.headers.get("authorization")?.match(/^Bearer\s+(.+)$/i)?.[1]?.trim() ?? null;
    if (key === null || key === "") return refuse(401, "x-api-key header is required");
    if (key !== apiKey) return refuse(401, "invalid x-api-key");
    const version = request.headers.get("anthropic-version");
    if (version === null || version === "") return refuse(400, "anthropic-version: header is required");
    if (!ANTHROPIC_VERSIONS.includes(version)) return refuse(400, `anthropic-version: "${version}" is not a valid version`);
    // Anthropic's text for a non-JSON content-type is not published; the JSON error's form is used.
    if (!isJsonContentType(request.headers.get("content-type"))) return refuse(400, "The request body is not valid JSON: content-type is not application/json");
    try {
      record.body = JSON.parse(record.rawBody);
    } catch (error) {
      return refuse(400, `The request body is not valid JSON: ${(error as Error).message}`);
    }
    const problem = validateMessages(record.body, version) ?? thinkingProblem(record.body as Record<string, unknown>);
    if (problem) return refuse(400, problem);
    record.valid = true;

    const body = record.body as Record<string, unknown>;
    const conversation = readConversation(body);
    const behaviour = take(conversation.lastUserText);
    if (behaviour) record.behaviour = behaviour;
    if (behaviour?.delayMs) await sleep(behaviour.delayMs);
    if (behaviour?.error) return scriptedError(behaviour.error, errorResponse);
    const answer = new Answer(body, planReply(conversation, behaviour, options), behaviour, promptText(body));
    if (body.stream !== true) return jsonResponse(200, answer.message(), headers);
    return new Response(sseBody(answer.frames(), behaviour?.cutAfterEvents), {
      status: 200,
      headers: { ...headers, "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
    });
  });
}

type ErrorResponder = (status: number, message: string, type?: string, extra?: Record<string, string>) => Response;

function scriptedError(error: ScriptedError, errorResponse: ErrorResponder): Response {
  const headers: Record<string, string> = { ...error.headers };
  if (error.retryAfter !== undefined) headers["retry-after"] = String(error.retryAfter);
  return errorResponse(error.status, error.message ?? DEFAULT_MESSAGES[error.status] ?? `Scripted error ${error.status}.`, error.type, headers);
}

/** Text of a content value: the string, or the text of its text blocks (tool results included, flattened). */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block) => {
      if (!isObject(block)) return "";
      if (block.type === "text" && typeof block.text === "string") return block.text;
      if (block.type === "tool_result") return contentText(block.content);
      return "";
    })
    .join("");
}

function readConversation(body: Record<string, unknown>): Conversation {
  const messages = body.messages as Record<string, unknown>[];
  // A `system` message between turns (Claude Code sends one after the user's) is an instruction, not a turn.
  const last = messages.findLast((m) => m.role !== "system") ?? messages.at(-1)!;
  const blocks = Array.isArray(last.content) ? (last.content as Record<string, unknown>[]) : [];
  const results = last.role === "user" ? blocks.filter((b) => b.type === "tool_result") : [];
  // The user's words: the text blocks of the last user message (a tool result is not the user speaking).
  const lastUser = messages.findLast((m) => m.role === "user");
  const userText = lastUser
    ? typeof lastUser.content === "string"
      ? lastUser.content
      : contentText((lastUser.content as Record<string, unknown>[]).filter((b) => b.type === "text"))
    : "";
  // A client tool has no type, or type "custom"; typed ones (web_search_...) are Anthropic's server tools.
  const tools = Array.isArray(body.tools) ? (body.tools as Record<string, unknown>[]) : [];
  const clientTools = tools.filter((t) => t.type === undefined || t.type === null || t.type === "custom");
  return {
    tools: clientTools.map((t) => t.name as string),
    endsWithUser: last.role === "user" && results.length === 0,
    toolResultText: results.length > 0 ? results.map((r) => contentText(r.content)).join("\n") : undefined,
    lastUserText: userText,
    wantsJson: (body.output_config as { format?: { type?: string } } | undefined)?.format?.type === "json_schema",
  };
}

/** All the text the request carries, for the input token count. */
function promptText(body: Record<string, unknown>): string {
  const messages = body.messages as Record<string, unknown>[];
  const system = typeof body.system === "string" ? body.system : contentText(body.system);
  return [system, ...messages.map((m) => contentText(m.content))].join("\n");
}

/** Signatures this imitation put on thinking blocks, and the tool calls it made right after thinking. */
const issuedSignatures = new Set<string>();
const thoughtfulToolUses = new Set<string>();

/**
 * Anthropic's rules for echoed thinking: a thinking block's signature must be one the API issued, and when
 * the model thought before a tool call, the assistant turn holding that call must come back starting with
 * its thinking block (the API's wording: "a final `assistant` message must start with a thinking block").
 */
function thinkingProblem(body: Record<string, unknown>): string | undefined {
  const messages = body.messages as Record<string, unknown>[];
  for (const [i, message] of messages.entries()) {
    if (message.role !== "assistant" || !Array.isArray(message.content)) continue;
    for (const [j, block] of (message.content as Record<string, unknown>[]).entries()) {
      if (block.type === "thinking" && !issuedSignatures.has(String(block.signature))) return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`;
    }
  }
  const last = messages.findLastIndex((m) => m.role === "assistant");
  const blocks = last >= 0 && Array.isArray(messages[last]!.content) ? (messages[last]!.content as Record<string, unknown>[]) : [];
  const thoughtBefore = blocks.some((b) => b.type === "tool_use" && thoughtfulToolUses.has(String(b.id)));
  if (thoughtBefore && blocks[0]?.type !== "thinking" && blocks[0]?.type !== "redacted_thinking") {
    return `messages.${last}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(blocks[0]?.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`;
  }
  return undefined;
}

const THOUGHT = "Let me think about what the user needs.";

/** One answer, rendered either as a Message or as its event stream. */
class Answer {
  private readonly id = nextId("msg_imit", 20);
  private readonly toolUseId = nextId("toolu_imit", 18);
  private readonly model: string;

  constructor(
    body: Record<string, unknown>,
    private readonly reply: Reply,
    private readonly behaviour: Behaviour | undefined,
    private readonly prompt: string,
  ) {
    this.model = body.model as string;
    const thinking = body.thinking as { type?: string } | undefined;
    if (behaviour?.reasoning && (thinking?.type === "enabled" || thinking?.type === "adaptive")) {
      this.signature = Buffer.from(`imitation-signature:${this.id}`).toString("base64");
      issuedSignatures.add(this.signature);
      if (reply.kind === "tool_call") thoughtfulToolUses.add(this.toolUseId);
    }
  }

  /** Set when the model thinks before answering: the signature of its thinking block. */
  private readonly signature: string | undefined;

  private outputTokens(): number {
    const out = this.reply.kind === "text" ? this.reply.text : this.reply.name + this.reply.arguments;
    // Thinking tokens are a part of output_tokens, as reasoning tokens are for OpenAI.
    return tokenCount(out) + (this.behaviour?.detailedUsage ? SCRIPTED_USAGE.reasoningTokens : 0);
  }

  private usage(): Anthropic.Usage {
    const detailed = this.behaviour?.detailedUsage === true;
    const created = detailed ? SCRIPTED_USAGE.cacheCreationInputTokens : 0;
    return {
      input_tokens: tokenCount(this.prompt),
      cache_creation_input_tokens: created,
      cache_read_input_tokens: detailed ? SCRIPTED_USAGE.cacheReadInputTokens : 0,
      cache_creation: { ephemeral_5m_input_tokens: created, ephemeral_1h_input_tokens: 0 },
      output_tokens: this.outputTokens(),
      output_tokens_details: detailed ? { thinking_tokens: SCRIPTED_USAGE.reasoningTokens } : null,
      server_tool_use: null,
      service_tier: "standard",
      inference_geo: null,
      speed: null,
    };
  }

  private stopReason(): Anthropic.StopReason {
    return this.reply.kind === "text" ? "end_turn" : "tool_use";
  }

  private block(complete: boolean): Anthropic.ContentBlock {
    const reply = this.reply;
    if (reply.kind === "text") return { type: "text", text: complete ? reply.text : "", citations: null };
    // A streamed tool_use starts with an empty input; its JSON arrives as input_json_delta pieces.
    return { type: "tool_use", id: this.toolUseId, name: reply.name, input: complete ? JSON.parse(reply.arguments) : {}, caller: { type: "direct" } };
  }

  private extra(): Record<string, unknown> {
    return this.behaviour?.extraMember ? EXTRA_MEMBER : {};
  }

  message(): Anthropic.Message & Record<string, unknown> {
    return {
      id: this.id,
      type: "message",
      role: "assistant",
      model: this.model,
      content: [...(this.signature ? [{ type: "thinking" as const, thinking: THOUGHT, signature: this.signature }] : []), this.block(true)],
      stop_reason: this.stopReason(),
      stop_sequence: null,
      stop_details: null,
      container: null,
      diagnostics: null,
      usage: this.usage(),
      ...this.extra(),
    };
  }

  frames(): string[] {
    const event = (data: Anthropic.RawMessageStreamEvent | { type: "ping" }): string =>
      `event: ${data.type}\ndata: ${JSON.stringify({ ...data, ...this.extra() })}\n\n`;
    const usage = this.usage();
    const reply = this.reply;
    const frames = [
      // message_start carries the input usage; output_tokens there is a placeholder, the final count comes in message_delta.
      event({ type: "message_start", message: { ...this.message(), content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } }),
    ];
    // A thinking block streams its text, then its signature, before the answer's block.
    const index = this.signature ? 1 : 0;
    if (this.signature) {
      frames.push(
        event({ type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } }),
        event({ type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: THOUGHT } }),
        event({ type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: this.signature } }),
        event({ type: "content_block_stop", index: 0 }),
      );
    }
    frames.push(event({ type: "content_block_start", index, content_block: this.block(false) }), event({ type: "ping" }));
    for (const piece of pieces(reply.kind === "text" ? reply.text : reply.arguments)) {
      const delta: Anthropic.RawContentBlockDelta = reply.kind === "text" ? { type: "text_delta", text: piece } : { type: "input_json_delta", partial_json: piece };
      frames.push(event({ type: "content_block_delta", index, delta }));
    }
    frames.push(
      event({ type: "content_block_stop", index }),
      event({
        type: "message_delta",
        delta: { stop_reason: this.stopReason(), stop_sequence: null, stop_details: null, container: null },
        usage: {
          input_tokens: usage.input_tokens,
          output_tokens: usage.output_tokens,
          cache_creation_input_tokens: usage.cache_creation_input_tokens,
          cache_read_input_tokens: usage.cache_read_input_tokens,
          output_tokens_details: usage.output_tokens_details,
          server_tool_use: null,
        },
      }),
      event({ type: "message_stop" }),
    );
    return frames;
  }
}
