// A stream writer (step machine) as a TransformStream, for pipelines; translation drives writers directly.
import type { IrStreamPart } from "../ir/index.ts";
import type { StreamWriter, WireChunk } from "./types.ts";

const encoder = new TextEncoder();

/** A writer's chunk as bytes (text as UTF-8), for callers that take one chunk at a time. */
export const wireBytes = (chunk: WireChunk): Uint8Array => (typeof chunk === "string" ? encoder.encode(chunk) : chunk);

export function writerTransform(makeWriter: (emit: (chunk: WireChunk) => void) => StreamWriter): TransformStream<IrStreamPart, Uint8Array> {
  let writer: StreamWriter | undefined;
  return new TransformStream<IrStreamPart, Uint8Array>({
    start(controller) {
      writer = makeWriter((chunk) => controller.enqueue(wireBytes(chunk)));
    },
    transform(part) {
      writer?.accept(part);
    },
    flush() {
      writer?.end();
    },
  });
}
