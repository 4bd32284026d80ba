// The floor proxy: the least an HTTP proxy in Bun can do for a chat request, so the benchmark can tell
// the gateway's own cost from Bun's. Parse the JSON body, map the model alias, fetch the upstream with
// the provider key, pipe the answer back (streams included, chunk by chunk, untouched). No translation:
// each vendor path goes to the same path on the upstream, in that vendor's protocol:
//   /v1/chat/completions, /v1/messages, /v1/responses,  model alias in the body, key as the vendor wants it
//   /v2/chat (Cohere)                                    (Bearer but for Anthropic's x-api-key);
//   /v1beta/models/{alias}:{method}[?alt=sse]            Gemini: the alias in the path, x-goog-api-key;
//   /model/{alias}/converse[-stream]                     Bedrock: the alias in the path, and the request
//                                                        signed with SigV4 (a proxy to Bedrock must sign:
//                                                        ~20 lines below, with a per-day signing key cache).
// Built by bench/dataplane.ts with `bun build --compile`. Env: FLOOR_UPSTREAM (base URL), FLOOR_PORT,
// FLOOR_KEY, FLOOR_AWS_KEY_ID, FLOOR_AWS_SECRET, FLOOR_AWS_REGION.
const upstream = process.env.FLOOR_UPSTREAM ?? "http://127.0.0.1:9000";
const key = process.env.FLOOR_KEY ?? "bench-key";
const aws = { id: process.env.FLOOR_AWS_KEY_ID ?? "", secret: process.env.FLOOR_AWS_SECRET ?? "", region: process.env.FLOOR_AWS_REGION ?? "us-east-1" };
const MODELS: Record<string, string> = {
  gpt: "gpt-4o-mini",
  claude: "claude-haiku-4-5",
  rsp: "gpt-4.1-mini",
  gemini: "gemini-2.5-flash",
  "claude-bedrock": "us.anthropic.claude-haiku-4-5-20251001-v1:0",
  command: "command-a-03-2025",
};
const BODY_MODEL_PATHS = new Set(["/v1/chat/completions", "/v1/messages", "/v1/responses", "/v2/chat"]);
const GEMINI = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;
const BEDROCK = /^\/model\/([^/]+)\/(converse|converse-stream)$/;

// SigV4 (AWS4-HMAC-SHA256) of a POST with a JSON body: host, content-type and the two x-amz-* headers signed.
const hex = (data: string) => new Bun.CryptoHasher("sha256").update(data).digest("hex");
const hmac = (key: string | Uint8Array, data: string) => new Bun.CryptoHasher("sha256", key).update(data).digest() as Uint8Array;
const awsEncode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
let signingDay = "";
let signingKey: Uint8Array = new Uint8Array();
function sign(url: URL, body: string, headers: Record<string, string>) {
  const date = new Date().toISOString().replace(/[-:]|\.\d{3}/g, "");
  const day = date.slice(0, 8);
  if (day !== signingDay) (signingDay = day), (signingKey = hmac(hmac(hmac(hmac(`AWS4${aws.secret}`, day), aws.region), "bedrock"), "aws4_request"));
  const payload = hex(body);
  // Every service but S3 signs each path segment encoded twice: once on the wire, once more here.
  const canonicalPath = url.pathname.split("/").map(awsEncode).join("/");
  const signed = "content-type;host;x-amz-content-sha256;x-amz-date";
  const canonical = `POST\n${canonicalPath}\n\ncontent-type:${headers["content-type"]}\nhost:${url.host}\nx-amz-content-sha256:${payload}\nx-amz-date:${date}\n\n${signed}\n${payload}`;
  const scope = `${day}/${aws.region}/bedrock/aws4_request`;
  const signature = new Bun.CryptoHasher("sha256", signingKey).update(`AWS4-HMAC-SHA256\n${date}\n${scope}\n${hex(canonical)}`).digest("hex");
  headers["x-amz-date"] = date;
  headers["x-amz-content-sha256"] = payload;
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${aws.id}/${scope}, SignedHeaders=${signed}, Signature=${signature}`;
}

export const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(process.env.FLOOR_PORT ?? 0),
  idleTimeout: 120,
  async fetch(request) {
    const url = new URL(request.url);
    let path = url.pathname;
    if (request.method === "GET" && path === "/healthz") return new Response("ok");
    // The chat paths first, so the OpenAI and Anthropic scenarios cost what they did before Gemini and Bedrock.
    const inBody = BODY_MODEL_PATHS.has(path);
    const gemini = inBody ? null : GEMINI.exec(path);
    const bedrock = inBody || gemini ? null : BEDROCK.exec(path);
    if (request.method !== "POST" || (!inBody && !gemini && !bedrock)) return new Response("not found", { status: 404 });
    let body: Record<string, unknown>;
    try {
      body = (await request.json()) as Record<string, unknown>;
    } catch {
      return Response.json({ error: { message: "body is not JSON" } }, { status: 400 });
    }
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (inBody) {
      body.model = MODELS[body.model as string] ?? body.model;
      if (path === "/v1/messages") Object.assign(headers, { "x-api-key": key, "anthropic-version": request.headers.get("anthropic-version") ?? "2023-06-01" });
      else headers.authorization = `Bearer ${key}`;
    } else if (gemini) {
      path = `/v1beta/models/${MODELS[gemini[1]!] ?? gemini[1]}:${gemini[2]}${url.search}`;
      headers["x-goog-api-key"] = key;
    } else {
      const alias = decodeURIComponent(bedrock![1]!);
      path = `/model/${encodeURIComponent(MODELS[alias] ?? alias)}/${bedrock![2]}`;
    }
    const text = JSON.stringify(body);
    if (bedrock) sign(new URL(upstream + path), text, headers);
    try {
      const answer = await fetch(upstream + path, { method: "POST", headers, body: text, signal: request.signal });
      return new Response(answer.body, { status: answer.status, headers: { "content-type": answer.headers.get("content-type") ?? "application/json" } });
    } catch (error) {
      return Response.json({ error: { message: `upstream: ${(error as Error).message}` } }, { status: 502 });
    }
  },
});
console.log(JSON.stringify({ msg: "floor proxy started", data: `${server.hostname}:${server.port}` }));
process.on("SIGTERM", () => process.exit(0)); // exit cleanly (a --cpu-prof run writes its profile)
