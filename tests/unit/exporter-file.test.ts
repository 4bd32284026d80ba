import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Value } from "@sinclair/typebox/value";
import { fileExporter, FileSettings, FILE_MAX_PENDING_RECORDS } from "../../src/telemetry/exporters/file.ts";
import { createLogger } from "../../src/telemetry/logger.ts";
import { requestRecord } from "../support/records.ts";
import { tempDir } from "../support/temp.ts";
import { until } from "../support/until.ts";

function setup(settings: Partial<FileSettings> = {}, now?: () => number) {
  const path = settings.path ?? join(tempDir("exporter-file-"), "requests.jsonl");
  const warnings: Record<string, unknown>[] = [];
  const logger = createLogger({ level: "warn", write: (line) => warnings.push(JSON.parse(line)) });
  let dropped = 0;
  const exporter = fileExporter("audit-file", { path, ...settings }, { logger, dropped: { inc: (by = 1) => void (dropped += by) }, ...(now && { now }) });
  return { path, exporter, warnings, dropped: () => dropped };
}

const lines = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((l, i, all) => i < all.length - 1 || l !== "");

describe("file exporter", () => {
  test("settings: path required, max_bytes a non-negative integer, nothing else", () => {
    expect(Value.Check(FileSettings, { path: "/var/log/gw.jsonl" })).toBe(true);
    expect(Value.Check(FileSettings, { path: "/x", max_bytes: 0 })).toBe(true);
    expect(Value.Check(FileSettings, {})).toBe(false);
    expect(Value.Check(FileSettings, { path: "/x", max_bytes: -1 })).toBe(false);
    expect(Value.Check(FileSettings, { path: "/x", max_bytes: 1.5 })).toBe(false);
    expect(Value.Check(FileSettings, { path: "/x", rotate: true })).toBe(false);
  });

  test("writes JSON Lines, one whole record a line, to a file created 0600", async () => {
    const { path, exporter } = setup();
    const records = [requestRecord(1), requestRecord(2, { error: { class: "timeout", message: "upstream took 30 s\nthen gave up" }, outcome: "error" }), requestRecord(3)];
    for (const r of records) exporter.log!(r);
    expect(existsSync(path)).toBe(false); // log() only queues
    await exporter.flush();
    const written = readFileSync(path, "utf8");
    expect(written.endsWith("\n")).toBe(true);
    expect(lines(path).map((l) => JSON.parse(l))).toEqual(records);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(exporter).toMatchObject({ name: "audit-file", module: "file", streams: ["logs"] });
    await exporter.close();
  });

  test("appends within a second without a flush, after what the file held", async () => {
    const { path, exporter } = setup();
    writeFileSync(path, `${JSON.stringify(requestRecord(0))}\n`, { mode: 0o600 });
    exporter.log!(requestRecord(1));
    await until(() => lines(path).length === 2, 2_500);
    expect(lines(path).map((l) => JSON.parse(l).request_id)).toEqual(["req-0", "req-1"]);
    await exporter.close();
  });

  test("rotates at max_bytes: whole lines, <path>.1 replaced, neither file past the bound", async () => {
    const one = `${JSON.stringify(requestRecord(10))}\n`.length;
    const maxBytes = one * 3 + 5; // three lines fit, a fourth would not
    const { path, exporter } = setup({ max_bytes: maxBytes });
    writeFileSync(`${path}.1`, "an older generation\n");
    for (let i = 10; i < 15; i++) exporter.log!(requestRecord(i));
    await exporter.flush();
    expect(lines(`${path}.1`).map((l) => JSON.parse(l).request_id)).toEqual(["req-10", "req-11", "req-12"]);
    expect(lines(path).map((l) => JSON.parse(l).request_id)).toEqual(["req-13", "req-14"]);
    // A later flush sees the size on disk: the third line fits, the fourth rotates again.
    for (let i = 15; i < 17; i++) exporter.log!(requestRecord(i));
    await exporter.flush();
    expect(lines(`${path}.1`).map((l) => JSON.parse(l).request_id)).toEqual(["req-13", "req-14", "req-15"]);
    expect(lines(path).map((l) => JSON.parse(l).request_id)).toEqual(["req-16"]);
    for (const p of [path, `${path}.1`]) expect(statSync(p).size).toBeLessThanOrEqual(maxBytes);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    await exporter.close();
  });

  test("many writes of lines (multi-byte text among them), rotated mid-write: every line whole, once, in order, no file past the bound", async () => {
    const dir = tempDir("exporter-file-");
    const path = join(dir, "requests.jsonl");
    const maxBytes = 150_000; // falls inside a 64 KiB write, and again later
    const { exporter } = setup({ path, max_bytes: maxBytes });
    const all: string[] = [];
    const seen: string[] = [];
    for (let i = 0; i < 1200; i++) {
      const record = requestRecord(i, { request_id: `req-${i}`, error: i % 7 === 0 ? { class: "internal", message: `über ${"€".repeat(i % 50)} 😀` } : null, outcome: i % 7 === 0 ? "error" : "ok" });
      all.push(record.request_id);
      exporter.log!(record);
      // Rotation keeps one older generation: read it before the next one replaces it.
      if (i % 150 === 149) {
        await exporter.flush();
        if (existsSync(`${path}.1`)) {
          for (const l of lines(`${path}.1`)) seen.push(JSON.parse(l).request_id);
          renameSync(`${path}.1`, join(dir, `old-${i}.jsonl`));
          expect(statSync(join(dir, `old-${i}.jsonl`)).size).toBeLessThanOrEqual(maxBytes);
        }
      }
    }
    await exporter.close();
    for (const l of lines(path)) seen.push(JSON.parse(l).request_id);
    expect(statSync(path).size).toBeLessThanOrEqual(maxBytes);
    expect(seen).toEqual(all);
  });

  test("a line longer than max_bytes is written whole, alone in its file", async () => {
    const { path, exporter } = setup({ max_bytes: 10 });
    exporter.log!(requestRecord(1));
    exporter.log!(requestRecord(2));
    await exporter.flush();
    expect(lines(`${path}.1`).map((l) => JSON.parse(l).request_id)).toEqual(["req-1"]);
    expect(lines(path).map((l) => JSON.parse(l).request_id)).toEqual(["req-2"]);
    await exporter.close();
  });

  test("max_bytes 0 never rotates", async () => {
    const { path, exporter } = setup({ max_bytes: 0 });
    for (let i = 0; i < 50; i++) exporter.log!(requestRecord(i));
    await exporter.flush();
    expect(lines(path)).toHaveLength(50);
    expect(existsSync(`${path}.1`)).toBe(false);
    await exporter.close();
  });

  test("the buffer is bounded: past it the newest records are shed and counted", async () => {
    const { path, exporter, dropped, warnings } = setup();
    for (let i = 0; i < FILE_MAX_PENDING_RECORDS + 25; i++) exporter.log!(requestRecord(i));
    expect(dropped()).toBe(25);
    await exporter.flush();
    const written = lines(path);
    expect(written).toHaveLength(FILE_MAX_PENDING_RECORDS);
    expect(JSON.parse(written.at(-1)!).request_id).toBe(`req-${FILE_MAX_PENDING_RECORDS - 1}`);
    expect(warnings.some((w) => String(w.msg).includes("shed") && w.records === 25)).toBe(true);
    await exporter.close();
  });

  test("an unwritable path never throws from log(); the loss is counted and warned once", async () => {
    const path = join(tempDir("exporter-file-"), "missing-dir", "requests.jsonl");
    const { exporter, dropped, warnings } = setup({ path });
    expect(() => exporter.log!(requestRecord(1))).not.toThrow();
    exporter.log!(requestRecord(2));
    await exporter.flush();
    expect(dropped()).toBe(2);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: "warn", exporter: "audit-file", records: 2 });
    expect(String(warnings[0]!.error)).toContain("ENOENT");
    await exporter.close();
  });

  test("close flushes, then drops what is logged after", async () => {
    const { path, exporter, dropped } = setup();
    exporter.log!(requestRecord(1));
    await exporter.close();
    expect(lines(path)).toHaveLength(1);
    exporter.log!(requestRecord(2));
    expect(dropped()).toBe(1);
    await Bun.sleep(1_100);
    expect(lines(path)).toHaveLength(1);
  });

  test("a file renamed away by something else (logrotate) is replaced by a new one within a second", async () => {
    let clock = 1_000_000;
    const { path, exporter } = setup({}, () => clock);
    exporter.log!(requestRecord(1));
    await exporter.flush();
    renameSync(path, `${path}.old`);
    // Within the second the open file is still written: the line follows the renamed file, as with any writer.
    exporter.log!(requestRecord(2));
    await exporter.flush();
    clock += 1_001;
    exporter.log!(requestRecord(3));
    await exporter.flush();
    expect(lines(`${path}.old`).map((l) => JSON.parse(l).request_id)).toEqual([requestRecord(1).request_id, requestRecord(2).request_id]);
    expect(lines(path).map((l) => JSON.parse(l).request_id)).toEqual([requestRecord(3).request_id]);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    await exporter.close();
  });
});
