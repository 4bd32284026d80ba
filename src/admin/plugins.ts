// Signed plugins on the admin plane: POST /plugins/inspect (a dry run: every check, nothing written,
// read-only scope) and POST /plugins (the same checks, then the install; full scope; audited
// `plugin.install`). A plugin with any problem is a 400 naming every problem. POST /plugins/reload
// re-reads the config file's `export:` and swaps the running exporters (audited `plugin.reload`).
import { fsPromises } from "../store/fs-promises.ts";
import { jsonController } from "../http/elysia.ts";
import { GatewayError } from "../http/errors.ts";
import type { InspectedPlugin } from "../plugins/index.ts";
import { refuseBody } from "./audited.ts";
import type { AdminDeps } from "./deps.ts";
import { requestBody } from "./openapi.ts";
import { shape } from "./pages.ts";
import { PluginInspectView, PluginInstallView, PluginReq, PluginsReloadView } from "./plugin-views.ts";
import { lifecycleOf } from "./config-changes.ts";
import { principalOf } from "./principal.ts";

const ACTION = "plugin.install";
const RELOAD = "plugin.reload";

// Loaded on the first plugin request: the tar reader and ed25519 cost every start ~2 ms of its ~20 otherwise.
const plugins = () => import("../plugins/index.ts");

/** The body's tarball, or the 400 message. */
async function tarballOf(body: unknown): Promise<{ ok: true; tarball: Buffer } | { ok: false; message: string }> {
  const checked = shape<PluginReq>(PluginReq, body);
  if (!checked.ok) return checked;
  const tarball = (await plugins()).strictBase64(checked.value.tarball_b64);
  return tarball ? { ok: true, tarball } : { ok: false, message: "/tarball_b64: not strict base64 (A-Z a-z 0-9 + /, padded with =, no whitespace)" };
}

async function install(deps: AdminDeps, request: Request, inspected: InspectedPlugin) {
  const { manifest, files } = inspected.accepted!;
  const { installPlugin, pluginResource, trustPosture } = await plugins();
  const dir = trustPosture(deps.holder.current.config).dir;
  const plan = async () => {
    let installed;
    try {
      installed = await installPlugin(dir, manifest, files);
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      throw new GatewayError("internal", `the plugin could not be written under plugins.dir: ${(error as Error).message}`);
    }
    return {
      undo: async () => void (installed.written && (await fsPromises().rm(installed.path, { recursive: true, force: true }))),
      apply: () => ({ ...inspected.view, installed: true as const, path: installed.path }),
    };
  };
  const attempt = { action: ACTION, resource: pluginResource(inspected.view), principal: principalOf(request) };
  if (deps.audit) return deps.audit.commit(attempt, plan);
  return (await plan()).apply();
}

export const pluginsController = (deps: AdminDeps) =>
  jsonController("admin.plugins")
    .post(
      "/plugins/inspect",
      async ({ body }) => {
        const sent = await tarballOf(body);
        if (!sent.ok) throw new GatewayError("invalid_request", sent.message);
        const { inspectTarball, trustPosture } = await plugins();
        return (await inspectTarball(sent.tarball, trustPosture(deps.holder.current.config))).view;
      },
      { detail: { ...requestBody(PluginReq), summary: "check a signed plugin tarball against the trust posture; writes nothing" }, response: { 200: PluginInspectView } },
    )
    .post(
      "/plugins",
      async ({ body, request, set }) => {
        const sent = await tarballOf(body);
        if (!sent.ok) return refuseBody(deps, request, ACTION, "plugin", sent.message);
        const { inspectTarball, pluginResource, trustPosture } = await plugins();
        const inspected = await inspectTarball(sent.tarball, trustPosture(deps.holder.current.config));
        if (!inspected.accepted) return refuseBody(deps, request, ACTION, pluginResource(inspected.view), `plugin not installed: ${inspected.view.problems.join("; ")}`);
        const view = await install(deps, request, inspected);
        set.status = 201;
        return view;
      },
      { detail: { ...requestBody(PluginReq), summary: "install a signed plugin tarball into plugins.dir" }, response: { 201: PluginInstallView } },
    )
    .post(
      "/plugins/reload",
      async ({ request }) => {
        const principal = principalOf(request);
        const telemetry = deps.telemetry;
        if (!telemetry) throw new GatewayError("internal", "exporters are not available in this process");
        // The file as it is now, checked whole (every error with its path); the config itself is not swapped.
        const planned = lifecycleOf(deps).reload({ principal, summary: "plugin.reload" });
        if (!planned.ok) return refuseBody(deps, request, RELOAD, "plugins", planned.errors ? `config file is invalid: ${planned.errors.join("; ")}` : planned.message);
        let started;
        try {
          started = await telemetry.build(planned.snapshot.export);
        } catch (error) {
          return refuseBody(deps, request, RELOAD, "plugins", (error as Error).message);
        }
        const exporters = started.map((e) => ({ name: e.name, module: e.module, streams: [...e.streams] }));
        const plan = async () => ({ apply: () => ({ reloaded: true as const, exporters }) });
        let answer;
        try {
          answer = deps.audit ? await deps.audit.commit({ action: RELOAD, resource: "plugins", principal }, plan) : (await plan()).apply();
        } catch (error) {
          // No entry, no swap: the instances started for it (a bound listener) are closed, the running ones kept.
          await Promise.all(started.map((e) => e.close().catch(() => undefined)));
          throw error;
        }
        await telemetry.swap(started);
        return answer;
      },
      { detail: { summary: "re-read export: from the config file and swap the running exporters (the old ones flushed and closed)" }, response: { 200: PluginsReloadView } },
    );
