// An audit sink for unit tests of the services: keeps the records in an array and runs a commit's steps
// in AuditLog.commit's order (plan, stage, write, record, apply), with no store or chain behind it.
import type { AuditRecord, AuditSink } from "../../src/governance/types.ts";

export function recordingSink(records: AuditRecord[]): AuditSink {
  const record = async (r: AuditRecord) => void records.push(r);
  return {
    record,
    async commit(attempt, plan) {
      let change;
      try {
        change = await plan();
      } catch (error) {
        await record({ ...attempt, outcome: "rejected" });
        throw error;
      }
      await change.stage?.();
      change.write?.();
      await record({ ...attempt, outcome: "applied" });
      return change.apply();
    },
  };
}
