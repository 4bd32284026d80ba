import { describe, expect, test } from "bun:test";
import { Secret, secretEquals } from "../../src/config/secret.ts";
import { createLogger } from "../../src/telemetry/logger.ts";

function capture(level: "debug" | "info" | "warn" | "error" = "info") {
  const lines: string[] = [];
  return { lines, logger: createLogger({ level, write: (line) => lines.push(line) }) };
}

describe("logger", () => {
  test("writes one JSON object per line with ts, level, msg and fields", () => {
    const { lines, logger } = capture();
    logger.child({ plane: "admin" }).info("started", { port: 8081 });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.endsWith("\n")).toBe(true);
    const record = JSON.parse(lines[0]!);
    expect(record).toMatchObject({ level: "info", msg: "started", plane: "admin", port: 8081 });
    expect(Number.isNaN(Date.parse(record.ts))).toBe(false);
  });

  test("drops records below its level", () => {
    const { lines, logger } = capture("warn");
    logger.info("quiet");
    logger.debug("quieter");
    logger.warn("loud");
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(["loud"]);
  });

  test("never writes a secret: Secret objects and credential-named fields are masked", () => {
    const { lines, logger } = capture();
    logger.info("provider loaded", {
      key: new Secret("sk-live-abc123", "env:OPENAI_API_KEY"),
      nested: { api_key: "sk-live-abc123", authorization: "Bearer sk-live-abc123", admin_token: "adm-xyz" },
      usage: { input_tokens: 12, tokens: 30 },
    });
    const line = lines[0]!;
    expect(line).not.toContain("sk-live-abc123");
    expect(line).not.toContain("adm-xyz");
    expect(JSON.parse(line).nested.api_key).toBe("[redacted]");
    expect(JSON.parse(line).usage).toEqual({ input_tokens: 12, tokens: 30 });
  });

  test("a cyclic field does not crash the caller", () => {
    const { lines, logger } = capture();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    logger.error("odd", { cyclic });
    expect(JSON.parse(lines[0]!).msg).toBe("odd");
  });
});

describe("secret comparison", () => {
  test("matches only the exact value, and never an empty secret", () => {
    const secret = new Secret("correct horse", "test");
    expect(secretEquals(secret, "correct horse")).toBe(true);
    expect(secretEquals(secret, "correct hors")).toBe(false);
    expect(secretEquals(secret, "correct horse ")).toBe(false);
    expect(secretEquals(new Secret("", "test"), "")).toBe(false);
  });
});
