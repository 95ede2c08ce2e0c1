/**
 * A Vercel AI SDK portfolio agent whose lessons memtrial credits: plan -> one model call per designed
 * subset -> submit the drafts -> settle -> values.
 *
 * Each month the service plans a decision: it names the subsets of the agent's lessons to draft with (a
 * fractional-factorial design). The agent asks its model once per subset, with exactly that subset's
 * lessons in the prompt, submits the drafts, and settles the decision when the month's returns are in;
 * memtrial credits each lesson with what including it changed. At the end it prints each lesson's value
 * (utility per decision, best first) and verifies the hash-chained trust log.
 *
 * Environment:
 *   MEMTRIAL_URL      the service (default http://127.0.0.1:8000)
 *   MEMTRIAL_API_KEY  a key from `memtrial tenants create NAME` (required)
 *   MODEL_BASE_URL    an OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 (required)
 *   MODEL             the model's name there (default "stand-in")
 *   MODEL_API_KEY     its key, if it wants one
 *   MONTHS            how many monthly decisions to run (default 12)
 *
 * The market is synthetic and planted (returns from a seeded generator, the same on every run): bonds and
 * gold beat equities, so with a model that follows its lessons the lessons recommending bonds or gold earn
 * positive values and the one recommending equities a negative one.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, type LanguageModel } from "ai";
import { MemtrialClient, isPlan } from "memtrial";

const UNIVERSE = [
  { asset: "SPY", asset_class: "equities" as const },
  { asset: "TLT", asset_class: "bonds" as const },
  { asset: "GLD", asset_class: "commodities" as const },
  { asset: "BIL", asset_class: "cash" as const },
];
const ASSETS = UNIVERSE.map((a) => a.asset);
const LESSONS = [
  "Overweight TLT: long bonds paid off when growth slowed.",
  "Overweight GLD: gold protected the book in uncertain months.",
  "Overweight SPY: equities always recover within the month.",
  "Overweight BIL: cash is the safest place to wait.",
];
const DRIFT: Record<string, number> = { SPY: -0.004, TLT: 0.004, GLD: 0.003, BIL: 0.0001 }; // per session
const HORIZON = 5; // trading sessions from decision to maturity
const DAY = 86_400_000;

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set (see the top of src/agent.ts)`);
  return value;
}

/** The prompt of one draft: the universe, the subset's lessons (and only those), the month's context. */
function prompt(lessons: string[], context: string): string {
  const assets = UNIVERSE.map((a) => `- ${a.asset} (${a.asset_class})`).join("\n");
  const given = lessons.length ? lessons.map((text, i) => `${i + 1}. ${text}`).join("\n") : "(none)";
  return [
    "You allocate a portfolio for the next month.",
    `Assets:\n${assets}`,
    `Lessons from earlier months:\n${given}`,
    `Market: ${context}`,
    'Reply with JSON only: {"weights": {ASSET: weight, ...}}, weights >= 0 summing to 1.',
  ].join("\n\n");
}

/** The weights a model's reply names, over the universe, normalised to sum to 1. */
function weightsOf(reply: string): Record<string, number> {
  const json = reply.slice(reply.indexOf("{"), reply.lastIndexOf("}") + 1);
  const weights = (JSON.parse(json) as { weights?: Record<string, unknown> }).weights ?? {};
  const raw = ASSETS.map((asset) => Math.max(0, Number(weights[asset] ?? 0)) || 0);
  const total = raw.reduce((sum, w) => sum + w, 0);
  if (!(total > 0)) throw new Error(`the model named no usable weights: ${reply.slice(0, 200)}`);
  return Object.fromEntries(ASSETS.map((asset, i) => [asset, (raw[i] as number) / total]));
}

/** A seeded uniform generator (mulberry32) and a normal draw from it: the same market on every run. */
function market(seed: number): (mean: number, sd: number) => number {
  let state = seed >>> 0;
  const uniform = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return (mean, sd) => mean + sd * Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

async function draft(model: LanguageModel, lessons: string[], context: string): Promise<Record<string, number>> {
  const { text } = await generateText({ model, prompt: prompt(lessons, context), temperature: 0 });
  return weightsOf(text);
}

async function main(): Promise<void> {
  const client = new MemtrialClient({
    baseUrl: process.env.MEMTRIAL_URL ?? "http://127.0.0.1:8000",
    apiKey: required("MEMTRIAL_API_KEY"),
  });
  const provider = createOpenAICompatible({
    name: "model",
    baseURL: required("MODEL_BASE_URL"),
    ...(process.env.MODEL_API_KEY ? { apiKey: process.env.MODEL_API_KEY } : {}),
  });
  const model = provider.chatModel(process.env.MODEL ?? "stand-in");
  const months = Number(process.env.MONTHS ?? 12);
  const draw = market(7);

  const agent = await client.createAgent({ name: "ai-sdk-fund", investor: "balanced", universe: UNIVERSE });
  await client.addExperiences(agent.id, { experiences: LESSONS.map((text) => ({ text })) });
  const start = Date.UTC(2022, 0, 31, 21);
  for (let month = 0; month < months; month++) {
    const time = new Date(start + 30 * DAY * month);
    const maturity = new Date(time.getTime() + 7 * DAY);
    const context = `Month ${month + 1}: growth is slowing and markets are uncertain.`;
    const plan = await client.createDecision(agent.id, {
      decision_time: time.toISOString(),
      maturity: maturity.toISOString(),
      context_text: context,
      horizon: HORIZON,
    });
    if (!isPlan(plan)) throw new Error("the agent drafts itself: createDecision must answer a plan");
    // one model call per designed subset, each with exactly that subset's lessons
    const drafts = await Promise.all(plan.subsets.map((subset) => draft(model, subset.texts, context)));
    const decision = await client.submitDrafts(agent.id, plan.decision_id, { drafts });
    const returns = Object.fromEntries(ASSETS.map((a) => [a, Array.from({ length: HORIZON }, () => draw(DRIFT[a] ?? 0, 0.004))]));
    await client.settle(agent.id, plan.decision_id, { returns, settled_at: maturity.toISOString() });
    const label = String(month + 1).padStart(2);
    console.log(`month ${label}: ${plan.subsets.length} subsets, ${drafts.length} model calls, action ${decision.action}`);
  }

  const { values } = await client.values(agent.id);
  console.log("values (utility per decision), best first:");
  for (const value of Object.values(values).sort((a, b) => b.mean - a.mean)) {
    const interval = value.lower != null && value.upper != null ? `  [${value.lower.toFixed(5)}, ${value.upper.toFixed(5)}]` : "";
    console.log(`  ${value.mean.toFixed(5)}${interval}  ${value.text}`);
  }
  const verified = await client.verify(agent.id);
  console.log(`trust log: ${verified.n_entries} entries, chain ${verified.ok ? "intact" : `broken at ${verified.first_invalid}`}`);
}

await main();
