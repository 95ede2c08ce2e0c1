"""What people read: the unit of values and utilities, and a readable label for an experience.

Every surface (REST, the Python clients, MCP, the dashboard, the Mem0 and LangGraph adapters, the
examples) shows values, contributions and utilities as the same number in one unit,
:data:`UTILITY_UNIT`: a decision's settled utility U (``docs/method.md`` 4.2), and a value or a
contribution is a change in it. A portfolio's U is a fraction of the book (0.01 is one percentage
point, what the backtest reports show as pp); a scored decision's U is its scoring rule's
(brier, log, exact, abs_error). Machine fields keep experience ids; readers get
:func:`experience_label`, the experience's text shortened.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "LABEL_CHARS",
    "UTILITY_DECIMALS",
    "UTILITY_UNIT",
    "describe_contributions",
    "experience_label",
    "format_utility",
    "name_experiences",
]

UTILITY_UNIT = "utility per decision"
#: decimals a value is shown with: 1e-5 utility is 0.001 percentage points of a portfolio
UTILITY_DECIMALS = 5
#: characters of an experience's text a label keeps before its ellipsis
LABEL_CHARS = 40


def format_utility(value: float) -> str:
    """``value`` in :data:`UTILITY_UNIT` to :data:`UTILITY_DECIMALS` decimals; what rounds to zero reads 0.00000."""
    shown = f"{value:.{UTILITY_DECIMALS}f}"
    return f"{0.0:.{UTILITY_DECIMALS}f}" if float(shown) == 0.0 else shown


def experience_label(text: str | None, experience_id: str, external_id: str | None = None) -> str:
    """What a reader sees for an experience: its text, cut to :data:`LABEL_CHARS` characters with an
    ellipsis, in double quotes; without a text (deleted since), its external id, else its id."""
    if text:
        flat = " ".join(text.split())
        short = flat if len(flat) <= LABEL_CHARS else flat[: LABEL_CHARS - 1].rstrip() + "…"
        return f'"{short}"'
    return external_id if external_id else experience_id


def name_experiences(text: str, labels: Mapping[str, str]) -> str:
    """``text`` (an explanation, which names experiences as Python quotes ids: ``['a1b2...']``) with
    each labelled id replaced by its label."""
    for experience_id, label in labels.items():
        text = text.replace(repr(experience_id), label)
    return text


def describe_contributions(contributions: Mapping[str, float], labels: Mapping[str, str]) -> str:
    """One line naming each credited experience by its label with its contribution, largest first."""
    if not contributions:
        return f"no experience was credited (contributions in {UTILITY_UNIT})"
    ranked = sorted(contributions.items(), key=lambda item: -item[1])
    named = "; ".join(f"{labels.get(e, e)} {format_utility(c)}" for e, c in ranked)
    return f"contributions in {UTILITY_UNIT}, largest first: {named}"
