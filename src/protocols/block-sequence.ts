// Wire streams that carry one content block at a time (Anthropic, Cohere, Bedrock) while the IR may
// interleave parts of several blocks (a tool call's deltas arriving while text is open). Parts of a
// block that cannot open yet are held and replayed, in start order, as each open block closes.
import type { IrStreamPart } from "../ir/index.ts";
import type { WarningSink } from "./types.ts";

export type BlockPart = Exclude<IrStreamPart, { type: "start" | "usage" | "finish" | "error" }>;

const isStart = (part: BlockPart) => part.type === "text-start" || part.type === "reasoning-start" || part.type === "tool-call-start";

/** What the sequence needs from a protocol's block writer. */
export interface BlockSink {
  /** The id of the block the wire has open, if any. */
  openId(): string | undefined;
  /** One part of the open block (or the start that opens one); an end part closes it. */
  write(part: BlockPart): void;
  closeBlock(): void;
}

export function blockSequence(sink: BlockSink, warn: WarningSink) {
  const waiting = new Map<string, BlockPart[]>();

  /** Opens waiting blocks in start order, replaying their held parts, until one is left open. */
  function drain(): void {
    for (const [id, parts] of waiting) {
      if (sink.openId() !== undefined) return;
      waiting.delete(id);
      parts.forEach(sink.write);
    }
  }

  function route(part: BlockPart): void {
    const open = sink.openId();
    if (open === part.id) {
      sink.write(part);
      if (sink.openId() === undefined) drain();
      return;
    }
    const held = waiting.get(part.id);
    if (held) held.push(part);
    else if (!isStart(part)) warn(`stream part ${part.type} for block ${part.id}, which is not open, dropped`);
    else if (open !== undefined) waiting.set(part.id, [part]);
    else sink.write(part);
  }

  /** At the finish every block must be closed; one the IR left open is closed rather than left broken. */
  function closeAll(): void {
    if (sink.openId() !== undefined || waiting.size > 0) warn("stream finished with content blocks still open; closed them");
    sink.closeBlock();
    for (const [id, parts] of waiting) {
      waiting.delete(id);
      parts.forEach(sink.write);
      sink.closeBlock();
    }
  }

  return { route, closeAll };
}
