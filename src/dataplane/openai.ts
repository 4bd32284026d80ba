// OpenAI chat ingress, minimal: a non-streamed completion from the mock provider. The data plane core
// replaces this with the protocol adapter and the upstream client.
import { controller } from "../http/elysia.ts";
import type { ConfigHolder } from "../config/snapshot.ts";
import { authenticateIngress } from "../auth/ingress-chain.ts";
import { mockChatCompletion } from "../providers/mock.ts";

/** OpenAI's error shape, so the OpenAI SDK raises its own typed errors. */
export function openaiError(status: number, message: string, type: string, code: string | null, param: string | null = null): Response {
  return Response.json({ error: { message, type, param, code } }, { status });
}

async function chatCompletion(holder: ConfigHolder, request: Request, now: () => number): Promise<Response> {
  const snapshot = holder.current;
  if (!authenticateIngress(snapshot, request)) {
    return openaiError(401, "Incorrect API key provided, or no API key.", "invalid_request_error", "invalid_api_key");
  }
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    return openaiError(400, "We could not parse the JSON body of your request.", "invalid_request_error", null);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return openaiError(400, "The request body must be a JSON object.", "invalid_request_error", null);
  }
  const { model, messages, stream } = body as { model?: unknown; messages?: unknown; stream?: unknown };
  if (typeof model !== "string" || model === "") return openaiError(400, "you must provide a model parameter", "invalid_request_error", null, "model");
  if (!Array.isArray(messages) || messages.length === 0) {
    return openaiError(400, "'messages' must be a non-empty array", "invalid_request_error", null, "messages");
  }
  const pool = snapshot.pools.get(model);
  if (!pool) return openaiError(404, `The model \`${model}\` does not exist or you do not have access to it.`, "invalid_request_error", "model_not_found", "model");
  if (stream === true) return openaiError(400, "streaming is not available in this build yet", "invalid_request_error", "unsupported_parameter", "stream");
  const member = pool.members[0];
  if (!member || member.lane.provider.protocol !== "mock") {
    return openaiError(501, `pool ${model} routes to a ${member?.lane.provider.protocol ?? "missing"} provider, which this build cannot call yet`, "server_error", "egress_unavailable");
  }
  return Response.json(await mockChatCompletion(member.lane, model, messages, now));
}

export const openaiRoutes = (holder: ConfigHolder, now: () => number) =>
  controller("dataplane.openai")
    .post("/v1/chat/completions", ({ request }) => chatCompletion(holder, request, now), { parse: "none" })
    .post("/chat/completions", ({ request }) => chatCompletion(holder, request, now), { parse: "none" });
