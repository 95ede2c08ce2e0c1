"""What people read: the unit's number format and experiences named by their text."""

from memtrial.outcomes.display import (
    UTILITY_UNIT,
    describe_contributions,
    experience_label,
    format_utility,
    name_experiences,
)

LONG = "Release dates slip when the design review is skipped at the start of a quarter."
ID_A, ID_B = "0" * 31 + "a", "0" * 31 + "b"


def test_format_utility_keeps_five_decimals_and_never_shows_minus_zero():
    assert format_utility(0.25) == "0.25000"
    assert format_utility(-0.0123456) == "-0.01235"
    assert format_utility(-0.000001) == "0.00000"


def test_experience_label_shortens_the_text_and_falls_back_to_the_external_id():
    assert experience_label("Small  teams\nship on time.", ID_A) == '"Small teams ship on time."'
    assert experience_label(LONG, ID_A) == '"Release dates slip when the design revi…"'
    assert len(experience_label(LONG, ID_A)) == 40 + 2  # 39 characters, the ellipsis, the quotes
    assert experience_label(None, ID_A, "mem-7") == "mem-7"
    assert experience_label(None, ID_A) == ID_A


def test_name_experiences_replaces_quoted_ids_and_leaves_other_text():
    explanation = f"largest share 100% on subset {[ID_A, ID_B]}, predicted gain 0.01"
    named = name_experiences(explanation, {ID_A: '"bonds"', ID_B: '"gold"'})
    assert named == 'largest share 100% on subset ["bonds", "gold"], predicted gain 0.01'


def test_describe_contributions_ranks_by_contribution_and_names_the_unit():
    line = describe_contributions({ID_A: -0.5, ID_B: 0.125}, {ID_A: '"bonds"', ID_B: '"gold"'})
    assert line == f'contributions in {UTILITY_UNIT}, largest first: "gold" 0.12500; "bonds" -0.50000'
    assert describe_contributions({}, {}) == f"no experience was credited (contributions in {UTILITY_UNIT})"
