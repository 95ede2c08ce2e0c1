"""Values that curate memory: value-aware retrieval (method 4.12), quarantine of harmful experiences
(4.13) and stale lessons (4.14)."""

from memtrial.curation.curator import Curator, Event, contribution_counts, replay
from memtrial.curation.quarantine import BETS, ErrorControl, Evidence, QuarantineConfig, Verdict, threshold
from memtrial.curation.ranking import (
    DEMOTION,
    EXPLORATION,
    SPAN_RULE,
    Pick,
    Posterior,
    Ranked,
    RetrievalMode,
    rank,
    rank_orders,
    similarity_order,
    spans_finitely,
)

__all__ = [
    "BETS",
    "DEMOTION",
    "EXPLORATION",
    "Curator",
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
]
