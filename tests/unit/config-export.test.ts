// The config check of `export:` (design/telemetry.md, "Exporters"): each error with its path, a header's
// secret reference accepted and never shown, and what this build does not honour refused.
import { describe, expect, test } from "bun:test";
import { loadConfigText } from "../../src/config/load.ts";

const BASE = "providers: {p: {protocol: mock}}\nmodels: {m: {provider: p}}\n";
const errorsOf = (yaml: string, env: Record<string, string> = {}) => {
  const loaded = loadConfigText(BASE + yaml, "t.yaml", { env });
  return loaded.ok ? [] : loaded.errors;
};

describe("export: config check", () => {
  test("the four built-in modules load with their settings; header values may be secret references", () => {
    const yaml = `export:
  scrape: {module: prometheus, settings: {listen: "127.0.0.1:9464"}}
  traces: {module: otlp, streams: [traces], settings: {endpoint: "http://c:4318/v1/traces", protocol: http/json, headers: {authorization: {env: OTLP_AUTH}}}}
  requests: {module: file, settings: {path: ./requests.jsonl, max_bytes: 0}}
  shipping: {module: webhook, settings: {url: "https://logs.example/ingest", headers: {x-token: {env: HOOK_TOKEN}}, batch_max: 10}}
`;
    expect(errorsOf(yaml, { OTLP_AUTH: "Bearer abc-secret", HOOK_TOKEN: "hook-secret" })).toEqual([]);
  });

  test("unknown module, a stream not carried, fields, unknown and missing settings, each with its path", () => {
    const errors = errorsOf(`export:
  a: {module: statsd}
  b: {module: file, streams: [traces], settings: {path: x}}
  c: {module: webhook, settings: {url: "http://h/x"}, fields: [model]}
  d: {module: otlp, settings: {endpoint: "http://c/v1/traces", colour: blue}}
  e: {module: file, settings: {}}
  f: {module: webhook, settings: {url: "http://h/x", max_in_flight: 0, timeout_ms: 99999999}}
`);
    for (const expected of ["export.a.module:", "export.b.streams[0]:", "export.c.fields:", "export.d.settings.colour:", "export.e.settings.path:", "export.f.settings.max_in_flight:", "export.f.settings.timeout_ms:"]) {
      expect({ expected, found: errors.some((e) => e.startsWith(expected)) }).toEqual({ expected, found: true });
    }
  });

  test("capture_content: true is refused (spans carry no prompt text in this build); a secret header's value never shows", () => {
    const errors = errorsOf(`export:\n  t: {module: otlp, settings: {endpoint: "http://c/v1/traces", capture_content: true, headers: {authorization: {env: NOPE}}}}\n`);
    expect(errors.some((e) => e.startsWith("export.t.settings.capture_content: not supported by this build yet"))).toBe(true);
    const shown = errorsOf(`export:\n  t: {module: otlp, settings: {endpoint: 7, headers: {authorization: {env: OTLP_AUTH}}}}\n`, { OTLP_AUTH: "Bearer very-secret-value" });
    expect(shown.some((e) => e.startsWith("export.t.settings.endpoint"))).toBe(true);
    expect(shown.join("\n")).not.toContain("very-secret-value");
  });
});
