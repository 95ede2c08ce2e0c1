"""The exception tree of memtrial.

Every error the core raises is a :class:`MemtrialError`, so a caller can catch
one class at the boundary (the service maps them to HTTP statuses in one
handler, the CLI to exit codes)::

    MemtrialError
    ├── ConfigError             a parameter fixed at construction is invalid
    ├── InputError              a value passed to a call is invalid
    │   └── InfeasibleMandateError   no portfolio satisfies the mandate
    ├── LifecycleError          a call that is valid alone but not now
    │   ├── UnknownDecisionError     no plan has this decision id
    │   ├── DuplicateError           the id is already taken
    │   ├── TimeOrderError           a time earlier than the engine's clock
    │   ├── PrematureSettlementError settled before the decision matured
    │   └── SettlementConflictError  settled twice with different data
    ├── StateError              serialised state that cannot be restored
    └── MissingExtraError       an optional dependency is not installed

Messages say what was wrong, the value, and what was expected.
"""

from __future__ import annotations

import importlib
from enum import Enum
from types import ModuleType
from typing import TypeVar

__all__ = [
    "ConfigError",
    "DuplicateError",
    "InfeasibleMandateError",
    "InputError",
    "LifecycleError",
    "MemtrialError",
    "MissingExtraError",
    "PrematureSettlementError",
    "SettlementConflictError",
    "StateError",
    "TimeOrderError",
    "UnknownDecisionError",
    "import_extra",
    "install_command",
    "install_hint",
    "running_python",
    "parse_choice",
]

E = TypeVar("E", bound=Enum)


class MemtrialError(Exception):
    """Base class of every error raised by memtrial."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class ConfigError(MemtrialError):
    """A constructor parameter is outside its allowed range."""


class InputError(MemtrialError):
    """An argument of a call is malformed (shape, NaN, sign, unknown id)."""


class InfeasibleMandateError(InputError):
    """The universe admits no portfolio that satisfies the investor's mandate."""


class LifecycleError(MemtrialError):
    """A call arrives in a state where it is not allowed."""


class UnknownDecisionError(LifecycleError):
    """No plan exists for the decision id."""


class DuplicateError(LifecycleError):
    """An id that must be new is already in use."""


class TimeOrderError(LifecycleError):
    """A time lies before the engine's clock (the latest time it has seen)."""


class PrematureSettlementError(LifecycleError):
    """A decision was settled before its maturity."""


class SettlementConflictError(LifecycleError):
    """A decision already settled was settled again with different data."""


class StateError(MemtrialError):
    """Serialised state is malformed or inconsistent."""


def install_command(extra: str | None = None) -> str:
    """The ``pip install`` that installs this checkout, with ``extra`` (None: the pure core).

    memtrial installs from its source checkout (it is not on a package registry), always editable in
    compat mode: the default editable mode maps the package through an import hook, and from the
    folder that holds a checkout named ``memtrial`` that folder then shadows the package
    (``import memtrial`` fails with "unknown location"). Every install hint is built here.
    """
    target = "." if extra is None else f"'.[{extra}]'"
    return f"pip install -e {target} --config-settings editable_mode=compat"


def install_hint(extra: str | None = None) -> str:
    """How to add an extra, in words: :func:`install_command` run in the checkout by the interpreter that runs
    memtrial (``.venv/bin/python -m pip ...``): a bare ``pip`` may be another environment's, and the hint
    would then install into it and leave this one as it was."""
    return f"{running_python()} -m {install_command(extra)} in the memtrial checkout"


def running_python() -> str:
    """The interpreter that runs memtrial, as a shell in the checkout would take it: relative to the checkout
    when it lies inside it (``.venv/bin/python``), else its full path (symbolic links kept: a virtual
    environment's interpreter is a link to the system's)."""
    import os
    import shlex
    import sys
    from pathlib import Path

    executable = os.path.abspath(sys.executable) if sys.executable else "python3"
    checkout = str(Path(__file__).resolve().parents[1]) + os.sep  # memtrial/errors.py: the checkout's memtrial/
    return shlex.quote(executable[len(checkout) :] if executable.startswith(checkout) else executable)


class MissingExtraError(MemtrialError, ImportError):
    """A feature needs an optional dependency that is not installed; the message names the extra."""

    def __init__(self, feature: str, module: str, extra: str) -> None:
        super().__init__(f"{feature} needs {module}, which is not installed: {install_hint(extra)}")
        self.module = module
        self.extra = extra


def import_extra(module: str, extra: str, feature: str) -> ModuleType:
    """``import module``, or a MissingExtraError naming the ``pip install`` that adds the extra.

    Only a missing module becomes that error; a module that is installed but
    fails while importing raises its own error.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        missing = error.name or module
        if missing != module and not module.startswith(missing + "."):
            raise
        raise MissingExtraError(feature, missing, extra) from None


def parse_choice(kind: type[E], value: object, name: str, *, argument: bool = False) -> E:
    """``kind(value)`` for a StrEnum, or an error that lists the allowed values: a ConfigError for a setting, an
    InputError for a call's ``argument``."""
    try:
        return kind(value)
    except ValueError:
        allowed = [member.value for member in kind]
        error = InputError if argument else ConfigError
        raise error(f"{name} must be one of {allowed}, got {value!r}", field=name) from None
