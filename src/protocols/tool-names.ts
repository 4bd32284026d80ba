// Tool names across protocols. Each vendor allows a different alphabet (Gemini takes `fs.read`, which
// OpenAI, Anthropic and Bedrock refuse; Cohere refuses `read-file`), so a translated request renames
// what the egress cannot take and the answer's tool calls get the client's names back. Renaming is
// per request and only happens when a name does not fit: the common case costs one test per tool.
import type { IrAssistantPart, IrMessage, IrRequest, IrStreamPart } from "../ir/index.ts";

/** What an egress protocol accepts as a tool name, from the vendor's API reference. */
export interface ToolNameRule {
  /** The whole name, anchored. */
  readonly valid: RegExp;
  /** One character the name may not contain (global), replaced by `_`. */
  readonly invalidChar: RegExp;
  /** Allowed as the first character; a name starting otherwise gets a `_` prefix. */
  readonly first?: RegExp;
  readonly maxLength?: number;
}

/**
 * OpenAI Chat Completions and Responses ("a-z, A-Z, 0-9, or contain underscores and dashes, with a
 * maximum length of 64"), Anthropic (`^[a-zA-Z0-9_-]{1,64}$`), Bedrock Converse ToolSpecification
 * (pattern `[a-zA-Z0-9_-]+`, length 1 to 64).
 */
export const DASHED_64: ToolNameRule = { valid: /^[A-Za-z0-9_-]{1,64}$/, invalidChar: /[^A-Za-z0-9_-]/g, maxLength: 64 };
/** Gemini FunctionDeclaration: starts with a letter or underscore; letters, digits, `_ . : -`; at most 64. */
export const GEMINI_NAMES: ToolNameRule = { valid: /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/, invalidChar: /[^A-Za-z0-9_.:-]/g, first: /^[A-Za-z_]/, maxLength: 64 };
/** Cohere v2: "tool names can only contain certain characters (A-Za-z0-9_) and can't begin with a digit". */
export const COHERE_NAMES: ToolNameRule = { valid: /^[A-Za-z_][A-Za-z0-9_]*$/, invalidChar: /[^A-Za-z0-9_]/g, first: /^[A-Za-z_]/ };

export interface ToolRenaming {
  readonly request: IrRequest;
  /** Upstream name -> the client's name (only renamed ones). */
  restore(name: string): string;
}

/** Returns undefined when every name already fits (the request goes up unchanged). */
export function renameTools(request: IrRequest, rule: ToolNameRule, warn: (warning: string) => void): ToolRenaming | undefined {
  const names = new Set(request.tools.map((t) => t.name));
  for (const message of request.messages) if (message.role === "assistant") for (const part of message.content) if (part.type === "tool_call") names.add(part.name);
  if (request.toolChoice?.type === "tool") names.add(request.toolChoice.name);
  const unfit = [...names].filter((name) => !rule.valid.test(name));
  if (unfit.length === 0) return undefined;

  const upstreamName = new Map<string, string>();
  const taken = new Set([...names].filter((name) => rule.valid.test(name)));
  for (const name of unfit) {
    let base = name.replace(rule.invalidChar, "_");
    if (base === "" || (rule.first && !rule.first.test(base))) base = `_${base}`;
    if (rule.maxLength) base = base.slice(0, rule.maxLength);
    let candidate = base;
    for (let n = 2; taken.has(candidate); n++) candidate = `${rule.maxLength ? base.slice(0, rule.maxLength - `_${n}`.length) : base}_${n}`;
    taken.add(candidate);
    upstreamName.set(name, candidate);
    warn(`tool name "${name}" sent upstream as "${candidate}" (not a name this protocol accepts); the answer's calls carry "${name}" again`);
  }
  const clientName = new Map([...upstreamName].map(([client, upstream]) => [upstream, client]));
  const up = (name: string) => upstreamName.get(name) ?? name;
  const renamePart = (part: IrAssistantPart): IrAssistantPart => (part.type === "tool_call" ? { ...part, name: up(part.name) } : part);
  const messages = request.messages.map((m): IrMessage => (m.role === "assistant" ? { role: "assistant", content: m.content.map(renamePart) } : m));
  return {
    request: {
      ...request,
      messages,
      tools: request.tools.map((t) => ({ ...t, name: up(t.name) })),
      ...(request.toolChoice?.type === "tool" && { toolChoice: { type: "tool", name: up(request.toolChoice.name) } }),
    },
    restore: (name) => clientName.get(name) ?? name,
  };
}

/** The client's names back in a whole answer's content. */
export function restoreContent(content: readonly IrAssistantPart[], renaming: ToolRenaming): IrAssistantPart[] {
  return content.map((part) => (part.type === "tool_call" ? { ...part, name: renaming.restore(part.name) } : part));
}

/** The client's name back in a streamed tool call's start (the only part that names it). */
export function restorePart(part: IrStreamPart, renaming: ToolRenaming): IrStreamPart {
  return part.type === "tool-call-start" ? { ...part, name: renaming.restore(part.name) } : part;
}
