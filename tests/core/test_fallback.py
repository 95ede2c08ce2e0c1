"""memtrial.action.fallback: the KL-anchored mixture."""

import numpy as np
import pytest

from memtrial.action.fallback import GRID, AnchoredMixture, bernoulli_kl, mixture_weights
from memtrial.errors import ConfigError, InputError


def test_grid_has_201_points_from_zero_to_one():
    assert GRID.size == 201 and GRID[0] == 0.0 and GRID[-1] == 1.0 and GRID[180] == pytest.approx(0.9)


@pytest.mark.parametrize(("variant", "q"), [("ftrl", 0.9), ("uniform", 0.5), ("ens", 0.0), ("ref", 1.0)])
def test_before_any_outcome_each_variant_takes_its_anchor(variant, q):
    assert AnchoredMixture(variant).choose() == q


def test_bernoulli_kl_is_zero_at_the_anchor_and_finite_at_the_ends():
    assert bernoulli_kl(0.9, 0.9) == pytest.approx(0.0, abs=1e-15)
    assert bernoulli_kl(0.0, 0.9) == pytest.approx(np.log(1 / 0.1))
    assert bernoulli_kl(1.0, 0.9) == pytest.approx(np.log(1 / 0.9))


def test_choice_maximises_mean_gain_minus_the_kl_penalty():
    mixture = AnchoredMixture("ftrl")
    rng = np.random.default_rng(0)
    history = []
    for _ in range(5):
        u_ref, u_mean = rng.normal(0, 0.02, size=2)
        utilities = GRID * u_ref + (1 - GRID) * u_mean + rng.normal(0, 0.001, size=GRID.size)
        mixture.update(utilities, u_ref, u_mean)
        history.append((utilities, u_ref, u_mean))
    n = len(history)
    gains = sum(h[0] for h in history) / n
    spread = sum(abs(h[1] - h[2]) / 2 for h in history) / n
    penalty = 4.0 * (spread + 1e-6) / np.sqrt(n)
    expected = GRID[np.argmax(gains - penalty * bernoulli_kl(GRID, 0.9))]
    assert mixture.penalty == pytest.approx(penalty, rel=1e-14)
    assert mixture.choose() == expected


def test_persistent_advantage_of_the_draft_mean_pulls_q_toward_it():
    mixture = AnchoredMixture("ftrl")
    choices = []
    for _ in range(200):
        utilities = GRID * 0.0 + (1 - GRID) * 0.01
        mixture.update(utilities, 0.0, 0.01)
        choices.append(mixture.choose())
    assert choices[0] <= 0.9
    assert choices[-1] < choices[0]
    assert choices[-1] <= 0.05  # the KL slope is infinite at q = 0, so q stays just above it


def test_mixture_weights_interpolate_between_reference_and_mean():
    weights = mixture_weights(np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    assert weights.shape == (201, 2)
    np.testing.assert_allclose(weights[[0, 100, 200]], [[0, 1], [0.5, 0.5], [1, 0]])


def test_state_round_trips_through_a_dict():
    mixture = AnchoredMixture("uniform")
    mixture.update(np.linspace(0, 1, 201), 0.3, 0.1)
    restored = AnchoredMixture.from_dict(mixture.to_dict())
    assert restored.to_dict() == mixture.to_dict()
    assert restored.choose() == mixture.choose()


def test_unknown_variant_is_rejected():
    with pytest.raises(ConfigError, match=r"variant must be one of \['ftrl', 'ens', 'ref', 'uniform'\], got 'bold'"):
        AnchoredMixture("bold")


def test_update_rejects_a_short_utility_vector():
    with pytest.raises(InputError, match=r"mixture_utilities must be finite with shape \(201,\)"):
        AnchoredMixture().update(np.zeros(10), 0.0, 0.0)


@pytest.mark.parametrize("variant", ["ftrl", "uniform", "ens", "ref"])
def test_choices_after_every_number_of_updates_equal_the_running_mixture(variant):
    from memtrial.action.fallback import choices_after, running_sums

    rng = np.random.default_rng(3)
    utilities = rng.normal(0.0, 0.02, (30, GRID.size)) + 0.01 * np.sin(np.linspace(0, 3, GRID.size))
    mixture = AnchoredMixture(variant)
    expected = [mixture.choose()]
    for row in utilities:
        mixture.update(row, float(row[-1]), float(row[0]))
        expected.append(mixture.choose())
    gains, spread = running_sums(utilities, utilities[:, -1], utilities[:, 0])
    steps = np.array([0, 5, 1, 30, 17, 30, 2])
    assert choices_after(gains, spread, steps, variant).tolist() == [expected[s] for s in steps]
