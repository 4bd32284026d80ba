// Audit (design/console.md): the audit entries, newest first, filterable by principal, action and
// resource, and the chain's verification result.
import { useState } from "preact/hooks";
import { admin, allPages } from "../api.ts";
import { ErrorNote, Loading, Table, time, useLoad } from "../ui.tsx";

type Entry = Awaited<ReturnType<typeof admin.getAudit>>["items"][number];

/** The newest entries, pages of 500 up to 2,000: what a screen can show; older ones via the API's cursor. */
async function loadEntries(): Promise<{ entries: Entry[]; more: boolean }> {
  const { items: entries, more } = await allPages((cursor) => admin.getAudit({ limit: "500", ...(cursor ? { cursor } : {}) }), 2000);
  return { entries: entries.sort((a, b) => b.seq - a.seq), more };
}

function Filter({ id, label, value, set }: { id: string; label: string; value: string; set: (v: string) => void }) {
  return (
    <>
      <label for={id}>{label}</label>
      <input id={id} type="search" value={value} onInput={(e) => set(e.currentTarget.value)} />
    </>
  );
}

export function Audit() {
  const loaded = useLoad(loadEntries, [], 5000);
  const verify = useLoad(() => admin.getAuditVerify(), [], 15_000);
  const [principal, setPrincipal] = useState("");
  const [action, setAction] = useState("");
  const [resource, setResource] = useState("");
  const has = (text: string, part: string) => part === "" || text.toLowerCase().includes(part.toLowerCase());
  const rows = (loaded.data?.entries ?? []).filter((e) => has(e.principal, principal) && has(e.action, action) && has(e.resource, resource));
  return (
    <>
      <h1>Audit</h1>
      <section aria-labelledby="chain">
        <h2 id="chain">Chain</h2>
        <ErrorNote error={verify.error} />
        {verify.data && (
          <p class={verify.data.ok ? "note ok" : "note error"} role="status">
            {verify.data.ok ? `Chain verified: ${verify.data.checked} entries, every hash links.` : `Chain broken at entry ${verify.data.first_bad_seq}: ${verify.data.reason}`}
          </p>
        )}
      </section>
      <form class="inline" role="search" onSubmit={(e) => e.preventDefault()}>
        <Filter id="audit-principal" label="Principal" value={principal} set={setPrincipal} />
        <Filter id="audit-action" label="Action" value={action} set={setAction} />
        <Filter id="audit-resource" label="Resource" value={resource} set={setResource} />
      </form>
      <ErrorNote error={loaded.error} />
      {!loaded.data && !loaded.error && <Loading what="audit entries" />}
      {loaded.data && (
        <Table
          caption="Audit entries, newest first"
          rows={rows}
          rowKey={(e) => String(e.seq)}
          empty="No entry matches."
          columns={[
            { label: "Seq", numeric: true, cell: (e) => e.seq },
            { label: "Time (UTC)", cell: (e) => time(e.ts) },
            { label: "Principal", cell: (e) => e.principal },
            { label: "Action", cell: (e) => <code>{e.action}</code> },
            { label: "Resource", cell: (e) => e.resource },
            { label: "Outcome", cell: (e) => <span class={`state ${e.outcome}`}>{e.outcome}</span> },
          ]}
        />
      )}
      {loaded.data?.more && <p class="note">Showing the newest 2,000 entries; GET /api/v1/admin/audit pages through the rest.</p>}
    </>
  );
}
