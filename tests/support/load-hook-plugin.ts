// A harness compiled by tests/e2e/plugins.test.ts with the gateway's own compile options (scripts/compile.ts),
// so the loader's dynamic import of an installed plugin is proven in a compiled executable, not only
// from source. Arguments: <plugins.dir> <publisher> <public key hex> <ref>. Prints the gate's decision.
// No top-level await: the bytecode build is CommonJS, like src/main.ts.
import { loadHookModule } from "../../src/plugins/index.ts";

async function main(): Promise<unknown> {
  const [dir = "", publisher = "", keyHex = "", ref = ""] = Bun.argv.slice(2);
  try {
    const hook = await loadHookModule(ref, { dir, keys: new Map([[publisher, Buffer.from(keyHex, "hex")]]), allowlist: [`${publisher}/*`] });
    const instance = await hook.create({ word: "secret" }, { name: "h", log: () => {} });
    const decision = await instance.gate?.({ stage: "request", hook: "h", pool: "p", model: "m", ingress_protocol: "openai", stream: false, candidates: [], request_id: "r1" });
    return { ok: true, kind: hook.kind, decision };
  } catch (error) {
    return { ok: false, error: (error as Error).message };
  }
}

void main().then((result) => console.log(JSON.stringify(result)));
