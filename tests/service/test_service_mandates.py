"""Service: every weight a portfolio agent plays keeps its investor's mandate."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import ASSETS, MONTHLY_LESSONS, UNIVERSE, plan_month

from memtrial.outcomes.mandates import INVESTORS, mandate_violation
from service.client import ServiceError


def _risky():
    return np.array([a["asset_class"] in ("equities", "real_estate", "crypto", "stocks") for a in UNIVERSE])


def _defensive():
    return np.array([a["asset_class"] in ("bonds", "cash") for a in UNIVERSE])


def test_a_reference_outside_the_mandate_is_refused_naming_the_field_and_the_bound(client, agent):
    client.add_experiences(agent["id"], [{"text": t} for t in MONTHLY_LESSONS[:4]])
    with pytest.raises(ServiceError) as error:
        plan_month(client, agent["id"], 0, reference_weights={"SPY": 1.0, "TLT": 0.0, "GLD": 0.0, "BIL": 0.0})
    assert (error.value.status, error.value.field) == (422, "reference_weights")
    assert "at most 0.65" in error.value.message
    assert client.list_decisions(agent["id"])["items"] == []  # nothing was planned


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    reference=st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4).filter(lambda w: sum(w) > 0.05),
    spread=st.floats(0.0, 1.0),
)
def test_every_played_weight_keeps_the_mandate_whatever_the_reference(client, agent, reference, spread):
    """A property over random references and drafts: the reference is refused or every played weight is in the mandate."""
    if not client.list_experiences(agent["id"])["items"]:
        client.add_experiences(agent["id"], [{"text": t} for t in MONTHLY_LESSONS[:4]])
    weights = dict(zip(ASSETS, (w / sum(reference) for w in reference), strict=True))
    existing = client.list_decisions(agent["id"], limit=200)["items"]
    try:
        plan = plan_month(client, agent["id"], len(existing), reference_weights=weights)
    except ServiceError as error:
        assert (error.status, error.field) == (422, "reference_weights")
        vector = np.array([weights[a] for a in ASSETS])
        assert mandate_violation(vector, _risky(), _defensive(), INVESTORS["balanced"]) is not None
        return
    rng = np.random.default_rng(int(spread * 1e6))
    drafts = [dict(zip(ASSETS, rng.dirichlet(np.full(4, 0.3 + spread)).tolist(), strict=True)) for _ in plan["subsets"]]
    decision = client.submit_drafts(agent["id"], plan["decision_id"], drafts)
    played = np.array([decision["weights"][a] for a in ASSETS])
    assert mandate_violation(played, _risky(), _defensive(), INVESTORS["balanced"], tolerance=1e-9) is None
