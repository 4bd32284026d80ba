// Overview (design/console.md): version, uptime, store and config version; requests per minute, error
// rate, p50/p95 duration, tokens and spend today; every pool with each lane's breaker state, refreshed
// live (a breaker event re-reads /stats at once; it is also re-read every 5 s).
import { useEffect, useRef, useState } from "preact/hooks";
import { admin, failure } from "../api.ts";
import { subscribe } from "../live.ts";
import { figures, recentRecords, type RequestRecord } from "../records.ts";
import { cents, count, ErrorNote, Loading, Tiles, useLoad } from "../ui.tsx";

const uptime = (secs: number) => `${Math.floor(secs / 86400)}d ${Math.floor((secs % 86400) / 3600)}h ${Math.floor((secs % 3600) / 60)}m`;

function Pools() {
  const stats = useLoad(() => admin.getStats(), [], 5000);
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
  const today = useLoad(() => admin.getUsageToday(), [], 10_000);
  const f = figures(records, now);
  return (
    <section aria-labelledby="traffic">
      <h2 id="traffic">Traffic</h2>
      <ErrorNote error={error ?? today.error} />
      <Tiles
        items={[
          ["Requests per minute (last 5 min)", f.perMinute.toFixed(1)],
          ["Error rate", f.errorRate === null ? "—" : `${(f.errorRate * 100).toFixed(1)}%`],
          ["Duration p50 / p95", f.p50 === null ? "—" : `${f.p50} / ${f.p95} ms`],
          ["Tokens today", count(today.data?.tokens)],
          ["Spend today (cents)", cents(today.data?.spend_cents)],
        ]}
      />
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
        <Tiles
          items={[
            ["Version", info.data.version],
            ["Uptime", info.data.uptime_seconds === null ? "—" : uptime(info.data.uptime_seconds)],
            ["Store", `${info.data.store.module} (${info.data.store.state})`],
            ["Config version", info.data.config_version],
          ]}
        />
      )}
      <Traffic />
      <Pools />
    </>
  );
}
