"""Mem0 keeps and retrieves an agent's memories; memtrial measures which of them help, and writes it back.

A portfolio agent keeps its lessons in an open-source Mem0 ``Memory`` (local embedder: this project's
shipped all-MiniLM-L6-v2; local FAISS store; no LLM: memories are added with ``infer=False``). Each
month, Mem0's search picks the memories for the month's news, memtrial mirrors them by external id and
plans on exactly those, a local stand-in model drafts once per designed subset, and the month is settled.
Then each memory's value, 90% interval, P(v > 0) and use count are written into its Mem0 metadata
(the agent's entry of ``memtrial_values``), where Mem0 users can rank and prune by measured usefulness.

The market is synthetic and planted: in each kind of month one of the two lessons about it recommends
the asset that does well, the other one that does badly.

Runs offline against a running service (``MEMTRIAL_URL``, default http://127.0.0.1:8000, and
``MEMTRIAL_API_KEY``, a key from ``memtrial tenants create``):

    .venv/bin/pip install -e '.[mem0]' --config-settings editable_mode=compat
    MEMTRIAL_API_KEY=mt_... .venv/bin/python examples/mem0_credit.py

It prints only its own lines: Mem0's notices (spaCy not installed, no keyword search in FAISS) and the
model's loading bar are left out; ``--verbose`` shows Mem0's notices.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import sys
import tempfile

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before mem0 is imported: no telemetry
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no loading bar when Mem0 loads the embedding model
os.environ.setdefault("OPENAI_API_KEY", "unused")  # Mem0 builds an LLM client it never calls with infer=False

import numpy as np

from memtrial.outcomes.display import UTILITY_UNIT, format_utility
from service.client import MemtrialClient
from service.integrations.mem0 import Mem0Credit, offline_config

UNIVERSE = [
    {"asset": "SPY", "asset_class": "equities"},
    {"asset": "TLT", "asset_class": "bonds"},
    {"asset": "GLD", "asset_class": "commodities"},
    {"asset": "BIL", "asset_class": "cash"},
]
ASSETS = [a["asset"] for a in UNIVERSE]
MONTHS = {  # the month's news, and the asset that does well in such a month
    "The central bank cut interest rates unexpectedly.": "TLT",
    "Inflation came in far above expectations.": "GLD",
    "Companies reported a strong earnings season.": "SPY",
}
MEMORIES = [
    "When the central bank cut rates, overweight TLT: long bonds rallied.",
    "When the central bank cut rates, overweight BIL: cash beat everything.",
    "After an inflation surprise, overweight GLD: gold held its value.",
    "After an inflation surprise, overweight SPY: equities shrugged it off.",
    "In a strong earnings season, overweight SPY: stocks climbed.",
    "In a strong earnings season, overweight TLT: bonds were the safer bet.",
]
HORIZON = 5
N_MONTHS = 30


def stand_in_model(lessons: list[str]) -> dict[str, float]:
    """One model call: an even book, tilted toward each asset a given lesson says to overweight."""
    weights = dict.fromkeys(ASSETS, 1.0)
    for lesson in lessons:
        for asset in re.findall(r"overweight (\w+)", lesson):
            if asset in weights:
                weights[asset] += 1.5
    total = sum(weights.values())
    return {asset: w / total for asset, w in weights.items()}


def main() -> None:
    # Mem0's notices (spaCy not installed, no keyword search in FAISS) are not this example's output
    logging.getLogger("mem0").setLevel(logging.WARNING if "--verbose" in sys.argv else logging.ERROR)
    from mem0 import Memory

    url = os.environ.get("MEMTRIAL_URL", "http://127.0.0.1:8000")
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory() as folder, MemtrialClient(url, api_key=os.environ["MEMTRIAL_API_KEY"]) as client:
        memory = Memory.from_config(offline_config(folder))
        for text in MEMORIES:
            memory.add(text, user_id="fund-7", infer=False)
        agent = client.create_agent(
            "mem0-fund", "balanced", UNIVERSE, action="dial", credit="raw", gate={"test": "anytime", "alpha": 0.05}
        )
        credit = Mem0Credit(memory, client, agent.id, filters={"user_id": "fund-7"}, search_options={"threshold": 0.0})
        start = dt.datetime(2022, 1, 31, 21, tzinfo=dt.UTC)
        news = list(MONTHS)
        for month in range(N_MONTHS):
            headline = news[month % len(news)]
            time = start + dt.timedelta(days=30 * month)
            plan = credit.plan(time, time + dt.timedelta(days=7), headline, horizon=HORIZON)
            drafts = [stand_in_model(subset.texts) for subset in plan.subsets]
            client.submit_drafts(agent.id, plan.decision_id, drafts)
            winner = MONTHS[headline]
            drift = {a: (0.004 if a == winner else -0.002) for a in ASSETS}
            returns = {a: list(drift[a] + rng.normal(0, 0.004, HORIZON)) for a in ASSETS}
            client.settle(agent.id, plan.decision_id, returns=returns)
        written = credit.write_back()
        print(f"{N_MONTHS} months settled; values written back to {len(written.updated)} Mem0 memories")
        print(f"Mem0 memories ranked by measured value ({UTILITY_UNIT}), with P(v > 0) and uses:")
        for item in credit.ranked():
            measured = credit.measured(item)  # this agent's entry of the metadata's memtrial_values
            if measured is None:
                print(f"  (not measured)  {item['memory']}")
                continue
            print(
                f"  {format_utility(measured['value'])}  P {measured['p_positive']:.2f}  "
                f"uses {measured['uses']:2d}  {item['memory']}"
            )
        prune = credit.prune_candidates(p_positive_below=0.1, min_uses=5)
        print(f"prune candidates (P(v > 0) < 0.1 after 5+ uses): {len(prune)}")
        for item in prune:
            print(f"  {item['memory']}")


if __name__ == "__main__":
    main()
