// The admin event stream (GET /events, server-sent events) read with fetch, so the bearer rides in a
// header and never in a URL; reconnects after a drop (1 s, then up to 5 s apart) and tells the screens
// to re-read their history when it comes back or when the gateway dropped it for falling behind.
import { createParser } from "eventsource-parser";
import { adminFetch, online, token } from "./api.ts";

export interface LiveHandlers {
  /** Each event as it arrives: `request` (a request-log record), `breaker` ({pool, lane, state, ts}). */
  readonly event: (type: string, data: unknown) => void;
  /** The stream (re)opened: anything missed meanwhile should be read again. */
  readonly opened: () => void;
}

/** Opens the stream; the returned function closes it for good. */
export function subscribe(handlers: LiveHandlers): () => void {
  let stopped = false;
  let controller: AbortController | undefined;
  let wait = 1000;
  const run = async () => {
    while (!stopped && token.value !== null) {
      controller = new AbortController();
      try {
        const response = await adminFetch("/api/v1/admin/events", { signal: controller.signal, headers: { accept: "text/event-stream" } });
        if (!response.ok || response.body === null) throw new Error(`event stream answered ${response.status}`);
        wait = 1000;
        handlers.opened();
        const parser = createParser({
          maxBufferSize: 1 << 20,
          onEvent: (message) => {
            if (message.event === "overflow") return handlers.opened();
            try {
              handlers.event(message.event ?? "message", JSON.parse(message.data));
            } catch {
              // A malformed event is skipped, not fatal: the next one may be fine.
            }
          },
        });
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.feed(value);
        }
      } catch {
        if (stopped) return;
      }
      if (stopped) return;
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(5000, wait * 2);
    }
  };
  void run();
  // Back online: try at once rather than at the end of the current wait.
  const unsubscribe = online.subscribe((up) => {
    if (up) wait = 1000;
  });
  return () => {
    stopped = true;
    unsubscribe();
    controller?.abort();
  };
}
