"""Request and response bodies (Pydantic), named by role. Core records convert at the boundary."""

from __future__ import annotations

import datetime as dt
import math
from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic import BaseModel, ConfigDict, Discriminator, Field, StrictInt, Tag, field_validator, model_validator

from service.validation import JsonDocument, Moment, Name, Weight, bounded_text


ASSET_CLASSES = ("equities", "bonds", "cash", "commodities", "real_estate", "crypto", "stocks")
RISKY_CLASSES = frozenset({"equities", "real_estate", "crypto", "stocks"})
DEFENSIVE_CLASSES = frozenset({"bonds", "cash"})

AssetClass = Literal["equities", "bonds", "cash", "commodities", "real_estate", "crypto", "stocks"]


class ErrorDetail(BaseModel):
    code: str
    message: str
    field: str | None


class ErrorBody(BaseModel):
    """Every error answer: ``{"error": {"code", "message", "field"}}``."""

    error: ErrorDetail


_ERROR_MEANINGS = {
    401: "missing, unknown or revoked API key",
    404: "no such resource for this tenant",
    409: "conflict with the agent's state (time order, maturity, a different payload)",
    413: "request body too large",
    422: "invalid input; the message names the field and the rule",
    429: "rate limit for this key reached",
    502: "the drafter failed or answered malformed drafts",
    503: "the database is unavailable",
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": meaning} for status, meaning in _ERROR_MEANINGS.items()
}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- agents ---------------------------------------------------------------
class Asset(Strict):
    asset: bounded_text(64)  # type: ignore[valid-type]
    asset_class: AssetClass


class GateSettings(Strict):
    test: Literal["prequential", "anytime", "none"] = "prequential"
    alpha: Weight = Field(0.05, gt=0, lt=1)
    min_scores: StrictInt | None = Field(None, ge=1, le=10_000)


class DrafterSettings(Strict):
    """Server drafting: a model among those the operator configured (``MEMTRIAL_LLM_CONFIG``).

    The endpoint and its key belong to the operator's configuration; a tenant
    never sends a URL or a key.
    """

    provider: Name = Field(description="a provider of the server's LLM configuration (GET /v1/llm/providers lists them)")
    model: Name = Field(description="a model that provider allows, e.g. openai/gpt-4o-mini")
    temperature: Weight = Field(0.7, ge=0, le=2)
    max_retries: StrictInt = Field(2, ge=0, le=5)

    @model_validator(mode="before")
    @classmethod
    def _no_endpoint(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in ("api_base", "api_key"):
                if key in data:
                    raise ValueError(f"{key} is not accepted: LLM endpoints and their keys are configured by the operator; choose a provider")
        return data


class AgentCreate(Strict):
    name: Name
    investor: Literal["conservative", "balanced", "aggressive"]
    universe: list[Asset] = Field(min_length=1, max_length=500)
    design: Literal["half", "full"] = "half"
    gate: GateSettings = GateSettings()
    learner: Literal["auto", "identity", "content"] = "auto"
    fallback: Literal["ftrl", "ens", "ref", "uniform"] = "ftrl"
    fee_bp: Weight = Field(15.0, ge=0, le=1000)
    drafter: DrafterSettings | None = None
    action: Literal["gate", "dial"] = Field(
        "gate", description="gate: act on the best designed draft once the gate opens; dial: weigh memory by the anytime e-process (needs gate.test 'anytime' or 'none')"
    )
    credit: Literal["centred", "raw"] = Field("centred", description="what values are learned from: date-centred contributions or the raw same-day contrasts")

    @field_validator("universe")
    @classmethod
    def _unique_assets(cls, universe: list[Asset]) -> list[Asset]:
        names = [a.asset for a in universe]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"assets must be unique, repeated: {duplicates}")
        return universe


class GatePublic(BaseModel):
    test: str
    alpha: float
    min_scores: int
    statistic: str
    bets: list[float]


class AgentPublic(BaseModel):
    id: str
    name: str
    investor: str
    universe: list[Asset]
    design: str
    gate: GatePublic
    gate_hash: str
    learner: str
    fallback: str
    fee_bp: float
    action: str
    credit: str
    drafter: dict[str, Any] | None
    created_at: dt.datetime


class AgentPatch(Strict):
    """What can change after creation: the name and the drafter (the gate and the mandate are frozen)."""

    name: Name | None = None
    drafter: DrafterSettings | None = None
    remove_drafter: bool = False


class AgentList(BaseModel):
    """One page of agents, oldest first; pass ``next_cursor`` as ``cursor`` for the next (null: last page)."""

    items: list[AgentPublic]
    next_cursor: str | None
    limit: int


NameQuery = Annotated[str | None, Query(min_length=1, max_length=200, pattern=r"^[^\x00]+$", description="only agents with exactly this name")]


# -- experiences ----------------------------------------------------------
MAX_BATCH = 256
MAX_BATCH_TEXT = 1_000_000


class ExperienceCreate(Strict):
    text: bounded_text(20_000)  # type: ignore[valid-type]
    metadata: JsonDocument = Field(default_factory=dict)
    structured: JsonDocument | None = None


class ExperienceBatch(Strict):
    experiences: list[ExperienceCreate] = Field(min_length=1, max_length=MAX_BATCH)

    @field_validator("experiences")
    @classmethod
    def _bounded(cls, experiences: list[ExperienceCreate]) -> list[ExperienceCreate]:
        total = sum(len(item.text) for item in experiences)
        if total > MAX_BATCH_TEXT:
            raise ValueError(f"a batch may hold at most {MAX_BATCH_TEXT} characters of text, got {total}; send it in parts")
        return experiences


def _experience_body(value: Any) -> str:
    return "batch" if isinstance(value, dict) and "experiences" in value else "single"


#: POST .../experiences takes one experience or a batch; a body with "experiences" is a batch.
ExperienceInput = Annotated[
    Annotated[ExperienceCreate, Tag("single")] | Annotated[ExperienceBatch, Tag("batch")], Discriminator(_experience_body)
]


class ExperiencePatch(Strict):
    metadata: JsonDocument


class ValuePublic(BaseModel):
    """Empirical-Bayes mean and sd; after a full-Bayes refit also its 90% interval and P(v > 0)."""

    mean: float
    sd: float | None
    n: int
    lower: float | None = None
    upper: float | None = None
    p_positive: float | None = None


class ContributionPublic(BaseModel):
    decision_id: str
    decision_time: dt.datetime
    contribution: float
    centred: float


class ExperiencePublic(BaseModel):
    id: str
    text: str
    metadata: dict[str, Any]
    structured: dict[str, Any] | None
    active: bool
    created_at: dt.datetime
    value: ValuePublic


class ExperienceDetail(ExperiencePublic):
    contributions: list[ContributionPublic]


class ExperienceList(BaseModel):
    """A page of experiences in insertion order. Page with ``cursor`` (pass ``next_cursor``;
    null on the last page); ``offset`` paging is kept for older clients."""

    items: list[ExperiencePublic]
    total: int
    limit: int
    offset: int
    next_cursor: str | None = None


class SearchRequest(Strict):
    query: bounded_text(20_000)  # type: ignore[valid-type]
    k: StrictInt = Field(4, ge=1, le=100)


class SearchHit(BaseModel):
    id: str
    text: str
    score: float


class SearchResult(BaseModel):
    hits: list[SearchHit]


# -- decisions ------------------------------------------------------------
def _finite_weights(weights: dict[str, float], field: str) -> dict[str, float]:
    for asset, weight in weights.items():
        if not math.isfinite(weight):
            raise ValueError(f"{field} for {asset!r} must be finite, got {weight}")
        if weight < 0:
            raise ValueError(f"{field} for {asset!r} must be >= 0 (long only), got {weight}")
    return weights


class DecisionCreate(Strict):
    decision_time: Moment = Field(description="when the decision is made; not later than now plus the server's allowed clock skew")
    maturity: Moment = Field(description="when the outcome is known (after the horizon's last close)")
    context_text: bounded_text(50_000)  # type: ignore[valid-type]
    context_features: dict[Name, Weight] = Field(default_factory=dict, max_length=1000)
    reference_weights: dict[Name, Weight] | None = None
    horizon: StrictInt = Field(20, ge=1, le=1000, description="holding horizon in sessions")
    drafting: Literal["client", "server"] = "client"

    @field_validator("reference_weights")
    @classmethod
    def _check_reference(cls, weights: dict[str, float] | None) -> dict[str, float] | None:
        return None if weights is None else _finite_weights(weights, "reference weight")

    @model_validator(mode="after")
    def _check_times(self) -> DecisionCreate:
        if self.maturity < self.decision_time:
            raise ValueError("maturity must not be before decision_time")
        return self


class RetrievedPublic(BaseModel):
    id: str
    text: str
    score: float


class SubsetPublic(BaseModel):
    index: int
    mask: int
    experience_ids: list[str]
    texts: list[str]


class TrustStatePublic(BaseModel):
    status: str
    test: str
    n_scored: int
    statistic: float | None
    threshold: float | None
    mean_score: float | None
    is_open: bool


class DialPublic(BaseModel):
    trust_weight: float = Field(description="omega in [0, 1]: the share played on memory")
    log_evidence: float = Field(description="log K_t of the betting e-process omega comes from")
    noise_cost: float | None = Field(description="estimated utility cost of one draft's noise (null: no estimate yet)")
    gains: list[float] = Field(description="predicted gain of each designed subset, in subset order")
    combination: list[float] = Field(description="weight of each designed draft in the memory share, in subset order")


class PlanPublic(BaseModel):
    decision_id: str
    status: str
    decision_time: dt.datetime
    maturity: dt.datetime
    retrieved: list[RetrievedPublic]
    subsets: list[SubsetPublic]
    predictions: dict[str, float]
    learner_mode: str
    trust: TrustStatePublic
    q: float
    dial: DialPublic | None = Field(None, description="agents acting by the trust dial: omega, its evidence and how the drafts will be combined")


class DraftsSubmit(Strict):
    drafts: list[dict[Name, Weight]] = Field(min_length=1, max_length=64, description="one weight per asset of the universe, every asset named")

    @field_validator("drafts")
    @classmethod
    def _check(cls, drafts: list[dict[str, float]]) -> list[dict[str, float]]:
        for index, draft in enumerate(drafts):
            _finite_weights(draft, f"drafts[{index}] weight")
        return drafts


class DecisionPublic(BaseModel):
    decision_id: str
    status: str
    weights: dict[str, float]
    action: str
    subset: list[str] | None
    mask: int | None
    q: float | None
    trust: TrustStatePublic
    predictions: dict[str, float]
    predicted_gain: float
    learner_mode: str
    explanation: str
    drafts: list[dict[str, float]]
    dial: DialPublic | None = None
    plan: PlanPublic


class SettleRequest(Strict):
    prices: dict[Name, Annotated[list[Weight], Field(max_length=10_000)]] | None = Field(None, description="per asset: entry close then one close per session")
    returns: dict[Name, Annotated[list[Weight], Field(max_length=10_000)]] | None = Field(None, description="per asset: one simple return per session")
    settled_at: Moment | None = Field(None, description="when the outcome became known; default: the maturity (which must have passed)")

    @model_validator(mode="after")
    def _one_of(self) -> SettleRequest:
        if (self.prices is None) == (self.returns is None):
            raise ValueError("give exactly one of prices or returns")
        series = self.prices if self.prices is not None else self.returns
        assert series is not None
        for asset, values in series.items():
            if not all(math.isfinite(v) for v in values):
                raise ValueError(f"series for {asset!r} must be finite")
        return self


class SettlementPublic(BaseModel):
    decision_id: str
    status: str
    settled_at: dt.datetime
    draft_utilities: list[float]
    reference_utility: float
    draft_mean_utility: float
    chosen_utility: float
    contributions: dict[str, float]
    centred: dict[str, float]
    interactions: dict[str, float]
    score: float | None
    values: dict[str, ValuePublic]


class DecisionSummary(BaseModel):
    decision_id: str
    status: Literal["planned", "decided", "settled", "failed"]
    decision_time: dt.datetime
    maturity: dt.datetime
    action: str | None
    chosen_utility: float | None
    created_at: dt.datetime
    failure: str | None = Field(None, description="why a failed decision was withdrawn")


class DecisionList(BaseModel):
    """A page of decisions, oldest first; pass ``next_cursor`` as ``cursor`` for the next (null: last page)."""

    items: list[DecisionSummary]
    next_cursor: str | None
    limit: int


# -- trust and values -----------------------------------------------------
class ScorePublic(BaseModel):
    decision_id: str
    score: float
    statistic: float | None


class TrustPublic(BaseModel):
    """The gate, its state, and its most recent scores (oldest first) with the statistic after each;
    ``n_scores`` counts them all. The raw log is paged at ``.../trust/log``."""

    gate: GatePublic
    gate_hash: str
    state: TrustStatePublic
    n_scores: int
    scores: list[ScorePublic]


class LogEntryPublic(BaseModel):
    """One hash-chained entry, exactly as hashed: sha256 of the canonical JSON of
    {index, kind, payload, prev_hash} (sorted keys, no spaces) is ``hash``."""

    index: int
    kind: str
    payload: dict[str, Any]
    prev_hash: str
    hash: str


class LogPage(BaseModel):
    """A page of the log in index order; entry 0's prev_hash is the gate hash."""

    gate_hash: str
    n_entries: int
    items: list[LogEntryPublic]
    next_cursor: str | None
    limit: int


class VerifyPublic(BaseModel):
    ok: bool
    n_entries: int
    first_invalid: int | None
    reason: str | None


class ValuesPublic(BaseModel):
    learner_mode: str
    values: dict[str, ValuePublic]
