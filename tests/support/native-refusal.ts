// One raw model call per protocol, each with that vendor's own credential header, and the refusal each
// protocol's SDK recognises: for tests that ask whether a credential is refused in the caller's own shape.
import { expect } from "bun:test";

export type Call = (credential: string, model?: string) => Promise<Response>;

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Every protocol's call against the data plane at `base`, by name (the name tells expectNativeRefusal the protocol). */
export function nativeCalls(base: () => string, defaultModel = "chat"): Record<string, Call> {
  const data = (path: string, headers: Record<string, string>, body: unknown) => fetch(`${base()}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  return {
    "OpenAI Bearer": (t, model = defaultModel) => data("/v1/chat/completions", bearer(t), { model, messages: [{ role: "user", content: "hi" }] }),
    "Anthropic x-api-key": (t, model = defaultModel) => data("/v1/messages", { "x-api-key": t, "anthropic-version": "2023-06-01" }, { model, max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
    "Gemini x-goog-api-key": (t, model = defaultModel) => data(`/v1beta/models/${model}:generateContent`, { "x-goog-api-key": t }, { contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
    "Gemini ?key=": (t, model = defaultModel) => data(`/v1beta/models/${model}:generateContent?key=${encodeURIComponent(t)}`, {}, { contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
    "Cohere Bearer": (t, model = defaultModel) => data("/v2/chat", bearer(t), { model, messages: [{ role: "user", content: "hi" }] }),
    "Responses Bearer": (t, model = defaultModel) => data("/v1/responses", bearer(t), { model, input: "hi" }),
    "Bedrock Bearer": (t, model = defaultModel) => data(`/model/${model}/converse`, bearer(t), { messages: [{ role: "user", content: [{ text: "hi" }] }] }),
  };
}

/** The native refusal each protocol's SDK recognises, as status and a member of its error body. */
export async function expectNativeRefusal(name: string, response: Response, kind: "authentication" | "permission"): Promise<void> {
  const body = (await response.json()) as any;
  const auth = kind === "authentication";
  if (name.startsWith("OpenAI") || name.startsWith("Responses")) {
    expect(response.status).toBe(auth ? 401 : 403);
    expect(body.error.type).toBe(auth ? "invalid_request_error" : "permission_error");
  } else if (name.startsWith("Anthropic")) {
    expect(response.status).toBe(auth ? 401 : 403);
    expect(body).toMatchObject({ type: "error", error: { type: auth ? "authentication_error" : "permission_error" } });
  } else if (name.startsWith("Gemini")) {
    expect(response.status).toBe(auth ? 401 : 403);
    expect(body.error.status).toBe(auth ? "UNAUTHENTICATED" : "PERMISSION_DENIED");
  } else if (name.startsWith("Cohere")) {
    expect(response.status).toBe(auth ? 401 : 403);
    expect(typeof body.message).toBe("string");
  } else {
    expect(response.status).toBe(403);
    expect(response.headers.get("x-amzn-errortype")).toBe(auth ? "UnrecognizedClientException" : "AccessDeniedException");
  }
}
