"""The MemTrial lifecycle: ``plan -> decide -> settle`` (method 3).

- ``plan`` retrieves up to k experiences, builds the design, and freezes the
  learner's predicted values, the gate state and the fallback weight q. A plan
  may only be made at or after the engine's clock, and the clock only moves
  past a decision's outcome after that decision matured, so no plan can see an
  outcome that had not matured by its own time.
- ``decide`` takes one draft per designed subset and acts on the subset with
  the highest predicted value when the frozen gate state is open and that
  value is > 0; otherwise it takes the anchored mixture with the frozen q.
  With ``action="dial"`` it plays the frozen trust weight omega on a
  combination of the designed drafts and 1 - omega on that mixture (method 4.8).
- ``settle`` scores every draft, the reference, the draft mean, the chosen
  weights and the 201 mixtures against the realised prices, credits each
  experience with its Banzhaf contrast, scores the frozen prediction, and
  updates the learner, the gate and the fallback. Settling twice with the
  same prices is a no-op; with other prices it is an error.

The whole state round-trips exactly through :meth:`MemTrial.to_json`. The
engine's running state (learner statistics, gate statistics, the fallback's
sums, the log's head) is O(experiences); what grows with the number of
decisions (decision entries, log entries, contribution records) is written
once, item by item, to a :class:`~memtrial.history.History`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial import design as design_module
from memtrial.action import ActionRule, best_subset, choose, dial_combination, dial_gains, dial_weights, noise_gain
from memtrial.credit import contributions as banzhaf_contrasts
from memtrial.credit import interactions as interaction_contrasts
from memtrial.design import DesignKind
from memtrial.errors import (
    ConfigError,
    DuplicateError,
    InputError,
    LifecycleError,
    PrematureSettlementError,
    SettlementConflictError,
    StateError,
    TimeOrderError,
    UnknownDecisionError,
    parse_choice,
)
from memtrial.explain import explain
from memtrial.fallback import GRID, AnchoredMixture, FallbackVariant
from memtrial.history import DecisionEntry, DetachedHistory, History, InMemoryHistory
from memtrial.prereg import ChainVerification, LogEntry, verify_chain
from memtrial.records import (
    Action,
    Decision,
    Dial,
    ExperienceId,
    Plan,
    Settlement,
    Time,
    check_experience_id,
    decode_time,
    encode_time,
)
from memtrial.retrieval import top_k
from memtrial.scoring import rule as scoring_rule
from memtrial.scoring import score as score_drafts
from memtrial.settle import INVESTORS, Investor, mixture_utilities, project, utility
from memtrial.trust import GateConfig, GateTest, TrustGate, make_gate, pearson_score, trust_weight
from memtrial.values import CreditBasis, EmpiricalBayesLearner, LearnerMode

__all__ = ["EngineConfig", "MemTrial"]

STATE_VERSION = 2
DRAFT_SUM_TOLERANCE = 1e-6


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Settings fixed for the life of an engine.

    gamma: risk aversion of the utility; defaults to the investor's.
    investor: mandate used to project drafts when a plan names asset groups.
    diagnostics: compute the interaction contrasts of each settlement
    (diagnostics nobody acts on; a backtest turns them off).
    action: ``gate`` (the method's binary gate) or ``dial`` (the trust dial of
    method 4.8; needs the ``anytime`` gate, or ``none`` for a dial always at 1).
    credit: what the learner learns from: ``centred`` (date-centred
    contributions) or ``raw`` (the raw same-day contrasts).
    robust: screen each settlement's contributions for outliers before
    learning (:class:`~memtrial.values.OutlierGuard`: clipped beyond 6 robust
    sds, set aside beyond 50), so one implausible outcome cannot dominate or
    zero the values. Off by default (the method as specified); the service
    turns it on for every new agent.
    """

    k: int = 4
    design: DesignKind = DesignKind.HALF
    learner: LearnerMode = LearnerMode.AUTO
    gate: GateConfig = field(default_factory=GateConfig)
    fallback: FallbackVariant = FallbackVariant.FTRL
    investor: Investor | None = None
    gamma: float | None = None
    fee_bp: float = 15.0
    n_components: int | None = 8
    diagnostics: bool = True
    action: ActionRule = ActionRule.GATE
    credit: CreditBasis = CreditBasis.CENTRED
    robust: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.robust, bool):
            raise ConfigError(f"robust must be a bool, got {self.robust!r}", field="robust")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= 8:
            raise ConfigError(f"k must be an integer in [1, 8], got {self.k!r}", field="k")
        choices = (("design", DesignKind), ("learner", LearnerMode), ("fallback", FallbackVariant), ("action", ActionRule), ("credit", CreditBasis))
        for name, kind in choices:
            object.__setattr__(self, name, parse_choice(kind, getattr(self, name), name))
        if self.action is ActionRule.DIAL and self.gate.test is GateTest.PREQUENTIAL:
            raise ConfigError("action 'dial' weighs trust by the betting e-process: use gate test 'anytime' (or 'none'), not 'prequential'", field="action")
        if isinstance(self.investor, str):
            if self.investor not in INVESTORS:
                raise ConfigError(f"investor must be one of {sorted(INVESTORS)}, got {self.investor!r}", field="investor")
            object.__setattr__(self, "investor", INVESTORS[self.investor])
        if self.gamma is None:
            if self.investor is None:
                raise ConfigError("give gamma or an investor (whose gamma is used)", field="gamma")
            object.__setattr__(self, "gamma", self.investor.gamma)
        gamma = self.gamma
        if gamma is None or not (np.isfinite(gamma) and gamma >= 0):
            raise ConfigError(f"gamma must be finite and >= 0, got {self.gamma!r}", field="gamma")
        if not (np.isfinite(self.fee_bp) and self.fee_bp >= 0):
            raise ConfigError(f"fee_bp must be finite and >= 0, got {self.fee_bp!r}", field="fee_bp")

    @property
    def risk_aversion(self) -> float:
        return float(self.gamma)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        investor = self.investor
        return {
            "k": self.k,
            "design": self.design.value,
            "learner": self.learner.value,
            "gate": self.gate.to_dict(),
            "fallback": self.fallback.value,
            "investor": None
            if investor is None
            else {"name": investor.name, "risky_cap": investor.risky_cap, "defensive_floor": investor.defensive_floor, "gamma": investor.gamma},
            "gamma": self.gamma,
            "fee_bp": self.fee_bp,
            "n_components": self.n_components,
            "diagnostics": self.diagnostics,
            # settings added after the first states were written appear only when they differ from the
            # behaviour those states had, so every earlier state (and its downgrade) stays byte for byte
            **({} if self.action is ActionRule.GATE else {"action": self.action.value}),
            **({} if self.credit is CreditBasis.CENTRED else {"credit": self.credit.value}),
            **({"robust": True} if self.robust else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EngineConfig:
        values = dict(data)
        values["gate"] = GateConfig.from_dict(values["gate"])
        if values.get("investor") is not None:
            values["investor"] = Investor(**values["investor"])
        return cls(**values)


class NoiseCost:
    """kappa, the utility cost of one draft's noise: the running mean of each settled
    decision's :func:`~memtrial.action.noise_gain` (O(1) state)."""

    __slots__ = ("count", "total")

    def __init__(self, count: int = 0, total: float = 0.0) -> None:
        self.count, self.total = count, total

    def add(self, gain: float | None) -> None:
        if gain is not None:
            self.count += 1
            self.total += gain

    @property
    def cost(self) -> float | None:
        return self.total / self.count if self.count else None

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "total": self.total}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NoiseCost:
        return cls(int(data["count"]), float(data["total"]))


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What a settlement learns from: the utilities of the drafts, the reference, the mean, the chosen
    weights and the mixtures (none for bare utilities), with what they were computed from."""

    draft_utilities: NDArray[np.float64]
    reference_u: float
    mean_u: float | None
    chosen_u: float | None
    mixture_u: NDArray[np.float64]
    prices: NDArray[np.float64]
    outcome: Any = None
    rule: str | None = None
    scored: bool = False


@dataclass(slots=True)
class _Running:
    """The running state a settlement updates (the engine's own, or one being recomputed)."""

    learner: EmpiricalBayesLearner
    gate: TrustGate
    fallback: AnchoredMixture
    noise: NoiseCost


@dataclass(slots=True)
class _Experience:
    embedding: NDArray[np.float64] | None
    active: bool = True


def _show(value: Time | None) -> str:
    """A time as people write it (ISO 8601 for dates and datetimes)."""
    return value.isoformat() if isinstance(value, dt.date) else repr(value)


def _later_or_equal(first: Time, second: Time, what: str) -> bool:
    try:
        return bool(first >= second)  # type: ignore[operator]
    except TypeError:
        raise InputError(f"{what}: cannot compare {first!r} with {second!r} (mix of time types)", field="time") from None


class MemTrial:
    """One agent's memory credit assignment and trust-gated decisions.

    history: where decision entries, log entries and contribution records go
    (default: an :class:`~memtrial.history.InMemoryHistory`). The engine's own
    state stays O(experiences) whatever the number of decisions.
    """

    def __init__(self, config: EngineConfig | None = None, *, history: History | None = None, **settings: Any) -> None:
        if config is not None and settings:
            raise ConfigError("give either config or keyword settings, not both")
        self.config = config if config is not None else EngineConfig(**settings)
        self.history: History = InMemoryHistory() if history is None else history
        self.learner = self._new_learner()
        self.gate: TrustGate = make_gate(self.config.gate, sink=self._append_log)
        self.fallback = AnchoredMixture(self.config.fallback)
        self.noise = NoiseCost()
        self.experiences: dict[ExperienceId, _Experience] = {}
        self.clock: Time | None = None

    def _new_learner(self) -> EmpiricalBayesLearner:
        config = self.config
        return EmpiricalBayesLearner(config.learner, n_components=config.n_components, centre=config.credit is CreditBasis.CENTRED, robust=config.robust)

    def _append_log(self, entry: LogEntry) -> None:
        self.history.append_log(entry)

    @property
    def gate_hash(self) -> str:
        """SHA-256 of the frozen gate configuration (pre-registration)."""
        return self.gate.config_hash

    def _memory(self) -> InMemoryHistory:
        if not isinstance(self.history, InMemoryHistory):
            raise StateError("this engine's history is in an external store; ask the store", field="history")
        return self.history

    @property
    def entries(self) -> dict[str, DecisionEntry]:
        """Decision entries by id (in-memory history only)."""
        return self._memory().entries

    @property
    def records(self) -> list[tuple[str, ExperienceId, float]]:
        """Contribution records (decision id, experience id, contribution), in-memory history only."""
        return self._memory().records

    # -- experiences -------------------------------------------------------
    def add_experience(self, experience_id: ExperienceId, embedding: ArrayLike | None = None) -> None:
        """Register an experience; its embedding drives retrieval and content features."""
        check_experience_id(experience_id)
        if experience_id in self.experiences:
            raise DuplicateError(f"experience {experience_id!r} already exists", field="experience_id")
        vector = None
        if embedding is not None:
            vector = np.asarray(embedding, dtype=np.float64)
            self.learner.add_features(experience_id, vector)
        self.experiences[experience_id] = _Experience(vector)

    def remove_experience(self, experience_id: ExperienceId) -> None:
        """Forget an experience: no longer retrievable or valued (past records still centre their dates)."""
        self._experience(experience_id)
        del self.experiences[experience_id]
        self.learner.remove_features(experience_id)

    def retire_experience(self, experience_id: ExperienceId) -> None:
        """Stop retrieving an experience; its history and value stay."""
        self._experience(experience_id).active = False

    def _experience(self, experience_id: ExperienceId) -> _Experience:
        if experience_id not in self.experiences:
            raise InputError(f"unknown experience {experience_id!r}", field="experience_id")
        return self.experiences[experience_id]

    # -- plan --------------------------------------------------------------
    def plan(
        self,
        decision_id: str,
        time: Time,
        maturity: Time,
        *,
        retrieved: Sequence[ExperienceId] | None = None,
        context_embedding: ArrayLike | None = None,
        reference: ArrayLike | None = None,
        previous: ArrayLike | None = None,
        n_assets: int | None = None,
        risky: ArrayLike | None = None,
        defensive: ArrayLike | None = None,
        kind: str = "portfolio",
    ) -> Plan:
        """Retrieve, design and freeze predictions for one decision.

        Give ``retrieved`` (ids in rank order, at most k) or a
        ``context_embedding`` for cosine retrieval over active experiences.
        reference: (n,) the fallback's anchor (default equal weight);
        previous: (n,) the book before entry, for fees (default equal weight).
        risky/defensive: (n,) asset groups; drafts are then projected onto the
        configured investor's mandate.
        kind: ``portfolio`` (drafts are weights, settled by prices) or
        ``scored`` (drafts are anything a rule can score: decide with
        :meth:`decide_scored`, settle with :meth:`settle_scored`; no universe).
        """
        if not isinstance(decision_id, str) or not decision_id:
            raise InputError(f"decision_id must be a non-empty str, got {decision_id!r}", field="decision_id")
        encode_time(time)
        encode_time(maturity)
        if self.clock is not None and not _later_or_equal(time, self.clock, "time"):
            raise TimeOrderError(f"time {_show(time)} is before the engine's clock {_show(self.clock)}", field="time")
        if not _later_or_equal(maturity, time, "maturity"):
            raise InputError(f"maturity {_show(maturity)} must not be before time {_show(time)}", field="maturity")
        ids = self._retrieve(retrieved, context_embedding)
        if kind == "scored":
            given = [name for name, value in (("reference", reference), ("previous", previous), ("n_assets", n_assets), ("risky", risky), ("defensive", defensive)) if value is not None]
            if given:
                raise InputError(f"a scored decision has no universe: {given[0]} does not apply (designate the reference draft when deciding)", field=given[0])
            reference_weights, previous_weights, risky_mask, defensive_mask = np.zeros(0), np.zeros(0), None, None
        elif kind == "portfolio":
            reference_weights, previous_weights, risky_mask, defensive_mask = self._universe(reference, previous, n_assets, risky, defensive)
        else:
            raise InputError(f"kind must be 'portfolio' or 'scored', got {kind!r}", field="kind")
        if self.history.get(decision_id) is not None:
            raise DuplicateError(f"decision {decision_id!r} is already planned", field="decision_id")
        masks = design_module.plan_masks(self.config.design, self.config.k, len(ids))
        frozen = self._predictions(self.learner, ids)
        predictions = frozen["predictions"]
        trust = self.gate.decision()
        dial = self._dial(ids, masks, predictions) if self.config.action is ActionRule.DIAL else None
        if ids:
            details: dict[str, Any] = {"learner_mode": frozen["learner_mode"], "modes": {m: list(v) for m, v in frozen["mode_predictions"].items()}}
            if dial is not None:
                details["dial"] = dial.to_dict()
            self.gate.register(decision_id, predictions, details, track=False)
        plan = Plan(
            decision_id=decision_id,
            time=time,
            maturity=maturity,
            experience_ids=tuple(ids),
            masks=tuple(masks),
            subsets=tuple(design_module.subset_of(m, ids) for m in masks),  # type: ignore[misc]
            **frozen,
            trust=trust,
            q=self.fallback.choose(),
            reference=reference_weights,
            previous=previous_weights,
            risky=risky_mask,
            defensive=defensive_mask,
            dial=dial,
            kind=kind,
        )
        self.history.put(DecisionEntry(plan))
        self.clock = time
        return plan

    def _dial(self, ids: Sequence[ExperienceId], masks: Sequence[int], predictions: Mapping[ExperienceId, float]) -> Dial:
        """omega from the e-process so far, kappa from the matured decisions, pi from the predictions."""
        omega, log_e = trust_weight(self.config.gate, self.gate.statistics)
        cost = self.noise.cost
        gains = dial_gains(np.array([[predictions[e] for e in ids]]).reshape(1, len(ids)), masks)
        pi = dial_combination(gains, np.array([np.nan if cost is None else cost]), masks)[0]
        return Dial(float(omega), float(log_e), cost, tuple(float(g) for g in gains[0]), tuple(float(p) for p in pi))

    def _retrieve(self, retrieved: Sequence[ExperienceId] | None, context: ArrayLike | None) -> list[ExperienceId]:
        if (retrieved is None) == (context is None):
            raise InputError("give exactly one of retrieved or context_embedding", field="retrieved")
        if retrieved is not None:
            ids = [check_experience_id(e, "retrieved") for e in retrieved]
            if len(set(ids)) != len(ids) or len(ids) > self.config.k:
                raise InputError(f"retrieved must hold at most {self.config.k} distinct ids, got {ids!r}", field="retrieved")
            for experience_id in ids:
                if not self._experience(experience_id).active:
                    raise InputError(f"experience {experience_id!r} is retired", field="retrieved")
            return ids
        candidates = [(e, x.embedding) for e, x in self.experiences.items() if x.active and x.embedding is not None]
        return top_k(np.asarray(context, dtype=np.float64), candidates, self.config.k)

    def _universe(
        self,
        reference: ArrayLike | None,
        previous: ArrayLike | None,
        n_assets: int | None,
        risky: ArrayLike | None,
        defensive: ArrayLike | None,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_] | None, NDArray[np.bool_] | None]:
        if reference is None and n_assets is None:
            raise InputError("give reference weights or n_assets", field="reference")
        size = int(np.asarray(reference).shape[-1]) if reference is not None else int(n_assets)  # type: ignore[arg-type]
        if n_assets is not None and n_assets != size:
            raise InputError(f"n_assets is {n_assets} but reference has {size} weights", field="n_assets")
        equal = np.full(size, 1.0 / size) if size > 0 else np.zeros(0)
        weights = {}
        for name, given in (("reference", reference), ("previous", previous)):
            vector = equal if given is None else np.asarray(given, dtype=np.float64)
            _check_weights(vector[None, :] if vector.ndim == 1 else vector, size, name)
            weights[name] = vector
        if (risky is None) != (defensive is None):
            raise InputError("give both risky and defensive asset groups, or neither", field="risky")
        if risky is None:
            return weights["reference"], weights["previous"], None, None
        if self.config.investor is None:
            raise ConfigError("asset groups need an engine investor to project drafts onto", field="investor")
        risky_mask = np.asarray(risky, dtype=bool)
        defensive_mask = np.asarray(defensive, dtype=bool)
        project(equal, risky_mask, defensive_mask, self.config.investor)
        # the reference is played (alone, or mixed with the drafts): it is projected onto the mandate like every draft
        weights["reference"] = project(weights["reference"], risky_mask, defensive_mask, self.config.investor)
        return weights["reference"], weights["previous"], risky_mask, defensive_mask

    def withdraw(self, decision_id: str, reason: str) -> None:
        """Abandon a planned decision that will never be decided (its drafts could not be made, say).

        Its registered prediction is closed in the log by a ``withdrawal`` entry
        naming the reason (so the record shows why it was never scored); it can
        no longer be decided or settled. Withdrawing twice is a no-op.
        """
        entry = self._entry(decision_id)
        if entry.withdrawn is not None:
            return
        if entry.decision is not None:
            raise LifecycleError(f"decision {decision_id!r} was already decided: settle it instead", field="decision_id")
        if not isinstance(reason, str) or not reason:
            raise InputError(f"reason must be a non-empty str, got {reason!r}", field="reason")
        if entry.plan.experience_ids:
            self.gate.log.append("withdrawal", {"date": decision_id, "reason": reason})
        entry.withdrawn = reason
        self.history.put(entry)

    # -- decide ------------------------------------------------------------
    def decide(self, decision_id: str, drafts: ArrayLike) -> Decision:
        """Choose weights from one draft per designed subset (rows aligned with ``plan.subsets``)."""
        entry = self._live_entry(decision_id)
        plan = entry.plan
        if plan.kind != "portfolio":
            raise LifecycleError(f"decision {decision_id!r} is a scored decision: use decide_scored", field="decision_id")
        matrix = np.asarray(drafts, dtype=np.float64)
        if matrix.ndim != 2 or matrix.shape[0] != len(plan.masks):
            raise InputError(f"drafts must have one row per designed subset ({len(plan.masks)}), got shape {matrix.shape}", field="drafts")
        _check_weights(matrix, plan.n_assets, "drafts")
        if plan.risky is not None and plan.defensive is not None and self.config.investor is not None:
            matrix = project(matrix, plan.risky, plan.defensive, self.config.investor)
        if entry.decision is not None:
            if np.array_equal(entry.decision.drafts, matrix):
                return entry.decision
            raise DuplicateError(f"decision {decision_id!r} was already decided with other drafts", field="drafts")
        entry.decision = _choose(plan, matrix)
        self.history.put(entry)
        return entry.decision

    def decide_scored(self, decision_id: str, *, vectors: ArrayLike | None = None, n_drafts: int | None = None, reference: int = 0) -> Decision:
        """Act on a scored decision: one draft per designed subset (rows aligned with ``plan.subsets``).

        vectors: (S, m) numeric drafts (e.g. probability vectors over m named
        outcomes): the anchored mixture and the dial blend apply to them.
        n_drafts: S, for drafts that are not vectors (answers, documents): a
        closed gate, or a dial short of full trust, plays the reference draft.
        reference: index of the draft designated as the conservative reference
        (default 0, the memory-free draft).
        """
        entry = self._live_entry(decision_id)
        plan = entry.plan
        if plan.kind != "scored":
            raise LifecycleError(f"decision {decision_id!r} is a portfolio decision: use decide", field="decision_id")
        runs = len(plan.masks)
        if (vectors is None) == (n_drafts is None):
            raise InputError("give exactly one of vectors or n_drafts", field="drafts")
        if vectors is not None:
            matrix = np.asarray(vectors, dtype=np.float64)
            if matrix.ndim != 2 or matrix.shape[0] != runs or matrix.shape[1] < 1 or not np.all(np.isfinite(matrix)):
                raise InputError(f"vectors must be finite with one row per designed subset ({runs}), got shape {matrix.shape}", field="drafts")
        else:
            if isinstance(n_drafts, bool) or not isinstance(n_drafts, int) or n_drafts != runs:
                raise InputError(f"drafts must number one per designed subset ({runs}), got {n_drafts!r}", field="drafts")
            matrix = np.zeros((runs, 0))
        if isinstance(reference, bool) or not isinstance(reference, int) or not 0 <= reference < runs:
            raise InputError(f"reference must index one of the {runs} drafts, got {reference!r}", field="reference")
        if entry.decision is not None:
            if np.array_equal(entry.decision.drafts, matrix) and entry.decision.reference_index == reference:
                return entry.decision
            raise DuplicateError(f"decision {decision_id!r} was already decided with other drafts", field="drafts")
        entry.decision = _choose_scored(plan, matrix, reference)
        self.history.put(entry)
        return entry.decision

    # -- settle ------------------------------------------------------------
    def settle(self, decision_id: str, rel_prices: ArrayLike, at: Time | None = None) -> Settlement:
        """Score a matured decision and learn from it.

        rel_prices: (H, n) closes relative to the entry close. ``at`` (default
        the maturity) is when the outcome is known; it must not precede the
        maturity.
        """
        entry = self._live_entry(decision_id)
        plan = entry.plan
        if plan.kind != "portfolio":
            raise LifecycleError(f"decision {decision_id!r} is a scored decision: use settle_scored", field="decision_id")
        prices = np.asarray(rel_prices, dtype=np.float64)
        if entry.settlement is not None:
            if entry.settlement.rel_prices.shape == prices.shape and np.array_equal(entry.settlement.rel_prices, prices):
                return entry.settlement
            raise SettlementConflictError(f"decision {decision_id!r} was already settled with different prices", field="rel_prices")
        decision = self._decided(entry, "call decide before settle")
        settled_at = self._settled_at(decision_id, plan, at)
        outcome = self._portfolio_outcome(plan, decision, prices)
        return self._record(entry, self._learn(plan, outcome, settled_at, self._running()), settled_at)

    def settle_scored(
        self, decision_id: str, *, utilities: ArrayLike | None = None, outcome: Any = None, rule: str | None = None, at: Time | None = None
    ) -> Settlement:
        """Score a matured scored decision and learn from it.

        Give ``utilities`` (one per draft, computed by the caller; higher is
        better) or an ``outcome`` and a mixable built-in ``rule``: ``brier`` or
        ``log`` over the decision's probability vectors (the outcome is the
        index of the realised outcome) or ``abs_error`` over numbers (vectors
        of length 1). Settling twice with the same data is a no-op; with other
        data it is an error.
        """

        entry = self._live_entry(decision_id)
        plan = entry.plan
        if plan.kind != "scored":
            raise LifecycleError(f"decision {decision_id!r} is a portfolio decision: use settle", field="decision_id")
        given_utilities = self._check_scored(plan, utilities, rule)
        if entry.settlement is not None:
            if self._same_scored(entry.settlement, given_utilities, outcome, rule):
                return entry.settlement
            raise SettlementConflictError(f"decision {decision_id!r} was already settled with a different outcome", field="outcome" if rule else "utilities")
        decision = self._decided(entry, "decide before settling")
        settled_at = self._settled_at(decision_id, plan, at)
        realised = self._scored_outcome(decision, given_utilities, outcome, rule)
        return self._record(entry, self._learn(plan, realised, settled_at, self._running()), settled_at)

    def correct(
        self,
        decision_id: str,
        *,
        reason: str,
        rel_prices: ArrayLike | None = None,
        utilities: ArrayLike | None = None,
        outcome: Any = None,
        rule: str | None = None,
        at: Time | None = None,
    ) -> Settlement:
        """Replace a settled decision's outcome (a bad price feed, a mis-graded answer) and relearn.

        Give what :meth:`settle` (``rel_prices``) or :meth:`settle_scored`
        (``utilities``, or ``outcome`` and ``rule``) takes, and the ``reason``.
        The engine recomputes its running state from the stored history, in
        the order the log recorded plans and scores: every later plan's
        predictions are derived again from what the learner would then have
        known, and every score, the learner, the gate's statistics, the noise
        cost and the fallback equal those of an engine settled with the
        corrected outcome from the start. The log keeps the superseded score
        and gains a ``correction`` entry (the reason, the index of the entry
        it supersedes, the new score); the plans and decisions as they were
        served stay as they were. A correction equal to the current outcome is
        a no-op. Content features are those of the experiences held now.
        """
        entry = self._live_entry(decision_id)
        previous = entry.settlement
        if previous is None:
            raise LifecycleError(f"decision {decision_id!r} is not settled yet: settle it instead of correcting it", field="decision_id")
        if not isinstance(reason, str) or not reason.strip():
            raise InputError(f"reason must be a non-empty str, got {reason!r}", field="reason")
        plan = entry.plan
        decision = self._decided(entry, "decide before settling")
        settled_at = self._settled_at(decision_id, plan, previous.settled_at if at is None else at)
        if plan.kind == "portfolio":
            if rel_prices is None or utilities is not None or rule is not None:
                raise InputError("a portfolio decision is corrected with rel_prices", field="rel_prices")
            prices = np.asarray(rel_prices, dtype=np.float64)
            if previous.rel_prices.shape == prices.shape and np.array_equal(previous.rel_prices, prices):
                return previous
            realised = self._portfolio_outcome(plan, decision, prices)
        else:
            if rel_prices is not None:
                raise InputError("a scored decision is corrected with utilities, or an outcome and its rule", field="rel_prices")
            given_utilities = self._check_scored(plan, utilities, rule)
            if self._same_scored(previous, given_utilities, outcome, rule):
                return previous
            realised = self._scored_outcome(decision, given_utilities, outcome, rule)
        running, corrected, supersedes = self._replay(decision_id, realised, settled_at)
        self.learner, self.fallback, self.noise = running.learner, running.fallback, running.noise
        self.gate.statistics = running.gate.statistics
        self.gate.log.append(
            "correction",
            {
                "date": decision_id,
                "reason": reason,
                "supersedes": supersedes,
                "score": corrected.score,
                "realised": [[e, float(c)] for e, c in corrected.centred.items()],
            },
        )
        entry.settlement = corrected
        entry.corrections.append({"reason": reason, "superseded": previous.to_dict(mixtures=False)})
        self.history.correct(entry, corrected.contributions, corrected.centred)
        if self.clock is None or not _later_or_equal(self.clock, settled_at, "at"):
            self.clock = settled_at
        return corrected

    def _replay(self, corrected_id: str, realised: _Outcome, settled_at: Time) -> tuple[_Running, Settlement, int | None]:
        """The running state recomputed from the history with one decision's outcome replaced.

        Plans and scores are taken in the log's order (a plan's predictions
        depend on the scores before it); settlements of decisions without
        experiences touch only the fallback and the noise cost, whose sums do
        not depend on order, and are applied after.
        """
        entries = {entry.decision_id: entry for entry in self.history.entries_in_order()}
        learner = self._new_learner()
        for experience_id, experience in self.experiences.items():
            if experience.embedding is not None:
                learner.add_features(experience_id, experience.embedding)
        running = _Running(learner, make_gate(self.config.gate), AnchoredMixture(self.config.fallback), NoiseCost())
        pending: dict[str, Plan] = {}
        scored: set[str] = set()
        corrected: Settlement | None = None
        supersedes: int | None = None

        def stored(decision_id: str) -> DecisionEntry:
            entry = entries.get(decision_id)
            if entry is None:
                raise StateError(f"decision {decision_id!r} of the log is not in the history (was it pruned?): the state cannot be recomputed", field="history")
            return entry

        def settle(entry: DecisionEntry, plan: Plan) -> Settlement:
            if entry.decision_id == corrected_id:
                return self._learn(plan, realised, settled_at, running)
            assert entry.settlement is not None and entry.decision is not None
            return self._learn(plan, self._outcome_of(entry.plan, entry.decision, entry.settlement), entry.settlement.settled_at, running)

        for item in self.history.log_entries():
            decision_id = str(item.payload.get("date"))
            if item.kind == "prediction":
                plan = stored(decision_id).plan
                pending[decision_id] = replace(plan, **self._predictions(running.learner, plan.experience_ids))
            elif item.kind == "withdrawal":
                pending.pop(decision_id, None)
            elif item.kind == "score" and decision_id not in scored:
                scored.add(decision_id)
                result = settle(stored(decision_id), pending.pop(decision_id))
                if decision_id == corrected_id:
                    corrected, supersedes = result, item.index
        for decision_id, entry in entries.items():
            if entry.settlement is not None and not entry.plan.experience_ids:
                result = settle(entry, entry.plan)
                if decision_id == corrected_id:
                    corrected = result
        if corrected is None:
            raise StateError(f"decision {corrected_id!r} is settled but the log holds no score for it", field="history")
        return running, corrected, supersedes

    def _predictions(self, learner: EmpiricalBayesLearner, ids: Sequence[ExperienceId]) -> dict[str, Any]:
        """What a plan freezes from the learner: every mode's predictions and the selected mode's."""
        mode_predictions = learner.predict_modes(ids)
        selected = learner.selected_mode
        return {
            "predictions": dict(zip(ids, mode_predictions[selected], strict=True)),
            "mode_predictions": {m.value: v for m, v in mode_predictions.items()},
            "learner_mode": selected.value,
        }

    def _decided(self, entry: DecisionEntry, advice: str) -> Decision:
        if entry.decision is None:
            raise LifecycleError(f"decision {entry.decision_id!r} has no drafts yet: {advice}", field="decision_id")
        return entry.decision

    def _check_scored(self, plan: Plan, utilities: ArrayLike | None, rule: str | None) -> NDArray[np.float64] | None:
        if (utilities is None) == (rule is None):
            raise InputError("give exactly one of utilities or an outcome with its rule", field="utilities")
        if utilities is None:
            if not scoring_rule(str(rule)).mixable:
                raise InputError(f"rule {rule!r} scores answers the engine does not hold: score them (memtrial.scoring.score) and give utilities", field="rule")
            return None
        given = np.asarray(utilities, dtype=np.float64)
        if given.shape != (len(plan.masks),) or not np.all(np.isfinite(given)):
            raise InputError(f"utilities must be {len(plan.masks)} finite numbers, one per draft, got shape {given.shape}", field="utilities")
        return given

    @staticmethod
    def _same_scored(settlement: Settlement, utilities: NDArray[np.float64] | None, outcome: Any, rule: str | None) -> bool:
        return settlement.rule == rule and settlement.outcome == outcome and (utilities is None or np.array_equal(settlement.draft_utilities, utilities))

    def _portfolio_outcome(self, plan: Plan, decision: Decision, prices: NDArray[np.float64]) -> _Outcome:
        """Every draft, the reference, the draft mean, the chosen weights and the 201 mixtures scored on the prices."""
        draft_mean = decision.drafts.mean(axis=0)
        batch = np.vstack([decision.drafts, plan.reference, draft_mean, decision.weights])
        batch = batch / batch.sum(axis=1, keepdims=True)
        scores = np.asarray(utility(batch, prices, plan.previous, self.config.risk_aversion, self.config.fee_bp))
        n_drafts = decision.drafts.shape[0]
        reference_u, mean_u, chosen_u = (float(v) for v in scores[n_drafts : n_drafts + 3])
        mixture_u = mixture_utilities(plan.reference, draft_mean, prices, plan.previous, self.config.risk_aversion, self.config.fee_bp, GRID)
        return _Outcome(scores[:n_drafts], reference_u, mean_u, chosen_u, mixture_u, prices.copy())

    def _scored_outcome(self, decision: Decision, utilities: NDArray[np.float64] | None, outcome: Any, rule: str | None) -> _Outcome:
        """A scored decision's utilities: given, or the rule's scores of the drafts, their mean, the played blend and the mixtures."""
        reference_index = decision.reference_index or 0
        mixture_u = np.zeros(0)
        mean_u: float | None = None
        chosen_u: float | None = None
        if utilities is not None:
            draft_utilities = utilities
            if decision.played is not None:
                chosen_u = float(draft_utilities[decision.played])
        else:
            vectors = decision.drafts
            if vectors.shape[1] == 0:
                raise InputError(f"rule {rule!r} scores probability vectors; this decision's drafts are not vectors", field="rule")
            draft_mean = vectors.mean(axis=0)
            scores = score_drafts(str(rule), outcome, vectors=np.vstack([vectors, draft_mean, decision.weights]))
            draft_utilities = scores[: vectors.shape[0]]
            mean_u, chosen_u = float(scores[-2]), float(scores[-1])
            mixtures = GRID[:, None] * vectors[reference_index] + (1.0 - GRID[:, None]) * draft_mean
            mixture_u = score_drafts(str(rule), outcome, vectors=mixtures)
        reference_u = float(draft_utilities[reference_index])
        return _Outcome(draft_utilities, reference_u, mean_u, chosen_u, mixture_u, np.zeros((0, 0)), outcome, rule, True)

    def _outcome_of(self, plan: Plan, decision: Decision, settlement: Settlement) -> _Outcome:
        """A stored settlement's outcome, recomputed from what it was given (prices, an outcome and rule, or utilities)."""
        if plan.kind == "portfolio":
            return self._portfolio_outcome(plan, decision, settlement.rel_prices)
        utilities = settlement.draft_utilities if settlement.rule is None else None
        return self._scored_outcome(decision, utilities, settlement.outcome, settlement.rule)

    def _settled_at(self, decision_id: str, plan: Plan, at: Time | None) -> Time:
        settled_at = plan.maturity if at is None else at
        encode_time(settled_at)
        if not _later_or_equal(settled_at, plan.maturity, "at"):
            raise PrematureSettlementError(
                f"decision {decision_id!r} matures at {_show(plan.maturity)}; it cannot be settled at {_show(settled_at)}", field="at"
            )
        return settled_at

    def _record(self, entry: DecisionEntry, settlement: Settlement, settled_at: Time) -> Settlement:
        entry.settlement = settlement
        self.history.put(entry)
        if settlement.contributions:
            self.history.append_contributions(entry.decision_id, settlement.contributions, settlement.centred)
        if self.clock is None or not _later_or_equal(self.clock, settled_at, "at"):
            self.clock = settled_at
        return settlement

    def _running(self) -> _Running:
        return _Running(self.learner, self.gate, self.fallback, self.noise)

    def _learn(self, plan: Plan, realised: _Outcome, settled_at: Time, running: _Running) -> Settlement:
        """Credit, score and learn from a settled decision's utilities (the same for every kind)."""
        ids = plan.experience_ids
        draft_utilities = realised.draft_utilities
        contributions: dict[ExperienceId, float] = {}
        centred: dict[ExperienceId, float] = {}
        interactions: dict[str, float] = {}
        score = None
        if ids:
            contrast = banzhaf_contrasts(draft_utilities, list(plan.masks), len(ids))
            contributions = dict(zip(ids, (float(c) for c in contrast), strict=True))
            centred = dict(zip(ids, (float(c) for c in contrast - contrast.mean()), strict=True))
            if len(ids) >= 2 and self.config.diagnostics:
                interactions = interaction_contrasts(draft_utilities, list(plan.masks), len(ids))
            score = running.gate.score_predictions(plan.decision_id, plan.predictions, centred).score
            self._score_modes(running.learner, plan, centred)
            running.learner.update(plan.decision_id, contributions)
        if realised.mixture_u.size and realised.mean_u is not None:  # a scored decision settled with bare utilities has no mixtures to learn q from
            running.fallback.update(realised.mixture_u, realised.reference_u, realised.mean_u)
        if realised.mean_u is not None:
            running.noise.add(noise_gain(draft_utilities, realised.mean_u))
        return Settlement(
            decision_id=plan.decision_id,
            settled_at=settled_at,
            rel_prices=realised.prices,
            draft_utilities=draft_utilities,
            reference_utility=realised.reference_u,
            mean_utility=realised.mean_u,
            chosen_utility=realised.chosen_u,
            mixture_utilities=realised.mixture_u,
            contributions=contributions,
            centred=centred,
            interactions=interactions,
            score=score,
            values={e: running.learner.predict(e) for e in ids},
            outcome=realised.outcome,
            rule=realised.rule,
            scored=realised.scored,
        )

    def _score_modes(self, learner: EmpiricalBayesLearner, plan: Plan, centred: Mapping[ExperienceId, float]) -> None:
        if self.config.learner is not LearnerMode.AUTO:
            return
        realised = [centred[e] for e in plan.experience_ids]
        for mode, predicted in plan.mode_predictions.items():
            value = pearson_score(predicted, realised)
            if value is not None:
                learner.record_score(mode, value)

    # -- queries -----------------------------------------------------------
    def _entry(self, decision_id: str) -> DecisionEntry:
        entry = self.history.get(decision_id)
        if entry is None:
            raise UnknownDecisionError(f"no plan has decision id {decision_id!r}", field="decision_id")
        return entry

    def _live_entry(self, decision_id: str) -> DecisionEntry:
        entry = self._entry(decision_id)
        if entry.withdrawn is not None:
            raise LifecycleError(f"decision {decision_id!r} was withdrawn ({entry.withdrawn}); plan a new one", field="decision_id")
        return entry

    def get_plan(self, decision_id: str) -> Plan:
        return self._entry(decision_id).plan

    def prune_settled(self) -> int:
        """Drop settled decisions from the in-memory history (their learning is kept); returns how many.

        A pruned decision can no longer be looked up or re-settled here.
        """
        return self._memory().prune_settled()

    def verify(self) -> ChainVerification:
        """Recompute the hash chain of the whole log from the history, and check it ends at the head."""
        check = verify_chain(self.gate_hash, self.history.log_entries())
        if check.ok and check.n_entries != self.gate.log.length:
            return ChainVerification(False, check.n_entries, check.n_entries, f"the store holds {check.n_entries} entries; the engine has written {self.gate.log.length}")
        return check

    def values(self) -> dict[ExperienceId, float]:
        """Posterior mean value of every experience (0, the prior mean, before data)."""
        return {e: self.learner.predict(e) for e in self.experiences}

    def posterior(self, experience_id: ExperienceId) -> tuple[float, float | None, int]:
        """(mean, sd, n) of an experience's value; sd is None before the learner has data.

        The sd is the reported one (:meth:`EmpiricalBayesLearner.reported_posterior`): the plug-in
        posterior's plus the uncertainty of the estimated tau2, never 0 for a value learnt from data.
        """
        self._experience(experience_id)
        if not self.learner.is_fitted:
            return 0.0, None, 0
        posterior = self.learner.reported_posterior(experience_id)
        return posterior.mean, posterior.sd, self.learner.count(experience_id)

    # -- state -------------------------------------------------------------
    def to_json(self, *, embeddings: bool = True, history: bool = True) -> str:
        """The state as JSON; ``MemTrial.from_json`` restores it exactly.

        embeddings=False leaves the experience embeddings out (a store that
        keeps them elsewhere passes them back to ``from_json``).
        history=False leaves the in-memory history out: the compact running
        state alone, whose size depends on the experiences, not on the number
        of decisions (a store that keeps the history attaches it again).
        """
        return json.dumps(self.to_dict(embeddings=embeddings, history=history), sort_keys=True, separators=(",", ":"), allow_nan=False)

    def to_dict(self, *, embeddings: bool = True, history: bool = True) -> dict[str, Any]:
        return {
            "embeddings_included": embeddings,
            "version": STATE_VERSION,
            "config": self.config.to_dict(),
            "gate_hash": self.gate_hash,
            "clock": None if self.clock is None else encode_time(self.clock),
            "experiences": [
                [e, None if x.embedding is None or not embeddings else [float(v) for v in x.embedding], x.active]
                for e, x in self.experiences.items()
            ],
            "learner": self.learner.state_dict(),
            "gate": self.gate.state_dict(),
            "fallback": self.fallback.to_dict(),
            "noise": self.noise.to_dict(),
            "history": self._memory().to_dict() if history else None,
        }

    @classmethod
    def from_json(
        cls, text: str, embeddings: Mapping[ExperienceId, ArrayLike] | None = None, *, history: History | None = None
    ) -> MemTrial:
        """Restore a state; ``embeddings`` supplies those left out by ``to_json(embeddings=False)``,
        ``history`` the store of a state written with ``history=False``."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise StateError(f"state is not valid JSON: {error}") from None
        return cls.from_dict(data, embeddings, history=history)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], embeddings: Mapping[ExperienceId, ArrayLike] | None = None, *, history: History | None = None
    ) -> MemTrial:
        """Restore a state of this version, or upgrade a version-1 state (its history moves to an in-memory history)."""
        try:
            if data["version"] == 1:
                data = _upgrade_v1_state(data)
            if data["version"] != STATE_VERSION:
                raise StateError(f"state version {data['version']!r} is not supported (expected {STATE_VERSION})", field="version")
            stored = data["history"]
            if stored is not None and history is not None:
                raise StateError("the state carries its own history; do not pass another", field="history")
            attached: History = InMemoryHistory.from_dict(stored) if stored is not None else history or DetachedHistory()
            engine = cls(EngineConfig.from_dict(data["config"]), history=attached)
            if engine.gate_hash != data["gate_hash"]:
                raise StateError("the gate configuration does not match its registered hash", field="gate_hash")
            engine.clock = None if data["clock"] is None else decode_time(data["clock"])
            external = embeddings or {}
            for experience_id, embedding, active in data["experiences"]:
                if embedding is None and not data["embeddings_included"]:
                    embedding = external.get(experience_id)
                engine.add_experience(experience_id, embedding)
                engine.experiences[experience_id].active = bool(active)
            engine.learner.load_state_dict(data["learner"])
            engine.gate.load_state_dict(data["gate"])
            engine.fallback = AnchoredMixture.from_dict(data["fallback"])
            engine.noise = NoiseCost.from_dict(data.get("noise") or {"count": 0, "total": 0.0})
        except (KeyError, TypeError, ValueError) as error:
            raise StateError(f"state is malformed: {error!r}") from None
        return engine


def _upgrade_v1_state(data: Mapping[str, Any]) -> dict[str, Any]:
    """A version-1 state (whole history inside) as a version-2 state with an in-memory history.

    The learner's statistics are rebuilt by replaying the records date by
    date, the gate's by replaying its scores in order, and the log, the
    entries and the records move to the history unchanged, so the chain and
    every stored decision stay exactly as they were.
    """
    config = EngineConfig.from_dict(data["config"])
    learner = EmpiricalBayesLearner(config.learner, n_components=config.n_components)
    by_date: dict[str, dict[ExperienceId, float]] = {}
    for date, experience_id, contribution in data["records"]:
        by_date.setdefault(str(date), {})[experience_id] = float(contribution)
    for date, contributions in by_date.items():
        learner.update(date, contributions)
    for mode, values in data["auto_scores"].items():
        for value in values:
            learner.record_score(mode, float(value))
    gate = make_gate(config.gate)
    for value in data["gate"]["scores"]:
        gate.statistics.add(float(value))
    log = data["gate"]["log"]
    gate_state = gate.state_dict()
    gate_state["log_length"] = len(log)
    gate_state["log_head"] = log[-1]["hash"] if log else data["gate_hash"]
    return {
        "embeddings_included": data["embeddings_included"],
        "version": STATE_VERSION,
        "config": data["config"],
        "gate_hash": data["gate_hash"],
        "clock": data["clock"],
        "experiences": data["experiences"],
        "learner": learner.state_dict(),
        "gate": gate_state,
        "fallback": data["fallback"],
        "history": {"entries": data["entries"], "log": log, "records": data["records"]},
    }


def _check_weights(matrix: NDArray[np.float64], n_assets: int, name: str) -> None:
    if matrix.ndim != 2 or matrix.shape[1] != n_assets or n_assets < 1:
        raise InputError(f"{name} must have {n_assets} weights per row (n_assets >= 1), got shape {matrix.shape}", field=name)
    if not np.all(np.isfinite(matrix)):
        raise InputError(f"{name} must be finite (no NaN or inf)", field=name)
    if np.any(matrix < 0):
        raise InputError(f"{name} must be >= 0 (long only)", field=name)
    sums = matrix.sum(axis=1)
    if np.any(np.abs(sums - 1.0) > DRAFT_SUM_TOLERANCE):
        raise InputError(f"{name} rows must sum to 1, got sums {[round(float(s), 9) for s in sums]}", field=name)


def _choose_scored(plan: Plan, vectors: NDArray[np.float64], reference: int) -> Decision:
    """A scored decision's action: the gate or the dial over the designed drafts, the designated
    reference draft as the conservative anchor (mixed with the draft mean where drafts are vectors)."""
    mixable = vectors.shape[1] > 0
    best, gain = best_subset(plan.predictions, plan.subsets, plan.masks)
    common: dict[str, Any] = {"decision_id": plan.decision_id, "trust": plan.trust, "predictions": dict(plan.predictions), "learner_mode": plan.learner_mode, "drafts": vectors, "reference_index": reference}
    if plan.dial is not None:
        dial = plan.dial
        if mixable:
            weights = dial_weights(np.array(dial.combination), np.array(dial.trust_weight), np.array(plan.q), vectors[reference], vectors)
            decision = Decision(weights=weights, action=Action.DIAL, subset=None, mask=None, q=plan.q, predicted_gain=max(dial.gains), explanation="", dial=dial, played=None, **common)
        elif dial.trust_weight >= 1.0:  # answers cannot be blended: memory's draft only at full trust
            top = int(np.argmax(dial.combination))
            decision = Decision(weights=vectors[top], action=Action.DIAL, subset=plan.subsets[top], mask=plan.masks[top], q=None, predicted_gain=max(dial.gains), explanation="", dial=dial, played=top, **common)
        else:
            decision = Decision(weights=vectors[reference], action=Action.REFERENCE, subset=None, mask=None, q=None, predicted_gain=max(dial.gains), explanation="", dial=dial, played=reference, **common)
        return replace(decision, explanation=explain(decision, plan.subsets))
    if plan.trust.is_open and gain > 0.0:
        decision = Decision(weights=vectors[best], action=Action.SUBSET, subset=plan.subsets[best], mask=plan.masks[best], q=None, predicted_gain=gain, explanation="", played=best, **common)
    elif mixable:
        weights = plan.q * vectors[reference] + (1.0 - plan.q) * vectors.mean(axis=0)
        decision = Decision(weights=weights, action=Action.MIXTURE, subset=None, mask=None, q=plan.q, predicted_gain=gain, explanation="", played=None, **common)
    else:
        decision = Decision(weights=vectors[reference], action=Action.REFERENCE, subset=None, mask=None, q=None, predicted_gain=gain, explanation="", played=reference, **common)
    return replace(decision, explanation=explain(decision))


def _choose(plan: Plan, drafts: NDArray[np.float64]) -> Decision:
    """The gated choice between the best designed subset and the anchored mixture (or the dial's blend)."""
    if plan.dial is not None:
        dial = plan.dial
        weights = dial_weights(np.array(dial.combination), np.array(dial.trust_weight), np.array(plan.q), plan.reference, drafts)
        blended = Decision(
            decision_id=plan.decision_id,
            weights=weights,
            action=Action.DIAL,
            subset=None,
            mask=None,
            q=plan.q,
            trust=plan.trust,
            predictions=dict(plan.predictions),
            predicted_gain=max(dial.gains),
            learner_mode=plan.learner_mode,
            explanation="",
            drafts=drafts,
            dial=dial,
        )
        return replace(blended, explanation=explain(blended, plan.subsets))
    choice = choose(plan.predictions, plan.subsets, plan.masks, plan.trust.is_open, plan.q, plan.reference, drafts)
    common = {
        "decision_id": plan.decision_id,
        "trust": plan.trust,
        "predictions": dict(plan.predictions),
        "predicted_gain": choice.gain,
        "learner_mode": plan.learner_mode,
        "drafts": drafts,
        "weights": choice.weights,
    }
    if choice.index is not None:
        decision = Decision(action=Action.SUBSET, subset=plan.subsets[choice.index], mask=plan.masks[choice.index], q=None, explanation="", **common)  # type: ignore[arg-type]
    else:
        decision = Decision(action=Action.MIXTURE, subset=None, mask=None, q=plan.q, explanation="", **common)  # type: ignore[arg-type]
    return replace(decision, explanation=explain(decision))
