// The console's own paths under /ui (design/console.md, "Screens"): the address bar names the screen, so
// a screen can be bookmarked and the back button works.
import { signal } from "@preact/signals";

export const BASE = "/ui";
export const path = signal(location.pathname);

export function navigate(to: string): void {
  if (to === path.value) return;
  history.pushState(null, "", to);
  path.value = to;
}

addEventListener("popstate", () => {
  path.value = location.pathname;
});
