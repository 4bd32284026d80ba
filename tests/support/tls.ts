// Throwaway certificates for tests that need real TLS files: a CA, a server certificate for
// 127.0.0.1 and a client certificate, made with openssl.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./temp.ts";

/** A directory holding ca.pem, cert.pem (signed by ca.pem, for 127.0.0.1/localhost), key.pem, client-cert.pem, client-key.pem. */
export function makeTlsDir(): string {
  const dir = tempDir("gw-tls-");
  const run = (...args: string[]) => {
    const result = Bun.spawnSync(["openssl", ...args], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    if (result.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr.toString()}`);
  };
  writeFileSync(join(dir, "san.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", "2", "-subj", "/CN=gateway test CA");
  for (const [name, cn, ext] of [["", "127.0.0.1", ["-extfile", "san.cnf"]], ["client-", "test client", []]] as const) {
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", `${name}key.pem`, "-out", `${name}req.pem`, "-subj", `/CN=${cn}`);
    run("x509", "-req", "-in", `${name}req.pem`, "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial", "-out", `${name}cert.pem`, "-days", "2", ...ext);
  }
  return dir;
}
