"""A non-finance agent: forecasting whether software releases ship on time, with its own memory store.

The agent keeps its lessons in its own store (here a dict keyed by its own ids) and retrieves them
itself (here by keyword overlap): memtrial mirrors them by ``external_id`` and plans on exactly the
ones it retrieved (``retrieved_external_ids``). Each draft is a probability forecast over
``on_time`` / ``late`` from a local stand-in model that applies the lessons it is given; each decision
is settled with the Brier rule once the release has shipped or slipped.

The world is planted: a release ships on time when its scope was frozen (with 10% noise); team size and
season do not matter. So the two lessons about scope should earn positive values, the two about team
size and winter negative ones; the one about documentation is never retrieved and stays unmeasured.

Runs offline against a running service (``MEMTRIAL_URL``, default http://127.0.0.1:8000, and
``MEMTRIAL_API_KEY``, a key from ``memtrial tenants create``):

    MEMTRIAL_API_KEY=mt_... .venv/bin/python examples/scored_forecasts.py
"""

from __future__ import annotations

import datetime as dt
import os

import numpy as np

from memtrial.outcomes.display import UTILITY_UNIT, format_utility
from service.client import MemtrialClient

STORE = {  # the agent's own memory store: its id -> lesson
    "lesson-scope-frozen": "Releases whose scope was frozen early shipped on time.",
    "lesson-scope-open": "An open scope meant the release slipped.",
    "lesson-large-team": "Large teams ship late.",
    "lesson-winter": "Releases planned in winter slip.",
    "lesson-docs": "Documentation written early made the release notes easier.",
}
KEYWORDS = {
    "lesson-scope-frozen": {"scope", "frozen"},
    "lesson-scope-open": {"scope", "open"},
    "lesson-large-team": {"team", "large"},
    "lesson-winter": {"winter", "summer"},
    "lesson-docs": {"documentation"},
}
QUESTIONS = 40


def retrieve(question: str, k: int = 4) -> list[str]:
    """The agent's own retriever: the lessons sharing the most words with the question."""
    words = set(question.lower().replace(",", " ").replace(".", " ").split())
    scored = sorted(STORE, key=lambda key: (-len(KEYWORDS[key] & words), key))
    return scored[:k]


def stand_in_model(question: dict[str, bool], lessons: list[str]) -> dict[str, float]:
    """One model call: a forecast from the question's facts and exactly the lessons it was given."""
    logit = 0.0
    for lesson in lessons:
        if lesson == STORE["lesson-scope-frozen"]:
            logit += 1.2 if question["frozen"] else -1.2
        elif lesson == STORE["lesson-scope-open"]:
            logit += 0.6 if question["frozen"] else -1.2
        elif lesson == STORE["lesson-large-team"]:
            logit += -1.0 if question["large"] else 1.0
        elif lesson == STORE["lesson-winter"]:
            logit += -1.0 if question["winter"] else 1.0
    p = 1.0 / (1.0 + np.exp(-logit))
    return {"on_time": float(p), "late": float(1.0 - p)}


def main() -> None:
    url = os.environ.get("MEMTRIAL_URL", "http://127.0.0.1:8000")
    rng = np.random.default_rng(3)
    with MemtrialClient(url, api_key=os.environ["MEMTRIAL_API_KEY"]) as client:
        agent = client.create_agent(
            "release-forecaster",
            kind="scored",
            outcomes=["on_time", "late"],
            action="dial",
            credit="raw",
            gate={"test": "anytime", "alpha": 0.05},
        )
        client.add_experiences(agent.id, [{"text": text, "external_id": key} for key, text in STORE.items()])
        start = dt.datetime(2024, 1, 8, 9, tzinfo=dt.UTC)
        brier = []
        for week in range(QUESTIONS):
            facts = {name: bool(rng.random() < 0.5) for name in ("frozen", "large", "winter")}
            question = (
                f"Release {week + 1}: scope {'frozen' if facts['frozen'] else 'still open'}, "
                f"{'large' if facts['large'] else 'small'} team, {'winter' if facts['winter'] else 'summer'} launch."
            )
            time = start + dt.timedelta(days=7 * week)
            plan = client.create_decision(
                agent.id, time, time + dt.timedelta(days=6), question, retrieved_external_ids=retrieve(question)
            )
            drafts = [stand_in_model(facts, subset.texts) for subset in plan.subsets]
            decision = client.submit_drafts(agent.id, plan.decision_id, drafts)
            on_time = facts["frozen"]
            if rng.random() < 0.1:
                on_time = not on_time
            settled = client.settle(agent.id, plan.decision_id, outcome="on_time" if on_time else "late", rule="brier")
            brier.append(settled.chosen_utility)
            if week % 10 == 9:
                print(
                    f"release {week + 1}: played {decision.action}, mean utility so far {format_utility(float(np.mean(brier)))}"
                )
        trust = client.trust(agent.id).state
        print(f"trust: {trust.status} ({trust.n_scored} scores)")
        print(f"values ({UTILITY_UNIT}, Brier), best first:")
        for value in client.values(agent.id).values.values():
            p = "  -" if value.p_positive is None else f"{value.p_positive:.2f}"
            print(f"  {format_utility(value.mean)}  P(v>0) {p}  uses {value.n:2d}  {value.external_id}: {value.text}")


if __name__ == "__main__":
    main()
