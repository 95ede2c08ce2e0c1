"""Built-in scoring rules for scored decisions: a realised outcome scores every draft.

A scored decision's drafts need not be portfolios: a probability forecast over
named outcomes, an answer, a number. When the question resolves, one rule
turns the outcome into a utility per draft (higher is better), and everything
downstream (same-day contrasts, values, the gate, the fallback) is unchanged.

- ``brier``: minus the Brier score of a probability vector, ``-sum_j (p_j - o_j)^2``
  with o the one-hot outcome; in [-2, 0].
- ``log``: the log score ``log p_outcome`` (probabilities floored at 1e-12, so a
  draft that ruled the outcome out scores about -27.6, not minus infinity).
- ``exact``: 1 when the answer equals the outcome (as canonical JSON), else 0.
- ``abs_error``: minus the absolute error of a number, ``-|x - outcome|``.

``brier``, ``log`` and ``abs_error`` are *mixable*: a mixture of probability
vectors is a probability vector, a mixture of numbers is a number, each with a
score of its own, so the anchored mixture and the trust dial's blend apply
(numbers are vectors of length 1). ``exact`` scores answers that cannot be
averaged (a mixture of two answers is no answer), so decisions fall back to the
reference draft instead.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.errors import InputError, parse_choice
from memtrial.numeric.plain import plain_number

__all__ = ["PROBABILITY_FLOOR", "Rule", "ScoringRule", "probability_vectors", "rule", "score"]

PROBABILITY_FLOOR = 1e-12
PROBABILITY_TOLERANCE = 1e-6


class Rule(StrEnum):
    BRIER = "brier"
    LOG = "log"
    EXACT = "exact"
    ABS_ERROR = "abs_error"


@dataclass(frozen=True, slots=True)
class ScoringRule:
    """A rule and whether mixtures of its drafts can be scored (probability vectors can)."""

    name: Rule
    mixable: bool


_RULES = {
    Rule.BRIER: ScoringRule(Rule.BRIER, True),
    Rule.LOG: ScoringRule(Rule.LOG, True),
    Rule.EXACT: ScoringRule(Rule.EXACT, False),
    Rule.ABS_ERROR: ScoringRule(Rule.ABS_ERROR, True),
}


def rule(name: Rule | str) -> ScoringRule:
    return _RULES[parse_choice(Rule, name, "rule")]


def probability_vectors(vectors: NDArray[np.float64], field: str = "drafts") -> NDArray[np.float64]:
    """Check that each row is a probability vector (finite, >= 0, summing to 1 within 1e-6)."""
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] < 2:
        raise InputError(
            f"{field} must be probability vectors over at least two outcomes, got shape {matrix.shape}", field=field
        )
    if not np.all(np.isfinite(matrix)) or np.any(matrix < 0):
        raise InputError(f"{field} must hold finite probabilities >= 0", field=field)
    sums = matrix.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > PROBABILITY_TOLERANCE)
    if bad.size:
        raise InputError(f"{field}[{int(bad[0])}] must sum to 1, got {float(sums[bad[0]])!r}", field=field)
    return matrix


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def score(
    name: Rule | str, outcome: Any, *, vectors: NDArray[np.float64] | None = None, answers: Sequence[Any] | None = None
) -> NDArray[np.float64]:
    """Utility of each draft under the rule.

    brier / log: ``vectors`` (b, m) probability vectors and ``outcome`` the index
    of the realised outcome. exact: ``answers`` (any JSON) and ``outcome`` (JSON).
    abs_error: ``answers`` (numbers), or ``vectors`` (b, 1), and ``outcome`` (a number).
    """
    chosen = rule(name).name
    outcome = plain_number(outcome)  # NumPy's numbers as Python's
    if chosen is Rule.ABS_ERROR and vectors is not None:
        matrix = np.asarray(vectors, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[1] != 1:
            raise InputError(
                f"rule 'abs_error' scores numbers (vectors of length 1), got shape {matrix.shape}", field="drafts"
            )
        answers = [float(v) for v in matrix[:, 0]]
    if chosen in (Rule.BRIER, Rule.LOG):
        if vectors is None:
            raise InputError(f"rule {chosen.value!r} scores probability vectors", field="drafts")
        matrix = probability_vectors(vectors)
        if (
            isinstance(outcome, bool)
            or not isinstance(outcome, int | np.integer)
            or not 0 <= int(outcome) < matrix.shape[1]
        ):
            raise InputError(f"outcome must be one of the {matrix.shape[1]} outcomes, got {outcome!r}", field="outcome")
        index = int(outcome)
        if chosen is Rule.BRIER:
            one_hot = np.zeros(matrix.shape[1])
            one_hot[index] = 1.0
            return np.asarray(-((matrix - one_hot) ** 2).sum(axis=1), dtype=np.float64)
        return np.asarray(np.log(np.maximum(matrix[:, index], PROBABILITY_FLOOR)), dtype=np.float64)
    if answers is None:
        raise InputError(f"rule {chosen.value!r} scores answers", field="drafts")
    if chosen is Rule.EXACT:
        truth = _canonical(outcome)
        return np.array([1.0 if _canonical(answer) == truth else 0.0 for answer in answers])
    values = []
    for index, given in enumerate(list(answers) + [outcome]):
        answer = plain_number(given)
        if isinstance(answer, bool) or not isinstance(answer, int | float) or not np.isfinite(answer):
            where = "outcome" if index == len(answers) else f"drafts[{index}]"
            raise InputError(
                f"rule 'abs_error' needs finite numbers; {where} is {answer!r}",
                field="outcome" if index == len(answers) else "drafts",
            )
        values.append(float(answer))
    return np.asarray(-np.abs(np.array(values[:-1]) - values[-1]), dtype=np.float64)
