"""Curation use cases (method 4.12-4.14): rank a client's candidates, release a quarantined experience,
and read the evidence each quarantine was logged with.

A rank writes nothing; a release is a ``release`` entry of the agent's hash-chained log with the
evidence at that moment and the reason, and the experience is retrieved again from the next plan.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from memtrial.errors import ConfigError, InputError
from memtrial.trust.log import LogKind
from service.db import transaction
from service.deps import Services
from service.errors import ApiError
from service.idempotency import Idempotency
from service.models import Agent, Experience, LogRow
from service.schemas import ExperiencePublic, QuarantinePublic, RankedPublic, RankRequest, RankResult
from service.store import load_agent, owned_row, return_engine, save_engine
from service.usecases.unit import agent_write
from service.views import experience_public, shown

__all__ = ["candidate_rows", "quarantine_evidence", "rank", "release"]


def quarantine_evidence(session: Session, agent_id: str, ids: Iterable[str]) -> dict[str, QuarantinePublic]:
    """The evidence of the latest ``quarantine`` log entry of each of ``ids`` that has one."""
    wanted = set(ids)
    if not wanted:
        return {}
    rows = session.execute(
        select(LogRow.index.label("position"), LogRow.payload)
        .where(LogRow.agent_id == agent_id, LogRow.kind == LogKind.QUARANTINE.value)
        .order_by(LogRow.index)
    ).all()
    found: dict[str, QuarantinePublic] = {}
    for row in rows:
        payload = json.loads(row.payload)
        if payload.get("experience_id") in wanted:
            fields = {name: payload.get(name) for name in QuarantinePublic.model_fields if name != "log_index"}
            found[payload["experience_id"]] = QuarantinePublic(**fields, log_index=row.position)
    return found


def candidate_rows(
    session: Session, agent: Agent, ids: Sequence[str] | None, external_ids: Sequence[str] | None, prefix: str
) -> list[tuple[str, str | None]]:
    """(id, external id) of each candidate, in the given order: each an active experience of this agent,
    or a 422 naming ``{prefix}_ids`` / ``{prefix}_external_ids`` and the ids that are not."""
    by_external = external_ids is not None
    wanted = list((external_ids if by_external else ids) or [])
    field = f"{prefix}_external_ids" if by_external else f"{prefix}_ids"
    key = Experience.external_id if by_external else Experience.id
    rows = session.execute(
        select(key, Experience.id, Experience.external_id, Experience.active).where(
            Experience.agent_id == agent.id, key.in_(wanted)
        )
    ).all()
    found = {row[0]: row for row in rows}
    unknown = [name for name in wanted if name not in found]
    if unknown:
        what = "external ids" if by_external else "ids"
        raise ApiError(
            422, "invalid", f"{field}: no experience of this agent has the {what} {unknown} (add them first)", field
        )
    retired = [name for name in wanted if not found[name].active]
    if retired:
        raise ApiError(422, "invalid", f"{field}: {retired} are retired experiences and cannot be retrieved", field)
    return [(found[name].id, found[name].external_id) for name in wanted]


def rank(services: Services, tenant_id: str, agent_id: str, body: RankRequest) -> RankResult:
    """The k of the client's candidates to use, best first, by the agent's retrieval mode (method 4.12);
    quarantined candidates are never picked. Nothing is written."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        candidates = candidate_rows(session, agent, body.candidate_ids, body.candidate_external_ids, "candidate")
        engine = services.engines.checkout(session, agent)
        picks = engine.rank([i for i, _ in candidates], body.k, body.similarities)
        return_engine(session, agent, engine, services.engines)
    external = dict(candidates)
    items = [
        RankedPublic(
            id=str(p.experience_id),
            external_id=external[str(p.experience_id)],
            reason=p.reason.value,
            similarity=shown(p.similarity),
            value=shown(p.mean),
            interval=None if p.lower is None or p.upper is None else [shown(p.lower), shown(p.upper)],
            n=p.n,
            score=shown(p.score),
        )
        for p in picks
    ]
    return RankResult(items=items)


def release(
    services: Services, tenant_id: str, agent_id: str, experience_id: str, reason: str, guard: Idempotency
) -> ExperiencePublic:
    """Release a quarantined experience by hand (a ``release`` log entry with the evidence and the reason);
    409 ``not_quarantined`` for one that is not (a retired one included: its status is retired, whatever its
    evidence), and nothing is written. A retry with the first request's key gets its answer."""
    with agent_write(services, tenant_id, agent_id, guard) as (session, agent):
        row = owned_row(session, Experience, agent, experience_id, "experience")
        engine = services.engines.checkout(session, agent)
        try:
            engine.release(row.id, reason)  # the core refuses one not in quarantine, or retired
        except (InputError, ConfigError) as error:
            if error.field not in ("experience_id", "quarantine"):
                raise
            why = error.message if error.field == "experience_id" else f"experience {row.id!r} is not quarantined"
            message = f"{why} (only a quarantined experience can be released)"
            raise ApiError(409, "not_quarantined", message, "experience_id") from None
        save_engine(session, agent, engine, services.engines)
        answer = experience_public(row, engine)  # active again: no quarantine evidence
        guard.complete(200, answer)
        return answer
