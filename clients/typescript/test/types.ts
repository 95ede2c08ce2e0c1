// Compile-time checks of the client's types (`npm test` runs `tsc -p tsconfig.test.json`): each
// `@ts-expect-error` line must fail to compile, every other line must compile. Nothing here runs.
import { type AgentPublic, MemtrialClient, type PlanPublic, type Schemas, isPlan } from "../src/index.js";

declare const client: MemtrialClient;

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
