// A response body the gateway writes as its bytes come: Bun's direct stream, whose writes go into the
// response's own buffer (flushed when the event loop turns) with no queue, no reader and no promise per
// piece. A plain ReadableStream relay cost ~14 µs per streamed request more than a native pipe; this
// is the cheapest way a JS relay has to reach the socket (docs/performance.md, "The stream path").

export interface PushOut {
  /**
   * Writes bytes, or text Bun encodes as UTF-8 straight into the response's buffer (no array of its own),
   * to the client; false once the client's buffer is full (call `onDrain` to hear when it is not).
   */
  write(bytes: Uint8Array | string): boolean;
  /** Called once when a full buffer has drained (after a write returned false). */
  onDrain(resume: () => void): void;
  /** The body is complete. */
  end(): void;
  /** The body broke off mid-way: the client's connection is cut, so it cannot take the bytes for a whole answer. */
  abort(error: Error): void;
}

/**
 * A response body driven by `start`, called once when the client starts reading; `cancel` is told (once)
 * when the client leaves before `end`.
 */
export function pushBody(start: (out: PushOut) => void, cancel: (reason: unknown) => void): ReadableStream<Uint8Array> {
  let ended = false;
  return new ReadableStream<Uint8Array>({
    type: "direct",
    pull(controller: DirectController) {
      let drained: Promise<unknown> | undefined;
      let finish!: () => void;
      let fail!: (error: Error) => void;
      const done = new Promise<void>((resolve, reject) => ((finish = resolve), (fail = reject)));
      start({
        write(bytes) {
          if (ended) return true;
          const wrote = controller.write(bytes);
          if (typeof wrote === "number") return true;
          drained = wrote;
          return false;
        },
        onDrain(resume) {
          if (drained) void drained.then(resume, resume);
          else resume();
          drained = undefined;
        },
        end() {
          if (ended) return;
          ended = true;
          controller.close();
          finish();
        },
        abort(error) {
          if (ended) return;
          ended = true;
          fail(error);
        },
      });
      // The stream stays open until `end` (Bun closes a direct stream when pull settles).
      return done;
    },
    cancel(reason: unknown) {
      if (ended) return;
      ended = true;
      cancel(reason);
    },
  } as unknown as Bun.UnderlyingSource<Uint8Array>);
}

/** Bun's controller of a `type: "direct"` stream: write returns the bytes taken, or a promise while its buffer is full. */
interface DirectController {
  write(bytes: Uint8Array | string): number | Promise<number>;
  flush(): number | Promise<number>;
  close(): void;
}
