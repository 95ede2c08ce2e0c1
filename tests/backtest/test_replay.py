"""The batch replay of a world gives every MemTrial variant exactly what its own online engine gives."""

import dataclasses
from dataclasses import replace

import pytest

from backtest.methods.registry import MEMTRIAL_VARIANTS
from backtest.methods.replay import replays
from backtest.plantedmem import REGIMES
from backtest.runner import WorldSpec, run_world
from memtrial.engine.lifecycle import EngineConfig
from memtrial.trust.gate import GateConfig, GateTest

# every variant: the replay serves each one, those at a draft budget (a family each) among them
VARIANTS = ("equal_weight", *MEMTRIAL_VARIANTS)
BUDGETS = [m for m, settings in MEMTRIAL_VARIANTS.items() if "draft_budget" in settings]


def both(spec):
    online = run_world(replace(spec, engine="online"), keep_choices=True)
    replayed = run_world(replace(spec, engine="replay"), keep_choices=True)
    return online, replayed


def assert_identical(online, replayed):
    assert replayed["choices"] == online["choices"]  # every variant's weights on every date, bit for bit
    assert replayed["trust_states"] == online["trust_states"]  # gate open and its statistic on every date
    assert replayed["values"] == online["values"]  # final values of every experience
    assert replayed["methods"] == online["methods"]  # utilities, open rates, value recovery, wealth


def test_replay_equals_the_online_engines_on_one_world():
    online, replayed = both(WorldSpec("beta_0.25", "balanced", 7, methods=VARIANTS))
    assert_identical(online, replayed)
    assert any(rate for rate in (m["open_rate"] for m in online["methods"].values()) if rate), (
        "no gate ever opened: the check is weak"
    )
    assert BUDGETS, "no variant at a draft budget: the check is weak"
    for method_id in BUDGETS:  # trials and exploiting plans both, and memory trusted on some exploiting plans
        calls = online["methods"][method_id]["draft_calls_per_decision"]
        assert 1.0 < calls < 9.0, (method_id, calls)
        weights = online["trust_states"][method_id]  # (open, statistic, trust weight) per date
        assert any(state[2] for state in weights), f"{method_id} never trusted memory: the check is weak"


def test_replay_at_the_run_s_draft_budget_equals_the_online_engine():
    """``--draft-budget`` puts the default memtrial at a budget: replayed, it is its online engine's twin."""
    spec = WorldSpec("beta_0.5", "aggressive", 11, methods=("equal_weight", "memtrial"), draft_budget=2.5)
    online, replayed = both(spec)
    assert_identical(online, replayed)
    assert online["methods"]["memtrial"]["draft_calls_per_decision"] < 2.5


def test_a_budget_without_a_horizon_runs_its_online_engine():
    """Without a horizon a trial may follow an exploiting plan, which the replay does not serve."""
    config = EngineConfig(gamma=2.0, action="dial", gate=GateConfig(test=GateTest.ANYTIME), draft_budget=3.0)
    assert not replays(config)
    assert replays(dataclasses.replace(config, draft_horizon=100))
    assert replays(EngineConfig(gamma=2.0))


@pytest.mark.parametrize("regime", list(REGIMES))
def test_replay_equals_the_online_engines_on_every_regime(regime):
    """The fast tier's check of every regime, one world each (the slow tier adds every investor)."""
    assert_identical(*both(WorldSpec(regime, "balanced", 3 + len(regime), methods=VARIANTS)))


@pytest.mark.slow
@pytest.mark.parametrize("regime", list(REGIMES))
@pytest.mark.parametrize("investor", ["conservative", "balanced", "aggressive"])
def test_replay_equals_the_online_engines_on_every_regime_and_investor(regime, investor):
    assert_identical(*both(WorldSpec(regime, investor, 15 + len(regime), methods=VARIANTS)))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_replay_equals_the_online_engines_on_more_seeds(seed):
    assert_identical(*both(WorldSpec("many_experiences", "aggressive", seed, methods=VARIANTS)))
