"""memtrial.credit.banzhaf: Banzhaf contrasts, interactions, date centring."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtrial.credit.banzhaf import ContributionRecord, centre_by_date, contributions, interactions
from memtrial.credit.design import fold_over, full_factorial, half_fraction
from memtrial.errors import InputError

K = 4
finite = st.floats(min_value=-10, max_value=10, allow_nan=False)
games = st.lists(finite, min_size=16, max_size=16).map(np.array)


def banzhaf_by_definition(game, k):
    """beta_h = 2^-(k-1) * sum over S without h of v(S + h) - v(S)."""
    values = np.zeros(k)
    for h in range(k):
        others = [j for j in range(k) if j != h]
        for size in range(k):
            for subset in itertools.combinations(others, size):
                mask = sum(1 << j for j in subset)
                values[h] += game[mask | 1 << h] - game[mask]
    return values / 2 ** (k - 1)


def factorial_effect(game, word, k):
    """Full-factorial effect of the factor set ``word`` in +/-1 coding."""
    total = 0.0
    for mask in range(2**k):
        sign = (-1) ** (word & ~mask).bit_count()
        total += sign * game[mask]
    return total / 2 ** (k - 1)


@settings(max_examples=100, deadline=None)
@given(games)
def test_full_factorial_contrast_equals_banzhaf_value(game):
    np.testing.assert_allclose(contributions(game, full_factorial(K), K), banzhaf_by_definition(game, K), atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(games)
def test_half_fraction_contrast_equals_banzhaf_plus_three_way_alias(game):
    masks = half_fraction(K)
    half = contributions({m: game[m] for m in masks}, masks, K)
    banzhaf = banzhaf_by_definition(game, K)
    for h in range(K):
        alias = 0b1111 ^ (1 << h)
        assert half[h] == pytest.approx(banzhaf[h] + factorial_effect(game, alias, K), abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(games)
def test_half_and_fold_over_average_recovers_banzhaf_exactly(game):
    half = half_fraction(K)
    fold = fold_over(half, K)
    average = (contributions(game[half], half, K) + contributions(game[fold], fold, K)) / 2
    np.testing.assert_allclose(average, banzhaf_by_definition(game, K), atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(games, finite)
def test_same_day_constant_changes_no_contribution(game, market):
    masks = half_fraction(K)
    np.testing.assert_allclose(
        contributions(game[masks] + market, masks, K), contributions(game[masks], masks, K), atol=1e-9
    )


def test_additive_game_contrast_is_exact_under_half_fraction():
    effects = np.array([0.3, -0.1, 0.0, 0.2])
    masks = half_fraction(K)
    utilities = [sum(effects[j] for j in range(K) if m >> j & 1) + 0.05 for m in masks]
    np.testing.assert_allclose(contributions(utilities, masks, K), effects, atol=1e-12)


def test_interactions_of_half_fraction_are_the_three_aliased_pairs():
    rng = np.random.default_rng(3)
    game = rng.normal(size=16)
    masks = half_fraction(K)
    result = interactions(game[masks], masks, K)
    assert list(result) == ["AB = CD", "AC = BD", "AD = BC"]
    expected = factorial_effect(game, 0b0011, K) + factorial_effect(game, 0b1100, K)
    assert result["AB = CD"] == pytest.approx(expected, abs=1e-12)


def test_interactions_vanish_for_an_additive_game():
    masks = half_fraction(K)
    utilities = [0.1 * (m & 1) + 0.2 * (m >> 3 & 1) for m in masks]
    assert all(abs(v) < 1e-12 for v in interactions(utilities, masks, K).values())


def test_contributions_reject_misaligned_utilities():
    with pytest.raises(InputError, match=r"utilities must have shape \(8,\) to align with masks, got \(7,\)"):
        contributions(np.zeros(7), half_fraction(K), K)


def test_contributions_reject_a_mapping_missing_masks():
    with pytest.raises(InputError, match=r"utilities has no entry for masks \[15\]"):
        contributions(dict.fromkeys(half_fraction(K)[:-1], 0.0), half_fraction(K), K)


def test_contributions_reject_nan_utilities():
    utilities = np.zeros(8)
    utilities[2] = np.nan
    with pytest.raises(InputError, match="utilities must be finite"):
        contributions(utilities, half_fraction(K), K)


def test_contributions_reject_a_design_where_an_experience_is_never_excluded():
    with pytest.raises(InputError, match="experience 0 must be both in and out of some run"):
        contributions([1.0, 2.0], [1, 3], 2)


def test_centring_averages_repeats_then_subtracts_the_date_mean():
    centred = centre_by_date([("d1", "a", 1.0), ("d1", "b", 3.0), ("d1", "a", 2.0), ContributionRecord("d2", "a", 5.0)])
    assert centred.dates == ("d1", "d2")
    assert centred.experience_ids == ("a", "b")
    np.testing.assert_allclose(centred.y, [-0.75, 0.75])
    assert centred.date_index.tolist() == [0, 0]


def test_centring_drops_dates_with_one_experience():
    assert centre_by_date([("d1", "a", 1.0), ("d1", "a", 2.0)]).n_records == 0


def test_centred_records_sum_to_zero_within_each_date():
    rng = np.random.default_rng(0)
    records = [(t, int(h), rng.normal()) for t in range(30) for h in rng.choice(10, 4, replace=False)]
    centred = centre_by_date(records)
    sums = np.bincount(centred.date_index, weights=centred.y)
    np.testing.assert_allclose(sums, 0.0, atol=1e-12)


def test_contribution_record_rejects_infinite_values():
    with pytest.raises(InputError, match="contribution must be finite, got inf"):
        ContributionRecord("d", "a", float("inf"))


def test_malformed_record_is_rejected_with_its_index():
    with pytest.raises(InputError, match=r"records\[1\] must be \(date, experience_id, contribution\)"):
        centre_by_date([("d", "a", 1.0), ("d", "b")])
