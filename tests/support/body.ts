// An UpstreamBody over a ReadableStream or over nothing, for tests that feed src/transport/answer.ts
// and the stream paths bodies that do not come from the upstream client.
import type { UpstreamBody } from "../../src/transport/body.ts";

/** Reads a ReadableStream as an UpstreamBody. */
export function bodyFromStream(stream: ReadableStream<Uint8Array>): UpstreamBody {
  const reader = stream.getReader();
  let paused: (() => void) | undefined;
  let waiting: Promise<void> | undefined;
  let cancelled = false;
  return {
    read: async () => {
      const { done, value } = await reader.read();
      return done ? null : value;
    },
    pipe(sink) {
      void (async () => {
        try {
          for (;;) {
            if (waiting) await waiting;
            const { done, value } = await reader.read();
            if (done) return cancelled ? undefined : sink.end();
            sink.chunk(value);
          }
        } catch (error) {
          if (!cancelled) sink.fail(error instanceof Error ? error : new Error(String(error)));
        }
      })();
    },
    pause() {
      waiting ??= new Promise<void>((resolve) => (paused = resolve));
    },
    resume() {
      paused?.();
      paused = undefined;
      waiting = undefined;
    },
    cancel() {
      if (cancelled) return;
      cancelled = true;
      reader.cancel().catch(() => {});
    },
  };
}

/** A body with nothing in it (an answer without one). */
export const EMPTY_BODY: UpstreamBody = {
  read: () => Promise.resolve(null),
  pipe: (sink) => sink.end(),
  pause() {},
  resume() {},
  cancel() {},
};
