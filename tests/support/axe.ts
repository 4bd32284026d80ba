// axe-core (the accessibility engine) run inside a page. Evaluated over the DevTools protocol, so the
// page's Content-Security-Policy, which forbids any inline script, stays on while it runs.
import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";

const AXE_SOURCE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: number;
}

/** The serious and critical violations on the page as it is now (WCAG 2.1 A and AA rules). */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  // A string, evaluated in the page (this file is typed without the DOM).
  const violations = await page.evaluate<AxeViolation[]>(`axe
    .run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] } })
    .then((result) => result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length })))`);
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}
