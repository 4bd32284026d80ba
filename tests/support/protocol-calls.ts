// One plain (non-stream) request in each of the six callers' protocols, as its SDK sends it: the path,
// the credential header and the body. For tests that ask every protocol the same question (is this
// refusal in the caller's own shape?) and look only at the answer.
export type CallerProtocol = "openai" | "anthropic" | "gemini" | "bedrock" | "cohere" | "responses";

export function protocolCalls(token: string, model: string, text: string): Record<CallerProtocol, readonly [path: string, headers: Record<string, string>, body: unknown]> {
  const messages = [{ role: "user", content: text }];
  return {
    openai: ["/v1/chat/completions", { authorization: `Bearer ${token}` }, { model, messages }],
    anthropic: ["/v1/messages", { "x-api-key": token, "anthropic-version": "2023-06-01" }, { model, max_tokens: 16, messages }],
    gemini: [`/v1beta/models/${model}:generateContent`, { "x-goog-api-key": token }, { contents: [{ role: "user", parts: [{ text }] }] }],
    bedrock: [`/model/${model}/converse`, { authorization: `Bearer ${token}` }, { messages: [{ role: "user", content: [{ text }] }] }],
    cohere: ["/v2/chat", { authorization: `Bearer ${token}` }, { model, messages }],
    responses: ["/v1/responses", { authorization: `Bearer ${token}` }, { model, input: text }],
  };
}
