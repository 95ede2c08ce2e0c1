"""Quarantine and stale lessons (method 4.13, 4.14): an anytime-valid test per experience that its value
is not below zero, corrected across the agent's experiences, and a change detector that restarts it.

Each settled trial gives experience h a raw contribution c (its Banzhaf contrast, method 4.3); the test
reads its weighted sign x = sign(-c) g(|c|) in [-1, 1], g(a) = min(a / sigma, 1), where sigma = ``clip``
times the mean |c| of every contribution the agent settled before this one (predictable; g = 1, the plain
sign, before any and with ``clip`` None). H0 for h: for every a >= 0, P(c < -a | past) <= P(c > a | past),
which holds when c is a value >= 0 plus noise symmetric about 0. As g is nondecreasing with g(0) = 0,
E[x | past] = int_0^inf g'(a) [P(c < -a | past) - P(c > a | past)] da <= 0 (and for the plain sign
E[x | past] = P(c < 0 | past) - P(c > 0 | past) <= 0), so for each bet lambda in ``BETS`` the wealth
prod (1 + lambda x) is a nonnegative supermartingale, and so is their mean E.

The j-th test the agent starts (an experience's first contribution, or a restart) gets the share
w_j = (s + 1) / ((j + s) (j + s + 1)) of the level (s = ``spread``; sum_j w_j = 1, telescoping). Under
``fwer`` it quarantines when E >= 1 / (w_j level): by Ville's inequality and a union bound over j, the
probability that any experience with value >= 0 is ever quarantined is at most ``level``. Under ``fdr``
(the default) it quarantines when E >= 1 / (w_j level (r + 1)), r the quarantines the agent made before,
and after each quarantine every running test is checked again: each quarantined test then holds
E_j >= 1 / (w_j level R) at its quarantine, R the quarantines made by any later time, so the expected share
of wrong quarantines among them is at most sum_j w_j level E[E_j stopped] <= ``level`` (the weighted e-BH
self-consistency argument, method 4.13). In a world where every value is >= 0 the two coincide.

The change detector is the CUSUM e-detector D = mean over bets of max(D_lambda, 1) (1 + lambda x); it
alarms at D >= ``change_threshold``. An alarm while the test's wealth is below 1 (the experience helped
until now) is a change: the test restarts (a new j) and ``changed_at`` records the decision.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from memtrial.errors import ConfigError, InputError, StateError
from memtrial.numeric.plain import plain_number
from memtrial.records import ExperienceId, existing_settings, reading_existing

__all__ = [
    "BETS",
    "CLIP",
    "SPREAD",
    "ErrorControl",
    "Evidence",
    "QuarantineConfig",
    "Verdict",
    "threshold",
    "weighted_sign",
]

BETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)  # any bet below 1 is valid for x in [-1, 1]
SPREAD = 30.0  # s of the tests' shares of the level (method 4.13; chosen on the dev seeds)
#: the smallest level and the largest spread and clip: within them every bar T_j(r) is a finite number (the log
#: records it), for any number of experiences a machine can hold (j = 10^9: T below 10^43)
MIN_LEVEL = 1e-12
MAX_SPREAD = 1_000_000.0
MAX_CLIP = 1_000_000.0
CLIP: float | None = 1.0  # the weighted sign's scale in mean absolute contributions (None: the plain sign test)


class ErrorControl(StrEnum):
    """What ``level`` bounds: the probability of any wrong quarantine (``fwer``, the family-wise error)
    or the expected share of wrong quarantines among all quarantines (``fdr``, the false discovery rate)."""

    FWER = "fwer"
    FDR = "fdr"


@dataclass(frozen=True, slots=True)
class QuarantineConfig:
    """enabled: test every experience and quarantine those credibly harmful (method 4.13). level: the
    bound that ``control`` names: on the expected share of wrongly quarantined experiences (value >= 0)
    among those quarantined (``fdr``), or on the probability that any is (``fwer``). change_threshold: the CUSUM
    e-detector's alarm (method 4.14; its mean run length before a false alarm is at least this).
    spread: s of the tests' shares of the level, w_j = (s + 1) / ((j + s) (j + s + 1)). clip: the
    weighted sign's scale in mean absolute contributions (None: the plain sign test). control: the error
    ``level`` bounds (:class:`ErrorControl`)."""

    enabled: bool = False
    level: float = 0.05
    change_threshold: float = 1000.0
    spread: float = SPREAD
    clip: float | None = CLIP
    control: ErrorControl = ErrorControl.FDR

    def __post_init__(self) -> None:
        for name in ("level", "change_threshold", "spread", "clip"):  # NumPy's numbers are the same numbers
            object.__setattr__(self, name, plain_number(getattr(self, name)))
        if not isinstance(self.enabled, bool):
            raise ConfigError(f"quarantine.enabled must be a bool, got {self.enabled!r}", field="quarantine.enabled")
        stored = reading_existing()  # a setting stored before the bounds above still reads back
        least, level_rule = (0.0, "(0, 1)") if stored else (MIN_LEVEL, f"[{MIN_LEVEL:g}, 1)")
        if not (isinstance(self.level, (int, float)) and least <= self.level < 1.0 and self.level > 0.0):
            raise ConfigError(f"quarantine.level must be in {level_rule}, got {self.level!r}", field="quarantine.level")
        threshold_ok = isinstance(self.change_threshold, (int, float)) and math.isfinite(self.change_threshold)
        if not (threshold_ok and self.change_threshold > 1.0):
            raise ConfigError(
                f"quarantine.change_threshold must be finite and > 1, got {self.change_threshold!r}",
                field="quarantine.change_threshold",
            )
        spread_ok = isinstance(self.spread, (int, float)) and not isinstance(self.spread, bool)
        most = math.inf if stored else MAX_SPREAD
        if not (spread_ok and math.isfinite(self.spread) and 0.0 <= self.spread <= most):
            rule = "finite and >= 0" if stored else f"in [0, {MAX_SPREAD:,.0f}]"
            raise ConfigError(f"quarantine.spread must be {rule}, got {self.spread!r}", field="quarantine.spread")
        clip_ok = isinstance(self.clip, (int, float)) and not isinstance(self.clip, bool)
        most = math.inf if stored else MAX_CLIP
        if self.clip is not None and not (clip_ok and math.isfinite(self.clip) and 0.0 < self.clip <= most):
            rule = "finite and > 0" if stored else f"in (0, {MAX_CLIP:,.0f}]"
            raise ConfigError(f"quarantine.clip must be {rule} (or null), got {self.clip!r}", field="quarantine.clip")
        for name in ("level", "change_threshold", "spread", "clip"):  # as a stored state reads them back
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, float(value))
        if not isinstance(self.control, ErrorControl):
            if self.control not in set(ErrorControl):
                raise ConfigError(
                    f"quarantine.control must be one of {[c.value for c in ErrorControl]}, got {self.control!r}",
                    field="quarantine.control",
                )
            object.__setattr__(self, "control", ErrorControl(self.control))

    def to_dict(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "level": self.level,
            "change_threshold": self.change_threshold,
            "spread": self.spread,
            "clip": self.clip,
            "control": self.control.value,
        }

    def changed(self, changes: Mapping[str, Any]) -> QuarantineConfig:
        """This setting with the fields ``changes`` gives: those are checked as a new setting's, the others kept
        as they are (a setting stored before the bounds on new ones can still be turned off, say)."""
        QuarantineConfig(**dict(changes))  # the fields given, as a new setting's (the others at their defaults)
        with existing_settings():
            return replace(self, **changes)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QuarantineConfig:
        """A stored setting; one written before ``spread`` and ``clip`` existed had the plain sign test with
        shares 1 / (j (j + 1)), and one written before ``control`` existed the family-wise rule (``fwer``)."""
        clip = data.get("clip")
        with existing_settings():  # the bounds on new settings do not refuse one stored before them
            return cls(
                bool(data["enabled"]),
                float(data["level"]),
                float(data["change_threshold"]),
                float(data.get("spread", 0.0)),
                None if clip is None else float(clip),
                ErrorControl(data.get("control", ErrorControl.FWER)),
            )


def threshold(slot: int, level: float, spread: float = 0.0, discoveries: int = 0) -> float:
    """The e-value the slot-th test (1-based) must reach: 1 / (w_j level (r + 1)), w_j = (s + 1) / ((j + s)
    (j + s + 1)), r the quarantines made before (0 under ``fwer``)."""
    return (slot + spread) * (slot + spread + 1.0) / ((spread + 1.0) * level * (discoveries + 1.0))


def weighted_sign(contribution: float, scale: float | None) -> float:
    """x = sign(-c) min(|c| / scale, 1) (the plain sign with scale None or 0)."""
    sign = -1.0 if contribution > 0 else 1.0 if contribution < 0 else 0.0
    if not scale:
        return sign
    return sign * min(abs(contribution) / scale, 1.0)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one contribution did to an experience's evidence: quarantined it, detected a change, or neither."""

    quarantined: bool = False
    changed: bool = False


@dataclass(slots=True)
class Evidence:
    """One experience's running test (O(1) state): its slot j, the wealth of each bet and the detector's,
    the contributions since the test (re)started (count, sum, sum of squares), those since the last detected
    change (the value learnt from there on, method 4.14: a release restarts the test, not the regime), and
    what happened."""

    slot: int
    wealth: list[float] = field(default_factory=lambda: [1.0] * len(BETS))
    detector: list[float] = field(default_factory=lambda: [0.0] * len(BETS))
    n: int = 0
    total: float = 0.0
    squares: float = 0.0
    n_seen: int = 0
    quarantined_at: str | None = None
    changed_at: str | None = None
    regime_n: int = 0
    regime_total: float = 0.0
    regime_squares: float = 0.0

    @property
    def e_value(self) -> float:
        return sum(self.wealth) / len(self.wealth)

    @property
    def alarm(self) -> float:
        return sum(self.detector) / len(self.detector)

    @property
    def mean(self) -> float | None:
        """The mean contribution since the test (re)started (None before one)."""
        return self.total / self.n if self.n else None

    def restart(self, slot: int) -> None:
        """Start a fresh test in ``slot`` (after a change or a release); the detector starts again too."""
        self.slot, self.n, self.total, self.squares = slot, 0, 0.0, 0.0
        self.wealth = [1.0] * len(BETS)
        self.detector = [0.0] * len(BETS)

    def observe(
        self,
        decision_id: str,
        contribution: float,
        config: QuarantineConfig,
        next_slot: int,
        scale: float | None = None,
        discoveries: int = 0,
    ) -> Verdict:
        """Add one matured contribution; ``next_slot`` is the slot a restart would take, ``scale`` the
        weighted sign's sigma (None: the plain sign), ``discoveries`` the quarantines the agent made before
        (they lower the threshold under ``fdr``)."""
        if not math.isfinite(contribution):
            raise InputError(f"contribution must be finite, got {contribution!r}", field="contribution")
        sign = weighted_sign(contribution, scale)
        self.n_seen += 1
        factors = [1.0 + b * sign for b in BETS]
        self.wealth = [w * f for w, f in zip(self.wealth, factors, strict=True)]
        self.detector = [max(d, 1.0) * f for d, f in zip(self.detector, factors, strict=True)]
        self.n += 1
        self.total += contribution
        self.squares += contribution * contribution
        self.regime_n += 1
        self.regime_total += contribution
        self.regime_squares += contribution * contribution
        if self.quarantined_at is not None:
            return Verdict()
        if self.alarm >= config.change_threshold and self.e_value < 1.0:
            self.changed_at = decision_id
            self.restart(next_slot)
            self.regime_n, self.regime_total, self.regime_squares = 0, 0.0, 0.0  # the new regime starts after it
            return Verdict(changed=True)
        return Verdict(quarantined=self.check(decision_id, config, discoveries))

    def check(self, decision_id: str, config: QuarantineConfig, discoveries: int = 0) -> bool:
        """Quarantine now if the wealth reaches the slot's threshold given ``discoveries`` (counted under
        ``fdr`` only); whether it did."""
        if self.quarantined_at is not None:
            return False
        counted = discoveries if config.control is ErrorControl.FDR else 0
        if self.e_value >= threshold(self.slot, config.level, config.spread, counted):
            self.quarantined_at = decision_id
            return True
        return False

    def payload(
        self, experience_id: ExperienceId, level: float, spread: float = 0.0, discoveries: int = 0
    ) -> dict[str, Any]:
        """The evidence at this moment, as a log entry's payload (``discoveries``: the quarantines that
        lowered the threshold, 0 under ``fwer``)."""
        return {
            "experience_id": experience_id,
            "slot": self.slot,
            "e_value": self.e_value,
            "threshold": threshold(self.slot, level, spread, discoveries),
            "n": self.n,
            "mean": self.mean,
            "changed_at": self.changed_at,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "slot": self.slot,
            "wealth": list(self.wealth),
            "detector": list(self.detector),
            "n": self.n,
            "total": self.total,
            "squares": self.squares,
            "n_seen": self.n_seen,
            "quarantined_at": self.quarantined_at,
            "changed_at": self.changed_at,
            # the regime's figures where they are not the test's (a release after a change), so that a stored
            # book without a release reads back and is written again byte for byte
            **(
                {}
                if (self.regime_n, self.regime_total, self.regime_squares) == (self.n, self.total, self.squares)
                else {
                    "regime_n": self.regime_n,
                    "regime_total": self.regime_total,
                    "regime_squares": self.regime_squares,
                }
            ),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        """A stored test, checked: a slot >= 1, a wealth per bet (positive, finite), a detector per bet (>= 0),
        counts >= 0 and finite sums (a StateError naming the part otherwise)."""
        evidence = cls(
            slot=count(data["slot"], "slot", 1),
            wealth=[float(w) for w in data["wealth"]],
            detector=[float(d) for d in data["detector"]],
            n=count(data["n"], "n"),
            total=float(data["total"]),
            squares=float(data["squares"]),
            n_seen=count(data["n_seen"], "n_seen"),
            quarantined_at=data["quarantined_at"],
            changed_at=data["changed_at"],
            # a state stored before the regime had figures of its own: the test's (the same unless released since)
            regime_n=count(data.get("regime_n", data["n"]), "regime_n"),
            regime_total=float(data.get("regime_total", data["total"])),
            regime_squares=float(data.get("regime_squares", data["squares"])),
        )
        # a wealth may underflow to 0 (a lesson that helps at every settlement bets against itself a few hundred
        # times), never below
        for name, values in (("wealth", evidence.wealth), ("detector", evidence.detector)):
            if len(values) != len(BETS) or not all(math.isfinite(v) and v >= 0.0 for v in values):
                raise StateError(f"curation: evidence {name} must be {len(BETS)} finite numbers >= 0, got {values!r}")
        for total, squares in ((evidence.total, evidence.squares), (evidence.regime_total, evidence.regime_squares)):
            if not (math.isfinite(total) and math.isfinite(squares) and squares >= 0.0):
                raise StateError("curation: evidence total and squares must be finite (squares >= 0)")
        for name in ("quarantined_at", "changed_at"):
            if getattr(evidence, name) is not None and not isinstance(getattr(evidence, name), str):
                raise StateError(f"curation: evidence {name} must be a decision id or null")
        return evidence


def count(value: Any, name: str, low: int = 0) -> int:
    """A stored count: an integer >= ``low`` (not a flag, not a fraction), or a StateError naming it."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value != int(value)
        or value < low
    ):
        raise StateError(f"curation: {name} must be an integer >= {low}, got {value!r}")
    return int(value)
