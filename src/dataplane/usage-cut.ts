// Reading what metering needs out of an upstream's JSON bytes without building the whole answer as
// objects: whether a body is one whole JSON object (one pass over its bytes), and the usage object cut out
// of an answer or out of a stream's first and last events. All of it works on the bytes as they came:
// decoding kilobytes of answer to text only to find one small object in it cost more than the search.
import { inputTotal, mergeUsage, ZERO_USAGE, type IrUsage } from "../ir/index.ts";
import { utf8 } from "../transport/answer.ts";

/**
 * Whether the bytes are one JSON object: `{` first, then JSON's grammar outside strings (values, keys,
 * colons, commas, brackets that match, numbers, true/false/null), the object closing at the last
 * non-space byte. Strings are skipped to their closing quote by native search, their escapes not read.
 * One pass and no objects built: a same-protocol answer is relayed as its bytes, and parsing it whole
 * only to prove it JSON cost more under load than this (docs/performance.md). What it tells apart: a
 * truncated, HTML or binary body, and a body an OpenAI-compatible server wrote as something else
 * (single quotes, NaN, a trailing comma) from the vendor's JSON.
 */
export function isWholeObject(bytes: Uint8Array): boolean {
  let end = bytes.length;
  while (end > 0 && isSpace(bytes[end - 1]!)) end--;
  let i = 0;
  while (i < end && isSpace(bytes[i]!)) i++;
  if (bytes[i] !== OPEN) return false;
  /** Open containers, innermost last: true for an object. */
  const open: boolean[] = [];
  let expect = Expect.Value;
  for (; i < end; i++) {
    const c = bytes[i]!;
    if (isSpace(c)) continue;
    if (expect === Expect.Colon) {
      if (c !== COLON) return false;
      expect = Expect.Value;
    } else if (expect === Expect.After) {
      // After a value: a comma, or the close of its container.
      if (c === COMMA) expect = open.at(-1) ? Expect.Key : Expect.Value;
      else if (!close(c)) return false;
    } else if (c === QUOTE) {
      i = closingQuote(bytes, i + 1);
      if (i === -1) return false;
      expect = (expect as Expect) === Expect.Key || (expect as Expect) === Expect.KeyOrClose ? Expect.Colon : Expect.After;
    } else if (expect === Expect.Key) return false;
    else if (expect === Expect.KeyOrClose || expect === Expect.ValueOrClose) {
      if (!close(c)) {
        if (expect === Expect.KeyOrClose) return false;
        expect = Expect.Value;
        i--; // read it again as a value
      }
    } else if (c === OPEN || c === OPEN_BRACKET) {
      open.push(c === OPEN);
      expect = c === OPEN ? Expect.KeyOrClose : Expect.ValueOrClose;
    } else {
      const after = scalarEnd(bytes, i, end);
      if (after === -1) return false;
      i = after - 1;
      expect = Expect.After;
    }
    // The outermost object closed: nothing may follow it.
    if (open.length === 0) return i === end - 1;
  }
  return false;

  function close(c: number): boolean {
    if (c !== (open.at(-1) ? CLOSE : CLOSE_BRACKET) || open.length === 0) return false;
    open.pop();
    expect = Expect.After;
    return true;
  }
}

const enum Expect {
  Value,
  ValueOrClose,
  Key,
  KeyOrClose,
  Colon,
  After,
}

/** Just past the number or literal (true, false, null) at `at`, by JSON's grammar; -1 when there is none. */
function scalarEnd(bytes: Uint8Array, at: number, end: number): number {
  for (const literal of LITERALS) {
    if (bytes[at] !== literal[0]) continue;
    for (let k = 1; k < literal.length; k++) if (bytes[at + k] !== literal[k]) return -1;
    return at + literal.length;
  }
  let i = at;
  if (bytes[i] === MINUS) i++;
  if (bytes[i] === ZERO) i++;
  else if (isDigit(bytes[i]!)) while (i < end && isDigit(bytes[i]!)) i++;
  else return -1;
  if (bytes[i] === DOT) {
    if (!isDigit(bytes[++i]!)) return -1;
    while (i < end && isDigit(bytes[i]!)) i++;
  }
  if (bytes[i] === 0x65 || bytes[i] === 0x45) {
    i++;
    if (bytes[i] === PLUS || bytes[i] === MINUS) i++;
    if (!isDigit(bytes[i]!)) return -1;
    while (i < end && isDigit(bytes[i]!)) i++;
  }
  return i;
}

const LITERALS = ["true", "false", "null"].map((word) => Buffer.from(word));
const [COMMA, MINUS, PLUS, DOT, ZERO] = [",", "-", "+", ".", "0"].map((c) => c.charCodeAt(0)) as [number, number, number, number, number];
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

export function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * `{"usage": {...}}` cut out of a response body: both vendors put the top-level usage object last, so
 * parsing that object alone (bracket-matched from the last `"usage":` key) spares building the whole
 * answer as objects on every request. Falls back to the whole body when the cut does not parse.
 */
export function usageMember(bytes: Uint8Array): unknown {
  const view = asBuffer(bytes);
  const key = view.lastIndexOf(USAGE_KEY);
  const open = key > 0 && view[key - 1] !== BACKSLASH ? objectAfterColon(view, key + USAGE_KEY.length) : -1;
  const usage = open === -1 ? undefined : objectAt(view, open);
  if (usage !== undefined && usage !== CUT_OFF) return { usage };
  return parseOrUndefined(utf8.decode(view));
}

/** A Buffer over the same memory, for its native byte searches (indexOf, lastIndexOf); no copy. */
const asBuffer = (bytes: Uint8Array): Buffer => (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

/**
 * Where the string opened just before `from` closes, or -1. Most of an answer's bytes are its text, so this
 * is most of isWholeObject's time: a short stretch byte by byte (keys, tokens, text dense with escapes),
 * then the native search to the next quote, which is escaped when an odd run of backslashes precedes it.
 */
function closingQuote(bytes: Uint8Array, from: number): number {
  let i = from;
  for (;;) {
    const near = Math.min(bytes.length, i + 32);
    for (; i < near; i++) {
      const c = bytes[i]!;
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) return i;
    }
    const close = i < bytes.length ? bytes.indexOf(QUOTE, i) : -1;
    if (close === -1) return -1;
    let slashes = 0;
    while (bytes[close - 1 - slashes] === BACKSLASH) slashes++;
    if ((slashes & 1) === 0) return close;
    i = close + 1;
  }
}

const [BACKSLASH, QUOTE, OPEN, CLOSE, COLON, OPEN_BRACKET, CLOSE_BRACKET] = ["\\", '"', "{", "}", ":", "[", "]"].map((c) => c.charCodeAt(0)) as [number, number, number, number, number, number, number];
const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Index of the `{` after `: ` at `from` (JSON whitespace allowed), or -1 when a key is not followed by an object. */
function objectAfterColon(bytes: Uint8Array, from: number): number {
  let i = from;
  while (isSpace(bytes[i]!)) i++;
  if (bytes[i++] !== COLON) return -1;
  while (isSpace(bytes[i]!)) i++;
  return bytes[i] === OPEN ? i : -1;
}

/**
 * The members a vendor reports usage in: `usage` everywhere but Gemini (`usageMetadata`). Each with the
 * body its protocol's usageFromResponse reads, built by a literal so every body has one shape.
 */
const USAGE_KEYS: readonly { readonly key: Buffer; readonly body: (found: unknown) => unknown }[] = [
  { key: Buffer.from('"usage"'), body: (found) => ({ usage: found }) },
  { key: Buffer.from('"usageMetadata"'), body: (found) => ({ usageMetadata: found }) },
];
const USAGE_KEY = USAGE_KEYS[0]!.key;

type UsageReader = (body: unknown) => Partial<IrUsage> | undefined;

/**
 * Usage cut out of a stream's first and last events (`head`, `tail`: their pieces as they came; the tail may
 * start mid-event): the first usage object of the head and the last of the tail, each read as the non-stream
 * body `{usage}` its protocol's usageFromResponse reads. Every vendor puts it there: Anthropic input in
 * message_start and output in message_delta; OpenAI, Responses, Cohere and Bedrock in the last event; Gemini
 * a running total in each chunk (the last one whole). The tail is read first and the head only when the last
 * event left input or output out. Only those objects are parsed, never the events around them; undefined
 * when neither edge has one (the caller then decodes the stream to estimate). Every metered stream comes
 * here, so it allocates little: an edge object only for an edge searched, no closure per call.
 */
export function streamUsageCut(head: readonly Uint8Array[], tail: readonly Uint8Array[], read: UsageReader): IrUsage | undefined {
  const last = new Edge(tail, true);
  let first: Edge | undefined;
  for (const usageKey of USAGE_KEYS) {
    // An object under the key that the protocol does not read as usage (a Gemini tool call's `args` with a
    // `usage` member) is not the usage: the next key is tried.
    const reported = usageAt(last, usageKey, read);
    const lastUsage = reported === undefined ? undefined : mergeUsage(ZERO_USAGE, reported);
    // Most vendors report it all in the last event: the head is then not searched.
    if (lastUsage && inputTotal(lastUsage) > 0 && lastUsage.output > 0) return lastUsage;
    const opening = usageAt((first ??= new Edge(head, false)), usageKey, read);
    if (opening === undefined) {
      if (lastUsage) return lastUsage;
      continue;
    }
    const usage = mergeUsage(ZERO_USAGE, opening);
    return reported ? mergeUsage(usage, reported) : usage;
  }
  return undefined;
}

/** What the protocol read under the key at one edge; undefined when it read nothing there. */
function usageAt(edge: Edge, { key, body }: (typeof USAGE_KEYS)[number], read: UsageReader): Partial<IrUsage> | undefined {
  const found = edge.usageObject(key);
  const reported = found === undefined ? undefined : read(body(found));
  if (reported !== undefined) for (const _ in reported) return reported;
  return undefined;
}

/** The search could not tell from the one piece it looked at: the edge's pieces are joined and searched. */
const UNSURE = Symbol("unsure");

/**
 * One edge of a stream as the pieces that came. Its outermost piece (the first of the head, the last of the
 * tail) is searched alone first, and the pieces are joined only when that cannot tell: joining copied the
 * 4-8 KiB edge on every metered stream. An answer found in the outermost piece is the one the joined bytes
 * would give: the search runs from that outer end, so no key of the other pieces comes before it.
 */
class Edge {
  #whole: Buffer | undefined;
  constructor(
    private readonly pieces: readonly Uint8Array[],
    /** The tail: searched from its end for the last object, else from its start for the first. */
    private readonly last: boolean,
  ) {}

  usageObject(key: Buffer): unknown {
    const { pieces, last } = this;
    if (pieces.length > 1) {
      const found = objectUnder(asBuffer(pieces[last ? pieces.length - 1 : 0]!), key, last, true);
      if (found !== UNSURE) return found;
    }
    this.#whole ??= pieces.length === 1 ? asBuffer(pieces[0]!) : Buffer.concat(pieces);
    return objectUnder(this.#whole, key, last, false);
  }
}

/**
 * The first (or last) `key: {...}` object in `bytes`, parsed; a key whose value is not an object
 * (`"usage":null`) is passed over. `outer`: the bytes are only the outermost piece of their edge, so what
 * depends on the bytes beyond its inner end (an object a head's piece cuts off, whose inner keys must not be
 * taken for it; no object found, perhaps for want of the byte before a key) is UNSURE rather than an answer.
 */
function objectUnder(bytes: Buffer, key: Buffer, last: boolean, outer: boolean): unknown {
  let at = last ? bytes.lastIndexOf(key) : bytes.indexOf(key);
  while (at !== -1) {
    const open = at > 0 && bytes[at - 1] !== BACKSLASH ? objectAfterColon(bytes, at + key.length) : -1;
    if (open !== -1) {
      const parsed = objectAt(bytes, open);
      if (parsed === CUT_OFF) {
        if (outer && !last) return UNSURE;
      } else if (parsed !== undefined) return parsed;
    }
    at = last ? (at > 0 ? bytes.lastIndexOf(key, at - 1) : -1) : bytes.indexOf(key, at + 1);
  }
  return outer ? UNSURE : undefined;
}

/** The bytes end before the object closes. */
const CUT_OFF = Symbol("cut off");

/**
 * The object opened at `open`, parsed; CUT_OFF when the bytes end before it closes, undefined when it does
 * not parse. Usage objects hold no brace inside a string, so the end is first found by counting braces with
 * the native search (a third of reading byte by byte), and the parse proves it: a JSON object's text can
 * end at one place only, so a slice that parses is the whole object. Only when it does not is the end read
 * byte by byte, strings skipped.
 */
function objectAt(bytes: Buffer, open: number): unknown {
  const counted = braceEnd(bytes, open);
  if (counted !== -1) {
    const parsed = parseOrUndefined(bytes.toString("utf8", open, counted + 1));
    if (parsed !== undefined) return parsed;
  }
  const close = objectEnd(bytes, open);
  if (close === -1) return CUT_OFF;
  return close === counted ? undefined : parseOrUndefined(bytes.toString("utf8", open, close + 1));
}

/** The `}` where the braces opened from `open` balance, strings not told apart; -1 when they never do. Linear: each search starts past the last. */
function braceEnd(bytes: Buffer, open: number): number {
  let depth = 1;
  let from = open + 1;
  let nextOpen = bytes.indexOf(OPEN, from);
  for (;;) {
    const close = bytes.indexOf(CLOSE, from);
    if (close === -1) return -1;
    while (nextOpen !== -1 && nextOpen < close) {
      depth++;
      nextOpen = bytes.indexOf(OPEN, nextOpen + 1);
    }
    if (--depth === 0) return close;
    from = close + 1;
  }
}

/**
 * Index of the `}` closing the object opened at `open`, strings skipped; -1 when the bytes end first.
 * UTF-8 never uses a byte below 0x80 inside a multi-byte character, so the structure reads as in text.
 */
function objectEnd(bytes: Uint8Array, open: number): number {
  let depth = 0;
  let inString = false;
  for (let i = open; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN) depth++;
    else if (c === CLOSE && --depth === 0) return i;
  }
  return -1;
}
