"""The service's modes: a decision's life cycle, and the core's enums as request and answer fields.

Every mode is one ``StrEnum``, defined once: the core's (``GateTest``, ``DecisionKind``, ...) or,
for what only the service knows, here. A field typed ``Listed[GateTest]`` accepts the enum's values
and holds its members, while the OpenAPI document lists the values in place
(``{"enum": [...], "type": "string"}``, no shared component) and a wrong value is reported as for
any closed set of strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

__all__ = ["DecisionStatus", "Listed"]


class DecisionStatus(StrEnum):
    """Where a decision is in its life: waiting for its drafts, decided, settled, or withdrawn."""

    PLANNED = "planned"
    DECIDED = "decided"
    SETTLED = "settled"
    FAILED = "failed"  # withdrawn before it was decided (its drafting failed or its lease ended)


@dataclass(frozen=True, slots=True)
class _Values:
    """The validation of a ``Listed`` field: one of the enum's values, converted to its member."""

    enum: type[StrEnum]

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        values = [member.value for member in self.enum]
        return core_schema.no_info_after_validator_function(self.enum, core_schema.literal_schema(values))


if TYPE_CHECKING:
    _Enum = TypeVar("_Enum", bound=StrEnum)
    Listed = Annotated[_Enum, "listed"]  # to a type checker, Listed[GateTest] is GateTest
else:

    class Listed:
        """``Listed[GateTest]``: a field holding a ``GateTest``, its values listed in the schema."""

        def __class_getitem__(cls, enum: type[StrEnum]) -> Any:
            # str, not the enum, to pydantic's and FastAPI's eyes: no shared schema component
            return Annotated[str, _Values(enum)]
