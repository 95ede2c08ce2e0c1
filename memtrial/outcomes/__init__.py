"""Outcomes (method 4.2, 4.9): investor mandates, settlement into utility, scoring rules, and the unit people read.

Modules: :mod:`~memtrial.outcomes.mandates`, :mod:`~memtrial.outcomes.scoring`, :mod:`~memtrial.outcomes.display`.
"""

from memtrial.outcomes.display import (
    LABEL_CHARS,
    UTILITY_DECIMALS,
    UTILITY_UNIT,
    describe_contributions,
    experience_label,
    format_utility,
    name_experiences,
)
from memtrial.outcomes.mandates import (
    INVESTORS,
    Investor,
    check_weights,
    mandate_violation,
    mixture_utilities,
    mixture_utilities_by_date,
    nav_paths,
    nav_paths_by_date,
    normalised,
    project,
    project_simplex,
    relative_prices,
    utilities_by_date,
    utility,
)
from memtrial.outcomes.scoring import (
    PROBABILITY_FLOOR,
    Rule,
    ScoringRule,
    probability_vectors,
    rule,
    score,
)

__all__ = [
    "INVESTORS",
    "Investor",
    "LABEL_CHARS",
    "PROBABILITY_FLOOR",
    "Rule",
    "ScoringRule",
    "UTILITY_DECIMALS",
    "UTILITY_UNIT",
    "check_weights",
    "describe_contributions",
    "experience_label",
    "format_utility",
    "mandate_violation",
    "mixture_utilities",
    "mixture_utilities_by_date",
    "name_experiences",
    "nav_paths",
    "nav_paths_by_date",
    "normalised",
    "probability_vectors",
    "project",
    "project_simplex",
    "relative_prices",
    "rule",
    "score",
    "utilities_by_date",
    "utility",
]
