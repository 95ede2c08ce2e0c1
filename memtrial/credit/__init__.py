"""Credit (method 4.1, 4.3): designed subsets of the retrieved experiences and their same-day Banzhaf contrasts.

Modules: :mod:`~memtrial.credit.design`, :mod:`~memtrial.credit.banzhaf`.
"""

from memtrial.credit.banzhaf import (
    CentredRecords,
    ContributionRecord,
    centre_arrays,
    centre_by_date,
    centre_contrasts,
    contributions,
    contributions_by_date,
    interactions,
    utilities_array,
)
from memtrial.credit.design import (
    AliasChain,
    DesignKind,
    aliases,
    build_design,
    defining_relation,
    effect_name,
    fold_over,
    full_factorial,
    half_fraction,
    max_drafts,
    odd_half,
    plan_masks,
    saturated,
    subset_of,
    validate_masks,
)

__all__ = [
    "AliasChain",
    "CentredRecords",
    "ContributionRecord",
    "DesignKind",
    "aliases",
    "build_design",
    "centre_arrays",
    "centre_by_date",
    "centre_contrasts",
    "contributions",
    "contributions_by_date",
    "defining_relation",
    "effect_name",
    "fold_over",
    "full_factorial",
    "half_fraction",
    "interactions",
    "max_drafts",
    "odd_half",
    "plan_masks",
    "saturated",
    "subset_of",
    "utilities_array",
    "validate_masks",
]
