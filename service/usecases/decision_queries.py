"""Reading decisions: one decision as far as it has got, and the agent's decisions a page at a time."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select

from service.db import transaction
from service.deps import Services
from service.errors import ApiError
from service.models import Decision
from service.pagination import decode_cursor, encode_cursor
from service.schemas import (
    DecisionList,
    DecisionRecord,
    DecisionSummary,
    PlanPublic,
    SettlementPublic,
)
from service.store import as_utc, load_agent, owned_row


def list_page(
    services: Services,
    tenant_id: str,
    agent_id: str,
    limit: int,
    cursor: str | None,
    status: str | None,
    maturity_before: dt.datetime | None,
) -> DecisionList:
    """The agent's decisions, oldest first, a page at a time."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        query = select(Decision).where(Decision.agent_id == agent.id)
        if status is not None:
            query = query.where(Decision.status == status)
        if maturity_before is not None:
            if maturity_before.tzinfo is None:
                raise ApiError(
                    422, "invalid", "maturity_before: give a timezone (e.g. 2024-01-31T21:00:00Z)", "maturity_before"
                )
            try:
                bound = maturity_before.astimezone(dt.UTC)
            except OverflowError:
                raise ApiError(
                    422, "invalid", "maturity_before: outside the supported range", "maturity_before"
                ) from None
            query = query.where(Decision.maturity < bound)
        scope = (agent.id, status, None if maturity_before is None else maturity_before.isoformat())
        if cursor is not None:
            query = query.where(Decision.seq > decode_cursor(cursor, "decisions", int, scope))
        rows = session.scalars(query.order_by(Decision.seq).limit(limit + 1)).all()
        items = [
            DecisionSummary(
                decision_id=row.id,
                status=row.status,
                decision_time=as_utc(row.decision_time),
                maturity=as_utc(row.maturity),
                action=None if row.decision is None else row.decision.get("action"),
                chosen_utility=None if row.settlement is None else row.settlement.get("chosen_utility"),
                corrections=0 if row.settlement is None else len(row.settlement.get("corrections") or ()),
                created_at=as_utc(row.created_at),
                failure=row.failure,
            )
            for row in rows[:limit]
        ]
        more = len(rows) > limit
        return DecisionList(
            items=items,
            next_cursor=encode_cursor("decisions", rows[limit - 1].seq, scope) if more else None,
            limit=limit,
        )


def record(services: Services, tenant_id: str, agent_id: str, decision_id: str) -> DecisionRecord:
    """A decision as far as it has got: its plan, its decision, its settlement."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        row = owned_row(session, Decision, agent, decision_id, "decision")
        return DecisionRecord(
            decision_id=row.id,
            status=row.status,
            failure=row.failure,
            plan=None if row.plan is None else PlanPublic(**row.plan),
            context_text=(row.request or {}).get("context_text"),
            decision=row.decision,
            settlement=None if row.settlement is None else SettlementPublic(**row.settlement),
        )
