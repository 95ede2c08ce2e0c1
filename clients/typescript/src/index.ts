/**
 * `memtrial`: the typed TypeScript client for the memtrial REST service.
 *
 * {@link MemtrialClient} has one method per operation of the service (the table in `operations.ts`,
 * typed from the service's OpenAPI document in `schema.d.ts`); every refusal throws {@link MemtrialError};
 * `iter*` methods walk listings page by page as async iterators.
 */
export { Attempts, type Call, type ClientOptions, MemtrialClient, RETRY_STATUSES, type RequestOptions, callOf, segment } from "./client.js";
export { type FieldError, MemtrialConnectionError, MemtrialError } from "./errors.js";
export {
  type Args,
  type CallOptions,
  type Loose,
  type Operation,
  type OperationMethods,
  type Operations,
  type RowOptions,
  type Schemas,
  op,
  operations,
} from "./operations.js";
export { type Page, Paged } from "./paging.js";
export type { components, operations as openapiOperations, paths } from "./schema.js";

import type { components } from "./schema.js";

type S = components["schemas"];
export type AgentPublic = S["AgentPublic"];
export type AgentCreate = S["AgentCreate"];
export type ExperiencePublic = S["ExperiencePublic"];
export type ExperienceCreate = S["ExperienceCreate"];
export type DecisionCreate = S["DecisionCreate"];
export type PlanPublic = S["PlanPublic"];
export type DecisionPublic = S["DecisionPublic"];
export type SettlementPublic = S["SettlementPublic"];
export type ValuesPublic = S["ValuesPublic"];
export type TrustPublic = S["TrustPublic"];
export type VerifyPublic = S["VerifyPublic"];

/** Whether `createDecision` answered a plan (client drafting: draft each subset, then `submitDrafts`). */
export function isPlan(answer: PlanPublic | DecisionPublic): answer is PlanPublic {
  return "subsets" in answer;
}
