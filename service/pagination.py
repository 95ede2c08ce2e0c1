"""Cursor pagination: opaque cursors that name the last row a page returned.

A page is ordered by a unique, immutable key (a sequence number, a log index
or a time-ordered id) and the next page starts strictly after the cursor, so
paging visits every row that existed when it began exactly once, whatever is
inserted meanwhile (new rows sort after the rows already there, or are
simply not seen).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import Query

from service.errors import ApiError

__all__ = ["CursorQuery", "LimitQuery", "decode_cursor", "encode_cursor"]

MAX_LIMIT = 200
#: positions are 32-bit integer columns (sequence numbers, log indexes): a cursor past them names no row
MAX_POSITION = 2**31
LimitQuery = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=f"rows per page (1..{MAX_LIMIT})")]
CursorQuery = Annotated[str | None, Query(max_length=200, description="next_cursor of the previous page")]


def _scoped(scope: Sequence[Any]) -> str:
    """A short digest of what a list pages through (its owner and filters, JSON values)."""
    return hashlib.sha256(json.dumps(list(scope), default=str).encode()).hexdigest()[:16]


def encode_cursor(kind: str, value: int | str, scope: Sequence[Any] = ()) -> str:
    """A cursor at ``value`` of the list ``kind``, bound to ``scope`` (the agent or tenant and the filters whose
    rows the list pages through): another list's cursor would start it at a position of other rows."""
    raw = json.dumps([kind, value, _scoped(scope)], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, kind: str, value_type: type[int] | type[str], scope: Sequence[Any] = ()) -> int | str:
    """The position a cursor names; 422 naming ``cursor`` for anything else, and for a cursor of the same kind of
    list with another scope (another agent's, or the same list under other filters). A cursor made before
    cursors were scoped (two parts) is taken as it was."""
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not (
            isinstance(decoded, list)
            and len(decoded) in (2, 3)
            and decoded[0] == kind
            and type(decoded[1]) is value_type
        ):
            raise ValueError(cursor)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ApiError(
            422,
            "invalid",
            f"cursor: not a cursor of this list ({kind}); pass next_cursor of the previous page",
            "cursor",
        ) from None
    if len(decoded) == 3 and decoded[2] != _scoped(scope):
        raise ApiError(
            422,
            "invalid",
            f"cursor: a cursor of another {kind} list (another owner, or other filters); pass next_cursor of the "
            "previous page of this list, with the same filters",
            "cursor",
        )
    value: int | str = decoded[1]
    if (
        isinstance(value, int)
        and not 0 <= value < MAX_POSITION
        or isinstance(value, str)
        and not re.fullmatch(r"[0-9a-f]{32}", value)
    ):
        raise ApiError(
            422,
            "invalid",
            f"cursor: not a cursor of this list ({kind}); pass next_cursor of the previous page",
            "cursor",
        )
    return value
