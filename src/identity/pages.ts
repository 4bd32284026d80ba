// The sign-in's HTML (design/identity.md, "Browser sign-in"): the chooser, the key page and the failure
// page. No script, no outside resource; every value HTML-escaped; every answer (a redirect too) carries
// the headers that keep it out of caches, referrers, frames and sniffing. Controls are links, not forms,
// so no form-action has to name a provider the browser is redirected to.
import type { ExchangedKey } from "./exchange.ts";

const CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "content-security-policy": CSP,
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = "body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}a.button{display:inline-block;padding:.5rem 1rem;margin:.25rem 0;border:1px solid #333;border-radius:4px;text-decoration:none;color:#000}code,pre{background:#f3f3f3;padding:.1rem .3rem;word-break:break-all;white-space:pre-wrap}dt{font-weight:600}";

function page(status: number, title: string, body: string, headers: Record<string, string> = {}): Response {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><h1>${escapeHtml(title)}</h1>${body}</body></html>`;
  return new Response(html, { status, headers: { "content-type": "text/html; charset=utf-8", ...PAGE_HEADERS, ...headers } });
}

/** GET /auth/token: one control per provider that offers browser sign-in, in config order. */
export function chooserPage(providers: readonly string[]): Response {
  const buttons = providers.map((p) => `<p><a class="button" href="/auth/login/${encodeURIComponent(p)}">Sign in with ${escapeHtml(p)}</a></p>`).join("");
  return page(200, "Sign in to the gateway", `<p>Sign in to get your own key for this gateway.</p>${buttons}`);
}

/** The key, shown after a sign-in; signing in again shows the same key, Refresh replaces it. */
export function keyPage(key: ExchangedKey, provider: string, headers: Record<string, string>): Response {
  const expires = new Date(key.expires_at * 1000).toISOString();
  const rows: [id: string, name: string, value: string][] = [
    ["identity", "Identity", key.identity],
    ["team", "Team", key.team],
    ["group", "Group", key.group],
    ["key-id", "Key id", key.key_id],
    ["expires", "Expires", expires],
    ["base-url", "Base URL", key.base_url ?? "(public_url is not set)"],
  ];
  const list = rows.map(([id, name, value]) => `<dt>${name}</dt><dd><code id="${id}">${escapeHtml(value)}</code></dd>`).join("");
  const body =
    `<p>Your key (copy it now; signing in again shows the same key):</p><pre id="key">${escapeHtml(key.token)}</pre><dl>${list}</dl>` +
    `<p>Point your tools at the base URL with this key as their API key.</p>` +
    `<p><a class="button" id="refresh" href="/auth/login/${encodeURIComponent(provider)}?refresh=1">Refresh</a> replaces this key with a new one; the old one stops working at once.</p>`;
  return page(200, "Your gateway key", body, headers);
}

/** A sign-in that failed: what happened, in words, and nothing issued. */
export function failurePage(status: number, message: string, headers: Record<string, string> = {}, startAgain = "/auth/token"): Response {
  return page(status, "Sign-in failed", `<p>${escapeHtml(message)}</p><p>Nothing was issued. <a href="${escapeHtml(startAgain)}">Start again</a>.</p>`, headers);
}

/** The redirect to the provider, with the page headers too. */
export function redirect(location: string, headers: Record<string, string>): Response {
  return new Response(null, { status: 302, headers: { location, ...PAGE_HEADERS, ...headers } });
}
