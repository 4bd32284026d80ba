// GET /v1/models: the routable names (named pools and bare model aliases), in OpenAI's list shape, or
// in Anthropic's when the caller is an Anthropic SDK (it always sends anthropic-version). Like a model
// call it needs a credential the ingress chain admits (open when the chain is), and a key limited to some
// pools (allowed_pools) sees only those: no caller learns a name it could not call.
import type { IngressAuth } from "../auth/ingress-chain.ts";
import type { ConfigHolder } from "../config/snapshot.ts";
import { controller } from "../http/elysia.ts";
import { irError } from "../ir/index.ts";
import { anthropic as anthropicAdapter } from "../protocols/anthropic/index.ts";
import { openai } from "../protocols/openai/index.ts";
import { anyClientCredential } from "../protocols/registry.ts";

export const modelsRoutes = (holder: ConfigHolder, startedAt: number, auth: IngressAuth) =>
  controller("dataplane.models").get("/v1/models", async ({ request }) => {
    const snapshot = holder.current;
    const anthropic = request.headers.has("anthropic-version");
    const principal = await auth.authenticate(snapshot, { token: anyClientCredential(request) });
    if (!principal) return (anthropic ? anthropicAdapter : openai).encodeError(irError("authentication", "Invalid or missing API key."));
    if (principal.refusal !== undefined) return (anthropic ? anthropicAdapter : openai).encodeError(irError("permission", principal.refusal));
    const allowed = principal.allowedPools;
    const names = [...snapshot.pools.keys()].filter((name) => !allowed || allowed.includes(name)).sort();
    if (anthropic) {
      const createdAt = new Date(startedAt * 1000).toISOString();
      const data = names.map((id) => ({ type: "model", id, display_name: id, created_at: createdAt }));
      return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
    }
    return { object: "list", data: names.map((id) => ({ id, object: "model", created: startedAt, owned_by: "gateway" })) };
  });
