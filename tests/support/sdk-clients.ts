// The six vendors' official SDKs, each driven the way its own documentation shows, behind one small
// interface so the end-to-end matrix can ask every SDK the same three questions: a plain turn, a
// streamed turn, and a tool call answered with its result. Nothing here reshapes what the gateway
// sends; each driver reads only what its SDK hands it.
import Anthropic from "@anthropic-ai/sdk";
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand, type Message as BedrockMessage, type ToolConfiguration } from "@aws-sdk/client-bedrock-runtime";
import { GoogleGenAI, type Content, type FunctionCall } from "@google/genai";
import { CohereClientV2, type Cohere } from "cohere-ai";
import OpenAI from "openai";

export const CLIENT_KEY = "client-key";
export const SYSTEM = "be brief";
/** The one tool every round trip offers, under the name asked for (default `read_file`). */
export const readFile = (name = "read_file") => ({
  name,
  description: "Reads a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } as Record<string, unknown>,
});
const ASK_TOOL = "read the readme";

export interface Turn {
  readonly text: string;
  /** The SDK's own finish value (finish_reason, stop_reason, finishReason, status). */
  readonly finish: string | undefined;
  readonly outputTokens: number;
}
export interface StreamedTurn extends Turn {
  /** How many text deltas the SDK delivered: more than one proves the answer was not buffered. */
  readonly deltas: number;
}
export interface ToolTrip {
  /** The tool call of the first (streamed) turn, arguments parsed. */
  readonly call: { readonly name: string; readonly arguments: unknown };
  readonly callFinish: string | undefined;
  /** The text of the second turn, which carried the tool's result. */
  readonly answer: string;
}
export interface SdkClient {
  readonly name: string;
  /** The finish values this SDK reports for a plain answer and for a tool call. */
  readonly finish: { readonly stop: string; readonly tool: string };
  nonStream(model: string, text: string): Promise<Turn>;
  stream(model: string, text: string): Promise<StreamedTurn>;
  /** Offers the tool under `name`, streams the call, sends `result` back. */
  toolRoundTrip(model: string, result: string, name?: string): Promise<ToolTrip>;
}

function openaiChat(base: string, key = CLIENT_KEY): SdkClient {
  const client = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
  return {
    name: "OpenAI chat",
    finish: { stop: "stop", tool: "tool_calls" },
    async nonStream(model, text) {
      const completion = await client.chat.completions.create({ model, messages: [{ role: "system", content: SYSTEM }, { role: "user", content: text }] });
      const choice = completion.choices[0]!;
      return { text: choice.message.content ?? "", finish: choice.finish_reason, outputTokens: completion.usage?.completion_tokens ?? 0 };
    },
    async stream(model, text) {
      const stream = await client.chat.completions.create({ model, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: text }] });
      let out = "";
      let deltas = 0;
      let finish: string | undefined;
      let outputTokens = 0;
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta?.content;
        if (delta) [out, deltas] = [out + delta, deltas + 1];
        finish = chunk.choices[0]?.finish_reason ?? finish;
        outputTokens = chunk.usage?.completion_tokens ?? outputTokens;
      }
      return { text: out, deltas, finish, outputTokens };
    },
    async toolRoundTrip(model, result, name) {
      const tool = readFile(name);
      const tools: OpenAI.ChatCompletionTool[] = [{ type: "function", function: tool }];
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: ASK_TOOL }];
      const first = await client.chat.completions.stream({ model, messages, tools }).finalChatCompletion();
      const call = first.choices[0]!.message.tool_calls?.[0];
      if (call?.type !== "function") throw new Error("expected a function call");
      messages.push(first.choices[0]!.message, { role: "tool", tool_call_id: call.id, content: result });
      const second = await client.chat.completions.create({ model, messages, tools });
      return { call: { name: call.function.name, arguments: JSON.parse(call.function.arguments) }, callFinish: first.choices[0]!.finish_reason, answer: second.choices[0]!.message.content ?? "" };
    },
  };
}

function anthropic(base: string, key = CLIENT_KEY): SdkClient {
  const client = new Anthropic({ apiKey: key, baseURL: base, maxRetries: 0 });
  const textOf = (message: Anthropic.Message) => message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
  return {
    name: "Anthropic",
    finish: { stop: "end_turn", tool: "tool_use" },
    async nonStream(model, text) {
      const message = await client.messages.create({ model, max_tokens: 256, system: SYSTEM, messages: [{ role: "user", content: text }] });
      return { text: textOf(message), finish: message.stop_reason ?? undefined, outputTokens: message.usage.output_tokens };
    },
    async stream(model, text) {
      const stream = client.messages.stream({ model, max_tokens: 256, messages: [{ role: "user", content: text }] });
      let deltas = 0;
      stream.on("text", () => (deltas += 1));
      const final = await stream.finalMessage();
      return { text: textOf(final), deltas, finish: final.stop_reason ?? undefined, outputTokens: final.usage.output_tokens };
    },
    async toolRoundTrip(model, result, name) {
      const tool = readFile(name);
      const tools: Anthropic.Tool[] = [{ name: tool.name, description: tool.description, input_schema: tool.parameters as unknown as Anthropic.Tool.InputSchema }];
      const messages: Anthropic.MessageParam[] = [{ role: "user", content: ASK_TOOL }];
      const first = await client.messages.stream({ model, max_tokens: 256, messages, tools }).finalMessage();
      const use = first.content.find((b) => b.type === "tool_use");
      if (use?.type !== "tool_use") throw new Error("expected a tool_use block");
      messages.push({ role: "assistant", content: first.content }, { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: result }] });
      const second = await client.messages.create({ model, max_tokens: 256, messages, tools });
      return { call: { name: use.name, arguments: use.input }, callFinish: first.stop_reason ?? undefined, answer: textOf(second) };
    },
  };
}

function gemini(base: string, key = CLIENT_KEY): SdkClient {
  const client = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: base } });
  return {
    name: "Google GenAI",
    finish: { stop: "STOP", tool: "STOP" },
    async nonStream(model, text) {
      const response = await client.models.generateContent({ model, contents: text, config: { systemInstruction: SYSTEM } });
      return { text: response.text ?? "", finish: response.candidates?.[0]?.finishReason, outputTokens: response.usageMetadata?.candidatesTokenCount ?? 0 };
    },
    async stream(model, text) {
      let out = "";
      let deltas = 0;
      let finish: string | undefined;
      let outputTokens = 0;
      for await (const chunk of await client.models.generateContentStream({ model, contents: text })) {
        if (chunk.text) [out, deltas] = [out + chunk.text, deltas + 1];
        finish = chunk.candidates?.[0]?.finishReason ?? finish;
        outputTokens = chunk.usageMetadata?.candidatesTokenCount ?? outputTokens;
      }
      return { text: out, deltas, finish, outputTokens };
    },
    async toolRoundTrip(model, result, name) {
      const tool = readFile(name);
      const tools = [{ functionDeclarations: [{ name: tool.name, description: tool.description, parametersJsonSchema: tool.parameters }] }];
      const contents: Content[] = [{ role: "user", parts: [{ text: ASK_TOOL }] }];
      const modelParts: NonNullable<Content["parts"]> = [];
      let call: FunctionCall | undefined;
      let callFinish: string | undefined;
      for await (const chunk of await client.models.generateContentStream({ model, contents, config: { tools } })) {
        modelParts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
        call = chunk.functionCalls?.[0] ?? call;
        callFinish = chunk.candidates?.[0]?.finishReason ?? callFinish;
      }
      if (!call?.name) throw new Error("expected a function call");
      contents.push({ role: "model", parts: modelParts }, { role: "user", parts: [{ functionResponse: { id: call.id, name: call.name, response: { output: result } } }] });
      const second = await client.models.generateContent({ model, contents, config: { tools } });
      return { call: { name: call.name, arguments: call.args }, callFinish, answer: second.text ?? "" };
    },
  };
}

function bedrock(base: string, key = CLIENT_KEY): SdkClient {
  // A Bedrock API key (Bearer); inbound SigV4 with an issued pair is exercised in tests/e2e/keys.test.ts.
  const client = new BedrockRuntimeClient({ region: "us-east-1", endpoint: base, maxAttempts: 1, token: { token: key }, authSchemePreference: ["httpBearerAuth"] });
  const user = (text: string): BedrockMessage => ({ role: "user", content: [{ text }] });
  return {
    name: "Bedrock Runtime",
    finish: { stop: "end_turn", tool: "tool_use" },
    async nonStream(model, text) {
      const reply = await client.send(new ConverseCommand({ modelId: model, system: [{ text: SYSTEM }], messages: [user(text)] }));
      const content = reply.output?.message?.content ?? [];
      return { text: content.map((b) => b.text ?? "").join(""), finish: reply.stopReason, outputTokens: reply.usage?.outputTokens ?? 0 };
    },
    async stream(model, text) {
      const reply = await client.send(new ConverseStreamCommand({ modelId: model, messages: [user(text)] }));
      let out = "";
      let deltas = 0;
      let finish: string | undefined;
      let outputTokens = 0;
      for await (const event of reply.stream ?? []) {
        const delta = event.contentBlockDelta?.delta?.text;
        if (delta) [out, deltas] = [out + delta, deltas + 1];
        finish = event.messageStop?.stopReason ?? finish;
        outputTokens = event.metadata?.usage?.outputTokens ?? outputTokens;
      }
      return { text: out, deltas, finish, outputTokens };
    },
    async toolRoundTrip(model, result, name) {
      const tool = readFile(name);
      const toolConfig = { tools: [{ toolSpec: { name: tool.name, description: tool.description, inputSchema: { json: tool.parameters } } }] } as ToolConfiguration;
      const messages: BedrockMessage[] = [user(ASK_TOOL)];
      const reply = await client.send(new ConverseStreamCommand({ modelId: model, messages, toolConfig }));
      let start: { toolUseId?: string; name?: string } | undefined;
      let input = "";
      let callFinish: string | undefined;
      for await (const event of reply.stream ?? []) {
        start = event.contentBlockStart?.start?.toolUse ?? start;
        input += event.contentBlockDelta?.delta?.toolUse?.input ?? "";
        callFinish = event.messageStop?.stopReason ?? callFinish;
      }
      if (!start?.toolUseId || !start.name) throw new Error("expected a toolUse block");
      const args = JSON.parse(input);
      messages.push({ role: "assistant", content: [{ toolUse: { toolUseId: start.toolUseId, name: start.name, input: args } }] }, { role: "user", content: [{ toolResult: { toolUseId: start.toolUseId, content: [{ text: result }] } }] });
      const second = await client.send(new ConverseCommand({ modelId: model, messages, toolConfig }));
      return { call: { name: start.name, arguments: args }, callFinish, answer: (second.output?.message?.content ?? []).map((b) => b.text ?? "").join("") };
    },
  };
}

function cohere(base: string, key = CLIENT_KEY): SdkClient {
  const client = new CohereClientV2({ token: key, environment: base });
  const options = { maxRetries: 0 };
  const textOf = (content: Cohere.AssistantMessageResponse["content"]) => (content ?? []).map((c) => (c.type === "text" ? c.text : "")).join("");
  return {
    name: "Cohere",
    finish: { stop: "COMPLETE", tool: "TOOL_CALL" },
    async nonStream(model, text) {
      const reply = await client.chat({ model, messages: [{ role: "system", content: SYSTEM }, { role: "user", content: text }] }, options);
      return { text: textOf(reply.message.content), finish: reply.finishReason, outputTokens: reply.usage?.tokens?.outputTokens ?? 0 };
    },
    async stream(model, text) {
      let out = "";
      let deltas = 0;
      let finish: string | undefined;
      let outputTokens = 0;
      for await (const event of await client.chatStream({ model, messages: [{ role: "user", content: text }] }, options)) {
        if (event.type === "content-delta" && event.delta?.message?.content?.text) [out, deltas] = [out + event.delta.message.content.text, deltas + 1];
        if (event.type === "message-end") [finish, outputTokens] = [event.delta?.finishReason, event.delta?.usage?.tokens?.outputTokens ?? 0];
      }
      return { text: out, deltas, finish, outputTokens };
    },
    async toolRoundTrip(model, result, name) {
      const tool = readFile(name);
      const tools: Cohere.ToolV2[] = [{ type: "function", function: tool as unknown as Cohere.ToolV2Function }];
      const messages: Cohere.ChatMessageV2[] = [{ role: "user", content: ASK_TOOL }];
      let call: { id: string; name: string; arguments: string } | undefined;
      let toolPlan = "";
      let callFinish: string | undefined;
      for await (const event of await client.chatStream({ model, messages, tools }, options)) {
        if (event.type === "tool-plan-delta") toolPlan += event.delta?.message?.toolPlan ?? "";
        if (event.type === "tool-call-start") {
          const started = event.delta?.message?.toolCalls;
          call = { id: started?.id ?? "", name: started?.function?.name ?? "", arguments: started?.function?.arguments ?? "" };
        }
        if (event.type === "tool-call-delta" && call) call.arguments += event.delta?.message?.toolCalls?.function?.arguments ?? "";
        if (event.type === "message-end") callFinish = event.delta?.finishReason;
      }
      if (!call) throw new Error("expected a tool call");
      messages.push(
        { role: "assistant", ...(toolPlan && { toolPlan }), toolCalls: [{ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }] },
        { role: "tool", toolCallId: call.id, content: result },
      );
      const second = await client.chat({ model, messages, tools }, options);
      return { call: { name: call.name, arguments: JSON.parse(call.arguments) }, callFinish, answer: textOf(second.message.content) };
    },
  };
}

function openaiResponses(base: string, key = CLIENT_KEY): SdkClient {
  const client = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
  return {
    name: "OpenAI responses",
    finish: { stop: "completed", tool: "completed" },
    async nonStream(model, text) {
      const response = await client.responses.create({ model, instructions: SYSTEM, input: text });
      return { text: response.output_text, finish: response.status, outputTokens: response.usage?.output_tokens ?? 0 };
    },
    async stream(model, text) {
      const stream = client.responses.stream({ model, input: text });
      let deltas = 0;
      stream.on("response.output_text.delta", () => (deltas += 1));
      const final = await stream.finalResponse();
      return { text: final.output_text, deltas, finish: final.status, outputTokens: final.usage?.output_tokens ?? 0 };
    },
    async toolRoundTrip(model, result, name) {
      const tool = readFile(name);
      const tools: OpenAI.Responses.FunctionTool[] = [{ type: "function", ...tool, parameters: { ...tool.parameters }, strict: false }];
      const input: OpenAI.Responses.ResponseInputItem[] = [{ role: "user", content: ASK_TOOL }];
      const first = await client.responses.stream({ model, input, tools }).finalResponse();
      const call = first.output.find((item) => item.type === "function_call");
      if (call?.type !== "function_call") throw new Error("expected a function_call item");
      input.push(...(first.output as OpenAI.Responses.ResponseInputItem[]), { type: "function_call_output", call_id: call.call_id, output: result });
      const second = await client.responses.create({ model, input, tools });
      return { call: { name: call.name, arguments: JSON.parse(call.arguments) }, callFinish: first.status, answer: second.output_text };
    },
  };
}

/** One constructor per SDK, given the gateway's data-plane base URL. */
/** Each makes its SDK's client for the gateway at `base`, presenting `key` (default CLIENT_KEY). */
export const SDK_CLIENTS: readonly ((base: string, key?: string) => SdkClient)[] = [openaiChat, anthropic, gemini, bedrock, cohere, openaiResponses];
