"""Designed subsets of the k retrieved experiences.

A *mask* is an integer whose bit ``j`` says whether retrieved experience ``j``
is in the subset. In the usual two-level coding factor ``j`` is at level
``x_j = +1`` when included and ``-1`` otherwise, and the factor letters are
A, B, C, ... for bits 0, 1, 2, ...

The default design for k = 4 is the half fraction with defining relation
I = ABCD: the eight even-size subsets ``[0, 3, 5, 6, 9, 10, 12, 15]``
(resolution IV; A = BCD, AB = CD, ...). Its fold-over on one factor is the odd
half (I = -ABCD, design ``fold``): the four single experiences and the four
triples, each experience again in four of the eight runs, so its contrasts are
as precise; a half plus its fold-over is the full factorial.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from memtrial.errors import ConfigError, InputError, parse_choice

__all__ = [
    "AliasChain",
    "DesignKind",
    "aliases",
    "build_design",
    "defining_relation",
    "effect_name",
    "fold_over",
    "full_factorial",
    "plan_masks",
    "half_fraction",
    "max_drafts",
    "odd_half",
    "saturated",
    "subset_of",
    "validate_masks",
]

MAX_FACTORS = 20


class DesignKind(StrEnum):
    """Which subsets of the retrieved experiences get a draft."""

    HALF = "half"
    FOLD = "fold"  # the odd half: no memory-free run, every single experience alone
    FULL = "full"
    SATURATED = "saturated"  # the regular resolution-III fraction: k experiences in the fewest runs (8 for 4 to 7)


@dataclass(frozen=True, slots=True)
class AliasChain:
    """Effects the design cannot tell apart.

    ``effects[0]`` is the lowest-order effect of the chain; ``signs[i]`` is
    +1 or -1, the sign with which ``effects[i]`` enters its column (so the
    contrast of the chain estimates ``sum(sign * effect)``).
    """

    effects: tuple[str, ...]
    signs: tuple[int, ...]

    def __str__(self) -> str:
        head = self.effects[0]
        rest = [
            ("-" if sign < 0 else "") + effect for effect, sign in zip(self.effects[1:], self.signs[1:], strict=True)
        ]
        return " = ".join([head, *rest])


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_FACTORS:
        raise ConfigError(f"k must be an integer in [1, {MAX_FACTORS}], got {k!r}", field="k")


def half_fraction(k: int) -> list[int]:
    """Return the even-parity masks of k factors (defining relation I = AB...K).

    For k = 4 this is ``[0, 3, 5, 6, 9, 10, 12, 15]``.
    """
    _check_k(k)
    return [mask for mask in range(1 << k) if mask.bit_count() % 2 == 0]


def odd_half(k: int) -> list[int]:
    """Return the odd-parity masks of k factors (defining relation I = -AB...K), the fold-over of the
    half fraction. For k = 4 this is ``[1, 2, 4, 7, 8, 11, 13, 14]``."""
    _check_k(k)
    return [mask for mask in range(1 << k) if mask.bit_count() % 2 == 1]


def saturated(k: int) -> list[int]:
    """Return the masks of the saturated two-level design of k factors: N = 2**m runs, m the fewest base
    factors with 2**m - 1 >= k, and factor j the j-th non-empty word of the base factors (the base factors
    first, then their products by increasing order), included at level +1.

    Every main effect is estimated from half the runs in and half out, aliased with two-factor
    interactions (resolution III). For k = 4 to 7 this is 8 runs; ``saturated(7)`` is the 2**(7-4)
    fraction with D = AB, E = AC, F = BC, G = ABC, in run order ``[56, 97, 82, 11, 76, 21, 38, 127]``.
    """
    _check_k(k)
    m = k.bit_length()  # the fewest m with 2**m - 1 >= k
    words = sorted(range(1, 1 << m), key=lambda w: (w.bit_count(), w))[:k]
    masks = []
    for run in range(1 << m):
        mask = 0
        for j, word in enumerate(words):
            if (run & word).bit_count() % 2 == word.bit_count() % 2:  # the product of the word's levels is +1
                mask |= 1 << j
        masks.append(mask)
    return masks


def full_factorial(k: int) -> list[int]:
    """Return all ``2**k`` masks in increasing order."""
    _check_k(k)
    return list(range(1 << k))


def build_design(kind: DesignKind | str, k: int) -> list[int]:
    """Return the masks of the named design."""
    design = parse_choice(DesignKind, kind, "design")
    if design is DesignKind.HALF:
        return half_fraction(k)
    if design is DesignKind.SATURATED:
        return saturated(k)
    return odd_half(k) if design is DesignKind.FOLD else full_factorial(k)


def plan_masks(kind: DesignKind | str, k: int, n_retrieved: int) -> list[int]:
    """The masks a decision drafts: the named design when all ``k`` experiences were
    retrieved, the full factorial of those there are when fewer, the empty subset alone when none."""
    if n_retrieved == k or (n_retrieved and parse_choice(DesignKind, kind, "design") is DesignKind.SATURATED):
        return build_design(kind, n_retrieved)
    return full_factorial(n_retrieved) if n_retrieved else [0]


def max_drafts(kind: DesignKind | str, k: int, *, extra_reference: bool = False) -> int:
    """The most drafts one decision of this design can ask for, whatever number (0 to ``k``) is retrieved.

    extra_reference: a memory-free draft is added to a plan without one (a portfolio whose reference is
    its memory-free draft).
    """
    _check_k(k)
    most = 0
    for n_retrieved in range(k + 1):
        masks = plan_masks(kind, k, n_retrieved)
        most = max(most, len(masks) + int(extra_reference and 0 not in masks))
    return most


def validate_masks(masks: Sequence[int], k: int) -> list[int]:
    """Check that masks are distinct integers in ``[0, 2**k)`` and return them as a list."""
    _check_k(k)
    checked: list[int] = []
    for index, mask in enumerate(masks):
        if isinstance(mask, bool) or not isinstance(mask, int) or not 0 <= mask < (1 << k):
            raise InputError(f"masks[{index}] must be an integer in [0, {1 << k}), got {mask!r}", field="masks")
        checked.append(mask)
    if len(set(checked)) != len(checked):
        raise InputError(f"masks must be distinct, got {checked}", field="masks")
    if not checked:
        raise InputError("masks must not be empty", field="masks")
    return checked


def fold_over(masks: Sequence[int], k: int, factors: Sequence[int] = (0,)) -> list[int]:
    """Reverse the levels of ``factors`` in every run and return the sorted masks.

    Folding the half fraction over one factor gives the other half; folding
    over all factors of an even k gives the same half back.
    """
    checked = validate_masks(masks, k)
    flip = 0
    for factor in factors:
        if isinstance(factor, bool) or not isinstance(factor, int) or not 0 <= factor < k:
            raise InputError(f"factors must lie in [0, {k}), got {factor!r}", field="factors")
        flip |= 1 << factor
    if flip == 0:
        raise InputError("factors must name at least one factor", field="factors")
    return sorted(mask ^ flip for mask in checked)


def effect_name(word: int) -> str:
    """Letters of the effect whose factor set is the mask ``word`` (0 is ``I``)."""
    if word == 0:
        return "I"
    return "".join(string.ascii_uppercase[j] for j in range(word.bit_length()) if word >> j & 1)


def _column_sign(mask: int, word: int) -> int:
    """Product of ``x_j`` over ``j`` in word for the run ``mask``."""
    n_low = (word & ~mask).bit_count()
    return -1 if n_low % 2 else 1


def defining_relation(masks: Sequence[int], k: int) -> list[tuple[int, int]]:
    """Words whose effect column is constant over the design, as ``(word, sign)``.

    Always starts with ``(0, +1)`` (the identity). For the k = 4 half fraction
    it is ``[(0, 1), (15, 1)]``, that is I = +ABCD.
    """
    checked = validate_masks(masks, k)
    relation: list[tuple[int, int]] = []
    for word in range(1 << k):
        signs = {_column_sign(mask, word) for mask in checked}
        if len(signs) == 1:
            relation.append((word, signs.pop()))
    return relation


def aliases(masks: Sequence[int], k: int) -> list[AliasChain]:
    """Alias chains of the design, lowest-order effects first, identity chain left out.

    For the k = 4 half fraction: A = BCD, B = ACD, C = ABD, D = ABC, AB = CD,
    AC = BD, AD = BC. For a full factorial every chain is a single effect.
    """
    return list(_aliases(tuple(validate_masks(masks, k)), k))


@functools.lru_cache(maxsize=64)
def _aliases(masks: tuple[int, ...], k: int) -> tuple[AliasChain, ...]:
    relation = defining_relation(masks, k)
    seen: set[int] = set()
    chains: list[AliasChain] = []
    order = sorted(range(1, 1 << k), key=lambda word: (word.bit_count(), effect_name(word)))
    for word in order:
        if word in seen:
            continue
        members = sorted(
            ((word ^ generator, sign) for generator, sign in relation),
            key=lambda pair: (pair[0].bit_count(), effect_name(pair[0])),
        )
        if any(member == 0 for member, _ in members):
            continue
        seen.update(member for member, _ in members)
        chains.append(
            AliasChain(
                effects=tuple(effect_name(member) for member, _ in members),
                signs=tuple(sign for _, sign in members),
            )
        )
    return tuple(chains)


def subset_of(mask: int, experience_ids: Sequence[object]) -> tuple[object, ...]:
    """The experience ids included by ``mask``, in retrieval order."""
    return tuple(eid for j, eid in enumerate(experience_ids) if mask >> j & 1)
