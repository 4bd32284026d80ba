// The upstream HTTP/1.1 client (transport/http1.ts) against real local servers: Bun.serve for honest answers,
// raw TCP servers for what a hostile or broken upstream writes.
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import net from "node:net";
import { gzipSync } from "node:zlib";
import { type Http1Answer, type Http1Call, send } from "../../src/transport/http1.ts";
import { isUpstreamTimeout, transportCause } from "../../src/transport/upstream.ts";
import { makeTlsDir } from "../support/tls.ts";
import { until } from "../support/until.ts";

const never = new AbortController().signal;
const POOL = { maxIdlePerHost: 8, idleTimeoutSecs: 30 };

function call(url: string, extra: Partial<Http1Call> = {}): Http1Call {
  return { url, headers: { "content-type": "application/json", authorization: "Bearer k" }, body: '{"q":"é"}', signal: never, timeoutMs: 5000, pool: POOL, decode: true, ...extra };
}

/** The whole body: the first piece read, the rest piped (as the data plane does). */
async function drain(answer: Http1Answer): Promise<{ text: string; pieces: number }> {
  const first = await answer.body.read();
  if (first === null) return { text: "", pieces: 0 };
  const pieces: Uint8Array[] = [first];
  await new Promise<void>((resolve, reject) => answer.body.pipe({ chunk: (bytes) => pieces.push(bytes), end: resolve, fail: reject }));
  return { text: Buffer.concat(pieces).toString(), pieces: pieces.length };
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a failure");
}

// ---- an honest server

const seen: { method: string; headers: Headers; body: string; port: number }[] = [];
const honest = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request, server) {
    const body = await request.text();
    seen.push({ method: request.method, headers: request.headers, body, port: server.requestIP(request)!.port });
    const path = new URL(request.url).pathname;
    if (path === "/stream") {
      let n = 0;
      return new Response(
        new ReadableStream({
          async pull(controller) {
            await Bun.sleep(2);
            controller.enqueue(new TextEncoder().encode(`data: {"n":${n}}\n\n`));
            if (++n === 20) controller.close();
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      );
    }
    if (path === "/204") return new Response(null, { status: 204, headers: { "content-encoding": "gzip" } });
    if (path === "/gzip") return new Response(gzipSync("zipped ".repeat(100)), { headers: { "content-encoding": "gzip", "content-type": "text/plain" } });
    return Response.json({ ok: true, path: new URL(request.url).search }, { headers: { "X-Request-Id": "r1" } });
  },
});
const base = `http://127.0.0.1:${honest.port}`;

// ---- raw servers: `answer` writes whatever it likes to each request

interface Raw {
  url: string;
  connections: number;
  stop(): void;
}
function raw(answer: (socket: net.Socket, request: string, index: number) => void): Promise<Raw> {
  const state = { connections: 0, requests: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    let text = "";
    socket.on("data", (data) => {
      text += data.toString("latin1");
      const end = text.indexOf("\r\n\r\n");
      if (end === -1) return;
      const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? 0);
      if (text.length < end + 4 + length) return;
      const request = text;
      text = "";
      answer(socket, request, state.requests++);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v1`,
        get connections() {
          return state.connections;
        },
        stop() {
          for (const socket of sockets) socket.destroy();
          server.close();
        },
      }),
    ),
  );
}

const servers: Raw[] = [];
async function rawServer(answer: Parameters<typeof raw>[0]): Promise<Raw> {
  const server = await raw(answer);
  servers.push(server);
  return server;
}
afterAll(() => {
  honest.stop(true);
  for (const server of servers) server.stop();
});

const OK = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\nok";

describe("honest answers", () => {
  test("a content-length answer: status, lowercased headers, body; the request as written", async () => {
    const answer = await send(call(`${base}/v1/chat?x=1`, { headers: { "Content-Type": "application/json", host: "evil", "content-length": "1", "x-api-key": "k" } }));
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-request-id")).toBe("r1");
    expect(answer.encoded).toBe(false);
    expect(JSON.parse((await drain(answer)).text)).toEqual({ ok: true, path: "?x=1" });
    const request = seen.at(-1)!;
    expect(request.method).toBe("POST");
    expect(request.body).toBe('{"q":"é"}');
    expect(request.headers.get("host")).toBe(`127.0.0.1:${honest.port}`);
    expect(request.headers.get("content-length")).toBe(String(Buffer.byteLength('{"q":"é"}')));
    expect(request.headers.get("accept-encoding")).toBe("identity");
    expect(request.headers.get("x-api-key")).toBe("k");
  });

  test("a chunked stream arrives whole, in pieces, in order", async () => {
    const answer = await send(call(`${base}/stream`));
    expect(answer.headers.get("content-type")).toBe("text/event-stream");
    const { text, pieces } = await drain(answer);
    expect(text).toBe(Array.from({ length: 20 }, (_, n) => `data: {"n":${n}}\n\n`).join(""));
    expect(pieces).toBeGreaterThan(1);
  });

  test("keep-alive: sequential calls share one connection; maxIdlePerHost 0 closes each", async () => {
    const ports = new Set<number>();
    for (let i = 0; i < 5; i++) {
      await drain(await send(call(`${base}/reuse`)));
      ports.add(seen.at(-1)!.port);
    }
    expect(ports.size).toBe(1);
    // A pool is per origin and fixed by its first call: `localhost` is another origin.
    const closing = `http://localhost:${honest.port}`;
    const fresh = new Set<number>();
    for (let i = 0; i < 3; i++) {
      await drain(await send(call(`${closing}/x`, { pool: { maxIdlePerHost: 0, idleTimeoutSecs: 30 } })));
      fresh.add(seen.at(-1)!.port);
    }
    expect(fresh.size).toBe(3);
  });

  test("gzip: decoded as it comes for a stream; left encoded for an answer read whole", async () => {
    const decoded = await send(call(`${base}/gzip`));
    expect(decoded.encoded).toBe(false);
    expect(decoded.headers.get("content-encoding")).toBeNull();
    expect((await drain(decoded)).text).toBe("zipped ".repeat(100));
    const whole = await send(call(`${base}/gzip`, { decode: false }));
    expect(seen.at(-1)!.headers.get("accept-encoding")).toBe("gzip, deflate, br");
    expect(whole.encoded).toBe(true);
    expect(whole.headers.get("content-encoding")).toBe("gzip");
    const first = await whole.body.read();
    expect(Buffer.from(first!).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    whole.body.cancel();
    // No body, so nothing to decode (an empty gzip stream would not decode).
    const empty = await send(call(`${base}/204`));
    expect([empty.status, empty.encoded, await empty.body.read()]).toEqual([204, false, null]);
  });

  test("a body larger than the socket takes at once is written whole", async () => {
    const body = JSON.stringify({ text: "ü".repeat(4 << 20) });
    await drain(await send(call(`${base}/large`, { body })));
    expect(seen.at(-1)!.body === body).toBe(true);
  });

  test("an idle connection is closed after idleTimeoutSecs", async () => {
    let closedAt = 0;
    const server = await rawServer((socket) => {
      socket.on("close", () => (closedAt = performance.now()));
      socket.write(OK);
    });
    await drain(await send(call(server.url, { pool: { maxIdlePerHost: 4, idleTimeoutSecs: 1 } })));
    const idleFrom = performance.now();
    await Bun.sleep(1700);
    expect(closedAt - idleFrom).toBeGreaterThanOrEqual(1000);
    await drain(await send(call(server.url)));
    expect(server.connections).toBe(2);
  });

  test("a header value with a line break is refused before anything is sent", async () => {
    const error = await failure(send(call(`${base}/x`, { headers: { "x-a": "1\r\nx-b: 2" } })));
    expect((error as { code?: string }).code).toBe("ERR_INVALID_HEADER");
    // A call's own headers (a client's forwarded ones) are checked on every call too.
    const forwarded = await failure(send(call(`${base}/x`, { headers: { "x-a": "1" }, extra: { "anthropic-beta": "a\r\nx-injected: 1" } })));
    expect((forwarded as { code?: string }).code).toBe("ERR_INVALID_HEADER");
  });

  test("a call's own headers go beside the provider's; a name the provider's headers have is theirs", async () => {
    const own = { "x-api-key": "k", "anthropic-version": "2023-06-01" };
    for (const beta of ["b1", "b2"]) {
      const answer = await send(call(`${base}/v1/chat`, { headers: own, extra: { "anthropic-beta": beta, "anthropic-version": "1999-01-01" } }));
      await drain(answer);
      const request = seen.at(-1)!;
      expect([request.headers.get("x-api-key"), request.headers.get("anthropic-beta"), request.headers.get("anthropic-version")]).toEqual(["k", beta, "2023-06-01"]);
    }
  });
});

describe("hostile and broken upstreams", () => {
  test("a head over 64 KiB is refused", async () => {
    const server = await rawServer((socket) => socket.write(`HTTP/1.1 200 OK\r\nx-big: ${"a".repeat(70_000)}\r\n\r\n`));
    const error = await failure(send(call(server.url)));
    expect((error as { code?: string }).code).toBe("EBADRESPONSE");
  });

  test("a bad chunk size fails the body", async () => {
    const server = await rawServer((socket) => socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n"));
    const error = await failure(send(call(server.url)).then(drain));
    expect((error as { code?: string }).code).toBe("EBADRESPONSE");
  });

  test("chunk extensions, trailers and a body split at every byte", async () => {
    const text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\nA\r\n, world..!\r\n0\r\nx-trailer: 1\r\n\r\n";
    const server = await rawServer(async (socket) => {
      socket.setNoDelay(true);
      for (const byte of text) {
        socket.write(byte);
        await Bun.sleep(0);
      }
    });
    expect((await drain(await send(call(server.url)))).text).toBe("hello, world..!");
  });

  test("a reset mid-body fails it as a reset", async () => {
    const server = await rawServer((socket) => {
      socket.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly ten..");
      setTimeout(() => socket.resetAndDestroy(), 20);
    });
    const error = await failure(send(call(server.url)).then(drain));
    expect(transportCause(error)).toBe("connection reset");
  });

  test("a close before the head rejects the call as a reset", async () => {
    const server = await rawServer((socket) => socket.end());
    expect(transportCause(await failure(send(call(server.url))))).toBe("connection reset");
  });

  test("silence past timeoutMs: before the head, and between body bytes", async () => {
    const server = await rawServer((socket, _request, index) => {
      if (index > 0) socket.write("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nfive.");
    });
    let started = performance.now();
    const error = await failure(send(call(server.url, { timeoutMs: 1000 })));
    const waited = performance.now() - started;
    expect(isUpstreamTimeout(error)).toBe(true);
    expect(waited).toBeGreaterThanOrEqual(1000);
    expect(waited).toBeLessThan(1900);
    started = performance.now();
    const body = await failure(send(call(server.url, { timeoutMs: 1000 })).then(drain));
    expect(isUpstreamTimeout(body)).toBe(true);
    expect(performance.now() - started).toBeLessThan(1900);
  });

  test("a pooled connection the server dropped: the call is retried once on a new one", async () => {
    const server = await rawServer((socket, _request, index) => {
      // The second request meets a connection its server closes without a word (as after its idle timeout).
      if (index === 1) socket.destroy();
      else socket.write(OK);
    });
    const url = server.url;
    expect((await drain(await send(call(url)))).text).toBe("ok");
    expect((await drain(await send(call(url)))).text).toBe("ok");
    expect(server.connections).toBe(2);
  });

  test("`connection: close` and HTTP/1.0 answers are not reused; a body until close ends at the close", async () => {
    const server = await rawServer((socket, _request, index) => {
      if (index === 0) socket.write("HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok");
      else socket.end("HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end");
    });
    expect((await drain(await send(call(server.url)))).text).toBe("ok");
    expect((await drain(await send(call(server.url)))).text).toBe("until the end");
    expect(server.connections).toBe(2);
  });

  test("interim 1xx answers are skipped, whatever the reads' boundaries", async () => {
    const server = await rawServer(async (socket) => {
      socket.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n");
      await Bun.sleep(10);
      socket.write("\r\nHTTP/1.1 201 Created\r\ncontent-len");
      await Bun.sleep(10);
      socket.write("gth: 4\r\n\r\ndone");
    });
    const answer = await send(call(server.url));
    expect(answer.status).toBe(201);
    expect((await drain(answer)).text).toBe("done");
  });

  test("an endless run of interim answers is refused", async () => {
    const server = await rawServer((socket) => socket.write("HTTP/1.1 100 Continue\r\n\r\n".repeat(20)));
    expect((await failure(send(call(server.url))) as { code?: string }).code).toBe("EBADRESPONSE");
  });

  test("pause stops reading until resume; a client abort closes the connection and fails the body", async () => {
    let closed = false;
    const server = await rawServer(async (socket) => {
      socket.on("close", () => (closed = true));
      socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n");
      for (const letter of "bc") {
        await Bun.sleep(20);
        socket.write(`1\r\n${letter}\r\n`);
      }
    });
    const client = new AbortController();
    const answer = await send(call(server.url, { signal: client.signal }));
    const got: string[] = [];
    let failed: Error | undefined;
    expect(Buffer.from((await answer.body.read())!).toString()).toBe("a");
    answer.body.pipe({
      chunk: (bytes) => {
        got.push(Buffer.from(bytes).toString());
        answer.body.pause();
      },
      end: () => {},
      fail: (error) => (failed = error),
    });
    await Bun.sleep(80);
    expect(got).toEqual(["b"]);
    answer.body.resume();
    await Bun.sleep(20);
    expect(got).toEqual(["b", "c"]);
    client.abort();
    await until(() => failed !== undefined);
    expect(failed?.name).toBe("AbortError");
    await until(() => closed);
  });

  test("pieces nobody takes yet (before pipe, between reads) stop the reading instead of piling up", async () => {
    const total = 48 * 1024 * 1024;
    const block = Buffer.alloc(1024 * 1024, 0x61);
    let flushed = 0;
    const server = await rawServer((socket) => {
      socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${total}\r\n\r\n`);
      let sent = 0;
      const more = () => {
        while (sent < total) {
          sent += block.byteLength;
          if (!socket.write(block, () => (flushed += block.byteLength))) return void socket.once("drain", more);
        }
      };
      more();
    });
    const answer = await send(call(server.url));
    let got = (await answer.body.read())!.byteLength;
    await Bun.sleep(400);
    // Only what the sockets' buffers hold has left the server: the client stopped reading.
    expect(flushed).toBeLessThan(total / 2);
    await new Promise<void>((resolve, reject) => answer.body.pipe({ chunk: (bytes) => (got += bytes.byteLength), end: resolve, fail: reject }));
    expect(got).toBe(total);
  });

  test("heads an honest server would not write are refused as malformed, never guessed at", async () => {
    const { parseHead, Framing } = await import("../../src/transport/http1-head.ts");
    for (const bad of [
      "HTTP/2 200 OK",
      "HTTP/1.1 2000 OK",
      "HTTP/1.1 200 OK\r\nX-A: a\r\n folded",
      "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3",
      "HTTP/1.1 200 OK\r\ncontent-length: -1",
      "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked",
      "HTTP/1.1 200 OK\r\n: no name",
    ]) expect(parseHead(bad)).toBeInstanceOf(Error);
    const server = await rawServer((socket) => socket.write("HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n"));
    expect((await failure(send(call(server.url))) as { code?: string }).code).toBe("EBADRESPONSE");
  });

  test("a stream that does not decode as its content-encoding, and chunk data past its size, fail the body", async () => {
    const client = new AbortController();
    let listeners = 0;
    const signal = client.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<typeof add>) => (listeners++, add(...args))) as typeof add;
    signal.removeEventListener = ((...args: Parameters<typeof remove>) => (listeners--, remove(...args))) as typeof remove;
    const server = await rawServer((socket, _request, index) => {
      if (index === 0) socket.write("HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 9\r\n\r\nnot gzip!");
      else socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nabc\r\n0\r\n\r\n");
    });
    for (let i = 0; i < 2; i++) {
      const error = await failure(drain(await send(call(server.url, { signal }))));
      expect((error as { code?: string }).code).toBe("EBADRESPONSE");
      expect(listeners).toBe(0);
    }
  });

  test("the chunks of one read come as one piece", async () => {
    const server = await rawServer((socket) => socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\na\r\n2\r\nbc\r\n3\r\ndef\r\n0\r\n\r\n"));
    const answer = await send(call(server.url));
    expect(Buffer.from((await answer.body.read())!).toString()).toBe("abcdef");
    expect(await answer.body.read()).toBeNull();
  });

  test("a client abort before the head rejects within a sweep's tick and resets the connection; a cancelled body's connection is never reused", async () => {
    const closes: number[] = [];
    const server = await rawServer((socket, _request, index) => {
      socket.on("close", () => closes.push(index));
      if (index === 1) socket.write("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nfive.");
      if (index === 2) socket.write(OK);
    });
    const client = new AbortController();
    const pending = send(call(server.url, { signal: client.signal }));
    await Bun.sleep(20);
    client.abort();
    // The signal is looked at by the 250 ms sweep: the call is let go though the upstream never answers.
    expect((await failure(pending)).name).toBe("AbortError");
    const answer = await send(call(server.url));
    expect(Buffer.from((await answer.body.read())!).toString()).toBe("five.");
    answer.body.cancel();
    answer.body.cancel();
    expect((await drain(await send(call(server.url)))).text).toBe("ok");
    await Bun.sleep(20);
    expect(closes).toEqual([0, 1]);
    expect(server.connections).toBe(3);
  });

  test("connection refused is classified", async () => {
    const server = await rawServer(() => {});
    const url = server.url;
    server.stop();
    await Bun.sleep(20);
    expect(transportCause(await failure(send(call(url))))).toBe("connection refused");
  });
});

describe("proxies from the environment", () => {
  /** Runs `body` with the environment variables set, restoring them after (an origin reads them when its pool is made). */
  async function withEnv(vars: Record<string, string>, body: () => Promise<void>): Promise<void> {
    const saved = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]));
    Object.assign(process.env, vars);
    try {
      await body();
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  }

  test("http_proxy: the request goes to the proxy in absolute form, with its credentials; no_proxy hosts go direct", async () => {
    const proxy = await rawServer((socket, request) => {
      const line = request.slice(0, request.indexOf("\r\n"));
      const auth = /proxy-authorization: (.*)\r\n/.exec(request)?.[1] ?? "none";
      const text = `${line}|${auth}`;
      socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${text.length}\r\n\r\n${text}`);
    });
    await withEnv({ http_proxy: `http://u:p%40ss@${new URL(proxy.url).host}`, no_proxy: "example.com, .direct.invalid" }, async () => {
      const answer = await send(call("http://proxied.invalid:8080/v1/chat?x=1"));
      expect((await drain(answer)).text).toBe(`POST http://proxied.invalid:8080/v1/chat?x=1 HTTP/1.1|Basic ${btoa("u:p@ss")}`);
      // Bypassed: looked up directly, and there is no such host.
      expect(transportCause(await failure(send(call("http://api.direct.invalid/v1"))))).toBe("DNS lookup failed");
    });
  });

  test("https_proxy: a proxy that refuses CONNECT fails the call as the proxy's", async () => {
    const proxy = await rawServer((socket) => socket.write("HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n"));
    await withEnv({ https_proxy: new URL(proxy.url).origin }, async () => {
      const error = await failure(send(call("https://tunnelled.invalid/v1")));
      expect((error as { code?: string }).code).toBe("EPROXY");
    });
  });
});

describe("https", () => {
  const dir = makeTlsDir();
  const secure = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: readFileSync(`${dir}/cert.pem`, "utf8"), key: readFileSync(`${dir}/key.pem`, "utf8") }, fetch: () => new Response("secure") });
  afterAll(() => secure.stop(true));

  test("a certificate no trusted CA signed is refused with a TLS error", async () => {
    const error = await failure(send(call(`https://localhost:${secure.port}/v1`)));
    expect(transportCause(error)).toBe("TLS handshake or certificate failed");
  });

  test("NODE_EXTRA_CA_CERTS is trusted, as Bun's fetch trusts it", async () => {
    const script = `import { send } from ${JSON.stringify(`${import.meta.dir}/../../src/transport/http1.ts`)};
      const call = (host) => send({ url: "https://" + host + ":${secure.port}/", headers: {}, body: "", signal: new AbortController().signal, timeoutMs: 5000, pool: { maxIdlePerHost: 1, idleTimeoutSecs: 5 }, decode: true });
      const answer = await call("localhost");
      const first = await answer.body.read();
      console.log(answer.status, Buffer.from(first).toString());
      process.exit(0);`;
    const child = Bun.spawn([process.execPath, "-e", script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: `${dir}/ca.pem` }, stdout: "pipe", stderr: "pipe" });
    const [out] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    expect(out.trim()).toBe("200 secure");
  });

  test("pieces kept across reads stay as they came, over TLS too (the client joins a read's chunks in place, so it must own each read's bytes)", async () => {
    const lines = Array.from({ length: 300 }, (_, i) => `event ${i} ${"x".repeat(i % 97)}\n`);
    const streaming = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: readFileSync(`${dir}/cert.pem`, "utf8"), key: readFileSync(`${dir}/key.pem`, "utf8") },
      fetch: () =>
        new Response(
          new ReadableStream({
            type: "direct",
            async pull(controller: { write(text: string): void; flush(): void; close(): void }) {
              // Several chunks per write, and writes spread over many reads.
              for (let i = 0; i < lines.length; i += 3) {
                for (const line of lines.slice(i, i + 3)) controller.write(line);
                controller.flush();
                if (i % 30 === 0) await Bun.sleep(1);
              }
              controller.close();
            },
          } as unknown as Bun.UnderlyingSource<Uint8Array>),
        ),
    });
    const script = `import { send } from ${JSON.stringify(`${import.meta.dir}/../../src/transport/http1.ts`)};
      const answer = await send({ url: "https://localhost:${streaming.port}/", headers: {}, body: "", signal: new AbortController().signal, timeoutMs: 5000, pool: { maxIdlePerHost: 1, idleTimeoutSecs: 5 }, decode: true });
      const kept = [];
      const first = await answer.body.read();
      if (first) kept.push(first);
      await new Promise((resolve, reject) => answer.body.pipe({ chunk: (piece) => kept.push(piece), end: resolve, fail: reject }));
      console.log(kept.length + " " + Buffer.concat(kept).toString());
      process.exit(0);`;
    try {
      const child = Bun.spawn([process.execPath, "-e", script], { env: { ...process.env, NODE_EXTRA_CA_CERTS: `${dir}/ca.pem` }, stdout: "pipe", stderr: "pipe" });
      const [out] = await Promise.all([new Response(child.stdout).text(), child.exited]);
      const space = out.indexOf(" ");
      expect(Number(out.slice(0, space))).toBeGreaterThan(5);
      expect(out.slice(space + 1).trimEnd()).toBe(lines.join("").trimEnd());
    } finally {
      streaming.stop(true);
    }
  });

  test("https_proxy: TLS to the origin inside a CONNECT tunnel, certificate verified; the tunnel is reused", async () => {
    const connects: string[] = [];
    const proxy = net.createServer((client) => {
      client.on("error", () => {});
      client.once("data", (data) => {
        const request = data.toString("latin1");
        connects.push(`${request.slice(0, request.indexOf("\r\n"))}|${/proxy-authorization: (.*)\r\n/.exec(request)?.[1] ?? "none"}`);
        const port = Number(/^CONNECT [^ ]+:(\d+) /.exec(request)![1]);
        const upstream = net.connect(port, "127.0.0.1", () => {
          client.write("HTTP/1.1 200 Connection established\r\n\r\n");
          client.pipe(upstream).pipe(client);
        });
        upstream.on("error", () => client.destroy());
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const script = `import { send } from ${JSON.stringify(`${import.meta.dir}/../../src/transport/http1.ts`)};
      const out = [];
      for (let i = 0; i < 2; i++) {
        const answer = await send({ url: "https://localhost:${secure.port}/v1", headers: {}, body: "", signal: new AbortController().signal, timeoutMs: 5000, pool: { maxIdlePerHost: 1, idleTimeoutSecs: 5 }, decode: true });
        out.push(answer.status + " " + Buffer.from(await answer.body.read()).toString());
        await answer.body.read();
      }
      console.log(out.join(","));
      process.exit(0);`;
    const env = { ...process.env, NODE_EXTRA_CA_CERTS: `${dir}/ca.pem`, HTTPS_PROXY: `http://agent:secret@127.0.0.1:${(proxy.address() as net.AddressInfo).port}`, NO_PROXY: `localhost:1` };
    const child = Bun.spawn([process.execPath, "-e", script], { env, stdout: "pipe", stderr: "pipe" });
    const [out] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    proxy.close();
    expect(out.trim()).toBe("200 secure,200 secure");
    expect(connects).toEqual([`CONNECT localhost:${secure.port} HTTP/1.1|Basic ${btoa("agent:secret")}`]);
  });
});

test("an answer's headers: names read in any case, a repeated name read joined as Headers does, hop-by-hop ones and cookies not relayed", async () => {
  const { parseHead, Framing } = await import("../../src/transport/http1-head.ts");
  const { relayHeaders } = await import("../../src/transport/upstream.ts");
  const head = parseHead("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Request-Id: a\r\nVary: Origin\r\nvary: Accept\r\nSet-Cookie: s=1\r\nConnection: keep-alive\r\nContent-Length: 5");
  if (head instanceof Error) throw head;
  expect(head.headers.get("content-type")).toBe("text/event-stream");
  expect(head.headers.get("vary")).toBe(new Headers([["Vary", "Origin"], ["vary", "Accept"]]).get("vary"));
  expect(head.headers.get("x-absent")).toBeNull();
  expect(head.headers.get("x-request-id")).toBe("a");
  // Optional whitespace (spaces, tabs) around a value is not part of it; other bytes are.
  const spaced = parseHead("HTTP/1.1 200 OK\r\nX-A: \t a b \t\r\nX-B:c\r\nX-C:   ");
  if (spaced instanceof Error) throw spaced;
  expect([spaced.headers.get("x-a"), spaced.headers.get("x-b"), spaced.headers.get("x-c")]).toEqual(["a b", "c", ""]);
  // Relayed in the case they came (a Response's headers lowercase them), the hop's own and cookies left out in any case.
  const relayed = relayHeaders(head.headers);
  expect(relayed.map(([name, value]) => [name.toLowerCase(), value])).toEqual([["content-type", "text/event-stream"], ["x-request-id", "a"], ["vary", "Origin"], ["vary", "Accept"]]);
  expect([...new Response("", { headers: relayed }).headers]).toEqual([["content-type", "text/event-stream"], ["vary", "Origin, Accept"], ["x-request-id", "a"]]);
  const shouting = parseHead("HTTP/1.1 200 OK\r\nCONTENT-LENGTH: 5\r\nTRANSFER-ENCODING: chunked\r\nSET-COOKIE: s=1\r\nCONNECTION: close\r\nX-Kept: 1");
  if (shouting instanceof Error) throw shouting;
  expect(relayHeaders(shouting.headers)).toEqual([["X-Kept", "1"]]);
  // The framing headers are found in any case: chunked wins over a length, and `close` is heard.
  expect([shouting.framing, shouting.keepAlive]).toEqual([Framing.Chunked, false]);
  head.headers.delete("vary");
  expect(head.headers.get("vary")).toBeNull();
  expect(head.headers.get("x-request-id")).toBe("a");
  // What a Headers object would refuse is a malformed answer.
  for (const bad of ["HTTP/1.1 200 OK\r\nBad Name: x", "HTTP/1.1 200 OK\r\nX-A: a\0b", "HTTP/1.1 200 OK\r\nX-A: a\nb", "HTTP/1.1 200 OK\r\nX-A: a\rb", "HTTP/1.1 200 OK\r\nX-A: a\r\n\nX-B: b", "HTTP/1.1 200 OK\r\nX-A: a\r"]) expect(parseHead(bad)).toBeInstanceOf(Error);
});
