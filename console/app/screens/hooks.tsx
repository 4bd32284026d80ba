// Hooks (design/console.md): hooks and plugins with their health and status.
import { admin } from "../api.ts";
import { ErrorNote, Loading, Table, useLoad } from "../ui.tsx";

type Hook = Awaited<ReturnType<typeof admin.getHooks>>[number];
type Health = Awaited<ReturnType<typeof admin.getHooksByNameHealth>>;
type Status = Awaited<ReturnType<typeof admin.getHooksByNameStatus>>;

/** Health and status are read for the first 100 hooks. */
async function loadHooks(): Promise<{ hooks: Hook[]; health: Map<string, Health | string>; status: Map<string, Status | string> }> {
  const hooks = await admin.getHooks();
  const health = new Map<string, Health | string>();
  const status = new Map<string, Status | string>();
  await Promise.all(
    hooks.slice(0, 100).map(async (h) => {
      health.set(h.name, await admin.getHooksByNameHealth(h.name).catch((e: Error) => e.message));
      status.set(h.name, await admin.getHooksByNameStatus(h.name).catch((e: Error) => e.message));
    }),
  );
  return { hooks, health, status };
}

export function Hooks() {
  const loaded = useLoad(loadHooks, [], 10_000);
  return (
    <>
      <h1>Hooks</h1>
      <ErrorNote error={loaded.error} />
      {!loaded.data && !loaded.error && <Loading what="hooks" />}
      {loaded.data && (
        <Table
          caption="Hooks"
          rows={loaded.data.hooks}
          rowKey={(h) => h.name}
          empty="No hooks are registered."
          columns={[
            { label: "Name", cell: (h) => h.name },
            { label: "Kind", cell: (h) => h.kind },
            { label: "Transport", cell: (h) => `${h.transport.kind}${h.transport.target ? ` ${h.transport.target}` : ""}` },
            { label: "On error", cell: (h) => h.on_error },
            { label: "Global", cell: (h) => (h.global ? "yes" : "no") },
            {
              label: "Health",
              cell: (h) => {
                const health = loaded.data!.health.get(h.name);
                if (typeof health === "string" || health === undefined) return health ?? "—";
                const state = health.reachable === null ? "unchecked" : health.reachable ? "reachable" : "unreachable";
                return `${state}${health.detail ? `: ${health.detail}` : ""}`;
              },
            },
            {
              label: "Settings",
              cell: (h) => {
                const status = loaded.data!.status.get(h.name);
                if (typeof status === "string" || status === undefined) return status ?? "—";
                const drift = status.drift === null ? "not reported" : status.drift ? `drift: ${status.drift_keys.join(", ")}` : "in step";
                return `version ${status.desired.settings_version}, ${drift}`;
              },
            },
          ]}
        />
      )}
    </>
  );
}
