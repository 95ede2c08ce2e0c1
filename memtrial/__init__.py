"""memtrial: memory credit assignment with trust gating for LLM decision agents.

For each decision an agent drafts under designed subsets of its retrieved
experiences; every draft is scored against the same realised outcome, each
experience is credited with its same-day Banzhaf contrast, credits are pooled
by a hierarchical (Fay–Herriot) model, and learned values are acted on only
after a pre-registered trust test passes. Otherwise the agent holds a
KL-anchored mixture of a conservative reference and the drafts' mean.

Modules: :mod:`~memtrial.design`, :mod:`~memtrial.settle`,
:mod:`~memtrial.credit`, :mod:`~memtrial.values`, :mod:`~memtrial.trust`,
:mod:`~memtrial.fallback`, :mod:`~memtrial.engine`. Importing memtrial does
no I/O and loads no web, database or CLI framework.
"""

from memtrial import credit, design, engine, errors, fallback, settle, trust, values
from memtrial.engine import EngineConfig, MemTrial
from memtrial.errors import MemtrialError

__version__ = "0.1.0"

__all__ = [
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
