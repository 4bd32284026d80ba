// Validation of a POST /v1/messages body, as strict as Anthropic; every problem is a 400
// invalid_request_error whose message this returns. Shapes come from the SDK's types
// (node_modules/@anthropic-ai/sdk/resources/messages/messages.d.ts: MessageCreateParamsBase, MessageParam,
// ContentBlockParam and its members, Tool, ToolChoice). Message texts are Anthropic's where a public error
// report quotes them ("<field>: Field required", "messages: at least one message is required", the
// non-empty content rules, and both tool_use/tool_result pairing rules); the rest follow the same
// pydantic-style pattern ("<path>: Input should be ..."). Unknown members are accepted.
//
// Turns: the SDK documents that "Consecutive `user` or `assistant` turns in your request will be combined
// into a single turn", so consecutive same-role messages are NOT an error here; the tool pairing rules
// apply to the combined turns ("the previous message" / "the next message" of Anthropic's texts).
// `role: "system"` messages (SystemMessageParam in this SDK) are mid-conversation system messages, which
// Anthropic accepts "immediately after a user turn"; anywhere else they get the older "Unexpected role"
// error. They are not conversational turns, so the pairing rules skip them.
//
// API version 2026-10-21 (what SDK 1.x sends) adds three documented 400s: the temperature, top_p and top_k
// parameters are removed, a document block directly in an assistant message, and a text block with a
// non-empty `citations` array in a user message. Their exact texts are not published; the pydantic-style
// pattern is used. Under 2023-06-01 those three are accepted.
import { isInteger, isObject } from "./common.ts";

/** The API version that removed temperature/top_p/top_k and tightened document and citation placement. */
export const VERSION_2026_10_21 = "2026-10-21";

/** Every ContentBlockParam `type` the SDK declares for a message's content. */
const BLOCK_TYPES = [
  "text",
  "image",
  "document",
  "search_result",
  "thinking",
  "redacted_thinking",
  "tool_use",
  "tool_result",
  "server_tool_use",
  "web_search_tool_result",
  "web_fetch_tool_result",
  "code_execution_tool_result",
  "bash_code_execution_tool_result",
  "text_editor_code_execution_tool_result",
  "tool_search_tool_result",
  "container_upload",
];
/** What ToolResultBlockParam.content may hold. */
const RESULT_BLOCK_TYPES = ["text", "image", "search_result", "document", "tool_reference", "browser_state"];
const ROLES = ["user", "assistant", "system"];
const TOOL_CHOICES = ["auto", "any", "tool", "none"];

class Invalid extends Error {}
function fail(message: string): never {
  throw new Invalid(message);
}

const quoteList = (values: readonly string[]): string => values.map((v) => `'${v}'`).join(", ");
const required = (path: string): never => fail(`${path}: Field required`);

function requireString(owner: Record<string, unknown>, key: string, path: string): string {
  if (owner[key] === undefined) required(`${path}.${key}`);
  if (typeof owner[key] !== "string") fail(`${path}.${key}: Input should be a valid string`);
  return owner[key] as string;
}

function requireObject(owner: Record<string, unknown>, key: string, path: string): Record<string, unknown> {
  if (owner[key] === undefined) required(`${path}.${key}`);
  if (!isObject(owner[key])) fail(`${path}.${key}: Input should be a valid dictionary`);
  return owner[key] as Record<string, unknown>;
}

/** One content block: an object whose `type` is known, with that type's required members. */
function checkBlock(block: unknown, path: string, allowed: readonly string[]): Record<string, unknown> {
  if (!isObject(block)) fail(`${path}: Input should be a valid dictionary or object to extract fields from`);
  const b = block as Record<string, unknown>;
  if (b.type === undefined) fail(`${path}: Unable to extract tag using discriminator 'type'`);
  if (typeof b.type !== "string" || !allowed.includes(b.type)) {
    fail(`${path}: Input tag '${String(b.type)}' found using 'type' does not match any of the expected tags: ${quoteList(allowed)}`);
  }
  switch (b.type) {
    case "text":
      if (requireString(b, "text", path).length === 0) fail("messages: text content blocks must be non-empty");
      break;
    case "image":
    case "document":
      requireObject(b, "source", path);
      break;
    case "thinking":
      requireString(b, "thinking", path);
      requireString(b, "signature", path);
      break;
    case "redacted_thinking":
      requireString(b, "data", path);
      break;
    case "tool_use":
    case "server_tool_use":
      requireString(b, "id", path);
      requireString(b, "name", path);
      requireObject(b, "input", path);
      break;
    case "tool_result": {
      requireString(b, "tool_use_id", path);
      const content = b.content;
      if (Array.isArray(content)) content.forEach((inner, k) => checkBlock(inner, `${path}.content.${k}`, RESULT_BLOCK_TYPES));
      else if (content !== undefined && typeof content !== "string") fail(`${path}.content: Input should be a valid string`);
      if (b.is_error !== undefined && typeof b.is_error !== "boolean") fail(`${path}.is_error: Input should be a valid boolean`);
      break;
    }
  }
  return b;
}

function checkMessage(message: unknown, i: number, previous: unknown, isLast: boolean, version: string): void {
  const path = `messages.${i}`;
  if (!isObject(message)) fail(`${path}: Input should be a valid dictionary or object to extract fields from`);
  const m = message as Record<string, unknown>;
  if (m.role === undefined) required(`${path}.role`);
  if (typeof m.role !== "string" || !ROLES.includes(m.role)) fail(`${path}.role: Input should be 'user', 'assistant' or 'system'`);
  if (m.role === "system" && !(isObject(previous) && previous.role === "user")) {
    fail('messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.');
  }
  if (m.content === undefined) required(`${path}.content`);
  const content = m.content;
  // The final assistant message may be empty (a prefill); no other message may.
  const emptyAllowed = isLast && m.role === "assistant";
  const empty = content === "" || (Array.isArray(content) && content.length === 0);
  if (empty && !emptyAllowed) fail(`${path}: all messages must have non-empty content except for the optional final assistant message`);
  if (typeof content === "string") return;
  if (!Array.isArray(content)) fail(`${path}.content: Input should be a valid list`);
  // SystemMessageParam.content is `string | Array<TextBlockParam>`.
  const allowed = m.role === "system" ? ["text"] : BLOCK_TYPES;
  (content as unknown[]).forEach((block, j) => {
    const b = checkBlock(block, `${path}.content.${j}`, allowed);
    if (version !== VERSION_2026_10_21) return;
    if (m.role === "assistant" && b.type === "document") fail(`${path}.content.${j}: document blocks are not allowed in assistant messages`);
    if (m.role === "user" && hasCitations(b)) fail(`${path}.content.${j}: text blocks with citations are not allowed in user messages`);
  });
}

/** A text block with a non-empty citations array, directly or inside a search_result block. */
function hasCitations(block: Record<string, unknown>): boolean {
  if (block.type === "text") return Array.isArray(block.citations) && block.citations.length > 0;
  if (block.type === "search_result" && Array.isArray(block.content)) return block.content.some((inner) => isObject(inner) && hasCitations(inner));
  return false;
}

/** Consecutive same-role messages, combined as Anthropic combines them; `at` keeps the original indexes. */
interface Turn {
  readonly role: string;
  readonly blocks: { readonly block: Record<string, unknown>; readonly at: string }[];
  last: number;
}

function turnsOf(messages: Record<string, unknown>[]): Turn[] {
  const turns: Turn[] = [];
  messages.forEach((m, i) => {
    if (m.role === "system") return;
    const blocks = Array.isArray(m.content) ? (m.content as Record<string, unknown>[]).map((block, j) => ({ block, at: `messages.${i}.content.${j}` })) : [];
    const previous = turns.at(-1);
    if (previous && previous.role === m.role) {
      previous.blocks.push(...blocks);
      previous.last = i;
    } else {
      turns.push({ role: m.role as string, blocks, last: i });
    }
  });
  return turns;
}

/**
 * Every tool_result answers a tool_use of the turn right before it (an assistant turn), and every tool_use
 * of an assistant turn that is followed by another turn is answered by a tool_result in that next turn.
 */
function checkToolPairing(messages: Record<string, unknown>[]): void {
  const turns = turnsOf(messages);
  const ids = (turn: Turn | undefined, type: string, key: string): Set<string> =>
    new Set((turn?.blocks ?? []).filter((b) => b.block.type === type).map((b) => b.block[key] as string));
  turns.forEach((turn, t) => {
    const previous = turns[t - 1];
    const offered = previous?.role === "assistant" ? ids(previous, "tool_use", "id") : new Set<string>();
    for (const { block, at } of turn.blocks) {
      if (block.type !== "tool_result") continue;
      const id = block.tool_use_id as string;
      if (turn.role !== "user" || !offered.has(id)) {
        fail(`${at}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`);
      }
    }
    const next = turns[t + 1];
    if (turn.role !== "assistant" || next === undefined) return;
    const answered = ids(next, "tool_result", "tool_use_id");
    const unanswered = [...ids(turn, "tool_use", "id")].filter((id) => !answered.has(id));
    if (unanswered.length > 0) {
      fail(
        `messages.${turn.last}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
      );
    }
  });
}

/** `system`: a string or text blocks. */
function checkSystem(system: unknown): void {
  if (system === undefined || typeof system === "string") return;
  if (!Array.isArray(system)) fail("system: Input should be a valid string");
  system.forEach((block, j) => checkBlock(block, `system.${j}`, ["text"]));
}

/** Client tools need `name` and an object `input_schema`; server tools (typed, e.g. web_search_20250305) a name. */
function checkTools(body: Record<string, unknown>): void {
  const tools = body.tools;
  if (tools !== undefined) {
    if (!Array.isArray(tools)) fail("tools: Input should be a valid list");
    tools.forEach((tool, k) => {
      const path = `tools.${k}`;
      if (!isObject(tool)) fail(`${path}: Input should be a valid dictionary or object to extract fields from`);
      const t = tool as Record<string, unknown>;
      if (t.type === undefined || t.type === null || t.type === "custom") {
        const custom = `${path}.custom`;
        if (requireString(t, "name", custom).length === 0) fail(`${custom}.name: String should have at least 1 character`);
        const schema = requireObject(t, "input_schema", custom);
        if (schema.type !== "object") fail(`${custom}.input_schema.type: Input should be 'object'`);
        if (t.description !== undefined && typeof t.description !== "string") fail(`${custom}.description: Input should be a valid string`);
      } else {
        if (typeof t.type !== "string") fail(`${path}.type: Input should be a valid string`);
        requireString(t, "name", path);
      }
    });
  }
  const choice = body.tool_choice;
  if (choice === undefined) return;
  if (!isObject(choice)) fail("tool_choice: Input should be a valid dictionary or object to extract fields from");
  if (typeof choice.type !== "string" || !TOOL_CHOICES.includes(choice.type)) {
    fail(`tool_choice: Input tag '${String(choice.type)}' found using 'type' does not match any of the expected tags: ${quoteList(TOOL_CHOICES)}`);
  }
  if (choice.type === "tool") requireString(choice, "name", "tool_choice");
}

function checkScalars(body: Record<string, unknown>, version: string): void {
  if (version === VERSION_2026_10_21) {
    for (const removed of ["temperature", "top_p", "top_k"]) {
      if (removed in body) fail(`${removed}: Extra inputs are not permitted`);
    }
  }
  const typed: [string, string, (v: unknown) => boolean][] = [
    ["stream", "a valid boolean", (v) => typeof v === "boolean"],
    ["temperature", "a valid number", (v) => typeof v === "number"],
    ["top_p", "a valid number", (v) => typeof v === "number"],
    ["top_k", "a valid integer", isInteger],
    ["metadata", "a valid dictionary", isObject],
    ["thinking", "a valid dictionary", isObject],
    ["stop_sequences", "a valid list", (v) => Array.isArray(v) && v.every((s) => typeof s === "string")],
  ];
  for (const [key, expected, ok] of typed) {
    if (body[key] !== undefined && !ok(body[key])) fail(`${key}: Input should be ${expected}`);
  }
}

/** Validates a parsed messages body under an API version; returns Anthropic's message for the first problem, or null. */
export function validateMessages(body: unknown, version: string): string | null {
  try {
    if (!isObject(body)) fail("Input should be a valid dictionary or object to extract fields from");
    const b = body as Record<string, unknown>;
    if (b.model === undefined) required("model");
    if (typeof b.model !== "string") fail("model: Input should be a valid string");
    if (b.max_tokens === undefined) required("max_tokens");
    if (!isInteger(b.max_tokens)) fail("max_tokens: Input should be a valid integer");
    // The SDK documents max_tokens 0 as valid ("populate the prompt cache without generating a response").
    if ((b.max_tokens as number) < 0) fail("max_tokens: Input should be greater than or equal to 0");
    if (b.messages === undefined) required("messages");
    if (!Array.isArray(b.messages)) fail("messages: Input should be a valid list");
    const messages = b.messages as unknown[];
    if (messages.length === 0) fail("messages: at least one message is required");
    messages.forEach((m, i) => checkMessage(m, i, messages[i - 1], i === messages.length - 1, version));
    checkToolPairing(messages as Record<string, unknown>[]);
    checkSystem(b.system);
    checkTools(b);
    checkScalars(b, version);
    return null;
  } catch (error) {
    if (error instanceof Invalid) return error.message;
    throw error;
  }
}
