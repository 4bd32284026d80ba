// Builds the console (console/app) into the files the admin listener serves under /ui: one script, one
// stylesheet and an icon, each named by its content's hash (cached for good), and the page that loads
// them. Each is kept gzipped as base64 text, the form scripts/compile.ts bakes into the binary, so a
// response costs no compression and the binary no file read. Nothing is fetched from another host.
import { gzipSync } from "node:zlib";
import { join } from "node:path";

export interface BuiltAsset {
  /** Content-Type. */
  readonly type: string;
  /** The file gzipped (level 9), base64. */
  readonly gzip: string;
  /** Named by its content's hash: may be cached for good. */
  readonly immutable: boolean;
}

/** Path under /ui/ -> the asset; "index.html" is the page every screen's path answers. */
export type BuiltAssets = Record<string, BuiltAsset>;

const TYPES: Record<string, string> = { js: "text/javascript; charset=utf-8", css: "text/css; charset=utf-8", svg: "image/svg+xml", html: "text/html; charset=utf-8" };

const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2563eb"/><path d="M4 8h8M8 4v8" stroke="#fff" stroke-width="2"/></svg>`;

const asset = (name: string, bytes: Uint8Array | string, immutable: boolean): [string, BuiltAsset] => [
  name,
  { type: TYPES[name.slice(name.lastIndexOf(".") + 1)] ?? "application/octet-stream", gzip: gzipSync(bytes, { level: 9 }).toString("base64"), immutable },
];

/** Throws with the bundler's messages when the app does not build. */
export async function buildConsole(): Promise<BuiltAssets> {
  const result = await Bun.build({
    entrypoints: [join(import.meta.dir, "app/main.tsx")],
    target: "browser",
    minify: true,
    sourcemap: "none",
    naming: { entry: "[name]-[hash].[ext]", asset: "[name]-[hash].[ext]", chunk: "[name]-[hash].[ext]" },
    define: { "process.env.NODE_ENV": '"production"' },
  });
  if (!result.success) throw new Error(`the console did not build:\n${result.logs.map(String).join("\n")}`);
  const entries: [string, BuiltAsset][] = [];
  const links: string[] = [];
  for (const output of result.outputs) {
    const name = `assets/${output.path.replace(/^.*\//, "")}`;
    entries.push(asset(name, new Uint8Array(await output.arrayBuffer()), true));
    if (name.endsWith(".css")) links.push(`<link rel="stylesheet" href="/ui/${name}">`);
    else if (name.endsWith(".js") && output.kind === "entry-point") links.push(`<script type="module" src="/ui/${name}"></script>`);
  }
  const iconName = `assets/icon-${new Bun.CryptoHasher("sha256").update(ICON).digest("hex").slice(0, 8)}.svg`;
  entries.push(asset(iconName, ICON, true));
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Gateway console</title>
<link rel="icon" href="/ui/${iconName}" type="image/svg+xml">
${links.join("\n")}
</head>
<body>
<div id="app"></div>
<noscript>The gateway console needs JavaScript; the admin API (docs/admin-api.md) answers without it.</noscript>
</body>
</html>
`;
  entries.push(asset("index.html", page, false));
  return Object.fromEntries(entries);
}
