"""Scored decisions in the service: drafts as JSON, outcomes scored by a rule (see :mod:`memtrial.outcomes.scoring`).

A scored agent's drafts are turned into what the engine acts on:

- with named ``outcomes`` (probability forecasts): each draft must give a
  probability for every outcome and nothing else; they become probability
  vectors in the agent's outcome order;
- numbers become vectors of length 1, lists of numbers of one length become
  vectors: the anchored mixture and the dial's blend apply to all of these;
- anything else (answers, documents) stays as it is: the engine sees how many
  drafts there are, and a decision that does not act on memory plays the
  reference draft.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.drafting.answers import AnswerKind, AnswerSpec, check_answer
from memtrial.drafting.drafts import DraftError
from memtrial.errors import MemtrialError
from memtrial.outcomes.scoring import Rule, probability_vectors
from memtrial.outcomes.scoring import score as score_drafts
from memtrial.records import Decision as CoreDecision
from service.errors import ApiError

__all__ = ["check_declared_answers", "chosen_draft", "rule_settlement", "scored_drafts"]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    """A number that is a finite float (an integer too large for one is not)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _keys_wrong(draft: Any, outcomes: Sequence[str]) -> str:
    """What a forecast lacks or holds beyond the agent's outcomes, in words (or what it is instead of a mapping)."""
    if not isinstance(draft, dict):
        return f"; got {draft!r}"[:200]
    missing = [name for name in outcomes if name not in draft]
    unknown = sorted(set(draft) - set(outcomes))
    return "".join([f"; missing {missing}" if missing else "", f"; unknown {unknown}" if unknown else ""])


def scored_drafts(settings: Mapping[str, Any], drafts: Sequence[Any]) -> NDArray[np.float64] | None:
    """The drafts as vectors (None: they are answers or documents, to be played as they are)."""
    outcomes = settings.get("outcomes")
    if outcomes:
        rows = []
        for index, draft in enumerate(drafts):
            if not isinstance(draft, dict) or set(draft) != set(outcomes):
                raise ApiError(
                    422,
                    "invalid",
                    f"drafts.{index}: must give a probability for each outcome {list(outcomes)} and nothing else"
                    + _keys_wrong(draft, outcomes),
                    f"drafts.{index}",
                )
            for name in outcomes:  # each probability named by its draft and outcome
                value = draft[name]
                if not _number(value) or not 0.0 <= value <= 1.0:
                    field = f"drafts.{index}.{name}"
                    raise ApiError(422, "invalid", f"{field}: must be a probability from 0 to 1, got {value!r}", field)
            rows.append([float(draft[name]) for name in outcomes])
        return probability_vectors(np.array(rows), "drafts")
    if all(_number(draft) for draft in drafts):
        return np.array([[float(draft)] for draft in drafts])
    if (
        all(isinstance(draft, list) and draft and all(_number(v) for v in draft) for draft in drafts)
        and len({len(d) for d in drafts}) == 1
    ):
        return np.array([[float(v) for v in draft] for draft in drafts])
    return None


def check_declared_answers(settings: Mapping[str, Any], drafts: Sequence[Any]) -> None:
    """A scored agent's drafts against the ``answer`` it declared (a number's range, a choice's list, a text's
    length), as a model's replies are held to it: 422 naming the draft. An agent that declared none (or whose
    drafts are forecasts over its outcomes, checked by :func:`scored_drafts`) takes any JSON."""
    answer = settings.get("answer")
    if not answer or settings.get("outcomes"):
        return
    spec = AnswerSpec.of_agent(None, answer)
    for index, draft in enumerate(drafts):
        try:
            check_answer(draft, spec, f"drafts.{index}")
        except DraftError as error:
            raise ApiError(
                422, "invalid", f"drafts.{index}: {error.message} (the agent's declared answer)", f"drafts.{index}"
            ) from None


def chosen_draft(settings: Mapping[str, Any], drafts: Sequence[Any], decision: CoreDecision) -> Any:
    """What the decision plays, in the drafts' own form: a draft as sent, or the blend."""
    if decision.played is not None:
        return drafts[decision.played]
    blend = [float(v) for v in decision.weights]
    outcomes = settings.get("outcomes")
    if outcomes:
        return dict(zip(outcomes, blend, strict=True))
    return blend[0] if _number(drafts[0]) else blend


def check_utilities(utilities: Sequence[float] | NDArray[np.float64], bound: float, field: str) -> None:
    """Utilities beyond the plausible bound (``MEMTRIAL_MAX_ABS_UTILITY``) are refused: 422 naming the field."""
    for index, value in enumerate(np.asarray(utilities, dtype=np.float64).tolist()):
        if not abs(value) <= bound:
            where = f"{field}.{index}" if field == "utilities" else field  # the request's path, as for any item
            raise ApiError(
                422,
                "invalid",
                f"{where}: a utility of {value!r} is beyond the plausible +-{bound:g} (MEMTRIAL_MAX_ABS_UTILITY); check the grading",
                where,
            )


def _check_declared_outcome(settings: Mapping[str, Any], rule: Rule, outcome: Any) -> None:
    """An exact outcome of an agent that declared a choice must be one of its choices: any other scores every
    draft 0, which says nothing of its lessons (422 naming the outcome)."""
    answer = settings.get("answer") or {}
    if rule is Rule.EXACT and answer.get("type") == AnswerKind.CHOICE.value and outcome not in answer["choices"]:
        raise ApiError(
            422,
            "invalid",
            f"outcome: must be one of the agent's choices {list(answer['choices'])}, got {outcome!r}"[:300],
            "outcome",
        )


def rule_settlement(
    settings: Mapping[str, Any],
    drafts: Sequence[Any],
    vectors: bool,
    rule: Rule | str,
    outcome: Any,
    bound: float = float("inf"),
) -> dict[str, Any]:
    """The engine's settle_scored arguments for an outcome and a rule.

    brier and log need probability vectors; the outcome names one of the
    agent's outcomes (or, for lists of probabilities, is its index). abs_error
    over numbers lets the engine score the blend; over anything else, and for
    exact, the service scores the drafts and hands the engine their utilities.
    """
    rule = Rule(rule)
    if rule in (Rule.BRIER, Rule.LOG):
        if not vectors or not (settings.get("outcomes") or all(isinstance(d, list | tuple) for d in drafts)):
            raise ApiError(
                422,
                "invalid",
                f"rule: {rule.value!r} scores probability forecasts; this decision's drafts are not probability vectors",
                "rule",
            )
        outcomes = settings.get("outcomes")
        if outcomes:
            if not isinstance(outcome, str) or outcome not in outcomes:
                raise ApiError(
                    422,
                    "invalid",
                    f"outcome: must be one of the agent's outcomes {list(outcomes)}, got {outcome!r}",
                    "outcome",
                )
            return {"outcome": list(outcomes).index(outcome), "rule": rule.value}
        size = len(drafts[0])
        if isinstance(outcome, bool) or not isinstance(outcome, int) or not 0 <= outcome < size:
            raise ApiError(
                422,
                "invalid",
                f"outcome: must be the index of the realised outcome, 0 to {size - 1}, got {outcome!r}",
                "outcome",
            )
        return {"outcome": outcome, "rule": rule.value}
    if rule in (Rule.EXACT, Rule.ABS_ERROR) and settings.get("outcomes"):
        what = "compares answers" if rule is Rule.EXACT else "scores numbers"
        raise ApiError(
            422,
            "invalid",
            f"rule: {rule.value!r} {what}; this agent's drafts are probability forecasts over its outcomes: settle them with 'brier' or 'log'",
            "rule",
        )
    _check_declared_outcome(settings, rule, outcome)
    if rule is Rule.ABS_ERROR and not _number(outcome):
        raise ApiError(422, "invalid", f"outcome: rule 'abs_error' needs a number, got {outcome!r}", "outcome")
    if rule is Rule.ABS_ERROR and not _finite(outcome):
        raise ApiError(
            422, "invalid", f"outcome: rule 'abs_error' needs a finite number, got {outcome!r}"[:300], "outcome"
        )
    # the outcome itself may be any size (a count or a price in the millions): what is bounded is the utility,
    # each draft's miss, checked next
    if rule is Rule.ABS_ERROR and vectors and all(_number(d) for d in drafts):
        worst = max(abs(float(d) - float(outcome)) for d in drafts)
        if not worst <= bound:
            raise ApiError(
                422,
                "invalid",
                f"outcome: a draft misses it by {worst!r}, beyond the plausible +-{bound:g} (MEMTRIAL_MAX_ABS_UTILITY)",
                "outcome",
            )
        return {"outcome": float(outcome), "rule": rule.value}
    try:
        utilities = score_drafts(rule, outcome, answers=list(drafts))
    except MemtrialError as error:  # an answer the rule cannot score (the message names it)
        raise ApiError(422, "invalid", error.message, error.field or "drafts") from None
    return {"utilities": utilities}
