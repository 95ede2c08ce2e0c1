"""memtrial: memory credit assignment with trust gating for LLM decision agents.

For each decision an agent drafts under designed subsets of its retrieved
experiences; every draft is scored against the same realised outcome, each
experience is credited with its same-day Banzhaf contrast, credits are pooled
by a hierarchical (Fay–Herriot) model, and learned values are acted on only
after a pre-registered trust test passes. Otherwise the agent holds a
KL-anchored mixture of a conservative reference and the drafts' mean.

Packages, in the order of docs/method.md: :mod:`~memtrial.credit` (design,
contributions), :mod:`~memtrial.outcomes` (mandates, utility, scoring rules),
:mod:`~memtrial.values` (value statistics and learners), :mod:`~memtrial.trust`
(the gate and its log), :mod:`~memtrial.action` (the played rule, the fallback
mixture, the draft budget), :mod:`~memtrial.drafting` (prompts, answers,
retrieval, embeddings), :mod:`~memtrial.curation` (value-aware retrieval, quarantine, stale lessons)
and :mod:`~memtrial.engine` (the lifecycle);
:mod:`~memtrial.numeric` holds the numerical helpers they share and
:mod:`~memtrial.cli` the command line (docs/architecture.md draws the map).
Importing memtrial does no I/O and loads no web, database or CLI framework.
"""

from memtrial import action, credit, curation, drafting, engine, errors, numeric, outcomes, records, trust, values
from memtrial.engine import EngineConfig, MemTrial
from memtrial.errors import MemtrialError

__version__ = "0.1.0"

__all__ = [
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
]
