// What a caller may name as a model where that name goes into an upstream URL (the direct route
// `POST /{provider}/{model}`). An encoded `..%2F..%2F__reset%3F` once reached another path of the
// provider's host with the operator's key attached; a name is now a plain token, or a 400.

/** Longest model name a caller may send; real names are well under 100 characters. */
export const MAX_MODEL_NAME_LENGTH = 256;

// Letters, digits and the punctuation real model ids use (`claude-3-5-sonnet@20241022`,
// `us.anthropic.claude-v2:1`, `llama3:8b`, `gpt-4o+tools`, `x~y`), starting with a letter or digit. No
// path separator, dot segment, query, fragment, percent-escape, space or control character can pass.
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@+~-]*$/;
// A Bedrock ARN (inference profile, provisioned, imported or custom model) is a model id too; its `/`
// stays inside the one path segment the adapters encode it into (`%2F`), as the AWS SDKs send it.
const BEDROCK_ARN = /^arn:aws(?:-[a-z]+)*:bedrock:[a-z0-9-]*:(?:\d{12})?:[a-z-]+(?:\/[A-Za-z0-9][A-Za-z0-9._:-]*)+$/;

// `vendor/model` (OpenRouter's and LiteLLM's spelling): a name routing may match, never put in a URL.
const NAMESPACED = /^[A-Za-z0-9][A-Za-z0-9._:@+~-]*(?:\/[A-Za-z0-9][A-Za-z0-9._:@+~-]*)+$/;

/**
 * Why `name` is not a model name, or undefined when it is one. `namespaced`: a name that only routing
 * reads (a pool or alias is looked up by it; the lane's own model goes upstream) may also be `vendor/model`.
 * The router hands null for a path segment whose percent-encoding does not decode (`/gem/%zz`), which
 * once answered 500.
 */
export function modelNameProblem(name: string | null, options: { namespaced?: boolean } = {}): string | undefined {
  if (name === null) return "model: not a model name (its percent-encoding does not decode)";
  if (name.length > MAX_MODEL_NAME_LENGTH) return `model: longer than ${MAX_MODEL_NAME_LENGTH} characters`;
  const shaped = MODEL_NAME.test(name) || BEDROCK_ARN.test(name) || (options.namespaced === true && NAMESPACED.test(name));
  if (!shaped || name.includes("..")) return "model: not a model name (letters, digits and . _ - : @ + ~ only, starting with a letter or digit; or a Bedrock ARN)";
  return undefined;
}
