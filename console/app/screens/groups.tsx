// Groups (design/console.md): the group tree with its limits and spend against budget, a frozen group
// marked `frozen`; create, edit limits, freeze and unfreeze for a full-scope principal.
import { useRef, useState } from "preact/hooks";
import { admin, failure } from "../api.ts";
import { canChange } from "../session.ts";
import { ConfirmButton, cents, ErrorNote, Loading, Scroll, useLoad } from "../ui.tsx";

type Group = Awaited<ReturnType<typeof admin.getGroups>>["items"][number];
type Usage = Awaited<ReturnType<typeof admin.getGroupsByNameUsage>>;
type Limit = Group["limits"][number];

/** Usage is read for the first 200 groups of the tree; past that a group's spend shows on its own row only. */
const USAGE_MAX = 200;

async function loadGroups(): Promise<{ groups: Group[]; usage: Map<string, Usage> }> {
  const { items } = await admin.getGroups();
  const usage = new Map<string, Usage>();
  await Promise.all(items.slice(0, USAGE_MAX).map(async (g) => usage.set(g.name, await admin.getGroupsByNameUsage(g.name))));
  return { groups: items, usage };
}

/** Depth-first, children by name under their parent; a group whose parent is unknown starts a tree. */
function tree(groups: readonly Group[]): { group: Group; depth: number }[] {
  const names = new Set(groups.map((g) => g.name));
  const children = new Map<string | null, Group[]>();
  for (const g of groups) {
    const parent = g.parent !== null && names.has(g.parent) ? g.parent : null;
    children.set(parent, [...(children.get(parent) ?? []), g]);
  }
  const out: { group: Group; depth: number }[] = [];
  const walk = (parent: string | null, depth: number) => {
    for (const g of (children.get(parent) ?? []).sort((a, b) => a.name.localeCompare(b.name))) {
      out.push({ group: g, depth });
      if (depth < 32) walk(g.name, depth + 1);
    }
  };
  walk(null, 0);
  return out;
}

function describe(limit: Limit): string {
  const pool = limit.pool ? ` on ${limit.pool}` : "";
  if ("concurrent" in limit) return `${limit.concurrent} at once${pool}`;
  const parts = [limit.requests !== null ? `${limit.requests} requests` : null, limit.tokens !== null ? `${limit.tokens} tokens` : null, limit.budget_cents !== null ? `${limit.budget_cents} cents` : null].filter(Boolean);
  return `${parts.join(", ")} per ${limit.window}${pool}`;
}

function Budget({ usage }: { usage: Usage | undefined }) {
  if (!usage) return <>—</>;
  const budgets = usage.buckets.filter((b) => b.budget_cap !== null && b.budget_cap !== undefined);
  if (budgets.length === 0) return <>{cents(usage.buckets[0]?.spend_cents ?? 0)} (no budget)</>;
  return (
    <>
      {budgets.map((b) => (
        <div>
          {cents(b.spend_cents)} of {b.budget_cap} per {b.window}
        </div>
      ))}
    </>
  );
}

function EditLimits({ group, done }: { group: Group; done: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [text, setText] = useState("");
  const [error, setError] = useState<string | null>(null);
  const open = () => {
    setText(JSON.stringify(group.limits, null, 2));
    setError(null);
    dialog.current?.showModal();
  };
  const save = async (event: Event) => {
    event.preventDefault();
    let limits: Limit[];
    try {
      limits = JSON.parse(text) as Limit[];
    } catch (e) {
      setError(`Not JSON: ${(e as Error).message}`);
      return;
    }
    try {
      await admin.patchGroupsByName(group.name, { limits });
      dialog.current?.close();
      done();
    } catch (e) {
      setError(failure(e));
    }
  };
  const id = `limits-${group.name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  return (
    <>
      <button type="button" onClick={open}>
        Edit limits
      </button>
      <dialog ref={dialog} aria-label={`Edit limits of ${group.name}`}>
        <form onSubmit={save}>
          <label for={id}>Limits of {group.name} (JSON: [{"{"}"window": "day", "requests": 100{"}"}, {"{"}"concurrent": 4{"}"}])</label>
          <textarea id={id} rows={10} value={text} onInput={(e) => setText(e.currentTarget.value)} />
          <ErrorNote error={error} />
          <div class="actions">
            <button type="button" onClick={() => dialog.current?.close()}>
              Cancel
            </button>
            <button type="submit" class="primary">
              Save limits
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}

function CreateGroup({ done }: { done: () => void }) {
  const [name, setName] = useState("");
  const [parent, setParent] = useState("");
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      await admin.postGroups({ name: name.trim(), ...(parent.trim() ? { parent: parent.trim() } : {}) });
      setName("");
      setError(null);
      done();
    } catch (e) {
      setError(failure(e));
    }
  };
  return (
    <section aria-labelledby="create-group">
      <h2 id="create-group">Create group</h2>
      <form class="inline" onSubmit={submit}>
        <label for="group-name">Name</label>
        <input id="group-name" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <label for="group-parent">Parent (optional)</label>
        <input id="group-parent" maxLength={200} value={parent} onInput={(e) => setParent(e.currentTarget.value)} />
        <button type="submit" class="primary">
          Create group
        </button>
      </form>
      <ErrorNote error={error} />
    </section>
  );
}

export function Groups() {
  const loaded = useLoad(loadGroups, [], 10_000);
  return (
    <>
      <h1>Groups</h1>
      {canChange() && <CreateGroup done={loaded.reload} />}
      <ErrorNote error={loaded.error} />
      {!loaded.data && !loaded.error && <Loading what="groups" />}
      {loaded.data && loaded.data.groups.length === 0 && <p class="note">No groups yet.</p>}
      {loaded.data && loaded.data.groups.length > 0 && (
        <Scroll label="Groups, as a tree">
          <table>
            <caption class="visually-hidden">Groups, as a tree</caption>
            <thead>
              <tr>
                <th scope="col">Group</th>
                <th scope="col">State</th>
                <th scope="col">Limits</th>
                <th scope="col">Spend (cents)</th>
                {canChange() && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {tree(loaded.data.groups).map(({ group, depth }) => (
                <tr key={group.name}>
                  <td style={{ paddingLeft: `${0.5 + depth * 1.25}rem` }}>{group.name}</td>
                  <td>{group.enabled ? <span class="state active">active</span> : <span class="state frozen">frozen</span>}</td>
                  <td>{group.limits.length === 0 ? "none" : group.limits.map((l) => <div>{describe(l)}</div>)}</td>
                  <td>
                    <Budget usage={loaded.data!.usage.get(group.name)} />
                  </td>
                  {canChange() && (
                    <td>
                      <div class="actions">
                        <EditLimits group={group} done={loaded.reload} />
                        {group.enabled ? (
                          <ConfirmButton label="Freeze" question={`Freeze group ${group.name}? Its keys' requests are refused until it is unfrozen.`} onConfirm={() => admin.patchGroupsByName(group.name, { enabled: false }).then(loaded.reload)} />
                        ) : (
                          <ConfirmButton label="Unfreeze" question={`Unfreeze group ${group.name}?`} onConfirm={() => admin.patchGroupsByName(group.name, { enabled: true }).then(loaded.reload)} />
                        )}
                      </div>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      )}
    </>
  );
}
