// The console's pages as src/admin/console.ts answers them from the files the build baked in: the page for
// every screen's path, assets by name (gzip when asked, plain otherwise), the security headers on every
// answer, GET and HEAD only, and a clear 404 when the console was not built in (a run from source).
import { describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { consolePages, isConsolePath } from "../../src/admin/console.ts";

const file = (type: string, text: string, immutable: boolean) => ({ type, gzip: gzipSync(text).toString("base64"), immutable });
const FILES = {
  "index.html": file("text/html; charset=utf-8", "<!doctype html><title>Gateway console</title>", false),
  "assets/main-abc.js": file("text/javascript; charset=utf-8", "console.log(1)", true),
};
const pages = consolePages(FILES);
const get = (path: string, init: RequestInit = {}) => pages(new Request(`http://127.0.0.1/ui${path}`, init), `/ui${path}`);

describe("console pages", () => {
  test("/ui redirects to /ui/; every screen's path is the page; the security headers are on each answer", async () => {
    const bare = get("");
    expect(bare.status).toBe(308);
    expect(bare.headers.get("location")).toBe("/ui/");
    for (const path of ["/", "/keys", "/config", "/anything/deeper"]) {
      const page = get(path);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("Gateway console");
      expect(page.headers.get("cache-control")).toBe("no-cache");
    }
    for (const answer of [bare, get("/"), get("/assets/main-abc.js"), get("/assets/gone.js"), get("/", { method: "POST" })]) {
      expect(answer.headers.get("content-security-policy")).toBe("default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
      expect(answer.headers.get("x-content-type-options")).toBe("nosniff");
      expect(answer.headers.get("x-frame-options")).toBe("DENY");
    }
  });

  test("an asset by its name: gzip when the client takes it, plain otherwise, cached for good; a missing one is a 404, not the page", async () => {
    const zipped = get("/assets/main-abc.js", { headers: { "accept-encoding": "gzip, br" } });
    expect(zipped.headers.get("content-encoding")).toBe("gzip");
    expect(zipped.headers.get("cache-control")).toContain("immutable");
    expect(Bun.gunzipSync(new Uint8Array(await zipped.arrayBuffer())).length).toBe("console.log(1)".length);
    const plain = get("/assets/main-abc.js", { headers: { "accept-encoding": "identity" } });
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(await plain.text()).toBe("console.log(1)");
    const missing = get("/assets/gone.js");
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });

  test("GET and HEAD only; a gateway without the console built in says so", async () => {
    const head = get("/", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    const post = get("/", { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    const none = consolePages(undefined)(new Request("http://127.0.0.1/ui/"), "/ui/");
    expect(none.status).toBe(404);
    expect(((await none.json()) as { error: { message: string } }).error.message).toContain("npm run build");
  });

  test("only /ui and what is under it is the console's", () => {
    expect(["/ui", "/ui/", "/ui/keys"].every(isConsolePath)).toBe(true);
    expect(["/uix", "/api/v1/admin/ui", "/"].some(isConsolePath)).toBe(false);
  });
});
