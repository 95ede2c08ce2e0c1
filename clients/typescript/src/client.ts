/**
 * The memtrial REST client: one method per row of the operations table, retries that can never create twice,
 * one error type for every refusal, and listings as async iterators.
 *
 *     const client = new MemtrialClient({ baseUrl: "http://127.0.0.1:8000", apiKey });
 *     const agent = await client.createAgent({ name: "fund", investor: "balanced", universe });
 *
 * Retries: a request that gets no answer (the connection fails or the attempt times out), or is answered
 * 429/502/503/504 with no `Retry-After` or one of at most `maxWaitMs`, is sent again, up to `retries`
 * times, after a pause that doubles from 250 ms (capped at `maxWaitMs`) or the `Retry-After` the service
 * named, except where sending it again could do twice what the first attempt may have done: a lost answer,
 * or a 502/503/504 that is not the service's own refusal (a proxy's), is resent only for a read (GET) or a
 * keyed call (a PATCH, DELETE or other POST carries no key: the change may be done); the service's own 502
 * (server drafting failed: the decision failed, its model calls spent) is final. Every creating call carries
 * an `Idempotency-Key` made once per call and reused by its retries, so the service answers a retry with
 * the first answer: a retry can never create twice.
 * A retry answered 409 `idempotency_in_progress` (the first attempt still runs) is sent again after the
 * `Retry-After` it names, for up to `inProgressWaitMs` in all. A creating call takes its own key among its
 * options (`{ idempotencyKey }`), and every error of one carries the key it was sent with, so a call given up on
 * can be sent again as the same request.
 *
 * Cancelling: every method takes, last, `{ signal }`; an aborted signal ends the call at once (its attempt in
 * flight, a pause before a retry, the wait for a first attempt), rejecting with the signal's reason, and the
 * call is never sent again.
 *
 * Redirects are not followed: `fetch` would resend a redirected POST as a GET (301/302/303) and answer with
 * whatever that GET returns; a 3xx is thrown as {@link MemtrialError} (code `redirect`) naming where it pointed.
 */
import { MemtrialConnectionError, MemtrialError, errorFromAnswer } from "./errors.js";
import {
  type CallOptions,
  type Loose,
  type Operation,
  type OperationMethods,
  type Operations,
  type Schemas,
  type Shape,
  operations,
} from "./operations.js";
import { type Page, Paged } from "./paging.js";

export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** The client's options. Each may be given as `undefined` (its default), so `apiKey: process.env.MEMTRIAL_API_KEY`
 * compiles under `exactOptionalPropertyTypes`; a number out of its range is a `TypeError` naming the option. */
export interface ClientOptions {
  /** The service's address, e.g. `http://127.0.0.1:8000` (no trailing path). */
  baseUrl: string;
  /** The tenant's API key (`memtrial tenants create NAME` prints one); sent as `Authorization: Bearer`. */
  apiKey?: string | undefined;
  /** Times a failed attempt is sent again: an integer >= 0 (default 2). */
  retries?: number | undefined;
  /** The longest pause before a retry, in ms from 0 to 2147483647 (default 2000); a longer `Retry-After` is not
   * waited for. */
  maxWaitMs?: number | undefined;
  /** How long, in all, a retry waits for its own first attempt to finish: a finite number of ms >= 0 (default 60000). */
  inProgressWaitMs?: number | undefined;
  /** Each attempt's time limit, an integer number of ms from 1 to 2147483647 (default 120000); past it the attempt
   * counts as lost. */
  timeoutMs?: number | undefined;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch | undefined;
  /** Headers sent with every request (e.g. an `X-Request-ID`). */
  headers?: Record<string, string> | undefined;
}

/** What `request` takes besides its method and path: the JSON body, the query, whether the call creates (it
 * then carries an `Idempotency-Key` its retries reuse), whether the answer is text (else it must be JSON), and the
 * call's `signal`. */
export interface RequestOptions extends CallOptions {
  body?: unknown;
  query?: Record<string, unknown> | undefined;
  creates?: boolean | undefined;
  text?: boolean | undefined;
}

/** One request as the table makes it: method, path (ids filled in), body, query, whether it creates, whether it
 * only reads (a POST that writes nothing, as a search or a rank: resent as a GET is), whether its answer is text
 * (`/metrics`; any other answer must be JSON), and the signal that cancels it. */
export interface Call {
  method: string;
  path: string;
  body?: unknown;
  query?: Record<string, unknown> | undefined;
  creates: boolean;
  reads?: boolean | undefined;
  text?: boolean | undefined;
  signal?: AbortSignal | undefined;
  /** A creating call's own `Idempotency-Key` (else the client makes one). */
  idempotencyKey?: string | undefined;
}

/** An id as one path segment: a non-empty string that is not a path; percent-encoded. */
export function segment(value: unknown, name: string): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`${name} must be a non-empty string, got ${JSON.stringify(value)}`);
  }
  if (value.includes("/") || value.includes("\\")) {
    throw new TypeError(`${name} must be a single id, not a path: got ${JSON.stringify(value)}`);
  }
  if (value === "." || value === "..") throw new TypeError(`${name} must be an id, got ${JSON.stringify(value)}`);
  return encodeURIComponent(value);
}

/** The request a row makes of its arguments: ids, then the body (a row with one), then the query (a row with
 * one), then the call's options. */
export function callOf(row: Operation<string, Shape>, args: unknown[]): Call {
  const names = [...row.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
  let i = 0;
  const path = row.path.replace(/\{(\w+)\}/g, (_, name: string) => segment(args[i++], name));
  const rest = args.slice(names.length);
  const body = row.body ? rest.shift() : undefined;
  const query = (row.query ? rest.shift() : undefined) as Record<string, unknown> | undefined;
  const options = rest.shift();
  const signal = signalOf(options);
  const idempotencyKey = keyOf(options, row.creates);
  const call: Call = { method: row.method, path, body, query, creates: row.creates, reads: row.reads, text: row.text, signal };
  if (idempotencyKey !== undefined) call.idempotencyKey = idempotencyKey;
  return call;
}

/** The rule the service holds an `Idempotency-Key` to. */
const KEY_RULE = /^[A-Za-z0-9_.:-]{1,200}$/;

/** The `idempotencyKey` of a call's options (undefined where none), or a TypeError where it is given to a call that
 * creates nothing (it would not be sent) or breaks the service's rule (it would be refused only once sent). */
function keyOf(options: unknown, creates: boolean): string | undefined {
  const key: unknown = options === undefined || options === null ? undefined : (options as CallOptions).idempotencyKey;
  if (key === undefined) return undefined;
  if (!creates) throw new TypeError("idempotencyKey is for a creating call (one that carries an Idempotency-Key); this call creates nothing");
  if (typeof key !== "string" || !KEY_RULE.test(key)) {
    throw new TypeError(`idempotencyKey must be 1 to 200 letters, digits or _ . : -, got ${shown(key)}`);
  }
  return key;
}

/** The `signal` of a call's options (undefined where none), or a TypeError where it is not an AbortSignal, or
 * where trailing options (`only`) hold anything but `signal` (a query passed to a row that takes none, say, would
 * otherwise be dropped without a word). A signal of another realm (a test runner's, a polyfill's) is followed by
 * a native one, which `fetch`, `AbortSignal.any` and `throwIfAborted` all understand. */
function signalOf(options: unknown, only = true): AbortSignal | undefined {
  if (options === undefined || options === null) return undefined;
  if (typeof options !== "object") throw new TypeError(`options must be an object such as { signal }, got ${shown(options)}`);
  const others = only ? Object.keys(options).filter((key) => key !== "signal" && key !== "idempotencyKey") : [];
  if (others.length > 0) {
    throw new TypeError(
      `a call's last argument is its options, { signal, idempotencyKey }; got ${others.map((key) => JSON.stringify(key)).join(", ")} too`,
    );
  }
  const signal: unknown = (options as CallOptions).signal;
  if (signal === undefined || signal instanceof AbortSignal) return signal;
  const foreign = signal as Partial<AbortSignal> | null;
  if (typeof signal !== "object" || foreign === null || typeof foreign.aborted !== "boolean" || typeof foreign.addEventListener !== "function") {
    throw new TypeError(`signal must be an AbortSignal, got ${shown(signal)}`);
  }
  const native = new AbortController();
  if (foreign.aborted) native.abort(foreign.reason);
  else foreign.addEventListener("abort", () => native.abort(foreign.reason), { once: true });
  return native.signal;
}

/** A value as an error message shows it: JSON where it has a form (a text quoted), else as JavaScript prints it
 * (NaN, Infinity, undefined, a bigint). */
function shown(value: unknown): string {
  if (typeof value === "number" || typeof value === "bigint" || value === undefined) return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** A request body as JSON, or a TypeError naming where in it lies a number JSON has no form for (NaN, Infinity):
 * `JSON.stringify` would send it as null, which the service reads as a value (a budget of none, a missing
 * return). The place is a dotted path, as the service names fields: `drafts.3.SPY`. */
export function jsonBody(body: unknown): string {
  const places = new Map<object, string>();
  return JSON.stringify(body, function (this: unknown, key: string, value: unknown) {
    // the value as JSON writes it (after toJSON); its place: its holder's place, then its key
    const holder = places.get(this as object);
    const place = holder === undefined ? "" : holder === "" ? key : `${holder}.${key}`;
    const number = value instanceof Number ? value.valueOf() : value;
    if (typeof number === "number" && !Number.isFinite(number)) {
      throw new TypeError(`${place || "body"} must be a finite number (JSON has no ${String(number)})`);
    }
    if (typeof value === "object" && value !== null) places.set(value, place);
    return value;
  }) as string;
}

function queryString(query: Record<string, unknown> | undefined): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    params.append(name, value instanceof Date ? value.toISOString() : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

type Outcome = { response: Response; text: string } | { lost: unknown };

/** The retry policy of one call, apart from any I/O: after each outcome, the pause before the next attempt (null: final). */
export class Attempts {
  readonly headers: Record<string, string>;
  attempt = 0;
  #inProgressLeft: number;
  /** Whether the caller gave the key: then even the first attempt may find it in progress (a call sent again). */
  readonly #ownKey: boolean;

  constructor(
    readonly call: Call,
    readonly retries: number,
    readonly maxWaitMs: number,
    inProgressWaitMs: number,
    makeKey: () => string = () => crypto.randomUUID(),
  ) {
    this.headers = call.creates ? { "Idempotency-Key": call.idempotencyKey ?? makeKey() } : {};
    this.#inProgressLeft = inProgressWaitMs;
    this.#ownKey = call.creates && call.idempotencyKey !== undefined;
  }

  waitAfter(outcome: Outcome): number | null {
    if (this.#inProgress(outcome) && "response" in outcome) {
      const wanted = Math.min(retryAfterMs(outcome.response) ?? 1000, this.maxWaitMs);
      const pause = Math.min(Math.max(250, wanted), this.#inProgressLeft);
      this.#inProgressLeft -= pause;
      return pause;
    }
    if (this.attempt >= this.retries) return null;
    let wait: number | null;
    const backoff = Math.min(250 * 2 ** this.attempt, this.maxWaitMs);
    // resent without doing twice: a read (a GET, or a POST that writes nothing: a search, a rank), or a call
    // whose key makes the service answer a retry with the first
    const resendable = this.call.method === "GET" || this.call.reads === true || "Idempotency-Key" in this.headers;
    if ("lost" in outcome) {
      if (!resendable) return null; // a lost answer may hide a done change
      wait = backoff;
    } else if (!RETRY_STATUSES.has(outcome.response.status)) {
      return null;
    } else if (outcome.response.status === 502 && refusal(outcome.text)) {
      return null; // the service's own: server drafting failed, the decision with it (its calls spent)
    } else if (outcome.response.status !== 429 && !resendable && !undone(outcome.text)) {
      return null; // a proxy's 502/503/504, or a server that stopped mid-request: the change may be done
    } else {
      const header = outcome.response.headers.get("retry-after");
      const wanted = header === null ? backoff : retryAfterMs(outcome.response);
      if (wanted === null) return null;
      wait = wanted <= this.maxWaitMs ? wanted : null;
    }
    this.attempt += 1;
    return wait;
  }

  #inProgress(outcome: Outcome): boolean {
    // a key of the client's own is in progress only for a retry; the caller's, from the first attempt (sent again)
    if (!this.call.creates || (this.attempt === 0 && !this.#ownKey) || this.#inProgressLeft <= 0) return false;
    if (!("response" in outcome) || outcome.response.status !== 409) return false;
    try {
      return (JSON.parse(outcome.text) as { error?: { code?: string } }).error?.code === "idempotency_in_progress";
    } catch {
      return false;
    }
  }
}

/** Whether an answer's body is the service's own error (its envelope `{"error": {"code": ...}}`), not a proxy's. */
function refusal(text: string): boolean {
  try {
    const error = (JSON.parse(text) as { error?: unknown }).error;
    return typeof error === "object" && error !== null && "code" in error;
  } catch {
    return false;
  }
}

/** The service's refusals that do not say nothing was written: a request a stopping server cut off may have taken
 * effect (it is resent only where resending cannot do it twice). */
const MAYBE_DONE = new Set(["server_stopping"]);

/** Whether an answer is the service's own refusal that wrote nothing (not a proxy's, not `server_stopping`). */
function undone(text: string): boolean {
  if (!refusal(text)) return false;
  return !MAYBE_DONE.has(String((JSON.parse(text) as { error: { code: unknown } }).error.code));
}

/** `Retry-After` in ms from now: a number of seconds, or an HTTP date (IMF-fixdate, e.g. `Wed, 21 Oct 2015
 * 07:28:00 GMT`: 0 once past); null when absent or neither. */
function retryAfterMs(response: Response): number | null {
  const header = response.headers.get("retry-after");
  if (header === null || header.trim() === "") return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : null;
  if (!header.trim().endsWith("GMT")) return null;
  const when = Date.parse(header);
  return Number.isFinite(when) ? Math.max(0, when - Date.now()) : null;
}

/** The longest delay `setTimeout` keeps (a longer one fires at once). */
const MAX_DELAY_MS = 2_147_483_647;

/** The first characters of an answer's body, for an error message. */
function excerpt(text: string): string {
  return text.length > 200 ? `${JSON.stringify(text.slice(0, 200))}...` : JSON.stringify(text);
}

/** The answer of a call: its JSON (or its text, for a row that answers text), or the error it stands for. */
function decode(call: Call, baseUrl: string, url: string, response: Response, text: string): unknown {
  const requestId = response.headers.get("x-request-id");
  if (response.status >= 400) throw errorFromAnswer(response.status, text, requestId, retryAfterMs(response));
  const said = `${call.method} ${call.path}: the service answered ${response.status}`;
  // a redirect is not followed (fetch would resend a POST as a GET): baseUrl names something in front of the service
  if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
    const location = response.headers.get("location");
    let where = "a location it did not name";
    if (location !== null) {
      try {
        where = new URL(location, url).href;
      } catch {
        where = location;
      }
    }
    throw new MemtrialError(
      response.status,
      "redirect",
      `${said}, a redirect to ${where}: not followed (fetch would resend a POST as a GET), and nothing was resent; ${redirectAdvice(baseUrl, url, where)}`,
      null,
      null,
      requestId,
    );
  }
  if (response.status === 204) return null;
  if (call.text) return text;
  if (text === "") {
    // only a 204 answers nothing: an empty 200 (a proxy's, a load balancer's) would reach the caller as a null typed as an answer
    throw new MemtrialError(response.status, "not_json", `${said} with an empty body, not JSON`, null, null, requestId);
  }
  const type = response.headers.get("content-type");
  if (type === null || !/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(type)) {
    const named = type === null ? "no content-type" : `content-type ${type}`;
    throw new MemtrialError(response.status, "not_json", `${said} with ${named}, not JSON: ${excerpt(text)}`, null, null, requestId);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new MemtrialError(response.status, "not_json", `${said} with malformed JSON (${why}): ${excerpt(text)}`, null, null, requestId);
  }
}

/** What a redirect says of the request: the same address but for a slash at the end of its path (the service's own
 * redirect of `/v1/agents/` to `/v1/agents`) is the path's fault, anything else baseUrl's. */
function redirectAdvice(baseUrl: string, url: string, where: string): string {
  try {
    const asked = new URL(url);
    const told = new URL(where);
    const bare = (path: string) => path.replace(/\/+$/, "");
    if (asked.origin === told.origin && asked.pathname !== told.pathname && bare(asked.pathname) === bare(told.pathname)) {
      return `the service's paths take no "/" at the end: send ${bare(asked.pathname) || "/"}`;
    }
  } catch {
    // a location that is no URL: baseUrl's fault as below
  }
  return `baseUrl (${baseUrl}) should point at the service itself`;
}

/** A pause of `ms`, ended early, rejecting with the signal's reason, when the signal aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const stop = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", stop);
      resolve();
    }, ms);
    signal?.addEventListener("abort", stop, { once: true });
  });
}

/** The signal of one attempt: aborted by the caller's signal, or past the attempt's time limit. */
function attemptSignal(signal: AbortSignal | undefined, timeoutMs: number): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
  if (signal === undefined) return timeout;
  if (typeof AbortSignal.any === "function") return AbortSignal.any([signal, timeout]);
  const either = new AbortController(); // a runtime without AbortSignal.any (Node before 20.3)
  const abort = (source: AbortSignal) => either.abort(source.reason);
  if (signal.aborted) abort(signal);
  signal.addEventListener("abort", () => abort(signal), { once: true, signal: either.signal });
  timeout.addEventListener("abort", () => abort(timeout), { once: true, signal: either.signal });
  return either.signal;
}

/** A TypeError, before anything is sent, where `fetch` could not even build the request (a header value that is
 * not Latin-1 text, a GET or HEAD with a body, a method it refuses): `fetch` rejects those as it rejects a connection
 * that failed, and the call would be reported as unanswered and sent again. */
function buildable(call: Call, url: string, headers: Record<string, string>, body: string | undefined): void {
  try {
    new Request(url, body === undefined ? { method: call.method, headers } : { method: call.method, headers, body });
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new TypeError(`${call.method} ${call.path}: the request cannot be built, so nothing was sent (${why})`, { cause: error });
  }
}

/** A numeric option: its default where it is undefined, else the value if it keeps `rule`, else a TypeError. */
function numberOption(value: unknown, name: string, fallback: number, valid: (value: number) => boolean, rule: string): number {
  if (value === undefined) return fallback;
  // NaN would break every comparison the retries make (attempt >= NaN is false: retried forever)
  if (typeof value !== "number" || !valid(value)) throw new TypeError(`${name} must be ${rule}, got ${shown(value)}`);
  return value;
}

/** The service's address as the client prefixes paths with, or a TypeError: an http(s) URL with a host, and no query,
 * fragment or credentials; a path (a proxy may serve the service under one) is kept. */
function baseUrlOf(value: unknown): string {
  const refuse = (why: string) => new TypeError(`baseUrl must be ${why}, got ${JSON.stringify(value)}`);
  if (typeof value !== "string" || !/^https?:\/\//i.test(value)) throw refuse("an http(s) URL");
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refuse("an http(s) URL");
  }
  if (url.hostname === "") throw refuse("an http(s) URL with a host");
  if (url.search !== "" || url.hash !== "" || /[?#]/.test(value)) throw refuse("the service's address, without a query or a fragment");
  // fetch refuses a URL holding credentials (every call would fail): the key goes in apiKey
  if (url.username !== "" || url.password !== "") throw refuse("the service's address without a user or password (give the key as apiKey)");
  return value.replace(/\/+$/, "");
}

/** The client's own methods; every operation of the table is added to its prototype (see {@link MemtrialClient}). */
class ClientBase {
  readonly baseUrl: string;
  readonly retries: number;
  readonly maxWaitMs: number;
  readonly inProgressWaitMs: number;
  readonly timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string>;

  constructor(options: ClientOptions) {
    this.baseUrl = baseUrlOf(options?.baseUrl);
    const isCount = (n: number) => Number.isInteger(n) && n >= 0;
    const isDelay = (n: number) => n >= 0 && n <= MAX_DELAY_MS; // false for NaN
    this.retries = numberOption(options.retries, "retries", 2, isCount, "an integer >= 0");
    this.maxWaitMs = numberOption(options.maxWaitMs, "maxWaitMs", 2000, isDelay, `a number of ms from 0 to ${MAX_DELAY_MS}`);
    this.inProgressWaitMs = numberOption(options.inProgressWaitMs, "inProgressWaitMs", 60_000, (n) => Number.isFinite(n) && n >= 0, "a finite number of ms >= 0");
    const isLimit = (n: number) => Number.isInteger(n) && n >= 1 && n <= MAX_DELAY_MS;
    this.timeoutMs = numberOption(options.timeoutMs, "timeoutMs", 120_000, isLimit, `an integer number of ms from 1 to ${MAX_DELAY_MS}`);
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#headers = { ...(options.headers ?? {}) };
    if (Object.keys(this.#headers).some((name) => name.toLowerCase() === "idempotency-key")) {
      throw new TypeError(
        "headers must not hold an Idempotency-Key: one key on every request would make each creating call answer the first's; give a call its own as { idempotencyKey }",
      );
    }
    if (options.apiKey !== undefined) this.#headers.Authorization = `Bearer ${options.apiKey}`;
  }

  /** Send one call (with its retries) and decode the answer; a refusal throws {@link MemtrialError}. An aborted
   * `call.signal` rejects with its reason at once, and nothing more is sent. */
  async send(call: Call): Promise<unknown> {
    const body = call.body === undefined ? undefined : jsonBody(call.body); // before anything is sent
    const url = this.baseUrl + call.path + queryString(call.query);
    const attempts = new Attempts(call, this.retries, this.maxWaitMs, this.inProgressWaitMs);
    const headers = this.#headersOf(body, attempts.headers);
    buildable(call, url, headers, body);
    const key = attempts.headers["Idempotency-Key"] ?? null;
    for (;;) {
      call.signal?.throwIfAborted();
      const outcome = await this.#attempt(call, url, body, headers);
      const wait = attempts.waitAfter(outcome);
      if (wait === null) {
        if ("lost" in outcome) {
          const reason = outcome.lost instanceof Error ? outcome.lost.message : String(outcome.lost);
          const error = new MemtrialConnectionError(`${call.method} ${call.path}: no answer from ${this.baseUrl} (${reason})`, {
            cause: outcome.lost,
          });
          error.idempotencyKey = key;
          throw error;
        }
        try {
          return decode(call, this.baseUrl, url, outcome.response, outcome.text);
        } catch (error) {
          if (error instanceof MemtrialError) error.idempotencyKey = key;
          throw error;
        }
      }
      await sleep(wait, call.signal);
    }
  }

  /** The headers of every attempt of a call: the client's, the call's key, and the body's type where it has one. */
  #headersOf(body: string | undefined, keyed: Record<string, string>): Record<string, string> {
    const headers: Record<string, string> = { accept: "application/json", ...this.#headers, ...keyed };
    if (body !== undefined) headers["content-type"] = "application/json";
    return headers;
  }

  /** Any request, decoded as {@link send} does (for a route the table does not list yet): `path` is the service's
   * path, from its leading `/` (`"/v1/agents"`); `options.text` where the answer is text, not JSON. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    if (typeof method !== "string" || !/^[A-Za-z]+$/.test(method)) {
      throw new TypeError(`method must be an HTTP method such as "get", got ${shown(method)}`);
    }
    if (typeof path !== "string" || !path.startsWith("/")) {
      // without its "/" the path would run into the host's port ("http://host:8000v1/agents"): a connection error
      throw new TypeError(`path must start with "/" (the service's path, e.g. "/v1/agents"), got ${shown(path)}`);
    }
    const signal = signalOf(options, false);
    const { body, query, creates, text } = options ?? {};
    const idempotencyKey = keyOf(options, creates === true);
    return this.send({ method: method.toUpperCase(), path, body, query, creates: creates ?? false, text: text ?? false, signal, idempotencyKey });
  }

  async #attempt(call: Call, url: string, body: string | undefined, headers: Record<string, string>): Promise<Outcome> {
    // redirect "manual": fetch would otherwise resend a redirected POST as a GET and answer with what that GET got
    const init: RequestInit = { method: call.method, headers, redirect: "manual", signal: attemptSignal(call.signal, this.timeoutMs) };
    if (body !== undefined) init.body = body;
    try {
      const response = await this.#fetch(url, init);
      return { response, text: await response.text() };
    } catch (lost) {
      if (call.signal?.aborted) throw call.signal.reason; // cancelled: not lost, and not sent again
      return { lost };
    }
  }

  /** Every agent of the tenant, page by page (`query`: `name`, and `limit`, the page size; `options.signal` cancels
   * the page being fetched). */
  iterAgents(query: Omit<ListQuery<"listAgents">, "cursor"> = {}, options?: CallOptions): Paged<Schemas["AgentPublic"], Schemas["AgentList"]> {
    return new Paged((cursor) => (this as unknown as MemtrialClient).listAgents({ ...query, limit: query.limit ?? 200, cursor }, options));
  }

  /** Every experience of the agent, page by page (`query`: `active`, `external_id`, `limit`). */
  iterExperiences(
    agentId: string,
    query: Omit<ListQuery<"listExperiences">, "cursor" | "offset"> = {},
    options?: CallOptions,
  ): Paged<Schemas["ExperiencePublic"], Schemas["ExperienceList"]> {
    return new Paged((cursor) => (this as unknown as MemtrialClient).listExperiences(agentId, { ...query, limit: query.limit ?? 200, cursor }, options));
  }

  /** Every decision of the agent, oldest first, page by page (`query`: `status`, `maturity_before`, `limit`). */
  iterDecisions(
    agentId: string,
    query: Omit<ListQuery<"listDecisions">, "cursor"> = {},
    options?: CallOptions,
  ): Paged<Schemas["DecisionSummary"], Schemas["DecisionList"]> {
    return new Paged((cursor) => (this as unknown as MemtrialClient).listDecisions(agentId, { ...query, limit: query.limit ?? 200, cursor }, options));
  }

  /** Every entry of the agent's hash-chained log in index order (to re-verify the chain outside the service). */
  iterLog(agentId: string, query: Omit<ListQuery<"trustLog">, "cursor"> = {}, options?: CallOptions): Paged<Schemas["LogEntryPublic"], Schemas["LogPage"]> {
    return new Paged((cursor) => (this as unknown as MemtrialClient).trustLog(agentId, { ...query, limit: query.limit ?? 1000, cursor }, options));
  }
}

/** The query parameters of a listing's row (each may be given as undefined: left out). */
type ListQuery<K extends keyof Operations> = Operations[K] extends Operation<string, infer S> ? Loose<NonNullable<S["query"]>> : never;

/** The memtrial REST client: every operation of the table as a method, plus `iter*` listings and `request`. */
export interface MemtrialClient extends OperationMethods {}
export class MemtrialClient extends ClientBase {}

for (const [name, row] of Object.entries(operations)) {
  Object.defineProperty(MemtrialClient.prototype, name, {
    value: async function (this: ClientBase, ...args: unknown[]) {
      return this.send(callOf(row as Operation<string, Shape>, args)); // a bad id rejects, as any refusal does
    },
    writable: true,
    configurable: true,
  });
}

export type { CallOptions, Page };
export { MemtrialError };
