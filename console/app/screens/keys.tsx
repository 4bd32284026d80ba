// Keys (design/console.md): every key with its state, group and spend; one key's usage; create (the
// secret shown once), disable, enable, revoke and delete, each confirmed, for a full-scope principal.
import { useState } from "preact/hooks";
import { admin, allPages, failure } from "../api.ts";
import { canChange } from "../session.ts";
import { ConfirmButton, cents, count, ErrorNote, Loading, Table, time, useLoad } from "../ui.tsx";
import { Chart } from "./usage.tsx";

type Key = Awaited<ReturnType<typeof admin.getKeys>>["items"][number];
type Spend = Awaited<ReturnType<typeof admin.getUsageKeys>>["items"][number];

/** Every key (pages of 200 until the cursor ends, at most 5,000), and each one's spend this month. */
async function loadKeys(): Promise<{ keys: Key[]; spend: Map<string, Spend> }> {
  const { items: keys } = await allPages((cursor) => admin.getKeys({ limit: "200", ...(cursor ? { cursor } : {}) }), 5000);
  const now = new Date();
  const month = Math.floor(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) / 1000);
  const usage = await admin.getUsageKeys({ from: String(month) });
  return { keys, spend: new Map(usage.items.map((u) => [u.id, u])) };
}

function CreateKey({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState("");
  const [group, setGroup] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [secret, setSecret] = useState<{ id: string; token: string } | null>(null);
  const [copied, setCopied] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      const created = await admin.postKeys({ name: name.trim(), ...(group.trim() ? { group: group.trim() } : {}) });
      setSecret({ id: created.id, token: created.token });
      setError(null);
      setName("");
      onCreated();
    } catch (e) {
      setError(failure(e));
    }
  };
  return (
    <section aria-labelledby="create-key">
      <h2 id="create-key">Create key</h2>
      <form class="inline" onSubmit={submit}>
        <label for="key-name">Name</label>
        <input id="key-name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <label for="key-group">Group (optional)</label>
        <input id="key-group" maxLength={200} value={group} onInput={(e) => setGroup(e.currentTarget.value)} />
        <button type="submit" class="primary">
          Create key
        </button>
      </form>
      <ErrorNote error={error} />
      {secret && (
        <div class="secret" role="status">
          <p>
            Key <code>{secret.id}</code> created. Its secret is shown once; copy it now.
          </p>
          <label for="key-secret">Secret</label>
          <input id="key-secret" readOnly value={secret.token} onFocus={(e) => e.currentTarget.select()} />
          <button
            type="button"
            onClick={async () => {
              await navigator.clipboard.writeText(secret.token).then(() => setCopied(true), () => setCopied(false));
            }}
          >
            {copied ? "Copied" : "Copy"}
          </button>
          <button type="button" onClick={() => (setSecret(null), setCopied(false))}>
            Done
          </button>
        </div>
      )}
    </section>
  );
}

function KeyUsage({ id }: { id: string }) {
  const usage = useLoad(() => admin.getKeysByIdUsage(id), [id], 5000);
  const series = useLoad(() => admin.getUsageSeries({ by: "model", range: "24h", key_id: id }), [id], 30_000);
  if (usage.error) return <ErrorNote error={usage.error} />;
  if (!usage.data) return <Loading what="the key's usage" />;
  const u = usage.data;
  return (
    <>
    <dl class="facts">
      <dt>Requests</dt>
      <dd>{count(u.requests)}</dd>
      <dt>Tokens</dt>
      <dd>{count(u.tokens)}</dd>
      <dt>Spend (cents)</dt>
      <dd>{cents(u.spend_cents)}</dd>
      <dt>Since</dt>
      <dd>{time(u.window_start)}</dd>
      <dt>Group</dt>
      <dd>{u.group ?? "—"}</dd>
    </dl>
    <h3>Last 24 hours, by model</h3>
    <ErrorNote error={series.error} />
    {series.data && (series.data.series.length === 0 ? <p class="note">No use in the last 24 hours.</p> : <Chart view={series.data} measure="tokens" note="" />)}
    </>
  );
}

function KeyActions({ row, done }: { row: Key; done: () => void }) {
  if (!canChange() || row.state === "tombstoned") return null;
  return (
    <div class="actions">
      {row.state === "active" && <ConfirmButton label="Disable" question={`Disable key ${row.name}? Its requests are refused until it is enabled again.`} onConfirm={() => admin.patchKeysById(row.id, { enabled: false }).then(done)} />}
      {row.state === "disabled" && <ConfirmButton label="Enable" question={`Enable key ${row.name} again?`} onConfirm={() => admin.patchKeysById(row.id, { enabled: true }).then(done)} />}
      {row.state !== "revoked" && <ConfirmButton danger label="Revoke" question={`Revoke key ${row.name}? This cannot be undone.`} onConfirm={() => admin.postKeysByIdRevoke(row.id).then(done)} />}
      <ConfirmButton danger label="Delete" question={`Delete key ${row.name}? It stops working and leaves the list.`} onConfirm={() => admin.deleteKeysById(row.id).then(done)} />
    </div>
  );
}

export function Keys() {
  const loaded = useLoad(loadKeys, [], 10_000);
  const [open, setOpen] = useState<string | null>(null);
  const chosen = loaded.data?.keys.find((k) => k.id === open);
  return (
    <>
      <h1>Keys</h1>
      {canChange() && <CreateKey onCreated={loaded.reload} />}
      <ErrorNote error={loaded.error} />
      {!loaded.data && !loaded.error && <Loading what="keys" />}
      {loaded.data && (
        <Table
          caption="Keys"
          rows={loaded.data.keys}
          rowKey={(k) => k.id}
          empty="No keys yet."
          columns={[
            { label: "Name", cell: (k) => <button type="button" class="link" aria-expanded={open === k.id} onClick={() => setOpen(open === k.id ? null : k.id)}>{k.name}</button> },
            { label: "Id", cell: (k) => <code>{k.id}</code> },
            { label: "State", cell: (k) => <span class={`state ${k.state}`}>{k.state}</span> },
            { label: "Group", cell: (k) => k.group ?? "—" },
            { label: "Requests this month", numeric: true, cell: (k) => count(loaded.data!.spend.get(k.id)?.requests ?? 0) },
            { label: "Spend this month (cents)", numeric: true, cell: (k) => cents((loaded.data!.spend.get(k.id)?.spend_micros ?? 0) / 1e6) },
            { label: "Last use this month (UTC)", cell: (k) => time(loaded.data!.spend.get(k.id)?.last_used_at ?? null) },
            { label: "Created", cell: (k) => time(k.created_at) },
            { label: "Actions", cell: (k) => <KeyActions row={k} done={loaded.reload} /> },
          ]}
        />
      )}
      {chosen && (
        <section aria-labelledby="key-usage">
          <h2 id="key-usage">Usage of {chosen.name}</h2>
          <KeyUsage id={chosen.id} />
        </section>
      )}
    </>
  );
}
