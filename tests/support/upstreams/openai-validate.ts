// Validation of a POST /v1/chat/completions body, as strict as OpenAI, answering OpenAI's own 400 shape.
// Shapes come from the SDK's types (node_modules/openai/resources/chat/completions/completions.d.ts:
// ChatCompletionCreateParamsBase, ChatCompletionMessageParam and its content parts, ChatCompletionTool,
// ChatCompletionToolChoiceOption, ChatCompletionStreamOptions). Message texts are the vendor's where a
// public error report quotes them (missing/invalid type/invalid value/empty array, the two tool pairing
// rules, stream_options and tool_choice without their companions, the model and JSON errors); the
// remaining texts follow the same patterns. Unknown members are accepted, as OpenAI accepts many.
// The error helpers are exported for responses-validate.ts: the Responses API words its 400s alike.
import { isInteger, isObject } from "./common.ts";

/** The `error` member of OpenAI's error body. */
export interface OpenAIProblem {
  readonly message: string;
  readonly type: string;
  readonly param: string | null;
  readonly code: string | null;
}

export const JSON_PARSE_ERROR =
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)";

const ROLES = ["system", "assistant", "user", "function", "tool", "developer"];
const USER_PARTS = ["text", "image_url", "input_audio", "file"];
const ASSISTANT_PARTS = ["text", "refusal"];
const TOOL_CHOICES = ["none", "auto", "required"];
/** OpenAI's function name rule (letters, digits, underscore, dash; at most 64). */
export const FUNCTION_NAME = /^[a-zA-Z0-9_-]+$/;

export class Invalid extends Error {
  constructor(readonly problem: OpenAIProblem) {
    super(problem.message);
  }
}

export function fail(message: string, param: string | null, code: string | null): never {
  throw new Invalid({ message, type: "invalid_request_error", param, code });
}

/** How OpenAI names a JSON value's type in "but got ... instead". */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a decimal";
  if (typeof value === "string") return "a string";
  if (typeof value === "boolean") return "a boolean";
  return "an object";
}

/** 'a', 'b', and 'c' (OpenAI's list style in "Supported values are: ..."). */
function quoteList(values: readonly string[]): string {
  const quoted = values.map((v) => `'${v}'`);
  if (quoted.length <= 2) return quoted.join(" and ");
  return `${quoted.slice(0, -1).join(", ")}, and ${quoted.at(-1)}`;
}

export const missing = (param: string): never => fail(`Missing required parameter: '${param}'.`, param, "missing_required_parameter");
export const wrongType = (param: string, expected: string, value: unknown): never =>
  fail(`Invalid type for '${param}': expected ${expected}, but got ${describe(value)} instead.`, param, "invalid_type");
export const badValue = (param: string, value: unknown, allowed: readonly string[]): never =>
  fail(`Invalid value: '${String(value)}'. Supported values are: ${quoteList(allowed)}.`, param, "invalid_value");

export function requireString(owner: Record<string, unknown>, key: string, param: string): string {
  const value = owner[key];
  if (value === undefined) missing(param);
  if (typeof value !== "string") wrongType(param, "a string", value);
  return value as string;
}

/** Content parts: every part an object with a known `type` and that type's required member. */
function checkParts(parts: unknown[], param: string, allowed: readonly string[]): void {
  parts.forEach((part, j) => {
    const p = `${param}[${j}]`;
    if (!isObject(part)) wrongType(p, "an object", part);
    const o = part as Record<string, unknown>;
    if (o.type === undefined) missing(`${p}.type`);
    if (typeof o.type !== "string" || !allowed.includes(o.type)) badValue(`${p}.type`, o.type, allowed);
    if (o.type === "text") requireString(o, "text", `${p}.text`);
    if (o.type === "refusal") requireString(o, "refusal", `${p}.refusal`);
    if (o.type === "image_url") {
      if (!isObject(o.image_url)) o.image_url === undefined ? missing(`${p}.image_url`) : wrongType(`${p}.image_url`, "an object", o.image_url);
      requireString(o.image_url as Record<string, unknown>, "url", `${p}.image_url.url`);
    }
    if (o.type === "input_audio") {
      if (!isObject(o.input_audio)) o.input_audio === undefined ? missing(`${p}.input_audio`) : wrongType(`${p}.input_audio`, "an object", o.input_audio);
      requireString(o.input_audio as Record<string, unknown>, "data", `${p}.input_audio.data`);
      requireString(o.input_audio as Record<string, unknown>, "format", `${p}.input_audio.format`);
    }
    if (o.type === "file" && !isObject(o.file)) o.file === undefined ? missing(`${p}.file`) : wrongType(`${p}.file`, "an object", o.file);
  });
}

/** `content` of one message: a string or an array of the role's part types. */
function checkContent(message: Record<string, unknown>, param: string, allowed: readonly string[], required: boolean): void {
  const content = message.content;
  if (content === undefined || (content === null && required)) {
    if (required) missing(`${param}.content`);
    return;
  }
  if (content === null || typeof content === "string") return;
  if (!Array.isArray(content)) wrongType(`${param}.content`, "one of a string or array of objects", content);
  checkParts(content as unknown[], `${param}.content`, allowed);
}

function checkToolCalls(calls: unknown, param: string): void {
  if (!Array.isArray(calls)) wrongType(param, "an array of objects", calls);
  (calls as unknown[]).forEach((call, j) => {
    const p = `${param}[${j}]`;
    if (!isObject(call)) wrongType(p, "an object", call);
    const c = call as Record<string, unknown>;
    requireString(c, "id", `${p}.id`);
    if (c.type === undefined) missing(`${p}.type`);
    if (c.type !== "function" && c.type !== "custom") badValue(`${p}.type`, c.type, ["function", "custom"]);
    const inner = c.type === "function" ? "function" : "custom";
    if (!isObject(c[inner])) c[inner] === undefined ? missing(`${p}.${inner}`) : wrongType(`${p}.${inner}`, "an object", c[inner]);
    const body = c[inner] as Record<string, unknown>;
    requireString(body, "name", `${p}.${inner}.name`);
    requireString(body, inner === "function" ? "arguments" : "input", `${p}.${inner}.${inner === "function" ? "arguments" : "input"}`);
  });
}

function checkMessage(message: unknown, i: number): void {
  const p = `messages[${i}]`;
  if (!isObject(message)) wrongType(p, "an object", message);
  const m = message as Record<string, unknown>;
  if (m.role === undefined) missing(`${p}.role`);
  if (typeof m.role !== "string" || !ROLES.includes(m.role)) badValue(`${p}.role`, m.role, ROLES);
  if (m.name !== undefined && typeof m.name !== "string") wrongType(`${p}.name`, "a string", m.name);
  switch (m.role) {
    case "system":
    case "developer":
      return checkContent(m, p, ["text"], true);
    case "user":
      return checkContent(m, p, USER_PARTS, true);
    case "tool":
      checkContent(m, p, ["text"], true);
      requireString(m, "tool_call_id", `${p}.tool_call_id`);
      return;
    case "function":
      if (!("content" in m)) missing(`${p}.content`);
      if (m.content !== null && typeof m.content !== "string") wrongType(`${p}.content`, "a string", m.content);
      requireString(m, "name", `${p}.name`);
      return;
    case "assistant": {
      // "Required unless tool_calls or function_call is specified" (ChatCompletionAssistantMessageParam.content).
      const calls = m.tool_calls !== undefined && m.tool_calls !== null;
      if (calls) checkToolCalls(m.tool_calls, `${p}.tool_calls`);
      checkContent(m, p, ASSISTANT_PARTS, !calls && m.function_call == null);
      return;
    }
  }
}

/**
 * Tool messages answer the assistant message with `tool_calls` right before them (only tool messages in
 * between), and that assistant message must get an answer for every call id before anything else comes.
 */
function checkToolPairing(messages: Record<string, unknown>[]): void {
  let open: Set<string> | null = null;
  let openAt = -1;
  messages.forEach((m, i) => {
    if (m.role === "tool") {
      if (!open || !open.has(m.tool_call_id as string)) {
        fail("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", `messages.[${i}].role`, null);
      }
      open.delete(m.tool_call_id as string);
      return;
    }
    if (open && open.size > 0) {
      fail(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(", ")}`,
        `messages.[${i}].role`,
        null,
      );
    }
    const calls = m.role === "assistant" && Array.isArray(m.tool_calls) ? (m.tool_calls as Record<string, unknown>[]) : [];
    open = calls.length > 0 ? new Set(calls.map((c) => c.id as string)) : null;
    openAt = i;
  });
  const unanswered = open as Set<string> | null;
  if (unanswered && unanswered.size > 0) {
    fail(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...unanswered].join(", ")}`,
      `messages.[${openAt}].role`,
      null,
    );
  }
}

function checkTools(body: Record<string, unknown>): void {
  const tools = body.tools;
  if (tools !== undefined) {
    if (!Array.isArray(tools)) wrongType("tools", "an array of objects", tools);
    (tools as unknown[]).forEach((tool, i) => {
      const p = `tools[${i}]`;
      if (!isObject(tool)) wrongType(p, "an object", tool);
      const t = tool as Record<string, unknown>;
      if (t.type === undefined) missing(`${p}.type`);
      if (t.type !== "function" && t.type !== "custom") badValue(`${p}.type`, t.type, ["function", "custom"]);
      const inner = t.type as string;
      if (!isObject(t[inner])) t[inner] === undefined ? missing(`${p}.${inner}`) : wrongType(`${p}.${inner}`, "an object", t[inner]);
      const def = t[inner] as Record<string, unknown>;
      const name = requireString(def, "name", `${p}.${inner}.name`);
      if (inner === "function") {
        if (!FUNCTION_NAME.test(name)) {
          fail(`Invalid '${p}.function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`, `${p}.function.name`, "invalid_value");
        }
        if (name.length > 64) {
          fail(`Invalid '${p}.function.name': string too long. Expected a string with maximum length 64, but got a string with length ${name.length} instead.`, `${p}.function.name`, "string_above_max_length");
        }
        if (def.parameters !== undefined && !isObject(def.parameters)) wrongType(`${p}.function.parameters`, "an object", def.parameters);
      }
      if (def.description !== undefined && typeof def.description !== "string") wrongType(`${p}.${inner}.description`, "a string", def.description);
    });
  }
  const hasTools = Array.isArray(tools) && tools.length > 0;
  for (const key of ["tool_choice", "parallel_tool_calls"]) {
    if (body[key] !== undefined && body[key] !== null && !hasTools) {
      fail(`Invalid value for '${key}': '${key}' is only allowed when 'tools' are specified.`, key, null);
    }
  }
  const choice = body.tool_choice;
  if (typeof choice === "string" && !TOOL_CHOICES.includes(choice)) badValue("tool_choice", choice, TOOL_CHOICES);
  if (isObject(choice)) {
    if (choice.type === "function" || choice.type === "custom") {
      if (!isObject(choice[choice.type])) missing(`tool_choice.${choice.type}`);
      requireString(choice[choice.type] as Record<string, unknown>, "name", `tool_choice.${choice.type}.name`);
    } else if (choice.type === "allowed_tools") {
      if (!isObject(choice.allowed_tools)) missing("tool_choice.allowed_tools");
      const allowed = choice.allowed_tools as Record<string, unknown>;
      if (allowed.mode !== "auto" && allowed.mode !== "required") badValue("tool_choice.allowed_tools.mode", allowed.mode, ["auto", "required"]);
      if (!Array.isArray(allowed.tools)) wrongType("tool_choice.allowed_tools.tools", "an array of objects", allowed.tools);
    } else {
      badValue("tool_choice.type", choice.type, ["function", "allowed_tools", "custom"]);
    }
  } else if (choice !== undefined && choice !== null && typeof choice !== "string") {
    wrongType("tool_choice", "one of a string or object", choice);
  }
  if (body.parallel_tool_calls != null && typeof body.parallel_tool_calls !== "boolean") wrongType("parallel_tool_calls", "a boolean", body.parallel_tool_calls);
}

/** Scalar members: type (nullable, as the SDK types declare them) and the documented ranges. */
function checkScalars(body: Record<string, unknown>): void {
  const typed: [string, string, (v: unknown) => boolean][] = [
    ["stream", "a boolean", (v) => typeof v === "boolean"],
    ["logprobs", "a boolean", (v) => typeof v === "boolean"],
    ["store", "a boolean", (v) => typeof v === "boolean"],
    ["temperature", "a decimal", (v) => typeof v === "number"],
    ["top_p", "a decimal", (v) => typeof v === "number"],
    ["frequency_penalty", "a decimal", (v) => typeof v === "number"],
    ["presence_penalty", "a decimal", (v) => typeof v === "number"],
    ["max_tokens", "an integer", isInteger],
    ["max_completion_tokens", "an integer", isInteger],
    ["n", "an integer", isInteger],
    ["seed", "an integer", isInteger],
    ["top_logprobs", "an integer", isInteger],
    ["user", "a string", (v) => typeof v === "string"],
    ["metadata", "an object", isObject],
    ["response_format", "an object", isObject],
    ["stop", "one of a string or array of strings", (v) => typeof v === "string" || (Array.isArray(v) && v.every((s) => typeof s === "string"))],
  ];
  for (const [key, expected, ok] of typed) {
    if (body[key] !== undefined && body[key] !== null && !ok(body[key])) wrongType(key, expected, body[key]);
  }
  const ranges: [string, number, number][] = [["temperature", 0, 2], ["top_p", 0, 1], ["frequency_penalty", -2, 2], ["presence_penalty", -2, 2]];
  for (const [key, min, max] of ranges) {
    const v = body[key];
    if (typeof v !== "number") continue;
    if (v > max) fail(`Invalid '${key}': decimal above maximum value. Expected a value <= ${max}, but got ${v} instead.`, key, "decimal_above_max_value");
    if (v < min) fail(`Invalid '${key}': decimal below minimum value. Expected a value >= ${min}, but got ${v} instead.`, key, "decimal_below_min_value");
  }
  if (body.stream_options !== undefined && body.stream_options !== null) {
    if (body.stream !== true) fail("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options", null);
    if (!isObject(body.stream_options)) wrongType("stream_options", "an object", body.stream_options);
    const include = (body.stream_options as Record<string, unknown>).include_usage;
    if (include !== undefined && typeof include !== "boolean") wrongType("stream_options.include_usage", "a boolean", include);
  }
}

/** Validates a parsed chat completions body; returns OpenAI's error for the first problem, or null. */
export function validateChatCompletion(body: unknown): OpenAIProblem | null {
  try {
    if (!isObject(body)) fail(JSON_PARSE_ERROR, null, null);
    const b = body as Record<string, unknown>;
    if (b.model === undefined || b.model === null || b.model === "") fail("you must provide a model parameter", null, null);
    if (typeof b.model !== "string") wrongType("model", "a string", b.model);
    if (b.messages === undefined) missing("messages");
    if (!Array.isArray(b.messages)) wrongType("messages", "an array of objects", b.messages);
    const messages = b.messages as unknown[];
    if (messages.length === 0) fail("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "messages", "empty_array");
    messages.forEach(checkMessage);
    checkToolPairing(messages as Record<string, unknown>[]);
    checkTools(b);
    checkScalars(b);
    return null;
  } catch (error) {
    if (error instanceof Invalid) return error.problem;
    throw error;
  }
}
