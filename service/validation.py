"""Field types that hold only what can be stored and served back: checked before anything is written.

- :data:`Text` / :func:`text_field`: strings without NUL or lone surrogates;
- :data:`ExternalId`: a name in Unicode normal form C (:func:`external_id`), so the composed and the
  decomposed spellings of ``café`` are one id;
- :data:`JsonDocument`: client metadata, at most ``MAX_DEPTH`` levels deep and
  ``MAX_DOCUMENT_BYTES`` bytes, finite numbers, 64-bit integers;
- :data:`Weight`: a real number (not a string, not a boolean), finite;
- :data:`Moment`: an aware datetime between 1900 and 2200 once in UTC.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import unicodedata
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, StrictFloat, StringConstraints

__all__ = [
    "AssetName",
    "EARLIEST",
    "ExternalId",
    "Id",
    "LATEST",
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "JsonDocument",
    "Moment",
    "Name",
    "Text",
    "Weight",
    "JsonValue",
    "bounded_text",
    "check_document",
    "check_name",
    "check_text",
    "check_value",
    "external_id",
    "finite",
]

MAX_DEPTH = 16
MAX_DOCUMENT_BYTES = 64_000
INT64 = 2**63
EARLIEST = dt.datetime(1900, 1, 1, tzinfo=dt.UTC)
LATEST = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)


def check_text(value: str, field: str = "text") -> str:
    """A string a database can store: no NUL character and no lone surrogate."""
    if "\x00" in value:
        raise ValueError(f"{field} must not contain the NUL character (\\u0000)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{field} must be valid Unicode (it holds a lone surrogate)") from None
    return value


#: characters no name may hold: controls (Cc), formats (Cf: bidi overrides, zero-width marks), line and
#: paragraph separators (Zl, Zp), surrogates (Cs), private use (Co) and unassigned (Cn) code points
_NOT_IN_NAMES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
#: characters that do not show: whitespace and formats (a text of only these says nothing)
_INVISIBLE = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})


def _visible(value: str) -> bool:
    return any(unicodedata.category(character) not in _INVISIBLE and not character.isspace() for character in value)


def check_name(value: str, field: str = "the name") -> str:
    """A name (asset, outcome, agent): printable, without leading or trailing space, not blank."""
    check_text(value, field)
    for character in value:
        if unicodedata.category(character) in _NOT_IN_NAMES:
            raise ValueError(
                f"{field} must be printable: it holds U+{ord(character):04X} ({unicodedata.name(character, 'unnamed')})"
            )
    if value != value.strip():
        raise ValueError(f"{field} must not begin or end with white space, got {value!r}")
    if not _visible(value):
        raise ValueError(f"{field} must hold a visible character")
    return value


#: the longest external id, in characters of its normal form C (the column holds 200)
MAX_EXTERNAL_ID = 200


def external_id(value: str) -> str:
    """An external id as it is stored and looked up: Unicode normal form C (NFC), then checked as a name, and
    at most 200 characters as stored (normalising may lengthen it: U+0958 is two characters in NFC)."""
    normal = unicodedata.normalize("NFC", value)
    if len(normal) > MAX_EXTERNAL_ID:
        raise ValueError(
            f"an external id must hold at most {MAX_EXTERNAL_ID} characters in Unicode normal form C, "
            f"got {len(normal)} ({len(value)} as given)"
        )
    return check_name(normal, "an external id")


def instructions(value: str) -> str:
    """A scored agent's instructions, which open every prompt as the prompt's own text: printable and on one
    line, without ``<`` or ``>`` (line breaks and tags could forge the question and lessons blocks after it)."""
    check_text(value, "answer.instructions")
    for character in value:
        if unicodedata.category(character) in _NOT_IN_NAMES or character in "<>":
            shown = repr(character) if character in "<>" else f"U+{ord(character):04X}"
            raise ValueError(
                "answer.instructions must be one printable line without '<' or '>' (it opens every prompt, and "
                f"these could forge the prompt's question and lessons), got {shown}"
            )
    return value


def _text(value: str) -> str:
    check_text(value, "the text")
    if not _visible(value):
        raise ValueError("the text must hold a visible character (not only white space or zero-width marks)")
    return value


def _name(value: str) -> str:
    return check_name(value)


def _id(value: str) -> str:
    return check_name(value, "an id")


def _walk(value: Any, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"keys must be strings, got {type(key).__name__}")
            check_text(key, "a key")
            _walk(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _walk(item, depth + 1)
    elif isinstance(value, str):
        check_text(value, "a string")
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        if not -INT64 <= value < INT64:
            raise ValueError(f"integers must fit in 64 bits, got {value}")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"numbers must be finite, got {value}")
    else:
        raise ValueError(f"holds a {type(value).__name__}, not a JSON value")


def check_document(value: dict[str, Any]) -> dict[str, Any]:
    """A JSON object that serialises and stores: bounded depth and size, finite numbers, clean strings."""
    return check_value(value)  # type: ignore[no-any-return]


def check_value(value: Any) -> Any:
    """Any JSON value (a draft, an outcome) that serialises and stores, bounded like a document."""
    _walk(value, 1)
    size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8"))
    if size > MAX_DOCUMENT_BYTES:
        raise ValueError(f"is {size} bytes as JSON, more than {MAX_DOCUMENT_BYTES}")
    return value


def finite(value: float) -> float:
    """A float that is a number (NaN and the infinities are refused)."""
    if not math.isfinite(value):
        raise ValueError(f"must be finite, got {value}")
    return value


def _moment(value: dt.datetime) -> dt.datetime:
    try:
        utc = value.astimezone(dt.UTC)
    except OverflowError:
        raise ValueError(f"{value.isoformat()} is outside the supported range (1900 to 2200 UTC)") from None
    if not EARLIEST <= utc < LATEST:
        raise ValueError(f"{value.isoformat()} is outside the supported range (1900 to 2200 UTC)")
    return utc


Text = Annotated[str, AfterValidator(_text)]


def bounded_text(max_length: int, min_length: int = 1) -> Any:
    """A :data:`Text` of ``min_length`` to ``max_length`` characters."""
    return Annotated[str, StringConstraints(min_length=min_length, max_length=max_length), AfterValidator(_text)]


Name = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(_name)]
Instructions = Annotated[str, StringConstraints(min_length=1, max_length=2_000), AfterValidator(instructions)]
ExternalId = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(external_id)]
Id = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(_id)]  # an id the server gave
AssetName = Annotated[str, StringConstraints(min_length=1, max_length=64), AfterValidator(_name)]
JsonDocument = Annotated[dict[str, Any], AfterValidator(check_document)]
JsonValue = Annotated[Any, AfterValidator(check_value)]
Weight = Annotated[StrictFloat, AfterValidator(finite)]
Moment = Annotated[AwareDatetime, AfterValidator(_moment)]
