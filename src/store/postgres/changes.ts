// How a replica learns what another changed (design/replicas.md, "What the fleet shares"): every applied
// change's audit transaction NOTIFYs `<replica> <resource>` (audit.ts), delivered at commit; each replica
// LISTENs and is told the resources others changed, a turn's worth at a time. Notifications sent while a
// replica's listening connection was down are lost: the client re-subscribes on reconnect and `resubscribed`
// is told then, so the caller reconciles (and on a timer besides).
import type { SQL } from "bun";

export const CHANGES_CHANNEL = "gateway_changes";

/** Starts listening; `changed` gets the resources (`key:<id>`, `group:<name>`, ...) other replicas changed. Answers the stop. */
export async function listenForChanges(sql: SQL, replicaId: string, changed: (resources: readonly string[]) => void, resubscribed: () => void = () => {}): Promise<() => Promise<void>> {
  let pending: string[] = [];
  const deliver = () => {
    const resources = pending;
    pending = [];
    changed(resources);
  };
  let subscribed = false;
  const subscription = await sql.listen(
    CHANGES_CHANNEL,
    (payload: string) => {
      const space = payload.indexOf(" ");
      if (space < 0 || payload.slice(0, space) === replicaId) return; // our own: applied before the answer
      if (pending.length === 0) queueMicrotask(deliver);
      pending.push(payload.slice(space + 1));
    },
    () => {
      if (subscribed) resubscribed();
      subscribed = true;
    },
  );
  return () => subscription.unlisten();
}
