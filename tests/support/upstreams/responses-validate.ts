// Validation of a POST /v1/responses body, as strict as OpenAI, answering OpenAI's own 400 shape; the
// Responses API words its 400s like Chat Completions, so the error helpers are openai-validate.ts's.
// Shapes come from the SDK's types (node_modules/openai/resources/responses/responses.d.ts:
// ResponseCreateParamsBase, ResponseInputItem and its members, ResponseInputContent, FunctionTool, the
// ToolChoice* types, ResponseTextConfig and ResponseFormatTextConfig; resources/shared.d.ts Reasoning).
// Texts quoted from public error reports: the content part list ("Invalid value: 'text'. Supported values
// are: 'input_text', ..." at `input[0].content[0].type`), "No tool call found for function call output
// with call_id <id>." and "No tool output found for function call <id>." (param `input`), and
// "Missing required parameter: 'tools[0].name'." (a Chat Completions tool sent here). The other texts
// follow the same patterns. Unknown members are accepted, as the chat imitation accepts them, except the
// Chat Completions members that the Responses API refuses by name (`messages`, `response_format`, ...).
import { isInteger, isObject } from "./common.ts";
import { FUNCTION_NAME, Invalid, badValue, fail, missing, requireString, wrongType, type OpenAIProblem } from "./openai-validate.ts";

/** Every input item `type` the SDK declares (ResponseInputItem); a message may omit its type. */
const ITEM_TYPES = [
  "message",
  "file_search_call",
  "computer_call",
  "computer_call_output",
  "web_search_call",
  "function_call",
  "function_call_output",
  "tool_search_call",
  "tool_search_output",
  "additional_tools",
  "reasoning",
  "compaction",
  "compaction_trigger",
  "image_generation_call",
  "code_interpreter_call",
  "local_shell_call",
  "local_shell_call_output",
  "shell_call",
  "shell_call_output",
  "apply_patch_call",
  "apply_patch_call_output",
  "mcp_list_tools",
  "mcp_approval_request",
  "mcp_approval_response",
  "mcp_call",
  "custom_tool_call_output",
  "custom_tool_call",
  "item_reference",
  "program",
  "program_output",
];
/** The content part types OpenAI lists when a part's type is unknown (quoted from its error). */
const ALL_PART_TYPES = ["input_text", "input_image", "input_audio", "output_text", "refusal", "input_file", "computer_screenshot", "summary_text", "encrypted_content"];
/** What a message of each role may hold (ResponseInputContent; an assistant's ResponseOutputMessage content). */
const INPUT_PARTS = ["input_text", "input_image", "input_file"];
const ASSISTANT_PARTS = ["output_text", "refusal"];
const ROLES = ["user", "assistant", "system", "developer"];
const TOOL_CHOICES = ["none", "auto", "required"];
const FORMAT_TYPES = ["text", "json_schema", "json_object"];
const EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];
const SUMMARIES = ["auto", "concise", "detailed"];
const VERBOSITIES = ["low", "medium", "high"];
/** The Responses API's floor for max_output_tokens. */
const MIN_OUTPUT_TOKENS = 16;

/** Chat Completions members the Responses API names in its refusal, with where each one moved. */
const MOVED: Record<string, string> = {
  response_format: "text.format",
  max_tokens: "max_output_tokens",
  max_completion_tokens: "max_output_tokens",
  reasoning_effort: "reasoning.effort",
};

/** The function call ids an earlier stored response left for this request to answer. */
export type PreviousCalls = (responseId: string) => readonly string[] | undefined;

function requireArray(owner: Record<string, unknown>, key: string, param: string): unknown[] {
  if (owner[key] === undefined) missing(param);
  if (!Array.isArray(owner[key])) wrongType(param, "an array", owner[key]);
  return owner[key] as unknown[];
}

function checkParts(parts: unknown[], param: string, role: string): void {
  const allowed = role === "assistant" ? ASSISTANT_PARTS : INPUT_PARTS;
  parts.forEach((part, j) => {
    const p = `${param}[${j}]`;
    if (!isObject(part)) wrongType(p, "an object", part);
    const o = part as Record<string, unknown>;
    if (o.type === undefined) missing(`${p}.type`);
    if (typeof o.type !== "string" || !ALL_PART_TYPES.includes(o.type)) badValue(`${p}.type`, o.type, ALL_PART_TYPES);
    if (!allowed.includes(o.type as string)) badValue(`${p}.type`, o.type, allowed);
    if (o.type === "input_text" || o.type === "output_text") requireString(o, "text", `${p}.text`);
    if (o.type === "refusal") requireString(o, "refusal", `${p}.refusal`);
    if (o.type === "input_image" && o.image_url == null && o.file_id == null) missing(`${p}.image_url`);
  });
}

function checkItem(item: unknown, i: number): Record<string, unknown> {
  const p = `input[${i}]`;
  if (!isObject(item)) wrongType(p, "an object", item);
  const o = item as Record<string, unknown>;
  // EasyInputMessage: the type may be left out when a role is given.
  const type = o.type ?? (o.role !== undefined ? "message" : undefined);
  if (type === undefined) missing(`${p}.type`);
  if (typeof type !== "string" || !ITEM_TYPES.includes(type)) badValue(`${p}.type`, type, ITEM_TYPES);
  switch (type) {
    case "message": {
      if (o.role === undefined) missing(`${p}.role`);
      if (typeof o.role !== "string" || !ROLES.includes(o.role)) badValue(`${p}.role`, o.role, ROLES);
      if (o.content === undefined) missing(`${p}.content`);
      if (typeof o.content === "string") break;
      if (!Array.isArray(o.content)) wrongType(`${p}.content`, "one of a string or array of objects", o.content);
      checkParts(o.content as unknown[], `${p}.content`, o.role as string);
      break;
    }
    case "function_call":
      requireString(o, "call_id", `${p}.call_id`);
      requireString(o, "name", `${p}.name`);
      requireString(o, "arguments", `${p}.arguments`);
      break;
    case "function_call_output":
      requireString(o, "call_id", `${p}.call_id`);
      if (o.output === undefined) missing(`${p}.output`);
      if (typeof o.output !== "string" && !Array.isArray(o.output)) wrongType(`${p}.output`, "one of a string or array of objects", o.output);
      break;
    case "reasoning":
      requireArray(o, "summary", `${p}.summary`);
      break;
    case "item_reference":
      requireString(o, "id", `${p}.id`);
      break;
  }
  return o;
}

/**
 * Every function_call_output answers a function_call before it (in this input, or left by the previous
 * response), and every function_call is answered somewhere in the input.
 */
function checkToolPairing(items: Record<string, unknown>[], previous: readonly string[]): void {
  const called = new Set(previous);
  const answered = new Set(items.filter((o) => o.type === "function_call_output").map((o) => o.call_id as string));
  for (const item of items) {
    if (item.type === "function_call") called.add(item.call_id as string);
    if (item.type === "function_call_output" && !called.has(item.call_id as string)) {
      fail(`No tool call found for function call output with call_id ${String(item.call_id)}.`, "input", null);
    }
  }
  for (const id of called) {
    if (!answered.has(id)) fail(`No tool output found for function call ${id}.`, "input", null);
  }
}

function checkInput(body: Record<string, unknown>, previousCalls: PreviousCalls): void {
  const previousId = body.previous_response_id;
  let previous: readonly string[] = [];
  if (previousId !== undefined && previousId !== null) {
    if (typeof previousId !== "string") wrongType("previous_response_id", "a string", previousId);
    const found = previousCalls(previousId as string);
    if (found === undefined) fail(`Previous response with id '${String(previousId)}' not found.`, "previous_response_id", "previous_response_not_found");
    previous = found as readonly string[];
  }
  const input = body.input;
  if (input === undefined || typeof input === "string") return checkToolPairing([], previous);
  if (!Array.isArray(input)) wrongType("input", "one of a string or array of objects", input);
  checkToolPairing((input as unknown[]).map(checkItem), previous);
}

function checkTools(body: Record<string, unknown>): void {
  const tools = body.tools;
  if (tools === undefined || tools === null) return;
  if (!Array.isArray(tools)) wrongType("tools", "an array of objects", tools);
  (tools as unknown[]).forEach((tool, i) => {
    const p = `tools[${i}]`;
    if (!isObject(tool)) wrongType(p, "an object", tool);
    const t = tool as Record<string, unknown>;
    if (t.type === undefined) missing(`${p}.type`);
    if (typeof t.type !== "string") wrongType(`${p}.type`, "a string", t.type);
    if (t.type !== "function") return;
    // A Chat Completions tool ({type, function: {name, ...}}) fails here, on the flat name.
    const name = requireString(t, "name", `${p}.name`);
    if (!FUNCTION_NAME.test(name)) {
      fail(`Invalid '${p}.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`, `${p}.name`, "invalid_value");
    }
    if (name.length > 64) {
      fail(`Invalid '${p}.name': string too long. Expected a string with maximum length 64, but got a string with length ${name.length} instead.`, `${p}.name`, "string_above_max_length");
    }
    if (t.parameters != null && !isObject(t.parameters)) wrongType(`${p}.parameters`, "an object", t.parameters);
    if (t.strict != null && typeof t.strict !== "boolean") wrongType(`${p}.strict`, "a boolean", t.strict);
    if (t.description != null && typeof t.description !== "string") wrongType(`${p}.description`, "a string", t.description);
  });
}

function checkToolChoice(choice: unknown): void {
  if (choice === undefined || choice === null) return;
  if (typeof choice === "string") {
    if (!TOOL_CHOICES.includes(choice)) badValue("tool_choice", choice, TOOL_CHOICES);
    return;
  }
  if (!isObject(choice)) wrongType("tool_choice", "one of a string or object", choice);
  const c = choice as Record<string, unknown>;
  if (c.type === undefined) missing("tool_choice.type");
  // The function choice is flat ({type, name}); Chat Completions' nested {function: {name}} fails on the name.
  if (c.type === "function" || c.type === "custom") requireString(c, "name", "tool_choice.name");
  if (c.type === "allowed_tools") {
    if (c.mode !== "auto" && c.mode !== "required") badValue("tool_choice.mode", c.mode, ["auto", "required"]);
    requireArray(c, "tools", "tool_choice.tools");
  }
}

function checkText(text: unknown): void {
  if (text === undefined || text === null) return;
  if (!isObject(text)) wrongType("text", "an object", text);
  const t = text as Record<string, unknown>;
  if (t.verbosity != null && !VERBOSITIES.includes(t.verbosity as string)) badValue("text.verbosity", t.verbosity, VERBOSITIES);
  if (t.format === undefined || t.format === null) return;
  if (!isObject(t.format)) wrongType("text.format", "an object", t.format);
  const f = t.format as Record<string, unknown>;
  if (f.type === undefined) missing("text.format.type");
  if (typeof f.type !== "string" || !FORMAT_TYPES.includes(f.type)) badValue("text.format.type", f.type, FORMAT_TYPES);
  if (f.type !== "json_schema") return;
  // Flat here too: Chat Completions' {json_schema: {name, schema}} fails on the name.
  requireString(f, "name", "text.format.name");
  if (f.schema === undefined) missing("text.format.schema");
  if (!isObject(f.schema)) wrongType("text.format.schema", "an object", f.schema);
}

function checkReasoning(reasoning: unknown): void {
  if (reasoning === undefined || reasoning === null) return;
  if (!isObject(reasoning)) wrongType("reasoning", "an object", reasoning);
  const r = reasoning as Record<string, unknown>;
  if (r.effort != null && !EFFORTS.includes(r.effort as string)) badValue("reasoning.effort", r.effort, EFFORTS);
  if (r.summary != null && !SUMMARIES.includes(r.summary as string)) badValue("reasoning.summary", r.summary, SUMMARIES);
}

/** Scalar members: type (nullable, as the SDK types declare them) and the documented ranges. */
function checkScalars(body: Record<string, unknown>): void {
  const typed: [string, string, (v: unknown) => boolean][] = [
    ["instructions", "a string", (v) => typeof v === "string"],
    ["stream", "a boolean", (v) => typeof v === "boolean"],
    ["store", "a boolean", (v) => typeof v === "boolean"],
    ["background", "a boolean", (v) => typeof v === "boolean"],
    ["parallel_tool_calls", "a boolean", (v) => typeof v === "boolean"],
    ["temperature", "a decimal", (v) => typeof v === "number"],
    ["top_p", "a decimal", (v) => typeof v === "number"],
    ["max_output_tokens", "an integer", isInteger],
    ["top_logprobs", "an integer", isInteger],
    ["user", "a string", (v) => typeof v === "string"],
    ["metadata", "an object", isObject],
    ["stream_options", "an object", isObject],
    ["include", "an array of strings", (v) => Array.isArray(v) && v.every((s) => typeof s === "string")],
  ];
  for (const [key, expected, ok] of typed) {
    if (body[key] !== undefined && body[key] !== null && !ok(body[key])) wrongType(key, expected, body[key]);
  }
  const ranges: [string, number, number][] = [["temperature", 0, 2], ["top_p", 0, 1]];
  for (const [key, min, max] of ranges) {
    const v = body[key];
    if (typeof v !== "number") continue;
    if (v > max) fail(`Invalid '${key}': decimal above maximum value. Expected a value <= ${max}, but got ${v} instead.`, key, "decimal_above_max_value");
    if (v < min) fail(`Invalid '${key}': decimal below minimum value. Expected a value >= ${min}, but got ${v} instead.`, key, "decimal_below_min_value");
  }
  const max = body.max_output_tokens;
  if (typeof max === "number" && max < MIN_OUTPUT_TOKENS) {
    fail(`Invalid 'max_output_tokens': integer below minimum value. Expected a value >= ${MIN_OUTPUT_TOKENS}, but got ${max} instead.`, "max_output_tokens", "integer_below_min_value");
  }
  if (body.truncation != null && body.truncation !== "auto" && body.truncation !== "disabled") badValue("truncation", body.truncation, ["auto", "disabled"]);
}

/** Validates a parsed responses body; returns OpenAI's error for the first problem, or null. */
export function validateResponses(body: unknown, previousCalls: PreviousCalls): OpenAIProblem | null {
  try {
    if (!isObject(body)) wrongType("body", "an object", body);
    const b = body as Record<string, unknown>;
    if (b.messages !== undefined) fail("Unknown parameter: 'messages'.", "messages", "unknown_parameter");
    for (const [key, to] of Object.entries(MOVED)) {
      if (b[key] === undefined) continue;
      fail(
        `Unsupported parameter: '${key}'. In the Responses API, this parameter has moved to '${to}'. Try again with the new parameter. See the API documentation for more information: https://platform.openai.com/docs/api-reference/responses/create.`,
        key,
        "unsupported_parameter",
      );
    }
    if (b.model === undefined || b.model === null) missing("model");
    if (typeof b.model !== "string") wrongType("model", "a string", b.model);
    checkScalars(b);
    checkInput(b, previousCalls);
    checkTools(b);
    checkToolChoice(b.tool_choice);
    checkText(b.text);
    checkReasoning(b.reasoning);
    return null;
  } catch (error) {
    if (error instanceof Invalid) return error.problem;
    throw error;
  }
}
