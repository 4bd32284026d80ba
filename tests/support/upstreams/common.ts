// Shared machinery of the upstream imitations (openai.ts with responses.ts, anthropic.ts, gemini.ts,
// cohere.ts, bedrock.ts): one loopback Bun server per imitation, the record of every request it received, the queue
// of scripted behaviours, the reply plan every vendor follows, and the SSE/timing helpers.
//
// SCRIPTING. Behaviours are queued with `upstream.script(behaviour)` and apply to the NEXT valid
// request(s), in order; `match` narrows one to requests whose last user text contains a trigger word
// (useful when several requests run at once). A behaviour is consumed only by a request that passed
// auth and validation, so an invalid request (a gateway bug) never eats a script meant for a good one.
// Effects combine in one behaviour:
//   up.script({ error: { status: 429, retryAfter: 1 } })           next valid request answers 429 + Retry-After
//   up.script({ toolCall: true })                                   next request calls the first tool
//   up.script({ extraMember: true, detailedUsage: true })           unknown member + cache/reasoning usage
//   up.script({ delayMs: 500, cutAfterEvents: 3, times: 2 })        two requests: slow first byte, stream cut
//   up.script({ match: "SLOW", delayMs: 500, times: Infinity })     every request whose last user text has SLOW
// Without a script a request gets the default: text "echo: <last user text>", or, when the last message
// carries a tool result, text "tool result: <result text>" (so a test can prove the round trip).

/** One scripted behaviour; every member is optional and effects combine. */
export interface Behaviour {
  /** Apply only to requests whose last user text contains this string. */
  readonly match?: string;
  /** How many matching requests it applies to (default 1; Infinity keeps it). */
  readonly times?: number;
  /** Answer with a call to the request's first tool, when it has tools and its last message is the user's. */
  readonly toolCall?: boolean;
  /** Call the first tool whose name matches instead of the first tool (a coding agent's file reader). */
  readonly toolName?: RegExp;
  /** Arguments of that call (default DEFAULT_TOOL_ARGUMENTS). */
  readonly toolArguments?: Record<string, unknown>;
  /**
   * Think before answering when the request turns reasoning on (Anthropic `thinking`, Gemini
   * `includeThoughts`, Responses `include: ["reasoning.encrypted_content"]`): a signed thinking block, a
   * thought with a thoughtSignature on the call, an encrypted reasoning item. The imitation then holds the
   * client to echoing them as the vendor does.
   */
  readonly reasoning?: boolean;
  /** Answer a request that asks for JSON output with this text (a JSON document). */
  readonly json?: string;
  /** Answer with this text instead of the echo. */
  readonly text?: string;
  /** Answer with this HTTP error in the vendor's own error shape. */
  readonly error?: ScriptedError;
  /** Add `"x_imitation": {"kept": true}` at the top level of the body (stream: of every chunk/event). */
  readonly extraMember?: boolean;
  /** Wait this long before the first byte (status line and headers included). */
  readonly delayMs?: number;
  /** Stream only: send this many SSE events, then reset the connection (no clean end). */
  readonly cutAfterEvents?: number;
  /** Report cache and reasoning usage members with the fixed non-zero SCRIPTED_USAGE values. */
  readonly detailedUsage?: boolean;
}

export interface ScriptedError {
  readonly status: number;
  /** Defaults to a vendor-like message for the status. */
  readonly message?: string;
  /**
   * Vendor error type; defaults from the status (OpenAI and Responses `requests`/`server_error`, Anthropic
   * `rate_limit_error`..., Gemini the google.rpc status `RESOURCE_EXHAUSTED`...). Cohere's body has no type.
   */
  readonly type?: string;
  /** OpenAI and Responses only: the `code` member (429 defaults to `rate_limit_exceeded`). */
  readonly code?: string | null;
  /**
   * Sent as the `Retry-After` header (seconds or an HTTP date). Gemini sends no such header: there a
   * number of seconds becomes a google.rpc.RetryInfo `retryDelay` in the error's `details` instead.
   */
  readonly retryAfter?: number | string;
  /** Any further response headers (e.g. `x-should-retry`, which both SDKs obey). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** Fixed non-zero usage members a `detailedUsage` behaviour reports, exported so tests can assert them. */
export const SCRIPTED_USAGE = {
  /**
   * OpenAI prompt_tokens_details.cached_tokens and Responses input_tokens_details.cached_tokens (parts of
   * the input count); Gemini cachedContentTokenCount (a part of promptTokenCount); Cohere cached_tokens.
   */
  cachedTokens: 8,
  /**
   * OpenAI completion_tokens_details.reasoning_tokens and Responses output_tokens_details.reasoning_tokens
   * (parts of the output count); Anthropic output_tokens_details.thinking_tokens; Gemini
   * thoughtsTokenCount (NOT a part of candidatesTokenCount, but of totalTokenCount).
   */
  reasoningTokens: 16,
  /** Anthropic cache_read_input_tokens (in addition to input_tokens). */
  cacheReadInputTokens: 32,
  /** Anthropic cache_creation_input_tokens (in addition to input_tokens); Responses cache_write_tokens (a part of input_tokens). */
  cacheCreationInputTokens: 64,
} as const;

export const DEFAULT_TOOL_ARGUMENTS: Readonly<Record<string, unknown>> = { path: "README.md" };

/** The unknown member `extraMember` adds, to prove lossless same-protocol pass-through. */
export const EXTRA_MEMBER = { x_imitation: { kept: true } } as const;

/** Everything an imitation received, valid or not. */
export interface RecordedRequest {
  readonly method: string;
  /** Path and query as sent. */
  readonly path: string;
  /** Every request header, names lower-cased (credentials included: these are test keys). */
  readonly headers: Readonly<Record<string, string>>;
  /** The body exactly as received, before any parsing. */
  readonly rawBody: string;
  /** The parsed JSON body, or undefined when it did not parse. */
  body: unknown;
  /** True when the request passed the route, auth and every validation rule. */
  valid: boolean;
  /** The status the imitation answered with. */
  status: number;
  /** What the vendor would have said about an invalid request (its error message). */
  problem?: string;
  /** The scripted behaviour this request consumed, if any. */
  behaviour?: Behaviour;
  /** Bedrock only: what verifying its SigV4 signature concluded (the refusal's reason, or the signer's key id). */
  verification?: { readonly ok: boolean; readonly reason?: string; readonly accessKeyId?: string };
  /** The client's source port: distinct ports are distinct TCP connections (keep-alive reuse shows here). */
  readonly remotePort: number;
  /** Set when the client (the gateway) abandoned the request before it was answered in full. */
  aborted: boolean;
}

export interface UpstreamOptions {
  /** The one credential accepted (defaults: each imitation's exported `*_DEFAULT_KEY`). */
  readonly apiKey?: string;
  /** Call the first tool whenever a request has tools and ends with a user message, unscripted. */
  readonly autoToolCall?: boolean;
}

export interface Upstream {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  /** What a provider base_url / SDK baseURL points at (OpenAI and Responses: url + "/v1"; Anthropic, Gemini, Cohere: url). */
  readonly baseURL: string;
  readonly port: number;
  readonly apiKey: string;
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[];
  /** Queues a behaviour for the next valid request(s); see the top of this file. */
  script(behaviour: Behaviour): void;
  /** The recorded requests that failed the route, auth or validation. */
  invalid(): RecordedRequest[];
  /** Forgets recorded requests and queued behaviours. */
  reset(): void;
  stop(): Promise<void>;
}

/** The vendor part of an imitation: answers one recorded request. */
export type VendorHandler = (request: Request, record: RecordedRequest, take: (lastUserText: string) => Behaviour | undefined) => Promise<Response>;

export function startUpstream(apiKey: string, basePath: string, handle: VendorHandler): Upstream {
  const requests: RecordedRequest[] = [];
  let scripts: { behaviour: Behaviour; left: number }[] = [];
  const take = (lastUserText: string): Behaviour | undefined => {
    const entry = scripts.find((s) => s.behaviour.match === undefined || lastUserText.includes(s.behaviour.match));
    if (!entry) return undefined;
    entry.left -= 1;
    if (entry.left <= 0) scripts = scripts.filter((s) => s !== entry);
    return entry.behaviour;
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    // A scripted delay or a slow test client must not be cut by Bun's 10 s default.
    idleTimeout: 120,
    async fetch(request, server) {
      const url = new URL(request.url);
      const record: RecordedRequest = {
        remotePort: server.requestIP(request)?.port ?? 0,
        aborted: false,
        method: request.method,
        path: url.pathname + url.search,
        headers: Object.fromEntries(request.headers),
        rawBody: await request.text(),
        body: undefined,
        valid: false,
        status: 0,
      };
      requests.push(record);
      request.signal.addEventListener("abort", () => {
        record.aborted = true;
      });
      const response = await handle(request, record, take);
      record.status = response.status;
      return response;
    },
  });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    url,
    baseURL: url + basePath,
    port: server.port ?? 0,
    apiKey,
    requests,
    script(behaviour) {
      scripts.push({ behaviour, left: behaviour.times ?? 1 });
    },
    invalid: () => requests.filter((r) => !r.valid),
    reset() {
      requests.length = 0;
      scripts = [];
    },
    stop: () => server.stop(true),
  };
}

/** What the imitated model says, decided the same way for both vendors. */
export type Reply = { kind: "text"; text: string } | { kind: "tool_call"; name: string; arguments: string };

export interface Conversation {
  /** Names of the client (function) tools the request declares, in order. */
  readonly tools: readonly string[];
  /** The last message is a plain user turn (not a tool result). */
  readonly endsWithUser: boolean;
  /** Text of the tool result(s) the last message carries, if it carries any. */
  readonly toolResultText: string | undefined;
  readonly lastUserText: string;
  /** The request asks for JSON output (a response format or schema). */
  readonly wantsJson: boolean;
}

export function planReply(conversation: Conversation, behaviour: Behaviour | undefined, options: UpstreamOptions): Reply {
  const wantsTool = behaviour?.toolCall ?? options.autoToolCall ?? false;
  const tool = behaviour?.toolName === undefined ? conversation.tools[0] : conversation.tools.find((name) => behaviour.toolName!.test(name));
  if (wantsTool && tool !== undefined && conversation.endsWithUser) {
    return { kind: "tool_call", name: tool, arguments: JSON.stringify(behaviour?.toolArguments ?? DEFAULT_TOOL_ARGUMENTS) };
  }
  if (conversation.wantsJson && behaviour?.json !== undefined) return { kind: "text", text: behaviour.json };
  if (behaviour?.text !== undefined) return { kind: "text", text: behaviour.text };
  if (conversation.toolResultText !== undefined) return { kind: "text", text: `tool result: ${conversation.toolResultText}` };
  return { kind: "text", text: `echo: ${conversation.lastUserText}` };
}

/** Usage derived from text lengths (about four characters a token, at least one), deterministic. */
export const tokenCount = (text: string): number => Math.max(1, Math.ceil(text.length / 4));

/** Splits a text into `parts` consecutive pieces (fewer when it is short), so a stream has several deltas. */
export function pieces(text: string, parts = 4): string[] {
  if (text.length === 0) return [""];
  const size = Math.ceil(text.length / Math.min(parts, text.length));
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

let sequence = 0;
/** Vendor-looking ids, deterministic within a run (a counter, padded), so failures are reproducible. */
export function nextId(prefix: string, width: number): string {
  sequence += 1;
  return prefix + String(sequence).padStart(width, "0");
}

/** Milliseconds between SSE events, so events reach the client as separate reads like a real token stream. */
const EVENT_GAP_MS = 1;
/** Grace before a scripted cut, so the events already written leave the socket before the reset. */
const CUT_GRACE_MS = 25;

/**
 * A streamed body of the given frames (SSE events, the elements of Gemini's streamed JSON array, or
 * Bedrock's binary event-stream messages), each its own write; with `cutAfter` the connection is reset
 * after that many frames.
 */
export function sseBody(frames: readonly (string | Uint8Array)[], cutAfter?: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (cutAfter !== undefined && sent >= cutAfter) {
        await Bun.sleep(CUT_GRACE_MS);
        // Erroring the body makes Bun reset the connection: the client sees the stream break, not end.
        // No error argument: Bun then logs nothing.
        controller.error();
        return;
      }
      const frame = frames[sent];
      if (frame === undefined) {
        controller.close();
        return;
      }
      sent += 1;
      controller.enqueue(typeof frame === "string" ? encoder.encode(frame) : frame);
      await Bun.sleep(EVENT_GAP_MS);
    },
  });
}

/** A JSON answer; `headers` may override the content-type, `indent` pretty-prints (Google's REST answers are indented). */
export function jsonResponse(status: number, body: unknown, headers: Record<string, string>, indent?: number): Response {
  return new Response(JSON.stringify(body, null, indent), { status, headers: { "content-type": "application/json", ...headers } });
}

/** One SSE event whose `event:` name is its data's `type`, as Anthropic, Cohere and Responses frame them. */
export const namedEvent = (type: string, data: unknown): string => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

/** The key of an `Authorization: Bearer <key>` header, or null (the scheme is case-insensitive, as for every HTTP auth scheme). */
export function bearerToken(header: string | null): string | null {
  const key = header?.match(/^Bearer\s+(.+)$/i)?.[1]?.trim();
  return key ? key : null;
}

export const sleep = (ms: number): Promise<void> => Bun.sleep(ms);

// Small JSON type guards shared by the validators.
export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
export const isInteger = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value);
/** application/json with or without parameters (charset), as the vendors' SDKs send it. */
export const isJsonContentType = (value: string | null): boolean => value !== null && /^application\/json\s*(;|$)/i.test(value.trim());
