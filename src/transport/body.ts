// An upstream answer's body as the data plane reads it: the first piece pulled (nothing reaches the client
// before it, so the request may still fail over), then every later piece pushed as it arrives, with no
// stream object or promise per piece. The upstream client (http1.ts) delivers pieces straight from its
// socket; a relay writes them straight into the client's response (http/push-stream.ts).

/** Where a body's pieces go once piped: called as they arrive, synchronously, in order. */
export interface BodySink {
  chunk(bytes: Uint8Array): void;
  /** The body ended whole. */
  end(): void;
  /** The body broke off (reset, silence past the timeout, bad framing, over a cap); nothing follows. */
  fail(error: Error): void;
}

export interface UpstreamBody {
  /** The next piece of the body, or null at its end; rejects when the body breaks. Before pipe() only. */
  read(): Promise<Uint8Array | null>;
  /** Hands every later piece to `sink` as it arrives; once. */
  pipe(sink: BodySink): void;
  /** Stop taking pieces until resume() (the client reads slower than the upstream writes). */
  pause(): void;
  resume(): void;
  /** Gives the body up: its connection is closed, never reused. Safe to call more than once, and after the end. */
  cancel(): void;
}
