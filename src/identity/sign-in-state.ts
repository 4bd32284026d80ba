// The browser sign-in's state (design/identity.md, "Browser sign-in"): what GET /auth/login/<p> started
// (provider, state, nonce, PKCE verifier, whether it rotates) rides in a cookie MACed under a key derived
// from auth.signing_key, so the gateway stores nothing per sign-in, a page cannot forge one, and a
// gateway restart keeps sign-ins in flight. HttpOnly, SameSite=Lax (the provider's redirect back is a
// top-level GET), Path=/auth (the console's sign-in on the admin listener: its own name, Path=/ui/callback),
// ten minutes. Single use: the callback clears it, and a state once redeemed is remembered until it would
// have expired anyway, so a replayed callback is refused.

/** A state cookie's name and path: the data plane's browser sign-in, or the console's on the admin listener. */
export interface StateCookieScope {
  readonly name: string;
  readonly path: string;
}

export const STATE_COOKIE: StateCookieScope = { name: "gw_sign_in", path: "/auth" };
export const STATE_TTL_SECS = 600;
/** Sign-ins started and not yet expired that one process remembers as used; past it the oldest go. */
const MAX_REMEMBERED = 100_000;

export interface SignInState {
  /** The provider instance the sign-in was started for. */
  readonly p: string;
  /** `state` sent to the provider. */
  readonly s: string;
  /** The OIDC nonce (forge: unused). */
  readonly n: string;
  /** The PKCE code_verifier. */
  readonly v: string;
  /** A Refresh: the sign-in starts a new generation. */
  readonly r: boolean;
  /** Unix seconds. */
  readonly e: number;
}

const random = (bytes = 32) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("base64url");
const mac = (signingKey: string, data: string) => new Bun.CryptoHasher("sha256", `sign-in-state:${signingKey}`).update(data).digest("base64url");

/** A new sign-in's state, and the code_challenge (S256) of its verifier. */
export function newSignIn(provider: string, rotate: boolean, nowSecs: number): { state: SignInState; challenge: string } {
  const state: SignInState = { p: provider, s: random(), n: random(), v: random(48), r: rotate, e: nowSecs + STATE_TTL_SECS };
  return { state, challenge: new Bun.CryptoHasher("sha256").update(state.v).digest("base64url") };
}

export function stateCookie(state: SignInState, signingKey: string, secure: boolean, scope: StateCookieScope = STATE_COOKIE): string {
  const payload = Buffer.from(JSON.stringify(state)).toString("base64url");
  return `${scope.name}=${payload}.${mac(signingKey, payload)}; HttpOnly; SameSite=Lax; Path=${scope.path}; Max-Age=${STATE_TTL_SECS}${secure ? "; Secure" : ""}`;
}

export const clearedStateCookie = (secure: boolean, scope: StateCookieScope = STATE_COOKIE) => `${scope.name}=; HttpOnly; SameSite=Lax; Path=${scope.path}; Max-Age=0${secure ? "; Secure" : ""}`;

export type StateCheck = { readonly ok: true; readonly state: SignInState } | { readonly ok: false; readonly reason: string };

export class SignInStates {
  /** Redeemed states -> their expiry (unix seconds), oldest first. */
  readonly #used = new Map<string, number>();

  /** The callback's check: the cookie is ours, unexpired, unused, for this provider, and names this state. */
  redeem(cookieHeader: string | null, provider: string, returnedState: string | null, signingKey: string, nowSecs: number, scope: StateCookieScope = STATE_COOKIE): StateCheck {
    const value = cookieValue(cookieHeader, scope.name);
    if (value === undefined) return { ok: false, reason: "this sign-in has no state cookie: it expired, was already used, or was started in another browser" };
    const dot = value.lastIndexOf(".");
    const payload = value.slice(0, dot);
    const presented = Buffer.from(value.slice(dot + 1));
    const expected = Buffer.from(mac(signingKey, payload));
    if (dot <= 0 || presented.length !== expected.length || !crypto.timingSafeEqual(presented, expected)) return { ok: false, reason: "the sign-in state cookie is not one this gateway made" };
    let state: SignInState;
    try {
      state = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as SignInState;
    } catch {
      return { ok: false, reason: "the sign-in state cookie is not one this gateway made" };
    }
    if (state.e <= nowSecs) return { ok: false, reason: "this sign-in took longer than ten minutes; start again" };
    if (state.p !== provider) return { ok: false, reason: "this sign-in was started for another provider" };
    const returned = Buffer.from(returnedState ?? "");
    const mine = Buffer.from(state.s);
    if (returned.length !== mine.length || !crypto.timingSafeEqual(returned, mine)) return { ok: false, reason: "the provider returned a state that is not this sign-in's" };
    this.#forgetExpired(nowSecs);
    if (this.#used.has(state.s)) return { ok: false, reason: "this sign-in was already completed; start again" };
    if (this.#used.size >= MAX_REMEMBERED) this.#used.delete(this.#used.keys().next().value!);
    this.#used.set(state.s, state.e);
    return { ok: true, state };
  }

  #forgetExpired(nowSecs: number): void {
    for (const [s, e] of this.#used) {
      if (e > nowSecs) break;
      this.#used.delete(s);
    }
  }
}

/** One cookie's value from a Cookie header (first match; no decoding: ours is base64url). */
function cookieValue(header: string | null, name: string): string | undefined {
  if (header === null) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
