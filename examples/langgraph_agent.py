"""A LangGraph portfolio agent whose lessons memtrial credits: plan -> one draft per subset -> decide.

Runs offline against a running service (``MEMTRIAL_URL``, default http://127.0.0.1:8000, and
``MEMTRIAL_API_KEY``, a key from ``memtrial tenants create``). The model is a local stand-in: it reads
the lessons it is given and tilts an even allocation toward the assets they recommend, so each draft is
conditioned on exactly its subset. The market is synthetic and planted: bonds and gold beat equities,
so the lessons that recommend bonds or gold should earn positive values and those recommending equities
or cash negative ones.

    .venv/bin/pip install -e '.[langgraph]' --config-settings editable_mode=compat
    MEMTRIAL_API_KEY=mt_... .venv/bin/python examples/langgraph_agent.py
"""

from __future__ import annotations

import datetime as dt
import os
import re

import numpy as np

from memtrial.outcomes.display import UTILITY_UNIT, format_utility
from service.client import MemtrialClient
from service.integrations.langgraph import DraftTask, decision_graph, settle_node

UNIVERSE = [
    {"asset": "SPY", "asset_class": "equities"},
    {"asset": "TLT", "asset_class": "bonds"},
    {"asset": "GLD", "asset_class": "commodities"},
    {"asset": "BIL", "asset_class": "cash"},
]
ASSETS = [a["asset"] for a in UNIVERSE]
LESSONS = [
    "Overweight TLT: long bonds paid off when growth slowed.",
    "Overweight GLD: gold protected the book in uncertain months.",
    "Overweight SPY: equities always recover within the month.",
    "Overweight BIL: cash is the safest place to wait.",
]
DRIFT = {"SPY": -0.004, "TLT": 0.004, "GLD": 0.003, "BIL": 0.0001}  # the planted market, per session
MONTHS = 24
HORIZON = 5


def stand_in_model(task: DraftTask) -> dict[str, float]:
    """One model call: an even book, tilted toward each asset a given lesson says to overweight."""
    weights = dict.fromkeys(ASSETS, 1.0)
    for lesson in task.lessons:
        for asset in re.findall(r"Overweight (\w+)", lesson):
            if asset in weights:
                weights[asset] += 1.5
    total = sum(weights.values())
    return {asset: w / total for asset, w in weights.items()}


def main() -> None:
    url = os.environ.get("MEMTRIAL_URL", "http://127.0.0.1:8000")
    rng = np.random.default_rng(7)
    with MemtrialClient(url, api_key=os.environ["MEMTRIAL_API_KEY"]) as client:
        agent = client.create_agent(
            "langgraph-fund",
            "balanced",
            UNIVERSE,
            action="dial",
            credit="raw",
            gate={"test": "anytime", "alpha": 0.05},
        )
        client.add_experiences(agent.id, LESSONS)
        graph = decision_graph(client, agent.id, stand_in_model)
        settle = settle_node(client, agent.id)
        start = dt.datetime(2022, 1, 31, 21, tzinfo=dt.UTC)
        for month in range(MONTHS):
            time = start + dt.timedelta(days=30 * month)
            maturity = time + dt.timedelta(days=7)
            state = graph.invoke(
                {
                    "decision_time": time.isoformat(),
                    "maturity": maturity.isoformat(),
                    "context_text": f"Month {month + 1}: growth is slowing and markets are uncertain.",
                    "options": {"horizon": HORIZON},
                }
            )
            returns = {a: list(DRIFT[a] + rng.normal(0, 0.004, HORIZON)) for a in ASSETS}
            settle({"decision_id": state["decision"]["decision_id"], "outcome": {"returns": returns}})
            drafts = len(state["plan"]["subsets"])
            print(f"month {month + 1:2d}: {drafts} drafts, action {state['decision']['action']}")
        print(state["decision"]["explanation"])
        print(f"values ({UTILITY_UNIT}), best first:")
        for value in client.values(agent.id).values.values():
            interval = f"[{format_utility(value.lower)}, {format_utility(value.upper)}]"
            print(f"  {format_utility(value.mean)}  {interval}  {value.text}")


if __name__ == "__main__":
    main()
