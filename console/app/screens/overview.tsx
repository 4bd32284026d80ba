// Overview (design/console.md): version, uptime, store and config version; requests per minute, error
// rate, p50/p95 duration, tokens and spend today; every pool with each lane's breaker state, refreshed
// live (a breaker event re-reads /stats at once; it is also re-read every 5 s).
import { useEffect, useRef, useState } from "preact/hooks";
import { admin, failure } from "../api.ts";
import { subscribe } from "../live.ts";
import { figures, getJson, recentRecords, type RequestRecord } from "../records.ts";
import { cents, count, ErrorNote, Loading, useLoad } from "../ui.tsx";

interface Member {
  readonly lane: string;
  readonly weight: number;
  readonly usable: boolean;
  readonly state: "closed" | "half_open" | "open";
  readonly cooldown_remaining_s: number | null;
}
interface Stats {
  readonly pools: Record<string, { readonly on_exhausted: string; readonly members: readonly Member[] }>;
}
interface Today {
  readonly from: number;
  readonly requests: number;
  readonly tokens: number;
  readonly spend_cents: number;
}

const uptime = (secs: number) => `${Math.floor(secs / 86400)}d ${Math.floor((secs % 86400) / 3600)}h ${Math.floor((secs % 3600) / 60)}m`;

function Pools() {
  const stats = useLoad(() => getJson<Stats>("/stats"), [], 5000);
  const reload = useRef(stats.reload);
  reload.current = stats.reload;
  useEffect(() => subscribe({ opened: () => reload.current(), event: (type) => type === "breaker" && reload.current() }), []);
  if (stats.error) return <ErrorNote error={stats.error} />;
  if (!stats.data) return <Loading what="pools" />;
  const pools = Object.entries(stats.data.pools).sort(([a], [b]) => a.localeCompare(b));
  return (
    <section aria-labelledby="pools">
      <h2 id="pools">Pools</h2>
      {pools.length === 0 && <p class="note">No pools configured.</p>}
      {pools.map(([name, pool]) => (
        <div class="pool" key={name}>
          <h3>{name}</h3>
          <ul class="lanes">
            {pool.members.map((m) => (
              <li key={m.lane} class={`lane ${m.state}`} data-lane={m.lane} data-state={m.state}>
                <span class="lane-name">{m.lane}</span> <span class={`state ${m.state}`}>{m.state}</span> <span class="weight">weight {m.weight}</span>
                {m.cooldown_remaining_s ? <span> · {m.cooldown_remaining_s} s cooldown</span> : null}
              </li>
            ))}
          </ul>
        </div>
      ))}
    </section>
  );
}

function Traffic() {
  const [records, setRecords] = useState<RequestRecord[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const tick = setInterval(() => setNow(Date.now()), 2000);
    const stop = subscribe({
      opened: () => recentRecords().then((items) => (setRecords(items), setError(null)), (e) => setError(failure(e))),
      event: (type, data) => type === "request" && setRecords((old) => [data as RequestRecord, ...old].slice(0, 1000)),
    });
    return () => (clearInterval(tick), stop());
  }, []);
  const today = useLoad(() => getJson<Today>("/usage/today"), [], 10_000);
  const f = figures(records, now);
  return (
    <section aria-labelledby="traffic">
      <h2 id="traffic">Traffic</h2>
      <ErrorNote error={error ?? today.error} />
      <dl class="facts tiles">
        <dt>Requests per minute (last 5 min)</dt>
        <dd>{f.perMinute.toFixed(1)}</dd>
        <dt>Error rate</dt>
        <dd>{f.errorRate === null ? "—" : `${(f.errorRate * 100).toFixed(1)}%`}</dd>
        <dt>Duration p50 / p95</dt>
        <dd>{f.p50 === null ? "—" : `${f.p50} / ${f.p95} ms`}</dd>
        <dt>Tokens today</dt>
        <dd>{count(today.data?.tokens)}</dd>
        <dt>Spend today (cents)</dt>
        <dd>{cents(today.data?.spend_cents)}</dd>
      </dl>
    </section>
  );
}

export function Overview() {
  const info = useLoad(() => admin.getInfo(), [], 10_000);
  return (
    <>
      <h1>Overview</h1>
      <ErrorNote error={info.error} />
      {info.data && (
        <dl class="facts tiles">
          <dt>Version</dt>
          <dd>{info.data.version}</dd>
          <dt>Uptime</dt>
          <dd>{info.data.uptime_seconds === null ? "—" : uptime(info.data.uptime_seconds)}</dd>
          <dt>Store</dt>
          <dd>
            {info.data.store.module} ({info.data.store.state})
          </dd>
          <dt>Config version</dt>
          <dd>{info.data.config_version}</dd>
        </dl>
      )}
      <Traffic />
      <Pools />
    </>
  );
}
