// Imitation of OpenAI's Responses endpoint (POST /v1/responses), served by the OpenAI imitation's own
// server (startOpenAIUpstream: same key, same JSON and error handling, same scripts), as OpenAI serves both
// endpoints on one host. It checks what it receives as strictly as OpenAI (responses-validate.ts) and
// answers in the Responses wire format. Objects are typed with the official SDK's own types
// (node_modules/openai/resources/responses/responses.d.ts: Response, ResponseOutputItem,
// ResponseStreamEvent), so a member the SDK declares cannot be forgotten or misspelt.
// Facts used here:
//  - non-stream: a `response` object (object "response", status "completed") whose `output` holds a
//    `message` item with `output_text` content, or a `function_call` item {call_id, name, arguments};
//    the request's settings are echoed (instructions, tools, tool_choice, text, reasoning, ...);
//    usage {input_tokens, input_tokens_details {cached_tokens, cache_write_tokens}, output_tokens,
//    output_tokens_details {reasoning_tokens}, total_tokens}; `output_text` is the SDK's own convenience
//    member, computed client-side, so the wire has none;
//  - stream: `event: <type>\ndata: <json>\n\n`, every event with a `sequence_number` from 0:
//    response.created and response.in_progress (status "in_progress", empty output, usage null), then per
//    item response.output_item.added, for a message response.content_part.added, output_text.delta...,
//    output_text.done, content_part.done, for a call function_call_arguments.delta..., .done; then
//    response.output_item.done and response.completed (the full response). There is no [DONE]. Delta
//    events carry an `obfuscation` member unless stream_options.include_obfuscation is false;
//  - previous_response_id names a response this server stored (store defaults to true); its function
//    calls must be answered by function_call_output items in the new input.
import type OpenAI from "openai";
import {
  EXTRA_MEMBER,
  SCRIPTED_USAGE,
  isObject,
  jsonResponse,
  namedEvent,
  nextId,
  pieces,
  planReply,
  sleep,
  sseBody,
  tokenCount,
  type Behaviour,
  type Conversation,
  type RecordedRequest,
  type Reply,
  type ScriptedError,
  type UpstreamOptions,
} from "./common.ts";
import type { OpenAIProblem } from "./openai-validate.ts";
import { validateResponses } from "./responses-validate.ts";

export const RESPONSES_ROUTE = "/v1/responses";

type ResponseObject = OpenAI.Responses.Response;
type OutputItem = OpenAI.Responses.ResponseOutputItem;
type StreamEvent = OpenAI.Responses.ResponseStreamEvent;
type Usage = OpenAI.Responses.ResponseUsage;
/** A response as the wire carries it: no SDK-computed `output_text`, and `usage` null until completed. */
type WireResponse = Omit<ResponseObject, "output_text" | "usage"> & { usage: Usage | null };

/** The responses this server stored, by id, with the call ids of their function calls. */
export class ResponsesMemory {
  private readonly calls = new Map<string, string[]>();
  remember(id: string, callIds: string[]): void {
    this.calls.set(id, callIds);
  }
  lookup = (id: string): readonly string[] | undefined => this.calls.get(id);
}

export interface ResponsesContext {
  readonly record: RecordedRequest;
  readonly take: (lastUserText: string) => Behaviour | undefined;
  readonly options: UpstreamOptions;
  readonly headers: Record<string, string>;
  readonly memory: ResponsesMemory;
  readonly refuse: (status: number, problem: OpenAIProblem) => Response;
  /** The OpenAI imitation's scripted error (same body and headers for both endpoints). */
  readonly scripted: (error: ScriptedError, model: string) => Response;
}

/** Answers a parsed, authenticated POST /v1/responses. */
export async function serveResponses(context: ResponsesContext): Promise<Response> {
  const { record, memory, headers } = context;
  const problem = validateResponses(record.body, memory.lookup) ?? reasoningProblem(record.body as Record<string, unknown>);
  if (problem) return context.refuse(400, problem);
  record.valid = true;

  const body = record.body as Record<string, unknown>;
  const conversation = readConversation(body);
  const behaviour = context.take(conversation.lastUserText);
  if (behaviour) record.behaviour = behaviour;
  if (behaviour?.delayMs) await sleep(behaviour.delayMs);
  if (behaviour?.error) return context.scripted(behaviour.error, body.model as string);
  const answer = new Answer(body, planReply(conversation, behaviour, context.options), behaviour, promptText(body));
  if (body.store !== false) memory.remember(answer.id, answer.callIds());
  if (body.stream !== true) return jsonResponse(200, { ...answer.response("completed"), ...answer.extra() }, headers);
  const obfuscate = !(isObject(body.stream_options) && body.stream_options.include_obfuscation === false);
  return new Response(sseBody(answer.frames(obfuscate), behaviour?.cutAfterEvents), {
    status: 200,
    headers: { ...headers, "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
  });
}

/** Text of a message content value: the string, or the text of its text parts. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => (isObject(part) && typeof part.text === "string" ? part.text : "")).join("");
}

function inputItems(body: Record<string, unknown>): Record<string, unknown>[] {
  if (typeof body.input === "string") return [{ type: "message", role: "user", content: body.input }];
  return Array.isArray(body.input) ? (body.input as Record<string, unknown>[]) : [];
}

const isMessage = (item: Record<string, unknown>): boolean => (item.type ?? "message") === "message" && item.role !== undefined;

function readConversation(body: Record<string, unknown>): Conversation {
  const items = inputItems(body);
  const last = items.at(-1);
  const lastUser = items.findLast((item) => isMessage(item) && item.role === "user");
  // The function_call_output items at the end answer the previous calls; their text is what the reply quotes.
  let start = items.length;
  while (start > 0 && items[start - 1]!.type === "function_call_output") start -= 1;
  const results = items.slice(start).map((item) => contentText(item.output));
  const tools = Array.isArray(body.tools) ? (body.tools as Record<string, unknown>[]) : [];
  return {
    tools: tools.filter((t) => t.type === "function").map((t) => t.name as string),
    endsWithUser: last !== undefined && isMessage(last) && last.role === "user",
    toolResultText: results.length > 0 ? results.join("\n") : undefined,
    lastUserText: lastUser ? contentText(lastUser.content) : "",
    wantsJson: ["json_object", "json_schema"].includes(String((body.text as { format?: { type?: string } } | undefined)?.format?.type)),
  };
}

/** All the text the request carries, for the input token count. */
function promptText(body: Record<string, unknown>): string {
  const items = inputItems(body).map((item) => contentText(item.content) + contentText(item.output) + (typeof item.arguments === "string" ? item.arguments : ""));
  return [typeof body.instructions === "string" ? body.instructions : "", ...items].join("\n");
}

/** The encrypted reasoning this imitation handed out (include: ["reasoning.encrypted_content"]). */
const issuedReasoning = new Set<string>();

/**
 * A reasoning item sent back must be one OpenAI issued: with store false its `encrypted_content` is the
 * only copy, and content that does not decrypt is refused.
 */
function reasoningProblem(body: Record<string, unknown>): OpenAIProblem | undefined {
  for (const [i, item] of inputItems(body).entries()) {
    if (item.type !== "reasoning") continue;
    if (typeof item.encrypted_content === "string" && issuedReasoning.has(item.encrypted_content)) continue;
    const what = typeof item.encrypted_content === "string" ? "could not be verified" : "is missing and the item is not stored (store: false)";
    return { message: `The encrypted content for item ${String(item.id)} ${what}.`, type: "invalid_request_error", param: `input[${i}].encrypted_content`, code: "invalid_encrypted_content" };
  }
  return undefined;
}

/** One answer, rendered either as a response object or as its event stream. */
class Answer {
  readonly id = nextId("resp_imit", 24);
  private readonly itemId: string;
  private readonly callId = nextId("call_imit", 15);
  private readonly created = Math.floor(Date.now() / 1000);
  private sequence = 0;

  constructor(
    private readonly body: Record<string, unknown>,
    private readonly reply: Reply,
    private readonly behaviour: Behaviour | undefined,
    private readonly prompt: string,
  ) {
    this.itemId = nextId(reply.kind === "text" ? "msg_imit" : "fc_imit", 24);
    const include = Array.isArray(body.include) ? body.include : [];
    if (behaviour?.reasoning && include.includes("reasoning.encrypted_content")) {
      const id = nextId("rs_imit", 24);
      const encrypted = Buffer.from(`imitation-encrypted-reasoning:${id}`).toString("base64");
      issuedReasoning.add(encrypted);
      this.reasoning = { id, type: "reasoning", summary: [], encrypted_content: encrypted };
    }
  }

  /** Set when the model reasons first: its reasoning item, ahead of the answer's item. */
  private readonly reasoning: OpenAI.Responses.ResponseReasoningItem | undefined;

  callIds(): string[] {
    return this.reply.kind === "tool_call" ? [this.callId] : [];
  }

  extra(): Record<string, unknown> {
    return this.behaviour?.extraMember ? EXTRA_MEMBER : {};
  }

  private usage(): Usage {
    const detailed = this.behaviour?.detailedUsage === true;
    const out = this.reply.kind === "text" ? this.reply.text : this.reply.name + this.reply.arguments;
    // Cached and cache-write tokens are parts of input_tokens; reasoning tokens a part of output_tokens.
    const cached = detailed ? SCRIPTED_USAGE.cachedTokens : 0;
    const written = detailed ? SCRIPTED_USAGE.cacheCreationInputTokens : 0;
    const reasoning = detailed ? SCRIPTED_USAGE.reasoningTokens : 0;
    const input = tokenCount(this.prompt) + cached + written;
    const output = tokenCount(out) + reasoning;
    return {
      input_tokens: input,
      input_tokens_details: { cached_tokens: cached, cache_write_tokens: written },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: reasoning },
      total_tokens: input + output,
    };
  }

  private item(status: "in_progress" | "completed"): OutputItem {
    const reply = this.reply;
    const done = status === "completed";
    if (reply.kind === "text") {
      return { id: this.itemId, type: "message", status, role: "assistant", content: done ? [this.textPart(reply.text)] : [] };
    }
    return { id: this.itemId, type: "function_call", status, call_id: this.callId, name: reply.name, arguments: done ? reply.arguments : "" };
  }

  private textPart(text: string): OpenAI.Responses.ResponseOutputText {
    return { type: "output_text", text, annotations: [], logprobs: [] };
  }

  /** The response object; the request's settings are echoed as OpenAI echoes them, with its defaults. */
  response(status: "in_progress" | "completed"): WireResponse {
    const b = this.body;
    const done = status === "completed";
    const reasoning = isObject(b.reasoning) ? b.reasoning : {};
    const text = isObject(b.text) ? b.text : {};
    return {
      id: this.id,
      object: "response",
      created_at: this.created,
      status,
      completed_at: done ? this.created : null,
      background: false,
      error: null,
      incomplete_details: null,
      instructions: typeof b.instructions === "string" ? b.instructions : null,
      max_output_tokens: typeof b.max_output_tokens === "number" ? b.max_output_tokens : null,
      metadata: isObject(b.metadata) ? (b.metadata as Record<string, string>) : {},
      model: b.model as string,
      output: done ? [...(this.reasoning ? [this.reasoning] : []), this.item("completed")] : [],
      parallel_tool_calls: b.parallel_tool_calls !== false,
      previous_response_id: typeof b.previous_response_id === "string" ? b.previous_response_id : null,
      reasoning: { effort: (reasoning.effort ?? null) as OpenAI.ReasoningEffort, summary: (reasoning.summary ?? null) as OpenAI.Reasoning["summary"] },
      service_tier: "default",
      temperature: typeof b.temperature === "number" ? b.temperature : 1,
      text: { format: (text.format ?? { type: "text" }) as OpenAI.Responses.ResponseFormatTextConfig, verbosity: (text.verbosity ?? "medium") as "medium" },
      tool_choice: (b.tool_choice ?? "auto") as ResponseObject["tool_choice"],
      tools: (Array.isArray(b.tools) ? b.tools : []) as ResponseObject["tools"],
      top_p: typeof b.top_p === "number" ? b.top_p : 1,
      truncation: b.truncation === "auto" ? "auto" : "disabled",
      usage: done ? this.usage() : null,
    };
  }

  frames(obfuscate: boolean): string[] {
    const frames: string[] = [];
    // `obfuscation` pads delta events to hide token lengths; the SDK types do not declare it.
    const pad = (delta: string): Record<string, unknown> => (obfuscate ? { obfuscation: "x".repeat(Math.max(1, 16 - delta.length)) } : {});
    const push = (event: DistributiveOmit<StreamEvent, "sequence_number">, more: Record<string, unknown> = {}): void => {
      frames.push(namedEvent(event.type, { ...event, sequence_number: this.sequence++, ...more, ...this.extra() }));
    };
    const started = this.response("in_progress") as unknown as ResponseObject;
    push({ type: "response.created", response: started });
    push({ type: "response.in_progress", response: started });
    if (this.reasoning) {
      push({ type: "response.output_item.added", output_index: 0, item: { ...this.reasoning, encrypted_content: null } });
      push({ type: "response.output_item.done", output_index: 0, item: this.reasoning });
    }
    const index = this.reasoning ? 1 : 0;
    const at = { item_id: this.itemId, output_index: index };
    push({ type: "response.output_item.added", output_index: index, item: this.item("in_progress") });
    const reply = this.reply;
    if (reply.kind === "text") {
      const part = { ...at, content_index: 0 };
      push({ type: "response.content_part.added", ...part, part: this.textPart("") });
      for (const delta of pieces(reply.text)) push({ type: "response.output_text.delta", ...part, delta, logprobs: [] }, pad(delta));
      push({ type: "response.output_text.done", ...part, text: reply.text, logprobs: [] });
      push({ type: "response.content_part.done", ...part, part: this.textPart(reply.text) });
    } else {
      for (const delta of pieces(reply.arguments)) push({ type: "response.function_call_arguments.delta", ...at, delta }, pad(delta));
      push({ type: "response.function_call_arguments.done", ...at, name: reply.name, arguments: reply.arguments });
    }
    push({ type: "response.output_item.done", output_index: index, item: this.item("completed") });
    push({ type: "response.completed", response: this.response("completed") as unknown as ResponseObject });
    return frames;
  }
}

/** Omit over each member of a union (the built-in Omit collapses a union to its common members). */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
