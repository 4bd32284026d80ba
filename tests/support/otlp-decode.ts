// A protobuf wire decoder for OTLP trace requests that knows only which length-delimited fields are
// messages and which are text (by field number, from opentelemetry-proto); everything else is kept raw
// (varints and fixed64 as bigint, fixed32 as number, bytes as hex). Two bodies that decode equal say the
// same thing, so the encoder tests compare ours with the official serializer's through it.

export type Schema = { [field: number]: Schema | "string" | (() => Schema) };
export type Decoded = { [field: number]: unknown[] };

const ANY_VALUE: Schema = { 1: "string", 5: { 1: () => ANY_VALUE }, 6: { 1: () => KEY_VALUE } };
const KEY_VALUE: Schema = { 1: "string", 2: ANY_VALUE };
const STATUS: Schema = { 2: "string" };
const SPAN: Schema = { 3: "string", 5: "string", 9: KEY_VALUE, 15: STATUS };
const SCOPE: Schema = { 1: "string", 2: "string", 3: KEY_VALUE };
export const REQUEST: Schema = { 1: { 1: { 1: KEY_VALUE }, 2: { 1: SCOPE, 2: SPAN, 3: "string" }, 3: "string" } };

export function decode(bytes: Uint8Array, schema: Schema): Decoded {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Decoded = {};
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = bytes[pos++];
      if (b === undefined) throw new Error("truncated varint");
      result |= BigInt(b & 127) << shift;
      if (b < 128) return result;
    }
  };
  while (pos < bytes.length) {
    const key = Number(varint());
    const field = key >> 3;
    let value: unknown;
    switch (key & 7) {
      case 0:
        value = varint();
        break;
      case 1:
        value = view.getBigUint64(pos, true);
        pos += 8;
        break;
      case 5:
        value = view.getUint32(pos, true);
        pos += 4;
        break;
      case 2: {
        const length = Number(varint());
        if (pos + length > bytes.length) throw new Error(`field ${field}: length past the end`);
        const body = bytes.subarray(pos, pos + length);
        pos += length;
        const kind = schema[field];
        const sub = typeof kind === "function" ? kind() : kind;
        value = sub === "string" ? new TextDecoder("utf-8", { fatal: true }).decode(body) : sub ? decode(body, sub) : Buffer.from(body).toString("hex");
        break;
      }
      default:
        throw new Error(`field ${field}: wire type ${key & 7}`);
    }
    (out[field] ??= []).push(value);
  }
  return out;
}

/** The spans of an export body (either encoding), as {spanId, name}, in order. */
export function spansIn(body: Uint8Array, contentType: string): { spanId: string; name: string }[] {
  if (contentType === "application/json") {
    const request = JSON.parse(new TextDecoder().decode(body));
    return request.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans.map((s: any) => ({ spanId: s.spanId, name: s.name }))));
  }
  const tree = decode(body, REQUEST) as any;
  return (tree[1] ?? []).flatMap((rs: any) => (rs[2] ?? []).flatMap((ss: any) => (ss[2] ?? []).map((s: any) => ({ spanId: s[2][0], name: s[5][0] }))));
}

/** A KeyValue list in the OTLP JSON encoding's form (int_value as a decimal string, as that encoding writes it). */
type JsonKeyValue = { key: string; value: Record<string, unknown> };

function jsonAnyValue(v: Decoded): Record<string, unknown> {
  if (v[1]) return { stringValue: v[1][0] };
  if (v[2]) return { boolValue: v[2][0] === 1n };
  if (v[3]) return { intValue: BigInt.asIntN(64, v[3][0] as bigint).toString() };
  if (v[4]) return { doubleValue: new Float64Array(new BigUint64Array([v[4][0] as bigint]).buffer)[0] };
  if (v[5]) return { arrayValue: { values: ((v[5][0] as Decoded)[1] ?? []).map((item) => jsonAnyValue(item as Decoded)) } };
  return {};
}

const jsonKeyValues = (list: unknown[] | undefined): JsonKeyValue[] => (list ?? []).map((kv) => ({ key: (kv as Decoded)[1]![0] as string, value: jsonAnyValue(((kv as Decoded)[2]?.[0] ?? {}) as Decoded) }));

/**
 * An OTLP/HTTP protobuf body as the OTLP JSON encoding would say it (ids as hex, enums as numbers): so a
 * test written against a JSON collector reads a protobuf one the same way.
 */
export function protobufAsJson(body: Uint8Array): { resourceSpans: { resource: { attributes: JsonKeyValue[] }; scopeSpans: { spans: Record<string, unknown>[] }[] }[] } {
  const tree = decode(body, REQUEST) as Decoded;
  return {
    resourceSpans: (tree[1] ?? []).map((rs) => {
      const r = rs as Decoded;
      return {
        resource: { attributes: jsonKeyValues(((r[1]?.[0] ?? {}) as Decoded)[1]) },
        scopeSpans: (r[2] ?? []).map((ss) => ({
          spans: (((ss as Decoded)[2] ?? []) as Decoded[]).map((s) => {
            const status = (s[15]?.[0] ?? {}) as Decoded;
            return {
              traceId: s[1]![0],
              spanId: s[2]![0],
              ...(s[4] && { parentSpanId: s[4][0] }),
              ...(s[3] && { traceState: s[3][0] }),
              name: s[5]![0],
              kind: Number(s[6]![0]),
              status: { ...(status[3] && { code: Number(status[3][0]) }), ...(status[2] && { message: status[2][0] }) },
              attributes: jsonKeyValues(s[9]),
            };
          }),
        })),
      };
    }),
  };
}
