// Generates docs/admin-api.md from the admin API's OpenAPI document (the one GET /openapi.json serves),
// so the guide cannot drift from the routes and schemas. `npx bun scripts/admin-api-doc.ts` prints it;
// `--write` rewrites the file. A unit test fails when the committed file and this output differ, or
// when a route has no sentence below.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ADMIN_PREFIX } from "../src/admin/index.ts";
import { buildAdminApp } from "../src/admin/router.ts";
import type { AdminDeps } from "../src/admin/deps.ts";
import { openApiDocument } from "../src/admin/openapi.ts";
import { createLogger } from "../src/telemetry/logger.ts";

export const DOC_PATH = join(import.meta.dir, "..", "docs", "admin-api.md");

/** One sentence per route: what it is for. The schemas say the rest. */
export const PURPOSE: Readonly<Record<string, string>> = {
  "GET /info": "Version, build, uptime, topology, config_persistence and config_version.",
  "GET /config": "The effective config, with no secret (key names only for settings bags).",
  "POST /config/validate": "Dry run: `200` with `ok` and every error at once; only a malformed body is `400`.",
  "POST /config/apply": "Validates and swaps a whole config (live at once, not written to disk); `config_version` +1.",
  "POST /config/reload": "Re-reads the config file, merges the overlay, swaps; sockets, TLS and the store stay as booted.",
  "POST /config/rollback": "Restores a retained version's config as a new version.",
  "GET /config/versions": "Retained config versions, newest first (cursor pages).",
  "GET /config/versions/{v}": "One retained version with its hooks and global hooks.",
  "GET /config/diff": "Hook differences between two retained versions (`from`, `to`), and `lines`, the line diff of their sources (at most 20000 lines; `truncated` past that or past a 1 MiB source).",
  "GET /config/source": "The running config as written: base with the overlay as YAML, each secret as its reference (`${VAR}`, `{env}`, `{file}`), a literal secret, a hook's settings value and a URL's userinfo as `<redacted>`.",
  "GET /config/versions/{v}/source": "A retained version's source, as `GET /config/source` shows the running one.",
  "GET /config/settings": "The settings overlay (operator-set root sections).",
  "PUT /config/settings": "Merges root sections into the overlay (`null` removes one), stores it durably, swaps the live ones; `reload_to_apply` names those waiting for a restart.",
  "POST /restart": "`202`, then the process drains and starts again with the same binary, arguments and environment.",
  "GET /auth": "The ingress auth chain.",
  "GET /admin-auth": "The admin auth chain.",
  "PUT /admin-auth": "Sets the admin chain; `[]` needs `allow_open: true`; a new config version, not written to disk.",
  "POST /auth/cache/flush": "Drops cached credential decisions (all, or one module's).",
  "GET /audit": "Audit entries, newest first (cursor pages).",
  "GET /audit/verify": "Walks the audit hash chain; names the first broken entry.",
  "POST /keys": "Mints a virtual key (`201`); the token is shown once.",
  "GET /keys": "Keys by creation, cursor pages; `include=tombstoned` adds deleted ones.",
  "GET /keys/{id}": "One key.",
  "PATCH /keys/{id}": "Three-state update of name, enabled, allowed_pools, labels, group.",
  "DELETE /keys/{id}": "Tombstones the key (refused at once; history kept).",
  "POST /keys/{id}/revoke": "Revokes the key (refused at once; idempotent).",
  "GET /keys/{id}/usage": "The key's metering: tokens, spend, budget and rate headroom.",
  "GET /groups": "Every group, config-file and API.",
  "GET /groups/{name}": "One group.",
  "POST /groups": "Creates a group (`201`).",
  "PATCH /groups/{name}": "Updates an API group's enabled, limits, child_default.",
  "DELETE /groups/{name}": "Deletes an API group with no children and no bound keys.",
  "GET /groups/{name}/usage": "The group's buckets in resolved order with caps and remaining budget.",
  "POST /plugins/inspect": "Dry run of a signed plugin tarball against the trust posture: every check's outcome; writes nothing.",
  "POST /plugins/reload": "Re-reads `export:` from the config file, checks the whole file, and swaps the running exporters (the old ones flushed and closed); an invalid file is a 400 naming every error, the running exporters kept. Audited `plugin.reload`.",
  "POST /plugins": "Installs a signed plugin tarball into `plugins.dir` (`201`); any failed check is a `400` naming every one.",
  "GET /usage/keys": "Per-key usage rows (`from`, `to` epoch seconds), by spend.",
  "GET /usage/series": "Requests, tokens (all tiers) and spend over time, one series per model, key id or group (`by`, default `model`; keys bound to no group are `(no group)`; a request is under the model the caller named, its tokens under the model that served it), over `range` ending now (default `24h`) at a fixed step aligned to it: `1h` 60 s, `24h` 15 min, `7d` 1 h, `30d` 6 h. `from` (inclusive) and `to` (exclusive, the end of the step in progress) are epoch seconds, as is each point's `t` (its step's start); steps with no usage are left out. At most 20 series by total spend (ties: tokens, then name), the rest summed into one named `(other)`, last. Spend is priced with the current rate card as `GET /usage/keys` prices it: a series' total equals the keys' rows for [`from`, `to`); each point's cents are rounded down on their own, so points can add up to a little less. A bad `by` or `range` is a `400` naming it and the allowed values. On sqlite the usage views read on one worker thread beside the data plane, one read at a time: a read with 8 already waiting is a `429` and one not answered within 30 s a `503`, both with `Retry-After`.",
  "GET /usage/today": "Requests, tokens (all tiers) and spend since 00:00 UTC today (`from`, epoch seconds) of every key: the whole fleet's where the store is shared.",
  "GET /hooks": "Every hook (HookView: settings key names, never values).",
  "GET /hooks/{name}": "One hook.",
  "PUT /hooks/{name}": "Registers or replaces a hook from a HookCfg: a new config version, audited `hook.register`.",
  "DELETE /hooks/{name}": "Removes a hook (`409` while another hook falls back to it or a pool lists it): a new config version, audited `hook.delete`.",
  "GET /hooks/{name}/health": "Whether the hook resolves to a loaded hook module (opens no connection).",
  "GET /hooks/{name}/status": "Desired settings (key names, settings_version) against what the hook reports within 1 s; drift.",
  "GET /hooks/{name}/schema": "The hook module's settings JSON Schema, or null.",
  "GET /session": "Who the credential is and its scope (`full` or `read-only`): the operator console shows a read-only principal no control that would change anything (docs/console.md).",
  "GET /replicas": "The replicas of this gateway's store seen in the last 24 h, each `up` or `gone` (silent 10 s, or stopped): a fleet's from its PostgreSQL, a single process itself as `local` (docs/operations.md, \"Running several replicas\").",
  "GET /requests": "The last 1,000 request-log records (the record of the logs exporters), kept in memory whether or not an exporter runs, newest first; filters `key_id`, `group`, `model`, `status`, `outcome`, and `limit` (1-1000, default 100). Without a logs exporter or the access line, an unmetered request's `usage` is null (the open door reads no usage for it).",
  "GET /events": "Server-sent events, read with `fetch` and the credential in its header: `event: request` (a request-log record) as each request ends, `event: breaker` (`{pool, lane, state, ts}`) when a breaker cell changes state, a `: keepalive` comment every 15 s. At most 16 streams at once (the 17th is `429`); a reader 1,000 events behind gets `event: overflow` and its stream ends (re-read `GET /requests`, reconnect). Streams end when the gateway stops.",
  "GET /stats": "The data listener's `GET /stats` document (lanes and pools with their breaker states), for an admin credential.",
  "GET /openapi.json": "This API's OpenAPI 3.1 description.",
};

type Json = Record<string, any>;

/** A schema in a few words: `string`, `integer >= 0`, `KeyView[]`, `"a" | "b"`, `{a, b?}`. */
export function typeText(schema: Json | undefined, depth = 0): string {
  if (!schema) return "any";
  if (schema.$ref) return String(schema.$ref).split("/").pop()!;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.anyOf) return schema.anyOf.map((s: Json) => typeText(s, depth)).join(" \\| ");
  if (schema.enum) return schema.enum.map((v: unknown) => JSON.stringify(v)).join(" \\| ");
  switch (schema.type) {
    case "array":
      return `${typeText(schema.items, depth)}[]`;
    case "object": {
      if (!schema.properties) return schema.patternProperties || schema.additionalProperties ? "map" : "object";
      if (depth > 0) return "object";
      const required = new Set<string>(schema.required ?? []);
      return `{${Object.keys(schema.properties).map((k) => (required.has(k) ? k : `${k}?`)).join(", ")}}`;
    }
    case "integer":
      return typeof schema.minimum === "number" ? `integer >= ${schema.minimum}` : "integer";
    default:
      return schema.type ?? "any";
  }
}

function members(schema: Json | undefined): string[] {
  const forms: Json[] = schema?.anyOf ? schema.anyOf.filter((s: Json) => s.type === "object") : schema?.type === "object" ? [schema] : [];
  const lines: string[] = [];
  forms.forEach((form, i) => {
    if (forms.length > 1) lines.push(`  - form ${i + 1}:`);
    const required = new Set<string>(form.required ?? []);
    for (const [name, member] of Object.entries((form.properties ?? {}) as Record<string, Json>)) {
      const note = member.description ? `: ${member.description}` : "";
      lines.push(`${forms.length > 1 ? "  " : ""}  - \`${name}\`${required.has(name) ? "" : " (optional)"}: ${typeText(member, 1)}${note}`);
    }
  });
  return lines;
}

export function adminDocument(): Json {
  const deps = { logger: createLogger({ level: "error" }) } as unknown as AdminDeps;
  const app = buildAdminApp(deps);
  return openApiDocument(app.routes, ADMIN_PREFIX);
}

export function renderAdminApiDoc(doc: Json = adminDocument()): string {
  const out: string[] = [
    "# Admin API",
    "",
    "<!-- Generated by `npx bun scripts/admin-api-doc.ts --write` from the OpenAPI document; do not edit by hand. -->",
    "",
    `Every path is under \`${ADMIN_PREFIX}\` on the admin listener (default \`127.0.0.1:8081\`). The`,
    "machine-readable description is `GET /api/v1/admin/openapi.json` (OpenAPI 3.1); this guide is generated",
    "from it. Send the admin token as `x-admin-token: <token>` or `Authorization: Bearer <token>`. A",
    "`read-only` token may call every route marked read-only (every read, and the dry-run",
    "`POST /config/validate`); mutations need `full`. Every attempted mutation is audited (`GET /audit`).",
    "Send request bodies as `content-type: application/json` (anything else is `415`). A browser request whose",
    "`Origin` is not the listener's own or in `security.admin_allowed_origins`, and any request whose `Host` does",
    "not name the listener, is `403` (see operations.md, \"Browsers, Origin and Host on the admin plane\").",
    "",
    "Errors are `{\"error\": {\"code\", \"message\"}}`:",
    "",
    "| code | status |",
    "|---|---|",
    ...String(doc.info.description)
      .replace(/^.*statuses: /, "")
      .replace(/\.$/, "")
      .split(", ")
      .map((pair) => `| \`${pair.split(" ")[0]}\` | ${pair.split(" ")[1]} |`),
    "",
    "Config changes (`POST /config/apply`, `/config/rollback`, `/config/reload`, `PUT /config/settings`,",
    "`PUT /admin-auth`) take `expected_version` in the body or `If-Match: <config_version>`; a stale one is",
    "`409 version_conflict` and nothing changes. Lists page with `limit` (1-500, default 50) and `cursor`",
    "(the previous page's `next_cursor`).",
    "",
    "## Routes",
    "",
  ];
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(ops)) {
      const route = `${method.toUpperCase()} ${path.slice(ADMIN_PREFIX.length)}`;
      out.push(`### \`${route}\``, "", PURPOSE[route] ?? "(no description)", "", `Scope: \`${op["x-scope"]}\`. Operation id: \`${op.operationId}\`.`, "");
      const params = (op.parameters ?? []) as Json[];
      if (params.length > 0) {
        out.push("Parameters:", "");
        for (const p of params) out.push(`- \`${p.name}\` (${p.in}${p.required ? ", required" : ""}): ${typeText(p.schema)}`);
        out.push("");
      }
      const body = op.requestBody?.content?.["application/json"]?.schema;
      if (body) out.push(`Request body: ${typeText(body)}`, "", ...members(body), "");
      const answers = Object.entries(op.responses as Record<string, Json>).filter(([, r]) => r.content?.["application/json"]?.schema?.$ref === undefined);
      for (const [status, response] of answers) {
        const events = response["x-events"] as Record<string, Json> | undefined;
        if (events) {
          out.push(`Answer \`${status}\`: \`text/event-stream\`; each event's \`data\` is JSON:`, "", ...Object.entries(events).map(([name, schema]) => `- \`${name}\`: ${typeText(schema)}`), "");
          continue;
        }
        const schema = response.content?.["application/json"]?.schema;
        out.push(`Answer \`${status}\`: ${typeText(schema)}`, "");
      }
      const errors = Object.keys(op.responses).filter((s) => op.responses[s].content?.["application/json"]?.schema?.$ref !== undefined);
      out.push(`Errors: ${errors.join(", ")}.`, "");
    }
  }
  return `${out.join("\n").trimEnd()}\n`;
}

if (import.meta.main) {
  const text = renderAdminApiDoc();
  if (Bun.argv.includes("--write")) writeFileSync(DOC_PATH, text);
  else process.stdout.write(text);
}
