"""``Idempotency-Key``: a retried creating request gets the first answer instead of creating twice.

Every POST that creates something accepts the header. The key is stored per
tenant with a hash of the request (method, path, validated body) *in the same
transaction* as the write, and the answer is stored with it before commit:

- the same key with the same request returns the stored answer (with
  ``Idempotent-Replayed: true``), whether or not the client saw the first one
  (a connection lost after COMMIT included);
- the same key with another request is 409 ``idempotency_conflict``;
- a key whose first request is still running is 409 ``idempotency_in_progress``.

Whether or not a key is sent, the answer is serialised before the commit, so a
request never commits and then fails to answer.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from fastapi import Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.orm import Session

from memtrial.prereg import canonical_json
from service.errors import ApiError
from service.models import IdempotencyRecord

__all__ = ["Idempotency", "IdempotencyKey", "serialised", "store_answer"]


def serialised(answer: BaseModel | dict[str, Any]) -> str:
    """The answer as JSON text, made before the commit: an answer that cannot be served fails the
    request while its transaction can still roll back."""
    content = answer.model_dump(mode="json") if isinstance(answer, BaseModel) else answer
    return json.dumps(content, allow_nan=False, ensure_ascii=False)


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9_.:\-]+$",
        description="any unique string (letters, digits, _ . : -) to make a retry of this request safe; kept for 24 h",
    ),
]


class Idempotency:
    """The idempotency of one request (``key`` None: the request just gets its answer checked)."""

    def __init__(self, key: str | None, tenant_id: str, request: Request, body: BaseModel | None) -> None:
        self.key, self.tenant_id = key, tenant_id
        self.method, self.path = request.method, request.url.path
        content = {} if body is None else body.model_dump(mode="json")
        self.request_hash = hashlib.sha256(f"{self.method} {self.path}\n{canonical_json(content)}".encode()).hexdigest()
        self.record: IdempotencyRecord | None = None

    def replay(self, session: Session) -> JSONResponse | None:
        """The stored answer of an earlier request with this key, or None to go ahead."""
        if self.key is None:
            return None
        found = session.get(IdempotencyRecord, (self.tenant_id, self.key))
        if found is None:
            return None
        if found.request_hash != self.request_hash:
            raise ApiError(
                409,
                "idempotency_conflict",
                f"Idempotency-Key {self.key!r} was used for another request ({found.method} {found.path})",
                "Idempotency-Key",
            )
        if found.status_code is None or found.response is None:
            raise ApiError(
                409,
                "idempotency_in_progress",
                f"the first request with Idempotency-Key {self.key!r} has not finished; retry later",
                "Idempotency-Key",
            )
        return JSONResponse(
            json.loads(found.response), status_code=found.status_code, headers={"Idempotent-Replayed": "true"}
        )

    def claim(self, session: Session, agent_id: str | None) -> None:
        """Record the key as in progress, in the request's transaction."""
        if self.key is None:
            return
        self.record = IdempotencyRecord(
            tenant_id=self.tenant_id,
            key=self.key,
            method=self.method,
            path=self.path[:300],
            request_hash=self.request_hash,
            agent_id=agent_id,
        )
        session.add(self.record)

    def complete(self, status_code: int, answer: BaseModel | dict[str, Any]) -> None:
        """Serialise the answer (before commit) and store it with the key."""
        text = serialised(answer)
        if self.record is not None:
            self.record.status_code, self.record.response = status_code, text


def store_answer(
    session: Session, tenant_id: str, key: str, status_code: int, answer: BaseModel | dict[str, Any]
) -> None:
    """Complete a key claimed in an earlier transaction (a request that spans several, like server drafting)."""
    record = session.get(IdempotencyRecord, (tenant_id, key))
    if record is not None and record.status_code is None:
        record.status_code, record.response = status_code, serialised(answer)
