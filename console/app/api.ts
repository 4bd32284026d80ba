// The admin API as the console calls it: the generated client (clients/admin-client.ts, the same one the
// docs print) over a fetch that carries the operator's bearer (never in a URL), notices a lost connection
// so the screens say so and resume when it returns, and sends a 401 back to sign-in.
import { signal } from "@preact/signals";
import { AdminApiError, AdminClient } from "../../clients/admin-client.ts";

export { AdminApiError };
const TOKEN_KEY = "gateway-console-token";

/** The fragment member a sign-in with an identity provider hands the bearer over in (src/admin/console-sign-in.ts). */
const HANDED_OVER = "#id_token=";

/**
 * The bearer a provider sign-in just handed over, kept like a pasted token. A fragment never reaches a
 * server or a Referer; it is cleared from the address (and so from history) before anything renders.
 */
function handedOver(): string | null {
  if (!location.hash.startsWith(HANDED_OVER)) return null;
  const value = decodeURIComponent(location.hash.slice(HANDED_OVER.length));
  history.replaceState(history.state, "", location.pathname + location.search);
  if (value === "") return null;
  sessionStorage.setItem(TOKEN_KEY, value);
  return value;
}

/** The bearer, kept in sessionStorage: closing the tab forgets it. "" on an open admin plane (no credential asked). */
export const token = signal<string | null>(handedOver() ?? sessionStorage.getItem(TOKEN_KEY));
/** The identity providers the console offers a sign-in with (the admin pointer page's sign_in_providers). */
export const signInProviders = signal<readonly string[]>([]);
/** False while the gateway cannot be reached. */
export const online = signal(true);
/** Why the last sign-out happened (a 401), shown on the sign-in form. */
export const signedOutBecause = signal<string | null>(null);

export function signIn(value: string): void {
  sessionStorage.setItem(TOKEN_KEY, value);
  signedOutBecause.value = null;
  token.value = value;
}

/**
 * An admin plane with no admin_auth answers without a credential: the console needs no sign-in there.
 * Where it asks one, the providers to offer a sign-in with.
 */
export async function detectOpenPlane(): Promise<void> {
  // The admin listener's pointer page says so without a credential (and so without a 401 in the browser's console).
  const page = (await fetch("/", { headers: { accept: "application/json" } }).then((r) => r.json(), () => undefined)) as { admin_credential?: string; sign_in_providers?: unknown } | undefined;
  if (Array.isArray(page?.sign_in_providers)) signInProviders.value = page.sign_in_providers.filter((p): p is string => typeof p === "string");
  if (page?.admin_credential === "none" && token.value === null) token.value = "";
}

export function signOut(reason: string | null = null): void {
  sessionStorage.removeItem(TOKEN_KEY);
  signedOutBecause.value = reason;
  token.value = null;
}

/** fetch with the bearer; a network failure marks the gateway unreachable. */
export async function adminFetch(input: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.delete("x-admin-token");
  if (token.value) headers.set("authorization", `Bearer ${token.value}`);
  let response: Response;
  try {
    response = await fetch(input, { ...init, headers });
  } catch (error) {
    online.value = false;
    throw error;
  }
  online.value = true;
  if (response.status === 401) signOut("The gateway did not accept the credential (401). Sign in again.");
  return response;
}

export const admin = new AdminClient({ baseUrl: location.origin, fetch: adminFetch as typeof fetch });

/** What to show for a failed call: a 403 names the scope it needed. */
export function failure(error: unknown): string {
  if (error instanceof AdminApiError) return error.status === 403 ? `Not allowed (403): ${error.message}` : error.message;
  if (!online.value) return "The gateway cannot be reached; retrying.";
  return (error as Error).message ?? String(error);
}

/** Every item of a cursor-paged list, newest pages first, stopping at `max` items; `more`: the cursor had not ended. */
export async function allPages<T>(page: (cursor: string | null) => Promise<{ items: T[]; next_cursor: string | null }>, max: number): Promise<{ items: T[]; more: boolean }> {
  const items: T[] = [];
  let cursor: string | null = null;
  do {
    const next: { items: T[]; next_cursor: string | null } = await page(cursor);
    items.push(...next.items);
    cursor = next.next_cursor;
  } while (cursor !== null && items.length < max);
  return { items, more: cursor !== null };
}
