"""The service's modes: a decision's life cycle, and the core's enums as request and answer fields.

Every mode is one ``StrEnum``, defined once: the core's (``GateTest``, ``DecisionKind``, ...) or,
for what only the service knows, here. A request field typed ``Listed[GateTest]`` accepts the enum's
values and holds its members; an answer field ``Annotated[str, values_of(DecisionStatus)]`` holds the
value as a plain string. Either way the OpenAPI document lists the values in place
(``{"enum": [...], "type": "string"}``, no shared component) and a wrong value is reported as for
any closed set of strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

__all__ = ["DecisionStatus", "ExperienceStatus", "Listed", "listed_in_order", "values_of"]


class DecisionStatus(StrEnum):
    """Where a decision is in its life: waiting for its drafts, decided, settled, or withdrawn."""

    PLANNED = "planned"
    DECIDED = "decided"
    SETTLED = "settled"
    FAILED = "failed"  # withdrawn before it was decided (its drafting failed or its lease ended)


class ExperienceStatus(StrEnum):
    """Whether an experience is retrieved (``active``), kept out of retrieval by its evidence
    (``quarantined``, method 4.13) or by hand (``retired``)."""

    ACTIVE = "active"
    QUARANTINED = "quarantined"
    RETIRED = "retired"


@dataclass(frozen=True, slots=True)
class _Values:
    """The validation of a field of an enum's values: one of them, converted to its member when ``members``."""

    enum: type[StrEnum]
    members: bool = True
    order: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.order and sorted(self.order) != sorted(member.value for member in self.enum):
            raise ValueError(f"order must list each value of {self.enum.__name__} once, got {self.order!r}")

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        values = core_schema.literal_schema(list(self.order) or [member.value for member in self.enum])
        return core_schema.no_info_after_validator_function(self.enum, values) if self.members else values


def values_of(enum: type[StrEnum]) -> Any:
    """The metadata of a ``str`` field that holds one of ``enum``'s values as a plain string (an answer
    clients read as they always have): ``Annotated[str, values_of(DecisionStatus)]``."""
    return _Values(enum, members=False)


def listed_in_order(enum: type[StrEnum], *order: str) -> Any:
    """The metadata of a request field holding an ``enum`` member whose schema lists the values in
    ``order`` (each value once; the set stays the enum's): ``Annotated[LearnerMode, listed_in_order(...)]``."""
    return _Values(enum, order=order)


if TYPE_CHECKING:
    _Enum = TypeVar("_Enum", bound=StrEnum)
    Listed = Annotated[_Enum, "listed"]  # to a type checker, Listed[GateTest] is GateTest
else:

    class Listed:
        """``Listed[GateTest]``: a field holding a ``GateTest``, its values listed in the schema."""

        def __class_getitem__(cls, enum: type[StrEnum]) -> Any:
            # str, not the enum, to pydantic's and FastAPI's eyes: no shared schema component
            return Annotated[str, _Values(enum)]
