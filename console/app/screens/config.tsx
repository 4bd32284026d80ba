// Configuration (design/console.md): the running config, its versions with summaries, the difference
// between two versions; Validate and Apply an edited YAML (every error shown at its path, nothing applied
// when there is one) and Roll back (confirmed) for a full-scope principal.
import { useEffect, useState } from "preact/hooks";
import { admin, failure } from "../api.ts";
import { canChange } from "../session.ts";
import { ConfirmButton, ErrorNote, Loading, Table, time, useLoad } from "../ui.tsx";

type Version = Awaited<ReturnType<typeof admin.getConfigVersions>>["items"][number];

function Running() {
  const config = useLoad(() => admin.getConfig(), [], 10_000);
  if (config.error) return <ErrorNote error={config.error} />;
  if (!config.data) return <Loading what="the running config" />;
  const c = config.data;
  return (
    <section aria-labelledby="running">
      <h2 id="running">Running config, version {c.version}</h2>
      <dl class="facts">
        <dt>Pools</dt>
        <dd>{c.pools.filter((p) => !p.implicit).map((p) => `${p.name} (${p.members.map((m) => `${m.model} ×${m.weight}`).join(", ")})`).join("; ") || "none"}</dd>
        <dt>Models</dt>
        <dd>{c.models.map((m) => `${m.name} → ${m.provider}/${m.model}`).join("; ") || "none"}</dd>
        <dt>Providers</dt>
        <dd>{c.providers.map((p) => `${p.name} (${p.protocol}${p.api_key_configured ? ", key set" : ""})`).join("; ") || "none"}</dd>
        <dt>Ingress auth</dt>
        <dd>{c.auth.open ? "open" : c.auth.chain.join(", ")}</dd>
        <dt>Hooks</dt>
        <dd>{c.hooks.map((h) => h.name).join(", ") || "none"}</dd>
      </dl>
    </section>
  );
}

function Versions({ reloadAll }: { reloadAll: () => void }) {
  const versions = useLoad(() => admin.getConfigVersions({ limit: "100" }), [], 5000);
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const diff = useLoad(() => (from && to ? admin.getConfigDiff({ from, to }) : Promise.resolve(undefined)), [from, to]);
  const items: Version[] = versions.data?.items ?? [];
  return (
    <section aria-labelledby="versions">
      <h2 id="versions">Versions</h2>
      <ErrorNote error={versions.error} />
      <Table
        caption="Config versions, newest first"
        rows={items}
        rowKey={(v) => String(v.version)}
        empty="No versions retained."
        columns={[
          { label: "Version", numeric: true, cell: (v) => v.version },
          { label: "Time (UTC)", cell: (v) => time(v.ts) },
          { label: "By", cell: (v) => v.principal },
          { label: "Summary", cell: (v) => v.summary },
          ...(canChange()
            ? [{ label: "Actions", cell: (v: Version) => <ConfirmButton label={`Roll back to ${v.version}`} question={`Roll back to config version ${v.version}? The running config becomes that version's, as a new version.`} confirm="Roll back" onConfirm={() => admin.postConfigRollback({ version: v.version }).then(() => (versions.reload(), reloadAll()))} /> }]
            : []),
        ]}
      />
      <h3>Difference</h3>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label for="diff-from">From version</label>
        <select id="diff-from" value={from} onChange={(e) => setFrom(e.currentTarget.value)}>
          <option value="">—</option>
          {items.map((v) => (
            <option value={String(v.version)}>{v.version}</option>
          ))}
        </select>
        <label for="diff-to">To version</label>
        <select id="diff-to" value={to} onChange={(e) => setTo(e.currentTarget.value)}>
          <option value="">—</option>
          {items.map((v) => (
            <option value={String(v.version)}>{v.version}</option>
          ))}
        </select>
      </form>
      <ErrorNote error={diff.error} />
      {diff.data && <Diff diff={diff.data} />}
    </section>
  );
}

type DiffView = NonNullable<Awaited<ReturnType<typeof admin.getConfigDiff>>>;

function Diff({ diff }: { diff: DiffView }) {
  const lines = diff.lines;
  return (
    <div class="diff" aria-label={`Difference from version ${diff.from} to ${diff.to}`}>
      {lines ? (
        <pre>
          {lines.map((l) => (
            <div class={l.op === "+" ? "add" : l.op === "-" ? "del" : undefined}>
              {l.op === "=" ? " " : l.op} {l.text}
            </div>
          ))}
        </pre>
      ) : (
        <p>
          Hooks added: {diff.hooks.added.join(", ") || "none"}; removed: {diff.hooks.removed.join(", ") || "none"}; changed: {diff.hooks.changed.join(", ") || "none"}.
        </p>
      )}
    </div>
  );
}

function Edit({ done }: { done: () => void }) {
  const [yaml, setYaml] = useState("");
  // The editor starts from the running config as written (secrets as references or <redacted-by-gateway>).
  useEffect(() => {
    admin.getConfigSource().then(
      (source) => setYaml((current) => (current === "" ? source.yaml : current)),
      (e) => setError(failure(e)),
    );
  }, []);
  const [errors, setErrors] = useState<string[] | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const validate = async () => {
    setMessage(null);
    setError(null);
    try {
      const answer = await admin.postConfigValidate({ yaml });
      setErrors(answer.errors);
      if (answer.ok) setMessage("Valid: nothing was applied.");
      return answer.ok;
    } catch (e) {
      setError(failure(e));
      return false;
    }
  };
  const apply = async () => {
    if (!(await validate())) return;
    try {
      const answer = await admin.postConfigApply({ yaml });
      setMessage(`Applied as version ${answer.config_version}. ${answer.note}`);
      done();
    } catch (e) {
      setError(failure(e));
    }
  };
  return (
    <section aria-labelledby="edit">
      <h2 id="edit">Validate or apply a config</h2>
      <label for="config-yaml">Config (YAML, the whole file)</label>
      <p class="hint" id="config-yaml-hint">
        Starts as the running config. A secret written inline shows as &lt;redacted-by-gateway&gt;: replace it with the secret or a reference ({"{"}env: NAME{"}"}) before applying; the gateway refuses the mark.
      </p>
      <textarea id="config-yaml" aria-describedby="config-yaml-hint" rows={14} spellcheck={false} value={yaml} onInput={(e) => setYaml(e.currentTarget.value)} />
      <div class="actions">
        <button type="button" onClick={validate}>
          Validate
        </button>
        <button type="button" class="primary" onClick={apply}>
          Apply
        </button>
      </div>
      <ErrorNote error={error} />
      {errors && errors.length > 0 && (
        <div role="alert">
          <p class="note error">Not applied: {errors.length === 1 ? "1 error" : `${errors.length} errors`}.</p>
          <ul class="errors">
            {errors.map((e) => (
              <li>{e}</li>
            ))}
          </ul>
        </div>
      )}
      {message && (
        <p class="note ok" role="status">
          {message}
        </p>
      )}
    </section>
  );
}

export function Config() {
  const [generation, setGeneration] = useState(0);
  const bump = () => setGeneration((g) => g + 1);
  return (
    <>
      <h1>Configuration</h1>
      <Running key={`r${generation}`} />
      <Versions key={`v${generation}`} reloadAll={bump} />
      {canChange() && <Edit done={bump} />}
    </>
  );
}
