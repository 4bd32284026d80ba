// The shapes of GET /stats (design/telemetry.md, "GET /stats"; built by routing/views.ts statsView, which
// the data listener's /stats answers with too) and of GET /events's `breaker` event.
import { Type } from "@sinclair/typebox";
import { Nullable } from "./views.ts";

const Uint = Type.Integer({ minimum: 0 });
const BreakerStateView = Type.Union([Type.Literal("closed"), Type.Literal("half_open"), Type.Literal("open")]);
const CellView = {
  state: BreakerStateView,
  cooldown_remaining_s: Type.Number({ minimum: 0, description: "seconds until the cell may be tried again, in tenths" }),
  streak: Type.Integer({ minimum: 0, description: "consecutive failures" }),
};

export const StatsView = Type.Object({
  lanes: Type.Array(
    Type.Object({
      lane: Type.String({ description: "the models: key" }),
      model: Type.String({ description: "the upstream model" }),
      provider: Type.String(),
      max_concurrent: Nullable(Uint),
      inflight: Uint,
      free_slots: Nullable(Uint),
      ok: Uint,
      err: Uint,
      usable: Type.Boolean(),
      dead: Type.Boolean({ description: "a hard-down fault (credential, quota) benches it in some pool" }),
      dead_reason: Nullable(Type.String()),
      ...CellView,
      budget: Nullable(Type.Integer({ minimum: 0, description: "what is left of max_requests" })),
    }, { description: "a lane's breaker fields are its (direct) cell's" }),
  ),
  pools: Type.Record(
    Type.String(),
    Type.Object({
      on_exhausted: Type.String(),
      members: Type.Array(Type.Object({ lane: Type.String(), weight: Type.Number(), usable: Type.Boolean(), ...CellView })),
    }),
  ),
});

export const BreakerEvent = Type.Object({
  pool: Type.String({ description: "the pool, or (direct) for a lane's own cell" }),
  lane: Type.String(),
  state: BreakerStateView,
  ts: Type.String({ description: "when it changed, RFC 3339 UTC with milliseconds" }),
});
