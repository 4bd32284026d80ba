// Generates docs/configuration.md from the TypeBox schema, so the reference cannot drift from what the
// loader accepts. `npx bun scripts/config-doc.ts` prints it; `--write` rewrites the file. A unit test fails
// when the committed file and this output differ.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { KindGuard, type TObject, type TSchema } from "@sinclair/typebox";
import { parse } from "yaml";
import { ADMIN_AUTH_MODULES, COMPILED_AUTH_MODULES, INGRESS_AUTH_MODULES } from "../src/auth/modules.ts";
import { AUTO_PROVIDERS, embeddedDefaultText } from "../src/config/default.ts";
import { loadConfigTree } from "../src/config/load.ts";
import { GatewayConfig, NAME_PATTERN, PROTOCOLS, SecretRef } from "../src/config/schema.ts";
import { NOT_YET_SUPPORTED } from "../src/config/unsupported.ts";
import { defaultBaseUrl } from "../src/providers/provider.ts";

export const DOC_PATH = join(import.meta.dir, "..", "docs", "configuration.md");

type Row = { path: string; type: string; default: string; restart: boolean; description: string };
/** The variant of a union of objects a member belongs to, when not every variant has it. */
type Form = { label: string; common: Set<string> };

const code = (text: string) => (text.includes("`") ? `\`\` ${text} \`\`` : `\`${text}\``);
const cell = (text: string) => text.replaceAll("|", "\\|");
// `<name>` in running text would be swallowed as an HTML tag; inside code spans it is literal already.
const prose = (text: string) => cell(text).split(/(``.*?``|`[^`]*`)/).map((part, i) => (i % 2 ? part : part.replaceAll("<", "\\<"))).join("");

// Compared by description because Type.Optional copies the schema, so identity is lost.
const isSecretRef = (s: TSchema) => s.description === SecretRef.description;
function objectForms(s: TSchema): TObject[] | undefined {
  if (!KindGuard.IsUnion(s) || isSecretRef(s)) return undefined;
  const forms = s.anyOf.filter((v) => KindGuard.IsObject(v));
  return forms.length === s.anyOf.length ? forms : undefined;
}
const formLabel = (o: TObject) => `{${Object.keys(o.properties).map((k) => (o.required?.includes(k) ? k : `${k}?`)).join(", ")}}`;
const mapKey = (pattern: string) => (pattern === NAME_PATTERN ? "name" : "string");

function range(word: string, s: TSchema): string {
  if (typeof s.minimum === "number" && typeof s.maximum === "number") return `${word} ${s.minimum}..${s.maximum}`;
  const low = typeof s.minimum === "number" ? ` >= ${s.minimum}` : typeof s.exclusiveMinimum === "number" ? ` > ${s.exclusiveMinimum}` : "";
  return `${word}${low}${typeof s.maximum === "number" ? `${low ? " and" : ""} <= ${s.maximum}` : ""}`;
}

/** The type in words; `nested` parenthesises alternatives inside "list of" / "map ... ->". */
function typeOf(s: TSchema, nested = false): string {
  const group = (text: string) => (nested && text.includes(" or ") ? `(${text})` : text);
  if (isSecretRef(s)) return "secret reference";
  if (KindGuard.IsUnion(s)) {
    if (s.anyOf.every((v) => KindGuard.IsLiteral(v))) return group(`one of ${s.anyOf.map((v) => String(v.const)).join(" | ")}`);
    const forms = objectForms(s);
    return group(forms ? forms.map(formLabel).join(" or ") : s.anyOf.map((v) => typeOf(v)).join(" or "));
  }
  if (KindGuard.IsLiteral(s)) return `one of ${s.const}`; // a one-word Enum collapses to its literal
  // A pattern with an x-expected annotation is described in words in the description column instead.
  if (KindGuard.IsString(s)) return `${s.minLength === 1 ? "non-empty " : ""}string${s.pattern && typeof s["x-expected"] !== "string" ? ` matching ${code(s.pattern)}` : ""}`;
  if (KindGuard.IsInteger(s)) return range("integer", s);
  if (KindGuard.IsNumber(s)) return range("number", s);
  if (KindGuard.IsBoolean(s)) return "boolean";
  if (KindGuard.IsNull(s)) return "null";
  if (KindGuard.IsArray(s)) return `${s.minItems === 1 ? "non-empty list" : "list"} of ${typeOf(s.items, true).replace(/^object$/, "objects")}`;
  if (KindGuard.IsRecord(s)) {
    const [pattern, value] = Object.entries(s.patternProperties)[0] ?? ["", s];
    return `map ${mapKey(pattern)} -> ${typeOf(value, true)}`;
  }
  if (KindGuard.IsObject(s)) return typeof s.additionalProperties === "object" ? `map name -> ${typeOf(s.additionalProperties, true)}` : "object";
  return "any value";
}

function defaultOf(s: TSchema, required: boolean): string {
  // x-default: a default resolve.ts applies rather than the schema (store.settings: each module's own).
  const value = s.default ?? s["x-default"];
  if (value !== undefined) return code(typeof value === "string" ? value : JSON.stringify(value));
  return required ? "required" : "—";
}

/**
 * What resolve.ts fills in where the schema gives no default. The values are read off a resolved
 * minimal config (and the provider module's own URL table) so they follow the code, not this script.
 */
function loadTimeNotes(): Record<string, string> {
  const probe = loadConfigTree({ providers: { p: { protocol: "mock" } }, models: { m: { provider: "p" } } }, "config-doc", { env: {} });
  const provider = probe.ok ? probe.snapshot.providers.get("p") : undefined;
  const pool = probe.ok ? probe.snapshot.pools.get("m") : undefined;
  if (!provider || !pool) throw new Error("config-doc: the minimal probe config no longer resolves");
  const urls = new Map<string, string[]>();
  for (const protocol of PROTOCOLS) {
    const url = defaultBaseUrl(protocol, "<region>");
    const key = url === undefined ? "none (answers in-process)" : code(url);
    urls.set(key, [...(urls.get(key) ?? []), protocol]);
  }
  const filled = (value: string) => `Filled at load when unset: ${value}.`;
  const health = (key: "mode" | "interval_secs" | "timeout_secs", inherit: string) => filled(`${inherit}${code(String(provider.health[key]))}`);
  const notes: Record<string, string> = {
    health: "Defaults for every provider's `health`.",
    "providers.<name>.health": "Members left unset take the top-level `health`, then the built-in defaults.",
    "providers.<name>.base_url": filled([...urls].map(([url, protocols]) => `${protocols.join(", ")}: ${url}`).join("; ")),
    "providers.<name>.api_key": "Empty or unset only warns; upstream calls then go unauthenticated.",
    "providers.<name>.latency_ms": filled(code(String(provider.latencyMs))),
    pools: "Every model that no pool is named after also gets an implicit one-member pool of its own name.",
    "pools.<name>.breaker": "Members left unset take `routing.breaker`, then the defaults shown.",
    "pools.<name>.failover": "Members left unset take `routing.failover`, then the defaults shown.",
    "pools.<name>.on_exhausted": filled(`\`routing.on_exhausted\` (itself ${code(pool.onExhausted)})`),
    "auth.signing_key": "Signs virtual keys (`POST /keys`, token exchange) and derives their AWS pairs; needed by the `keys` module. Changing it invalidates every issued key.",
    "auth.chain": "A module not compiled into this build admits nobody (see Authentication modules).",
    "auth.admin_tokens[].name": filled("`admin-token-<index>`"),
    admin_listen: "A non-loopback address needs a non-empty `auth.admin_auth`.",
    upstream_credentials: "`own`: upstream calls carry the provider's configured key; `passthrough`: the caller's credential is forwarded.",
    "hooks.<name>.kind": "`gate`: fire and wait for its decision; `tap`: fire and forget.",
  };
  for (const key of ["mode", "interval_secs", "timeout_secs"] as const) {
    notes[`health.${key}`] = health(key, "");
    notes[`providers.<name>.health.${key}`] = health(key, "the top-level `health` value, else ");
  }
  for (const { path, lands } of NOT_YET_SUPPORTED) {
    const at = path.replaceAll("*", "<name>");
    notes[at] = [`**Not supported by this build yet** (lands with ${lands}): refused when set (see Not supported yet).`, notes[at]].filter(Boolean).join(" ");
  }
  return notes;
}

function describe(s: TSchema, type: string, form: Form | undefined, note: string | undefined): string {
  // The type column already says "secret reference" and "one of ..."; do not repeat it.
  const own = s.description && s.description !== type && !isSecretRef(s) ? s.description : "";
  const parts = [
    own,
    typeof s["x-expected"] === "string" ? `Expected: ${s["x-expected"]}` : "",
    typeof s["x-key"] === "string" ? `Keys: ${s["x-key"]}` : "",
    form ? `Only in the ${form.label} form` : "",
    note ?? "",
  ];
  return prose(parts.filter((p) => p !== "").map((p) => (p.endsWith(".") ? p : `${p}.`)).join(" "));
}

/** Emits a row for every member under `s` (which sits at `path`); map values and list items add `<name>` / `[]`. */
function walk(s: TSchema, path: string, restart: boolean, rows: Row[], notes: Record<string, string>, form?: Form): void {
  const scoped = restart || s["x-restart"] === true;
  if (KindGuard.IsObject(s)) {
    for (const [key, child] of Object.entries(s.properties)) {
      const at = path === "" ? key : `${path}.${key}`;
      if (rows.some((r) => r.path === at)) continue; // a member several union forms share is listed once
      const type = typeOf(child);
      const description = describe(child, type, form && !form.common.has(key) ? form : undefined, notes[at]);
      rows.push({ path: at, type, default: defaultOf(child, s.required?.includes(key) ?? false), restart: scoped || child["x-restart"] === true, description });
      walk(child, at, scoped, rows, notes);
    }
    if (typeof s.additionalProperties === "object") walk(s.additionalProperties, `${path}.<name>`, scoped, rows, notes);
  } else if (KindGuard.IsRecord(s)) {
    for (const [pattern, value] of Object.entries(s.patternProperties)) walk(value, `${path}.${pattern === NAME_PATTERN ? "<name>" : "<key>"}`, scoped, rows, notes);
  } else if (KindGuard.IsArray(s)) {
    walk(s.items, `${path}[]`, scoped, rows, notes);
  } else {
    const forms = objectForms(s);
    if (!forms) return;
    const common = new Set(Object.keys(forms[0]?.properties ?? {}).filter((k) => forms.every((f) => k in f.properties)));
    for (const f of forms) walk(f, path, scoped, rows, notes, { label: formLabel(f), common });
  }
}

function table(rows: Row[]): string {
  const lines = rows.map((r) => `| ${code(r.path)} | ${cell(r.type)} | ${cell(r.default)} | ${r.restart ? "restart" : "live"} | ${r.description} |`);
  return ["| Path | Type | Default | Applies | Description |", "|---|---|---|---|---|", ...lines].join("\n");
}

/** Sections with members get their own table; the plain top-level settings share the first one. */
function reference(): string {
  const rows: Row[] = [];
  walk(GatewayConfig, "", false, rows, loadTimeNotes());
  const sections = new Map<string, Row[]>();
  for (const row of rows) {
    const root = row.path.split(/[.[]/)[0] ?? row.path;
    sections.set(root, [...(sections.get(root) ?? []), row]);
  }
  const single = [...sections.values()].filter((s) => s.length === 1).flat();
  const multi = [...sections].filter(([, s]) => s.length > 1);
  return [`### Top-level settings\n\n${table(single)}`, ...multi.map(([root, s]) => `### ${code(root)}\n\n${table(s)}`)].join("\n\n");
}

/** Providers the embedded default adds for each vendor key variable, read off the real default. */
function autoProviders(): string {
  const variables = AUTO_PROVIDERS.map((p) => p.variable);
  const everySet = Object.fromEntries(AUTO_PROVIDERS.flatMap((p) => [[p.variable, "set"], [p.baseUrl, "set"]]));
  const tree = parse(embeddedDefaultText(everySet)) as {
    providers: Record<string, { api_key?: { env?: string }; base_url?: string }>;
    pools: Record<string, { members: { model: string }[] }>;
  };
  const lines = variables.map((variable) => {
    const name = Object.keys(tree.providers).find((p) => tree.providers[p]?.api_key?.env === variable) ?? "(none)";
    const model = tree.pools[name]?.members[0]?.model ?? "(none)";
    const endpoint = /^\$\{(\w+)\}$/.exec(tree.providers[name]?.base_url ?? "")?.[1] ?? "(none)";
    return `| ${code(variable)} | ${code(name)} | ${code(model)} | ${code(name)} | ${code(endpoint)} |`;
  });
  return ["| Variable set | Provider added | Model | Pool | Its base_url, when this is set |", "|---|---|---|---|---|", ...lines].join("\n");
}

export function renderConfigDoc(): string {
  return `<!-- Generated by scripts/config-doc.ts from src/config/schema.ts. Do not edit: change the schema's annotations or the script's prose, then run \`npx bun scripts/config-doc.ts --write\`. -->

# Configuration reference

The gateway reads one YAML file. The whole tree is one schema (\`src/config/schema.ts\`); the reference tables below are generated from it.

## Where the config comes from

1. \`gateway --config PATH\`, if given (an unreadable file stops startup);
2. else \`./gateway.yaml\` in the working directory, if it exists;
3. else the embedded default (below), which \`gateway --print-default-config\` prints as a starting point.

Over whichever it is, the command line sets the listeners' addresses: \`--listen\`, \`--port\` and \`--admin-listen\`, else \`GATEWAY_LISTEN\` and \`GATEWAY_ADMIN_LISTEN\`, beat \`listen\` and \`admin_listen\` in the file and the settings overlay, for boot, \`--check\` and every reload or apply (docs/operations.md, "Addresses from the command line").

## Environment variables: \`\${VAR}\`

\`\${VAR}\` is replaced with the variable's value **inside the YAML scalar that holds it**, after the text is parsed, so a variable may stand for a scalar or part of one (a port, a flag, a key, a piece of a URL) but never for structure: a value containing \`: \`, \` #\`, quotes or newlines is taken as is, quoted or not. A reference that is the whole of an unquoted scalar is read as YAML would read the value written there (\`port: \${PORT}\` is a number, \`flag: \${ON}\` a boolean); inside quotes, or with other text around it, it is a string. \`\${VAR}\` is expanded only in YAML text (the config file, and \`{"yaml": ...}\` sent to the admin API), never in a \`{"config": ...}\` JSON object.

No error message shows a value taken from the environment: the error names the path, the rule and the variable (\`listen: expected an address host:port (IPv6 as [::1]:port), got the value of \${LISTEN} (not shown)\`), and a variable's value that would show in a path or a name is replaced by \`\${VAR}\` (values under four characters, a digit or a flag, are shown where they are a part of a path or a name).

- \`\${VAR:-fallback}\` uses \`fallback\` when \`VAR\` is unset (unlike the shell, a variable set to the empty string is used as is).
- \`$\${\` is a literal \`\${\` (\`$\${HOME}\` leaves \`\${HOME}\` in the config).
- Comments are never interpolated, so a commented-out \`\${VAR}\` never stops startup.
- An unset variable without a fallback, or a malformed reference, stops startup naming the variable and its line: \`/etc/gateway/gateway.yaml:12: environment variable OPENAI_KEY is not set (referenced as \${OPENAI_KEY})\`. A malformed reference is named by its line and column, not quoted (what sits between the braces may be a secret pasted there).

## Secrets

A *secret reference* is \`{env: NAME}\` (an environment variable) or \`{file: PATH}\` (a file; one trailing newline is trimmed). Secrets are read once per load.

- **Must be a secret reference** for \`auth.signing_key\`, \`auth.tokens[].token\`, \`auth.admin_tokens[].token\`, \`identity-providers.<name>.browser_login.client_secret\` and the bedrock keys \`aws_access_key_id\`, \`aws_secret_access_key\`, \`aws_session_token\`. A plain string there is a validation error that does not repeat the string (nor anywhere in a secret position: \`api_key\`, provider \`headers\` and \`query\` values), and an unset or empty variable, or an unreadable or empty file, stops startup.
- A provider's \`api_key\` may also be a plain string (typically \`"\${VAR}"\`). An empty string, or an \`{env: NAME}\` that is empty or unset, only **warns**: the provider still loads and its upstream calls go unauthenticated. An unreadable or empty \`{file: PATH}\` is still an error.

## Validation and fail-loud startup

Validation reports **every** error at once, each with its path (\`pools.chat.members[1].model: unknown model "gpt-5x"\`): schema and cross-reference errors together, then (once those pass) every unreadable secret or TLS file together. Nothing starts until all are fixed. The same checks run for \`gateway --check\` and for configs handed to the admin API, which refuses them instead. Unknown members are errors, never ignored; so are duplicate YAML keys. A YAML text over 1 MiB, nesting deeper than 64 levels, or with aliases expanding past 100 uses, is refused whole.

Beyond types and ranges, startup stops on:

- unknown references: a model's \`provider\`; a pool member's \`model\`; a hook named in \`pools.hooks\`, \`pools.<name>.hooks\` or a hook's \`on_error\`; a \`fallback_pool:<pool>\`; a group's \`parent\` or a limit's \`pool\`; a \`role_bindings\` identity provider;
- an unknown \`protocol\`, auth module (in \`auth.chain\` / \`auth.admin_auth\`, also when listed twice), identity-provider \`module\` or exporter \`module\` (plugins count when listed in \`plugins.fetch\`);
- an invalid \`on_exhausted\`, a pool falling back to itself, and \`fallback_pool\` cycles (\`a -> b -> a\`, including through \`routing.on_exhausted\`);
- group \`parent\` cycles;
- unreadable \`tls\` / \`admin_tls\` files, or files that do not parse as PEM certificates or private keys;
- a non-loopback \`admin_listen\` with an empty \`auth.admin_auth\` chain (an open admin plane off loopback would give anyone full authority), and \`admin_require_mtls\` without \`admin_tls.client_ca_file\`;
- modules missing what they need: \`tokens\` without \`auth.tokens\`, \`keys\` without \`auth.signing_key\`, \`admin-tokens\` without \`auth.admin_tokens\`, \`plugins.fetch\` without \`plugins.registry_url\`, an oidc provider without \`issuer\`/\`audience\`, a forge provider without \`client_id\` or not named \`forge\`, an exporter without its required setting;
- members in the wrong place: \`region\` and AWS keys on a non-bedrock provider, a bedrock provider with neither \`region\` nor \`base_url\`, half an AWS key pair (\`aws_access_key_id\` and \`aws_secret_access_key\` go together; \`aws_session_token\` needs both), \`base_url\`/\`api_key\` on a mock provider, \`latency_ms\` off a mock, a tap without \`at\` or a gate with one, a plugin transport without \`target\`, a windowed limit with no \`requests\`, \`tokens\` or \`budget_cents\`, a hook named after a reserved \`on_error\` word, an unknown key in an oidc or forge provider's \`settings\`, a stream a built-in exporter does not carry, or \`fields\` on one.

## Not supported yet

The schema describes the whole gateway, but this build does not yet carry every feature. A member this build would not act on is **refused with its path** (\`export: not supported by this build yet (lands with telemetry export)\`) by \`gateway --check\`, at boot, on \`POST /config/reload\` and by the admin API (\`POST /config/validate\` answers its verdict \`ok: false\` with the line, \`POST /config/apply\` and \`PUT /config/settings\` a \`400\`), never accepted silently. An empty map or list (\`export: {}\`) asks for nothing and is let through. The members, and what each lands with (src/config/unsupported.ts is the one list; a feature that lands removes its entry):

${NOT_YET_SUPPORTED.map(({ path, lands }) => `- ${code(path.replaceAll("*", "<name>"))}: ${lands}`).join("\n")}

Warnings are logged at startup but do not stop it: an empty \`auth.chain\` (open data plane), an empty \`auth.admin_auth\` (open admin plane, loopback only), an empty provider key, an unwritable \`config.overlay\` directory, and an auth module this build does not carry.

## Authentication modules

\`auth.chain\` accepts ${INGRESS_AUTH_MODULES.map(code).join(", ")} and \`auth.admin_auth\` accepts ${ADMIN_AUTH_MODULES.map(code).join(", ")}; both also accept the name of an \`identity-providers\` instance and of an auth plugin listed in \`plugins.fetch\`. A module that is known but **not compiled into this build** fails closed: startup warns, and the module admits nobody, so a request that only it would admit is refused. This build compiles in: ${COMPILED_AUTH_MODULES.map(code).join(", ")}. A config is refused, each error with its path, when a chain names \`oidc\` and no oidc identity provider is configured, names a forge provider (it signs people in to issue keys and verifies no request), or \`auth.admin_auth\` names a provider with \`max_admin_scope: none\`. Identity providers, their settings, role bindings and the token exchange: [identity.md](identity.md).

## The embedded default

With no \`--config\` and no \`./gateway.yaml\`, the gateway runs this (it needs no network and no key):

\`\`\`yaml
${embeddedDefaultText({}).trimEnd()}
\`\`\`

For each vendor key variable that is set and non-empty, the default gains a provider reading its key from that variable, a model and a pool. Its endpoint is the vendor's own unless the variable the vendor's SDK reads for it is set too (an http(s) URL in the same convention as \`base_url\`; one on the gateway's own data port is refused, as it would loop):

${autoProviders()}

## Project additions

\`limits.shutdown_drain_secs\`, \`security.max_body_bytes\` and \`security.admin_max_body_bytes\` are this project's own additions, not named by the spec. A request body over the limit (by \`Content-Length\`, or counted as a chunked body streams in) is answered \`413\`: on the data plane in the caller's protocol's own error shape, on the admin plane and on data-plane paths of no protocol with the gateway's error envelope \`{"error": {"code": ..., "message": ...}}\`.

## Bounds on what the gateway reads

Fixed, not settable: a JSON body (either plane) nesting objects or arrays deeper than 64 levels is refused (\`400\`, before it is parsed); YAML config text is bounded as above (1 MiB, 64 levels, 100 alias uses). A \`{file: PATH}\` secret and a TLS file must be a regular file of at most 1 MiB (a device or a pipe is refused unopened). Settable, each in the reference below: the request body size (\`security.max_body_bytes\`, \`security.admin_max_body_bytes\`), the body-read deadline (\`limits.body_read_timeout_secs\`), the size of an upstream answer read whole, counted after decompression (\`limits.max_upstream_response_bytes\`), the deadline of one request across its hops, which also ends the reading of a non-stream answer (\`routing.failover.timeout_secs\`), and the metering kept while the store refuses writes (\`store.settings.max_unsaved_rows\`). Every number in the config has an upper bound as well as a lower one (a day of seconds, 10^9 counts, 4 GiB of bytes, 2^31-1 tokens), so a value such as \`1e300\` is an error naming its path. docs/operations.md, "Limits at a glance", says what each answers past its bound.

## Reference

Columns: **Path** (\`<name>\` is a key you choose, \`<key>\` any string key, \`[]\` a list item); **Default** (\`required\`: must be given; \`—\`: absent unless set, see the description); **Applies**: \`restart\` = read at boot only; a change is stored but takes effect on the next restart (\`PUT /config/settings\` names it in \`reload_to_apply\`); \`live\` = takes effect on config apply/reload.

${reference()}
`;
}

if (import.meta.main) {
  if (process.argv.includes("--write")) writeFileSync(DOC_PATH, renderConfigDoc());
  else process.stdout.write(renderConfigDoc());
}
