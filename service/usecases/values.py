"""The values use case: what each experience is worth, readable (texts, external ids, intervals)."""

from __future__ import annotations

from sqlalchemy import select

from memtrial.outcomes.display import experience_label
from service.db import transaction
from service.deps import Services
from service.models import Experience
from service.schemas import ValueEntryPublic, ValuesPublic
from service.store import load_agent, return_engine
from service.usecases.refit import latest_posterior
from service.views import experience_status, value_public

__all__ = ["read"]


def read(services: Services, tenant_id: str, agent_id: str) -> ValuesPublic:
    """Every valued experience, best first: the empirical-Bayes value and interval, or the interval of the
    newest full-Bayes refit while it fits the agent's data as they are (:func:`latest_posterior`), with the experience's text, external id and state, its
    status (active, quarantined, retired) and where a change of sign was detected (``changed_at``; from
    there on the value, its interval and ``n`` are those learnt since the change, as retrieval reads them)."""
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        engine = services.engines.checkout(session, agent)
        values = {str(e): value_public(engine, str(e)) for e in engine.experiences}
        changed = {e: engine.changed_at(e) for e in values}
        for experience_id, interval in latest_posterior(session, agent.id, values).items():
            # a refit pools an experience's whole history: after a detected change its value is the one
            # learnt since the change (method 4.14), whose interval is the empirical one
            if experience_id in values and changed[experience_id] is None:
                values[experience_id] = values[experience_id].model_copy(
                    update={
                        "lower": interval["lower"],
                        "upper": interval["upper"],
                        "p_positive": interval["p_positive"],
                        "interval": "full_bayes",
                    }
                )
        rows = {
            row.id: row
            for row in session.execute(
                select(Experience.id, Experience.text, Experience.external_id, Experience.active).where(
                    Experience.agent_id == agent.id
                )
            )
        }
        mode = engine.learner.selected_mode.value
        # the engine values the agent's experiences, every one a row (deleting one forgets both); one deleted
        # between the engine's read and the rows' (no lock is taken for a read) is left out with its value
        values = {e: value for e, value in values.items() if e in rows}
        status = {e: experience_status(rows[e].active, e, engine).value for e in values}
        return_engine(session, agent, engine, services.engines)
    entries = {
        e: ValueEntryPublic(
            **value.model_dump(),
            text=rows[e].text,
            external_id=rows[e].external_id,
            active=rows[e].active,
            status=status[e],
            changed_at=changed[e],
            label=experience_label(rows[e].text, e, rows[e].external_id),
        )
        for e, value in sorted(values.items(), key=lambda item: -item[1].mean)
    }
    return ValuesPublic(learner_mode=mode, values=entries)
