// Direct routes: an OpenAI chat body sent to one lane, skipping pool selection.
// POST /{provider}/{model}: any model name at a configured provider; POST /{model}: a model alias.
import type { Snapshot } from "../config/snapshot.ts";
import { controller } from "../http/elysia.ts";
import { malformedEscape } from "../http/paths.ts";
import { irError } from "../ir/index.ts";
import { adapterFor } from "../protocols/registry.ts";
import type { Lane } from "../routing/lane.ts";
import { modelNameProblem } from "./model-name.ts";
import type { PipelineDeps } from "./exchange.ts";
import { handleModelRequest } from "./pipeline.ts";
import { unknownRoute } from "./unknown.ts";

/** Only a URL holding a `%` is parsed for the check. */
const malformedPath = (request: Request) => request.url.includes("%") && malformedEscape(new URL(request.url).pathname);

function adHocLane(snapshot: Snapshot, providerName: string, model: string): Lane | undefined {
  const provider = snapshot.providers.get(providerName);
  if (!provider) return undefined;
  // A model the config already declares at this provider keeps its limits; otherwise an ad-hoc lane.
  for (const lane of snapshot.lanes.values()) if (lane.provider === provider && lane.upstreamModel === model) return lane;
  // The model name is the caller's text: one lane name per provider ("<provider>/*") keeps the breaker
  // state and the metric series it keys bounded, whatever names callers send.
  return { name: `${providerName}/*`, provider, upstreamModel: model, contextWindow: null, maxConcurrent: null, maxRequests: null };
}


export function directRoutes(deps: PipelineDeps) {
  const openai = adapterFor("openai")!;
  const refuse = (problem: string) => openai.encodeError(irError("invalid_request", problem, { param: "model" }));
  const MALFORMED = "model: the path holds a malformed percent-escape";
  return controller("dataplane.direct")
    // The router needs one name for the first segment of both: `target` is a provider or a model alias.
    .post("/:target/:model", ({ request, params }) => {
      if (malformedPath(request)) return refuse(MALFORMED);
      // No provider of that name: a path this gateway does not serve (POST /v1/embeddings), not a model.
      if (!deps.holder.current.providers.has(params.target)) return unknownRoute(request, `\`${params.target}\` is not a provider of POST /{provider}/{model}`);
      // The model goes into the upstream URL (Gemini, Bedrock): refused before anything is read or sent.
      const problem = modelNameProblem(params.model);
      if (problem) return refuse(problem);
      return handleModelRequest(deps, openai, request, { context: { pathModel: `${params.target}/${params.model}` }, lane: (snapshot) => adHocLane(snapshot, params.target, params.model) });
    }, { parse: "none" })
    .post("/:target", ({ request, params }) => {
      if (malformedPath(request)) return refuse(MALFORMED);
      return handleModelRequest(deps, openai, request, { context: { pathModel: params.target }, lane: (snapshot) => snapshot.lanes.get(params.target) });
    }, { parse: "none" });
}
