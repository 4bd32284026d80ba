// Test-side reading of an imitation's stream: the body's bytes are fed to a standard SSE parser in
// awkward pieces (1, 3, 7 bytes by default), so an event split anywhere, a CRLF split in two, or a
// multi-byte character cut in half must still come out whole, as a client would see it.
import { createParser } from "eventsource-parser";

export interface StreamEvent {
  /** The `event:` name, when the frame has one. */
  readonly event: string | undefined;
  readonly data: string;
}

/** Splits bytes into consecutive pieces of the given sizes, cycling through them. */
export function awkwardPieces(bytes: Uint8Array, sizes: readonly number[] = [1, 3, 7]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0, k = 0; at < bytes.length; k++) {
    const size = sizes[k % sizes.length]!;
    out.push(bytes.subarray(at, at + size));
    at += size;
  }
  return out;
}

/** Every SSE event of a response body, parsed from the body fed in awkward pieces. */
export async function readEvents(response: Response, sizes?: readonly number[]): Promise<StreamEvent[]> {
  const bytes = new Uint8Array(await response.arrayBuffer());
  const events: StreamEvent[] = [];
  const parser = createParser({ onEvent: (message) => events.push({ event: message.event, data: message.data }) });
  const decoder = new TextDecoder();
  for (const piece of awkwardPieces(bytes, sizes)) parser.feed(decoder.decode(piece, { stream: true }));
  parser.feed(decoder.decode());
  return events;
}
