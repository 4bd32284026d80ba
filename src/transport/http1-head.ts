// An HTTP/1.1 answer's head, read as a hostile peer may write it: the status line and the header lines,
// bounded in size, with the four headers the client needs (framing, reuse, content coding) picked out on
// the way. Anything an honest server would not send is refused, never guessed at.

/** The longest head read: status line and headers (what nginx allows with large_client_header_buffers 4 64k). */
export const MAX_HEAD_BYTES = 64 * 1024;

/** How the body after the head is framed. */
export const enum Framing {
  None,
  Length,
  Chunked,
  /** HTTP/1.0, or no length given: the body runs until the server closes. */
  UntilClose,
}

export interface Head {
  readonly status: number;
  readonly headers: HeaderList;
  readonly framing: Framing;
  /** Content-Length (Framing.Length). */
  readonly length: number;
  /** The server lets the connection carry another request (HTTP/1.1, no `connection: close`, no framing doubt). */
  readonly keepAlive: boolean;
  /** Content-Encoding, lowercased, or "" for none/identity. */
  readonly coding: string;
}

/** An answer the client cannot read as HTTP/1.1: transportCause words it by its code. */
export function badResponse(why: string): Error {
  return Object.assign(new Error(`malformed upstream answer: ${why}`), { code: "EBADRESPONSE" });
}

const SP = 0x20;
const HTAB = 0x09;

/**
 * Parses `text` (the head up to, not including, the blank line, as latin1) into a Head, or returns the
 * reason it is refused. Interim (1xx) answers are parsed too; the caller skips them. Every request is a
 * POST, so only the status decides that an answer has no body.
 */
export function parseHead(text: string): Head | Error {
  // "HTTP/1.x NNN" then a space and a reason, or nothing.
  if (text.length < 12 || !text.startsWith("HTTP/1.") || text.charCodeAt(8) !== SP) return badResponse("no HTTP/1.x status line");
  const minor = text.charCodeAt(7);
  if (minor !== 0x30 && minor !== 0x31) return badResponse("no HTTP/1.x status line");
  const status = digit(text, 9) * 100 + digit(text, 10) * 10 + digit(text, 11);
  if (!(status >= 100 && status <= 599) || (text.length > 12 && text.charCodeAt(12) !== SP && text.charCodeAt(12) !== 0x0d)) return badResponse("bad status code");
  let keepAlive = minor === 0x31;
  let length = -1;
  let chunked = false;
  let coding = "";
  // Checked as the Headers class would (a token name; no CR, LF or NUL in a value), which the answer's
  // headers are not made into: building one cost ~5 µs of a ~60 µs streamed request (docs/performance.md).
  // Lines end at CRLF, so a CR, LF or NUL left anywhere in the head is inside a name or a value.
  if (STRAY.test(text)) return badResponse("bad header name or value");
  const list: string[] = [];
  let at = text.indexOf("\r\n");
  while (at !== -1) {
    const start = at + 2;
    const next = text.indexOf("\r\n", start);
    const end = next === -1 ? text.length : next;
    at = next;
    const first = text.charCodeAt(start);
    // A folded continuation line (obsolete, RFC 9112 section 5.2) is refused rather than unfolded.
    if (first === SP || first === HTAB) return badResponse("folded header line");
    const colon = text.indexOf(":", start);
    if (colon <= start || colon >= end) return badResponse("header line without a name");
    // Names keep the case they came in: lowercasing each one was most of a head's parse (~0.4 of ~0.9 µs),
    // and every reader compares them without regard to case (sameName; Bun's Headers lowercase them).
    const name = text.slice(start, colon);
    if (!TOKEN.test(name)) return badResponse("bad header name or value");
    // Optional whitespace around the value (RFC 9112 section 5): bounds found first, then one slice.
    let from = colon + 1;
    let to = end;
    while (from < to && isBlank(text.charCodeAt(from))) from++;
    while (to > from && isBlank(text.charCodeAt(to - 1))) to--;
    const value = text.slice(from, to);
    list.push(name, value);
    // Only names of these lengths can be one of the four headers looked at.
    switch (name.length) {
      case 10:
        if (sameName(name, "connection") && hasToken(value, "close")) keepAlive = false;
        break;
      case 14:
        if (sameName(name, "content-length")) {
          if (!/^\d{1,15}$/.test(value) || (length !== -1 && length !== Number(value))) return badResponse("bad content-length");
          length = Number(value);
        }
        break;
      case 16:
        if (sameName(name, "content-encoding")) coding = value.toLowerCase();
        break;
      case 17:
        if (sameName(name, "transfer-encoding")) {
          // Only `chunked` alone is read; a transfer coding under it (gzip, chunked) is not.
          chunked = value.toLowerCase() === "chunked";
          if (!chunked) return badResponse("unsupported transfer-encoding");
        }
        break;
    }
  }
  const headers = new HeaderList(list);
  if (coding === "identity") coding = "";
  let framing: Framing;
  if (status < 200 || status === 204 || status === 304) framing = Framing.None;
  else if (chunked) {
    framing = Framing.Chunked;
    // Both framings given: the chunks win (RFC 9112 section 6.3), but such a peer is not trusted with another request.
    if (length !== -1) keepAlive = false;
  } else if (length !== -1) framing = length === 0 ? Framing.None : Framing.Length;
  else {
    framing = Framing.UntilClose;
    keepAlive = false;
  }
  return { status, headers, framing, length, keepAlive, coding };
}

function digit(text: string, at: number): number {
  const c = text.charCodeAt(at) - 0x30;
  return c >= 0 && c <= 9 ? c : NaN;
}

function hasToken(value: string, token: string): boolean {
  for (const part of value.split(",")) if (part.trim().toLowerCase() === token) return true;
  return false;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A NUL, or a CR or LF that is not part of a CRLF line end (no lookbehind: JSC's regex JIT leaves those to its interpreter). */
const STRAY = /\0|\r(?!\n)|[^\r]\n|^\n/;
const isBlank = (c: number) => c === SP || c === HTAB;

/** Whether a header name as received is `lower` (a lowercase name) in any case, without making a string. */
export function sameName(name: string, lower: string): boolean {
  if (name.length !== lower.length) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if ((c >= 0x41 && c <= 0x5a ? c | 0x20 : c) !== lower.charCodeAt(i)) return false;
  }
  return true;
}

/** A set of lowercase header names that answers for names in any case (sameName), bucketed by length. */
export class NameSet {
  private readonly byLength: (string[] | undefined)[] = [];
  constructor(names: readonly string[]) {
    for (const name of names) (this.byLength[name.length] ??= []).push(name);
  }

  has(name: string): boolean {
    const same = this.byLength[name.length];
    if (same === undefined) return false;
    for (const lower of same) if (sameName(name, lower)) return true;
    return false;
  }
}

/**
 * An answer's headers as received, names in the case they came, in order. `get` reads them as Headers does
 * (any case; a name given more than once is joined with ", "); `relayed` gives the pairs to hand on.
 */
export class HeaderList {
  constructor(private list: string[]) {}

  /** `name` in lowercase. */
  get(name: string): string | null {
    const list = this.list;
    let found: string | null = null;
    for (let i = 0; i < list.length; i += 2) if (sameName(list[i]!, name)) found = found === null ? list[i + 1]! : `${found}, ${list[i + 1]}`;
    return found;
  }

  /** `name` in lowercase. */
  delete(name: string): void {
    this.list = this.list.filter((_, i, all) => !sameName(all[i - (i & 1)]!, name));
  }

  /** The pairs whose names are not in `skip`, for a Response's init (which lowercases the names). */
  relayed(skip: NameSet): [string, string][] {
    const list = this.list;
    const out: [string, string][] = [];
    for (let i = 0; i < list.length; i += 2) if (!skip.has(list[i]!)) out.push([list[i]!, list[i + 1]!]);
    return out;
  }
}
