// docs/admin-api.md is generated from the admin API's OpenAPI document; this keeps the committed guide
// in step with the routes and schemas, and makes every route carry a sentence of purpose.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { adminDocument, DOC_PATH, PURPOSE, renderAdminApiDoc } from "../../scripts/admin-api-doc.ts";

const doc = adminDocument();
const routes = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.slice("/api/v1/admin".length)}`));

describe("docs/admin-api.md", () => {
  test("is up to date with the OpenAPI document", () => {
    const current = existsSync(DOC_PATH) ? readFileSync(DOC_PATH, "utf8") : "";
    const generated = renderAdminApiDoc(doc);
    if (current !== generated) {
      const a = current.split("\n");
      const b = generated.split("\n");
      const at = Math.max(0, b.findIndex((line, i) => line !== a[i]));
      throw new Error(`docs/admin-api.md is out of date (line ${at + 1}). Run \`bun scripts/admin-api-doc.ts --write\` and commit it.\n  file:      ${a[at]}\n  generated: ${b[at]}`);
    }
  });

  test("every route has its sentence, and no sentence names a route that is gone", () => {
    expect(routes.filter((r) => PURPOSE[r] === undefined)).toEqual([]);
    expect(Object.keys(PURPOSE).filter((r) => !routes.includes(r))).toEqual([]);
  });

  test("each route shows its scope and its request body members", () => {
    const text = renderAdminApiDoc(doc);
    const section = (route: string) => text.slice(text.indexOf(`### \`${route}\``), text.indexOf("### ", text.indexOf(`### \`${route}\``) + 4));
    expect(section("POST /keys")).toContain("Scope: `full`");
    expect(section("POST /keys")).toContain("`allowed_pools` (optional)");
    expect(section("GET /keys")).toContain("Scope: `read-only`");
    expect(section("PUT /admin-auth")).toContain("`allow_open` (optional)");
  });
});
