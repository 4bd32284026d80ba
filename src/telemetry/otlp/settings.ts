// The `otlp` exporter's settings (design/telemetry.md, the `otlp` row). `protocol` defaults to
// http/protobuf: the design lists both and names no default, and http/protobuf is OpenTelemetry's own
// (OTEL_EXPORTER_OTLP_PROTOCOL). The bounds keep a typo from making an unbounded queue or a timer that
// spins.
import { Type, type Static } from "@sinclair/typebox";
import type { Secret } from "../../config/secret.ts";

export const OTLP_DEFAULTS = {
  protocol: "http/protobuf",
  timeout_ms: 10_000,
  schedule_delay_ms: 5_000,
  max_queue_size: 2048,
  max_export_batch_size: 512,
  service_name: "gateway",
  capture_content: false,
} as const;

const Ms = (fallback: number, description: string) => Type.Optional(Type.Integer({ minimum: 1, maximum: 600_000, default: fallback, description }));

export const OtlpSettings = Type.Object(
  {
    endpoint: Type.String({ pattern: "^https?://[^\\s]+$", description: "OTLP/HTTP traces URL, used as is (e.g. http://collector:4318/v1/traces)", "x-expected": "an http(s) URL" }),
    protocol: Type.Optional(Type.Union([Type.Literal("http/protobuf"), Type.Literal("http/json")], { default: OTLP_DEFAULTS.protocol, description: "request body encoding" })),
    headers: Type.Optional(
      Type.Record(Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" }), Type.String({ "x-secret": true }), {
        description: "extra headers on every export (values may be secret references)",
        "x-secret": true,
        additionalProperties: false,
        "x-key": "an HTTP header name (letters, digits and ! # $ % & ' * + . ^ _ ` | ~ -)",
      }),
    ),
    timeout_ms: Ms(OTLP_DEFAULTS.timeout_ms, "bound on one batch's delivery, retries included, and on flush"),
    schedule_delay_ms: Ms(OTLP_DEFAULTS.schedule_delay_ms, "longest a span waits before its batch is sent"),
    max_queue_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: OTLP_DEFAULTS.max_queue_size, description: "spans held for export; past it new spans are dropped and counted" })),
    max_export_batch_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, default: OTLP_DEFAULTS.max_export_batch_size, description: "spans per request; this many waiting send at once (capped at max_queue_size)" })),
    service_name: Type.Optional(Type.String({ minLength: 1, maxLength: 256, default: OTLP_DEFAULTS.service_name, description: "resource service.name" })),
    capture_content: Type.Optional(Type.Boolean({ default: OTLP_DEFAULTS.capture_content, description: "add gen_ai.input.messages / gen_ai.output.messages to SERVER spans" })),
  },
  { additionalProperties: false },
);

/** As checked by the schema; a header value may arrive as a resolved secret reference. */
export type OtlpSettings = Omit<Static<typeof OtlpSettings>, "headers"> & { headers?: Record<string, string | Secret> };
