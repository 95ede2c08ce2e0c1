"""The engine (method 3, 4.10): the lifecycle, its settings and checks, learning, corrections, checkpoints, history and state.

Modules: :mod:`~memtrial.engine.config`, :mod:`~memtrial.engine.checks`, :mod:`~memtrial.engine.history`, :mod:`~memtrial.engine.checkpoints`, :mod:`~memtrial.engine.learning`, :mod:`~memtrial.engine.corrections`, :mod:`~memtrial.engine.reconfigure`, :mod:`~memtrial.engine.state`, :mod:`~memtrial.engine.lifecycle`.
"""

from memtrial.engine.checkpoints import (
    CHECKPOINT_EVERY,
    CHECKPOINTS_KEPT,
    Checkpoint,
    CheckpointPolicy,
    decode_frozen,
    encode_frozen,
    same_frozen,
)
from memtrial.engine.checks import (
    Universe,
    check_plan_times,
    check_scored,
    later_or_equal,
    same_scored,
    settled_at_or_after,
    shown,
    universe_arrays,
)
from memtrial.engine.config import (
    ReferenceSource,
)
from memtrial.engine.corrections import (
    Recomputed,
    corrected_outcome,
    correction_entry,
    recompute,
)
from memtrial.engine.history import (
    DecisionEntry,
    DetachedHistory,
    History,
    InMemoryHistory,
)
from memtrial.engine.learning import (
    NoiseCost,
    Outcome,
    Running,
    credit,
    frozen_predictions,
    learn,
    outcome_of,
    portfolio_outcome,
    rescore,
    scored_outcome,
    unlearn_sums,
)
from memtrial.engine.lifecycle import (
    EngineConfig,
    MemTrial,
)
from memtrial.engine.reconfigure import (
    MUTABLE_SETTINGS,
    reconfigured,
)
from memtrial.engine.state import (
    STATE_VERSION,
    EngineState,
    ExperienceState,
    decode_state,
    encode_state,
    upgrade_v1_state,
)

__all__ = [
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
]
