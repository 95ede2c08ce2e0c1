"""Trust and values: gate state, statistic history, the prediction log and its verification."""

from __future__ import annotations

import numpy as np
from fastapi import APIRouter

from memtrial.trust import GateTest, anytime_log_wealth, prequential_p_values
from service.db import transaction
from service.deps import ServicesDep, TenantDep
from service.schemas import GatePublic, ScorePublic, TrustPublic, ValuesPublic, VerifyPublic
from service.store import load_agent, return_engine
from service.routes.refit import latest_posterior
from service.views import trust_public, value_public

router = APIRouter(prefix="/v1/agents/{agent_id}", tags=["trust"])


@router.get("/trust")
def get_trust(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> TrustPublic:
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        engine = services.engines.checkout(session, agent)
        gate = engine.gate
        scores = list(gate.scores)
        statistics: list[float | None] = [None] * len(scores)
        if scores and gate.config.test is GateTest.PREQUENTIAL:
            statistics = [None if not np.isfinite(p) else float(p) for p in prequential_p_values(scores)]
        elif scores and gate.config.test is GateTest.ANYTIME:
            statistics = [float(np.exp(w)) for w in anytime_log_wealth(scores, gate.config.bets)]
        public = TrustPublic(
            gate=GatePublic(**gate.config.to_dict()),
            gate_hash=engine.gate_hash,
            state=trust_public(gate.decision()),
            scores=[ScorePublic(decision_id=str(d), score=s, statistic=t) for d, s, t in zip(gate.score_dates, scores, statistics, strict=True)],
            log=gate.log.to_list(),
        )
        return_engine(session, agent, engine, services.engines)
        return public


@router.get("/trust/verify")
def verify_trust(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> VerifyPublic:
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        engine = services.engines.checkout(session, agent)
        check = engine.gate.log.verify()
        return_engine(session, agent, engine, services.engines)
        return VerifyPublic(ok=check.ok, n_entries=check.n_entries, first_invalid=check.first_invalid, reason=check.reason)


@router.get("/values")
def get_values(agent_id: str, tenant_id: TenantDep, services: ServicesDep) -> ValuesPublic:
    with transaction(services.sessions) as session:
        agent = load_agent(session, tenant_id, agent_id, lock=False)
        engine = services.engines.checkout(session, agent)
        values = {str(e): value_public(engine, str(e)) for e in engine.experiences}
        for experience_id, interval in latest_posterior(session, agent.id).items():
            if experience_id in values:
                values[experience_id] = values[experience_id].model_copy(
                    update={"lower": interval["lower"], "upper": interval["upper"], "p_positive": interval["p_positive"]}
                )
        mode = engine.learner.selected_mode.value
        return_engine(session, agent, engine, services.engines)
        return ValuesPublic(learner_mode=mode, values=values)
