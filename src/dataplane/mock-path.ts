// The in-process mock provider's path: the request as IR, answered by providers/mock.ts and encoded in
// the caller's protocol (streams through the same encoder a translated stream uses).
import { mergeUsage, ZERO_USAGE, type IrRequest, type IrStreamPart } from "../ir/index.ts";
import type { RequestMeter } from "../governance/metering.ts";
import { mockRespond, mockStream } from "../providers/mock.ts";
import type { AttemptResult, LaneTicket } from "../routing/failover.ts";
import { streamTicket, type Exchange } from "./exchange.ts";

export async function answerFromMock(exchange: Exchange, request: IrRequest, ticket: LaneTicket): Promise<AttemptResult<Response>> {
  const { ingress, lane, deps, warn, meter } = exchange;
  if (request.stream) {
    const parts = mockStream(lane, request, deps.now);
    const bytes = (meter ? parts.pipeThrough(usageTap(meter, lane.name)) : parts).pipeThrough(ingress.createStreamEncoder(request, warn));
    return { ok: true, value: new Response(settleWhenRead(bytes, streamTicket(exchange, ticket)), { headers: ingress.streamHeaders }), settlesLater: true };
  }
  const response = await mockRespond(lane, request, deps.now);
  meter?.usage(response.usage, lane.name);
  return { ok: true, value: Response.json(ingress.encodeResponse(response, warn)) };
}

/** The usage parts of an IR stream, told to the meter as they pass. */
function usageTap(meter: RequestMeter, model: string): TransformStream<IrStreamPart, IrStreamPart> {
  let usage = ZERO_USAGE;
  let told = false;
  // At the end, or when the client leaves: what it was sent still counts.
  const tell = () => {
    if (told) return;
    told = true;
    meter.usage(usage, model);
  };
  // `cancel` is in the Streams standard and in Bun, not yet in TypeScript's Transformer type.
  const transformer: Transformer<IrStreamPart, IrStreamPart> & { cancel: () => void } = {
    transform(part, controller) {
      if (part.type === "usage") usage = mergeUsage(usage, part.usage);
      controller.enqueue(part);
    },
    flush: tell,
    cancel: tell,
  };
  return new TransformStream(transformer);
}

/** Settles a stream's ticket when the client has read it to the end (or left). */
function settleWhenRead(bytes: ReadableStream<Uint8Array>, ticket: LaneTicket): ReadableStream<Uint8Array> {
  const reader = bytes.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        ticket.ok();
        controller.close();
      } else controller.enqueue(value);
    },
    cancel(reason) {
      ticket.released();
      return reader.cancel(reason);
    },
  });
}
