"""PlantedForecast: scored decisions with planted experiences and a known truth.

An agent forecasts a question with three outcomes on each of 150 dates and is
scored by the Brier rule when the question resolves (utility = minus the Brier
score). It keeps M = 12 experiences: a quarter useful, half neutral, a quarter
misleading. On each date a useful (misleading) experience points, with
probability 0.7, at the outcome that will happen (at one that will not),
otherwise at a random outcome; a neutral one always points at a random outcome.
Each date's true outcome probabilities p* are Dirichlet(2, 2, 2) and the outcome
is drawn from them. The memory-free forecaster knows p* only roughly: its
forecast is Dirichlet(8 p*). The draft for subset S is
``(1 - beta) * base + beta * mean(one-hot pointers of S)`` with a fresh base
each time (beta = 0.3). Four of the M experiences are retrieved per date, at
random. The first 12 dates are not scored.

Methods: ``memtrial`` (the trust dial, raw credit, anytime e-process),
``memtrial_paper`` (the paper's rule: prequential gate, centred values), both
run through the library engine as scored decisions (``decide_scored`` with
probability vectors, ``settle_scored`` with the Brier rule); ``no_memory``
(the empty subset's forecast), ``all_four``, ``draft_mean`` (the eight designed
forecasts averaged), ``outcome_credit`` (the two retrieved experiences with the
best running mean of the utility of the forecasts they were used in, 10%
exploration), ``counterfactual_argmax`` (the two with the best mean same-day
contrast, no gate) and the ``oracle`` (knows the types).

    memtrial backtest forecast --seeds 15-114 --workers 2 --out runs/forecast
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from backtest.methods.base import without_quarantined
from backtest.methods.registry import FORECAST_METHODS
from backtest.report import seeds_label
from memtrial.action.budget import budget_gate
from memtrial.action.fallback import FallbackVariant
from memtrial.credit.banzhaf import contributions
from memtrial.credit.design import half_fraction
from memtrial.engine.config import PAPER_RULE, SCORED_DESIGN, default_setting
from memtrial.engine.lifecycle import EngineConfig, MemTrial
from memtrial.outcomes.scoring import score

__all__ = ["FORECAST_METHODS", "ForecastWorld", "run_forecast_world", "run_forecasts"]

K, M, DATES, UNSCORED, OUTCOMES, BETA = 4, 12, 150, 12, 3, 0.3
HALF = half_fraction(K)
DISPLAY = {
    "memtrial": "MemTrial (trust dial)",
    "memtrial_paper": "MemTrial: paper's rule",
    "no_memory": "No memory",
    "all_four": "All 4 experiences",
    "draft_mean": "Draft mean (8 designed)",
    "outcome_credit": "Outcome credit top-2",
    "counterfactual_argmax": "Counterfactual argmax top-2 (no gate)",
    "oracle": "Oracle (knows the types; not ranked)",
    "memtrial_budget_2": "MemTrial at a budget of 2 calls",
    "memtrial_budget_3": "MemTrial at a budget of 3 calls",
    "memtrial_budget_4": "MemTrial at a budget of 4 calls",
}
# LLM draft calls per decision of the methods that do not count their own (method 4.11)
DRAFT_CALLS = {
    "no_memory": 1,
    "all_four": 1,
    "draft_mean": 8,
    "outcome_credit": 1,
    "counterfactual_argmax": 8,
    "oracle": 1,
}
# the world drafts the even half, whose memory-free draft is a scored decision's reference; the dial's closed
# share stays the learnt mixture, and the plain estimator, that these results were measured with
SCORED = {"design": SCORED_DESIGN, "fallback": FallbackVariant.FTRL, "robust": False}
CONFIGS = {
    "memtrial": EngineConfig(gamma=0.0, diagnostics=False, **SCORED),  # type: ignore[arg-type]
    "memtrial_paper": EngineConfig(gamma=0.0, diagnostics=False, **PAPER_RULE),
    **{
        f"memtrial_budget_{budget}": EngineConfig(
            gamma=0.0,
            gate=budget_gate(default_setting("gate"), float(budget)),
            diagnostics=False,
            draft_budget=float(budget),
            draft_horizon=DATES,
            **SCORED,  # type: ignore[arg-type]
        )
        for budget in (2, 3, 4)
    },
}


@dataclass(frozen=True)
class ForecastWorld:
    """Every draw of one world, made up front (common random numbers for every method)."""

    types: NDArray[np.int_]
    retrieved: NDArray[np.int_]  # (dates, K)
    outcome: NDArray[np.int_]  # (dates,)
    drafts: NDArray[np.float64]  # (dates, 16, OUTCOMES): the forecast of every subset mask

    @classmethod
    def make(cls, seed: int) -> ForecastWorld:
        kinds, retrieval, truth, drafting = (
            np.random.default_rng(s) for s in np.random.SeedSequence([seed, 7]).spawn(4)
        )
        types = kinds.permutation(np.array([1] * (M // 4) + [0] * (M - 2 * (M // 4)) + [-1] * (M // 4)))
        retrieved = np.array([retrieval.choice(M, size=K, replace=False) for _ in range(DATES)])
        p_star = truth.dirichlet(np.full(OUTCOMES, 2.0), size=DATES)
        outcome = np.array([truth.choice(OUTCOMES, p=p) for p in p_star])
        informed = truth.random(size=(DATES, K)) < 0.7
        random_pick = truth.integers(0, OUTCOMES, size=(DATES, K))
        wrong = (outcome[:, None] + truth.integers(1, OUTCOMES, size=(DATES, K))) % OUTCOMES
        kind = types[retrieved]
        target = np.where(kind > 0, outcome[:, None], wrong)
        pointer = np.where((kind != 0) & informed, target, random_pick)
        onehot = np.eye(OUTCOMES)[pointer]  # (dates, K, OUTCOMES)
        drafts = np.zeros((DATES, 16, OUTCOMES))
        for mask in range(16):
            members = [j for j in range(K) if mask >> j & 1]
            base = np.array([drafting.dirichlet(8.0 * p + 1e-3) for p in p_star])
            drafts[:, mask] = base if not members else (1.0 - BETA) * base + BETA * onehot[:, members].mean(axis=1)
        return cls(types, retrieved, outcome, drafts)


def _pair(scores: Sequence[float]) -> int:
    """Mask of the two best of four scores (ties: retrieval rank)."""
    first, second = sorted(sorted(range(K), key=lambda j: (-scores[j], j))[:2])
    return (1 << first) | (1 << second)


def run_forecast_world(seed: int, methods: Sequence[str] = FORECAST_METHODS) -> dict[str, Any]:
    """Mean utility (minus Brier, per scored date) of each method in one world, and MemTrial's value recovery."""
    world = ForecastWorld.make(seed)
    engines = {m: MemTrial(CONFIGS[m]) for m in methods if m in CONFIGS}
    for engine in engines.values():
        for experience in range(M):
            engine.add_experience(experience)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 8]))
    credit: dict[int, list[float]] = {}
    contrast: dict[int, list[float]] = {}
    utilities: dict[str, list[float]] = {m: [] for m in methods}
    trust: dict[str, list[float]] = {m: [] for m in engines}
    calls: dict[str, list[int]] = {m: [] for m in engines}
    for t in range(DATES):
        ids = [int(e) for e in world.retrieved[t]]
        outcome = int(world.outcome[t])
        all_scores = score("brier", outcome, vectors=world.drafts[t])  # every mask's forecast scored once
        chosen: dict[str, float] = {}
        for method, engine in engines.items():
            kept, drafts = without_quarantined(ids, world.drafts[t], engine.quarantined)  # type: ignore[arg-type]
            plan = engine.plan(f"q{t}", t, t + 1, retrieved=list(kept), kind="scored")
            decision = engine.decide_scored(plan.decision_id, vectors=drafts[list(plan.masks)])
            calls[method].append(plan.draft_calls)
            settlement = engine.settle_scored(plan.decision_id, outcome=outcome, rule="brier")
            assert settlement.chosen_utility is not None
            chosen[method] = settlement.chosen_utility
            trust[method].append(
                decision.dial.trust_weight if decision.dial is not None else float(decision.trust.is_open)
            )
        mean_u = float(score("brier", outcome, vectors=world.drafts[t][HALF].mean(axis=0)[None])[0])
        credit_scores = [float(np.mean(credit[e])) if e in credit else 0.0 for e in ids]
        pick = _pair(credit_scores) if rng.random() >= 0.1 else _pair([float(v) for v in rng.random(K)])
        argmax_pair = _pair([float(np.mean(contrast[e])) if e in contrast else 0.0 for e in ids])
        oracle_values = [sum(int(world.types[ids[j]]) for j in range(K) if mask >> j & 1) for mask in HALF]
        oracle_mask = HALF[int(np.argmax(oracle_values))] if max(oracle_values) > 0 else 0
        chosen.update(
            no_memory=float(all_scores[0]),
            all_four=float(all_scores[15]),
            draft_mean=mean_u,
            outcome_credit=float(all_scores[pick]),
            counterfactual_argmax=float(all_scores[argmax_pair]),
            oracle=float(all_scores[oracle_mask]),
        )
        for experience in (ids[j] for j in range(K) if pick >> j & 1):
            credit.setdefault(experience, []).append(float(all_scores[pick]))
        for experience, value in zip(ids, contributions(all_scores[HALF], HALF, K), strict=True):
            contrast.setdefault(experience, []).append(float(value))
        if t >= UNSCORED:
            for method in methods:
                utilities[method].append(chosen[method])
    recovery = None
    if "memtrial" in engines:
        values = engines["memtrial"].values()
        learned = np.array([values.get(e, 0.0) for e in range(M)])
        from backtest.runner import _spearman

        recovery = _spearman(learned, world.types.astype(float))
    return {
        "seed": seed,
        "methods": {
            m: {
                "mean_utility": float(np.mean(utilities[m])),
                "trust": None if m not in trust else float(np.mean(trust[m][UNSCORED:])),
                "draft_calls_per_decision": float(np.mean(calls[m])) if m in calls else float(DRAFT_CALLS[m]),
            }
            for m in methods
        },
        "value_recovery": recovery,
    }


def run_forecasts(
    seeds: Sequence[int], workers: int = 1, methods: Sequence[str] = FORECAST_METHODS
) -> tuple[list[dict[str, Any]], float]:
    """Every seed's world (in worker processes when workers > 1); returns the results and the wall seconds."""
    started = time.perf_counter()
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(run_forecast_world, seeds, [tuple(methods)] * len(seeds)))
    else:
        results = [run_forecast_world(seed, methods) for seed in seeds]
    return results, time.perf_counter() - started


def forecast_report(
    results: Sequence[dict[str, Any]], seeds: Sequence[int], wall: float, command: str
) -> tuple[dict[str, Any], str]:
    """results.json document and results.md table."""
    methods = list(results[0]["methods"])
    summary = {}
    for method in methods:
        per_seed = [r["methods"][method]["mean_utility"] for r in results]
        trust_values = [r["methods"][method]["trust"] for r in results if r["methods"][method]["trust"] is not None]
        summary[method] = {
            "mean_utility": float(np.mean(per_seed)),
            "sd_over_seeds": float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else 0.0,
            "per_seed": per_seed,
            "trust": float(np.mean(trust_values)) if trust_values else None,
            "draft_calls_per_decision": float(
                np.mean([r["methods"][method]["draft_calls_per_decision"] for r in results])
            ),
        }
    recoveries = [r["value_recovery"] for r in results if r["value_recovery"] is not None]
    document = {
        "env": "forecast",
        "seeds": list(seeds),
        "wall_seconds": wall,
        "methods": summary,
        "value_recovery": float(np.mean(recoveries)) if recoveries else None,
    }
    lines = [
        f"# PlantedForecast results ({seeds_label(seeds)})",
        "",
        f"Command: `{command}`  ",
        f"Wall time: {wall:.0f} s on this machine.",
        "",
        "Scored decisions: three-outcome forecasts scored by the Brier rule; utility is minus the Brier score per scored",
        "question (higher is better; 0 is a perfect forecast). Mean over seeds ± sd over seeds.",
        "",
        "Calls: the LLM draft calls per decision the method causes, drafts made only to learn included.",
        "",
        "| rank | method | mean utility (-Brier) | trust (mean dial weight / share of dates open) | calls |",
        "|---:|---|---:|---:|---:|",
    ]
    rank = 0
    for method in sorted(methods, key=lambda m: -float(summary[m]["mean_utility"])):  # type: ignore[arg-type]
        label = "-" if method == "oracle" else str(rank := rank + 1)
        cell = summary[method]
        trust_text = "" if cell["trust"] is None else f"{cell['trust']:.2f}"
        lines.append(
            f"| {label} | {DISPLAY.get(method, method)} | {cell['mean_utility']:.4f} ± {cell['sd_over_seeds']:.4f} | {trust_text} "
            f"| {cell['draft_calls_per_decision']:.2f} |"
        )
    if document["value_recovery"] is not None:
        lines += [
            "",
            f"MemTrial's value recovery (rank correlation of learned values with the true types): {document['value_recovery']:.3f}.",
        ]
    return document, "\n".join(lines) + "\n"
