"""The service's answers as typed models (Pydantic only): shared by the service and its clients.

Every model also answers ``model["field"]`` (and ``.get``), so code written
against the dict answers of earlier clients keeps working.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memtrial.action.fallback import FallbackVariant
from memtrial.action.rule import ActionRule
from memtrial.credit.design import DesignKind
from memtrial.engine.config import ReferenceSource
from memtrial.outcomes.display import UTILITY_UNIT
from memtrial.records import DecisionKind
from memtrial.values.statistics import CreditBasis, LearnerMode
from service.modes import DecisionStatus, ExperienceStatus, values_of
from service.validation import AssetName

U = f"in {UTILITY_UNIT}"  # the unit every value, contribution and utility below is in

__all__ = [
    "AgentList",
    "AgentPublic",
    "Asset",
    "AssetClass",
    "ContributionPublic",
    "CorrectionPublic",
    "DecisionList",
    "DecisionPublic",
    "DecisionRecord",
    "DecisionSummary",
    "DialPublic",
    "ErrorBody",
    "ErrorDetail",
    "ErrorItem",
    "ExperienceDetail",
    "ExperienceList",
    "ExperiencePublic",
    "GatePublic",
    "LogEntryPublic",
    "LogPage",
    "PlanPublic",
    "ProviderPublic",
    "QuarantinePublic",
    "QuarantineStatePublic",
    "RankResult",
    "RankedPublic",
    "ProvidersPublic",
    "Public",
    "RefitPublic",
    "RetrievedPublic",
    "ScorePublic",
    "SearchHit",
    "SearchResult",
    "SettlementPublic",
    "SubsetPublic",
    "TrustPublic",
    "TrustStatePublic",
    "ValueEntryPublic",
    "ValuePublic",
    "ValuesPublic",
    "VerifyPublic",
    "WarningPublic",
]

AssetClass = Literal["equities", "bonds", "cash", "commodities", "real_estate", "crypto", "stocks"]


class Public(BaseModel):
    """A model of an answer; ``model["field"]`` reads a field like a dict key."""

    # every field of an answer is sent, a default one too: the REST description says so (required)
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in type(self).model_fields else default

    def __contains__(self, key: object) -> bool:
        return key in type(self).model_fields

    def keys(self) -> list[str]:
        return list(type(self).model_fields)

    def __eq__(self, other: object) -> bool:
        """Equal to another model of the same fields, or to the dict of its JSON form."""
        if isinstance(other, dict):
            return self.model_dump(mode="json") == other or self.model_dump() == other
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


class ErrorItem(Public):
    field: str | None = Field(description="the field that broke a rule (null: the request as a whole)")
    message: str = Field(description="what was wrong and the rule it broke")


class ErrorDetail(Public):
    code: str
    message: str = Field(description="the first error (the first of errors)")
    field: str | None = Field(description="the first error's field")
    errors: list[ErrorItem] = Field(
        default_factory=list, description="every error found, the first first (a validation error lists each field)"
    )


class ErrorBody(Public):
    """Every error answer: ``{"error": {"code", "message", "field", "errors": [{"field", "message"}, ...]}}``."""

    error: ErrorDetail


class Asset(Public):
    model_config = ConfigDict(extra="forbid")

    asset: AssetName
    asset_class: AssetClass


class GatePublic(Public):
    test: str
    alpha: float
    min_scores: int
    statistic: str
    bets: list[float]


class QuarantineStatePublic(Public):
    """An agent's quarantine setting."""

    enabled: bool
    level: float = Field(description="the bound that control names")
    change_threshold: float = Field(description="the e-value at which a change of sign is detected")
    spread: float = Field(0.0, description="s of the tests' shares of the level (method 4.13)")
    clip: float | None = Field(None, description="the weighted sign's scale; null: the plain sign test")
    control: str = Field(
        "fwer",
        description="what level bounds: fdr (the false discovery rate) or fwer (the probability of any wrong quarantine; an agent made before the setting existed)",
    )


class AgentPublic(Public):
    id: str
    name: str
    kind: Annotated[str, values_of(DecisionKind)] = "portfolio"
    investor: str | None
    universe: list[Asset] | None
    outcomes: list[str] | None = None
    design: Annotated[str, values_of(DesignKind)]
    k: int = Field(4, description="experiences retrieved per decision")
    gate: GatePublic
    gate_hash: str
    learner: Annotated[str, values_of(LearnerMode)]
    fallback: Annotated[str, values_of(FallbackVariant)]
    fee_bp: float
    action: Annotated[str, values_of(ActionRule)]
    credit: Annotated[str, values_of(CreditBasis)]
    robust: bool = Field(
        False,
        description="whether each settlement's contributions are screened for outliers before learning (false for an agent made before the setting existed, which learnt without it)",
    )
    draft_budget: float | None = Field(
        None, description="LLM draft calls per decision on average (null: the whole design)"
    )
    draft_horizon: int | None = Field(None, description="the number of decisions the budget covers (null: open-ended)")
    reference: Annotated[str, values_of(ReferenceSource)] = Field(
        "given", description="given (reference_weights, equal weight by default) or memory_free"
    )
    drafter: dict[str, Any] | None
    answer: dict[str, Any] | None = Field(
        None, description="scored agents: what a server-drafted draft is (null: probabilities over outcomes, else text)"
    )
    retrieval: Literal["similarity", "value_aware"] = Field(
        "similarity", description="how plans retrieve: by similarity alone, or by similarity and learned value"
    )
    quarantine: QuarantineStatePublic | None = Field(
        None,
        description="the quarantine of credibly harmful experiences (null: an agent made before the setting existed, which runs without one)",
    )
    created_at: dt.datetime


class AgentList(Public):
    """One page of agents, oldest first; pass ``next_cursor`` as ``cursor`` for the next (null: last page)."""

    items: list[AgentPublic]
    next_cursor: str | None
    limit: int


class ValuePublic(Public):
    """An experience's value in utility per decision (how much it changes a decision's settled utility:
    for a portfolio a fraction of the book, 0.01 = 1 percentage point; for a scored decision the
    scoring rule's units): posterior mean and sd, a central 90% interval and P(v > 0).

    The interval and P(v > 0) are empirical Bayes (normal posterior) as soon as there is an sd; on
    ``/values`` after a full-Bayes refit they are the refit's while it fits the agent's data as they are (no
    settlement, correction or deletion since it read them; ``interval`` says which).
    ``n`` counts the settlements that credited the experience. After a detected change of sign (method
    4.14) the value is the one learnt since the change, as value-aware retrieval reads it: the mean of the
    contributions since then, their standard error, and ``n`` their number."""

    mean: float = Field(description=f"posterior mean value, {U}")
    sd: float | None = Field(description=f"posterior sd, {U} (null: no estimate yet)")
    n: int = Field(description="settlements that credited the experience (since a detected change, if any)")
    lower: float | None = Field(default=None, description=f"the 90% interval's lower end, {U}")
    upper: float | None = Field(default=None, description=f"the 90% interval's upper end, {U}")
    p_positive: float | None = Field(default=None, description="P(v > 0), a probability")
    interval: Literal["empirical_bayes", "full_bayes"] | None = Field(
        default=None, description="where lower, upper and p_positive come from (null: no estimate yet)"
    )


Status = Annotated[str, values_of(ExperienceStatus)]
_STATUS = "active (retrieved), quarantined (kept out of retrieval by its evidence) or retired (by hand)"
#: ``active`` is the retirement flag alone, so a quarantined experience stays active
_ACTIVE = (
    "false: retired by hand; a quarantined experience stays active (not retired: status says whether it is retrieved)"
)


class ValueEntryPublic(ValuePublic):
    """A value on ``/values``, with what it is the value of."""

    status: Status = Field(description=_STATUS)
    changed_at: str | None = Field(
        default=None,
        description="the decision at which a change of sign of the experience's contributions was detected (its value, interval and n are learnt from there on); null: none",
    )
    text: str = Field(description="the experience's text")
    external_id: str | None = Field(default=None, description="the experience's id in the client's memory store")
    active: bool = Field(description=_ACTIVE)
    label: str = Field(
        description="what a reader sees: the text, shortened, in quotes (else the external id, else the id)",
    )


class ContributionPublic(Public):
    decision_id: str
    decision_time: dt.datetime
    contribution: float = Field(description=f"the experience's contrast in this decision, {U}")
    centred: float = Field(description=f"the contrast minus the decision's mean contrast, {U}")


class QuarantinePublic(Public):
    """The evidence of a quarantine, as its log entry recorded it (method 4.13)."""

    date: str | None = Field(description="the decision whose settlement quarantined the experience")
    e_value: float = Field(description="the experience's e-value against 'its value is >= 0' at that moment")
    threshold: float = Field(
        description=(
            "the e-value its test had to reach: (j + s)(j + s + 1) / ((s + 1) level (r + 1)), j its slot, s the "
            "quarantine's spread, r the quarantines the agent made before (0 under fwer) (method 4.13)"
        )
    )
    slot: int = Field(description="j, the order in which the agent started this test")
    n: int = Field(description="contributions since the test started")
    mean: float | None = Field(description=f"their mean, {U}")
    changed_at: str | None = Field(description="the decision at which a change of sign was detected, if any")
    log_index: int | None = Field(None, description="the index of the quarantine entry in the agent's log")


class ExperiencePublic(Public):
    id: str
    external_id: str | None = Field(None, description="the experience's id in the client's own memory store")
    text: str
    metadata: dict[str, Any]
    structured: dict[str, Any] | None
    active: bool = Field(description=_ACTIVE)
    created_at: dt.datetime
    value: ValuePublic
    status: Status = Field("active", description=_STATUS)
    quarantine: QuarantinePublic | None = Field(
        None, description="a quarantined experience: the evidence at quarantine"
    )
    write: Literal["created", "updated", "unchanged"] | None = Field(
        default=None,
        description="in the answer to an add: created, or (an external_id that existed) updated or unchanged",
    )


class ExperienceDetail(ExperiencePublic):
    contributions: list[ContributionPublic]


class ExperienceList(Public):
    """A page of experiences in insertion order. Page with ``cursor`` (pass ``next_cursor``;
    null on the last page); ``offset`` paging is kept for older clients."""

    items: list[ExperiencePublic]
    total: int
    limit: int
    offset: int
    next_cursor: str | None = None


class RankedPublic(Public):
    """One pick of a rank, with why it was picked and its value now."""

    id: str
    external_id: str | None = None
    reason: Literal["similarity", "value", "exploration"] = Field(
        description="similarity: its similarity alone would pick it; value: its learned value; exploration: its value's uncertainty (the optimism bonus)"
    )
    similarity: float = Field(
        description="the score it was ranked by (the given similarity, or minus its position when none were given)"
    )
    value: float = Field(description=f"its value's posterior mean, {U}")
    interval: list[float] | None = Field(
        description=f"the value's normal 90% interval [lower, upper] (the empirical-Bayes one the values show; after a full-Bayes refit they show the refit's), {U} (null: no estimate yet)"
    )
    n: int = Field(description="the contributions its value was learnt from")
    score: float = Field(
        description="similarity plus the trust-weighted value term (equal to similarity with no trust evidence)"
    )


class RankResult(Public):
    """The candidates to use, best first, at most k; quarantined ones are never picked."""

    items: list[RankedPublic]


class SearchHit(Public):
    id: str
    text: str
    score: float
    external_id: str | None = None


class SearchResult(Public):
    hits: list[SearchHit]


class RetrievedPublic(Public):
    id: str
    text: str
    score: float | None = Field(description="cosine similarity to the context (null: the client chose the experiences)")
    external_id: str | None = None


class SubsetPublic(Public):
    index: int
    mask: int
    experience_ids: list[str]
    texts: list[str]
    external_ids: list[str | None] = Field(default_factory=list, description="the experiences' external ids, in order")


class TrustStatePublic(Public):
    status: str
    test: str
    n_scored: int
    statistic: float | None
    threshold: float | None
    mean_score: float | None
    is_open: bool


class DialPublic(Public):
    trust_weight: float = Field(description="omega in [0, 1]: the share played on memory")
    log_evidence: float = Field(description="log K_t of the betting e-process omega comes from")
    noise_cost: float | None = Field(
        description=f"estimated utility cost of one draft's noise, {U} (null: no estimate yet)"
    )
    gains: list[float] = Field(description=f"predicted gain of each designed subset, in subset order, {U}")
    combination: list[float] = Field(description="weight of each designed draft in the memory share, in subset order")


class PlanPublic(Public):
    decision_id: str
    status: str
    decision_time: dt.datetime
    maturity: dt.datetime
    retrieved: list[RetrievedPublic]
    retrieval: Literal["server", "client", "candidates"] = Field(
        "server",
        description="server: searched by the context's embedding; client: the request's retrieved ids; candidates: picked among the request's candidates by the agent's retrieval mode",
    )
    subsets: list[SubsetPublic]
    predictions: dict[str, float] = Field(description=f"predicted value of each retrieved experience, by id, {U}")
    learner_mode: str
    trust: TrustStatePublic
    q: float
    dial: DialPublic | None = Field(
        None, description="agents acting by the trust dial: omega, its evidence and how the drafts will be combined"
    )
    trial: bool = Field(
        True,
        description="false: a draft-budget decision that exploits what is known (one draft, listed in subsets) and learns nothing",
    )
    draft_calls: int | None = Field(None, description="the drafts to make for this decision (one LLM call each)")


class DecisionPublic(Public):
    """A decided decision. Portfolio decisions: ``weights`` per asset and ``drafts`` as weights.
    Scored decisions: ``drafts`` as they were sent, ``chosen`` the draft played (or the blend, as
    probabilities per outcome), ``played`` its index (null: a blend) and ``reference`` the designated draft."""

    decision_id: str
    status: str
    weights: dict[str, float] | None
    action: str
    subset: list[str] | None
    mask: int | None
    q: float | None
    trust: TrustStatePublic
    predictions: dict[str, float] = Field(description=f"predicted value of each retrieved experience, by id, {U}")
    predicted_gain: float = Field(description=f"the predicted gain of the chosen subset over the reference, {U}")
    learner_mode: str
    explanation: str
    drafts: list[Any]
    dial: DialPublic | None = None
    plan: PlanPublic
    chosen: Any = None
    played: int | None = None
    reference: int | None = None
    draft_calls: int | None = Field(None, description="the drafts the decision was made from (one LLM call each)")


class CorrectionPublic(Public):
    """An outcome a correction replaced: why, when, and the settlement as it stood (superseded)."""

    reason: str
    corrected_at: dt.datetime
    superseded: dict[str, Any] = Field(description="the replaced settlement as it was answered")


class WarningPublic(Public):
    """Input that was accepted but looks wrong: the field and what to check."""

    field: str
    message: str


class SettlementPublic(Public):
    decision_id: str
    status: str
    settled_at: dt.datetime
    draft_utilities: list[float] = Field(description=f"each draft's settled utility, in the plan's order, {U}")
    reference_utility: float = Field(description=f"the reference draft's settled utility, {U}")
    draft_mean_utility: float | None = Field(
        description=f"the utility of the drafts' mean, {U} (null for a scored decision settled with bare utilities)"
    )
    chosen_utility: float | None = Field(
        description=f"the utility of what was played, {U} (null when the decision blended drafts and no rule scored the blend)"
    )
    contributions: dict[str, float] = Field(description=f"each experience's contrast, by experience id, {U}")
    contribution_labels: dict[str, str] = Field(
        default_factory=dict, description="each credited experience's label (its text, shortened, in quotes), by id"
    )
    explanation: str = Field(
        default="", description="for readers: each credited experience by its label with its contribution"
    )
    centred: dict[str, float] = Field(description=f"each contrast minus the decision's mean contrast, by id, {U}")
    interactions: dict[str, float] = Field(description=f"the two-factor interaction contrasts, {U}")
    score: float | None
    values: dict[str, ValuePublic]
    outcome: Any = None
    rule: str | None = None
    corrections: list[CorrectionPublic] = Field(
        default_factory=list, description="outcomes this settlement replaced, oldest first"
    )
    warnings: list[WarningPublic] = Field(
        default_factory=list,
        description="accepted input that looks wrong, e.g. a session return of 50% or more (percentages given as fractions?); empty when none",
    )


class DecisionSummary(Public):
    decision_id: str
    status: Annotated[str, values_of(DecisionStatus)] = Field(
        description="planned: waiting for its drafts; decided; settled; failed: withdrawn before it was decided "
        "(its drafting failed, or the server drafting it stopped and its lease ended), `failure` says why"
    )
    decision_time: dt.datetime
    maturity: dt.datetime
    action: str | None
    chosen_utility: float | None = Field(
        description=f"the utility of what was played, {U} (null: not settled); after a correction, the corrected one"
    )
    corrections: int = Field(
        0, description="how many times its settled outcome was corrected (0: never); the decision shows each"
    )
    created_at: dt.datetime
    failure: str | None = Field(None, description="why a failed decision was withdrawn (None unless failed)")


class DecisionList(Public):
    """A page of decisions, oldest first; pass ``next_cursor`` as ``cursor`` for the next (null: last page)."""

    items: list[DecisionSummary]
    next_cursor: str | None
    limit: int


class ScorePublic(Public):
    """A decision's score in force (a correction's, or the one a later correction's replay gave it)."""

    decision_id: str
    score: float
    statistic: float | None = Field(
        description="the gate's statistic right after this score (the e-value, or the t-test's p-value; null without a test, or before the t-test has two scores): as the log recorded it, or for an agent with corrections as the gate now holds it, folded along the scores in force"
    )


class TrustPublic(Public):
    """The gate, its state, and its most recent scores (oldest first) with the statistic after each;
    ``n_scores`` counts them all. The raw log is paged at ``.../trust/log``."""

    gate: GatePublic
    gate_hash: str
    state: TrustStatePublic
    n_scores: int
    scores: list[ScorePublic]


class LogEntryPublic(Public):
    """One hash-chained entry, exactly as hashed: sha256 of the canonical JSON of
    {index, kind, payload, prev_hash} (sorted keys, no spaces) is ``hash``."""

    index: int
    kind: str
    payload: dict[str, Any]
    prev_hash: str
    hash: str


class LogPage(Public):
    """A page of the log in index order; entry 0's prev_hash is the gate hash."""

    gate_hash: str
    n_entries: int
    superseded: dict[str, int] = Field(
        default_factory=dict,
        description="score entries a correction replaced, and corrections a later correction of the same decision replaced, by index (as a string): the index of the correction that replaced each",
    )
    rescored: dict[str, int] = Field(
        default_factory=dict,
        description="entries in force whose score a later correction's replay changed (that correction's 'rescored' lists the score now), by index (as a string): the index of that correction",
    )
    items: list[LogEntryPublic]
    next_cursor: str | None
    limit: int


class VerifyPublic(Public):
    ok: bool
    n_entries: int
    first_invalid: int | None
    reason: str | None


class ValuesPublic(Public):
    """Every valued experience by id, best first."""

    learner_mode: str
    values: dict[str, ValueEntryPublic]


class DecisionRecord(Public):
    """Everything stored about one decision: its plan, its decision (without the plan) and its settlement."""

    decision_id: str
    status: str = Field(
        description="planned: waiting for its drafts; decided; settled; failed: withdrawn before it was decided "
        "(its drafting failed, or the server drafting it stopped and its lease ended), `failure` says why"
    )
    failure: str | None = Field(description="why a failed decision was withdrawn (None unless failed)")
    context_text: str | None = Field(default=None, description="the context the decision was planned for")
    plan: PlanPublic | None
    decision: dict[str, Any] | None
    settlement: SettlementPublic | None


class ProviderPublic(Public):
    provider: str
    models: list[str]


class ProvidersPublic(Public):
    """Providers an agent's drafter may name (no endpoints, no keys: those stay with the operator)."""

    providers: list[ProviderPublic]


class RefitPublic(Public):
    job_id: str
    status: Literal["queued", "running", "done", "failed"]
    method: str
    created_at: dt.datetime
    finished_at: dt.datetime | None
    error: str | None
    posterior: dict[str, dict[str, float]] | None
