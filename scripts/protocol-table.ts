// Generates the pair table of docs/protocols.md (between its pair-table markers) by running every probe of
// scripts/protocol-features.ts through every adapter, so the table cannot drift from the code.
// `npx bun scripts/protocol-table.ts` prints the section; `--write` puts it into the file. A unit test fails
// when the file differs, and when any adapter loses a feature without a warning.
//
// A request probe goes through one adapter's encodeRequest and back through the same adapter's
// decodeRequest (the same wire format): the value back equal is "keeps"; changed, or equal with a warning,
// "converts"; gone, "drops". A response probe goes through encodeResponse and decodeResponse. The round
// trip of protocol X answers both sides: what X loses as the upstream (request) or for the client
// (response), and whether X's wire can carry the value at all, for a client (request) or from an upstream
// (response).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { adapterFor } from "../src/protocols/registry.ts";
import type { ProtocolAdapter, WireProtocol } from "../src/protocols/types.ts";
import type { IrRequest } from "../src/ir/index.ts";
import { BASE_REQUEST, BASE_RESPONSE, REQUEST_FEATURES, RESPONSE_FEATURES, type RequestFeature, type ResponseFeature } from "./protocol-features.ts";

export const DOC_PATH = join(import.meta.dir, "..", "docs", "protocols.md");
export const BEGIN = "<!-- pair-table:begin -->";
export const END = "<!-- pair-table:end -->";

export const PROTOCOLS: readonly WireProtocol[] = ["openai", "anthropic", "gemini", "bedrock", "cohere", "responses"];
/**
 * The upstream model each egress is evaluated with. Bedrock maps reasoning and top_k only for Claude
 * models, so it is evaluated with a second, non-Claude model too, and a cell that differs says both.
 */
const MODELS: Readonly<Record<WireProtocol, readonly { model: string; label?: string }[]>> = {
  openai: [{ model: "upstream-model" }],
  anthropic: [{ model: "upstream-model" }],
  gemini: [{ model: "upstream-model" }],
  bedrock: [{ model: "anthropic.claude-sonnet-4-5-20250929-v1:0" }, { model: "amazon.nova-pro-v1:0", label: "a non-Claude model" }],
  cohere: [{ model: "upstream-model" }],
  responses: [{ model: "upstream-model" }],
};

export type Verdict = "keeps" | "converts" | "drops";
export interface Cell {
  readonly verdict: Verdict;
  /** What the warnings (or the feature's `quiet` reason) say; empty for keeps. */
  readonly how: string;
  /** The value came back equal: this protocol's wire can carry it. */
  readonly carried: boolean;
  /** Dropped without a warning, for the feature's `quiet` reason: nothing is lost in effect. */
  readonly quiet?: boolean;
}
export interface Row {
  readonly side: "request" | "response";
  readonly label: string;
  readonly cells: Readonly<Record<WireProtocol, Cell>>;
  /** A protocol's cell with another of its MODELS, where it differs (Bedrock with a non-Claude model). */
  readonly variants: Partial<Record<WireProtocol, { readonly label: string; readonly cell: Cell }>>;
}

interface Trip {
  readonly before: string | undefined;
  readonly after: string | undefined;
  readonly warnings: readonly string[];
}

function adapter(protocol: WireProtocol): ProtocolAdapter {
  const found = adapterFor(protocol);
  if (!found) throw new Error(`no adapter for ${protocol}`);
  return found;
}
const wire = (body: unknown): unknown => JSON.parse(JSON.stringify(body));

/**
 * The warnings the feature added: its context alone may warn too (Anthropic's default max_tokens), about
 * something else. When the feature is lost with no warning of its own, what holds it was lost with it
 * (a document's title goes with the document), so the context's warnings are the ones that say so.
 */
function requestTrip(feature: RequestFeature, protocol: WireProtocol, model: string): Trip {
  const a = adapter(protocol);
  const ir = { ...BASE_REQUEST, ...feature.probe };
  const encoded = a.encodeRequest(ir, model);
  const added = (context: IrRequest) => {
    const before = new Set(a.encodeRequest(context, model).warnings);
    return encoded.warnings.filter((w) => !before.has(w));
  };
  const back = a.decodeRequest(wire(encoded.body), { pathModel: model, pathStream: ir.stream });
  if (!back.ok) throw new Error(`${protocol} rejects its own encoding of "${feature.label}": ${back.error.message}`);
  const [before, after] = [feature.read(ir), feature.read(back.value)];
  const own = added({ ...BASE_REQUEST, ...feature.context });
  return { before, after, warnings: own.length > 0 || after === before ? own : added(BASE_REQUEST) };
}

function responseTrip(feature: ResponseFeature, protocol: WireProtocol): Trip {
  const a = adapter(protocol);
  const response = { ...BASE_RESPONSE, ...feature.probe };
  const baseline = new Set<string>();
  a.encodeResponse(BASE_RESPONSE, (w) => baseline.add(w));
  const warnings: string[] = [];
  const back = a.decodeResponse(wire(a.encodeResponse(response, (w) => warnings.push(w))));
  if (!back.ok) throw new Error(`${protocol} rejects its own response for "${feature.label}": ${back.error.message}`);
  return { before: feature.read(response), after: feature.read(back.value), warnings: warnings.filter((w) => !baseline.has(w)) };
}

/**
 * A trip's verdict. A value that comes back changed without a warning is a conversion the cell spells
 * out; one that is gone without a warning is a silent drop unless the feature's `quiet` says why it
 * loses nothing. A silent drop, and a `quiet` reason where nothing is quiet (stale), are problems the
 * test fails on.
 */
function judge(trip: Trip, quiet: string | undefined, where: string, problems: string[]): Cell {
  const carried = trip.after === trip.before;
  const verdict: Verdict = carried && trip.warnings.length === 0 ? "keeps" : trip.after === undefined ? "drops" : "converts";
  if (trip.warnings.length > 0 || carried) {
    if (quiet !== undefined) problems.push(`${where}: stale quiet reason (it ${verdict}${trip.warnings.length > 0 ? " with a warning" : ""}): ${quiet}`);
    return { verdict, how: [...new Set(trip.warnings)].join("; "), carried };
  }
  if (verdict === "drops" && quiet === undefined) problems.push(`${where}: dropped without a warning (warn in the adapter, or give the feature a quiet reason)`);
  const change = verdict === "converts" ? `${trip.before} becomes ${trip.after}` : undefined;
  const why = quiet === undefined ? (verdict === "drops" ? "SILENTLY" : undefined) : `unwarned: ${quiet}`;
  return { verdict, how: [change, why].filter((s) => s !== undefined).join("; "), carried, ...(verdict === "drops" && quiet !== undefined && { quiet: true }) };
}

const same = (a: Cell, b: Cell) => a.verdict === b.verdict && a.how === b.how;

/** Every feature through every adapter; `problems` collects silent losses and stale reasons. */
export function evaluate(): { rows: Row[]; problems: string[] } {
  const problems: string[] = [];
  const rows: Row[] = [];
  for (const feature of REQUEST_FEATURES) {
    const cells = {} as Record<WireProtocol, Cell>;
    const variants: Row["variants"] = {};
    for (const protocol of PROTOCOLS) {
      const [main, ...others] = MODELS[protocol].map(({ model, label }) => ({
        label: label ?? model,
        cell: judge(requestTrip(feature, protocol, model), feature.quiet?.[protocol], `request "${feature.label}" -> ${protocol}${label ? ` (${label})` : ""}`, problems),
      }));
      if (!main) throw new Error(`no model for ${protocol}`);
      cells[protocol] = main.cell;
      const differs = others.find((other) => !same(other.cell, main.cell));
      if (differs) variants[protocol] = differs;
    }
    rows.push({ side: "request", label: feature.label, cells, variants });
  }
  for (const feature of RESPONSE_FEATURES) {
    const cells = {} as Record<WireProtocol, Cell>;
    for (const protocol of PROTOCOLS) cells[protocol] = judge(responseTrip(feature, protocol), feature.quiet?.[protocol], `response "${feature.label}" -> ${protocol}`, problems);
    rows.push({ side: "response", label: feature.label, cells, variants: {} });
  }
  return { rows, problems };
}

// ---- markdown ---------------------------------------------------------------------------------------

const escape = (text: string) => text.replaceAll("|", "\\|").replaceAll("<", "&lt;").replaceAll("\n", " ");
const say = (cell: Cell) => (cell.verdict === "keeps" ? "keeps" : `${cell.verdict}: ${escape(cell.how)}`);
const carriedBy = (row: Row) => {
  const by = PROTOCOLS.filter((p) => row.cells[p].carried);
  return by.length === PROTOCOLS.length ? "all" : by.length === 0 ? "none" : by.join(", ");
};

function featureTable(rows: readonly Row[], side: Row["side"]): string {
  const head = side === "request" ? "sent by clients of" : "reported by upstreams of";
  const lines = rows
    .filter((row) => row.side === side)
    .map((row) => {
      const cells = PROTOCOLS.map((p) => {
        const variant = row.variants[p];
        return variant ? `${say(row.cells[p])}; with ${variant.label}: ${say(variant.cell)}` : say(row.cells[p]);
      });
      return `| ${escape(row.label)} | ${cells.join(" | ")} | ${carriedBy(row)} |`;
    });
  return [`| feature | ${PROTOCOLS.join(" | ")} | ${head} |`, `|---|${PROTOCOLS.map(() => "---|").join("")}---|`, ...lines].join("\n");
}

/**
 * What a client of `ingress` loses through an `egress` upstream: request features the client can send
 * that the egress converts or drops, and response features the upstream reports that the ingress
 * converts or drops for the client.
 */
function pairCell(rows: readonly Row[], ingress: WireProtocol, egress: WireProtocol): string {
  if (ingress === egress) return "lossless: bytes pass through, the IR is not used";
  const lost = (verdict: Verdict) =>
    rows.flatMap((row) => {
      const [from, to] = row.side === "request" ? [ingress, egress] : [egress, ingress];
      const cell = row.cells[to];
      return row.cells[from].carried && cell.verdict === verdict && !cell.quiet ? [escape(row.label)] : [];
    });
  const converts = lost("converts");
  const drops = lost("drops");
  const parts = [converts.length > 0 && `**converts** ${converts.join(", ")}`, drops.length > 0 && `**drops** ${drops.join(", ")}`].filter(Boolean);
  return parts.length === 0 ? "keeps every feature" : parts.join("<br>");
}

function pairTable(rows: readonly Row[]): string {
  const lines = PROTOCOLS.map((ingress) => `| **${ingress}** | ${PROTOCOLS.map((egress) => pairCell(rows, ingress, egress)).join(" | ")} |`);
  return [`| client \\ upstream | ${PROTOCOLS.join(" | ")} |`, `|---|${PROTOCOLS.map(() => "---|").join("")}`, ...lines].join("\n");
}

/** The generated section, markers included. */
export function renderSection(rows: readonly Row[]): string {
  return `${BEGIN}
<!-- Generated by scripts/protocol-table.ts from the adapters and scripts/protocol-features.ts. Do not edit: run \`npx bun scripts/protocol-table.ts --write\`. -->

### Pairs: what a client of each protocol loses through each upstream

Rows: the client's protocol; columns: the upstream's. Request features are listed where the client can send them; response features where the upstream reports them. A drop the feature tables mark "unwarned" loses nothing in effect and is left out here.

${pairTable(rows)}

### Request features, by upstream protocol

What each adapter does with a request feature when it encodes for its upstream. The last column names the protocols whose clients can send the feature at all (the same round trip keeps it).

${featureTable(rows, "request")}

### Response features, by client protocol

What each adapter does with a response feature when it answers its client. The last column names the protocols whose upstreams can report the feature at all.

${featureTable(rows, "response")}
${END}`;
}

/** `text` with its marked section replaced by `section`. */
export function withSection(text: string, section: string): string {
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`docs/protocols.md has no ${BEGIN} ... ${END} section`);
  return text.slice(0, begin) + section + text.slice(end + END.length);
}

if (import.meta.main) {
  const { rows, problems } = evaluate();
  for (const problem of problems) process.stderr.write(`${problem}\n`);
  if (problems.length > 0) process.exit(1);
  const section = renderSection(rows);
  if (process.argv.includes("--write")) writeFileSync(DOC_PATH, withSection(readFileSync(DOC_PATH, "utf8"), section));
  else process.stdout.write(`${section}\n`);
}
