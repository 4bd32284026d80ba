// The built-in mock provider: answers in-process, with no network, deterministically, so a fresh
// install and CI have something real to route to. This is its minimal OpenAI chat answer; the data
// plane core makes it answer every protocol.
import type { Lane } from "../routing/lane.ts";

interface ChatMessage {
  role?: unknown;
  content?: unknown;
}

/** The text of the last user message (string content or the text parts of an array). */
export function lastUserText(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role !== "user") continue;
    if (typeof message.content === "string") return message.content;
    if (Array.isArray(message.content)) {
      return message.content
        .map((part: { type?: unknown; text?: unknown }) => (part?.type === "text" && typeof part.text === "string" ? part.text : ""))
        .join("");
    }
  }
  return "";
}

/** A stable, cheap token estimate (about four characters a token) so usage is deterministic. */
export const estimateTokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

let sequence = 0;

export async function mockChatCompletion(lane: Lane, requestedModel: string, messages: readonly ChatMessage[], now: () => number) {
  if (lane.provider.latencyMs > 0) await Bun.sleep(lane.provider.latencyMs);
  const prompt = messages.map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? ""))).join("\n");
  const content = `mock: ${lastUserText(messages)}`;
  const promptTokens = estimateTokens(prompt);
  const completionTokens = estimateTokens(content);
  sequence += 1;
  return {
    id: `chatcmpl-mock-${sequence}`,
    object: "chat.completion",
    created: Math.floor(now() / 1000),
    model: requestedModel,
    choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, logprobs: null, finish_reason: "stop" }],
    usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
  };
}
