// GET /config/source and GET /config/versions/{v}/source (design/console.md, Configuration): a version as
// the operator wrote it, base with the overlay as YAML, each secret as its reference (config/source.ts),
// what the console edits and validates, and what GET /config/diff compares line by line.
import { Type } from "@sinclair/typebox";
import { jsonController } from "../http/elysia.ts";
import { GatewayError } from "../http/errors.ts";
import { lifecycleOf, retained } from "./config-changes.ts";
import type { AdminDeps } from "./deps.ts";

export const ConfigSourceView = Type.Object({
  version: Type.Integer({ minimum: 0, description: "the config_version" }),
  yaml: Type.String({
    description:
      "base with the overlay (without the command line's overrides), as YAML; a value taken from the environment as its ${VAR}, a secret as its reference ({env}, {file} or ${VAR}); a literal secret, a settings value with no schema (a hook's) and a URL's userinfo as <redacted-by-gateway>",
  }),
});

export const configSourceController = (deps: AdminDeps) =>
  jsonController("admin.config-source")
    .get(
      "/config/source",
      () => {
        const lifecycle = lifecycleOf(deps);
        const record = lifecycle.version(lifecycle.current.version);
        if (!record) throw new GatewayError("internal", `config version ${lifecycle.current.version} is not retained`);
        return { version: record.version, yaml: lifecycle.source(record) };
      },
      { response: { 200: ConfigSourceView } },
    )
    .get(
      "/config/versions/:v/source",
      ({ params }) => {
        const lifecycle = lifecycleOf(deps);
        const record = retained(lifecycle, params.v, "version");
        return { version: record.version, yaml: lifecycle.source(record) };
      },
      { response: { 200: ConfigSourceView } },
    );
