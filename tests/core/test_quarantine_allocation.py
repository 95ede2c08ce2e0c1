"""The quarantine test's share of the level per slot and its weighted sign (method 4.13)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from memtrial.curation import BETS, Curator, Evidence, QuarantineConfig, threshold
from memtrial.curation.quarantine import weighted_sign


@pytest.mark.parametrize("spread", [0.0, 1.0, 30.0, 250.0])
def test_the_slots_shares_of_the_level_add_up_to_one(spread):
    # w_j = (s + 1) / ((j + s) (j + s + 1)) telescopes: the first n shares add up to 1 - (s + 1) / (n + s + 1)
    level, n = 0.05, 200_000
    shares = [1.0 / (threshold(j, level, spread) * level) for j in range(1, n + 1)]
    assert sum(shares) == pytest.approx(1.0 - (spread + 1.0) / (n + spread + 1.0), rel=1e-9)


def test_threshold_by_hand():
    assert threshold(1, 0.05) == pytest.approx(40.0)  # 1 * 2 / 0.05
    assert threshold(50, 0.05, 30.0) == pytest.approx(80 * 81 / (31 * 0.05))
    assert threshold(50, 0.05, 30.0) < threshold(50, 0.05) / 10  # later tests need far less evidence


def test_weighted_sign_by_hand():
    assert weighted_sign(-2.0, None) == 1.0 and weighted_sign(3.0, None) == -1.0 and weighted_sign(0.0, 1.0) == 0.0
    assert weighted_sign(-0.5, 2.0) == pytest.approx(0.25)
    assert weighted_sign(0.5, 2.0) == pytest.approx(-0.25)
    assert weighted_sign(-5.0, 2.0) == 1.0


def test_weighted_sign_wealth_is_a_supermartingale_when_the_noise_is_symmetric_about_a_value_at_least_zero():
    # E[1 + lambda x] <= 1 for c = value + symmetric noise, value >= 0, by exact expectation over a grid
    noise = np.linspace(-3.0, 3.0, 601)
    weights = np.exp(-0.5 * noise**2)
    weights /= weights.sum()
    for value, scale, bet in itertools.product([0.0, 0.1, 1.0], [0.5, 1.0, 4.0], BETS):
        factors = np.array([1.0 + bet * weighted_sign(value + e, scale) for e in noise])
        assert float(weights @ factors) <= 1.0 + 1e-12


def test_curator_scale_is_the_clip_times_the_mean_absolute_contribution_settled_before():
    curator = Curator(QuarantineConfig(enabled=True, clip=2.0))
    assert curator.scale is None
    curator.observe("d0", {"a": 1.0, "b": -3.0})
    assert curator.scale == pytest.approx(2.0 * 2.0)
    # the second trial's signs are weighted by the scale of the first (predictable)
    curator.observe("d1", {"a": -1.0})
    wealth = curator.evidence["a"].wealth
    first, second = weighted_sign(1.0, None), weighted_sign(-1.0, 4.0)
    assert wealth == pytest.approx([(1 + b * first) * (1 + b * second) for b in BETS])
    restored = Curator.from_dict(curator.config, curator.to_dict())
    assert restored.to_dict() == curator.to_dict() and restored.scale == curator.scale


def test_a_setting_written_before_spread_and_clip_reads_as_the_plain_sign_test():
    old = {"enabled": True, "level": 0.05, "change_threshold": 1000.0}
    config = QuarantineConfig.from_dict(old)
    assert config.spread == 0.0 and config.clip is None
    assert QuarantineConfig.from_dict(config.to_dict()) == config
    evidence = Evidence(slot=1)
    assert evidence.payload("x", config.level, config.spread)["threshold"] == 40.0
