// Each built-in exporter module's settings schema, for the config check (config/references.ts): only
// TypeBox schemas here, so the check loads no exporter's code.
import type { TSchema } from "@sinclair/typebox";
import { OtlpSettings } from "../otlp/settings.ts";
import { PrometheusSettingsCfg } from "./prometheus.ts";
import { FileSettings } from "./file.ts";
import { WebhookSettings } from "./webhook.ts";

export const EXPORTER_SETTINGS: Readonly<Record<string, TSchema>> = {
  otlp: OtlpSettings,
  prometheus: PrometheusSettingsCfg,
  file: FileSettings,
  webhook: WebhookSettings,
};
