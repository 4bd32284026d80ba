// A stream writer (step machine) as a TransformStream, for pipelines; translation drives writers directly.
import type { IrStreamPart } from "../ir/index.ts";
import type { StreamWriter } from "./types.ts";

export function writerTransform(makeWriter: (emit: (bytes: Uint8Array) => void) => StreamWriter): TransformStream<IrStreamPart, Uint8Array> {
  let writer: StreamWriter | undefined;
  return new TransformStream<IrStreamPart, Uint8Array>({
    start(controller) {
      writer = makeWriter((bytes) => controller.enqueue(bytes));
    },
    transform(part) {
      writer?.accept(part);
    },
    flush() {
      writer?.end();
    },
  });
}
