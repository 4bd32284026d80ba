// What Bedrock's Converse / ConverseStream refuse with a 400 ValidationException, checked on the parsed
// body (the modelId comes from the path). Shapes are the API reference's
// (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html, ConverseStream the
// same body); the schemas and the Smithy wording ("1 validation error detected: Value at
// 'messages.1.member.role' failed to satisfy constraint: ...") are shared with the gateway's adapter
// (src/protocols/bedrock/schema.ts), being facts about the wire. The conversation rules below are the
// ones Bedrock states in plain sentences rather than as Smithy constraints (the start/alternation wording
// as users quote it: langchain-ai/langchain-aws #130, langgenius/dify #12340); the rules are written here on
// their own, not by calling the adapter's decoder, so an adapter bug cannot validate itself.
import {
  ImageBlock,
  InferenceConfiguration,
  Message,
  ReasoningTextBlock,
  RequestBody,
  TextMember,
  ToolResultBlock,
  ToolSpecification,
  ToolUseBlock,
  WireError,
  expectShape,
  unionMember,
} from "../../../src/protocols/bedrock/schema.ts";
import { isObject } from "./common.ts";

/** ContentBlock's members (the SDK's ContentBlock union). */
const CONTENT_MEMBERS = ["text", "image", "document", "video", "toolUse", "toolResult", "guardContent", "cachePoint", "reasoningContent", "citationsContent", "searchResult"] as const;
const SYSTEM_MEMBERS = ["text", "guardContent", "cachePoint"] as const;
const TOOL_MEMBERS = ["toolSpec", "systemTool", "cachePoint"] as const;
const TOOL_CHOICE_MEMBERS = ["auto", "any", "tool"] as const;
/** ToolSpecification.name: 1 to 64 characters of this pattern (API_runtime_ToolSpecification). */
const TOOL_NAME = /^[a-zA-Z0-9_-]+$/;

const exactlyOne = (members: readonly string[]) => `Member must have exactly one of [${members.join(", ")}] set`;

/** The ValidationException message for the body, or undefined when Bedrock would accept it. */
export function validateConverse(body: unknown, modelId: string): string | undefined {
  try {
    check(body, modelId);
    return undefined;
  } catch (error) {
    if (error instanceof WireError || error instanceof RuleError) return error.message;
    throw error;
  }
}

/** A refusal Bedrock words as a sentence instead of a Smithy constraint. */
class RuleError extends Error {}

function check(body: unknown, modelId: string): void {
  if (modelId === "") throw new WireError("modelId", "Member must have length greater than or equal to 1");
  if (!isObject(body)) throw new WireError("", "Member must be a structure");
  expectShape(RequestBody, body, "");
  const tools = checkToolConfig(body.toolConfig);
  if (body.inferenceConfig !== undefined) expectShape(InferenceConfiguration, body.inferenceConfig, "inferenceConfig");
  for (const [i, block] of ((body.system ?? []) as object[]).entries()) {
    const kind = unionMember(block, SYSTEM_MEMBERS, `system[${i}]`);
    if ("other" in kind) throw new WireError(`system[${i}]`, exactlyOne(SYSTEM_MEMBERS));
    if (kind.member === "text") expectShape(TextMember, kind.value, `system[${i}].text`);
  }
  const messages = body.messages as object[] | undefined;
  if (messages === undefined || messages.length === 0) throw new WireError("messages", "Member must have length greater than or equal to 1");
  let previousToolUses = 0;
  for (const [i, message] of messages.entries()) {
    expectShape(Message, message, `messages[${i}]`);
    if (i === 0 && message.role !== "user") throw new RuleError("A conversation must start with a user message. Try again with a conversation that starts with a user message.");
    if (i > 0 && (messages[i - 1] as { role: string }).role === message.role) {
      throw new RuleError("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.");
    }
    if (message.content.length === 0) throw new RuleError(`The content field in the Message object at messages.${i} is empty. Add a ContentBlock object to the content field and try again.`);
    let toolUses = 0;
    let toolResults = 0;
    for (const [j, block] of message.content.entries()) {
      const member = checkBlock(block, `messages[${i}].content[${j}]`, `messages.${i}.content.${j}`);
      if (member === "toolUse" || member === "toolResult") {
        if (tools === undefined) throw new RuleError("The toolConfig field must be defined when using toolUse and toolResult content blocks.");
        if (member === "toolUse" && message.role !== "assistant") throw new WireError(`messages[${i}].content[${j}].toolUse`, "toolUse blocks are allowed only in assistant messages");
        if (member === "toolResult" && message.role !== "user") throw new WireError(`messages[${i}].content[${j}].toolResult`, "toolResult blocks are allowed only in user messages");
      }
      if (member === "toolUse") toolUses += 1;
      if (member === "toolResult") toolResults += 1;
    }
    if (toolResults > previousToolUses) throw new RuleError(`The number of toolResult blocks at messages.${i}.content exceeds the number of toolUse blocks of previous turn.`);
    previousToolUses = toolUses;
  }
}

/** Checks one content block; answers which member it sets. */
function checkBlock(block: object, at: string, dotted: string): string {
  const kind = unionMember(block, CONTENT_MEMBERS, at);
  if ("other" in kind) throw new WireError(at, exactlyOne(CONTENT_MEMBERS));
  const { member, value } = kind;
  const here = `${at}.${member}`;
  if (member === "text") {
    expectShape(TextMember, value, here);
    if ((value as string).trim() === "") throw new RuleError(`The text field in the ContentBlock object at ${dotted} is blank. Add text to the text field, and try again.`);
  }
  if (member === "image") expectShape(ImageBlock, value, here);
  if (member === "toolUse") {
    expectShape(ToolUseBlock, value, here);
    if (!isObject(value.input)) throw new WireError(`${here}.input`, "Member must be a JSON object");
  }
  if (member === "toolResult") expectShape(ToolResultBlock, value, here);
  if (member === "reasoningContent") {
    const inner = unionMember(value as object, ["reasoningText", "redactedContent"], here);
    if ("other" in inner) throw new WireError(here, exactlyOne(["reasoningText", "redactedContent"]));
    if (inner.member === "reasoningText") expectShape(ReasoningTextBlock, inner.value, `${here}.reasoningText`);
  }
  return member;
}

/** The declared tool names, or undefined without a toolConfig. */
function checkToolConfig(config: unknown): string[] | undefined {
  if (config === undefined) return undefined;
  const { tools, toolChoice } = config as { tools: object[]; toolChoice?: object };
  if (tools.length === 0) throw new WireError("toolConfig.tools", "Member must have length greater than or equal to 1");
  const names: string[] = [];
  for (const [i, tool] of tools.entries()) {
    const at = `toolConfig.tools[${i}]`;
    const kind = unionMember(tool, TOOL_MEMBERS, at);
    if ("other" in kind) throw new WireError(at, exactlyOne(TOOL_MEMBERS));
    if (kind.member !== "toolSpec") continue;
    expectShape(ToolSpecification, kind.value, `${at}.toolSpec`);
    const { name } = kind.value;
    if (name.length > 64) throw new WireError(`${at}.toolSpec.name`, "Member must have length less than or equal to 64");
    if (!TOOL_NAME.test(name)) throw new WireError(`${at}.toolSpec.name`, "Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+");
    names.push(name);
  }
  if (toolChoice !== undefined) {
    const choice = unionMember(toolChoice, TOOL_CHOICE_MEMBERS, "toolConfig.toolChoice");
    if ("other" in choice) throw new WireError("toolConfig.toolChoice", exactlyOne(TOOL_CHOICE_MEMBERS));
    if (choice.member === "tool") {
      const wanted = (choice.value as { name?: unknown }).name;
      if (typeof wanted !== "string" || !names.includes(wanted)) throw new WireError("toolConfig.toolChoice.tool.name", `Member must name one of the declared tools [${names.join(", ")}]`);
    }
  }
  return names;
}
