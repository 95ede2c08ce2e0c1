"""PlantedMem: the variants whose plans follow their own state, walked by a cohort against one online engine each.

In one run, on the same worlds (``--regimes``, the balanced investor, seeds 0..N-1), for each variant of
``--methods`` (by default the default ``memtrial``, value-aware retrieval with quarantine over the whole design;
``memtrial_budget_3``; quarantine over similarity retrieval): the CPU seconds of the worlds walked by one
:class:`~memtrial.engine.lifecycle.MemTrial` engine each and of the same worlds walked by one
:class:`~backtest.methods.cohort.Cohort` (every world at once), their ratio, and whether every world's weights,
gate states, values, retrievals, quarantines and draft calls are identical. CPU seconds of this process
(``time.process_time``), the two arms run one after the other.

    python benchmarks/bench_cohort.py --out benchmarks/results/cohort.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import time

import numpy as np

from backtest.methods.base import Scoring, Walk
from backtest.methods.cohort import Cohort, Lane
from backtest.methods.memtrial_methods import MemTrialMethod
from backtest.methods.registry import memtrial_config
from backtest.plantedmem import PlantedMemWorld
from backtest.runner import market_for
from memtrial.outcomes.mandates import INVESTORS

ROOT = pathlib.Path(__file__).resolve().parent.parent


def worlds(regime: str, seeds: range, scoring: Scoring) -> list[tuple[PlantedMemWorld, Walk, Lane]]:
    out = []
    for seed in seeds:
        world = PlantedMemWorld(market_for(False), regime, seed)
        contexts = [c for c in (world.context(date) for date in range(world.n_dates)) if c is not None]
        rels = [np.asarray(world.outcome(c.index)) for c in contexts]
        out.append((world, Walk(contexts, rels, scoring, None), Lane(contexts, rels.__getitem__, world.features)))
    return out


def compare(method_id: str, walked: list[tuple[PlantedMemWorld, Walk, Lane]], scoring: Scoring) -> dict[str, object]:
    config = memtrial_config(method_id, walked[0][0], scoring)
    start = time.process_time()
    online = []
    for world, walk, _ in walked:
        method = MemTrialMethod(scoring, method_id, config, world.features)
        online.append((method, method.trajectory(walk)))
    online_s = time.process_time() - start
    start = time.process_time()
    cohort = Cohort({method_id: config}, scoring, [lane for _, _, lane in walked])
    members = cohort.members(method_id)
    walks = [member.trajectory(walk) for member, (_, walk, _) in zip(members, walked, strict=True)]
    cohort_s = time.process_time() - start
    identical = all(
        np.array_equal(np.asarray(a.weights), np.asarray(b.weights))
        and np.array_equal(a.opens, b.opens)
        and np.array_equal(a.statistics, b.statistics, equal_nan=True)
        and np.array_equal(a.trust_weights, b.trust_weights, equal_nan=True)
        and engine.values() == member.values()
        and engine.retrievals == member.retrievals
        and engine.quarantines == member.quarantines
        and engine.draft_calls(8) == member.draft_calls(8)
        for (engine, a), b, member in zip(online, walks, members, strict=True)
    )
    return {
        "worlds": len(walked),
        "online_cpu_s": online_s,
        "cohort_cpu_s": cohort_s,
        "online_ms_per_world": 1e3 * online_s / len(walked),
        "cohort_ms_per_world": 1e3 * cohort_s / len(walked),
        "online_over_cohort": online_s / cohort_s,
        "identical_results": identical,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "cohort.json")
    parser.add_argument("--worlds", type=int, default=8, help="seeds per regime (the worlds a cohort walks at once)")
    parser.add_argument("--regimes", default="beta_0.25,many_experiences,poisoned")
    parser.add_argument("--methods", default="memtrial,memtrial_budget_3,memtrial_quarantine")
    args = parser.parse_args()
    market_for(False)
    scoring = Scoring(gamma=INVESTORS["balanced"].gamma)
    rows = []
    for regime in args.regimes.split(","):
        walked = worlds(regime, range(args.worlds), scoring)
        for method_id in args.methods.split(","):
            row = {"regime": regime, "method": method_id, **compare(method_id, walked, scoring)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    result = {
        "benchmark": "plantedmem: cohorts against one online engine per world",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "| regime | method | worlds | online ms/world | cohort ms/world | online / cohort | identical |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['regime']} | {row['method']} | {row['worlds']} | {row['online_ms_per_world']:.1f} | "
            f"{row['cohort_ms_per_world']:.1f} | {row['online_over_cohort']:.1f}x | {row['identical_results']} |"
        )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
