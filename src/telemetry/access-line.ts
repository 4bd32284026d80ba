// `--log-format text`: one line per model request on stderr, for a developer watching a terminal: when,
// the request id, the route, the lane that answered, the status and outcome, and how long it took.
import { writeStderr } from "./logger.ts";
import type { RequestRecord } from "./records.ts";

export function accessLine(record: RequestRecord, write: (line: string) => void = writeStderr): void {
  const route = record.lane === null ? record.model : `${record.model} -> ${record.lane} (${record.provider})`;
  const usage = record.usage ? ` ${record.usage.input_tokens}+${record.usage.output_tokens} tokens` : "";
  const failovers = record.failovers.length > 0 ? ` failovers=${record.failovers.map((f) => `${f.lane}:${f.reason}`).join(",")}` : "";
  const error = record.error ? ` error=${record.error.class}` : "";
  write(`${record.ts} ACCESS ${record.request_id} ${record.ingress_protocol}${record.stream ? " stream" : ""} ${route} ${record.status} ${record.outcome} ${record.duration_ms.toFixed(1)} ms${usage}${failovers}${error}\n`);
}
