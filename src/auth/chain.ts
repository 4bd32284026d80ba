// One rule for both chains: an empty chain admits everyone as `open`; otherwise the modules are asked
// in order and the first that admits wins; when none does, nobody is admitted (fail closed). A module
// this build does not carry is simply absent, so it never admits. A module answers synchronously from
// its caches; only one that must verify something new (an OIDC token's first request) answers with a
// promise, and the rest of the chain then runs after it settles.

/** A chain module: what it is given (the snapshot, then what the caller presented) and whom it admits. */
export type ChainModule<Principal, A, B, C = undefined> = (a: A, b: B, c: C) => Principal | undefined | Promise<Principal | undefined>;

/** An entry that names no compiled-in module: an identity-provider instance, resolved by the chain's owner. */
export type ModuleLookup<Principal, A, B, C> = (name: string) => ChainModule<Principal, A, B, C> | undefined;

/** Fixed arguments, not a rest list: every data-plane request runs this, and spreading allocated twice per call. */
export function runChain<Principal, A, B, C = undefined>(
  names: readonly string[],
  modules: Readonly<Record<string, ChainModule<Principal, A, B, C>>>,
  open: Principal,
  a: A,
  b: B,
  c: C,
  instance?: ModuleLookup<Principal, A, B, C>,
): Principal | undefined | Promise<Principal | undefined> {
  return names.length === 0 ? open : from(0, names, modules, a, b, c, instance);
}

function from<Principal, A, B, C>(
  start: number,
  names: readonly string[],
  modules: Readonly<Record<string, ChainModule<Principal, A, B, C>>>,
  a: A,
  b: B,
  c: C,
  instance: ModuleLookup<Principal, A, B, C> | undefined,
): Principal | undefined | Promise<Principal | undefined> {
  for (let i = start; i < names.length; i++) {
    const name = names[i]!;
    const principal = (modules[name] ?? instance?.(name))?.(a, b, c);
    if (principal === undefined) continue;
    if (principal instanceof Promise) return principal.then((admitted) => admitted ?? from(i + 1, names, modules, a, b, c, instance));
    return principal;
  }
  return undefined;
}
