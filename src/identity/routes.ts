// The token exchange's routes on the data listener (design/identity.md): never behind auth.chain, and
// ahead of the direct route POST /{provider}/{model}, which `/auth/token` would otherwise reach. Identity
// providers are being built (issue 18): a config cannot name one yet (`identity-providers` is refused), so
// these answer what the design says of a gateway with none: an exchange is a 400 naming the cause, and the
// sign-in page a 404 (no provider offers browser sign-in). Nothing here is cached by a client or a proxy.
import { controller } from "../http/elysia.ts";
import { errorResponse } from "../http/errors.ts";

const NO_STORE = { "cache-control": "no-store" };
const NO_PROVIDER = "no identity provider is configured on this gateway, so there is no token to exchange (identity-providers)";

export const identityRoutes = () =>
  controller("identity.routes")
    .post("/auth/token", () => errorResponse("invalid_request", NO_PROVIDER, { headers: NO_STORE }), { parse: "none" })
    .post("/auth/token/refresh", () => errorResponse("invalid_request", NO_PROVIDER, { headers: NO_STORE }), { parse: "none" })
    .get("/auth/token", () => errorResponse("not_found", "no identity provider offers browser sign-in on this gateway", { headers: NO_STORE }));
