// One rule for both chains: an empty chain admits everyone as `open`; otherwise the modules are asked
// in order and the first that admits wins; when none does, nobody is admitted (fail closed). A module
// this build does not carry is simply absent from `modules`, so it never admits.

/** A chain module: what it is given (the snapshot, then what the caller presented) and whom it admits. */
export type ChainModule<Principal, A, B, C = undefined> = (a: A, b: B, c: C) => Principal | undefined;

/** Fixed arguments, not a rest list: every data-plane request runs this, and spreading allocated twice per call. */
export function runChain<Principal, A, B, C = undefined>(
  names: readonly string[],
  modules: Readonly<Record<string, ChainModule<Principal, A, B, C>>>,
  open: Principal,
  a: A,
  b: B,
  c: C,
): Principal | undefined {
  if (names.length === 0) return open;
  for (const name of names) {
    const principal = modules[name]?.(a, b, c);
    if (principal) return principal;
  }
  return undefined;
}
