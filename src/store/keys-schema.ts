// Tables of virtual keys (migration 2) and the audit log (migration 3).
import type { Migration } from "./migrations.ts";

export const KEY_MIGRATIONS: readonly Migration[] = [];
