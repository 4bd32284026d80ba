// The error handling both listeners share: unknown path 404, wrong method 405 + Allow, malformed or
// mis-shaped body 400 naming the member, GatewayError as thrown, anything else 500 with no detail.
import { Elysia, ValidationError } from "elysia";
import type { TSchema } from "@sinclair/typebox";
import { schemaErrors } from "../config/schema-errors.ts";
import type { Logger } from "../telemetry/logger.ts";
import { errorResponse, GatewayError, gatewayErrorResponse } from "./errors.ts";
import { RouteTable } from "./routes.ts";
import { jsonTextTooDeep, TOO_DEEP_MESSAGE } from "./json-depth.ts";
import { BodyTooLargeError } from "./serve.ts";

function validationMessage(error: ValidationError): string {
  const validator = error.validator as { schema?: TSchema } & TSchema;
  const schema = (validator.schema ?? validator) as TSchema;
  let errors: string[];
  try {
    errors = schemaErrors(schema, error.value, { style: "pointer" });
  } catch {
    errors = [];
  }
  return errors.length > 0 ? errors.join("; ") : "request body does not match the expected shape";
}

/**
 * One controller. `normalize: false` because Elysia would otherwise coerce and strip a body to fit its
 * schema (`{"config": 3}` became `{"config": {}}`); we reject what does not fit instead.
 */
export function controller(name: string) {
  return new Elysia({ name, normalize: false });
}

/** `application/json`, with or without parameters (`; charset=utf-8`). */
const JSON_TYPE = /^application\/json\s*(;|$)/i;

/**
 * A controller whose bodies are JSON. Only `application/json` is read: a browser sends `text/plain` and
 * form types cross-site without a preflight, so parsing those as JSON let any web page post to the admin
 * plane. The nesting bound is checked on the text before the parse (deep bodies stalled the loop for seconds).
 */
export function jsonController(name: string) {
  return controller(name).onParse(async ({ request, contentType }) => {
    let text: string;
    try {
      text = await request.text();
    } catch (error) {
      if (error instanceof BodyTooLargeError) throw new GatewayError("invalid_request", error.message, { status: 413, headers: { connection: "close" } });
      throw new GatewayError("invalid_request", "request body could not be read");
    }
    if (text.trim() === "") return null;
    if (!JSON_TYPE.test(contentType)) {
      throw new GatewayError("invalid_request", `request body must be sent as content-type: application/json (got ${contentType === "" ? "none" : JSON.stringify(contentType.slice(0, 100))})`, { status: 415 });
    }
    if (jsonTextTooDeep(text)) throw new GatewayError("invalid_request", TOO_DEEP_MESSAGE);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new GatewayError("invalid_request", "request body is not valid JSON");
    }
  });
}

/**
 * Root instance of a listener's app. The route table for 405 is read lazily from the finished app,
 * once, at the first unmatched request. `notFound` answers a path no route has (the data plane's says
 * what it serves, in the caller's protocol).
 */
export function listenerApp(name: string, logger: Logger, options: { prefix?: string; notFound?: (request: Request) => Response } = {}) {
  let table: RouteTable | undefined;
  const app = new Elysia({ name, prefix: options.prefix ?? "", normalize: false });
  return app.onError({ as: "global" }, ({ code, error, request }) => {
    if (error instanceof GatewayError) return gatewayErrorResponse(error);
    // Elysia wraps whatever a parse hook throws in a ParseError; ours carries the real answer as its cause.
    const cause = (error as { cause?: unknown }).cause;
    if (code === "PARSE" && cause instanceof GatewayError) return gatewayErrorResponse(cause);
    switch (code) {
      case "NOT_FOUND": {
        table ??= new RouteTable(app.routes);
        const pathname = new URL(request.url).pathname;
        const allowed = table.allowed(pathname);
        if (allowed.length > 0) {
          return errorResponse("method_not_allowed", `${request.method} is not allowed on ${pathname}; allowed: ${allowed.join(", ")}`, {
            headers: { allow: allowed.join(", ") },
          });
        }
        return options.notFound?.(request) ?? errorResponse("not_found", `no route ${pathname}`);
      }
      case "PARSE":
        return errorResponse("invalid_request", "request body is not valid JSON");
      case "VALIDATION": {
        const validation = error as ValidationError;
        if (validation.type === "response") {
          logger.error("response failed its own schema", { path: new URL(request.url).pathname, detail: validationMessage(validation) });
          return errorResponse("internal", "internal error");
        }
        const where = validation.type === "body" ? "" : `${validation.type} `;
        return errorResponse("invalid_request", `${where}${validationMessage(validation)}`);
      }
      default:
        logger.error("unhandled error", { path: new URL(request.url).pathname, code: String(code), error });
        return errorResponse("internal", "internal error");
    }
  });
}
