"""PlantedMem's curation regimes (``poisoned``, ``drift``), the retrieval every context offers, the curation
baselines and every curation figure on a tiny case computed by hand (method 5)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from backtest.methods.base import Scoring
from backtest.methods.retrieval import Q_LEARNING_RATE, OracleRetrieval, QRetrieval
from backtest.plantedmem import CURATION_REGIMES, HORIZON, REGIMES, PlantedMemWorld
from backtest.report import _curation_summary
from backtest.runner import WorldSpec, curation_metrics, market_for, run_world

ROOT = Path(__file__).resolve().parents[2]
WORLD_ONLY = ("all_four", "similarity_top2", "self_consistency", "oracle")  # figures that depend on the world alone


@pytest.fixture(scope="module")
def market():
    return market_for(False)


def test_the_paper_regimes_committed_results_are_unchanged_bit_for_bit(market):
    committed = json.loads((ROOT / "docs/results/plantedmem/results.json").read_text())
    seeds = committed["seeds"]
    for regime in ("beta_0.25", "many_experiences", "informative_content"):
        result = run_world(WorldSpec(regime, "balanced", seeds[0], methods=WORLD_ONLY), market)["methods"]
        for method in WORLD_ONLY:
            assert (
                result[method]["mean_utility_pp"] == committed["investors"]["balanced"][regime][method]["per_seed"][0]
            )


@pytest.mark.parametrize("regime", [*REGIMES, *CURATION_REGIMES])
def test_any_retrieval_drafts_on_the_dates_bases_so_the_worlds_own_retrieval_gives_its_drafts(market, regime):
    world = PlantedMemWorld(market, regime, 2)
    rows = np.arange(world.n_dates)[:, None]
    np.testing.assert_array_equal(world.pointer_all[rows, world.retrieved], world.pointer_class)
    beta = world.regime.beta
    for date in (0, 45, 100):
        context = world.context(date)
        np.testing.assert_array_equal(context.draft_for(context.retrieved), context.drafts)
        np.testing.assert_allclose(context.draft_for(context.wide_retrieved), context.wide_drafts, atol=1e-15)
        other = tuple(reversed(context.candidates[-3:]))  # any retrieval: mask m tilts base m by its members' pointers
        drafts = context.draft_for(other)
        np.testing.assert_array_equal(drafts[0], world.bases[date, 0])
        members = [world.pointer_all[date, e] for e in (other[0], other[2])]
        pointer = np.eye(world.n_assets)[members].mean(axis=0)
        np.testing.assert_allclose(drafts[0b101], (1 - beta) * world.bases[date, 0b101] + beta * pointer, atol=1e-15)
        assert context.retrieved == tuple(
            context.candidates[i] for i in np.argsort(-context.candidate_scores, kind="stable")[:4]
        )


def test_poisoned_experiences_arrive_at_the_40th_decision_score_high_and_point_at_the_worst_class(market):
    hits, boosts = [], []
    for seed in range(3):
        world = PlantedMemWorld(market, "poisoned", seed)
        event, poisoned = world.event, [int(e) for e in world.poisoned]
        assert event == 39 and poisoned == [48, 49, 50, 51] and (world.types[poisoned] == -1).all()
        assert world.features.shape == (48, 8)
        assert not set(poisoned) & set(world.context(event - 1).candidates)
        assert world.context(event - 1).added == ()
        assert [e for e, _ in world.context(event).added] == poisoned
        assert set(poisoned) <= set(world.context(event).candidates) and len(world.context(event).candidates) == 52
        growth = np.array([market.levels[s + HORIZON] / market.levels[s] for s in world.sessions])
        hits.append(world.pointer_all[event:, poisoned] == growth.argmin(axis=1)[event:, None])
        home = np.isfinite(world.scores[event:, poisoned])
        assert home.all()
        boosts.append(world.scores[event:, poisoned].mean() - world.scores[event:, :48].mean())
    assert np.mean(np.concatenate(hits)) == pytest.approx(0.9 + 0.1 / 4, abs=0.04)
    assert np.mean(boosts) == pytest.approx(1.0, abs=0.15)


def test_drift_swaps_useful_and_misleading_at_the_60th_decision(market):
    world = PlantedMemWorld(market, "drift", 4)
    assert world.event == 59
    np.testing.assert_array_equal(world.type_by_date[:59], np.repeat(world.types[None], 59, axis=0))
    np.testing.assert_array_equal(world.type_by_date[59:], -np.repeat(world.types[None], world.n_dates - 59, axis=0))
    growth = np.array([market.levels[s + HORIZON] / market.levels[s] for s in world.sessions])
    useful = np.flatnonzero(world.types > 0)
    before = world.pointer_all[:59, useful] == growth.argmax(axis=1)[:59, None]
    after = world.pointer_all[59:, useful] == growth.argmin(axis=1)[59:, None]
    assert before.mean() > 0.6 and after.mean() > 0.6


def test_curation_worlds_are_drawn_up_front_and_repeat_exactly(market):
    first, second = PlantedMemWorld(market, "poisoned", 5), PlantedMemWorld(market, "poisoned", 5)
    for name in ("pointer_all", "scores", "bases", "drafts", "type_by_date"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))
    assert not np.array_equal(first.types[:48], PlantedMemWorld(market, "many_experiences", 5).types)


def _context(index, retrieved, scored=True):
    return SimpleNamespace(index=index, scored=scored, retrieved=retrieved)


def test_every_curation_figure_on_a_tiny_case_by_hand():
    # five decisions, the event at position 2, poisoned experiences 5 and 6; the first decision unscored
    world = SimpleNamespace(event=2, poisoned=np.array([5, 6]), type_by_date=np.array([[1, 0, -1, 0, 0, -1, -1]] * 5))
    presented = [_context(p, (0, 1, 2, 3), scored=p > 0) for p in range(5)]
    utilities = [1.0, 2.0, 4.0, 8.0]  # the scored decisions 1..4
    retrievals = [(0, 1, 2, 3), (0, 1, 2, 3), (5, 6, 0, 1), (5, 0, 1, 2), (0, 1, 2, 3)]
    method = SimpleNamespace(
        id="memtrial_curated",
        retrievals=retrievals,
        quarantines=[(6, 2), (2, 3), (5, 3)],
        quarantining=True,
    )
    out = curation_metrics(world, method, presented, utilities)
    assert out["mean_utility_after_event_pp"] == pytest.approx((2.0 + 4.0 + 8.0) / 3)
    assert out["poison_retrieved_share"] == pytest.approx(3 / 12)
    assert out["false_quarantine"] is False  # 2, 5 and 6 were harmful when quarantined
    assert out["quarantine_delay"] == 3 + 1 - 2  # the last poisoned one goes at decision 3's settlement
    wrong = SimpleNamespace(**{**vars(method), "quarantines": [(5, 2), (1, 3)]})  # 1 is neutral: a false one
    out = curation_metrics(world, wrong, presented, utilities)
    assert out["false_quarantine"] is True and out["quarantine_delay"] == 5 - 2  # 6 never: the decisions left
    plain = SimpleNamespace(id="no_memory")  # no retrieval of its own, not a MemTrial variant: utility only
    assert curation_metrics(world, plain, presented, utilities) == {
        "mean_utility_after_event_pp": pytest.approx(14 / 3)
    }
    replayed = SimpleNamespace(id="memtrial_similarity", quarantining=False)  # the world's four
    assert curation_metrics(world, replayed, presented, utilities)["poison_retrieved_share"] == 0.0
    # a replayed variant retrieving seven (a budget's saturated design) takes the world's wider retrieval
    wide = [SimpleNamespace(**{**vars(c), "wide_retrieved": (0, 1, 2, 3, 5, 6, 4)}) for c in presented]
    assert curation_metrics(world, replayed, wide, utilities, 7)["poison_retrieved_share"] == pytest.approx(6 / 21)
    assert curation_metrics(world, replayed, wide, utilities, 4)["poison_retrieved_share"] == 0.0


def test_a_budgeted_replayed_variant_reports_the_share_of_the_retrieval_it_drafts_as_an_online_engine_does(market):
    spec = {
        "regime": "poisoned",
        "investor": "balanced",
        "seed": 3,
        "methods": ("memtrial_similarity",),
        "draft_budget": 3.0,
    }
    replay = run_world(WorldSpec(**spec), market)["methods"]["memtrial_similarity"]
    online = run_world(WorldSpec(**spec, engine="online"), market)["methods"]["memtrial_similarity"]
    assert replay["poison_retrieved_share"] == online["poison_retrieved_share"]
    assert replay["mean_utility_pp"] == pytest.approx(online["mean_utility_pp"])


def test_curation_summary_means_rates_and_the_median_delay():
    worlds = [
        {"methods": {"m": {"false_quarantine": f, "quarantine_delay": d, "poison_retrieved_share": s}}}
        for f, d, s in [(False, 10.0, 0.5), (True, 30.0, 0.25), (False, 100.0, 0.0)]
    ]
    summary = _curation_summary(worlds, "m")
    assert summary["false_quarantine_rate"] == pytest.approx(1 / 3)
    assert summary["quarantine_delay"] == 30.0
    assert summary["poison_retrieved_share"] == pytest.approx(0.25)
    assert summary["quarantine_delay_per_seed"] == [10.0, 30.0, 100.0]


def _offer(index, candidates, scores, n_assets=4):
    def draft_for(retrieved):
        return np.array([np.full(n_assets, float(m)) for m in range(1 << len(retrieved))])

    return SimpleNamespace(
        index=index,
        candidates=tuple(candidates),
        candidate_scores=np.asarray(scores, dtype=float),
        draft_for=draft_for,
        reference=np.full(n_assets, -1.0),
    )


def test_q_retrieval_credits_every_retrieved_experience_with_the_whole_outcome():
    method = QRetrieval(Scoring(gamma=5.0), k=2)
    weights = method.decide(_offer(0, [7, 8, 9], [3.0, 2.0, 1.0]))
    assert method.retrievals == [(7, 8)] and weights[0] == 3.0  # the draft of both (mask 0b11)
    method.observe(SimpleNamespace(context=SimpleNamespace(index=0)), weights, 0.02)
    assert method.q == {7: pytest.approx(Q_LEARNING_RATE * 2.0), 8: pytest.approx(Q_LEARNING_RATE * 2.0)}
    # equal similarity: the Q-values decide
    method.decide(_offer(1, [9, 8], [1.0, 1.0]))
    assert method.retrievals[1] == (8, 9)


def test_oracle_retrieval_takes_useful_experiences_first_and_acts_on_them():
    types = np.array([[0, 1, -1, 1, 0]])
    method = OracleRetrieval(Scoring(gamma=5.0), types, k=3)
    weights = method.decide(_offer(0, [0, 1, 2, 3, 4], [5.0, 1.0, 9.0, 2.0, 4.0]))
    assert method.retrievals == [(3, 1, 0)] and weights[0] == 0b011
    none_useful = OracleRetrieval(Scoring(gamma=5.0), np.array([[0, -1]]), k=2)
    assert none_useful.decide(_offer(0, [0, 1], [1.0, 2.0]))[0] == -1.0  # the reference


def test_the_oracle_acts_on_the_types_in_force_after_a_drift(market):
    """The oracle knows the types on every date: after the drift it acts on the lessons that became useful,
    where it had gone on acting on the old ones (0.315 pp after the drift against no memory's 0.639, seeds 0-2,
    balanced). Before the drift it acts as on the types it was drawn with."""
    from backtest.methods.base import HALF
    from backtest.methods.memtrial_methods import Oracle
    from backtest.methods.registry import FACTORIES

    scoring = Scoring(gamma=5.0)
    world = PlantedMemWorld(market, "drift", 1)
    oracle = FACTORIES["oracle"](world, scoring, 1)
    stale = Oracle(scoring, np.repeat(world.types[None], world.n_dates, axis=0))
    acted, stale_misled = 0, 0
    for date in range(world.n_dates):
        context = world.context(date)
        played, old = oracle.decide(context), stale.decide(context)
        if date < world.event:
            np.testing.assert_array_equal(played, old)
            continue
        kinds = world.type_by_date[date][list(context.retrieved)]
        for weights, is_stale in ((played, False), (old, True)):
            subsets = [m for m in HALF if np.array_equal(weights, context.drafts[m])]
            if not subsets or np.array_equal(weights, context.reference):
                continue
            members = [j for j in range(4) if subsets[0] >> j & 1]
            if is_stale:
                stale_misled += any(kinds[j] < 0 for j in members)
            else:
                acted += 1
                assert sum(kinds[j] for j in members) > 0 and all(kinds[j] >= 0 for j in members), date
    assert acted > 10 and stale_misled > 10  # it acts after the drift; on the old types it would act misled


def _false_quarantine(regime: str, seed: int, level: float) -> bool:
    """Whether value-aware retrieval with quarantine at ``level`` wrongly quarantined anything in one world."""
    import dataclasses

    from backtest.methods.base import Walk
    from backtest.methods.memtrial_methods import MemTrialMethod
    from backtest.methods.registry import memtrial_config
    from memtrial.outcomes.mandates import INVESTORS

    world = PlantedMemWorld(market_for(False), regime, seed)
    scoring = Scoring(gamma=INVESTORS["balanced"].gamma)
    config = memtrial_config("memtrial_curated", world, scoring)
    config = dataclasses.replace(config, quarantine=dataclasses.replace(config.quarantine, level=level))
    presented = [world.context(date) for date in range(world.n_dates)]
    walk = Walk(presented, [world.outcome(c.index) for c in presented], scoring)
    method = MemTrialMethod(scoring, "memtrial_curated", config, world.features)
    walk.trajectory(method)
    return bool(
        curation_metrics(world, method, presented, [0.0] * sum(c.scored for c in presented))["false_quarantine"]
    )


@pytest.mark.slow  # Monte Carlo through the engine, in PlantedMem's null worlds
def test_false_quarantine_probability_stays_within_level_in_planted_null_worlds():
    # level 0.2 (so the check could fail); 2 x 30 worlds: 3 binomial sds above 0.2 is 0.355
    level, seeds = 0.2, range(200, 230)
    wrong = [_false_quarantine(regime, seed, level) for regime in ("no_influence", "noise_only") for seed in seeds]
    assert np.mean(wrong) <= level + 3 * np.sqrt(level * (1 - level) / len(wrong))
