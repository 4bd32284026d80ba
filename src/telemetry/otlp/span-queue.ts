// What the otlp exporter holds between a request's end and a send: spans in batches of at most
// max_export_batch_size, at most max_queue_size in all. For http/protobuf a request's spans are written
// as it ends, straight into their batch's bytes (spans.ts writeSpans to a ProtobufSpanOut: no span
// objects), while what they are made of is still in the cache: span objects queued and read back seconds
// later cost more than twice the encoding (bench/telemetry.ts) and outlived the young generation.
// http/json keeps span objects (its encoder is JSON.stringify over the whole batch).
import type { FinishedTrace, SpanData } from "../records.ts";
import { writeSpans } from "../spans.ts";
import { encodeTracesJson } from "./encode-json.ts";
import { encodeSpan, frameTracesProtobuf, ProtobufSpanOut, protobufFrame } from "./encode-protobuf.ts";
import type { OtlpResource } from "./model.ts";
import { ProtoWriter } from "./protobuf-writer.ts";

/** The oldest batch, as the request body that carries it. */
export interface TakenBatch {
  readonly body: string | Uint8Array;
  readonly spans: number;
}

export interface SpanQueue {
  /** Spans waiting. */
  readonly size: number;
  /** Whether a whole batch waits. */
  readonly full: boolean;
  /** Queues the span; false when the queue is full (or the span cannot be encoded): it is dropped. */
  push(span: SpanData): boolean;
  /** Queues a trace's spans, written without span objects (http/protobuf only); false: all dropped. */
  readonly pushTrace?: (trace: FinishedTrace) => boolean;
  /**
   * The oldest batch, taken out of the queue. Its body stays valid until the next take(), unless
   * `abandon()` is called first (a send that ended without an answer may still hold it).
   */
  take(): TakenBatch | undefined;
  /** The last taken body may still be read by a send that did not finish: the next one gets new memory. */
  abandon(): void;
}

export function spanQueue(protocol: "http/protobuf" | "http/json", resource: OtlpResource, batchSize: number, maxQueue: number): SpanQueue {
  return protocol === "http/json" ? jsonQueue(resource, batchSize, maxQueue) : protobufQueue(resource, batchSize, maxQueue);
}

/** A writer's first size: about a hundred spans; it grows to a batch's size once and is reused after. */
const WRITER_BYTES = 64 * 1024;

function protobufQueue(resource: OtlpResource, batchSize: number, maxQueue: number): SpanQueue {
  const frame = protobufFrame(resource);
  const batches: { writer: ProtoWriter; spans: number }[] = [];
  /** Writers of batches already sent, kept for the next ones (each grew to a batch's size once). */
  const spare: ProtoWriter[] = [];
  let body = new ProtoWriter(WRITER_BYTES);
  let size = 0;
  const open = () => {
    const writer = spare.pop() ?? new ProtoWriter(WRITER_BYTES);
    writer.reset();
    const batch = { writer, spans: 0 };
    batches.push(batch);
    return batch;
  };
  /** The writer for a trace's next span: the newest batch's, or a new batch's once it is full. */
  const out = new ProtobufSpanOut(() => {
    let batch = batches.at(-1);
    if (batch === undefined || batch.spans >= batchSize) batch = open();
    batch.spans++;
    size++;
    return batch.writer;
  });
  return {
    get size() {
      return size;
    },
    get full() {
      return size >= batchSize;
    },
    push(span) {
      if (size >= maxQueue) return false;
      let batch = batches.at(-1);
      if (batch === undefined || batch.spans >= batchSize) batch = open();
      const mark = batch.writer.length;
      try {
        encodeSpan(batch.writer, span);
      } catch {
        batch.writer.truncate(mark);
        return false;
      }
      batch.spans++;
      size++;
      return true;
    },
    pushTrace(trace) {
      const spans = 1 + trace.attempts.length;
      if (size + spans > maxQueue) return false;
      // Where a failure would leave off: the spans written so far are taken back.
      const openBatches = batches.length;
      const last = batches.at(-1);
      const mark = last ? { length: last.writer.length, spans: last.spans } : undefined;
      try {
        writeSpans(trace, out);
      } catch {
        for (const opened of batches.splice(openBatches)) size -= opened.spans;
        if (last && mark) {
          size -= last.spans - mark.spans;
          last.writer.truncate(mark.length);
          last.spans = mark.spans;
        }
        return false;
      }
      return true;
    },
    take() {
      const batch = batches.shift();
      if (batch === undefined) return undefined;
      size -= batch.spans;
      const bytes = frameTracesProtobuf(batch.writer.finish(), frame, body);
      if (spare.length < 2) spare.push(batch.writer);
      return { body: bytes, spans: batch.spans };
    },
    abandon() {
      body = new ProtoWriter(WRITER_BYTES);
    },
  };
}

function jsonQueue(resource: OtlpResource, batchSize: number, maxQueue: number): SpanQueue {
  let queue: SpanData[] = [];
  return {
    get size() {
      return queue.length;
    },
    get full() {
      return queue.length >= batchSize;
    },
    push(span) {
      if (queue.length >= maxQueue) return false;
      queue.push(span);
      return true;
    },
    take() {
      if (queue.length === 0) return undefined;
      const batch = queue.length <= batchSize ? queue : queue.slice(0, batchSize);
      queue = queue.length <= batchSize ? [] : queue.slice(batchSize);
      return { body: encodeTracesJson(batch, resource), spans: batch.length };
    },
    abandon() {},
  };
}
