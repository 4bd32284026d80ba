// GET /session: who the caller's credential is and what it may do, so a client (the operator console,
// design/console.md) shows only the controls its scope allows instead of learning it from a 403.
import { Type, type Static } from "@sinclair/typebox";
import { jsonController } from "../http/elysia.ts";
import { principalOf, scopeOf } from "./principal.ts";

export const SessionView = Type.Object({
  principal: Type.String({ description: "the audit principal: admin, an admin token's principal, an identity, or anonymous (open plane)" }),
  scope: Type.Union([Type.Literal("full"), Type.Literal("read-only")], { description: "full: may change things; read-only: GET only" }),
});
export type SessionView = Static<typeof SessionView>;

export const sessionController = () =>
  jsonController("admin.session").get("/session", ({ request }): SessionView => ({ principal: principalOf(request), scope: scopeOf(request) }), { response: { 200: SessionView } });
