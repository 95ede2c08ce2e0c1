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
 * `Retry-After` it names, for up to `inProgressWaitMs` in all.
 */
import { MemtrialConnectionError, MemtrialError, errorFromAnswer } from "./errors.js";
import { type Operation, type OperationMethods, type Operations, type Schemas, type Shape, operations } from "./operations.js";
import { type Page, Paged } from "./paging.js";

export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

export interface ClientOptions {
  /** The service's address, e.g. `http://127.0.0.1:8000` (no trailing path). */
  baseUrl: string;
  /** The tenant's API key (`memtrial tenants create NAME` prints one); sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Times a failed attempt is sent again (default 2). */
  retries?: number;
  /** The longest pause before a retry, in ms (default 2000); a longer `Retry-After` is not waited for. */
  maxWaitMs?: number;
  /** How long, in all, a retry waits for its own first attempt to finish (default 60000 ms). */
  inProgressWaitMs?: number;
  /** Each attempt's time limit, in ms (default 120000); past it the attempt counts as lost. */
  timeoutMs?: number;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch;
  /** Headers sent with every request (e.g. an `X-Request-ID`). */
  headers?: Record<string, string>;
}

/** One request as the table makes it: method, path (ids filled in), body, query, whether it creates, whether it
 * only reads (a POST that writes nothing, as a search or a rank: resent as a GET is). */
export interface Call {
  method: string;
  path: string;
  body?: unknown;
  query?: Record<string, unknown> | undefined;
  creates: boolean;
  reads?: boolean;
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

/** The request a row makes of its arguments: ids, then the body (POST, PATCH), then the query. */
export function callOf(row: Operation<string, Shape>, args: unknown[]): Call {
  const names = [...row.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
  let i = 0;
  const path = row.path.replace(/\{(\w+)\}/g, (_, name: string) => segment(args[i++], name));
  const rest = args.slice(names.length);
  const sends = row.method === "POST" || row.method === "PATCH";
  const body = sends ? rest[0] : undefined;
  const query = (sends ? rest[1] : rest[0]) as Record<string, unknown> | undefined;
  return { method: row.method, path, body, query, creates: row.creates, reads: row.reads };
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

  constructor(
    readonly call: Call,
    readonly retries: number,
    readonly maxWaitMs: number,
    inProgressWaitMs: number,
    makeKey: () => string = () => crypto.randomUUID(),
  ) {
    this.headers = call.creates ? { "Idempotency-Key": makeKey() } : {};
    this.#inProgressLeft = inProgressWaitMs;
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
    if (!this.call.creates || this.attempt === 0 || this.#inProgressLeft <= 0) return false;
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

function decode(response: Response, text: string): unknown {
  if (response.status >= 400) throw errorFromAnswer(response.status, text, response.headers.get("x-request-id"));
  if (response.status === 204 || text === "") return null;
  if (!(response.headers.get("content-type") ?? "").startsWith("application/json")) return text;
  return JSON.parse(text) as unknown;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

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
    if (typeof options?.baseUrl !== "string" || !/^https?:\/\//.test(options.baseUrl)) {
      throw new TypeError(`baseUrl must be an http(s) URL, got ${JSON.stringify(options?.baseUrl)}`);
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.retries = options.retries ?? 2;
    this.maxWaitMs = options.maxWaitMs ?? 2000;
    this.inProgressWaitMs = options.inProgressWaitMs ?? 60_000;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#headers = { ...(options.headers ?? {}) };
    if (options.apiKey !== undefined) this.#headers.Authorization = `Bearer ${options.apiKey}`;
  }

  /** Send one call (with its retries) and decode the answer; a refusal throws {@link MemtrialError}. */
  async send(call: Call): Promise<unknown> {
    const attempts = new Attempts(call, this.retries, this.maxWaitMs, this.inProgressWaitMs);
    for (;;) {
      const outcome = await this.#attempt(call, attempts.headers);
      const wait = attempts.waitAfter(outcome);
      if (wait === null) {
        if ("lost" in outcome) {
          const reason = outcome.lost instanceof Error ? outcome.lost.message : String(outcome.lost);
          throw new MemtrialConnectionError(`${call.method} ${call.path}: no answer from ${this.baseUrl} (${reason})`, {
            cause: outcome.lost,
          });
        }
        return decode(outcome.response, outcome.text);
      }
      await sleep(wait);
    }
  }

  /** Any request, decoded as {@link send} does (for a route the table does not list yet). */
  request(method: string, path: string, options: { body?: unknown; query?: Record<string, unknown>; creates?: boolean } = {}): Promise<unknown> {
    return this.send({ method: method.toUpperCase(), path, body: options.body, query: options.query, creates: options.creates ?? false });
  }

  async #attempt(call: Call, keyed: Record<string, string>): Promise<Outcome> {
    const headers: Record<string, string> = { accept: "application/json", ...this.#headers, ...keyed };
    const init: RequestInit = { method: call.method, headers, signal: AbortSignal.timeout(this.timeoutMs) };
    if (call.body !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(call.body);
    }
    try {
      const response = await this.#fetch(this.baseUrl + call.path + queryString(call.query), init);
      return { response, text: await response.text() };
    } catch (lost) {
      return { lost };
    }
  }

  /** Every agent of the tenant, page by page (`query`: `name`, and `limit`, the page size). */
  iterAgents(query: Omit<ListQuery<"listAgents">, "cursor"> = {}): Paged<Schemas["AgentPublic"], Schemas["AgentList"]> {
    return new Paged((cursor) => (this as unknown as MemtrialClient).listAgents({ limit: 200, ...query, cursor }));
  }

  /** Every experience of the agent, page by page (`query`: `active`, `external_id`, `limit`). */
  iterExperiences(agentId: string, query: Omit<ListQuery<"listExperiences">, "cursor" | "offset"> = {}): Paged<Schemas["ExperiencePublic"], Schemas["ExperienceList"]> {
    return new Paged((cursor) => (this as unknown as MemtrialClient).listExperiences(agentId, { limit: 200, ...query, cursor }));
  }

  /** Every decision of the agent, oldest first, page by page (`query`: `status`, `maturity_before`, `limit`). */
  iterDecisions(agentId: string, query: Omit<ListQuery<"listDecisions">, "cursor"> = {}): Paged<Schemas["DecisionSummary"], Schemas["DecisionList"]> {
    return new Paged((cursor) => (this as unknown as MemtrialClient).listDecisions(agentId, { limit: 200, ...query, cursor }));
  }

  /** Every entry of the agent's hash-chained log in index order (to re-verify the chain outside the service). */
  iterLog(agentId: string, query: Omit<ListQuery<"trustLog">, "cursor"> = {}): Paged<Schemas["LogEntryPublic"], Schemas["LogPage"]> {
    return new Paged((cursor) => (this as unknown as MemtrialClient).trustLog(agentId, { limit: 1000, ...query, cursor }));
  }
}

/** The query parameters of a listing's row. */
type ListQuery<K extends keyof Operations> = Operations[K] extends Operation<string, infer S> ? NonNullable<S["query"]> : never;

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

export type { Page };
export { MemtrialError };
