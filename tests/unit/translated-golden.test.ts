// Translated streams write exactly what they wrote before issue 15's faster parsers and writers: every
// client protocol x every upstream stream (bench/upstream.ts's, and synthetic ones with every JSON
// escape, reasoning and tool calls) x three ways of cutting it into pieces, through translatedStream,
// against digests recorded from the generic code (tests/support/translated-golden.ts). A case that
// differs is named; GOLDEN_WRITE=1 re-records (only when a change of output is intended).
import { describe, expect, test } from "bun:test";
import { allCases, upstreamStreams } from "../support/translated-golden.ts";

const FIXTURE = `${import.meta.dir}/../fixtures/translated-streams.json`;
type Fixture = { upstreams: Record<string, { protocol: string; events: string[] }>; digests: Record<string, string> };
const digest = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex").slice(0, 32);

if (process.env.GOLDEN_WRITE === "1") {
  const streams = upstreamStreams();
  const cases = await allCases(streams);
  const fixture: Fixture = {
    upstreams: Object.fromEntries(Object.entries(streams).map(([name, s]) => [name, { protocol: s.protocol, events: s.events.map((e) => Buffer.from(e).toString("base64")) }])),
    digests: Object.fromEntries(Object.entries(cases).map(([name, out]) => [name, digest(out)])),
  };
  await Bun.write(FIXTURE, `${JSON.stringify(fixture, null, 1)}\n`);
}

const fixture: Fixture = await Bun.file(FIXTURE).json();
const streams = Object.fromEntries(Object.entries(fixture.upstreams).map(([name, s]) => [name, { protocol: s.protocol, events: s.events.map((e) => new Uint8Array(Buffer.from(e, "base64"))) }]));

describe("translated streams write what the generic code wrote", () => {
  test("every client protocol x every recorded upstream stream x three cuttings", async () => {
    const cases = await allCases(streams);
    const differ = Object.keys(fixture.digests).filter((name) => digest(cases[name] ?? "missing") !== fixture.digests[name]);
    expect(Object.keys(cases).length).toBe(Object.keys(fixture.digests).length);
    expect(Object.keys(cases).length).toBeGreaterThan(800);
    expect(differ).toEqual([]);
  });
});
