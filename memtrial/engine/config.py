"""An engine's settings, fixed for its life (:class:`EngineConfig`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeGuard

import numpy as np

from memtrial.action.budget import budget_gate, check_budget, check_horizon
from memtrial.action.fallback import FallbackVariant
from memtrial.action.rule import ActionRule
from memtrial.credit.design import DesignKind
from memtrial.curation import QuarantineConfig, RetrievalMode
from memtrial.errors import ConfigError, parse_choice
from memtrial.outcomes.mandates import INVESTORS, Investor
from memtrial.records import existing_settings, reading_existing
from memtrial.trust.gate import GateConfig, GateTest
from memtrial.values import CreditBasis, LearnerMode

__all__ = ["PAPER_RULE", "SCORED_DESIGN", "EngineConfig", "ReferenceSource", "default_setting"]


class ReferenceSource(StrEnum):
    """Where a portfolio decision's conservative reference comes from: the plan (``given``; equal
    weight by default) or the decision's own memory-free draft (``memory_free``, drafted every time)."""

    GIVEN = "given"
    MEMORY_FREE = "memory_free"


#: The paper's rule (method 4.1 to 4.8 as first specified): the binary prequential gate on date-centred
#: values over the even half fraction, its closed share on the learnt anchored mixture (``ftrl``), the plain
#: estimator, retrieval by similarity alone and no quarantine. It was EngineConfig's default until the measured-best configuration replaced it, so a stored
#: configuration that leaves one of these keys out was written under it (:meth:`EngineConfig.from_dict`).
PAPER_RULE: Mapping[str, Any] = MappingProxyType(
    {
        "design": DesignKind.HALF,
        "fallback": FallbackVariant.FTRL,
        "gate": GateConfig(test=GateTest.PREQUENTIAL),
        "action": ActionRule.GATE,
        "credit": CreditBasis.CENTRED,
        "robust": False,
        "retrieval": RetrievalMode.SIMILARITY,
        "quarantine": QuarantineConfig(),
    }
)

#: The design a scored decision's engine takes by default: a scored decision designates a memory-free draft
#: as its reference, which the odd half (the default) does not draft; the even half does, in the same 8 runs.
SCORED_DESIGN = DesignKind.HALF
#: the largest risk aversion (the investors' are 2 to 10): beyond it utilities overflow
MAX_GAMMA = 1e6


def _real(value: object) -> TypeGuard[float]:
    """A real number (an int or a float, NumPy's too), not a flag, a text or None."""
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool | np.bool_)


#: configurations made inside are an existing engine's (read back, or with a setting changed): the rules on new
#: configurations do not refuse a state made before them; a plan it could never settle is refused instead
#: (:meth:`memtrial.MemTrial.plan`)
existing_engine = existing_settings


#: the gate a configuration that names none starts from (its bets: the budget's at a budget)
_DEFAULT_GATE = GateConfig(test=GateTest.ANYTIME)


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Settings fixed for the life of an engine.

    The defaults are the configuration the PlantedMem dev seeds measure best, the backtests' default
    ``memtrial``: the trust dial (method 4.8) with the anytime gate, on values learnt from the raw
    same-day contrasts, over the odd half fraction (``fold``: every retrieved experience drafted alone,
    2**(k-1) = 8 drafts at k = 4), its closed share on the reference (``fallback="ref"``), retrieving by
    similarity and learnt value as far as trust allows (``retrieval="value_aware"``, method 4.12) and keeping
    credibly harmful experiences in quarantine (``quarantine`` on at level 0.05, method 4.13-4.14). A new REST
    agent takes the same (:func:`default_setting`); :data:`PAPER_RULE` spells the paper's rule.

    design: the fraction of the subsets drafted (method 4.1): ``fold`` (the odd half), ``half`` (the
    even half, the memory-free draft first; the paper's), ``full`` or ``saturated``.
    fallback: the closed action (method 4.6): ``ref`` (the reference), ``ftrl`` (the KL-anchored mixture
    with a0 = 0.9; the paper's), ``uniform`` (a0 = 0.5) or ``ens`` (the draft mean).
    gamma: risk aversion of the utility; defaults to the investor's.
    investor: mandate used to project drafts when a plan names asset groups.
    diagnostics: compute the interaction contrasts of each settlement
    (diagnostics nobody acts on; a backtest turns them off).
    action: ``dial`` (the trust dial of method 4.8; needs the ``anytime`` gate, or ``none`` for a dial
    always at 1) or ``gate`` (the paper's binary gate, with any gate test).
    credit: what the learner learns from: ``raw`` (the raw same-day contrasts) or ``centred``
    (date-centred contributions, the paper's).
    robust: screen each settlement's contributions for outliers before
    learning (:class:`~memtrial.values.OutlierGuard`: clipped beyond 6 robust
    sds, set aside beyond 50), so one implausible outcome cannot dominate or
    zero the values. Off by default (the method as specified), for a new REST
    agent too: on the dev seeds it moves the default's utilities.
    draft_budget: LLM draft calls per decision on average (method 4.11; None: the whole design
    every time). Plans then draft the whole design on trial decisions only and one or two drafts
    on the others (:mod:`memtrial.action.budget`).
    draft_horizon: the number of decisions the budget covers (None: open-ended). Trials then come
    first, on credit lent by the later decisions within it, each of which keeps one call.
    reference: ``given`` (the plan's reference, equal weight by default) or ``memory_free`` (each
    decision's memory-free draft, so the reference costs no call beyond the drafts).
    retrieval: ``similarity`` (cosine alone) or ``value_aware`` (similarity and learned values, weighed by
    the trust evidence; method 4.12).
    quarantine: the test that keeps credibly harmful experiences out of retrieval and detects lessons
    gone stale (:class:`~memtrial.curation.QuarantineConfig`; method 4.13, 4.14). On by default, at the
    false discovery rate 0.05.
    """

    k: int = 4
    design: DesignKind = DesignKind.FOLD
    learner: LearnerMode = LearnerMode.AUTO
    gate: GateConfig = _DEFAULT_GATE
    fallback: FallbackVariant = FallbackVariant.REF
    investor: Investor | None = None
    gamma: float | None = None
    fee_bp: float = 15.0
    n_components: int | None = 8
    diagnostics: bool = True
    action: ActionRule = ActionRule.DIAL
    credit: CreditBasis = CreditBasis.RAW
    robust: bool = False
    draft_budget: float | None = None
    reference: ReferenceSource = ReferenceSource.GIVEN
    draft_horizon: int | None = None
    retrieval: RetrievalMode = RetrievalMode.VALUE_AWARE
    quarantine: QuarantineConfig = field(default_factory=lambda: QuarantineConfig(enabled=True))

    def __post_init__(self) -> None:
        object.__setattr__(self, "draft_budget", check_budget(self.draft_budget))
        object.__setattr__(self, "draft_horizon", check_horizon(self.draft_horizon, self.draft_budget))
        if self.gate is _DEFAULT_GATE:  # the gate left to its default: the budget's bets at a budget (method 4.11)
            # (never the default object itself, so a budget taken later keeps the bets the engine was made with)
            object.__setattr__(self, "gate", budget_gate(GateConfig(test=GateTest.ANYTIME), self.draft_budget))
        for name in ("robust", "diagnostics"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be a bool, got {getattr(self, name)!r}", field=name)
        if not isinstance(self.gate, GateConfig):
            raise ConfigError(
                f"gate must be a GateConfig (GateConfig(test='anytime')), got {self.gate!r}", field="gate"
            )
        if (
            self.n_components is not None
            and not reading_existing()
            and (
                isinstance(self.n_components, bool)
                or not isinstance(self.n_components, int | np.integer)
                or self.n_components < 1
            )
        ):
            raise ConfigError(
                f"n_components must be an integer >= 1 or None, got {self.n_components!r}", field="n_components"
            )
        if isinstance(self.k, np.integer) and not isinstance(self.k, np.bool_):  # from an array: the same number
            object.__setattr__(self, "k", int(self.k))
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= 8:
            raise ConfigError(f"k must be an integer in [1, 8], got {self.k!r}", field="k")
        choices = (
            ("design", DesignKind),
            ("learner", LearnerMode),
            ("fallback", FallbackVariant),
            ("action", ActionRule),
            ("credit", CreditBasis),
            ("reference", ReferenceSource),
            ("retrieval", RetrievalMode),
        )
        for name, kind in choices:
            object.__setattr__(self, name, parse_choice(kind, getattr(self, name), name))
        if self.k == 1 and self.design in (DesignKind.HALF, DesignKind.FOLD) and not reading_existing():
            # a half fraction of one factor is one run: the experience is never both in and out of a run,
            # so no settlement could credit it (each decision retrieving it would be left unsettleable)
            raise ConfigError(
                f"k = 1 leaves the design {self.design.value!r} one run, which cannot contrast the experience "
                "with its absence: use design 'full' or 'saturated' (two runs), or k >= 2",
                field="k",
            )
        if not isinstance(self.quarantine, QuarantineConfig):
            raise ConfigError(f"quarantine must be a QuarantineConfig, got {self.quarantine!r}", field="quarantine")
        if self.action is ActionRule.DIAL and self.gate.test is GateTest.PREQUENTIAL:
            raise ConfigError(
                "action 'dial' weighs trust by the betting e-process: use gate test 'anytime' (or 'none'), not 'prequential', or action 'gate'",
                field="action",
            )
        if isinstance(self.investor, str):
            if self.investor not in INVESTORS:
                raise ConfigError(
                    f"investor must be one of {sorted(INVESTORS)}, got {self.investor!r}", field="investor"
                )
            object.__setattr__(self, "investor", INVESTORS[self.investor])
        if self.investor is not None and not isinstance(self.investor, Investor):
            raise ConfigError(
                f"investor must be one of {sorted(INVESTORS)} or an Investor, got {self.investor!r}", field="investor"
            )
        if self.gamma is None:
            if self.investor is None:
                raise ConfigError("give gamma or an investor (whose gamma is used)", field="gamma")
            object.__setattr__(self, "gamma", self.investor.gamma)
        gamma = self.gamma
        bound = math.inf if reading_existing() else MAX_GAMMA  # a stored engine's gamma stands
        if not _real(gamma) or not (np.isfinite(gamma) and 0 <= gamma <= bound):
            # beyond it a plan's predicted utilities overflow (every later plan refused) or settle fails
            raise ConfigError(f"gamma must be a risk aversion in [0, {MAX_GAMMA:g}], got {self.gamma!r}", field="gamma")
        if not _real(self.fee_bp) or not (np.isfinite(self.fee_bp) and self.fee_bp >= 0):
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
            else {
                "name": investor.name,
                "risky_cap": investor.risky_cap,
                "defensive_floor": investor.defensive_floor,
                "gamma": investor.gamma,
            },
            "gamma": self.gamma,
            "fee_bp": self.fee_bp,
            "n_components": self.n_components,
            "diagnostics": self.diagnostics,
            # settings added after the first states were written appear only when they differ from the
            # behaviour those states had (the paper's rule, no budget, similarity retrieval), so every
            # earlier state (and its downgrade) stays byte for byte; the defaults differ, so they are written
            **({} if self.action is PAPER_RULE["action"] else {"action": self.action.value}),
            **({} if self.credit is PAPER_RULE["credit"] else {"credit": self.credit.value}),
            **({"robust": True} if self.robust else {}),
            **({} if self.draft_budget is None else {"draft_budget": self.draft_budget}),
            **({} if self.reference is ReferenceSource.GIVEN else {"reference": self.reference.value}),
            **({} if self.draft_horizon is None else {"draft_horizon": self.draft_horizon}),
            **({} if self.retrieval is PAPER_RULE["retrieval"] else {"retrieval": self.retrieval.value}),
            **({} if self.quarantine == PAPER_RULE["quarantine"] else {"quarantine": self.quarantine.to_dict()}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EngineConfig:
        """The configuration :meth:`to_dict` wrote. A key left out means what it meant when the state was
        written, the paper's rule (:data:`PAPER_RULE`), not today's default: every stored state reads back
        as it was made."""
        values = {name: value for name, value in PAPER_RULE.items() if name != "gate"} | dict(data)
        values["gate"] = GateConfig.from_dict(values["gate"])
        if isinstance(values["quarantine"], Mapping):
            values["quarantine"] = QuarantineConfig.from_dict(values["quarantine"])
        if values.get("investor") is not None:
            values["investor"] = Investor(**values["investor"])
        with existing_engine():  # a state made before a rule on new configurations still reads back
            return cls(**values)


def default_setting(name: str) -> Any:
    """EngineConfig's default for the setting ``name``: what a new engine, a new REST agent and the
    backtests' default ``memtrial`` take when the setting is not given (one definition for all three).
    A scored decision's design is :data:`SCORED_DESIGN` instead."""
    for setting in fields(EngineConfig):
        if setting.name == name:
            if setting.default_factory is not MISSING:
                return setting.default_factory()
            if setting.default is MISSING:
                break
            return setting.default
    raise ConfigError(f"EngineConfig has no default for {name!r}", field=name)
