// What the console's identity-provider sign-in adds to every admin request, in one process (no HTTP):
// the path test in front of the console's files (isConsoleSignInPath), and the provider list the pointer
// page names (consoleSignInProviders, worked out once per config snapshot). The data plane runs none of it.
// Run: bun bench/console-sign-in.ts
import { consoleSignInProviders, isConsoleSignInPath } from "../src/admin/console-sign-in.ts";
import { loadBoot } from "../src/config/lifecycle.ts";
import { parseConfigText } from "../src/config/load.ts";

const ENV = { GW_SIGNING_KEY: "bench-signing-key-0123456789abcdef", OP_SECRET: "bench-op-secret" };
const TEXT = `providers: {local: {protocol: mock}}
models: {chat: {provider: local}}
auth:
  signing_key: {env: GW_SIGNING_KEY}
  admin_auth: [corp]
public_url: http://127.0.0.1:8080
role_bindings: {corp: {gw-admins: {admin_scope: full}}}
identity-providers:
  corp: {module: oidc, settings: {issuer: "https://idp.example", audience: gw}, browser_login: {client_secret: {env: OP_SECRET}}, max_admin_scope: full}
`;

const boot = loadBoot(parseConfigText(TEXT, "bench", ENV), "bench", {}, ENV);
if (!boot.result.ok) throw new Error(boot.result.errors.join("; "));
const snapshot = boot.result.snapshot;

function perCall(label: string, n: number, body: (i: number) => unknown): void {
  let sink = 0;
  for (let i = 0; i < 100_000; i++) sink += body(i) ? 1 : 0; // warm the JIT
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = Bun.nanoseconds();
    for (let i = 0; i < n; i++) sink += body(i) ? 1 : 0;
    runs.push((Bun.nanoseconds() - start) / n);
  }
  runs.sort((a, b) => a - b);
  console.log(`${label}: median ${runs[2]!.toFixed(1)} ns per call (5 runs of ${n}; min ${runs[0]!.toFixed(1)}, max ${runs[4]!.toFixed(1)})`);
  // Read, so the loops' work cannot be dropped as dead code.
  if (sink === -1) console.log(sink);
}

const paths = ["/api/v1/admin/keys", "/api/v1/admin/usage/series", "/ui/keys", "/ui/callback/corp"];
perCall("isConsoleSignInPath (admin request path test)", 10_000_000, (i) => isConsoleSignInPath(paths[i & 3]!));
perCall("consoleSignInProviders (pointer page, same snapshot)", 10_000_000, () => consoleSignInProviders(snapshot).length);
