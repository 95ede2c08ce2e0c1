/**
 * Every operation of the REST API, once: a table of rows (the HTTP method and the path template) that the
 * client binds as methods. Each row's argument and answer types come from the generated `schema.d.ts`
 * (the service's OpenAPI document), so a row is one line:
 *
 *     rankExperiences: op("post", "/v1/agents/{agent_id}/experiences/rank"),
 *
 * A method takes the path's ids first, in order (each a single id), then the JSON body (POST and PATCH),
 * then the query parameters (GET): `client.getExperience(agentId, experienceId)`,
 * `client.addExperience(agentId, { text })`, `client.listDecisions(agentId, { status: "open" })`.
 * Every method takes, last, the call's options (`{ signal }`: an `AbortSignal` that cancels it):
 * `client.getAgent(agentId, { signal })`, `client.listAgents({ limit: 10 }, { signal })`.
 * A creating row (`creates: true`: the service accepts an `Idempotency-Key` on it) carries a key that its
 * retries reuse; a reading row (`reads: true`: a POST that writes nothing) is resent as a GET is. `.as<Body, Answer>()` narrows a row whose request or answer is a union (one endpoint, two
 * operations).
 * What the schema says of a row's arguments is known only to the compiler, so a row names what the client
 * needs at run time to place them, and the compiler checks that it says what the schema says: `query: true`
 * where the operation has query parameters, `body: false` for a POST or PATCH without a body, `text: true`
 * where the answer is text, not JSON (`/metrics`). A row that leaves one out, or names one wrongly, does not compile.
 */
import type { components, paths } from "./schema.js";

export type Schemas = components["schemas"];
export type HttpMethod = "get" | "post" | "patch" | "delete";
type Path = keyof paths;

/** The OpenAPI operation object of `method` on `path`. */
type Spec<P extends Path, M extends HttpMethod> = NonNullable<paths[P][M]>;
type Json<C> = C extends { content: { "application/json": infer J } } ? J : never;
type BodyOf<O> = O extends { requestBody: infer R } ? Json<R> : O extends { requestBody?: infer R } ? Json<NonNullable<R>> : never;
type BodyRequired<O> = O extends { requestBody: object } ? true : false;
type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
type Success<R> = R extends { 200: infer S } ? S : R extends { 201: infer S } ? S : R extends { 202: infer S } ? S : R extends { 204: infer S } ? S : unknown;
type Decoded<S> = S extends { content: { "application/json": infer J } }
  ? J
  : S extends { content: { "text/plain": infer T } }
    ? T
    : null;
type AnswerOf<O> = O extends { responses: infer R } ? Decoded<Success<R>> : never;

/** One string per `{field}` of a path template, in order. */
type Ids<S extends string> = S extends `${string}{${string}}${infer R}` ? [id: string, ...ids: Ids<R>] : [];

/** What a row sends and answers: the body (and whether it is required), the query, the answer. */
export interface Shape {
  body: unknown;
  required: boolean;
  query: unknown;
  answer: unknown;
}

type ShapeOf<O> = { body: BodyOf<O>; required: BodyRequired<O>; query: QueryOf<O>; answer: AnswerOf<O> };
type BodyArgs<S extends Shape> = [S["body"]] extends [never] ? [] : S["required"] extends true ? [body: S["body"]] : [body?: S["body"]];
type QueryArgs<S extends Shape> = [S["query"]] extends [never] ? [] : [query?: S["query"]];

/** The arguments of a row's method: the path's ids, then the body, then the query (the call's options follow them). */
export type Args<P extends string, S extends Shape> = [...ids: Ids<P>, ...body: BodyArgs<S>, ...query: LooseQueryArgs<S>];

/** A query's parameters, each of which may also be given as `undefined` (left out, as if not named): so a query
 * built from values that may be undefined compiles under `exactOptionalPropertyTypes`. */
export type Loose<Q> = { [K in keyof Q]: undefined extends Q[K] ? Q[K] | undefined : Q[K] };
type LooseQueryArgs<S extends Shape> = [S["query"]] extends [never] ? [] : [query?: Loose<S["query"]>];

/** The options of one call, given last to any method (and to `request`, among its options). */
export interface CallOptions {
  /** Cancels the call: its attempt in flight, and any pause before a retry. The call rejects with the signal's
   * `reason` (an `AbortError` `DOMException` unless the caller gave another), as `fetch` does, and is not
   * sent again. */
  signal?: AbortSignal | undefined;
  /** A creating call's `Idempotency-Key` (letters, digits, `_ . : -`, at most 200), in place of the one the client
   * makes for it: the same call sent again with the same key (after the client gave up on it, a
   * `MemtrialConnectionError` or a 409 `idempotency_in_progress`) is answered with the first answer, never done twice.
   * Every error of a creating call carries the key it was sent with (`error.idempotencyKey`). */
  idempotencyKey?: string | undefined;
}

/** One row: method, path template, whether it creates, whether it only reads, which arguments it takes, whether it
 * answers text; its types ride along in `P` and `S`. */
export interface Operation<P extends string, S extends Shape> {
  readonly method: Uppercase<HttpMethod>;
  readonly path: P;
  readonly creates: boolean;
  readonly reads: boolean;
  /** Whether the ids are followed by a body (a POST or PATCH that has one). */
  readonly body: boolean;
  /** Whether the arguments have a query (after the body, if any). */
  readonly query: boolean;
  /** Whether the answer is text (`/metrics`), not JSON. */
  readonly text: boolean;
  /** The same row with a narrower body and answer (each must be a part of the row's own). */
  as<B extends S["body"], A extends S["answer"]>(): Operation<P, { body: B; required: S["required"]; query: S["query"]; answer: A }>;
}

type HasBody<O> = [BodyOf<O>] extends [never] ? false : true;
type HasQuery<O> = [QueryOf<O>] extends [never] ? false : true;
type AnswersText<O> = O extends { responses: infer R } ? (Success<R> extends { content: { "text/plain": unknown } } ? true : false) : false;
/** A flag the row may leave out where the schema agrees with its default, and must name where it does not. */
type Flag<K extends string, Has extends boolean, Default extends boolean> = [Has] extends [Default] ? { [F in K]?: Default } : { [F in K]: Has };
type SendsBody<M> = M extends "post" | "patch" ? true : false;

/** What a row says of itself: whether it creates or only reads, and (checked against the schema) its arguments. */
export type RowOptions<O, M> = { creates?: boolean; reads?: boolean } & Flag<"body", HasBody<O>, SendsBody<M>> &
  Flag<"query", HasQuery<O>, false> &
  Flag<"text", AnswersText<O>, false>;

/** A row of the table: `method` on `path` (a path of the OpenAPI document), typed from the schema. */
export function op<const P extends Path, const M extends HttpMethod & keyof paths[P]>(
  method: M,
  path: P,
  ...options: {} extends RowOptions<Spec<P, M>, M> ? [options?: RowOptions<Spec<P, M>, M>] : [options: RowOptions<Spec<P, M>, M>]
): Operation<P, ShapeOf<Spec<P, M>>> {
  const flags: { creates?: boolean; reads?: boolean; body?: boolean; query?: boolean; text?: boolean } = options[0] ?? {};
  const row = {
    method: method.toUpperCase() as Uppercase<HttpMethod>,
    path,
    creates: flags.creates ?? false,
    reads: flags.reads ?? false,
    body: flags.body ?? (method === "post" || method === "patch"),
    query: flags.query ?? false,
    text: flags.text ?? false,
    as() {
      return row;
    },
  };
  return row as Operation<P, ShapeOf<Spec<P, M>>>;
}

/** Every operation of the Python client (`service/operations.py`), by the same names in camelCase. */
export const operations = {
  // -- service ------------------------------------------------------------------------------------------
  health: op("get", "/healthz"),
  ready: op("get", "/readyz"),
  metrics: op("get", "/metrics", { text: true }),
  providers: op("get", "/v1/llm/providers"),
  // -- agents -------------------------------------------------------------------------------------------
  createAgent: op("post", "/v1/agents", { creates: true }),
  getAgent: op("get", "/v1/agents/{agent_id}"),
  updateAgent: op("patch", "/v1/agents/{agent_id}"),
  listAgents: op("get", "/v1/agents", { query: true }),
  deleteAgent: op("delete", "/v1/agents/{agent_id}"),
  // -- experiences --------------------------------------------------------------------------------------
  addExperience: op("post", "/v1/agents/{agent_id}/experiences", { creates: true }).as<Schemas["ExperienceCreate"], Schemas["ExperiencePublic"]>(),
  addExperiences: op("post", "/v1/agents/{agent_id}/experiences", { creates: true }).as<Schemas["ExperienceBatch"], Schemas["ExperienceList"]>(),
  listExperiences: op("get", "/v1/agents/{agent_id}/experiences", { query: true }),
  getExperience: op("get", "/v1/agents/{agent_id}/experiences/{experience_id}"),
  updateExperience: op("patch", "/v1/agents/{agent_id}/experiences/{experience_id}"),
  retireExperience: op("post", "/v1/agents/{agent_id}/experiences/{experience_id}/retire", { body: false }),
  deleteExperience: op("delete", "/v1/agents/{agent_id}/experiences/{experience_id}"),
  searchExperiences: op("post", "/v1/agents/{agent_id}/experiences/search", { reads: true }),
  rankExperiences: op("post", "/v1/agents/{agent_id}/experiences/rank", { reads: true }),
  releaseExperience: op("post", "/v1/agents/{agent_id}/experiences/{experience_id}/release", { creates: true }),
  // -- decisions ----------------------------------------------------------------------------------------
  createDecision: op("post", "/v1/agents/{agent_id}/decisions", { creates: true }),
  submitDrafts: op("post", "/v1/agents/{agent_id}/decisions/{decision_id}/drafts", { creates: true }),
  settle: op("post", "/v1/agents/{agent_id}/decisions/{decision_id}/settle", { creates: true }),
  correct: op("post", "/v1/agents/{agent_id}/decisions/{decision_id}/corrections", { creates: true }),
  getDecision: op("get", "/v1/agents/{agent_id}/decisions/{decision_id}"),
  listDecisions: op("get", "/v1/agents/{agent_id}/decisions", { query: true }),
  // -- trust and values ---------------------------------------------------------------------------------
  trust: op("get", "/v1/agents/{agent_id}/trust", { query: true }),
  trustLog: op("get", "/v1/agents/{agent_id}/trust/log", { query: true }),
  verify: op("get", "/v1/agents/{agent_id}/trust/verify"),
  values: op("get", "/v1/agents/{agent_id}/values"),
  // -- full-Bayes refit ---------------------------------------------------------------------------------
  startRefit: op("post", "/v1/agents/{agent_id}/refit", { creates: true }),
  getRefit: op("get", "/v1/agents/{agent_id}/refit/{job_id}"),
} as const;

export type Operations = typeof operations;

/** The methods the table gives a client: each row's arguments, then the call's options, answered with a promise of its answer. */
export type OperationMethods = {
  [K in keyof Operations]: Operations[K] extends Operation<infer P, infer S>
    ? (...args: [...args: Args<P, S>, options?: CallOptions]) => Promise<S["answer"]>
    : never;
};
