// The gateway's own error envelope {"error": {"code", "message"}} and the status of each code
// (gaps.md). Used by the admin plane and by data-plane errors that belong to no vendor protocol.

export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  version_conflict: 409,
  rate_limited: 429,
  internal: 500,
} as const;
export type ErrorCode = keyof typeof ERROR_STATUS;

/** Thrown by services; the app's error handler turns it into the envelope. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(code: ErrorCode, message: string, options: { status?: number; headers?: Record<string, string> } = {}) {
    super(message);
    this.code = code;
    this.status = options.status ?? ERROR_STATUS[code];
    this.headers = options.headers ?? {};
  }
}

const JSON_TYPE = { "content-type": "application/json" };

export function errorResponse(code: ErrorCode, message: string, options: { status?: number; headers?: Record<string, string> } = {}): Response {
  return new Response(JSON.stringify({ error: { code, message } }), {
    status: options.status ?? ERROR_STATUS[code],
    headers: { ...JSON_TYPE, ...options.headers },
  });
}

export function gatewayErrorResponse(error: GatewayError): Response {
  return errorResponse(error.code, error.message, { status: error.status, headers: error.headers });
}
