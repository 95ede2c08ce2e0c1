"""``Idempotency-Key``: a retried creating request gets the first answer instead of creating twice.

Every POST that creates something accepts the header. The key is stored per
tenant with a hash of the request (method, path, validated body) *in the same
transaction* as the write, and the answer is stored with it before commit:

- the same key with the same request returns the stored answer (with
  ``Idempotent-Replayed: true``), whether or not the client saw the first one
  (a connection lost after COMMIT included);
- the same key with another request is 409 ``idempotency_conflict``;
- a key whose first request is still running is 409 ``idempotency_in_progress``
  (``Retry-After``: the seconds until its lease ends, at least 1).

A request that holds its key across several transactions (server drafting:
plan, draft, decide) leases it (:meth:`Idempotency.claim` with ``lease``) and
renews the lease while it runs (:mod:`service.leases`). If it fails, it
releases the key at once (:func:`release`), so a retry runs again; if its
process dies, the lease runs out and a retry with the key, on any replica,
takes the claim over and runs again. The request's ``holder`` token makes sure
a request whose claim was taken over never completes or releases it.

Whether or not a key is sent, the answer is serialised before the commit, so a
request never commits and then fails to answer.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import secrets
from typing import Annotated, Any

from fastapi import Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import delete, update
from sqlalchemy.orm import Session

from memtrial.trust.log import canonical_json
from service.errors import ApiError
from service.models import IdempotencyRecord, utcnow
from service.store import as_utc

__all__ = ["Idempotency", "IdempotencyKey", "release", "renew", "serialised"]


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
        self.holder = secrets.token_hex(16)
        self._expired: IdempotencyRecord | None = None
        request.state.idempotency = self  # what the error handlers read after a write collision

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
            if found.holder == self.holder:  # this request's own claim, in a later transaction
                self.record = found
                return None
            now = utcnow()
            if found.lease_until is None or as_utc(found.lease_until) <= now:
                self._expired = found  # its request is gone (a claim without a lease predates leases)
                return None
            raise ApiError(
                409,
                "idempotency_in_progress",
                f"the first request with Idempotency-Key {self.key!r} has not finished; retry later",
                "Idempotency-Key",
                retry_after=max(1, math.ceil((as_utc(found.lease_until) - now).total_seconds())),
            )
        return JSONResponse(
            json.loads(found.response), status_code=found.status_code, headers={"Idempotent-Replayed": "true"}
        )

    def claim(self, session: Session, agent_id: str | None, lease: float | None = None) -> None:
        """Record the key as in progress, in the request's transaction; with ``lease`` (seconds) the
        claim outlives the transaction and ends then unless renewed (an expired claim is taken over)."""
        if self.key is None or self.record is not None:
            return
        if self._expired is not None:
            session.delete(self._expired)
            session.flush()
            self._expired = None
        self.record = IdempotencyRecord(
            tenant_id=self.tenant_id,
            key=self.key,
            method=self.method,
            path=self.path[:300],
            request_hash=self.request_hash,
            agent_id=agent_id,
            created_at=utcnow(),
            lease_until=None if lease is None else utcnow() + dt.timedelta(seconds=lease),
            holder=self.holder,
        )
        session.add(self.record)

    def complete(self, status_code: int, answer: BaseModel | dict[str, Any]) -> None:
        """Serialise the answer (before commit) and store it with the key."""
        text = serialised(answer)
        if self.record is not None:
            self.record.status_code, self.record.response = status_code, text


def renew(session: Session, guard: Idempotency, lease: float) -> bool:
    """Extend the guard's leased claim by ``lease`` seconds from now; False when it is no longer its own."""
    if guard.key is None:
        return True
    result = session.execute(
        update(IdempotencyRecord).where(*_held(guard)).values(lease_until=utcnow() + dt.timedelta(seconds=lease))
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def release(session: Session, guard: Idempotency) -> None:
    """Drop the guard's unfinished claim (its request failed), so a retry with the key runs again."""
    if guard.key is not None:
        session.execute(delete(IdempotencyRecord).where(*_held(guard)))


def _held(guard: Idempotency) -> tuple[Any, ...]:
    """The guard's own claim, still unanswered."""
    return (
        IdempotencyRecord.tenant_id == guard.tenant_id,
        IdempotencyRecord.key == guard.key,
        IdempotencyRecord.holder == guard.holder,
        IdempotencyRecord.status_code.is_(None),
    )
