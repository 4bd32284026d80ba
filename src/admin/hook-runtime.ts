// The hook runtime as the admin routes see it, until the runtime lands in this build: no hook is loaded,
// so health says so, status has no report, and no module schema is known. The lead swaps this file for
// the runtime's own view at merge (src/hooks); nothing else in src/admin names it.
import type { HookRuntimeView } from "../hooks/types.ts";

export const defaultHookRuntime: HookRuntimeView = {
  health: () => ({ reachable: false, detail: "hook runtime not in this build yet" }),
  reported: async () => undefined,
  schema: () => null,
  metrics: () => [],
};
