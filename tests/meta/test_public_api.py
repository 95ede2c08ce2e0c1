"""The public API that the README, the docs and outside checks rely on, pinned."""

import inspect
import subprocess
import sys

import memtrial
from memtrial import credit, design, engine, fallback, settle, trust, values


def test_package_exports_are_pinned():
    assert sorted(memtrial.__all__) == sorted(
        [
            "EngineConfig",
            "MemTrial",
            "MemtrialError",
            "__version__",
            "credit",
            "design",
            "engine",
            "errors",
            "fallback",
            "settle",
            "trust",
            "values",
        ]
    )


def test_module_exports_are_pinned():
    assert set(design.__all__) >= {"half_fraction", "full_factorial", "fold_over", "aliases"}
    assert set(settle.__all__) >= {"INVESTORS", "Investor", "project", "utility"}
    assert set(credit.__all__) >= {"contributions", "interactions", "centre_by_date"}
    assert set(values.__all__) >= {"EmpiricalBayesLearner", "LearnerMode", "ValuePosterior"}
    assert set(trust.__all__) >= {"PrequentialGate", "AnytimeGate", "GateConfig", "TrustDecision"}
    assert set(fallback.__all__) >= {"AnchoredMixture", "FallbackVariant"}
    assert set(engine.__all__) == {"EngineConfig", "MemTrial"}


def test_signatures_match_the_documented_api():
    assert list(inspect.signature(design.fold_over).parameters)[:2] == ["masks", "k"]
    assert list(inspect.signature(settle.project).parameters) == ["weights", "risky", "defensive", "investor"]
    utility_parameters = inspect.signature(settle.utility).parameters
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
    assert set(settle.INVESTORS) == {"conservative", "balanced", "aggressive"}
    assert list(settle.Investor.__dataclass_fields__) == ["name", "risky_cap", "defensive_floor", "gamma"]
    assert set(trust.TrustDecision.__dataclass_fields__) >= {"statistic", "n_scored"}
    assert isinstance(trust.TrustDecision.is_open, property)


def test_importing_the_core_loads_no_web_database_or_cli_framework():
    code = (
        "import sys, memtrial, memtrial.values, memtrial.engine;"
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
    offenders = [p.name for p in root.glob("*.py") if p.name != "cli.py" and pattern.search(p.read_text())]
    assert offenders == []
