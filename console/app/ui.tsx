// The console's small shared pieces: loading a view (with refresh), a table, a confirmation dialog, notes.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { failure, online } from "./api.ts";

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly error: string | null;
  readonly reload: () => void;
}

/** Calls `load` now, on `keys` change, every `everyMs` (if given), and when the gateway is reachable again. */
export function useLoad<T>(load: () => Promise<T>, keys: readonly unknown[], everyMs?: number): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const generation = useRef(0);
  const reload = useCallback(() => {
    const mine = ++generation.current;
    load().then(
      (value) => {
        if (mine !== generation.current) return;
        setData(value);
        setError(null);
      },
      (e: unknown) => {
        if (mine === generation.current) setError(failure(e));
      },
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, keys);
  useEffect(() => {
    reload();
    const timer = everyMs === undefined ? undefined : setInterval(reload, everyMs);
    // Back online: read again rather than show what was read before the outage.
    const unsubscribe = online.subscribe((up) => up && reload());
    return () => {
      generation.current++;
      if (timer !== undefined) clearInterval(timer);
      unsubscribe();
    };
  }, [reload, everyMs]);
  return { data, error, reload };
}

export function ErrorNote({ error }: { error: string | null }) {
  return error === null ? null : (
    <p class="note error" role="alert">
      {error}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return <p class="note" aria-live="polite">Loading {what}…</p>;
}

/** A region that scrolls sideways on a narrow screen: focusable, so the keyboard can scroll it too. */
export function Scroll({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={label}>
      {children}
    </div>
  );
}

/** Figures side by side, each a term and its value (a dl whose groups are divs, as HTML allows). */
export function Tiles({ items }: { items: readonly (readonly [string, ComponentChildren])[] }) {
  return (
    <dl class="tiles">
      {items.map(([label, value]) => (
        <div class="tile" key={label}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

export interface Column<T> {
  readonly label: string;
  readonly cell: (row: T) => ComponentChildren;
  readonly numeric?: boolean;
}

export function Table<T>({ caption, columns, rows, rowKey, onRow, empty }: { caption: string; columns: readonly Column<T>[]; rows: readonly T[]; rowKey: (row: T) => string; onRow?: (row: T) => void; empty: string }) {
  if (rows.length === 0) return <p class="note">{empty}</p>;
  return (
    <Scroll label={caption}>
      <table>
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={c.numeric ? "num" : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)} class={onRow ? "clickable" : undefined} onClick={onRow ? () => onRow(row) : undefined}>
              {columns.map((c) => (
                <td class={c.numeric ? "num" : undefined}>{c.cell(row)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </Scroll>
  );
}

/** A button that asks first, in a modal dialog (keyboard: Escape cancels, focus stays inside). */
export function ConfirmButton({ label, question, confirm, onConfirm, danger }: { label: string; question: string; confirm?: string; onConfirm: () => Promise<unknown>; danger?: boolean }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const go = async () => {
    setBusy(true);
    try {
      await onConfirm();
      dialog.current?.close();
      setError(null);
    } catch (e) {
      setError(failure(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" class={danger ? "danger" : undefined} onClick={() => dialog.current?.showModal()}>
        {label}
      </button>
      <dialog ref={dialog} aria-label={label}>
        <p>{question}</p>
        <ErrorNote error={error} />
        <div class="actions">
          <button type="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button type="button" class={danger ? "danger" : "primary"} disabled={busy} onClick={go}>
            {confirm ?? label}
          </button>
        </div>
      </dialog>
    </>
  );
}

export const time = (epochSecs: number | null | undefined) => (epochSecs ? new Date(epochSecs * 1000).toISOString().replace("T", " ").slice(0, 19) : "—");
/** Spend in the rate card's cost units (cents), two decimals. */
export const cents = (value: number | null | undefined) => (value === null || value === undefined ? "—" : value.toFixed(2));
export const count = (value: number | null | undefined) => (value === null || value === undefined ? "—" : value.toLocaleString("en-US"));
