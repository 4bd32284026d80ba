// Token estimates where no tokenizer runs: about 4 bytes of request text per token (English prose and
// JSON average near that), so a body's size bounds its input tokens from above in the common case.

export const BYTES_PER_TOKEN = 4;

/** Tokens for `bytes` of text: ceil(bytes / 4), at least 1. */
export function estimateTokensFromBytes(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / BYTES_PER_TOKEN));
}
