// A headless Chromium for the browser sign-in tests: Debian's package (the machines reach no browser
// download site, so playwright-core is only the driver and never fetches a browser of its own).
import { createHash, X509Certificate } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { aptInstall } from "./apt.ts";

export const CHROMIUM = "/usr/bin/chromium";

// One install attempt per run, shared by every caller.
let installing: Promise<string> | undefined;

/** The path of Debian's chromium, installed with apt-get when missing and running as root. */
export function ensureChromium(): Promise<string> {
  if (existsSync(CHROMIUM)) return Promise.resolve(CHROMIUM);
  installing ??= install();
  return installing;
}

async function install(): Promise<string> {
  await aptInstall("chromium", { recommends: true });
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium but ${CHROMIUM} is not there`);
  return CHROMIUM;
}

// Needed on these machines' closed network: no GPU, no sandbox as root, and none of the background
// fetches (component updates, sync, QUIC probes) that would otherwise stall on unreachable hosts.
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** The base64 SHA-256 of a PEM certificate's public key, the pin --ignore-certificate-errors-spki-list takes. */
function spkiPin(certFile: string): string {
  const spki = new X509Certificate(readFileSync(certFile)).publicKey.export({ type: "spki", format: "der" });
  return createHash("sha256").update(spki).digest("base64");
}

/**
 * A headless Debian chromium driven by playwright-core; the caller closes it. `trustCertFiles` are server
 * certificates (e.g. makeTlsDir()'s cert.pem) the browser accepts although no CA it knows signed them:
 * pinned by public key, so any other certificate error still fails the page.
 */
export async function launchBrowser(opts: { trustCertFiles?: string[] } = {}): Promise<Browser> {
  const pins = (opts.trustCertFiles ?? []).map(spkiPin);
  const args = pins.length > 0 ? [...CHROMIUM_ARGS, `--ignore-certificate-errors-spki-list=${pins.join(",")}`] : CHROMIUM_ARGS;
  return chromium.launch({ executablePath: await ensureChromium(), args });
}
