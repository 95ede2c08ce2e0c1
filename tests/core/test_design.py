"""memtrial.credit.design: the designed subsets and their alias structure."""

import pytest

from memtrial.credit.design import (
    aliases,
    build_design,
    defining_relation,
    fold_over,
    full_factorial,
    half_fraction,
    max_drafts,
    subset_of,
)
from memtrial.errors import ConfigError, InputError


def test_half_fraction_of_four_is_the_even_subsets():
    assert half_fraction(4) == [0, 3, 5, 6, 9, 10, 12, 15]


@pytest.mark.parametrize("k", range(1, 9))
def test_half_fraction_has_even_parity_and_half_the_runs(k):
    masks = half_fraction(k)
    assert len(masks) == 2 ** (k - 1)
    assert all(mask.bit_count() % 2 == 0 for mask in masks)


def test_full_factorial_lists_every_mask():
    assert full_factorial(3) == list(range(8))


def test_fold_over_of_half_fraction_is_the_odd_half():
    assert fold_over(half_fraction(4), 4) == [1, 2, 4, 7, 8, 11, 13, 14]
    assert sorted(half_fraction(4) + fold_over(half_fraction(4), 4)) == full_factorial(4)


def test_fold_over_on_all_factors_of_even_k_returns_the_same_half():
    assert fold_over(half_fraction(4), 4, factors=(0, 1, 2, 3)) == half_fraction(4)


def test_defining_relation_of_half_fraction_is_i_equals_abcd():
    assert defining_relation(half_fraction(4), 4) == [(0, 1), (15, 1)]
    assert defining_relation(fold_over(half_fraction(4), 4), 4) == [(0, 1), (15, -1)]


def test_aliases_of_half_fraction_are_resolution_four_chains():
    chains = [str(chain) for chain in aliases(half_fraction(4), 4)]
    assert chains == ["A = BCD", "B = ACD", "C = ABD", "D = ABC", "AB = CD", "AC = BD", "AD = BC"]


def test_aliases_of_fold_over_carry_negative_signs():
    chains = [str(chain) for chain in aliases(fold_over(half_fraction(4), 4), 4)]
    assert chains[0] == "A = -BCD"
    assert chains[4] == "AB = -CD"


def test_aliases_of_full_factorial_are_single_effects():
    chains = aliases(full_factorial(4), 4)
    assert len(chains) == 15
    assert all(len(chain.effects) == 1 for chain in chains)


def test_build_design_names_the_bad_design():
    assert build_design("full", 2) == [0, 1, 2, 3]
    with pytest.raises(
        ConfigError, match=r"design must be one of \['half', 'fold', 'full', 'saturated'\], got 'quarter'"
    ):
        build_design("quarter", 4)


def test_half_fraction_rejects_k_out_of_range():
    with pytest.raises(ConfigError, match=r"k must be an integer in \[1, 20\], got 0"):
        half_fraction(0)


def test_masks_out_of_range_are_rejected_with_their_index():
    with pytest.raises(InputError, match=r"masks\[1\] must be an integer in \[0, 16\), got 16"):
        aliases([0, 16], 4)


def test_duplicate_masks_are_rejected():
    with pytest.raises(InputError, match="masks must be distinct"):
        fold_over([3, 3], 4)


def test_subset_of_lists_included_ids_in_retrieval_order():
    assert subset_of(0b1010, ["a", "b", "c", "d"]) == ("b", "d")
    assert subset_of(0, ["a", "b"]) == ()


@pytest.mark.parametrize("k", range(1, 16))
def test_a_saturated_design_screens_k_experiences_in_the_fewest_balanced_orthogonal_runs(k):
    from memtrial.credit.design import saturated

    masks = saturated(k)
    runs = 1 << k.bit_length()
    assert len(masks) == len(set(masks)) == runs and runs - 1 >= k and (runs // 2) - 1 < k
    levels = [[1 if m >> j & 1 else -1 for j in range(k)] for m in masks]
    for j in range(k):
        assert sum(row[j] for row in levels) == 0  # each experience in half the runs
        for i in range(j):
            assert sum(row[i] * row[j] for row in levels) == 0  # every pair of columns orthogonal


def test_saturated_seven_is_resolution_three_with_its_generators():
    from memtrial.credit.design import saturated

    masks = saturated(7)
    assert masks == build_design("saturated", 7) == [56, 97, 82, 11, 76, 21, 38, 127]
    chains = {str(chain).split(" = ")[0]: str(chain) for chain in aliases(masks, 7)}
    assert "AB" in chains["D"].split(" = ") and "AC" in chains["E"].split(" = ") and "BC" in chains["F"].split(" = ")


def test_a_saturated_design_recovers_additive_effects_exactly():
    from memtrial.credit.banzhaf import contributions
    from memtrial.credit.design import saturated

    effects = [0.3, -0.2, 0.0, 0.5, 0.1, -0.4, 0.25]
    masks = saturated(7)
    utilities = [1.0 + sum(e for j, e in enumerate(effects) if m >> j & 1) for m in masks]
    assert contributions(utilities, masks, 7) == pytest.approx(effects, abs=1e-12)


def test_plan_masks_of_a_saturated_design_screens_however_many_were_retrieved():
    from memtrial.credit.design import plan_masks, saturated

    assert plan_masks("saturated", 7, 7) == saturated(7)
    assert plan_masks("saturated", 7, 5) == saturated(5) and len(saturated(5)) == 8
    assert plan_masks("saturated", 7, 0) == [0]


@pytest.mark.parametrize(
    ("kind", "k", "extra_reference", "expected"),
    [
        ("half", 4, False, 8),
        ("half", 8, False, 128),
        ("fold", 7, False, 64),
        ("fold", 7, True, 65),  # the odd half has no memory-free run: the reference is drafted besides
        ("full", 6, False, 64),
        ("full", 8, False, 256),
        ("saturated", 7, True, 9),
        ("saturated", 8, False, 16),
        ("half", 1, False, 1),
    ],
)
def test_max_drafts_is_the_largest_plan_over_every_number_retrieved(kind, k, extra_reference, expected):
    assert max_drafts(kind, k, extra_reference=extra_reference) == expected
