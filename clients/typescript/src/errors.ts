/**
 * The errors of the client.
 *
 * - {@link MemtrialError}: the service answered with an error (any status >= 400). Every refusal is one:
 *   `status` (HTTP), `code` (stable, e.g. `invalid`, `not_found`, `conflict`), `message`, `field`
 *   (the first invalid field, or null), `errors` (every invalid field the service found), `requestId` (the
 *   `X-Request-ID` it answered with), `retryAfterMs` (the wait its `Retry-After` named, on a 429 or 503, or
 *   null) and `idempotencyKey` (a creating call's key, to send the call again as the same request). So is an answer
 *   the client cannot take as the service's: a redirect (3xx, code `redirect`: baseUrl names something in
 *   front of the service; not followed) or a success whose body is not JSON (code `not_json`), each with its status.
 * - {@link MemtrialConnectionError}: no answer came (the connection failed or the attempt timed out), after
 *   the retries the call allowed; `cause` is the underlying error, `idempotencyKey` a creating call's key.
 * - A `TypeError` before anything is sent: a path id that is not a single id (empty, or holding `/`), a body
 *   holding a number JSON has no form for (NaN, Infinity: named by its dotted path), a `request` path without
 *   its leading `/`, a request `fetch` cannot build (a header value that is not Latin-1 text, a GET with a
 *   body), an `idempotencyKey` that is not one; and from the constructor, an option out of its range.
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
  /** How long the answer's `Retry-After` asked to wait, in ms from when it came (a 429's rate limit, a 503's
   * not-ready or busy agent), or null where it named none. */
  readonly retryAfterMs: number | null;
  /** The `Idempotency-Key` a creating call was sent with (null for any other call): give it as the call's
   * `idempotencyKey` to send the same request again (after `idempotency_in_progress`, say) without doing it twice. */
  idempotencyKey: string | null = null;

  constructor(
    status: number,
    code: string,
    message: string,
    field: string | null,
    errors?: FieldError[] | null,
    requestId: string | null = null,
    retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = "MemtrialError";
    this.status = status;
    this.code = code;
    this.field = field;
    this.errors = errors ?? [{ field, message }];
    this.requestId = requestId;
    this.retryAfterMs = retryAfterMs;
  }

  override toString(): string {
    return `MemtrialError: ${this.status} ${this.code}: ${this.message}`;
  }
}

/** No answer came from the service (after the retries the call allowed). */
export class MemtrialConnectionError extends Error {
  /** The `Idempotency-Key` a creating call was sent with (null for any other call): the service may have done it,
   * so send it again with this key as its `idempotencyKey` (answered with the first answer), not as a new call. */
  idempotencyKey: string | null = null;

  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = "MemtrialConnectionError";
  }
}

interface ErrorBody {
  error?: { code?: unknown; message?: unknown; field?: unknown; errors?: unknown };
}

/** The error an error answer stands for: the service's error body, else `http_error` with the text. */
export function errorFromAnswer(status: number, text: string, requestId: string | null, retryAfterMs: number | null = null): MemtrialError {
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
    return new MemtrialError(status, error.code, error.message, field, errors, requestId, retryAfterMs);
  }
  return new MemtrialError(status, "http_error", text.slice(0, 500), null, null, requestId, retryAfterMs);
}
