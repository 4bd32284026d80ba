// One rule for both chains: an empty chain admits everyone as `open`; otherwise the modules are asked
// in order and the first that admits wins; when none does, nobody is admitted (fail closed). A module
// this build does not carry is simply absent from `modules`, so it never admits.

export type ChainModule<Principal, Args extends unknown[]> = (...args: Args) => Principal | undefined;

export function runChain<Principal, Args extends unknown[]>(
  names: readonly string[],
  modules: Readonly<Record<string, ChainModule<Principal, Args>>>,
  open: Principal,
  ...args: Args
): Principal | undefined {
  if (names.length === 0) return open;
  for (const name of names) {
    const principal = modules[name]?.(...args);
    if (principal) return principal;
  }
  return undefined;
}
