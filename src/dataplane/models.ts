// GET /v1/models: the routable names (named pools and bare model aliases), in OpenAI's list shape, or
// in Anthropic's when the caller is an Anthropic SDK (it always sends anthropic-version).
import type { ConfigHolder } from "../config/snapshot.ts";
import { controller } from "../http/elysia.ts";

export const modelsRoutes = (holder: ConfigHolder, startedAt: number) =>
  controller("dataplane.models").get("/v1/models", ({ request }) => {
    const names = [...holder.current.pools.keys()].sort();
    if (request.headers.has("anthropic-version")) {
      const createdAt = new Date(startedAt * 1000).toISOString();
      const data = names.map((id) => ({ type: "model", id, display_name: id, created_at: createdAt }));
      return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
    }
    return { object: "list", data: names.map((id) => ({ id, object: "model", created: startedAt, owned_by: "gateway" })) };
  });
