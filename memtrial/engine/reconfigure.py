"""Settings an engine may change mid-life: the draft budget and its horizon (method 4.11), the retrieval
mode (4.12) and the quarantine (4.13, 4.14).

Every other setting is fixed for the engine's life: the gate is pre-registered (its hash anchors the
log), and ``k``, the design, the learner, the credit basis, the action rule, the fallback, the
mandate and the reference define what a trial drafts, what a score correlates and what a decision
plays, so changing them would change the experiment the log records.

A budget changes only which plans are trials, and that is fixed at plan time from what is known
then, so a change takes effect at the next plan and leaves every decision already planned, and its
guarantee, as it was. The gate stays as it was registered: an engine created without a budget keeps
its bets when it takes one (the dial's guarantee holds for any bets below 1), and one created with a
budget keeps the budget's bets without it. The running credit carries over unchanged: calls saved
under the old budget stay saved, calls borrowed on the horizon stay owed, and each later plan adds
the new budget, so the calls made never exceed the sum of the budgets in force at each plan (plus
what a horizon lends). ``draft_horizon`` counts the decisions planned under a budget, from the first.

The retrieval mode and the quarantine change only which experiences later plans retrieve. Which
experiences a plan holds is fixed at plan time, before any outcome it is scored on, and the design,
the predictions and the gate's bets are the same whatever chose them, so every decision already
planned, and the gate's guarantee, stay as they were. Turning the quarantine on starts a fresh test
for every experience from the next settlement; turning it off drops the book (quarantined experiences
are retrieved again); a new ``level``, ``change_threshold`` or ``control`` applies to the running tests from
the next settlement (each test's e-process is valid whatever threshold it is later compared with, and a
quarantine made under ``fwer`` met a threshold at least as high as ``fdr`` would have asked).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from memtrial.curation import QuarantineConfig
from memtrial.engine.config import EngineConfig, existing_engine
from memtrial.errors import ConfigError

__all__ = ["MUTABLE_SETTINGS", "reconfigured"]

#: the settings :meth:`memtrial.engine.lifecycle.MemTrial.change_settings` may change
MUTABLE_SETTINGS: tuple[str, ...] = ("draft_budget", "draft_horizon", "retrieval", "quarantine")


def _quarantine(current: QuarantineConfig, value: Any) -> QuarantineConfig:
    """A new quarantine setting: a :class:`QuarantineConfig`, or a mapping of the fields that change."""
    if isinstance(value, QuarantineConfig):
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"quarantine must be a QuarantineConfig or a mapping of its fields, got {value!r}", field="quarantine"
        )
    unknown = sorted(set(value) - set(current.to_dict()))
    if unknown:
        raise ConfigError(
            f"quarantine.{unknown[0]} is not a quarantine setting ({', '.join(current.to_dict())})",
            field=f"quarantine.{unknown[0]}",
        )
    return current.changed(value)


def _logged(value: Any) -> Any:
    """A setting as the log records it (JSON)."""
    return value.to_dict() if isinstance(value, QuarantineConfig) else value


def reconfigured(config: EngineConfig, changes: Mapping[str, Any]) -> tuple[EngineConfig, dict[str, dict[str, Any]]]:
    """(the new configuration, ``{setting: {"old": ..., "new": ...}}`` for each setting that changed).

    Raises ConfigError naming the setting for one that is fixed for the engine's life or a value
    the configuration refuses (``draft_horizon`` without a ``draft_budget``, say).
    """
    if not isinstance(changes, Mapping) or not all(isinstance(name, str) for name in changes):
        raise ConfigError(
            f"changes must be a mapping of setting names to values ({', '.join(MUTABLE_SETTINGS)}), got {changes!r}"[
                :300
            ],
            field="changes",
        )
    unknown = sorted(set(changes) - {f.name for f in fields(EngineConfig)})
    if unknown:
        raise ConfigError(
            f"{unknown[0]} is not a setting of an engine; only {', '.join(MUTABLE_SETTINGS)} may change",
            field=unknown[0],
        )
    fixed = sorted(set(changes) - set(MUTABLE_SETTINGS))
    if fixed:
        raise ConfigError(
            f"{fixed[0]} is fixed for the engine's life; only {', '.join(MUTABLE_SETTINGS)} may change",
            field=fixed[0],
        )
    given = dict(changes)
    if given.get("draft_budget", 0) is None and config.draft_horizon is not None and "draft_horizon" not in given:
        # what the change asks for, not the rule it meets (a horizon without a budget) in the configuration it makes
        raise ConfigError(
            f"draft_budget: the budget is spread over a draft_horizon of {config.draft_horizon} decisions; to set "
            "the budget aside, set draft_horizon to null with it",
            field="draft_budget",
        )
    if "quarantine" in given:
        given["quarantine"] = _quarantine(config.quarantine, given["quarantine"])
    with existing_engine():  # the rules on new configurations do not refuse an existing engine's change
        updated = replace(config, **given)
    changed = {
        name: {"old": _logged(getattr(config, name)), "new": _logged(getattr(updated, name))}
        for name in MUTABLE_SETTINGS
        if getattr(config, name) != getattr(updated, name)
    }
    return updated, changed
