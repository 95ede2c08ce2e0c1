"""The public API that the README, the docs and outside checks rely on, pinned."""

import importlib
import inspect
import pkgutil
import subprocess
import sys

import memtrial
from memtrial import credit, engine, outcomes, trust, values
from memtrial.action import fallback
from memtrial.credit import design
from memtrial.outcomes import mandates

# every package's __all__, exactly: an added or removed name is a change of the public API
PINNED = {
    "memtrial": [
        "EngineConfig",
        "MemTrial",
        "MemtrialError",
        "__version__",
        "action",
        "credit",
        "curation",
        "drafting",
        "engine",
        "errors",
        "numeric",
        "outcomes",
        "records",
        "trust",
        "values",
    ],
    "memtrial.action": [
        "ActionRule",
        "AnchoredMixture",
        "BUDGET_BETS",
        "BudgetPlan",
        "Choice",
        "DraftCredit",
        "FallbackVariant",
        "GRID",
        "SOLO_TRUST",
        "acts_on_memory",
        "anchored",
        "bernoulli_kl",
        "best_subset",
        "best_subsets",
        "budget_gate",
        "check_budget",
        "check_horizon",
        "choices_after",
        "choose",
        "choose_exploit",
        "choose_portfolio",
        "choose_scored",
        "describe_dial",
        "describe_trust",
        "dial_combination",
        "dial_gains",
        "dial_weights",
        "explain",
        "exploit_masks",
        "exploit_plan",
        "exploit_weights",
        "gated_weights",
        "memory_row",
        "mixture",
        "mixture_weights",
        "noise_costs",
        "noise_gain",
        "plan_budget",
        "plan_dial",
        "running_sums",
        "subset_rank",
        "subset_values",
    ],
    "memtrial.cli": ["main"],
    "memtrial.credit": [
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
    ],
    "memtrial.curation": [
        "BETS",
        "Curator",
        "DEMOTION",
        "EXPLORATION",
        "ErrorControl",
        "Event",
        "Evidence",
        "Pick",
        "Posterior",
        "QuarantineConfig",
        "Ranked",
        "RetrievalMode",
        "SPAN_RULE",
        "Verdict",
        "contribution_counts",
        "rank",
        "rank_orders",
        "replay",
        "similarity_order",
        "spans_finitely",
        "threshold",
    ],
    "memtrial.drafting": [
        "ANSWER_SYSTEM_PROMPT",
        "AnalogicalDrafter",
        "AnswerKind",
        "AnswerSpec",
        "CLASS_BUDGET",
        "DIMENSION",
        "DraftError",
        "DraftRequest",
        "Drafter",
        "Embedder",
        "Lesson",
        "MAX_CHARACTERS",
        "OnnxEmbedder",
        "SYSTEM_PROMPT",
        "configure_offline",
        "cosine_similarities",
        "default_onnx_cache",
        "get_embedder",
        "mandate_text",
        "parse_answer",
        "parse_weights",
        "quote",
        "render_answer_prompt",
        "render_prompt",
        "reply_json",
        "top_k",
        "typical_allocation",
        "weights_schema",
    ],
    "memtrial.engine": [
        "CHECKPOINTS_KEPT",
        "CHECKPOINT_EVERY",
        "Checkpoint",
        "CheckpointPolicy",
        "DecisionEntry",
        "DetachedHistory",
        "EngineConfig",
        "EngineState",
        "ExperienceState",
        "History",
        "InMemoryHistory",
        "MUTABLE_SETTINGS",
        "MemTrial",
        "NoiseCost",
        "Outcome",
        "Recomputed",
        "ReferenceSource",
        "Running",
        "STATE_VERSION",
        "Universe",
        "check_plan_times",
        "check_scored",
        "corrected_outcome",
        "correction_entry",
        "credit",
        "decode_frozen",
        "decode_state",
        "encode_frozen",
        "encode_state",
        "frozen_predictions",
        "later_or_equal",
        "learn",
        "outcome_of",
        "portfolio_outcome",
        "recompute",
        "reconfigured",
        "rescore",
        "same_frozen",
        "same_scored",
        "scored_outcome",
        "settled_at_or_after",
        "shown",
        "universe_arrays",
        "unlearn_sums",
        "upgrade_v1_state",
    ],
    "memtrial.numeric": ["incomplete_beta", "running_counts", "t_sf"],
    "memtrial.outcomes": [
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
    ],
    "memtrial.trust": [
        "AnytimeGate",
        "ChainVerification",
        "DEFAULT_BETS",
        "GateConfig",
        "GateSeries",
        "GateStatistics",
        "GateTest",
        "LogEntry",
        "LogKind",
        "PredictionLog",
        "PrequentialGate",
        "ScoreResult",
        "TrustDecision",
        "TrustGate",
        "TrustStatus",
        "UngatedGate",
        "anytime_log_wealth",
        "canonical_json",
        "dial_omega",
        "gate_series",
        "gate_states",
        "make_gate",
        "pearson_score",
        "pearson_scores",
        "prequential_p_values",
        "sha256_hex",
        "trust_decision",
        "trust_weight",
        "trust_weights",
        "verify_chain",
    ],
    "memtrial.values": [
        "BayesLearner",
        "BayesPosterior",
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
        "degenerate_fit",
        "fit_fay_herriot",
        "fit_many",
        "hierarchical_normal_means",
        "log_likelihood_table",
        "posterior",
        "predictions_at",
        "refit_learners",
        "refit_mode",
        "selected_modes",
        "sufficient_statistics",
        "width",
    ],
}


def test_package_exports_are_pinned():
    assert sorted(memtrial.__all__) == PINNED["memtrial"]


def test_every_subpackage_exports_are_pinned_exactly():
    packages = sorted("memtrial." + m.name for m in pkgutil.iter_modules(memtrial.__path__) if m.ispkg)
    assert sorted(set(PINNED) - {"memtrial"}) == packages
    for name in packages:
        package = importlib.import_module(name)
        assert sorted(package.__all__) == PINNED[name], name
        for exported in package.__all__:
            assert getattr(package, exported) is not None, f"{name}.{exported}"


def test_module_exports_are_pinned():
    assert set(design.__all__) >= {"half_fraction", "full_factorial", "fold_over", "aliases"}
    assert set(mandates.__all__) >= {"INVESTORS", "Investor", "project", "utility"}
    assert set(credit.__all__) >= {"contributions", "interactions", "centre_by_date"}
    assert set(values.__all__) >= {"EmpiricalBayesLearner", "LearnerMode", "ValuePosterior"}
    assert set(trust.__all__) >= {"PrequentialGate", "AnytimeGate", "GateConfig", "TrustDecision"}
    assert set(fallback.__all__) >= {"AnchoredMixture", "FallbackVariant"}
    assert {"EngineConfig", "MemTrial"} <= set(engine.__all__)


def test_signatures_match_the_documented_api():
    assert list(inspect.signature(design.fold_over).parameters)[:2] == ["masks", "k"]
    assert list(inspect.signature(outcomes.project).parameters) == ["weights", "risky", "defensive", "investor"]
    utility_parameters = inspect.signature(outcomes.utility).parameters
    assert list(utility_parameters) == ["weights", "rel_prices", "prev_weights", "gamma", "fee_bp"]
    assert utility_parameters["fee_bp"].default == 15.0
    assert list(inspect.signature(credit.contributions).parameters) == ["utilities", "masks", "k"]
    assert list(inspect.signature(values.EmpiricalBayesLearner).parameters)[:2] == ["mode", "features"]
    assert inspect.signature(trust.PrequentialGate).parameters["alpha"].default == 0.05
    assert inspect.signature(trust.PrequentialGate).parameters["min_scores"].default == 10
    assert inspect.signature(trust.AnytimeGate).parameters["alpha"].default == 0.05
    for method in ("register", "score", "decision"):
        assert callable(getattr(trust.TrustGate, method))
    for method in ("plan", "decide", "settle", "to_json", "from_json"):
        assert callable(getattr(engine.MemTrial, method))
    assert set(outcomes.INVESTORS) == {"conservative", "balanced", "aggressive"}
    assert list(outcomes.Investor.__dataclass_fields__) == ["name", "risky_cap", "defensive_floor", "gamma"]
    assert set(trust.TrustDecision.__dataclass_fields__) >= {"statistic", "n_scored"}
    assert isinstance(trust.TrustDecision.is_open, property)


def test_importing_the_core_loads_no_web_database_or_cli_framework():
    code = (
        "import sys, memtrial, memtrial.values, memtrial.engine.lifecycle;"
        "heavy = [m for m in ('fastapi', 'sqlalchemy', 'typer', 'click', 'starlette', 'service', 'backtest', 'jax', 'torch', 'litellm') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_core_modules_import_nothing_from_service_or_backtest():
    import pathlib
    import re

    root = pathlib.Path(memtrial.__file__).parent
    pattern = re.compile(r"^\s*(from|import) (fastapi|sqlalchemy|starlette|service|backtest)\b", re.MULTILINE)
    offenders = [
        str(p.relative_to(root)) for p in root.rglob("*.py") if p.parent.name != "cli" and pattern.search(p.read_text())
    ]
    assert offenders == []
