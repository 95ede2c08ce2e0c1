"""The service's modes: request fields typed by the core's enums, listed in place in the OpenAPI document."""

import pytest
from pydantic import ValidationError

from memtrial.action import ActionRule
from memtrial.action.fallback import FallbackVariant
from memtrial.credit.design import DesignKind
from memtrial.drafting.answers import AnswerKind
from memtrial.engine.config import ReferenceSource
from memtrial.outcomes.scoring import Rule
from memtrial.records import DecisionKind
from memtrial.trust import GateTest
from memtrial.values import CreditBasis, LearnerMode
from service.app import create_app
from service.modes import DecisionStatus
from service.schemas import AnswerSettings, GateSettings, SettleRequest
from service.settings import Settings

#: (schema, property) -> the core enum whose values it lists
FIELDS = {
    ("GateSettings", "test"): GateTest,
    ("AnswerSettings", "type"): AnswerKind,
    ("AgentCreate", "kind"): DecisionKind,
    ("AgentCreate", "design"): DesignKind,
    ("AgentCreate", "learner"): LearnerMode,
    ("AgentCreate", "fallback"): FallbackVariant,
    ("AgentCreate", "action"): ActionRule,
    ("AgentCreate", "credit"): CreditBasis,
    ("AgentCreate", "reference"): ReferenceSource,
    ("DecisionSummary", "status"): DecisionStatus,
}


def test_a_mode_field_holds_the_member_of_its_core_enum():
    assert GateSettings(test="anytime").test is GateTest.ANYTIME
    assert AnswerSettings(type="number").type is AnswerKind.NUMBER
    assert SettleRequest(rule="brier", outcome="up").rule is Rule.BRIER


def test_a_mode_field_rejects_an_unknown_value_listing_the_values():
    with pytest.raises(ValidationError, match="Input should be 'prequential', 'anytime' or 'none'"):
        GateSettings(test="bayes")


@pytest.fixture(scope="module")
def openapi(tmp_path_factory):
    database = tmp_path_factory.mktemp("openapi") / "memtrial.db"
    return create_app(Settings(database_url=f"sqlite:///{database}")).openapi()


@pytest.mark.parametrize(("field", "enum"), FIELDS.items(), ids=[f"{schema}.{name}" for schema, name in FIELDS])
def test_openapi_lists_a_mode_fields_values_in_place(openapi, field, enum):
    schema, name = field
    listed = openapi["components"]["schemas"][schema]["properties"][name]
    assert sorted(listed["enum"]) == sorted(member.value for member in enum) and listed["type"] == "string"
    assert len(listed["enum"]) == len(enum)


def test_openapi_lists_the_learners_default_first_as_it_always_has(openapi):
    assert openapi["components"]["schemas"]["AgentCreate"]["properties"]["learner"]["enum"] == [
        "auto",
        "identity",
        "content",
    ]


def test_an_order_that_is_not_the_enums_values_is_refused_naming_them():
    from service.modes import listed_in_order

    with pytest.raises(
        ValueError, match="order must list each value of LearnerMode once, got \\('auto', 'identity'\\)"
    ):
        listed_in_order(LearnerMode, "auto", "identity")


def test_openapi_has_no_component_for_a_mode_enum(openapi):
    components = set(openapi["components"]["schemas"])
    assert components.isdisjoint({enum.__name__ for enum in FIELDS.values()} | {"Rule"})


def test_decisions_filter_by_status_lists_the_four_states(openapi):
    parameters = openapi["paths"]["/v1/agents/{agent_id}/decisions"]["get"]["parameters"]
    status = next(p for p in parameters if p["name"] == "status")
    assert status["schema"]["anyOf"][0]["enum"] == ["planned", "decided", "settled", "failed"]
