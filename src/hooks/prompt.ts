// The prompt a gate sees (text parts only) and a transform's texts written back into the IR. Messages are
// index-aligned with the IR's, so a transform replaces the texts of the same messages and keeps every
// non-text part (images, documents, tool calls and results) where it was.
import type { IrMessage, IrRequest, IrTextPart } from "../ir/request.ts";
import type { GatePrompt } from "./types.ts";

const textOf = (parts: readonly { readonly type: string }[]): string =>
  parts.reduce((text, part) => (part.type === "text" ? text + (part as IrTextPart).text : text), "");

export function promptOf(ir: IrRequest): GatePrompt {
  return {
    system: ir.system.length === 0 ? null : ir.system.map((p) => p.text).join(""),
    messages: ir.messages.map((m) => ({ role: m.role, text: m.role === "tool" ? "" : textOf(m.content) })),
  };
}

/** Whether `value` is a prompt a transform may hand back for `current` (same messages, same roles). */
export function validTransform(value: unknown, current: GatePrompt): value is { system?: string | null; messages: GatePrompt["messages"] } {
  if (typeof value !== "object" || value === null) return false;
  const { system, messages } = value as Record<string, unknown>;
  if (system !== undefined && system !== null && typeof system !== "string") return false;
  if (!Array.isArray(messages) || messages.length !== current.messages.length) return false;
  return messages.every((m, i) => typeof m === "object" && m !== null && typeof m.text === "string" && m.role === current.messages[i]!.role);
}

/** The IR with the prompt's texts: each message's text parts become one (where its first one was). */
export function applyPrompt(ir: IrRequest, prompt: GatePrompt): IrRequest {
  const system: IrTextPart[] = prompt.system === null || prompt.system === "" ? [] : [{ type: "text", text: prompt.system }];
  const messages = ir.messages.map((message, i): IrMessage => {
    const text = prompt.messages[i]!.text;
    if (message.role === "tool" || textOf(message.content) === text) return message;
    return { ...message, content: replaceText(message.content as readonly { readonly type: string }[], text) } as unknown as IrMessage;
  });
  return { ...ir, system, messages };
}

function replaceText<P extends { readonly type: string }>(parts: readonly P[], text: string): P[] {
  const first = parts.findIndex((p) => p.type === "text");
  const kept = parts.filter((p) => p.type !== "text");
  const part = { type: "text", text } as unknown as P;
  if (first < 0) return text === "" ? kept : [part, ...kept];
  const out = parts.slice(0, first).filter((p) => p.type !== "text");
  return text === "" ? kept : [...out, part, ...parts.slice(first + 1).filter((p) => p.type !== "text")];
}
