// GET /replicas (design/replicas.md, "Views"): the replicas of this gateway's store, every one seen in the
// last 24 h. A fleet's come from its database (store/postgres/replicas.ts); a single process answers itself.
import { Type, type Static } from "@sinclair/typebox";
import { jsonController } from "../http/elysia.ts";
import type { AdminDeps } from "./deps.ts";

export const ReplicaView = Type.Object({
  id: Type.String({ description: "this run's id: replica_<hex> in a fleet, local for a single process" }),
  host: Type.String({ description: "the machine's host name" }),
  listen: Type.String({ description: "its data listener, host:port" }),
  started_at: Type.Integer({ description: "epoch seconds" }),
  last_seen: Type.Integer({ description: "epoch seconds of its last heartbeat (every 2 s); the database's clock in a fleet" }),
  version: Type.String(),
  config_version: Type.Integer(),
  state: Type.Union([Type.Literal("up"), Type.Literal("gone")], { description: "gone: silent for 10 s, or stopped" }),
});
export type ReplicaView = Static<typeof ReplicaView>;

export const ReplicaList = Type.Object({ items: Type.Array(ReplicaView) });

/** Where the list comes from; set by the boot once the listeners are up (until then, none). */
export interface ReplicaDirectory {
  list(): Promise<ReplicaView[]>;
}

export const replicasController = (deps: AdminDeps) =>
  jsonController("admin.replicas").get("/replicas", async () => ({ items: (await deps.replicas?.list()) ?? [] }), { response: { 200: ReplicaList } });
