// Validation of a generateContent body, as strict as the Gemini API (v1beta), answering its 400
// INVALID_ARGUMENT texts. The body is protobuf JSON, parsed the way Google parses it:
//  - every member must be a field of its message, spelt lowerCamelCase or as the proto's snake_case
//    name; anything else is refused, and every such problem is reported at once, joined by newlines:
//    `Invalid JSON payload received. Unknown name "x" at 'tools[0].function_declarations[0].parameters':
//    Cannot find field.` (paths in snake_case; a map entry is `properties[<n>].value`). This includes
//    JSON Schema keywords the Schema message lacks (additionalProperties, $schema, const, ...), which
//    belong in `parametersJsonSchema` instead;
//  - a list where one value is expected: `... Proto field is not repeating, cannot start list.`; one
//    value where a list is expected is taken as a list of one; enum names match case-insensitively
//    (lowercase JSON Schema types are accepted in Schema.type); a wrong scalar is `Invalid value at
//    '<path>' (TYPE_STRING), <json>`;
//  - then the service's own checks, each `* GenerateContentRequest.<path>: <text>\n`, all reported:
//    "contents is not specified", "contents.parts must not be empty.", "required oneof field 'data' must
//    have one initialized field", the function name rule; and, alone, "Please use a valid role: user,
//    model." and the two function-calling turn rules.
// Those texts are quoted from public error reports of the Gemini API. The fields are those the official
// JS SDK (googleapis/js-genai, src/converters/_models_converters.ts, the *ToMldev converters) sends to
// the Gemini API, and its src/types.ts (Schema, FunctionDeclaration, enums). Members the SDK refuses for
// the Gemini API (Vertex-only: labels, Blob.displayName, FunctionCall.partialArgs, ...) are unknown here.
// Nested configs the gateway never builds (speechConfig, googleSearch, ...) are accepted as they come.
import { isObject } from "./common.ts";

/** The parts of a Gemini error a validator decides: its message and google.rpc details. */
export interface GeminiProblem {
  readonly message: string;
  readonly details?: readonly Record<string, unknown>[];
}

type Scalar = "TYPE_STRING" | "TYPE_BOOL" | "TYPE_FLOAT" | "TYPE_INT32" | "TYPE_INT64" | "TYPE_BYTES";
type Kind = Scalar | { enum: string; values: readonly string[] } | { message: string } | { map: string } | "struct" | "any";
interface Field {
  readonly kind: Kind;
  readonly repeated?: boolean;
}

const one = (kind: Kind): Field => ({ kind });
const many = (kind: Kind): Field => ({ kind, repeated: true });
const msg = (name: string): Kind => ({ message: name });
const enumOf = (name: string, values: string): Kind => ({ enum: name, values: values.split(" ") });

const TYPE = enumOf("Type", "TYPE_UNSPECIFIED STRING NUMBER INTEGER BOOLEAN ARRAY OBJECT NULL");
const MODE = enumOf("FunctionCallingConfig.Mode", "MODE_UNSPECIFIED AUTO ANY NONE VALIDATED");
const CATEGORY = enumOf(
  "HarmCategory",
  "HARM_CATEGORY_UNSPECIFIED HARM_CATEGORY_HARASSMENT HARM_CATEGORY_HATE_SPEECH HARM_CATEGORY_SEXUALLY_EXPLICIT HARM_CATEGORY_DANGEROUS_CONTENT HARM_CATEGORY_CIVIC_INTEGRITY",
);
const THRESHOLD = enumOf("SafetySetting.HarmBlockThreshold", "HARM_BLOCK_THRESHOLD_UNSPECIFIED BLOCK_LOW_AND_ABOVE BLOCK_MEDIUM_AND_ABOVE BLOCK_ONLY_HIGH BLOCK_NONE OFF");
const MODALITY = enumOf("GenerationConfig.Modality", "MODALITY_UNSPECIFIED TEXT IMAGE AUDIO");
const LEVEL = enumOf("ThinkingConfig.ThinkingLevel", "THINKING_LEVEL_UNSPECIFIED MINIMAL LOW MEDIUM HIGH");

/** The messages a generateContent body is made of, by the lowerCamelCase names of their fields. */
const MESSAGES: Record<string, Record<string, Field>> = {
  GenerateContentRequest: {
    model: one("TYPE_STRING"),
    contents: many(msg("Content")),
    systemInstruction: one(msg("Content")),
    tools: many(msg("Tool")),
    toolConfig: one(msg("ToolConfig")),
    safetySettings: many(msg("SafetySetting")),
    generationConfig: one(msg("GenerationConfig")),
    cachedContent: one("TYPE_STRING"),
    serviceTier: one("any"),
  },
  Content: { role: one("TYPE_STRING"), parts: many(msg("Part")) },
  Part: {
    text: one("TYPE_STRING"),
    inlineData: one(msg("Blob")),
    fileData: one(msg("FileData")),
    functionCall: one(msg("FunctionCall")),
    functionResponse: one(msg("FunctionResponse")),
    executableCode: one("any"),
    codeExecutionResult: one("any"),
    toolCall: one("any"),
    toolResponse: one("any"),
    thought: one("TYPE_BOOL"),
    thoughtSignature: one("TYPE_BYTES"),
    videoMetadata: one("any"),
    mediaResolution: one("any"),
    partMetadata: one("struct"),
  },
  Blob: { mimeType: one("TYPE_STRING"), data: one("TYPE_BYTES") },
  FileData: { mimeType: one("TYPE_STRING"), fileUri: one("TYPE_STRING") },
  FunctionCall: { id: one("TYPE_STRING"), name: one("TYPE_STRING"), args: one("struct") },
  FunctionResponse: {
    id: one("TYPE_STRING"),
    name: one("TYPE_STRING"),
    response: one("struct"),
    parts: many("any"),
    willContinue: one("TYPE_BOOL"),
    scheduling: one("any"),
  },
  Tool: {
    functionDeclarations: many(msg("FunctionDeclaration")),
    googleSearch: one("any"),
    googleSearchRetrieval: one("any"),
    codeExecution: one("any"),
    urlContext: one("any"),
    computerUse: one("any"),
    fileSearch: one("any"),
    googleMaps: one("any"),
    mcpServers: many("any"),
  },
  FunctionDeclaration: {
    name: one("TYPE_STRING"),
    description: one("TYPE_STRING"),
    behavior: one("any"),
    parameters: one(msg("Schema")),
    parametersJsonSchema: one("any"),
    response: one(msg("Schema")),
    responseJsonSchema: one("any"),
  },
  Schema: {
    type: one(TYPE),
    format: one("TYPE_STRING"),
    title: one("TYPE_STRING"),
    description: one("TYPE_STRING"),
    nullable: one("TYPE_BOOL"),
    enum: many("TYPE_STRING"),
    maxItems: one("TYPE_INT64"),
    minItems: one("TYPE_INT64"),
    properties: one({ map: "Schema" }),
    required: many("TYPE_STRING"),
    minProperties: one("TYPE_INT64"),
    maxProperties: one("TYPE_INT64"),
    minLength: one("TYPE_INT64"),
    maxLength: one("TYPE_INT64"),
    pattern: one("TYPE_STRING"),
    example: one("any"),
    anyOf: many(msg("Schema")),
    propertyOrdering: many("TYPE_STRING"),
    default: one("any"),
    items: one(msg("Schema")),
    minimum: one("TYPE_FLOAT"),
    maximum: one("TYPE_FLOAT"),
  },
  ToolConfig: { functionCallingConfig: one(msg("FunctionCallingConfig")), retrievalConfig: one("any"), includeServerSideToolInvocations: one("TYPE_BOOL") },
  FunctionCallingConfig: { mode: one(MODE), allowedFunctionNames: many("TYPE_STRING") },
  SafetySetting: { category: one(CATEGORY), threshold: one(THRESHOLD) },
  GenerationConfig: {
    stopSequences: many("TYPE_STRING"),
    responseMimeType: one("TYPE_STRING"),
    responseSchema: one(msg("Schema")),
    responseJsonSchema: one("any"),
    responseModalities: many(MODALITY),
    candidateCount: one("TYPE_INT32"),
    maxOutputTokens: one("TYPE_INT32"),
    temperature: one("TYPE_FLOAT"),
    topP: one("TYPE_FLOAT"),
    topK: one("TYPE_INT32"),
    seed: one("TYPE_INT32"),
    presencePenalty: one("TYPE_FLOAT"),
    frequencyPenalty: one("TYPE_FLOAT"),
    responseLogprobs: one("TYPE_BOOL"),
    logprobs: one("TYPE_INT32"),
    enableEnhancedCivicAnswers: one("TYPE_BOOL"),
    speechConfig: one("any"),
    audioTranscriptionConfig: one("any"),
    thinkingConfig: one(msg("ThinkingConfig")),
    imageConfig: one("any"),
    mediaResolution: one("any"),
  },
  ThinkingConfig: { includeThoughts: one("TYPE_BOOL"), thinkingBudget: one("TYPE_INT32"), thinkingLevel: one(LEVEL) },
};

/** Part's `data` oneof: exactly one of these carries what the part is. */
const DATA_FIELDS = ["text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult", "toolCall", "toolResponse"];
/** Must start with a letter or an underscore; letters, digits, underscores, dots, colons, dashes; at most 64. */
const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/;
const TYPE_URL = "type.googleapis.com/google.ai.generativelanguage.v1beta.";

const snake = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const at = (path: string, name: string): string => (path === "" ? name : `${path}.${name}`);

interface Violation {
  readonly field: string;
  readonly description: string;
}

class Walker {
  readonly violations: Violation[] = [];

  private add(field: string, description: string): void {
    this.violations.push({ field, description });
  }

  private unknown(name: string, path: string, why: string): void {
    this.add(path, `Invalid JSON payload received. Unknown name "${name}"${path === "" ? "" : ` at '${path}'`}: ${why}`);
  }

  private invalid(path: string, type: string, value: unknown): void {
    this.add(path, `Invalid value at '${path}' (${type}), ${JSON.stringify(value)}`);
  }

  message(value: Record<string, unknown>, name: string, path: string): void {
    const fields = MESSAGES[name]!;
    const bySnake = new Map(Object.keys(fields).map((camel) => [snake(camel), camel]));
    for (const [key, member] of Object.entries(value)) {
      const camel = key in fields ? key : bySnake.get(key);
      if (camel === undefined) {
        this.unknown(key, path, "Cannot find field.");
        continue;
      }
      const field = fields[camel]!;
      const fieldPath = at(path, snake(camel));
      if (member === null) continue;
      if (field.repeated) {
        const list = Array.isArray(member) ? member : [member];
        list.forEach((item, i) => this.value(item, field.kind, `${fieldPath}[${i}]`));
      } else if (Array.isArray(member) && field.kind !== "any") {
        this.unknown(key, path, "Proto field is not repeating, cannot start list.");
      } else {
        this.value(member, field.kind, fieldPath);
      }
    }
    if (name === "Part") {
      const set = DATA_FIELDS.filter((f) => value[f] != null || value[snake(f)] != null);
      if (set.length > 1) this.add(path, `Invalid JSON payload received. Oneof field 'data' is already set. Cannot set '${set[1]}'`);
    }
  }

  private value(value: unknown, kind: Kind, path: string): void {
    if (kind === "any") return;
    if (kind === "struct") {
      if (!isObject(value)) this.invalid(path, "type.googleapis.com/google.protobuf.Struct", value);
      return;
    }
    if (typeof kind === "string") return this.scalar(value, kind, path);
    if ("enum" in kind) {
      const ok = Number.isInteger(value) || (typeof value === "string" && kind.values.includes(value.toUpperCase()));
      if (!ok) this.invalid(path, TYPE_URL + kind.enum, value);
      return;
    }
    if (!isObject(value)) return this.invalid(path, TYPE_URL + ("message" in kind ? kind.message : "Schema"), value);
    if ("message" in kind) return this.message(value, kind.message, path);
    Object.values(value).forEach((entry, i) => this.value(entry, { message: kind.map }, `${path}[${i}].value`));
  }

  private scalar(value: unknown, type: Scalar, path: string): void {
    const numeric = typeof value === "number" || (typeof value === "string" && value.trim() !== "" && !Number.isNaN(Number(value)));
    const ok =
      type === "TYPE_STRING" || type === "TYPE_BYTES"
        ? typeof value === "string"
        : type === "TYPE_BOOL"
          ? typeof value === "boolean"
          : type === "TYPE_FLOAT"
            ? numeric
            : numeric && Number.isInteger(Number(value));
    if (!ok) this.invalid(path, type, value);
  }
}

/** The service's checks, run once the body parsed; returns its message, or null. */
function serviceChecks(body: Record<string, unknown>): string | null {
  const get = (o: Record<string, unknown>, camel: string): unknown => o[camel] ?? o[snake(camel)];
  const list = (v: unknown): Record<string, unknown>[] => (v === undefined || v === null ? [] : Array.isArray(v) ? v : [v]) as Record<string, unknown>[];
  const lines: string[] = [];
  const contents = list(body.contents);
  if (contents.length === 0) lines.push("contents: contents is not specified");
  for (const content of contents) {
    if (content.role !== undefined && content.role !== null && content.role !== "" && content.role !== "user" && content.role !== "model") {
      return "Please use a valid role: user, model.";
    }
  }
  const checkParts = (content: Record<string, unknown>, path: string): void => {
    const parts = list(content.parts);
    if (parts.length === 0) lines.push(`${path}.parts: contents.parts must not be empty.`);
    parts.forEach((part, j) => {
      if (!DATA_FIELDS.some((f) => get(part, f) != null)) lines.push(`${path}.parts[${j}].data: required oneof field 'data' must have one initialized field`);
    });
  };
  contents.forEach((content, i) => checkParts(content, `contents[${i}]`));
  const system = get(body, "systemInstruction");
  if (isObject(system)) checkParts(system, "system_instruction");
  list(body.tools).forEach((tool, i) => {
    list(get(tool, "functionDeclarations")).forEach((declaration, j) => {
      if (typeof declaration.name !== "string" || !FUNCTION_NAME.test(declaration.name)) {
        lines.push(
          `tools[${i}].function_declarations[${j}].name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.) or dashes (-), with a maximum length of 64.`,
        );
      }
    });
  });
  if (lines.length > 0) return lines.map((line) => `* GenerateContentRequest.${line}\n`).join("");
  return functionTurns(contents.map((c) => list(c.parts)), contents.map((c) => c.role));
}

/**
 * A model turn with function calls comes right after a user turn or a function response turn, and the
 * turn after it answers every call: as many function response parts as the calls had.
 */
function functionTurns(parts: Record<string, unknown>[][], roles: unknown[]): string | null {
  const count = (turn: Record<string, unknown>[] | undefined, camel: string): number => (turn ?? []).filter((p) => p[camel] != null || p[snake(camel)] != null).length;
  for (let i = 0; i < parts.length; i++) {
    const calls = count(parts[i], "functionCall");
    const responses = count(parts[i], "functionResponse");
    if (calls > 0 && (i === 0 || roles[i - 1] === "model")) {
      return "Please ensure that function call turn comes immediately after a user turn or after a function response turn.";
    }
    if (responses > 0 && count(parts[i - 1], "functionCall") !== responses) {
      return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.";
    }
    if (calls > 0 && i + 1 < parts.length && count(parts[i + 1], "functionResponse") !== calls) {
      return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.";
    }
  }
  return null;
}

/** Validates a parsed generateContent body; returns the Gemini API's 400 for it, or null. */
export function validateGenerateContent(body: unknown): GeminiProblem | null {
  if (!isObject(body)) return { message: 'Invalid JSON payload received. Unknown name "": Root element must be a message.' };
  const walker = new Walker();
  walker.message(body, "GenerateContentRequest", "");
  if (walker.violations.length > 0) {
    return {
      message: walker.violations.map((v) => v.description).join("\n"),
      details: [{ "@type": "type.googleapis.com/google.rpc.BadRequest", fieldViolations: walker.violations }],
    };
  }
  const message = serviceChecks(body);
  return message === null ? null : { message };
}
