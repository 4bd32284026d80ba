// The console's screens, each at its own path with one h1 naming it (design/console.md, "Screens").
import type { FunctionComponent } from "preact";
import { BASE } from "../route.ts";
import { Audit } from "./audit.tsx";
import { Config } from "./config.tsx";
import { Groups } from "./groups.tsx";
import { Hooks } from "./hooks.tsx";
import { Keys } from "./keys.tsx";
import { Overview } from "./overview.tsx";
import { Requests } from "./requests.tsx";
import { Usage } from "./usage.tsx";

export interface Screen {
  readonly path: string;
  readonly title: string;
  readonly view: FunctionComponent;
}

export const SCREENS: readonly Screen[] = [
  { path: `${BASE}/`, title: "Overview", view: Overview },
  { path: `${BASE}/requests`, title: "Requests", view: Requests },
  { path: `${BASE}/keys`, title: "Keys", view: Keys },
  { path: `${BASE}/groups`, title: "Groups", view: Groups },
  { path: `${BASE}/usage`, title: "Usage", view: Usage },
  { path: `${BASE}/config`, title: "Configuration", view: Config },
  { path: `${BASE}/audit`, title: "Audit", view: Audit },
  { path: `${BASE}/hooks`, title: "Hooks", view: Hooks },
];
