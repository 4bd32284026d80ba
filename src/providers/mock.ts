// The built-in mock provider: answers in-process, in the IR, so every ingress protocol's encoder turns
// its answer into that protocol's wire form. Deterministic, no network: demos and CI route to it.
//
// Behaviour: with tools offered and a user message last, it calls the first tool with
// {"input": <last user text>}; after a tool result it answers "mock: tool <name> returned <text>";
// otherwise it answers "mock: <last user text>". `latency_ms` delays the first byte.
import type { IrAssistantPart, IrMessage, IrRequest, IrResponse, IrStreamPart, IrUsage } from "../ir/index.ts";
import type { Lane } from "../routing/lane.ts";

/** A stable, cheap token estimate (about four characters a token) so usage is deterministic. */
export const estimateTokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

function textOf(message: IrMessage | undefined): string {
  if (!message) return "";
  return message.content
    .map((part) => {
      if (part.type === "text") return part.text;
      if (part.type === "tool_result") return part.content.map((c) => (c.type === "text" ? c.text : "")).join("");
      return "";
    })
    .join("");
}

function toolNameFor(messages: readonly IrMessage[], toolCallId: string): string {
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    for (const part of message.content) if (part.type === "tool_call" && part.id === toolCallId) return part.name;
  }
  return "unknown";
}

let sequence = 0;

/** The mock's answer as IR content, before any framing. */
function answer(request: IrRequest): readonly IrAssistantPart[] {
  const last = request.messages.at(-1);
  const tool = request.tools[0];
  if (last?.role === "user" && tool && request.toolChoice?.type !== "none") {
    sequence += 1;
    return [{ type: "tool_call", id: `call_mock_${sequence}`, name: tool.name, arguments: JSON.stringify({ input: textOf(last) }) }];
  }
  if (last?.role === "tool") {
    const result = last.content[0];
    const name = result ? toolNameFor(request.messages, result.toolCallId) : "unknown";
    return [{ type: "text", text: `mock: tool ${name} returned ${textOf(last)}` }];
  }
  return [{ type: "text", text: `mock: ${textOf(request.messages.filter((m) => m.role === "user").at(-1))}` }];
}

function usageOf(request: IrRequest, content: readonly IrAssistantPart[]): IrUsage {
  const prompt = [...request.system.map((s) => s.text), ...request.messages.map(textOf)].join("\n");
  const output = content.map((p) => (p.type === "tool_call" ? p.arguments : p.type === "text" ? p.text : "")).join("");
  return { inputNoCache: estimateTokens(prompt), inputCacheRead: 0, inputCacheWrite: 0, output: estimateTokens(output), outputReasoning: 0 };
}

export async function mockRespond(lane: Lane, request: IrRequest, now: () => number): Promise<IrResponse> {
  if (lane.provider.latencyMs > 0) await Bun.sleep(lane.provider.latencyMs);
  const content = answer(request);
  sequence += 1;
  return {
    id: `mock-${sequence}`,
    model: lane.upstreamModel,
    created: Math.floor(now() / 1000),
    content,
    finishReason: content.some((p) => p.type === "tool_call") ? { unified: "tool_calls" } : { unified: "stop" },
    usage: usageOf(request, content),
  };
}

/** The same answer as a stream: text in word-sized deltas, tool arguments in a few pieces. */
export function mockStream(lane: Lane, request: IrRequest, now: () => number): ReadableStream<IrStreamPart> {
  return new ReadableStream<IrStreamPart>({
    async start(controller) {
      const response = await mockRespond(lane, request, now);
      controller.enqueue({ type: "start", id: response.id, model: response.model, created: response.created });
      controller.enqueue({ type: "usage", usage: { inputNoCache: response.usage.inputNoCache, inputCacheRead: 0, inputCacheWrite: 0 } });
      response.content.forEach((part, index) => {
        const id = String(index);
        if (part.type === "text") {
          controller.enqueue({ type: "text-start", id });
          for (const word of part.text.match(/\S+\s*/g) ?? [""]) controller.enqueue({ type: "text-delta", id, delta: word });
          controller.enqueue({ type: "text-end", id });
        } else if (part.type === "tool_call") {
          controller.enqueue({ type: "tool-call-start", id, toolCallId: part.id, name: part.name });
          const third = Math.ceil(part.arguments.length / 3);
          for (let at = 0; at < part.arguments.length; at += third) controller.enqueue({ type: "tool-call-delta", id, argumentsDelta: part.arguments.slice(at, at + third) });
          controller.enqueue({ type: "tool-call-end", id });
        }
      });
      controller.enqueue({ type: "usage", usage: { output: response.usage.output, outputReasoning: 0 } });
      controller.enqueue({ type: "finish", finishReason: response.finishReason });
      controller.close();
    },
  });
}
