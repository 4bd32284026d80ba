// Tables of API-created groups (migration 4) and the metering ledger (migration 5).
import type { Migration } from "./migrations.ts";

export const GROUP_MIGRATIONS: readonly Migration[] = [];
