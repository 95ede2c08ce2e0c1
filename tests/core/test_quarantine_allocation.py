"""The quarantine test's share of the level per slot, its weighted sign, and the false discovery rule
(method 4.13)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from memtrial.curation import BETS, Curator, ErrorControl, Evidence, QuarantineConfig, threshold
from memtrial.curation.quarantine import weighted_sign
from memtrial.errors import ConfigError


@pytest.mark.parametrize("spread", [0.0, 1.0, 30.0, 250.0])
def test_the_slots_shares_of_the_level_add_up_to_one(spread):
    # w_j = (s + 1) / ((j + s) (j + s + 1)) telescopes: the first n shares add up to 1 - (s + 1) / (n + s + 1)
    level, n = 0.05, 200_000
    shares = [1.0 / (threshold(j, level, spread) * level) for j in range(1, n + 1)]
    assert sum(shares) == pytest.approx(1.0 - (spread + 1.0) / (n + spread + 1.0), rel=1e-9)


def test_threshold_by_hand():
    assert threshold(1, 0.05) == pytest.approx(40.0)  # 1 * 2 / 0.05
    assert threshold(1, 0.05, 0.0, 3) == pytest.approx(10.0)  # after 3 quarantines: 40 / (3 + 1)
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
    assert config.spread == 0.0 and config.clip is None and config.control is ErrorControl.FWER
    assert QuarantineConfig.from_dict(config.to_dict()) == config
    evidence = Evidence(slot=1)
    assert evidence.payload("x", config.level, config.spread)["threshold"] == 40.0


def test_a_setting_written_before_control_keeps_the_family_wise_rule_a_new_one_controls_the_fdr():
    stored = {"enabled": True, "level": 0.05, "change_threshold": 1000.0, "spread": 30.0, "clip": 1.0}
    assert QuarantineConfig.from_dict(stored).control is ErrorControl.FWER
    assert QuarantineConfig().control is ErrorControl.FDR
    assert QuarantineConfig(control="fwer").control is ErrorControl.FWER
    config = QuarantineConfig(enabled=True)
    assert config.to_dict()["control"] == "fdr" and QuarantineConfig.from_dict(config.to_dict()) == config


def test_quarantine_config_unknown_control_is_rejected():
    with pytest.raises(ConfigError) as error:
        QuarantineConfig(control="bonferroni")
    assert str(error.value) == "quarantine.control must be one of ['fwer', 'fdr'], got 'bonferroni'"


def _signs(n: int) -> float:
    """The wealth after n harmful plain signs: the mean over bets of (1 + lambda)^n."""
    return sum((1.0 + b) ** n for b in BETS) / len(BETS)


def _book(control: ErrorControl) -> Curator:
    """Two tests (spread 0, plain sign, level 0.05: thresholds 40 and 120) that each see eight harmful
    signs together: "a" (slot 1) reaches 49.7 >= 40, "b" (slot 2) 49.7 < 120 / 2."""
    curator = Curator(QuarantineConfig(enabled=True, spread=0.0, clip=None, control=control))
    for t in range(8):
        curator.observe(f"d{t}", {"a": -1.0, "b": -1.0})
    return curator


def test_fdr_quarantine_lowers_the_later_thresholds():
    fwer, fdr = _book(ErrorControl.FWER), _book(ErrorControl.FDR)
    assert _signs(8) == pytest.approx(49.7477770366)
    assert fwer.quarantined == fdr.quarantined == ("a",) and fwer.counted == 0 and fdr.counted == 1
    # b's ninth harmful sign lifts it to 87.3: past 60 = 120 / (1 + 1) under fdr, short of 120 under fwer
    events = fdr.observe("d8", {"b": -1.0})
    assert [(e.kind, e.experience_id) for e in events] == [("quarantine", "b")]
    assert events[0].payload["threshold"] == 60.0 and events[0].payload["discoveries"] == 1
    assert events[0].payload["e_value"] == pytest.approx(_signs(9))
    assert fwer.observe("d8", {"b": -1.0}) == [] and fwer.quarantined == ("a",)
    restored = Curator.from_dict(fdr.config, fdr.to_dict())
    assert restored.to_dict() == fdr.to_dict() and restored.discoveries == 2


def test_fdr_sweep_quarantines_a_running_test_whose_wealth_meets_the_lowered_threshold():
    curator = Curator(QuarantineConfig(enabled=True, spread=0.0, clip=None))
    curator.observe("d0", {"a": 0.0, "c": 0.0})  # a takes slot 1 (threshold 40), c slot 2 (120); sign 0
    for t in range(1, 10):
        curator.observe(f"d{t}", {"c": -1.0})
    assert curator.evidence["c"].e_value == pytest.approx(_signs(9)) and curator.quarantined == ()
    events = []
    for t in range(10, 18):
        events = curator.observe(f"d{t}", {"a": -1.0})
    # a's eighth harmful sign quarantines it; c, untouched, now meets 120 / 2 and is swept in
    assert [(e.kind, e.experience_id) for e in events] == [("quarantine", "a"), ("quarantine", "c")]
    assert [e.payload["threshold"] for e in events] == [40.0, 60.0]
