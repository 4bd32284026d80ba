// docs/configuration.md is generated from the config schema; this keeps the committed file in step with
// the generator, and checks that the generator still sees every member with the right default and liveness.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { DOC_PATH, renderConfigDoc } from "../../scripts/config-doc.ts";
import { GatewayConfig } from "../../src/config/schema.ts";

const generated = renderConfigDoc();

/** The cells of the reference row for `path`: [path, type, default, applies, description]. */
function row(path: string): string[] {
  const line = generated.split("\n").find((l) => l.startsWith(`| \`${path}\` |`));
  if (line === undefined) throw new Error(`no reference row for ${path}`);
  return line.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
}
const rowPaths = generated
  .slice(generated.indexOf("\n## Reference"))
  .split("\n")
  .flatMap((l) => /^\| `([^`]+)` \|/.exec(l)?.[1] ?? []);

describe("docs/configuration.md", () => {
  test("is up to date with the schema", () => {
    const current = existsSync(DOC_PATH) ? readFileSync(DOC_PATH, "utf8") : "";
    if (current !== generated) {
      const a = current.split("\n");
      const b = generated.split("\n");
      const first = b.findIndex((line, i) => line !== a[i]);
      const at = first === -1 ? b.length : first; // the file only has extra lines at its end
      throw new Error(
        `docs/configuration.md is out of date (first difference at line ${at + 1}).\n` +
          `Run \`bun scripts/config-doc.ts --write\` and commit the result.\n` +
          `  file:      ${a[at] ?? "(end of file)"}\n  generated: ${b[at] ?? "(end of output)"}`,
      );
    }
  });
});

describe("config-doc generator", () => {
  test.each([
    ["listen", "`127.0.0.1:8080`", "restart"],
    ["admin_listen", "`127.0.0.1:8081`", "restart"],
    ["tls.cert_file", "required", "restart"],
    ["store.settings.path", "`./gateway.db`", "restart"],
    ["limits.max_inbound_concurrent", "`4096`", "restart"],
    ["limits.shutdown_drain_secs", "`30`", "live"],
    ["security.max_body_bytes", "`33554432`", "live"],
    ["auth.key_ttl", "`90d`", "live"],
    ["providers.<name>.protocol", "required", "live"],
    ["pools.<name>.members[].weight", "`1`", "live"],
    ["groups.<name>.limits[].concurrent", "required", "live"],
    ["advanced.response_headers.server_timing", "`true`", "restart"],
    ["advanced.config_versions_retained", "`100`", "live"],
  ])("%s: default %s, %s", (path, defaultCell, applies) => {
    const [, , def, live] = row(path);
    expect(def).toBe(defaultCell);
    expect(live).toBe(applies);
  });

  test("types are in words", () => {
    expect(row("auth.signing_key")[1]).toBe("secret reference");
    expect(row("providers.<name>.api_key")[1]).toBe("secret reference or string");
    expect(row("limits.max_inbound_concurrent")[1]).toBe("integer 1..1000000000");
    expect(row("providers")[1]).toBe("map name -> object");
    expect(row("hooks.<name>.prompt")[1]).toBe("one of no \\| ro \\| rw");
  });

  test("load-time defaults from resolve.ts are stated", () => {
    expect(row("providers.<name>.health.interval_secs")[4]).toContain("`30`");
    expect(row("health.mode")[4]).toContain("`none`");
    expect(row("providers.<name>.base_url")[4]).toContain("`https://api.openai.com/v1`");
    expect(row("pools.<name>.on_exhausted")[4]).toContain("`reject`");
  });

  test("restart-scoped rows are exactly the spec's boot-scoped sections", () => {
    const bootScoped = /^(listen|admin_listen|tls|admin_tls|admin_require_mtls|store|advanced\.response_headers|limits\.(upstream_request_timeout_secs|pool_max_idle_per_host|pool_idle_timeout_secs|max_inbound_concurrent))\b/;
    for (const path of rowPaths) expect(`${path}: ${row(path)[3]}`).toBe(`${path}: ${bootScoped.test(path) ? "restart" : "live"}`);
  });

  test("every member name in the schema has a row", () => {
    // An independent walk over the JSON form: any `properties` key the generator's walker skipped shows up here.
    const names = new Set<string>();
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(visit);
      if (typeof node !== "object" || node === null) return;
      for (const [key, value] of Object.entries(node)) {
        if (key === "properties" && typeof value === "object" && value !== null) for (const name of Object.keys(value)) names.add(name);
        visit(value);
      }
    };
    visit(JSON.parse(JSON.stringify(GatewayConfig)));
    const lastSegments = new Set(rowPaths.map((p) => p.split(/[.\]]/).pop()));
    // A secret reference is one type ("secret reference"), explained once in the prose, not per use.
    expect(generated).toContain("`{env: NAME}`");
    expect(generated).toContain("`{file: PATH}`");
    expect([...names].filter((n) => !lastSegments.has(n) && n !== "env" && n !== "file")).toEqual([]);
  });
});
