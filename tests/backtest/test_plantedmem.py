"""PlantedMem and the backtest engine on small worlds (dev seeds only)."""

import json

import numpy as np
import pytest

from backtest.market import Market
from backtest.methods.registry import METHOD_IDS
from backtest.plantedmem import HORIZON, REGIMES, PlantedMemWorld
from backtest.runner import WorldSpec, market_for, run_many, run_world

PICKERS = [
    "no_memory",
    "all_four",
    "similarity_top2",
    "outcome_credit",
    "counterfactual_argmax",
    "uplift_credit",
    "finmem",
    "expel",
    "reflexion",
]


@pytest.fixture(scope="module")
def market():
    return Market.from_data()


def test_class_indices_start_at_one_and_dates_are_monthly(market):
    assert market.assets == ("equities", "bonds", "cash", "commodities")
    np.testing.assert_allclose(market.levels[0], 1.0)
    world = PlantedMemWorld(market, "beta_0.5", 0)
    assert world.n_dates == 139
    first, last = market.dates[world.sessions[0]], market.dates[world.sessions[-1]]
    assert (first.year, first.month, last.year, last.month) == (2015, 1, 2026, 7)
    assert min(np.diff(world.sessions)) == 19  # some outcomes are not yet known at the next decision


def test_world_plants_a_quarter_useful_and_a_quarter_misleading(market):
    world = PlantedMemWorld(market, "many_experiences", 3)
    assert sorted(np.bincount(world.types + 1).tolist()) == [12, 12, 24]
    assert (PlantedMemWorld(market, "noise_only", 3).types == 0).all()


def test_useful_pointers_hit_the_best_class_about_seventy_percent_plus_chance(market):
    world = PlantedMemWorld(market, "many_experiences", 1)
    growth = np.array([market.levels[s + HORIZON] / market.levels[s] for s in world.sessions])
    useful = world.types[world.retrieved] > 0
    hits = world.pointer_class[useful] == growth.argmax(axis=1)[:, None].repeat(4, axis=1)[useful]
    assert hits.mean() == pytest.approx(0.7 + 0.3 / 4, abs=0.06)


def test_same_seed_gives_the_same_world(market):
    first, second = PlantedMemWorld(market, "beta_0.25", 9), PlantedMemWorld(market, "beta_0.25", 9)
    np.testing.assert_array_equal(first.context(30).drafts, second.context(30).drafts)
    assert first.context(30).retrieved == second.context(30).retrieved


def test_without_influence_every_draft_picker_matches_no_memory_in_expectation(market):
    differences = {m: [] for m in PICKERS[1:]}
    for seed in range(8):
        result = run_world(WorldSpec("no_influence", "balanced", seed, methods=tuple(PICKERS)), market)["methods"]
        for method in differences:
            differences[method].extend(np.subtract(result[method]["utilities_pp"], result["no_memory"]["utilities_pp"]))
    for method, values in differences.items():
        standard_error = np.std(values, ddof=1) / np.sqrt(len(values))
        assert abs(np.mean(values)) < 3.5 * standard_error, method


def test_with_strong_influence_useful_experiences_get_positive_values_and_misleading_negative(market):
    by_type = {-1: [], 1: []}
    for seed in range(4):
        learned = run_world(WorldSpec("beta_0.5", "balanced", seed, methods=("memtrial",)), market)["learned_values"]
        for kind, value in zip(learned["types"], learned["values"], strict=True):
            if kind:
                by_type[kind].append(value)
    assert np.mean(by_type[1]) > 0 > np.mean(by_type[-1])


def test_oracle_beats_no_memory_when_memory_matters(market):
    gains = []
    for seed in range(4):
        result = run_world(WorldSpec("beta_0.5", "balanced", seed, methods=("no_memory", "oracle")), market)["methods"]
        gains.append(result["oracle"]["mean_utility_pp"] - result["no_memory"]["mean_utility_pp"])
    assert min(gains) > 0


def test_perturbing_an_outcome_changes_no_decision_made_before_it_matured(market):
    spec = WorldSpec(
        "beta_0.5",
        "balanced",
        2,
        methods=("memtrial", "memtrial_anytime", "outcome_credit", "hedge", "expel", "all_four_anchored"),
    )
    world = PlantedMemWorld(market, spec.regime, spec.seed)
    date = 40
    base = run_world(spec, market, keep_choices=True)["choices"]
    perturbed = run_world(spec, market, perturb=(date, 0, 1.25), keep_choices=True)["choices"]
    matured_by = next(i for i, s in enumerate(world.sessions) if s >= world.sessions[date] + HORIZON)
    for method in spec.methods:
        assert base[method][:matured_by] == perturbed[method][:matured_by], method
    assert any(base[m][matured_by:] != perturbed[m][matured_by:] for m in spec.methods)


def test_results_are_identical_with_one_and_two_workers_and_through_dask():
    from distributed import LocalCluster

    specs = [
        WorldSpec("beta_0.25", "aggressive", seed, methods=("memtrial", "outcome_credit", "oracle"))
        for seed in (0, 1, 2)
    ]
    one = run_many(specs, workers=1)
    two = run_many(specs, workers=2)
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},  # no fixed 8787 across workers
    ) as cluster:
        dask = run_many(specs, scheduler=cluster.scheduler_address)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True) == json.dumps(dask, sort_keys=True)


def test_every_registered_method_runs_on_a_synthetic_market():
    result = run_world(WorldSpec("informative_content", "conservative", 0, synthetic_market=True))
    assert set(result["methods"]) == set(METHOD_IDS)
    assert all(np.isfinite(m["mean_utility_pp"]) for m in result["methods"].values())
    assert (
        result["methods"]["memtrial"]["open_rate"] is not None
        and result["methods"]["equal_weight"]["open_rate"] is None
    )


def test_regime_ids_are_the_seven_of_the_specification():
    assert list(REGIMES) == [
        "no_influence",
        "noise_only",
        "beta_0.1",
        "beta_0.25",
        "beta_0.5",
        "many_experiences",
        "informative_content",
    ]


def test_informative_content_draws_worlds_of_its_own_not_copies_of_many_experiences():
    from backtest.plantedmem import PlantedMemWorld

    market = market_for(True)
    many, informative = (
        PlantedMemWorld(market, "many_experiences", 3),
        PlantedMemWorld(market, "informative_content", 3),
    )
    assert not np.array_equal(many.types, informative.types)
    assert not np.array_equal(many.retrieved, informative.retrieved)
    assert not np.array_equal(many.drafts, informative.drafts)
    again = PlantedMemWorld(market, "informative_content", 3)
    assert np.array_equal(again.drafts, informative.drafts)  # still one world per seed


def test_anchored_baselines_follow_the_running_mixture_of_their_own_proposals(market):
    """The batch anchoring equals the closed action run date by date: each matured date adds the
    utilities of the 201 mixtures of the reference and the baseline's proposal, in maturity order."""
    from backtest.methods.base import Scoring, Walk
    from backtest.methods.registry import build_methods
    from memtrial.action.fallback import GRID, AnchoredMixture
    from memtrial.outcomes.mandates import INVESTORS, mixture_utilities

    world = PlantedMemWorld(market, "beta_0.5", 3)
    scoring = Scoring(gamma=INVESTORS["balanced"].gamma)
    contexts = [world.context(d) for d in range(world.n_dates)]
    walk = Walk(contexts, [world.outcome(c.index) for c in contexts], scoring)
    methods = {
        m.id: m
        for m in build_methods(
            world,
            scoring,
            3,
            ["outcome_credit", "outcome_credit_anchored", "all_four_anchored"],
            contexts=contexts,
            outcome=lambda p: walk.rels[p],
        )
    }
    for base_id in ("outcome_credit", "all_four"):
        proposals = walk.trajectory(methods[base_id]).weights if base_id in methods else None
        anchored = walk.trajectory(methods[base_id + "_anchored"]).weights
        if proposals is None:
            proposals = walk.trajectories[(base_id, False)].weights
        mixture = AnchoredMixture("ftrl")
        for kind, position in walk.events:
            context = contexts[position]
            if kind == "decide":
                q = mixture.choose()
                assert np.array_equal(anchored[position], q * context.reference + (1 - q) * proposals[position])
            else:
                grid = mixture_utilities(
                    context.reference,
                    proposals[position],
                    walk.rels[position],
                    context.previous,
                    scoring.gamma,
                    scoring.fee_bp,
                    GRID,
                )
                mixture.update(grid, float(grid[-1]), float(grid[0]))
        assert mixture.n_updates == len(contexts)


def test_worlds_of_one_calendar_reuse_a_world_and_give_what_a_fresh_world_gives(market):
    """A process keeps the world (and its learners' eigendecompositions) between the investors of
    one (regime, seed); every result equals a run on a freshly built world."""
    from dataclasses import replace

    spec = WorldSpec(
        "many_experiences",
        "conservative",
        4,
        methods=("equal_weight", "memtrial", "memtrial_content", "finmem_anchored"),
    )
    for investor in ("conservative", "aggressive", "conservative"):
        cached = run_world(replace(spec, investor=investor), keep_choices=True)
        fresh = run_world(replace(spec, investor=investor), market=market_for(False), keep_choices=True)
        assert (
            cached["choices"] == fresh["choices"]
            and cached["methods"] == fresh["methods"]
            and cached["values"] == fresh["values"]
        )


def test_the_wider_retrieval_extends_the_top_four_and_their_drafts(market):
    world = PlantedMemWorld(market, "beta_0.25", 5)
    for date in (12, 80):
        context = world.context(date)
        assert len(context.wide_retrieved) == world.wide == 7 and context.wide_retrieved[:4] == context.retrieved
        assert context.wide_drafts is not None and context.wide_drafts.shape == (128, 4)
        np.testing.assert_array_equal(context.wide_drafts[:16], context.drafts)  # what every other method sees
        np.testing.assert_allclose(context.wide_drafts.sum(axis=1), 1.0)
    # the pointers of ranks 5 to 7 follow the same rule as the top four's
    wide = PlantedMemWorld(market, "many_experiences", 1)
    np.testing.assert_array_equal(wide.wide_pointer_class[:, :4], wide.pointer_class)
    useful = wide.types[wide.wide_retrieved[:, 4:]] > 0
    best = np.array([market.levels[s + HORIZON] / market.levels[s] for s in wide.sessions]).argmax(axis=1)
    hits = wide.wide_pointer_class[:, 4:][useful] == np.repeat(best[:, None], 3, axis=1)[useful]
    assert hits.mean() == pytest.approx(0.7 + 0.3 / 4, abs=0.08)


def test_a_budget_screens_the_wider_retrieval_in_the_saturated_design(market):
    from backtest.methods.base import Scoring
    from backtest.methods.registry import memtrial_config
    from memtrial.credit.design import DesignKind
    from memtrial.outcomes.mandates import INVESTORS

    world, scoring = PlantedMemWorld(market, "beta_0.25", 5), Scoring(gamma=INVESTORS["balanced"].gamma)
    budget = memtrial_config("memtrial_budget_3", world, scoring)
    assert (budget.design, budget.k, budget.draft_horizon) == (DesignKind.SATURATED, 7, world.presented)
    assert memtrial_config("memtrial", world, scoring, draft_budget=3.0).k == 7  # --draft-budget: the same rule
    whole = memtrial_config("memtrial", world, scoring)
    assert (whole.design, whole.k) == (DesignKind.FOLD, 4)
