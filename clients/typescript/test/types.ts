// Compile-time checks of the client's types (`npm test` runs `tsc -p tsconfig.test.json`): each
// `@ts-expect-error` line must fail to compile, every other line must compile. Nothing here runs.
import { type AgentPublic, MemtrialClient, type PlanPublic, type Schemas, isPlan, op } from "../src/index.js";

declare const client: MemtrialClient;
declare const maybeKey: string | undefined; // as process.env.MEMTRIAL_API_KEY is
declare const maybeNumber: number | undefined;
declare const signal: AbortSignal;

export async function typed(): Promise<void> {
  const agent: AgentPublic = await client.createAgent({ name: "fund", investor: "balanced" });
  // an agent's settings read as the values they can take, as a request names them
  const settings: ["portfolio" | "scored", "gate" | "dial", "centred" | "raw", "given" | "memory_free"] = [
    agent.kind,
    agent.action,
    agent.credit,
    agent.reference,
  ];
  void settings;
  const experience: Schemas["ExperiencePublic"] = await client.addExperience(agent.id, { text: "a lesson" });
  const batch: Schemas["ExperienceList"] = await client.addExperiences(agent.id, { experiences: [{ text: "b" }] });
  await client.getExperience(agent.id, experience.id);
  await client.listExperiences(agent.id, { limit: 3, active: true });
  const metrics: string = await client.metrics();
  const deleted: null = await client.deleteAgent(agent.id);
  const answer = await client.createDecision(agent.id, { decision_time: "t", maturity: "m", context_text: "c" });
  if (isPlan(answer)) {
    const plan: PlanPublic = answer;
    await client.submitDrafts(agent.id, plan.decision_id, { drafts: plan.subsets.map(() => ({ SPY: 1 })) });
  }
  await client.startRefit(agent.id); // an optional body
  for await (const decision of client.iterDecisions(agent.id, { status: "settled", limit: 3 })) void decision.decision_id;
  void [batch, metrics, deleted];

  // @ts-expect-error an id is missing
  await client.getExperience(agent.id);
  // @ts-expect-error a field the body does not have
  await client.addExperience(agent.id, { text: "a", nope: 1 });
  // @ts-expect-error a required field is missing
  await client.createAgent({ investor: "balanced" });
  // @ts-expect-error not an investor
  await client.createAgent({ name: "x", investor: "reckless" });
  // @ts-expect-error a query parameter the listing does not have
  await client.listAgents({ bogus: 1 });
  // @ts-expect-error not a status
  client.iterDecisions(agent.id, { status: "open" });
  // @ts-expect-error the iterator follows the cursors itself
  client.iterAgents({ cursor: "x" });
  // @ts-expect-error a GET takes no body
  await client.getAgent(agent.id, { name: "x" });
  // @ts-expect-error retrieval may be left out, never null (the service refuses null)
  await client.updateAgent(agent.id, { retrieval: null });
  // @ts-expect-error nor may quarantine
  await client.updateAgent(agent.id, { quarantine: null });
  await client.updateAgent(agent.id, { retrieval: "similarity", quarantine: { enabled: true } });
}

// tsconfig.test.json compiles this file with exactOptionalPropertyTypes: an option or a query parameter given as a
// value that may be undefined compiles (undefined: its default, or left out)
export async function exactOptional(): Promise<void> {
  const connected = new MemtrialClient({ baseUrl: "http://127.0.0.1:8000", apiKey: maybeKey, retries: maybeNumber, timeoutMs: maybeNumber });
  await connected.listAgents({ limit: maybeNumber, name: maybeKey });
  for await (const decision of connected.iterDecisions("a", { limit: maybeNumber })) void decision;
  await connected.request("get", "/v1/agents", { query: { limit: maybeNumber }, creates: undefined, signal: undefined });
}

// every operation takes, last, the call's options; so do request and the iterators
export async function cancellable(): Promise<void> {
  const agent = await client.createAgent({ name: "fund", investor: "balanced" }, { signal });
  await client.getAgent(agent.id, { signal });
  await client.health({ signal });
  const metrics: string = await client.metrics({ signal });
  await client.listAgents({ limit: 3 }, { signal });
  await client.listAgents(undefined, { signal: undefined });
  await client.retireExperience(agent.id, "e", { signal }); // a POST without a body: the options come next
  await client.startRefit(agent.id, undefined, { signal });
  await client.updateAgent(agent.id, { name: "x" }, { signal });
  await client.request("post", "/v1/agents", { body: { name: "x" }, creates: true, signal });
  await client.iterAgents({ name: "fund" }, { signal }).toArray();
  void metrics;

  // @ts-expect-error a signal is an AbortSignal
  await client.getAgent(agent.id, { signal: "stop" });
  // @ts-expect-error the options come after the body, never in its place
  await client.updateAgent(agent.id, { signal });
  // @ts-expect-error no more arguments than the options
  await client.getAgent(agent.id, { signal }, {});
}

// a row names what the client needs of its arguments at run time, and the compiler checks it against the schema
export const rows = {
  listed: op("get", "/v1/agents", { query: true }),
  retired: op("post", "/v1/agents/{agent_id}/experiences/{experience_id}/retire", { body: false }),
  metrics: op("get", "/metrics", { text: true }),
  // @ts-expect-error a listing has query parameters: the row must say so
  unsaid: op("get", "/v1/agents"),
  // @ts-expect-error the health check has none
  wrong: op("get", "/healthz", { query: true }),
  // @ts-expect-error /metrics answers text
  text: op("get", "/metrics"),
};
