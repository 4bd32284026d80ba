// What a caller may name as a model where that name goes into an upstream URL (the direct route
// `POST /{provider}/{model}`). An encoded `..%2F..%2F__reset%3F` once reached another path of the
// provider's host with the operator's key attached; a name is now a plain token, or a 400.

/** Longest model name a caller may send; real names are well under 100 characters. */
export const MAX_MODEL_NAME_LENGTH = 256;

// Letters, digits and the punctuation real model ids use (`claude-3-5-sonnet@20241022`,
// `us.anthropic.claude-v2:1`, `llama3:8b`, `gpt-4o+tools`, `x~y`), starting with a letter or digit. No
// path separator, dot segment, query, fragment, percent-escape, space or control character can pass.
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@+~-]*$/;

/**
 * Why `name` is not a model name, or undefined when it is one. The router hands null for a path segment
 * whose percent-encoding does not decode (`/gem/%zz`), which answered 500.
 */
export function modelNameProblem(name: string | null): string | undefined {
  if (name === null) return "model: not a model name (its percent-encoding does not decode)";
  if (name.length > MAX_MODEL_NAME_LENGTH) return `model: longer than ${MAX_MODEL_NAME_LENGTH} characters`;
  if (!MODEL_NAME.test(name) || name.includes("..")) return "model: not a model name (letters, digits and . _ - : @ + ~ only, starting with a letter or digit)";
  return undefined;
}
