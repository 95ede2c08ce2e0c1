"""Values (method 4.4): value statistics, the empirical-Bayes Fay–Herriot learner, and the full-Bayes one in NumPyro.

Modules: :mod:`~memtrial.values.statistics`, :mod:`~memtrial.values.fayherriot`, :mod:`~memtrial.values.empirical`, :mod:`~memtrial.values.batchfit`, :mod:`~memtrial.values.cache`.
"""

from memtrial.values.batchfit import (
    CHUNK,
    Moment,
    predictions_at,
)
from memtrial.values.empirical import (
    MIN_AUTO_SCORES,
    EmpiricalBayesLearner,
    ValueFit,
    ValuePosterior,
    auto_prefers_content,
    degenerate_fit,
    refit_learners,
    selected_modes,
)
from memtrial.values.fayherriot import (
    VARIANCE_GRID,
    FayHerriotBatch,
    FayHerriotFit,
    SpectraCache,
    fit_fay_herriot,
    fit_many,
    log_likelihood_table,
    posterior,
    width,
)
from memtrial.values.statistics import (
    DEFAULT_COMPONENTS,
    CreditBasis,
    LearnerMode,
    OutlierGuard,
    Record,
    RunningStatistics,
    SufficientStatistics,
    content_features,
    refit_mode,
    sufficient_statistics,
)

__all__ = [
    "BayesLearner",  # noqa: F822 - provided lazily by __getattr__ (memtrial.values.bayes)
    "BayesPosterior",  # noqa: F822 - provided lazily by __getattr__ (memtrial.values.bayes)
    "CHUNK",
    "CreditBasis",
    "DEFAULT_COMPONENTS",
    "EmpiricalBayesLearner",
    "FayHerriotBatch",
    "FayHerriotFit",
    "LearnerMode",
    "MIN_AUTO_SCORES",
    "Moment",
    "OutlierGuard",
    "Record",
    "RunningStatistics",
    "SpectraCache",
    "SufficientStatistics",
    "VARIANCE_GRID",
    "ValueFit",
    "ValuePosterior",
    "auto_prefers_content",
    "content_features",
    "refit_mode",
    "degenerate_fit",
    "fit_fay_herriot",
    "fit_many",
    "hierarchical_normal_means",  # noqa: F822 - provided lazily by __getattr__ (memtrial.values.bayes)
    "log_likelihood_table",
    "posterior",
    "predictions_at",
    "refit_learners",
    "selected_modes",
    "sufficient_statistics",
    "width",
]


def __getattr__(name: str) -> object:
    """The full-Bayes names live in :mod:`memtrial.values.bayes` (JAX/NumPyro load only when used)."""
    if name in ("BayesLearner", "hierarchical_normal_means", "BayesPosterior"):
        from memtrial.values import bayes

        return getattr(bayes, name)
    raise AttributeError(f"module 'memtrial.values' has no attribute {name!r}")
