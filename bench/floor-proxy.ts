// The floor proxy: the least an HTTP proxy in Bun can do for a chat request, so the benchmark can tell
// the gateway's own cost from Bun's. Parse the JSON body, map the model alias, fetch the upstream with
// the provider key, pipe the answer back (streams included, chunk by chunk, untouched). No translation:
// /v1/chat/completions goes to the OpenAI upstream, /v1/messages to the Anthropic one.
// Built by bench/dataplane.ts with `bun build --compile`. Env: FLOOR_UPSTREAM (base URL), FLOOR_PORT.
const upstream = process.env.FLOOR_UPSTREAM ?? "http://127.0.0.1:9000";
const key = process.env.FLOOR_KEY ?? "bench-key";
const MODELS: Record<string, string> = { gpt: "gpt-4o-mini", claude: "claude-haiku-4-5" };

export const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(process.env.FLOOR_PORT ?? 0),
  idleTimeout: 120,
  async fetch(request) {
    const path = new URL(request.url).pathname;
    if (request.method === "GET" && path === "/healthz") return new Response("ok");
    if (request.method !== "POST" || (path !== "/v1/chat/completions" && path !== "/v1/messages")) return new Response("not found", { status: 404 });
    let body: Record<string, unknown>;
    try {
      body = (await request.json()) as Record<string, unknown>;
    } catch {
      return Response.json({ error: { message: "body is not JSON" } }, { status: 400 });
    }
    body.model = MODELS[body.model as string] ?? body.model;
    const headers: Record<string, string> =
      path === "/v1/messages"
        ? { "content-type": "application/json", "x-api-key": key, "anthropic-version": request.headers.get("anthropic-version") ?? "2023-06-01" }
        : { "content-type": "application/json", authorization: `Bearer ${key}` };
    try {
      const answer = await fetch(upstream + path, { method: "POST", headers, body: JSON.stringify(body), signal: request.signal });
      return new Response(answer.body, { status: answer.status, headers: { "content-type": answer.headers.get("content-type") ?? "application/json" } });
    } catch (error) {
      return Response.json({ error: { message: `upstream: ${(error as Error).message}` } }, { status: 502 });
    }
  },
});
console.log(JSON.stringify({ msg: "floor proxy started", data: `${server.hostname}:${server.port}` }));
process.on("SIGTERM", () => process.exit(0)); // exit cleanly (a --cpu-prof run writes its profile)
