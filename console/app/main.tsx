// The operator console (design/console.md): sign-in, the shell with its navigation, and the screen the
// address names. Every screen reads the admin API with the signed-in bearer; nothing loads from elsewhere.
import "./style.css";
import { render } from "preact";
import { useState } from "preact/hooks";
import { detectOpenPlane, online, signIn, signInProviders, signOut, signedOutBecause, token } from "./api.ts";
import { BASE, navigate, path } from "./route.ts";
import { session, sessionError } from "./session.ts";
import { SCREENS } from "./screens/index.ts";

function SignIn() {
  const [value, setValue] = useState("");
  return (
    <main class="sign-in">
      <h1>Gateway console</h1>
      {signedOutBecause.value !== null && (
        <p class="note error" role="alert">
          {signedOutBecause.value}
        </p>
      )}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (value.trim() !== "") signIn(value.trim());
        }}
      >
        <label for="admin-token">Admin token</label>
        <input id="admin-token" name="admin-token" type="password" autocomplete="off" required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        <p class="hint">Kept in this tab only (sessionStorage) and sent as a bearer header; closing the tab forgets it.</p>
        <button type="submit" class="primary">
          Sign in
        </button>
      </form>
      {signInProviders.value.length > 0 && (
        <ul class="providers" aria-label="Identity providers">
          {signInProviders.value.map((p) => (
            <li key={p}>
              <a class="button" href={`${BASE}/login/${encodeURIComponent(p)}`}>
                Sign in with {p}
              </a>
            </li>
          ))}
        </ul>
      )}
    </main>
  );
}

function Shell() {
  const current = SCREENS.find((s) => s.path === path.value || (s.path !== `${BASE}/` && path.value.startsWith(`${s.path}/`))) ?? SCREENS[0]!;
  const Screen = current.view;
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Gateway console</span>
        <nav aria-label="Screens">
          <ul>
            {SCREENS.map((s) => (
              <li key={s.path}>
                <a
                  href={s.path}
                  aria-current={s === current ? "page" : undefined}
                  onClick={(event) => {
                    if (event.ctrlKey || event.metaKey || event.shiftKey) return;
                    event.preventDefault();
                    navigate(s.path);
                  }}
                >
                  {s.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who">
          {session.value ? `${session.value.principal} (${session.value.scope})` : ""}
          {token.value !== "" && (
            <button type="button" onClick={() => signOut()}>
              Sign out
            </button>
          )}
        </span>
      </header>
      {token.value === "" && (
        <p class="banner" role="status">
          This admin plane is open: anyone who reaches it may change everything. Set auth.admin_auth (docs/operations.md).
        </p>
      )}
      {!online.value && (
        <p class="banner" role="status">
          Connection to the gateway lost; retrying. Live screens resume when it returns.
        </p>
      )}
      {sessionError.value !== null && (
        <p class="note error" role="alert">
          {sessionError.value}
        </p>
      )}
      <main id="main" tabIndex={-1}>
        <Screen />
      </main>
    </>
  );
}

function App() {
  return token.value === null ? <SignIn /> : <Shell />;
}

if (!location.pathname.startsWith(`${BASE}/`)) navigate(`${BASE}/`);
void detectOpenPlane().finally(() => render(<App />, document.getElementById("app")!));
