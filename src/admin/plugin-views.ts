// Plugin shapes as TypeBox schemas (spec InstallPluginReq / InspectPluginReq; gaps.md "Plugins").
// The request bodies are checked in the handler (admin/plugins.ts), so a refused install is audited.
import { Type, type Static } from "@sinclair/typebox";

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

/** InstallPluginReq and InspectPluginReq: the same two members. */
export const PluginReq = Type.Object(
  {
    file: Type.String({ pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\\.tar\\.gz$", "x-expected": "a bare file name ending in .tar.gz (no folder)" }),
    tarball_b64: Type.String({ minLength: 1, description: "base64 of the signed .tar.gz" }),
  },
  { additionalProperties: false },
);
export type PluginReq = Static<typeof PluginReq>;

export const PluginInspectView = Type.Object({
  name: Nullable(Type.String()),
  version: Nullable(Type.String()),
  kind: Nullable(Type.String()),
  publisher: Nullable(Type.String()),
  sha256: Type.String({ description: "of the tarball as sent" }),
  signature_valid: Type.Boolean(),
  allowed: Type.Boolean(),
  files: Type.Array(Type.Object({ path: Type.String(), sha256: Type.String(), size: Type.Integer({ minimum: 0 }) })),
  problems: Type.Array(Type.String(), { description: "every failed check; empty when the plugin would install" }),
});

export const PluginInstallView = Type.Composite([PluginInspectView, Type.Object({ installed: Type.Literal(true), path: Type.String() })]);

/** POST /plugins/reload: the exporters now running. */
export const PluginsReloadView = Type.Object({
  reloaded: Type.Literal(true),
  exporters: Type.Array(Type.Object({ name: Type.String(), module: Type.String(), streams: Type.Array(Type.String()) })),
});
