"""The batch replay of a world gives every MemTrial variant exactly what its own online engine gives."""

from dataclasses import replace

import pytest

from backtest.methods.registry import MEMTRIAL_VARIANTS
from backtest.plantedmem import REGIMES
from backtest.runner import WorldSpec, run_world

# the variants the replay serves (a variant at a draft budget runs an online engine in both modes)
VARIANTS = ("equal_weight", *(m for m, settings in MEMTRIAL_VARIANTS.items() if "draft_budget" not in settings))


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
