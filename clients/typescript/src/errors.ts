/**
 * The errors of the client.
 *
 * - {@link MemtrialError}: the service answered with an error (any status >= 400). Every refusal is one:
 *   `status` (HTTP), `code` (stable, e.g. `validation_error`, `not_found`, `conflict`), `message`, `field`
 *   (the first invalid field, or null) and `errors` (every invalid field the service found). So is an answer
 *   the client cannot take as the service's: a redirect (3xx, code `redirect`: baseUrl names something in
 *   front of the service; not followed) or a success whose body is not JSON (code `not_json`), each with its status.
 * - {@link MemtrialConnectionError}: no answer came (the connection failed or the attempt timed out), after
 *   the retries the call allowed; `cause` is the underlying error.
 * - A `TypeError` before anything is sent: a path id that is not a single id (empty, or holding `/`), a body
 *   holding a number JSON has no form for (NaN, Infinity: named by its dotted path), a `request` path without
 *   its leading `/`; and from the constructor, an option out of its range.
 * - The signal's reason (an `AbortError` unless the caller gave another) when the call's `signal` aborts.
 */

/** One invalid field of a refusal: the field's dotted path (or null) and the rule it broke. */
export interface FieldError {
  field: string | null;
  message: string;
}

/** The service refused the request: `{"error": {"code", "message", "field", "errors"}}`, with its status. */
export class MemtrialError extends Error {
  readonly status: number;
  readonly code: string;
  readonly field: string | null;
  readonly errors: FieldError[];
  /** The `X-Request-ID` the service answered with (to find its log lines), if any. */
  readonly requestId: string | null;

  constructor(
    status: number,
    code: string,
    message: string,
    field: string | null,
    errors?: FieldError[] | null,
    requestId: string | null = null,
  ) {
    super(message);
    this.name = "MemtrialError";
    this.status = status;
    this.code = code;
    this.field = field;
    this.errors = errors ?? [{ field, message }];
    this.requestId = requestId;
  }

  override toString(): string {
    return `MemtrialError: ${this.status} ${this.code}: ${this.message}`;
  }
}

/** No answer came from the service (after the retries the call allowed). */
export class MemtrialConnectionError extends Error {
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = "MemtrialConnectionError";
  }
}

interface ErrorBody {
  error?: { code?: unknown; message?: unknown; field?: unknown; errors?: unknown };
}

/** The error an error answer stands for: the service's error body, else `http_error` with the text. */
export function errorFromAnswer(status: number, text: string, requestId: string | null): MemtrialError {
  let body: ErrorBody | null = null;
  try {
    body = JSON.parse(text) as ErrorBody;
  } catch {
    body = null;
  }
  const error = body?.error;
  if (error && typeof error.code === "string" && typeof error.message === "string") {
    const field = typeof error.field === "string" ? error.field : null;
    const errors = Array.isArray(error.errors) ? (error.errors as FieldError[]) : null;
    return new MemtrialError(status, error.code, error.message, field, errors, requestId);
  }
  return new MemtrialError(status, "http_error", text.slice(0, 500), null, null, requestId);
}
