// A body read from outside (a policy server, an identity provider) whole, up to a bound: past it the read
// stops and throws, so a hostile or broken server cannot make the gateway buffer without end.
export async function boundedText(answer: Response, maxBytes: number, what: string): Promise<string> {
  if (!answer.body) return "";
  const reader = answer.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    size += read.value.byteLength;
    if (size > maxBytes) {
      void reader.cancel();
      throw new Error(`${what} over ${maxBytes} bytes`);
    }
    chunks.push(read.value);
  }
  return Buffer.concat(chunks).toString("utf8");
}
