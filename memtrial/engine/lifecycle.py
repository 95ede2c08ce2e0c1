"""The MemTrial lifecycle: ``plan -> decide -> settle`` (method 3), and ``correct`` (method 4.10).

- ``plan`` retrieves up to k experiences, builds the design, and freezes the
  learner's predictions, the gate state, the fallback weight q and the dial. A
  plan may not precede the engine's clock, and the clock moves past an outcome
  only once its decision matured, so no plan sees an outcome not matured by
  its own time (method 4.7).
- ``decide`` acts on one draft per designed subset (:mod:`memtrial.action.choices`).
- ``settle`` scores every draft against the outcome and learns from it
  (:mod:`memtrial.engine.learning`); again with the same outcome it is a no-op, with
  another an error; ``correct`` replaces an outcome (:mod:`memtrial.engine.corrections`).

Settings live in :mod:`memtrial.engine.config`, the state's serialisation in
:mod:`memtrial.engine.state`. The running state is O(experiences); what grows with
the number of decisions is written once, item by item, to a
:class:`~memtrial.engine.history.History`.
"""

from __future__ import annotations

import copy
import json
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.action.budget import BudgetPlan, DraftCredit, is_fresh, memory_row, plan_budget
from memtrial.action.choices import choose_portfolio, choose_scored, plan_dial
from memtrial.action.fallback import AnchoredMixture
from memtrial.action.rule import ActionRule
from memtrial.credit import design as design_module
from memtrial.curation import (
    Curator,
    Event,
    Posterior,
    QuarantineConfig,
    Ranked,
    RetrievalMode,
    contribution_counts,
    rank,
)
from memtrial.drafting.retrieval import check_embedding, cosine_similarities, top_k
from memtrial.engine.checkpoints import Checkpoint, CheckpointPolicy, decode_frozen
from memtrial.engine.checks import (
    MAX_UTILITY,
    Universe,
    check_plan_times,
    check_reason,
    check_scored,
    check_scored_design,
    float_array,
    later_or_equal,
    rows_of,
    same_scored,
    settled_at_or_after,
    universe_arrays,
)
from memtrial.engine.config import EngineConfig, ReferenceSource
from memtrial.engine.corrections import corrected_outcome, correction_entry, recompute
from memtrial.engine.history import HISTORY_METHODS, DecisionEntry, History, InMemoryHistory
from memtrial.engine.learning import NoiseCost, Running, frozen_predictions, learn, portfolio_outcome, scored_outcome
from memtrial.engine.reconfigure import reconfigured
from memtrial.engine.state import EngineState, ExperienceState, decode_state, encode_state
from memtrial.errors import (
    ConfigError,
    DuplicateError,
    InputError,
    LifecycleError,
    SettlementConflictError,
    StateError,
    UnknownDecisionError,
    parse_choice,
)
from memtrial.outcomes.mandates import check_weights, project
from memtrial.records import (
    Decision,
    DecisionKind,
    Dial,
    ExperienceId,
    Plan,
    Settlement,
    Time,
    check_experience_id,
    plain_number,
)
from memtrial.trust.gate import GateTest, TrustGate, make_gate, trust_weight
from memtrial.trust.log import ChainVerification, LogEntry, LogKind, canonical_json, verify_chain
from memtrial.values import CreditBasis, EmpiricalBayesLearner

__all__ = ["EngineConfig", "MemTrial"]


@dataclass(slots=True)
class _Experience:
    embedding: NDArray[np.float64] | None
    active: bool = True

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "embedding" and isinstance(value, np.ndarray):  # the engine's own: read-only through what it returns
            value.flags.writeable = False
        object.__setattr__(self, name, value)


class _LogSink:
    """Hands the gate's log entries to the engine's history. It holds the engine weakly, so an engine
    is freed as soon as it is dropped (no reference cycle waits for the garbage collector)."""

    __slots__ = ("_engine",)

    def __init__(self, engine: MemTrial) -> None:
        self._engine = weakref.ref(engine)

    def __call__(self, entry: LogEntry) -> None:
        engine = self._engine()
        if engine is not None:
            engine.history.append_log(entry)


def _iterable(value: object) -> bool:
    """Whether ``value`` can be read item by item (a 0-d array says it is iterable and is not)."""
    try:
        iter(value)  # type: ignore[call-overload]
    except TypeError:
        return False
    return True


class MemTrial:
    """One agent's memory credit assignment and trust-gated decisions.

    history: where decision entries, log entries and contribution records go
    (default: an :class:`~memtrial.engine.history.InMemoryHistory`). The engine's own
    state stays O(experiences) whatever the number of decisions.
    ``checkpoint_policy`` (:class:`~memtrial.engine.checkpoints.CheckpointPolicy`) says how
    often it writes a state checkpoint to the history for corrections to replay from.
    """

    def __init__(self, config: EngineConfig | None = None, *, history: History | None = None, **settings: Any) -> None:
        if config is not None and settings:
            raise ConfigError("give either config or keyword settings, not both", field="config")
        if config is not None and not isinstance(config, EngineConfig):
            raise ConfigError(
                f"config must be an EngineConfig (or give keyword settings), got {config!r}"[:300], field="config"
            )
        unknown = sorted(set(settings) - {f.name for f in fields(EngineConfig)})
        if unknown:
            raise ConfigError(f"unknown settings {unknown!r}: an EngineConfig has no such field", field=unknown[0])
        self.config = config if config is not None else EngineConfig(**settings)
        if history is not None and (missing := [m for m in HISTORY_METHODS if not callable(getattr(history, m, None))]):
            raise ConfigError(
                f"history must be a history store (an InMemoryHistory, or one with every method of History), got "
                f"{history!r} (it lacks {', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''})"[:400],
                field="history",
            )
        self.history: History = InMemoryHistory() if history is None else history
        self.learner = self._new_learner()
        self.gate: TrustGate = make_gate(self.config.gate, sink=_LogSink(self))
        self.fallback = AnchoredMixture(self.config.fallback)
        self.noise = NoiseCost()
        self.credit = DraftCredit()
        self.experiences: dict[ExperienceId, _Experience] = {}
        self.clock: Time | None = None
        self.checkpoint_policy = CheckpointPolicy()
        self.checkpointed_at = 0  # the log position of the last checkpoint written
        # predictions a correction derived again for plans awaiting their score (memtrial.engine.checkpoints)
        self.rederived: dict[str, dict[str, Any]] = {}
        # the quarantine book (method 4.13), only when quarantine is on
        self.curator: Curator | None = Curator(self.config.quarantine) if self.config.quarantine.enabled else None

    def _new_learner(self) -> EmpiricalBayesLearner:
        config = self.config
        return EmpiricalBayesLearner(
            config.learner,
            n_components=config.n_components,
            centre=config.credit is CreditBasis.CENTRED,
            robust=config.robust,
        )

    @property
    def gate_hash(self) -> str:
        """SHA-256 of the frozen gate configuration (pre-registration)."""
        return self.gate.config_hash

    def memory_history(self) -> InMemoryHistory:
        """The in-memory history (a StateError when the history lives in an external store)."""
        return self._memory()

    def _memory(self) -> InMemoryHistory:
        if not isinstance(self.history, InMemoryHistory):
            raise StateError("this engine's history is in an external store; ask the store", field="history")
        return self.history

    @property
    def entries(self) -> Mapping[str, DecisionEntry]:
        """Decision entries by id (in-memory history only): a read-only mapping, so no entry can be added, replaced
        or removed behind the engine's back; the entries are the history's own (read them, never change them:
        :meth:`settle` and :meth:`correct` do)."""
        return MappingProxyType(self._memory().entries)

    @property
    def records(self) -> tuple[tuple[str, ExperienceId, float], ...]:
        """Contribution records (decision id, experience id, contribution), in-memory history only: a copy, so
        no caller's edit changes the engine's history."""
        return tuple(self._memory().records)

    # -- experiences -------------------------------------------------------
    def add_experience(self, experience_id: ExperienceId, embedding: ArrayLike | None = None) -> None:
        """Register an experience; its embedding drives retrieval and content features."""
        check_experience_id(experience_id)
        if experience_id in self.experiences:
            raise DuplicateError(f"experience {experience_id!r} already exists", field="experience_id")
        if experience_id in self.learner.statistics.index or (
            self.curator is not None and experience_id in self.curator.evidence
        ):  # a new experience under this id would inherit them: its value, its quarantine
            raise DuplicateError(
                f"experience {experience_id!r} was removed and its records stay (its contributions, value and "
                "quarantine evidence): add the new experience under a new id",
                field="experience_id",
            )
        vector = None
        if embedding is not None:
            vector = check_embedding(embedding)
            self.learner.add_features(experience_id, vector, "embedding")
        self.experiences[experience_id] = _Experience(vector)

    def _restore_experience(self, experience_id: ExperienceId, embedding: ArrayLike | None, active: bool) -> None:
        """An experience as a stored state holds it (a state written before an input rule existed still loads)."""
        if isinstance(experience_id, bool) or not isinstance(experience_id, str | int):
            raise StateError(f"experience ids are str or int, got {experience_id!r}", field="experiences")
        if experience_id in self.experiences:
            raise DuplicateError(f"experience {experience_id!r} already exists", field="experience_id")
        vector = None if embedding is None else np.array(embedding, dtype=np.float64)
        if vector is not None:
            self.learner.add_features(experience_id, vector)
        self.experiences[experience_id] = _Experience(vector)
        self.experiences[experience_id].active = active

    def update_experience(self, experience_id: ExperienceId, embedding: ArrayLike) -> None:
        """Replace an experience's embedding (its text was rewritten); its records and value stay."""
        experience = self._experience(experience_id)
        vector = check_embedding(embedding)
        self.learner.add_features(experience_id, vector, "embedding")
        experience.embedding = vector

    def remove_experience(self, experience_id: ExperienceId) -> None:
        """Forget an experience: no longer retrievable, valued or listed in quarantine (past records still
        centre their dates, and a quarantine still counts among the agent's discoveries). Its id is not
        given to a new experience while its records stay."""
        self._experience(experience_id)
        del self.experiences[experience_id]
        self.learner.remove_features(experience_id)

    def retire_experience(self, experience_id: ExperienceId) -> None:
        """Stop retrieving an experience; its history and value stay."""
        self._experience(experience_id).active = False

    def _experience(self, experience_id: ExperienceId) -> _Experience:
        try:
            return self.experiences[experience_id]
        except KeyError:
            raise InputError(f"unknown experience {experience_id!r}", field="experience_id") from None
        except TypeError:  # unhashable: said as an id of the wrong type
            check_experience_id(experience_id)
            raise

    # -- plan --------------------------------------------------------------
    def plan(
        self,
        decision_id: str,
        time: Time,
        maturity: Time,
        *,
        retrieved: Sequence[ExperienceId] | None = None,
        context_embedding: ArrayLike | None = None,
        candidates: Sequence[ExperienceId] | None = None,
        similarities: Sequence[float] | None = None,
        reference: ArrayLike | None = None,
        previous: ArrayLike | None = None,
        n_assets: int | None = None,
        risky: ArrayLike | None = None,
        defensive: ArrayLike | None = None,
        kind: DecisionKind | str = DecisionKind.PORTFOLIO,
    ) -> Plan:
        """Retrieve, design and freeze predictions for one decision.

        Give one of ``retrieved`` (ids in rank order, at most k), a ``context_embedding``
        (retrieval over the active experiences) or ``candidates`` with optional
        ``similarities``, of which the engine picks k as :meth:`rank` does (method 4.12).
        reference: (n,) the fallback's anchor (default equal weight);
        previous: (n,) the book before entry, for fees (default equal weight).
        risky/defensive: (n,) asset groups; drafts are then projected onto the
        configured investor's mandate.
        kind: ``portfolio`` (drafts are weights, settled by prices) or
        ``scored`` (drafts are anything a rule can score: decide with
        :meth:`decide_scored`, settle with :meth:`settle_scored`; no universe).
        """
        time, maturity = plain_number(time), plain_number(maturity)  # NumPy's numbers as Python's
        check_plan_times(decision_id, time, maturity, self.clock)
        ids = self._retrieve(retrieved, context_embedding, candidates, similarities)
        kind = parse_choice(DecisionKind, kind, "kind", argument=True)
        reference_weights, previous_weights, risky_mask, defensive_mask = self._universe(
            kind, reference, previous, n_assets, risky, defensive
        )
        self._check_new(decision_id)
        designed = self._designed(kind, len(ids))
        frozen = self._since_changes(frozen_predictions(self.learner, ids), ids)
        predictions, trust = frozen["predictions"], self.gate.decision()
        dial = self._dial(ids, designed, predictions)
        portfolio, memory_free = kind is DecisionKind.PORTFOLIO, self.config.reference is ReferenceSource.MEMORY_FREE
        budgeted = plan_budget(
            self.credit,
            self.config.draft_budget,
            self.config.draft_horizon,
            designed,
            needs_reference=portfolio and memory_free and 0 not in designed,
            memory=lambda: memory_row(dial, trust.is_open, predictions, ids),
            pairs=portfolio and memory_free,
            blends=portfolio and not memory_free,
            fresh=lambda: self._fresh(ids),
        )
        self.credit = budgeted.credit
        self._log_plan(decision_id, ids, budgeted, frozen, dial)
        plan = Plan(
            decision_id=decision_id,
            time=time,
            maturity=maturity,
            experience_ids=tuple(ids),
            masks=budgeted.masks,
            subsets=tuple(design_module.subset_of(m, ids) for m in budgeted.masks),  # type: ignore[misc]
            **frozen,
            trust=trust,
            q=self.fallback.choose(),
            reference=reference_weights,
            previous=previous_weights,
            risky=risky_mask,
            defensive=defensive_mask,
            dial=dial,
            kind=kind,
            trial=budgeted.trial,
            memory_share=budgeted.memory_share,
            extra_reference=budgeted.extra_reference,
        )
        self.history.put(DecisionEntry(plan))
        self.clock = time
        return plan

    def _check_new(self, decision_id: str) -> None:
        """A DuplicateError for an id this engine planned before (a pruned one too: the log keeps its entries)."""
        if self.history.get(decision_id) is not None:
            raise DuplicateError(f"decision {decision_id!r} is already planned", field="decision_id")
        if isinstance(self.history, InMemoryHistory) and self.history.pruned(decision_id):
            raise DuplicateError(
                f"decision {decision_id!r} was planned and settled before (pruned since; its log entries stay): "
                "plan under a new id",
                field="decision_id",
            )

    def _fresh(self, ids: Sequence[ExperienceId]) -> bool:
        """Whether a plan retrieves a fresh experience (method 4.11): one whose value rests on fewer than
        :data:`~memtrial.action.budget.FRESH_CONTRIBUTIONS` contributions, counted since its detected change
        if it has one (method 4.14)."""
        return is_fresh(contribution_counts(self.curator, ids, self.learner.count))

    def _dial(self, ids: Sequence[ExperienceId], masks: Sequence[int], predictions: Mapping[Any, float]) -> Dial | None:
        """The trust dial's plan under the dial rule (None under the gate's)."""
        if self.config.action is not ActionRule.DIAL:
            return None
        return plan_dial(self.config.gate, self.gate.statistics, self.noise.cost, ids, masks, predictions)

    def _designed(self, kind: DecisionKind, n_retrieved: int) -> list[int]:
        """The masks a plan of ``n_retrieved`` experiences drafts, refused where it could not be settled."""
        designed = design_module.plan_masks(self.config.design, self.config.k, n_retrieved)
        check_scored_design(kind, self.config.design, designed)
        # the design itself, not only this plan's: a plan retrieving fewer than k drafts the full factorial of
        # those, memory-free run included, and a scored engine on the odd half was refused only later
        check_scored_design(kind, self.config.design, design_module.build_design(self.config.design, self.config.k))
        if n_retrieved == 1 and len(designed) == 1:  # a stored engine of k = 1 under a half fraction (refused new)
            raise ConfigError(
                f"k = 1 leaves the design {self.config.design.value!r} one run, which cannot contrast the "
                "experience with its absence: this decision could never be settled; plan with no experience, "
                "or make an engine with design 'full' or 'saturated'",
                field="k",
            )
        return designed

    def _universe(
        self,
        kind: DecisionKind,
        reference: ArrayLike | None,
        previous: ArrayLike | None,
        n_assets: int | None,
        risky: ArrayLike | None,
        defensive: ArrayLike | None,
    ) -> Universe:
        """A plan's (reference, previous, risky, defensive) arrays; a scored decision has no universe."""
        if kind is DecisionKind.SCORED:
            given = [
                name
                for name, value in (
                    ("reference", reference),
                    ("previous", previous),
                    ("n_assets", n_assets),
                    ("risky", risky),
                    ("defensive", defensive),
                )
                if value is not None
            ]
            if given:
                raise InputError(
                    f"a scored decision has no universe: {given[0]} does not apply (designate the reference draft when deciding)",
                    field=given[0],
                )
            return np.zeros(0), np.zeros(0), None, None
        if reference is not None and self.config.reference is ReferenceSource.MEMORY_FREE:
            raise InputError(
                "reference does not apply: this engine's reference is each decision's memory-free draft",
                field="reference",
            )
        return universe_arrays(self.config.investor, reference, previous, n_assets, risky, defensive)

    def _log_plan(
        self,
        decision_id: str,
        ids: Sequence[ExperienceId],
        budgeted: BudgetPlan,
        frozen: Mapping[str, Any],
        dial: Dial | None,
    ) -> None:
        """A trial registers its frozen predictions with the gate; under a budget the log records every
        call the budget spends, trials' and the others' (a plan without experiences, which predicts nothing,
        among the others)."""
        budget = self.config.draft_budget
        if not ids:
            if budget is not None:
                self.gate.log.append(
                    LogKind.EXPLOIT,
                    {"date": decision_id, "draft_calls": len(budgeted.masks), "memory_share": budgeted.memory_share},
                )
            return
        if budgeted.trial:
            details: dict[str, Any] = {
                "learner_mode": frozen["learner_mode"],
                "modes": {m: list(v) for m, v in frozen["mode_predictions"].items()},
            }
            if dial is not None:
                details["dial"] = dial.to_dict()
            if budget is not None:
                details["draft_calls"] = len(budgeted.masks)
            self.gate.register(decision_id, frozen["predictions"], details, track=False)
        elif budget is not None:
            self.gate.log.append(
                LogKind.EXPLOIT,
                {"date": decision_id, "draft_calls": len(budgeted.masks), "memory_share": budgeted.memory_share},
            )

    def _retrieve(
        self,
        retrieved: Sequence[ExperienceId] | None,
        context: ArrayLike | None,
        candidates: Sequence[ExperienceId] | None,
        similarities: Sequence[float] | None,
    ) -> list[ExperienceId]:
        given = [
            name
            for name, value in (("retrieved", retrieved), ("context_embedding", context), ("candidates", candidates))
            if value is not None
        ]
        if len(given) != 1:
            raise InputError(
                f"give exactly one of retrieved, context_embedding or candidates, got {given or 'none'}",
                field=given[1] if len(given) > 1 else "retrieved",
            )
        if similarities is not None and candidates is None:
            raise InputError("similarities score candidates: give them with candidates", field="similarities")
        if candidates is not None:
            return [
                p.experience_id for p in self._rank_candidates(candidates, self.config.k, similarities, "candidates")
            ]
        if retrieved is not None:
            # not its characters (a set has no order; a number is no list)
            if isinstance(retrieved, (str, bytes, set, frozenset, dict)) or not _iterable(retrieved):
                raise InputError(
                    f"retrieved must be a sequence of experience ids in rank order, got {retrieved!r}",
                    field="retrieved",
                )
            ids = [check_experience_id(e, "retrieved", listed=True) for e in retrieved]
            if len(set(ids)) != len(ids) or len(ids) > self.config.k:
                raise InputError(
                    f"retrieved must hold at most {self.config.k} distinct ids, got {ids!r}", field="retrieved"
                )
            unknown = [e for e in ids if e not in self.experiences]
            if unknown:
                raise InputError(f"retrieved: unknown experiences {unknown!r}", field="retrieved")
            for experience_id in ids:
                if not self._experience(experience_id).active:
                    raise InputError(f"experience {experience_id!r} is retired", field="retrieved")
                if self.curator is not None and self.curator.is_quarantined(experience_id):
                    raise InputError(f"experience {experience_id!r} is quarantined", field="retrieved")
            return ids
        pool = [
            (e, x.embedding)
            for e, x in self.experiences.items()
            if x.active and x.embedding is not None and not (self.curator and self.curator.is_quarantined(e))
        ]
        vector = check_embedding(context, "context_embedding")
        if self.config.retrieval is RetrievalMode.SIMILARITY:
            return top_k(vector, pool, self.config.k)
        ids, similarity = cosine_similarities(vector, pool)
        picks = rank(ids, list(similarity), self._posteriors(ids), self.retrieval_trust(), self.config.k)
        return [p.experience_id for p in picks]

    # -- curation (method 4.12-4.14) ----------------------------------------
    def retrieval_trust(self) -> float:
        """omega, how much value-aware retrieval acts on values: the dial's trust weight (method 4.8; 1
        without a gate; under the prequential gate 1 while it is open, else 0). Similarity retrieval: 0."""
        if self.config.retrieval is RetrievalMode.SIMILARITY:
            return 0.0
        if self.config.gate.test is GateTest.PREQUENTIAL:
            return 1.0 if self.gate.decision().is_open else 0.0
        return trust_weight(self.config.gate, self.gate.statistics)[0]

    def _posteriors(self, ids: Sequence[ExperienceId]) -> dict[ExperienceId, Posterior]:
        """Each experience's value posterior as learnt from matured outcomes; after a detected change,
        the value learnt since the change (method 4.14): :meth:`posteriors`, as the ranking reads them."""
        return {e: Posterior(*posterior) for e, posterior in zip(ids, self.posteriors(ids), strict=True)}

    def _since_changes(self, frozen: dict[str, Any], ids: Sequence[ExperienceId]) -> dict[str, Any]:
        """A plan's frozen predictions with the value of every experience whose contributions changed sign
        (method 4.14) learnt from the new regime only (:meth:`Curator.reset_values`), in every mode."""
        reset = {} if self.curator is None else self.curator.reset_values(ids)
        if not reset:
            return frozen
        predictions = {e: reset.get(e, v) for e, v in frozen["predictions"].items()}
        modes = {
            mode: tuple(reset.get(e, v) for e, v in zip(ids, values, strict=True))
            for mode, values in frozen["mode_predictions"].items()
        }
        return {**frozen, "predictions": predictions, "mode_predictions": modes}

    def rank(
        self, candidate_ids: Sequence[ExperienceId], k: int, similarities: Sequence[float] | None = None
    ) -> list[Ranked]:
        """Rank bring-your-own candidates (method 4.12): the k best of ``candidate_ids`` (distinct ids of
        active experiences; quarantined ones are never picked) by ``similarities`` (one per candidate, higher
        is closer; without them the given order is the similarity order) and, under ``value_aware``
        retrieval, their learned values; fewer than k come back when fewer are usable (k >= 0). An unknown,
        retired or repeated id, ids given as a set (it has no order) or similarities that do not match the
        candidates, is an InputError naming ``candidate_ids`` or ``similarities``."""
        return self._rank_candidates(candidate_ids, plain_number(k), similarities, "candidate_ids")

    def _rank_candidates(
        self, candidate_ids: Sequence[ExperienceId], k: int, similarities: Sequence[float] | None, field: str
    ) -> list[Ranked]:
        # a set has no similarity order; a number is no list
        if isinstance(candidate_ids, (str, bytes, set, frozenset, dict)) or not _iterable(candidate_ids):
            raise InputError(f"{field} must be a sequence of experience ids, got {candidate_ids!r}", field=field)
        ids = [check_experience_id(e, field, listed=True) for e in candidate_ids]
        repeated = sorted({e for e in ids if ids.count(e) > 1})
        if repeated:
            raise InputError(f"{field} must be distinct ids, repeated: {repeated!r}", field=field)
        unknown = [e for e in ids if e not in self.experiences]
        if unknown:
            raise InputError(f"{field}: unknown experiences {unknown!r}", field=field)
        retired = [e for e in ids if not self.experiences[e].active]
        if retired:
            raise InputError(f"{field}: experiences {retired!r} are retired and cannot be retrieved", field=field)
        if similarities is None:
            scores = [float(-i) for i in range(len(ids))]  # 0, -1, -2, ... (0, not -0)
        else:
            try:  # read once (an iterator is read a single time); rank checks each is a finite number
                if isinstance(similarities, (str, bytes)):
                    raise TypeError("a text is not scores")
                scores = list(similarities)
            except TypeError:
                raise InputError(
                    f"similarities must be one number per candidate, got {similarities!r}"[:300], field="similarities"
                ) from None
            if len(scores) != len(ids):
                raise InputError(
                    f"similarities must hold one score per candidate ({len(ids)}), got {len(scores)}",
                    field="similarities",
                )
        kept = [i for i, e in enumerate(ids) if not (self.curator and self.curator.is_quarantined(e))]
        chosen = [ids[i] for i in kept]
        return rank(chosen, [scores[i] for i in kept], self._posteriors(chosen), self.retrieval_trust(), k)

    def _book(self) -> Curator:
        if self.curator is None:
            raise ConfigError("quarantine is off for this engine (EngineConfig.quarantine)", field="quarantine")
        return self.curator

    @property
    def quarantined(self) -> tuple[ExperienceId, ...]:
        """The experiences in quarantine now (empty when quarantine is off). A removed one is not listed, nor is
        one retired by hand: retiring wins, it is never released, and it may be deleted as any retired one."""
        if self.curator is None:
            return ()
        return tuple(e for e in self.curator.quarantined if e in self.experiences and self.experiences[e].active)

    def changed_at(self, experience_id: ExperienceId) -> str | None:
        """The decision at which a change of sign of the experience's contributions was detected (method
        4.14), or None."""
        self._experience(experience_id)
        return None if self.curator is None else self.curator.changed_at(experience_id)

    def evidence(self, experience_id: ExperienceId) -> dict[str, Any] | None:
        """The experience's quarantine test now (e-value, threshold, contributions since it started), or None
        before its first matured contribution."""
        self._experience(experience_id)
        book = self._book()
        return book.payload(experience_id, None) if experience_id in book.evidence else None

    def release(self, experience_id: ExperienceId, reason: str, *, deleting: bool = False) -> LogEntry:
        """Release a quarantined experience by hand: it is retrieved again and its test starts afresh. A
        ``release`` log entry records the reason and the evidence at that moment. An experience retired by
        hand is not released (retiring wins, whatever its evidence): an InputError naming ``experience_id``,
        as for one not in quarantine; ``deleting=True`` ends its quarantine all the same, logged, just
        before :meth:`remove_experience` forgets it, so that the log shows every quarantine's end (an
        experience added again under its old name starts out of quarantine)."""
        if not self._experience(experience_id).active and not deleting:
            raise InputError(f"experience {experience_id!r} is retired, not quarantined", field="experience_id")
        check_reason(reason)
        book = self._book()
        before = book.payload(experience_id, None) if book.is_quarantined(experience_id) else None
        entry = {**(before or {}), "reason": reason}
        canonical_json(entry)  # an entry the log cannot record refuses the release before the book changes
        book.release(experience_id)
        return self.gate.log.append(LogKind.RELEASE, entry)

    def _curate(self, decision_id: str, contributions: Mapping[ExperienceId, float]) -> None:
        """Feed a settled trial's raw contributions to the quarantine tests and log each quarantine."""
        if self.curator is None or not contributions:
            return
        self._log_events(self.curator.observe(decision_id, contributions))

    def _log_events(self, events: Sequence[Event]) -> None:
        for event in events:
            if event.kind == "quarantine":
                self.gate.log.append(LogKind.QUARANTINE, dict(event.payload))

    def change_settings(
        self, changes: Mapping[str, Any], *, recorded: Mapping[str, tuple[Any, Any]] | None = None
    ) -> LogEntry | None:
        """Change the draft budget or its horizon, the retrieval mode or the quarantine from the next plan
        or settlement on (:mod:`memtrial.engine.reconfigure`).

        changes: ``{"draft_budget": ..., "draft_horizon": ..., "retrieval": ..., "quarantine": ...}`` (any
        of them; ``quarantine`` a :class:`~memtrial.curation.QuarantineConfig` or a mapping of the fields
        that change). recorded: settings
        kept outside the engine (a service's drafter, say) as ``{name: (old, new)}``, logged beside them.
        Every change is a ``settings`` entry of the hash-chained log with the old and new values and the
        number of decisions planned under a budget before it; the entry that changes nothing is not
        written (None). A setting fixed for the engine's life raises ConfigError naming it, and
        nothing changes.
        """
        config, changed = reconfigured(self.config, changes)
        for name, (old, new) in (recorded or {}).items():
            if old != new:
                changed[name] = {"old": old, "new": new}
        if not changed:
            return None
        payload = {"changes": changed, "decisions_budgeted": self.credit.decisions}
        entry = self.gate.log.append(LogKind.SETTINGS, payload)
        self.config = config
        if "quarantine" in changed:
            self._requarantine(config.quarantine)
        return entry

    def _requarantine(self, quarantine: QuarantineConfig) -> None:
        """The quarantine book after a change of its setting: a fresh one when it is turned on, none when
        off, the running one with the new level and threshold otherwise."""
        if not quarantine.enabled:
            self.curator = None
        elif self.curator is None:
            self.curator = Curator(quarantine)
        else:
            self.curator.config = quarantine

    def reserve_calls(self, wanted: int) -> int:
        """Calls beyond its plan's drafts (retries of malformed answers) that the decision just planned may
        make: ``wanted``, or under a draft budget as many of them as the credit can spare now
        (:meth:`~memtrial.action.budget.DraftCredit.spare`). They are paid at once; :meth:`release_calls` gives
        back those not made."""
        wanted = plain_number(wanted)  # a count from an array is the same count
        if isinstance(wanted, bool) or not isinstance(wanted, int) or wanted < 0:
            raise InputError(f"wanted must be a number of calls (an integer >= 0), got {wanted!r}", field="wanted")
        budget = self.config.draft_budget
        if budget is None:
            return wanted
        granted = min(wanted, self.credit.spare(budget, self.config.draft_horizon))
        self.credit.pay(granted)
        return granted

    def release_calls(self, decision_id: str, reserved: int, made: int) -> None:
        """Settle the calls :meth:`reserve_calls` reserved for ``decision_id``: ``made`` of the ``reserved``
        were sent, the rest go back to the credit. Under a draft budget a ``retry`` entry in the log records
        the calls made, so the log's ``draft_calls`` add up to every call the budget paid for. ``reserved`` is
        what :meth:`reserve_calls` granted (the caller keeps it: the engine does not, as a reservation
        outlives a save); ``decision_id`` a decision this engine planned."""
        reserved, made = plain_number(reserved), plain_number(made)
        for name, value in (("reserved", reserved), ("made", made)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"{name} must be a number of calls (an integer >= 0), got {value!r}", field=name)
        if not made <= reserved:
            raise InputError(f"made must be in [0, reserved = {reserved}], got {made!r}", field="made")
        self._entry(decision_id)  # a known decision (the log's retry entry names it)
        if self.config.draft_budget is None:
            return
        self.credit.refund(reserved - made)
        if made:
            self.gate.log.append(LogKind.RETRY, {"date": decision_id, "draft_calls": made})

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
            raise LifecycleError(
                f"decision {decision_id!r} was already decided: settle it instead", field="decision_id"
            )
        check_reason(reason)
        if entry.plan.experience_ids:
            self.gate.log.append(LogKind.WITHDRAWAL, {"date": decision_id, "reason": reason})
        entry.withdrawn = reason
        self.rederived.pop(decision_id, None)
        self.history.put(entry)

    # -- decide ------------------------------------------------------------
    def decide(self, decision_id: str, drafts: ArrayLike) -> Decision:
        """Choose weights from one draft per designed subset (rows aligned with ``plan.subsets``)."""
        entry = self._live_entry(decision_id)
        plan = entry.plan
        if plan.kind is not DecisionKind.PORTFOLIO:
            raise LifecycleError(
                f"decision {decision_id!r} is a scored decision: use decide_scored", field="decision_id"
            )
        rule = f"one row of {plan.n_assets} weights per designed subset ({len(plan.masks)})"
        matrix = float_array(drafts, "drafts", rule)  # texts, or rows of different lengths, refused
        if matrix.ndim != 2 or matrix.shape[0] != len(plan.masks):
            raise InputError(
                f"drafts must have one row per designed subset ({len(plan.masks)}), got {rows_of(matrix)}",
                field="drafts",
            )
        check_weights(matrix, plan.n_assets, "drafts")
        if plan.risky is not None and plan.defensive is not None and self.config.investor is not None:
            matrix = project(matrix, plan.risky, plan.defensive, self.config.investor)
        if entry.decision is not None:
            if np.array_equal(entry.decision.drafts, matrix):
                return entry.decision
            raise DuplicateError(f"decision {decision_id!r} was already decided with other drafts", field="drafts")
        memory_free = self.config.reference is ReferenceSource.MEMORY_FREE and 0 in plan.masks
        entry.decision = choose_portfolio(plan, matrix, plan.masks.index(0) if memory_free else None)
        # (an extra reference draft is the last row: masks.index(0) finds it, the design has no 0)
        self.history.put(entry)
        return entry.decision

    def decide_scored(
        self, decision_id: str, *, vectors: ArrayLike | None = None, n_drafts: int | None = None, reference: int = 0
    ) -> Decision:
        """Act on a scored decision: one draft per designed subset (rows aligned with ``plan.subsets``).

        vectors: (S, m) numeric drafts (e.g. probability vectors over m named
        outcomes): the anchored mixture and the dial blend apply to them.
        n_drafts: S, for drafts that are not vectors (answers, documents): a
        closed gate, or a dial short of full trust, plays the reference draft.
        reference: index of the draft designated as the conservative reference
        (default 0, the memory-free draft).
        """
        reference, n_drafts = plain_number(reference), plain_number(n_drafts)
        entry = self._live_entry(decision_id)
        plan = entry.plan
        if plan.kind is not DecisionKind.SCORED:
            raise LifecycleError(f"decision {decision_id!r} is a portfolio decision: use decide", field="decision_id")
        runs = len(plan.masks)
        if (vectors is None) == (n_drafts is None):
            raise InputError("give exactly one of vectors or n_drafts", field="drafts")
        if vectors is not None:
            rule = f"numbers with one row per designed subset ({runs})"
            matrix = float_array(vectors, "drafts", rule, name="vectors")
            if matrix.ndim != 2 or matrix.shape[0] != runs or matrix.shape[1] < 1 or not np.all(np.isfinite(matrix)):
                if matrix.ndim != 2 or matrix.shape[0] != runs:
                    got = rows_of(matrix)
                else:
                    got = "rows without a number" if matrix.shape[1] < 1 else "a number that is not finite"
                raise InputError(
                    f"vectors must be finite with one row per designed subset ({runs}), got {got}", field="drafts"
                )
            if not np.all(np.abs(matrix) <= MAX_UTILITY):  # blended and scored: their sums must not overflow
                raise InputError(
                    f"drafts: every number must be at most {MAX_UTILITY:g} in absolute value (the engine blends "
                    f"and scores them), got {float(np.max(np.abs(matrix))):g}",
                    field="drafts",
                )
        else:
            if isinstance(n_drafts, bool) or not isinstance(n_drafts, int) or n_drafts != runs:
                raise InputError(
                    f"drafts must number one per designed subset ({runs}), got {n_drafts!r}", field="drafts"
                )
            matrix = np.zeros((runs, 0))
        if isinstance(reference, bool) or not isinstance(reference, int) or not 0 <= reference < runs:
            raise InputError(f"reference must index one of the {runs} drafts, got {reference!r}", field="reference")
        if entry.decision is not None:
            if np.array_equal(entry.decision.drafts, matrix) and entry.decision.reference_index == reference:
                return entry.decision
            raise DuplicateError(f"decision {decision_id!r} was already decided with other drafts", field="drafts")
        entry.decision = choose_scored(plan, matrix, reference)
        self.history.put(entry)
        return entry.decision

    # -- settle ------------------------------------------------------------
    def settle(self, decision_id: str, rel_prices: ArrayLike, at: Time | None = None) -> Settlement:
        """Score a matured decision and learn from it.

        rel_prices: (H, n) closes relative to the entry close. ``at`` (default
        the maturity) is when the outcome is known; it must not precede the
        maturity.
        """
        at = plain_number(at)
        entry = self._live_entry(decision_id)
        plan = entry.plan
        if plan.kind is not DecisionKind.PORTFOLIO:
            raise LifecycleError(
                f"decision {decision_id!r} is a scored decision: use settle_scored", field="decision_id"
            )
        prices = float_array(rel_prices, "rel_prices", "closes relative to the entry close, one row per session")
        settled_at = settled_at_or_after(decision_id, plan, at)  # checked on a retry too
        if entry.settlement is not None:
            if entry.settlement.rel_prices.shape == prices.shape and np.array_equal(
                entry.settlement.rel_prices, prices
            ):
                return entry.settlement
            raise SettlementConflictError(
                f"decision {decision_id!r} was already settled with different prices", field="rel_prices"
            )
        decision = self._decided(entry, "call decide before settle")
        realised = portfolio_outcome(self.config, plan, decision, prices)
        return self._record(
            entry, learn(self.config, self._learnt(plan), realised, settled_at, self._running()), settled_at
        )

    def settle_scored(
        self,
        decision_id: str,
        *,
        utilities: ArrayLike | None = None,
        outcome: Any = None,
        rule: str | None = None,
        at: Time | None = None,
    ) -> Settlement:
        """Score a matured scored decision and learn from it.

        Give ``utilities`` (one per draft, computed by the caller; higher is
        better; finite and within +-1e100, ``MAX_UTILITY``, since the engine
        squares their differences) or an ``outcome`` and a mixable built-in ``rule``: ``brier`` or
        ``log`` over the decision's probability vectors (the outcome is the
        index of the realised outcome) or ``abs_error`` over numbers (vectors
        of length 1). Settling twice with the same data is a no-op; with other
        data it is an error.
        """
        at, outcome = plain_number(at), plain_number(outcome)  # NumPy's numbers (an argmax) as Python's
        entry = self._live_entry(decision_id)
        plan = entry.plan
        if plan.kind is not DecisionKind.SCORED:
            raise LifecycleError(f"decision {decision_id!r} is a portfolio decision: use settle", field="decision_id")
        given_utilities = check_scored(plan, utilities, rule)
        settled_at = settled_at_or_after(decision_id, plan, at)  # checked on a retry too
        if entry.settlement is not None:
            if same_scored(entry.settlement, given_utilities, outcome, rule):
                return entry.settlement
            raise SettlementConflictError(
                f"decision {decision_id!r} was already settled with a different outcome",
                field="outcome" if rule else "utilities",
            )
        decision = self._decided(entry, "decide before settling")
        realised = scored_outcome(decision, given_utilities, outcome, rule)
        return self._record(
            entry, learn(self.config, self._learnt(plan), realised, settled_at, self._running()), settled_at
        )

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

        Give what :meth:`settle` (``rel_prices``) or :meth:`settle_scored` (``utilities``, or ``outcome`` and
        ``rule``) takes, and the ``reason``. The engine recomputes its running state from the stored history, in
        the order the log recorded plans and scores: every later plan's predictions are derived again from what
        the learner would then have known, and every score, the learner, the gate's statistics, the noise cost and
        the fallback equal those of an engine settled with the corrected outcome from the start (the fallback's
        sums and the noise cost up to the rounding of subtracting the old outcome: about 1e-16 times the largest
        outcome added, method 4.10). The log keeps the superseded score and gains a ``correction`` entry (the
        reason, the index of the entry it supersedes, the new score); the plans and decisions as they were served
        stay as they were. A correction equal to the current outcome is a no-op. Content features are those of
        the experiences held now. The replay starts at the last state checkpoint before the corrected score
        (``checkpoint_policy``) and runs in batch; predictions it derives again for plans still awaiting their
        score are learnt when they settle. A correction refused on the way leaves the engine as it was.
        """
        outcome = plain_number(outcome)  # NumPy's numbers (an argmax) as Python's, as settle_scored takes them
        entry = self._live_entry(decision_id)
        previous = entry.settlement
        if previous is None:
            raise LifecycleError(
                f"decision {decision_id!r} is not settled yet: settle it instead of correcting it", field="decision_id"
            )
        check_reason(reason)
        plan = entry.plan
        decision = self._decided(entry, "decide before settling")
        settled_at = settled_at_or_after(decision_id, plan, previous.settled_at if at is None else plain_number(at))
        realised = corrected_outcome(self.config, plan, decision, previous, rel_prices, utilities, outcome, rule)
        if realised is None:  # the outcome it already has
            return previous
        # the sums it updates in place are copies: a correction refused on the way leaves the engine as it was
        running = Running(self.learner, self.gate, copy.deepcopy(self.fallback), copy.deepcopy(self.noise))
        result = recompute(
            self.config,
            self.history,
            running,
            self._new_learner,
            {e: x.embedding for e, x in self.experiences.items()},
            entry,
            realised,
            settled_at,
            self.rederived,
            self.checkpoint_policy,
        )
        running, corrected, supersedes = result.running, result.corrected, result.supersedes
        self.learner, self.fallback, self.noise = running.learner, running.fallback, running.noise
        self.gate.statistics = running.gate.statistics
        self.rederived = result.rederived
        if result.checkpointed_at is not None:
            self.checkpointed_at = result.checkpointed_at
        self.gate.log.append(
            LogKind.CORRECTION, correction_entry(decision_id, reason, supersedes, corrected, result.rescored)
        )
        entry.settlement = corrected
        entry.corrections.append({"reason": reason, "superseded": previous.to_dict(mixtures=False)})
        self.history.correct(entry, corrected.contributions, corrected.centred)
        if result.rescored:  # the stored settlements say the scores in force, as the log now does
            self.history.rescore(result.rescored)
        # the quarantine book the replay rebuilt along the log (4.13, none to rebuild without a score entry),
        # and the quarantines the log lacks, logged now
        if supersedes is not None:
            self.curator = result.book
            self._log_events(result.book_events)
        if self.clock is None or not later_or_equal(self.clock, settled_at, "at"):
            self.clock = settled_at
        return corrected

    def _decided(self, entry: DecisionEntry, advice: str) -> Decision:
        if entry.decision is None:
            raise LifecycleError(f"decision {entry.decision_id!r} has no drafts yet: {advice}", field="decision_id")
        return entry.decision

    def _learnt(self, plan: Plan) -> Plan:
        """The plan a settlement learns from: with the predictions a correction derived again for it, if any."""
        rederived = self.rederived.get(plan.decision_id)
        return plan if rederived is None else replace(plan, **decode_frozen(rederived))

    def _record(self, entry: DecisionEntry, settlement: Settlement, settled_at: Time) -> Settlement:
        entry.settlement = settlement
        self.rederived.pop(entry.decision_id, None)
        self.history.put(entry)
        if settlement.contributions:
            self.history.append_contributions(entry.decision_id, settlement.contributions, settlement.centred)
        self._curate(entry.decision_id, settlement.contributions)
        plan = entry.plan
        position = self.gate.log.length
        if plan.experience_ids and plan.trial and self.checkpoint_policy.due(position, self.checkpointed_at):
            checkpoint = Checkpoint(
                position, self.learner.state_dict(), self.gate.statistics.to_dict(), dict(self.rederived)
            )
            self.history.add_checkpoints([checkpoint], self.checkpoint_policy.kept)
            self.checkpointed_at = position
        if self.clock is None or not later_or_equal(self.clock, settled_at, "at"):
            self.clock = settled_at
        return settlement

    def _running(self) -> Running:
        return Running(self.learner, self.gate, self.fallback, self.noise)

    # -- queries -----------------------------------------------------------
    def _entry(self, decision_id: str) -> DecisionEntry:
        if not isinstance(decision_id, str):  # an unhashable one would fail the lookup with a TypeError
            raise InputError(f"decision_id must be a str, got {decision_id!r}"[:300], field="decision_id")
        entry = self.history.get(decision_id)
        if entry is None:
            raise UnknownDecisionError(f"no plan has decision id {decision_id!r}", field="decision_id")
        return entry

    def _live_entry(self, decision_id: str) -> DecisionEntry:
        entry = self._entry(decision_id)
        if entry.withdrawn is not None:
            raise LifecycleError(
                f"decision {decision_id!r} was withdrawn ({entry.withdrawn}); plan a new one", field="decision_id"
            )
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
            return ChainVerification(
                False,
                check.n_entries,
                check.n_entries,
                f"the store holds {check.n_entries} entries; the engine has written {self.gate.log.length}",
            )
        return check

    def values(self) -> dict[ExperienceId, float]:
        """The learner's posterior mean value of every experience (0, the prior mean, before data), pooled
        over its whole history: after a detected change, :meth:`posterior` gives the value learnt since."""
        ids = list(self.experiences)
        return dict(zip(ids, self.learner.predictions(ids), strict=True))

    def posterior(self, experience_id: ExperienceId) -> tuple[float, float | None, int]:
        """(mean, sd, n) of an experience's value as the engine acts on it; sd is None while there is no
        noise scale.

        The sd is the reported one (:meth:`EmpiricalBayesLearner.reported_posterior`): the plug-in
        posterior's plus the uncertainty of the estimated tau2, never 0 for a value learnt from data.
        Before the learner has data, and while every contribution it has learnt is exactly 0 (drafts
        that did not differ by subset), nothing scales the values' noise: the sd is None, not 0.
        After a detected change of sign (method 4.14) it is the value learnt since the change: the mean
        of the contributions since then, their standard error (|mean| / sqrt(n) while they are alike, None
        before one) and their number, what value-aware retrieval ranks by (method 4.12).
        """
        return self.posteriors([experience_id])[0]

    def posteriors(self, experience_ids: Sequence[ExperienceId]) -> list[tuple[float, float | None, int]]:
        """:meth:`posterior` of each experience (the learner's mode and noise scale read once)."""
        if isinstance(experience_ids, str | bytes):  # a text is a sequence: its letters would be read as ids
            raise InputError(
                f"experience_ids must be a list of ids, got the text {experience_ids!r}"[:300], field="experience_ids"
            )
        for experience_id in experience_ids:
            self._experience(experience_id)
        since = {} if self.curator is None else self.curator.since_changes(experience_ids)
        learnt: list[tuple[float, float | None, int]]
        if not self.learner.is_fitted:
            learnt = [(0.0, None, 0)] * len(experience_ids)
        else:
            reported = self.learner.reported_posteriors(experience_ids)
            counts = [self.learner.count(experience_id) for experience_id in experience_ids]
            noise = self.learner.has_noise_scale
            learnt = [
                (posterior.mean, posterior.sd if noise else None, count)
                for posterior, count in zip(reported, counts, strict=True)
            ]
        return [
            (since[e].mean, since[e].sd, since[e].n) if e in since else posterior
            for e, posterior in zip(experience_ids, learnt, strict=True)
        ]

    # -- state -------------------------------------------------------------
    def to_json(self, *, embeddings: bool = True, history: bool = True) -> str:
        """The state as JSON; ``MemTrial.from_json`` restores it exactly.

        embeddings=False leaves the experience embeddings out (a store that
        keeps them elsewhere passes them back to ``from_json``).
        history=False leaves the in-memory history out: the compact running
        state alone, whose size depends on the experiences, not on the number
        of decisions (a store that keeps the history attaches it again).
        """
        return json.dumps(
            self.to_dict(embeddings=embeddings, history=history), sort_keys=True, separators=(",", ":"), allow_nan=False
        )

    def to_dict(self, *, embeddings: bool = True, history: bool = True) -> dict[str, Any]:
        """The state as JSON-ready data (:func:`memtrial.engine.state.encode_state`)."""
        return encode_state(self.state(history=history), embeddings=embeddings)

    def state(self, *, history: bool = True) -> EngineState:
        """The running state as one value (``history=False``: without the in-memory history)."""
        return EngineState(
            config=self.config,
            gate_hash=self.gate_hash,
            clock=self.clock,
            experiences=tuple(ExperienceState(e, x.embedding, x.active) for e, x in self.experiences.items()),
            learner=self.learner.state_dict(),
            gate=self.gate.state_dict(),
            fallback=self.fallback,
            noise=self.noise,
            credit=self.credit,
            checkpointed_at=self.checkpointed_at,
            checkpoint_policy=self.checkpoint_policy,
            rederived=self.rederived,
            history=self.memory_history() if history else None,
            curation=None if self.curator is None else self.curator.to_dict(),
        )

    @classmethod
    def from_json(
        cls, text: str, embeddings: Mapping[ExperienceId, ArrayLike] | None = None, *, history: History | None = None
    ) -> MemTrial:
        """Restore a state; ``embeddings`` supplies those left out by ``to_json(embeddings=False)``,
        ``history`` the store of a state written with ``history=False``."""
        if not isinstance(text, str | bytes | bytearray):
            raise StateError(f"state must be the JSON text to_json wrote, got {type(text).__name__}", field="state")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise StateError(f"state is not valid JSON: {error}", field="state") from None
        return cls.from_dict(data, embeddings, history=history)

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        embeddings: Mapping[ExperienceId, ArrayLike] | None = None,
        *,
        history: History | None = None,
    ) -> MemTrial:
        """Restore a state of this version, or upgrade a version-1 state (:func:`memtrial.engine.state.decode_state`)."""
        return cls.from_state(decode_state(data, embeddings, history=history))

    @classmethod
    def from_state(cls, state: EngineState) -> MemTrial:
        """An engine that continues from ``state`` (its history attached)."""
        try:
            engine = cls(state.config, history=state.history)
            if engine.gate_hash != state.gate_hash:
                raise StateError("the gate configuration does not match its registered hash", field="gate_hash")
            engine.clock = state.clock
            for experience in state.experiences:  # as stored: the input rules of add_experience are for new ones
                engine._restore_experience(experience.experience_id, experience.embedding, experience.active)
            engine.learner.load_state_dict(state.learner)
            engine.gate.load_state_dict(state.gate)
            engine.fallback = state.fallback
            engine.noise = state.noise
            engine.credit = state.credit
            engine.checkpointed_at = state.checkpointed_at
            engine.checkpoint_policy = state.checkpoint_policy
            engine.rederived = {d: dict(v) for d, v in state.rederived.items()}
            if engine.curator is not None:
                if state.curation is None:  # a truncated state: the quarantine would be lost silently
                    raise StateError("quarantine is on but the state holds no quarantine book", field="curation")
                engine.curator = Curator.from_dict(state.config.quarantine, state.curation)
        except KeyError as error:
            raise StateError(f"state is malformed: it lacks {error.args[0]!r}", field="state") from None
        except (TypeError, ValueError) as error:
            raise StateError(f"state is malformed: {error!r}", field="state") from None
        return engine
