"""Request and response bodies (Pydantic), named by role. Core records convert at the boundary."""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastapi import Query
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from memtrial.action import ActionRule
from memtrial.action.fallback import FallbackVariant
from memtrial.credit.design import DesignKind
from memtrial.curation import SPAN_RULE, ErrorControl, QuarantineConfig, RetrievalMode, spans_finitely
from memtrial.curation.quarantine import MAX_CLIP, MAX_SPREAD, MIN_LEVEL
from memtrial.drafting.answers import AnswerKind
from memtrial.engine.config import SCORED_DESIGN, ReferenceSource, default_setting
from memtrial.outcomes.scoring import Rule
from memtrial.records import DecisionKind
from memtrial.trust import GateTest
from memtrial.values import CreditBasis, LearnerMode
from service.api_types import (
    AgentList,
    AgentPublic,
    Asset,
    AssetClass,
    ContributionPublic,
    CorrectionPublic,
    DecisionList,
    DecisionPublic,
    DecisionRecord,
    DecisionSummary,
    DialPublic,
    ErrorBody,
    ErrorDetail,
    ExperienceDetail,
    ExperienceList,
    ExperiencePublic,
    GatePublic,
    LogEntryPublic,
    LogPage,
    PlanPublic,
    QuarantinePublic,
    QuarantineStatePublic,
    RankedPublic,
    RankResult,
    RetrievedPublic,
    ScorePublic,
    SearchHit,
    SearchResult,
    SettlementPublic,
    SubsetPublic,
    TrustPublic,
    TrustStatePublic,
    ValueEntryPublic,
    ValuePublic,
    ValuesPublic,
    VerifyPublic,
    WarningPublic,
)
from service.modes import ExperienceStatus, Listed, listed_in_order
from service.settings import MAX_DRAFTS_CEILING
from service.validation import (
    ExternalId,
    Id,
    Instructions,
    JsonDocument,
    JsonValue,
    Moment,
    Name,
    Weight,
    bounded_text,
    finite,
)

__all__ = [
    "ASSET_CLASSES",
    "AgentCreate",
    "AgentList",
    "AgentPatch",
    "AgentPublic",
    "AnswerSettings",
    "Asset",
    "AssetClass",
    "ContributionPublic",
    "CorrectionPublic",
    "CorrectionRequest",
    "DEFENSIVE_CLASSES",
    "DecisionCreate",
    "DecisionList",
    "DecisionPublic",
    "DecisionRecord",
    "DecisionSummary",
    "DialPublic",
    "DrafterSettings",
    "DraftsSubmit",
    "ERROR_RESPONSES",
    "ErrorBody",
    "ErrorDetail",
    "ExperienceBatch",
    "ExperienceCreate",
    "ExperienceDetail",
    "ExperienceInput",
    "ExperienceList",
    "ExperiencePatch",
    "ExperiencePublic",
    "ExperienceStatus",
    "GatePublic",
    "GateSettings",
    "LogEntryPublic",
    "LogPage",
    "MAX_BATCH",
    "MAX_BATCH_TEXT",
    "NameQuery",
    "PlanPublic",
    "PortfolioDrafts",
    "QuarantinePublic",
    "QuarantineStatePublic",
    "QuarantineSettings",
    "RankRequest",
    "RankResult",
    "RankedPublic",
    "ReleaseRequest",
    "RISKY_CLASSES",
    "RetrievedPublic",
    "ScorePublic",
    "SearchHit",
    "SearchRequest",
    "SearchResult",
    "SettleRequest",
    "SettlementPublic",
    "Strict",
    "SubsetPublic",
    "TrustPublic",
    "TrustStatePublic",
    "ValueEntryPublic",
    "ValuePublic",
    "ValuesPublic",
    "VerifyPublic",
    "WarningPublic",
    "check_portfolio_drafts",
]

if TYPE_CHECKING:
    LearnerField = LearnerMode
else:  # a LearnerMode, its values listed with the default first, as the document has always listed them
    LearnerField = Annotated[str, listed_in_order(LearnerMode, "auto", "identity", "content")]

ASSET_CLASSES = ("equities", "bonds", "cash", "commodities", "real_estate", "crypto", "stocks")
RISKY_CLASSES = frozenset({"equities", "real_estate", "crypto", "stocks"})
DEFENSIVE_CLASSES = frozenset({"bonds", "cash"})


_ERROR_MEANINGS = {
    401: "missing, unknown or revoked API key",
    404: "no such resource for this tenant",
    408: "the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS)",
    409: "conflict with the agent's state (time order, maturity, a different payload)",
    413: "request body too large",
    422: "invalid input; the message names the field and the rule",
    429: "rate limit for this key reached",
    502: "the drafter failed or answered malformed drafts",
    503: "the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key)",
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": meaning} for status, meaning in _ERROR_MEANINGS.items()
}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def error_at(model: str, field: str, message: str) -> ValidationError:
    """A model validator's error that names one of the model's fields (a plain ValueError names the body)."""
    return error_at_place(model, (field,), message)


def error_at_place(title: str, place: tuple[int | str, ...], message: str) -> ValidationError:
    """A validator's error at ``place`` within what it validates (pydantic puts the field's own name before it)."""
    return ValidationError.from_exception_data(
        title, [InitErrorDetails(type=PydanticCustomError("value_error", message), loc=place, input=None)]
    )


def core_default(name: str) -> Any:
    """The core's default for an engine setting (:class:`~memtrial.engine.config.EngineConfig`'s field)."""
    return default_setting(name)


#: the core's defaults of the curation settings (method 4.12-4.14)
RETRIEVAL_DEFAULT: RetrievalMode = core_default("retrieval")
QUARANTINE_DEFAULT: QuarantineConfig = core_default("quarantine")
# bounds inside the type, not on a field whose type may be null: there the REST description wrote them as
# "ge"/"le", which no JSON Schema reader knows (the value was checked all the same)
DraftBudget = Annotated[StrictFloat, Field(ge=1, le=16), AfterValidator(finite)]
Clip = Annotated[StrictFloat, Field(gt=0, le=MAX_CLIP), AfterValidator(finite)]


class QuarantineSettings(Strict):
    """The quarantine of credibly harmful experiences (method 4.13) and the detection of stale lessons (4.14)."""

    enabled: StrictBool = Field(
        QUARANTINE_DEFAULT.enabled,
        description="test every experience after each settlement and keep those credibly harmful out of retrieval and rank",
    )
    level: Weight = Field(
        QUARANTINE_DEFAULT.level,
        ge=MIN_LEVEL,  # below it a quarantine's bar overflows to inf, which no log entry records
        lt=1,
        description="the bound that control names: on the expected share of wrongly quarantined experiences (value >= 0) among those quarantined (fdr), or on the probability that any is ever quarantined (fwer)",
    )
    change_threshold: Weight = Field(
        QUARANTINE_DEFAULT.change_threshold,
        gt=1,
        description="the e-value at which a change of sign of an experience's contributions is detected (its value is then learnt from the change on); above 1",
    )
    spread: Weight = Field(
        QUARANTINE_DEFAULT.spread,
        ge=0,
        le=MAX_SPREAD,
        description="s of the tests' shares of the level, w_j = (s + 1) / ((j + s) (j + s + 1)) for the j-th test the agent starts: 0 favours the first experiences tested, a larger s spreads the level evenly over the first s or so (method 4.13)",
    )
    clip: Clip | None = Field(
        QUARANTINE_DEFAULT.clip,
        description="the weighted sign's scale in mean absolute contributions (each contribution counts as sign times min(|c| / (clip * mean |c|), 1)); null: the plain sign test",
    )
    control: Listed[ErrorControl] = Field(
        QUARANTINE_DEFAULT.control,
        description="what level bounds: fdr, the false discovery rate (each quarantine lowers the evidence the later ones need), or fwer, the probability of any wrong quarantine (method 4.13)",
    )


# -- agents ---------------------------------------------------------------
# every default of a new agent's engine settings is the core's (memtrial.engine.config.default_setting)
_GATE = default_setting("gate")


class GateSettings(Strict):
    test: Listed[GateTest] = _GATE.test
    alpha: Weight = Field(_GATE.alpha, gt=0, lt=1)
    min_scores: StrictInt | None = Field(None, ge=1, le=10_000)


class DrafterSettings(Strict):
    """Server drafting: a model among those the operator configured (``MEMTRIAL_LLM_CONFIG``).

    The endpoint and its key belong to the operator's configuration; a tenant
    never sends a URL or a key.
    """

    provider: Name = Field(
        description="a provider of the server's LLM configuration (GET /v1/llm/providers lists them)"
    )
    model: Name = Field(description="a model that provider allows, e.g. openai/gpt-4o-mini")
    temperature: Weight = Field(0.7, ge=0, le=2)
    max_retries: StrictInt = Field(2, ge=0, le=5)

    @model_validator(mode="before")
    @classmethod
    def _no_endpoint(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in ("api_base", "api_key"):
                if key in data:
                    raise ValueError(
                        f"{key} is not accepted: LLM endpoints and their keys are configured by the operator; choose a provider"
                    )
        return data


class AnswerSettings(Strict):
    """What a scored agent's drafts are, for server drafting (the model is asked for exactly this form)."""

    type: Listed[AnswerKind] = Field(
        description="probabilities: one per named outcome (agents with outcomes); number: a finite number; choice: one of choices; text: free text"
    )
    choices: list[Name] | None = Field(None, min_length=2, max_length=64, description="choice: the allowed answers")
    minimum: Weight | None = Field(None, description="number: the smallest allowed answer")
    maximum: Weight | None = Field(None, description="number: the largest allowed answer")
    instructions: Instructions | None = Field(
        None, description="what the answer is, in words every prompt opens with (one line, without '<' or '>')"
    )


_RETRIEVAL = (
    "similarity: plans retrieve the k experiences closest to the context; value_aware: by similarity and learned "
    "value, acting on values only as much as the trust evidence allows (with none, exactly the similarity ranking)"
)


class AgentCreate(Strict):
    name: Name
    kind: Listed[DecisionKind] = Field(
        DecisionKind.PORTFOLIO,
        description="portfolio: drafts are weights over the universe, settled by prices; scored: drafts are any JSON, settled by utilities or an outcome and a rule",
    )
    investor: Literal["conservative", "balanced", "aggressive"] | None = Field(
        None, description="portfolio agents: the mandate and risk aversion"
    )
    universe: list[Asset] | None = Field(None, min_length=1, max_length=500, description="portfolio agents: the assets")
    outcomes: list[Name] | None = Field(
        None,
        min_length=2,
        max_length=64,
        description="scored agents whose drafts are probability forecasts: the outcome names each draft gives a probability for",
    )
    design: Listed[DesignKind] = Field(
        default_setting("design"),
        description="fold: the eight odd-size subsets of the four retrieved (every experience alone, no memory-free run); half: the eight even-size ones (the memory-free draft first); full: all sixteen; saturated: up to seven retrieved (k) screened in eight runs (no memory-free run). Default: fold for portfolio agents, half for scored agents (their reference is the memory-free draft)",
    )
    k: StrictInt = Field(
        default_setting("k"),
        ge=1,
        le=8,
        description="experiences retrieved per decision; half, fold and full draft 2**(k-1), 2**(k-1) and 2**k subsets, saturated the smallest power of two above k (2 for k = 1, 4 for 2 to 3, 8 for 4 to 7, 16 for 8); k = 1 needs full or saturated (a half fraction of one experience is one run, which cannot credit it); a setting that needs more drafts than the server's MEMTRIAL_MAX_DRAFTS_PER_DECISION (default 64) is refused",
    )
    gate: GateSettings = GateSettings()  # type: ignore[call-arg]  # pydantic fills the defaults
    learner: LearnerField = default_setting("learner")
    fallback: Listed[FallbackVariant] = Field(
        default_setting("fallback"),
        description="what a closed gate or a dial short of full trust plays: ref: the reference; ftrl: the KL-anchored mixture of the reference and the draft mean (a0 = 0.9); uniform: the same with a0 = 0.5; ens: the draft mean",
    )
    fee_bp: Weight = Field(default_setting("fee_bp"), ge=0, le=1000)
    drafter: DrafterSettings | None = None
    answer: AnswerSettings | None = Field(
        None,
        description="scored agents: what each draft is; server drafting asks the model for it, and drafts a client posts are held to it (a number's range, a choice's list, a text's length); default: probabilities over outcomes, else any JSON from a client and free text from the server",
    )
    action: Listed[ActionRule] = Field(
        default_setting("action"),
        description="dial: weigh memory by the anytime e-process (needs gate.test 'anytime' or 'none'); gate: act on the best designed draft once the gate opens (any gate.test)",
    )
    credit: Listed[CreditBasis] = Field(
        default_setting("credit"),
        description="what values are learned from: the raw same-day contrasts or date-centred contributions",
    )
    robust: StrictBool = Field(
        default_setting("robust"),
        description="screen each settlement's contributions for outliers before learning (clipped beyond 6 robust sds, set aside beyond 50); false: the method's plain estimator",
    )
    draft_budget: DraftBudget | None = Field(
        default_setting("draft_budget"),
        description="LLM draft calls per decision on average (null: every designed subset every time); each plan lists exactly the drafts to make",
    )
    draft_horizon: StrictInt | None = Field(
        default_setting("draft_horizon"),
        ge=1,
        le=10_000_000,
        description="the number of decisions the draft budget covers (null: open-ended): trials then come first, on credit the later decisions lend, each keeping one call",
    )
    reference: Listed[ReferenceSource] = Field(
        default_setting("reference"),
        description="portfolio agents: the conservative reference is the decision's reference_weights (equal weight when none) or its own memory-free draft",
    )
    retrieval: Listed[RetrievalMode] = Field(
        RETRIEVAL_DEFAULT,
        description=_RETRIEVAL,
    )
    quarantine: QuarantineSettings = Field(
        QuarantineSettings(),  # type: ignore[call-arg]  # pydantic fills the defaults
        description="keep credibly harmful experiences out of retrieval (GET .../experiences?status=quarantined lists them, POST .../experiences/{id}/release releases one)",
    )

    @model_validator(mode="before")
    @classmethod
    def _scored_design(cls, data: Any) -> Any:
        """A scored agent that names no design takes the core's scored design (its reference is the
        memory-free draft, which the default odd half does not draft)."""
        if isinstance(data, dict) and data.get("kind") == DecisionKind.SCORED and "design" not in data:
            return {**data, "design": SCORED_DESIGN}
        return data

    @field_validator("outcomes")
    @classmethod
    def _unique_outcomes(cls, outcomes: list[str] | None) -> list[str] | None:
        if outcomes is not None and len(set(outcomes)) != len(outcomes):
            raise ValueError(f"outcomes must be unique, got {outcomes}")
        return outcomes

    @field_validator("universe")
    @classmethod
    def _unique_assets(cls, universe: list[Asset] | None) -> list[Asset] | None:
        if universe is None:
            return None
        names = [a.asset for a in universe]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"assets must be unique, repeated: {duplicates}")
        return universe


def _never_null(schema: dict[str, Any]) -> None:
    """A field that may be left out but is never null (a validator refuses null): its REST description shows
    neither null among its types nor a default (null)."""
    schema.pop("default", None)
    kinds = [kind for kind in schema.pop("anyOf", []) if kind != {"type": "null"}]
    if len(kinds) == 1:
        schema.update(kinds[0])
    elif kinds:
        schema["anyOf"] = kinds


class AgentPatch(Strict):
    """What can change after creation: the name, the drafter, the draft budget with its horizon, the retrieval
    mode and the quarantine. Every other setting is fixed at creation (:data:`FIXED_AGENT_SETTINGS` says why)."""

    name: Name | None = None
    drafter: DrafterSettings | None = None
    remove_drafter: bool = False
    draft_budget: DraftBudget | None = Field(
        None,
        description="LLM draft calls per decision on average from the next plan on (null: every designed subset every time); the running credit carries over",
    )
    draft_horizon: StrictInt | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="the number of decisions planned under a budget that it covers, counted from the first (null: open-ended)",
    )
    # optional but never null (refused below): the REST description leaves null out, so typed clients do too
    retrieval: Listed[RetrievalMode] | None = Field(
        None, description=_RETRIEVAL + "; from the next plan on", json_schema_extra=_never_null
    )
    quarantine: QuarantineSettings | None = Field(
        None,
        json_schema_extra=_never_null,
        description="the fields given change, the others stay: turning it on starts every experience's test afresh from the next settlement; turning it off drops the tests (quarantined experiences are retrieved again); a new level or change_threshold applies from the next settlement",
    )

    @field_validator("retrieval", "quarantine")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("cannot be null: give a value, or leave it out to keep it")
        return value


#: the settings fixed at an agent's creation, and why (a PATCH naming one is refused naming it)
FIXED_AGENT_SETTINGS: dict[str, str] = {
    "gate": "it is the pre-registered trust gate, whose hash anchors the log",
    "k": "it sets what a trial drafts and how many contrasts each score correlates",
    "design": "it sets what a trial drafts and what each contrast measures",
    "learner": "the log's predictions and scores were made by it",
    "credit": "the values were learnt from it",
    "robust": "the values were learnt with it",
    "action": "the dial's guarantee is stated for the rule it was registered with",
    "fallback": "the anchored mixture was learnt with it",
    "reference": "every decision was anchored on it",
    "kind": "it is what the agent's drafts and settlements are",
    "investor": "it is the agent's mandate",
    "universe": "it is the agent's mandate",
    "outcomes": "every scored decision was settled over them",
    "answer": "every scored decision's drafts were held to it",
    "fee_bp": "every settled utility was computed with it",
}


NameQuery = Annotated[
    str | None,
    Query(min_length=1, max_length=200, pattern=r"^[^\x00]+$", description="only agents with exactly this name"),
]


# -- experiences ----------------------------------------------------------
MAX_BATCH = 256
MAX_BATCH_TEXT = 1_000_000


class ExperienceCreate(Strict):
    text: bounded_text(20_000)  # type: ignore[valid-type]
    metadata: JsonDocument = Field(default_factory=dict)
    structured: JsonDocument | None = None
    external_id: ExternalId | None = Field(
        None,
        description="the experience's id in your own memory store (unique per agent, compared in Unicode normal form C, in which it is stored): adding one that exists updates its text and metadata instead of duplicating it",
    )


class ExperienceBatch(Strict):
    experiences: list[ExperienceCreate] = Field(min_length=1, max_length=MAX_BATCH)

    @field_validator("experiences")
    @classmethod
    def _bounded(cls, experiences: list[ExperienceCreate]) -> list[ExperienceCreate]:
        total = sum(len(item.text) for item in experiences)
        if total > MAX_BATCH_TEXT:
            raise ValueError(
                f"a batch may hold at most {MAX_BATCH_TEXT} characters of text, got {total}; send it in parts"
            )
        seen: dict[str, int] = {}
        for index, item in enumerate(experiences):
            if item.external_id is not None:
                if item.external_id in seen:
                    raise ValueError(
                        f"external_id {item.external_id!r} is given twice in one batch (items {seen[item.external_id]} and {index})"
                    )
                seen[item.external_id] = index
        return experiences


def _experience_body(value: Any) -> str:
    return "batch" if isinstance(value, dict) and "experiences" in value else "single"


#: POST .../experiences takes one experience or a batch; a body with "experiences" is a batch.
ExperienceInput = Annotated[
    Annotated[ExperienceCreate, Tag("single")] | Annotated[ExperienceBatch, Tag("batch")],
    Discriminator(_experience_body),
]


class ExperiencePatch(Strict):
    metadata: JsonDocument


#: the most candidates one rank or plan may hold
MAX_CANDIDATES = 100


def _distinct_ids(ids: list[str] | None) -> list[str] | None:
    if ids is not None and len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"ids must be distinct, repeated: {repeated}")
    return ids


def _one_candidate_list(ids: list[str] | None, info: ValidationInfo) -> list[str] | None:
    if ids is not None and info.data.get("candidate_ids") is not None:
        raise ValueError("give candidate_ids or candidate_external_ids, not both")
    return ids


def _one_score_each(similarities: list[float] | None, info: ValidationInfo) -> list[float] | None:
    """Similarities only with candidates, one per candidate."""
    if similarities is None:
        return None
    given = info.data.get("candidate_ids") or info.data.get("candidate_external_ids")
    if given is None:
        if "candidate_ids" in info.data and "candidate_external_ids" in info.data:
            raise ValueError("similarities score candidates: give candidate_ids or candidate_external_ids with them")
        return similarities
    if len(similarities) != len(given):
        raise ValueError(f"must hold one score per candidate ({len(given)}), got {len(similarities)}")
    if not spans_finitely(similarities):  # the core's rule, checked here so the request is refused whole
        raise ValueError(SPAN_RULE)
    return similarities


class RankRequest(Strict):
    """Candidates from your own store, by id or by external id (one of the two), and how many to use."""

    candidate_ids: list[Id] | None = Field(
        None,
        min_length=1,
        max_length=MAX_CANDIDATES,
        description="ids of this agent's active experiences, 1 to 100, distinct (in your similarity order when no similarities are given)",
    )
    candidate_external_ids: list[ExternalId] | None = Field(
        None,
        min_length=1,
        max_length=MAX_CANDIDATES,
        validate_default=True,
        description="as candidate_ids, by the external ids the experiences were added with (compared in Unicode normal form C)",
    )
    similarities: list[Weight] | None = Field(
        None,
        max_length=MAX_CANDIDATES,
        description="one finite score per candidate, higher is closer, on a cosine's scale (about -1 to 1: the value term spans at most [-1, 1]; null: the given order is the similarity order)",
    )
    k: StrictInt = Field(ge=1, le=MAX_CANDIDATES, description="how many to pick, 1 to 100 and at most the candidates")

    _distinct = field_validator("candidate_ids", "candidate_external_ids")(_distinct_ids)

    @field_validator("candidate_external_ids")
    @classmethod
    def _one_list(cls, ids: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if "candidate_ids" in info.data and info.data["candidate_ids"] is None and ids is None:
            raise ValueError("give candidate_ids or candidate_external_ids")
        return _one_candidate_list(ids, info)

    _scores = field_validator("similarities")(_one_score_each)

    @field_validator("k")
    @classmethod
    def _at_most_candidates(cls, k: int, info: ValidationInfo) -> int:
        given = info.data.get("candidate_ids") or info.data.get("candidate_external_ids")
        if given is not None and k > len(given):
            raise ValueError(f"must be at most the number of candidates ({len(given)}), got {k}")
        return k


class ReleaseRequest(Strict):
    reason: bounded_text(2_000) = Field(  # type: ignore[valid-type]
        description="why the experience is released from quarantine (kept in the log with the evidence)"
    )


class SearchRequest(Strict):
    query: bounded_text(20_000)  # type: ignore[valid-type]
    k: StrictInt = Field(4, ge=1, le=100)


# -- decisions ------------------------------------------------------------
def _finite_weights(weights: dict[str, float], *where: int) -> dict[str, float]:
    """Weights that are finite and >= 0: else an error naming the weight's own field (``reference_weights.SPY``,
    ``drafts.3.SPY``: ``where`` is the place of the mapping within its field)."""
    for asset, weight in weights.items():
        rule = "finite" if not math.isfinite(weight) else ">= 0 (long only)" if weight < 0 else None
        if rule is not None:
            raise error_at_place("weights", (*where, asset), f"a weight must be {rule}, got {weight}")
    return weights


class DecisionCreate(Strict):
    decision_time: Moment = Field(
        description="when the decision is made; not later than now plus the server's allowed clock skew"
    )
    maturity: Moment = Field(description="when the outcome is known (after the horizon's last close)")
    context_text: bounded_text(50_000)  # type: ignore[valid-type]
    context_features: dict[Name, Weight] = Field(default_factory=dict, max_length=1000)
    reference_weights: dict[Name, Weight] | None = None
    horizon: StrictInt = Field(20, ge=1, le=1000, description="holding horizon in sessions")
    drafting: Literal["client", "server"] = "client"
    retrieved_ids: list[Id] | None = Field(
        None,
        min_length=0,
        max_length=8,
        description="bring your own retrieval: the experiences to plan on (ids of this agent's active experiences, 0 to k, in your rank order; [] when your retrieval found nothing: the plan drafts without memory alone); the server then neither embeds the context nor searches",
    )
    retrieved_external_ids: list[ExternalId] | None = Field(
        None,
        min_length=0,
        max_length=8,
        description="as retrieved_ids, by the external ids the experiences were added with (compared in Unicode normal form C)",
    )
    candidate_ids: list[Id] | None = Field(
        None,
        min_length=1,
        max_length=MAX_CANDIDATES,
        description="bring your own candidates: ids of this agent's active experiences (1 to 100, distinct), of which the engine picks k by the agent's retrieval mode (quarantined ones left out); the server does not search",
    )
    candidate_external_ids: list[ExternalId] | None = Field(
        None,
        min_length=1,
        max_length=MAX_CANDIDATES,
        description="as candidate_ids, by the external ids the experiences were added with (compared in Unicode normal form C)",
    )
    similarities: list[Weight] | None = Field(
        None,
        max_length=MAX_CANDIDATES,
        description="with candidates: one finite score per candidate, higher is closer (null: the given order is the similarity order)",
    )

    _distinct = field_validator("retrieved_ids", "retrieved_external_ids", "candidate_ids", "candidate_external_ids")(
        _distinct_ids
    )
    _scores = field_validator("similarities")(_one_score_each)

    @field_validator("candidate_ids")
    @classmethod
    def _retrieved_or_candidates(cls, ids: list[str] | None, info: ValidationInfo) -> list[str] | None:
        retrieved = info.data.get("retrieved_ids") is not None or info.data.get("retrieved_external_ids") is not None
        if ids is not None and retrieved:
            raise ValueError("give retrieved ids (your own retrieval) or candidates (the engine picks), not both")
        return ids

    @field_validator("candidate_external_ids")
    @classmethod
    def _candidates_alone(cls, ids: list[str] | None, info: ValidationInfo) -> list[str] | None:
        retrieved = info.data.get("retrieved_ids") is not None or info.data.get("retrieved_external_ids") is not None
        if ids is not None and retrieved:
            raise ValueError("give retrieved ids (your own retrieval) or candidates (the engine picks), not both")
        return _one_candidate_list(ids, info)

    @field_validator("reference_weights")
    @classmethod
    def _check_reference(cls, weights: dict[str, float] | None) -> dict[str, float] | None:
        return None if weights is None else _finite_weights(weights)

    @field_validator("maturity")
    @classmethod
    def _after_decision(cls, maturity: dt.datetime, info: ValidationInfo) -> dt.datetime:
        decided = info.data.get("decision_time")
        if decided is not None and maturity < decided:
            raise ValueError(
                f"maturity must not be before decision_time ({maturity.isoformat()} is before {decided.isoformat()})"
            )
        return maturity

    @field_validator("retrieved_external_ids")
    @classmethod
    def _one_retrieval(cls, ids: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if ids is not None and info.data.get("retrieved_ids") is not None:
            raise ValueError("give retrieved_ids or retrieved_external_ids, not both")
        return ids


class DraftsSubmit(Strict):
    drafts: list[JsonValue] = Field(
        min_length=1,
        max_length=MAX_DRAFTS_CEILING,
        description="one draft per designed subset, in the plan's order: for portfolio agents an object of weights naming every asset; for scored agents any JSON (at most the server's MEMTRIAL_MAX_DRAFTS_PER_DECISION, default 64)",
    )
    reference: StrictInt | None = Field(
        None,
        ge=0,
        le=MAX_DRAFTS_CEILING - 1,
        description="scored agents: the index of the draft that is the conservative reference (default 0, the memory-free draft)",
    )


PortfolioDrafts = list[dict[Name, Weight]]


def check_portfolio_drafts(drafts: list[dict[str, float]]) -> list[dict[str, float]]:
    for index, draft in enumerate(drafts):
        _finite_weights(draft, index)
    return drafts


class SettleRequest(Strict):
    prices: dict[Name, Annotated[list[Weight], Field(max_length=10_000)]] | None = Field(
        None, description="portfolio: per asset, entry close then one close per session"
    )
    returns: dict[Name, Annotated[list[Weight], Field(max_length=10_000)]] | None = Field(
        None, description="portfolio: per asset, one simple return per session"
    )
    utilities: list[Weight] | None = Field(
        None,
        max_length=MAX_DRAFTS_CEILING,
        description="scored: one utility per draft, in the plan's order (higher is better)",
    )
    outcome: JsonValue = Field(None, description="scored: the realised outcome, scored by rule")
    rule: Listed[Rule] | None = Field(
        None,
        description="scored: brier or log (probability forecasts; the outcome names an outcome), exact (answer equals outcome), abs_error (numbers)",
    )
    settled_at: Moment | None = Field(
        None, description="when the outcome became known; default: the maturity (which must have passed)"
    )

    @model_validator(mode="after")
    def _one_of(self) -> SettleRequest:
        given = [name for name in ("prices", "returns", "utilities", "rule") if getattr(self, name) is not None]
        if self.rule is None and self.outcome is not None:
            if not given:  # an outcome alone: what it lacks is its rule
                raise error_at(
                    type(self).__name__,
                    "rule",
                    "an outcome needs the rule that scores it (brier, log, exact or abs_error)",
                )
            raise error_at(
                type(self).__name__,
                "outcome",
                f"an outcome is scored by its rule: give it with its rule, or {given[0]} alone, not both",
            )
        if len(given) != 1:
            raise ValueError(
                "give exactly one of prices or returns (portfolio), utilities, or an outcome with its rule (scored)"
            )
        series = self.prices if self.prices is not None else self.returns
        for asset, values in (series or {}).items():
            if not all(math.isfinite(v) for v in values):
                raise ValueError(f"series for {asset!r} must be finite")
        return self


class CorrectionRequest(SettleRequest):
    """A settle body with the reason the earlier outcome was wrong."""

    reason: bounded_text(2_000) = Field(description="why the earlier outcome was wrong (kept in the log)")  # type: ignore[valid-type]


# -- trust and values -----------------------------------------------------
