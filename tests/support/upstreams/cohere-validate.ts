// Validation of a POST /v2/chat body, as strict as Cohere; every problem is a 400 whose `message` this
// returns. Shapes come from the official TypeScript SDK's wire types (cohere-ai/cohere-typescript,
// src/serialization/resources/v2/client/requests/V2ChatRequest.ts and the ChatMessageV2, Content,
// ToolV2, ToolCallV2, ResponseFormatV2, Thinking serializers) and its documented ranges (p 0.01 to 0.99,
// k 0 to 500, both penalties 0 to 1, temperature non-negative, at most 5 stop sequences; tool_choice
// REQUIRED needs tools; response_format not with documents or tools; json_schema not with type text).
// Texts quoted from Cohere's error reference (docs.cohere.com/reference/errors): "a model parameter is
// required for this endpoint.", "message must not be empty in a turn", "system turn must be the first
// in the list", "tool call id must be provided with tool message", "tool call id not found in previous
// tool calls", "cannot have duplicate tool ids", "tool call must be of type function", the tool name
// rule, "required field name not found in properties", "property <name> must have a type", "invalid
// request: response_format is not supported with RAG." and "invalid request: presence_penalty must be
// between 0 and 1 inclusive."; the other texts follow the same "invalid request: ..." pattern. Unknown
// members are accepted.
import { isInteger, isObject } from "./common.ts";

const ROLES = ["user", "assistant", "system", "tool"];
/** What each role's content list may hold (Content, SystemMessageV2ContentOneItem, AssistantMessageV2ContentOneItem, ToolContent). */
const PARTS: Record<string, readonly string[]> = { user: ["text", "image_url"], system: ["text"], assistant: ["text", "thinking"], tool: ["text", "document"] };
/** Cohere's tool name rule: letters, digits, underscores; no leading digit. */
const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_STOP_SEQUENCES = 5;

class Invalid extends Error {}
function fail(message: string): never {
  throw new Invalid(message);
}
const invalid = (what: string): never => fail(`invalid request: ${what}.`);
const EMPTY_TURN = "message must not be empty in a turn";

/** One content list: objects of the role's part types, each with its required member. */
function checkParts(parts: unknown[], i: number, role: string): void {
  const allowed = PARTS[role]!;
  parts.forEach((part, j) => {
    if (!isObject(part)) invalid(`messages[${i}].content[${j}] must be an object`);
    const p = part as Record<string, unknown>;
    if (typeof p.type !== "string" || !allowed.includes(p.type)) invalid(`messages[${i}].content[${j}].type must be one of ${allowed.join(", ")}`);
    if (p.type === "text" && typeof p.text !== "string") invalid(`messages[${i}].content[${j}].text must be a string`);
    if (p.type === "thinking" && typeof p.thinking !== "string") invalid(`messages[${i}].content[${j}].thinking must be a string`);
    if (p.type === "image_url" && !(isObject(p.image_url) && typeof p.image_url.url === "string")) invalid(`messages[${i}].content[${j}].image_url.url must be a string`);
    if (p.type === "document" && !(isObject(p.document) && isObject(p.document.data))) invalid(`messages[${i}].content[${j}].document.data must be an object`);
  });
}

/** A content value: a string or a list; `required` content may not be empty. */
function checkContent(content: unknown, i: number, role: string, required: boolean): boolean {
  if (content === undefined || content === null) {
    if (required) fail(EMPTY_TURN);
    return false;
  }
  if (typeof content === "string") {
    if (required && content === "") fail(EMPTY_TURN);
    return content !== "";
  }
  if (!Array.isArray(content)) invalid(`messages[${i}].content must be a string or a list of content blocks`);
  if (required && (content as unknown[]).length === 0) fail(EMPTY_TURN);
  checkParts(content as unknown[], i, role);
  return (content as unknown[]).length > 0;
}

function checkMessages(messages: unknown[]): void {
  const callIds = new Set<string>();
  let sawOther = false;
  messages.forEach((message, i) => {
    if (!isObject(message)) invalid(`messages[${i}] must be an object`);
    const m = message as Record<string, unknown>;
    if (typeof m.role !== "string" || !ROLES.includes(m.role)) invalid(`Invalid role in messages at index ${i}. Role must be one of the following: ${ROLES.join(", ")}`);
    if (m.role === "system" && sawOther) fail("system turn must be the first in the list");
    if (m.role !== "system") sawOther = true;
    switch (m.role) {
      case "user":
      case "system":
        checkContent(m.content, i, m.role, true);
        return;
      case "tool":
        if (typeof m.tool_call_id !== "string" || m.tool_call_id === "") fail("tool call id must be provided with tool message");
        if (!callIds.has(m.tool_call_id as string)) fail("tool call id not found in previous tool calls");
        checkContent(m.content, i, "tool", true);
        return;
      case "assistant": {
        const calls = m.tool_calls;
        if (calls !== undefined && calls !== null && !Array.isArray(calls)) invalid(`messages[${i}].tool_calls must be a list`);
        for (const call of (calls as unknown[] | null | undefined) ?? []) {
          if (!isObject(call) || typeof call.id !== "string") invalid(`messages[${i}].tool_calls[].id must be a string`);
          const c = call as Record<string, unknown>;
          if (c.type !== "function") fail("tool call must be of type function");
          if (!isObject(c.function) || typeof c.function.name !== "string") invalid(`messages[${i}].tool_calls[].function.name must be a string`);
          const args = (c.function as Record<string, unknown>).arguments;
          if (args !== undefined && typeof args !== "string") invalid(`messages[${i}].tool_calls[].function.arguments must be a string`);
          if (callIds.has(c.id as string)) fail("cannot have duplicate tool ids");
          callIds.add(c.id as string);
        }
        if (m.tool_plan !== undefined && m.tool_plan !== null && typeof m.tool_plan !== "string") invalid(`messages[${i}].tool_plan must be a string`);
        const hasContent = checkContent(m.content, i, "assistant", false);
        if (!hasContent && (!Array.isArray(calls) || calls.length === 0)) fail(EMPTY_TURN);
        return;
      }
    }
  });
}

/** A function's JSON Schema parameters: every required name among the properties, every property typed. */
function checkParameters(parameters: Record<string, unknown>): void {
  const properties = isObject(parameters.properties) ? parameters.properties : {};
  for (const name of Array.isArray(parameters.required) ? parameters.required : []) {
    if (!(String(name) in properties)) fail("required field name not found in properties");
  }
  for (const [name, property] of Object.entries(properties)) {
    const p = isObject(property) ? property : {};
    // A composed property (anyOf and the like) takes its types from its branches.
    const composed = ["anyOf", "oneOf", "allOf", "$ref"].some((k) => k in p);
    if (p.type === undefined && !composed) fail(`property ${name} must have a type`);
  }
}

function checkTools(body: Record<string, unknown>): boolean {
  const tools = body.tools;
  if (tools === undefined || tools === null) return false;
  if (!Array.isArray(tools)) invalid("tools must be a list");
  (tools as unknown[]).forEach((tool, i) => {
    if (!isObject(tool) || tool.type !== "function") invalid(`tools[${i}].type must be function`);
    const fn = (tool as Record<string, unknown>).function;
    if (!isObject(fn)) invalid(`tools[${i}].function is required`);
    const f = fn as Record<string, unknown>;
    const name = typeof f.name === "string" ? f.name : "";
    if (!TOOL_NAME.test(name)) invalid(`tool names can only contain certain characters (A-Za-z0-9_) and can't begin with a digit (provided name: '${name}')`);
    if (!isObject(f.parameters)) invalid(`tools[${i}].function.parameters is required`);
    checkParameters(f.parameters as Record<string, unknown>);
    if (f.description !== undefined && f.description !== null && typeof f.description !== "string") invalid(`tools[${i}].function.description must be a string`);
  });
  return (tools as unknown[]).length > 0;
}

function checkOptions(body: Record<string, unknown>, hasTools: boolean): void {
  const choice = body.tool_choice;
  if (choice !== undefined && choice !== null) {
    if (choice !== "REQUIRED" && choice !== "NONE") invalid("tool_choice must be one of REQUIRED, NONE");
    if (choice === "REQUIRED" && !hasTools) invalid("tool_choice REQUIRED requires tools to be specified");
  }
  const format = body.response_format;
  if (format !== undefined && format !== null) {
    if (!isObject(format) || (format.type !== "text" && format.type !== "json_object")) invalid("response_format.type must be one of text, json_object");
    const f = format as Record<string, unknown>;
    if (f.type === "text" && f.json_schema !== undefined) invalid("response_format.json_schema must not be specified when type is text");
    if (f.json_schema !== undefined && f.json_schema !== null && !isObject(f.json_schema)) invalid("response_format.json_schema must be an object");
    if (Array.isArray(body.documents) && body.documents.length > 0) invalid("response_format is not supported with RAG");
    if (hasTools) invalid("response_format is not supported with tools");
  }
  const thinking = body.thinking;
  if (thinking !== undefined && thinking !== null) {
    if (!isObject(thinking) || (thinking.type !== "enabled" && thinking.type !== "disabled")) invalid("thinking.type must be one of enabled, disabled");
    const budget = (thinking as Record<string, unknown>).token_budget;
    if (budget !== undefined && budget !== null && !(isInteger(budget) && budget > 0)) invalid("thinking.token_budget must be a positive integer");
  }
  if (body.safety_mode != null && !["CONTEXTUAL", "STRICT", "OFF"].includes(body.safety_mode as string)) invalid("safety_mode must be one of CONTEXTUAL, STRICT, OFF");
}

/** Scalar members: JSON types, then the documented ranges. */
function checkScalars(body: Record<string, unknown>): void {
  const typed: [string, string, (v: unknown) => boolean][] = [
    ["stream", "a boolean", (v) => typeof v === "boolean"],
    ["logprobs", "a boolean", (v) => typeof v === "boolean"],
    ["strict_tools", "a boolean", (v) => typeof v === "boolean"],
    ["temperature", "a number", (v) => typeof v === "number"],
    ["p", "a number", (v) => typeof v === "number"],
    ["frequency_penalty", "a number", (v) => typeof v === "number"],
    ["presence_penalty", "a number", (v) => typeof v === "number"],
    ["k", "an integer", isInteger],
    ["max_tokens", "an integer", isInteger],
    ["seed", "an integer", isInteger],
    ["priority", "an integer", isInteger],
    ["stop_sequences", "a list of strings", (v) => Array.isArray(v) && v.every((s) => typeof s === "string")],
  ];
  for (const [key, expected, ok] of typed) {
    if (body[key] !== undefined && body[key] !== null && !ok(body[key])) invalid(`${key} must be ${expected}`);
  }
  const ranges: [string, number, number][] = [["p", 0.01, 0.99], ["k", 0, 500], ["frequency_penalty", 0, 1], ["presence_penalty", 0, 1]];
  for (const [key, min, max] of ranges) {
    const v = body[key];
    if (typeof v === "number" && (v < min || v > max)) invalid(`${key} must be between ${min} and ${max} inclusive`);
  }
  if (typeof body.temperature === "number" && body.temperature < 0) invalid("temperature must be non-negative");
  if (typeof body.max_tokens === "number" && body.max_tokens < 1) invalid("max_tokens must be positive");
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.length > MAX_STOP_SEQUENCES) invalid(`stop_sequences must have at most ${MAX_STOP_SEQUENCES} entries`);
}

/** Validates a parsed /v2/chat body; returns Cohere's message for the first problem, or null. */
export function validateChat(body: unknown): string | null {
  try {
    if (!isObject(body)) invalid("body must be a JSON object");
    const b = body as Record<string, unknown>;
    if (typeof b.model !== "string" || b.model === "") fail("a model parameter is required for this endpoint.");
    if (!Array.isArray(b.messages) || b.messages.length === 0) invalid("messages must not be empty");
    checkMessages(b.messages as unknown[]);
    checkOptions(b, checkTools(b));
    checkScalars(b);
    return null;
  } catch (error) {
    if (error instanceof Invalid) return error.message;
    throw error;
  }
}
