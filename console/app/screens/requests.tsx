// Requests (design/console.md): request-log records arriving live, newest first, at most 1,000 kept;
// filters by key, group, model, status and outcome; a row opens the whole record; pause. Arrivals are
// gathered and drawn at most every 250 ms, so 200 requests/s do not redraw the table 200 times a second.
import { useEffect, useRef, useState } from "preact/hooks";
import { failure } from "../api.ts";
import { subscribe } from "../live.ts";
import { recentRecords, type RequestRecord } from "../records.ts";
import { ErrorNote, Scroll } from "../ui.tsx";

const KEEP = 1000;
const DRAW_MS = 250;

const matches = (r: RequestRecord, f: Record<string, string>) =>
  (f.key === "" || (r.key_id ?? "").includes(f.key!)) &&
  (f.group === "" || (r.group ?? "").includes(f.group!)) &&
  (f.model === "" || r.model.includes(f.model!)) &&
  (f.status === "" || String(r.status) === f.status) &&
  (f.outcome === "" || r.outcome === f.outcome);

export function Requests() {
  const [rows, setRows] = useState<RequestRecord[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [paused, setPaused] = useState(false);
  const [open, setOpen] = useState<RequestRecord | null>(null);
  const [filter, setFilter] = useState({ key: "", group: "", model: "", status: "", outcome: "" });
  const pending = useRef<RequestRecord[]>([]);
  const pausedRef = useRef(false);
  pausedRef.current = paused;
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const draw = () => {
      timer = undefined;
      if (pausedRef.current || pending.current.length === 0) return;
      const arrived = pending.current.reverse();
      pending.current = [];
      setRows((old) => arrived.concat(old).slice(0, KEEP));
    };
    const stop = subscribe({
      opened: () =>
        recentRecords(KEEP).then(
          (items) => {
            pending.current = [];
            setRows(items.slice(0, KEEP));
            setError(null);
          },
          (e) => setError(failure(e)),
        ),
      event: (type, data) => {
        if (type !== "request") return;
        pending.current.push(data as RequestRecord);
        if (pending.current.length > KEEP) pending.current.splice(0, pending.current.length - KEEP);
        timer ??= setTimeout(draw, DRAW_MS);
      },
    });
    return () => {
      stop();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, []);
  const shown = rows.filter((r) => matches(r, filter));
  const field = (name: keyof typeof filter, label: string) => (
    <>
      <label for={`requests-${name}`}>{label}</label>
      <input id={`requests-${name}`} type="search" value={filter[name]} onInput={(e) => setFilter({ ...filter, [name]: e.currentTarget.value })} />
    </>
  );
  return (
    <>
      <h1>Requests</h1>
      <form class="inline" role="search" onSubmit={(e) => e.preventDefault()}>
        {field("key", "Key")}
        {field("group", "Group")}
        {field("model", "Model")}
        {field("status", "Status")}
        <label for="requests-outcome">Outcome</label>
        <select id="requests-outcome" value={filter.outcome} onChange={(e) => setFilter({ ...filter, outcome: e.currentTarget.value })}>
          <option value="">any</option>
          <option value="ok">ok</option>
          <option value="client_error">client_error</option>
          <option value="exhausted">exhausted</option>
          <option value="error">error</option>
        </select>
        <button type="button" aria-pressed={paused} onClick={() => setPaused(!paused)}>
          {paused ? "Resume" : "Pause"}
        </button>
      </form>
      <ErrorNote error={error} />
      <p class="note" aria-live="polite">
        {shown.length} of {rows.length} kept (at most {KEEP}){paused ? "; paused" : ""}.
      </p>
      <Scroll label="Request-log records, newest first">
        <table>
          <caption class="visually-hidden">Request-log records, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Time (UTC)</th>
              <th scope="col">Model</th>
              <th scope="col">Lane</th>
              <th scope="col">Key</th>
              <th scope="col">Group</th>
              <th scope="col" class="num">Status</th>
              <th scope="col">Outcome</th>
              <th scope="col" class="num">Tokens</th>
              <th scope="col" class="num">ms</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <tr key={r.request_id} class="clickable">
                <td>
                  <button type="button" class="link" onClick={() => setOpen(r)}>
                    {r.ts.slice(11, 23)}
                  </button>
                </td>
                <td>{r.model}</td>
                <td>{r.lane ?? "—"}</td>
                <td>{r.key_id ?? "—"}</td>
                <td>{r.group ?? "—"}</td>
                <td class="num">{r.status}</td>
                <td>
                  <span class={`state ${r.outcome}`}>{r.outcome}</span>
                </td>
                <td class="num">{r.usage ? r.usage.input_tokens + r.usage.output_tokens : "—"}</td>
                <td class="num">{r.duration_ms}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Scroll>
      {open && (
        <section aria-labelledby="record">
          <h2 id="record">Request {open.request_id}</h2>
          <button type="button" onClick={() => setOpen(null)}>
            Close
          </button>
          <dl class="facts">
            {Object.entries(open).map(([name, value]) => (
              <>
                <dt>{name}</dt>
                <dd>
                  <code>{typeof value === "object" && value !== null ? JSON.stringify(value) : String(value)}</code>
                </dd>
              </>
            ))}
          </dl>
        </section>
      )}
    </>
  );
}
