"""Draft budgets (method 4.11): calls within the budget, trials learn as without one, exploiting decisions learn
nothing, the state and corrections keep them, and the null guarantee holds at every budget."""

import json

import numpy as np
import pytest

from memtrial import EngineConfig, MemTrial
from memtrial.curation import QuarantineConfig
from memtrial.errors import ConfigError, InputError
from memtrial.trust.gate import GateConfig

ALPHA = 0.05
LESSONS = "abcdef"


def engine_of(budget=None, reference="given", action="dial", bets=None, **settings):
    """An engine at ``budget`` on these tests' worlds, which retrieve by themselves (no value-aware ranking,
    no quarantine to leave an experience out: the budget's rules are the same with both)."""
    gate = GateConfig(test="anytime", alpha=ALPHA, **({} if bets is None else {"bets": bets}))
    settings = {"retrieval": "similarity", "quarantine": QuarantineConfig(), **settings}
    config = EngineConfig(
        investor="balanced",
        action=action,
        credit="raw",
        gate=gate,
        draft_budget=budget,
        reference=reference,
        **{"design": "half", "fallback": "ftrl", **settings},  # the even half these plans are written for
    )
    engine = MemTrial(config)
    for lesson in LESSONS:
        engine.add_experience(lesson)
    return engine


def world(seed, n_dates, useful="a", tilt=0.4):
    """Per date: the retrieved four, a draft for every mask of them, the outcome. Drafts with ``useful`` lean
    toward the asset that rises (tilt 0: a null world, memory changes nothing)."""
    rng = np.random.default_rng(seed)
    dates = []
    for _ in range(n_dates):
        ids = [str(x) for x in rng.choice(list(LESSONS), 4, replace=False)]
        drafts = rng.dirichlet(np.full(3, 5.0), size=16)
        for mask in range(16):
            if any(mask >> j & 1 and ids[j] == useful for j in range(4)):
                drafts[mask] = (1 - tilt) * drafts[mask] + tilt * np.array([1.0, 0.0, 0.0])
        rel = np.cumprod(1.0 + rng.normal([0.004, 0.0, 0.0], 0.01, size=(20, 3)), axis=0)
        dates.append((ids, drafts, rel))
    return dates


def walk(engine, dates, start=0):
    """Plan, decide (drafting only what each plan asks for) and settle every date; returns the plans, decisions
    and settlements."""
    out = []
    for t, (ids, drafts, rel) in enumerate(dates, start=start):
        plan = engine.plan(f"d{t}", time=20 * t, maturity=20 * t + 20, retrieved=ids, n_assets=3)
        decision = engine.decide(f"d{t}", drafts[list(plan.masks)])
        out.append((plan, decision, engine.settle(f"d{t}", rel)))
    return out


@pytest.mark.parametrize("budget", [1.0, 1.5, 2.0, 3.0, 4.0, 7.5])
def test_calls_never_exceed_the_budget_after_any_number_of_decisions(budget):
    engine = engine_of(budget)
    calls = np.cumsum([plan.draft_calls for plan, _, _ in walk(engine, world(1, 60))])
    assert np.all(calls <= budget * np.arange(1, 61) + 1e-9)
    assert calls[-1] >= budget * 60 - 8  # it spends what it may (at most one design's worth left over)
    assert engine.credit.calls == calls[-1]


def test_every_plan_states_the_drafts_to_make_and_the_decision_records_the_calls():
    engine = engine_of(3.0)
    steps = walk(engine, world(2, 40))
    trials = [p for p, _, _ in steps if p.trial]
    exploits = [p for p, _, _ in steps if not p.trial]
    assert trials and exploits
    assert all(p.masks == (0, 3, 5, 6, 9, 10, 12, 15) for p in trials)
    assert all(len(p.masks) == 1 for p in exploits)
    for plan, decision, settlement in steps:
        assert decision.draft_calls == plan.draft_calls == len(decision.to_dict()["drafts"])
        assert len(plan.subsets) == len(plan.masks) == settlement.draft_utilities.size
    predictions = [e for e in engine.history.log_entries() if e.kind == "prediction"]
    assert len(predictions) == len(trials)  # only trials register a prediction to be scored
    assert all(e.payload["details"]["draft_calls"] == 8 for e in predictions)
    others = [e for e in engine.history.log_entries() if e.kind == "exploit"]
    assert len(others) == len(exploits) and all(e.payload["draft_calls"] == 1 for e in others)
    logged = sum(e.payload["details"]["draft_calls"] for e in predictions) + sum(
        e.payload["draft_calls"] for e in others
    )
    assert logged == engine.credit.calls == sum(p.draft_calls for p, _, _ in steps)
    assert engine.verify().ok


def test_exploiting_decisions_learn_nothing_and_trials_learn_as_without_a_budget():
    """A budgeted engine's values after its trials equal an unbudgeted engine's that saw only those dates."""
    dates = world(3, 50)
    budgeted = engine_of(3.0)
    steps = walk(budgeted, dates)
    assert all(not s.contributions and s.score is None for p, _, s in steps if not p.trial)
    trial_dates = [d for d, (p, _, _) in zip(dates, steps, strict=True) if p.trial]
    whole = engine_of(None)
    for t, (ids, drafts, rel) in enumerate(dates):
        if steps[t][0].trial:
            plan = whole.plan(f"d{t}", time=20 * t, maturity=20 * t + 20, retrieved=ids, n_assets=3)
            whole.decide(f"d{t}", drafts[list(plan.masks)])
            whole.settle(f"d{t}", rel)
    assert len(trial_dates) == sum(p.trial for p, _, _ in steps)
    assert budgeted.values() == pytest.approx(whole.values(), abs=1e-12)
    assert budgeted.gate.statistics.to_dict() == whole.gate.statistics.to_dict()


def test_a_budget_of_the_whole_design_is_the_method_without_a_budget():
    dates = world(4, 30)
    with_budget = walk(engine_of(8.0), dates)
    without = walk(engine_of(None), dates)
    for (p1, d1, s1), (p2, d2, s2) in zip(with_budget, without, strict=True):
        assert p1.masks == p2.masks and p1.trial
        assert np.array_equal(d1.weights, d2.weights)
        assert s1.contributions == s2.contributions


def test_an_exploiting_decision_blends_memory_with_a_given_reference_by_its_trust():
    engine = engine_of(2.0)
    steps = walk(engine, world(5, 150, tilt=0.6))
    late = [(p, d) for p, d, _ in steps[75:] if not p.trial]
    on_memory = [(p, d) for p, d in late if p.masks != (0,)]
    assert on_memory, "a strong memory must be acted on between trials"
    assert all(len(p.masks) == 1 and p.memory_share == p.dial.trust_weight for p, _ in on_memory)
    assert any(0.0 < p.memory_share < 1.0 for p, _ in on_memory), "the check needs decisions at partial trust"
    for plan, decision in late:  # omega on memory's one draft, the rest on the reference; else the mixture
        if plan.masks != (0,):
            w = plan.memory_share
            expected = decision.drafts[0] if w >= 1.0 else w * decision.drafts[0] + (1 - w) * plan.reference
        else:
            expected = plan.q * plan.reference + (1 - plan.q) * decision.drafts[0]
        np.testing.assert_allclose(decision.weights, expected, rtol=0, atol=1e-15)
    positive = [p for p, _ in late if p.dial.trust_weight > 0 and max(p.dial.gains) > 0]
    assert len(on_memory) == len(positive)  # every decision memory has something for is played on it


def test_with_the_memory_free_reference_an_exploiting_decision_drafts_the_pair_it_blends():
    engine = engine_of(3.0, reference="memory_free")
    steps = walk(engine, world(5, 150, tilt=0.6))
    pairs = [(p, d) for p, d, _ in steps if not p.trial and len(p.masks) == 2]
    assert pairs, "partial trust with credit to spare must draft the memory-free draft beside memory's"
    for plan, decision in pairs:
        assert plan.masks[0] == 0 and plan.masks[1] != 0 and 0.0 < plan.memory_share < 1.0
        assert plan.memory_share == plan.dial.trust_weight and decision.draft_calls == 2
        w = plan.memory_share
        np.testing.assert_allclose(
            decision.weights, w * decision.drafts[1] + (1 - w) * decision.drafts[0], rtol=0, atol=1e-15
        )
    calls = np.cumsum([p.draft_calls for p, _, _ in steps])
    assert np.all(calls <= 3.0 * np.arange(1, len(steps) + 1) + 1e-9)


def test_memory_alone_waits_for_half_trust_when_the_blend_has_no_second_call():
    from memtrial.action.budget import SOLO_TRUST, DraftCredit, exploit_plan

    for trusted in (0.2, 0.49):  # below half trust: never memory alone, however many decisions
        credit = DraftCredit()
        plans = [exploit_plan(credit, 5, trusted, 1.0, None, pairs=True, blends=False) for _ in range(50)]
        assert all(masks == [0] and share == 0.0 for masks, share in plans)
    credit = DraftCredit()
    plans = [exploit_plan(credit, 5, 0.6, 1.0, None, pairs=True, blends=False) for _ in range(50)]
    assert {tuple(m) for m, _ in plans} == {(0,), (5,)} and SOLO_TRUST <= 0.6
    assert sum(m == [5] for m, _ in plans) == pytest.approx(0.6 * 50, abs=1.0)
    credit = DraftCredit(credit=2.0)  # a second call to spend: the pair, whatever the trust
    assert exploit_plan(credit, 5, 0.2, 1.0, None, pairs=True, blends=False) == ([0, 5], 0.2)


@pytest.mark.parametrize("budget", [1.5, 2.0, 3.0, 4.0])
@pytest.mark.parametrize("reference", ["given", "memory_free"])
def test_a_horizon_spends_its_trials_first_and_stays_within_the_budget_over_it(budget, reference):
    horizon, n = 60, 75  # fifteen decisions past the horizon
    engine = engine_of(budget, reference=reference, draft_horizon=horizon)
    steps = walk(engine, world(11, n, tilt=0.0))
    calls = np.array([p.draft_calls for p, _, _ in steps])
    spent = np.cumsum(calls)
    within = np.arange(1, horizon + 1)
    assert np.all(calls >= 1)
    assert np.all(spent[:horizon] <= budget * within + (budget - 1.0) * (horizon - within) + 1e-9)
    assert spent[horizon - 1] <= budget * horizon + 1e-9
    assert spent[-1] <= budget * n + 1e-9
    trials = [t for t, (p, _, _) in enumerate(steps) if p.trial]
    within = [t for t in trials if t < horizon]
    first = [t for t in within if t < len(within) and within[: t + 1] == list(range(t + 1))]
    assert first and first == list(range(len(first))), "within the horizon the trials start it"
    from memtrial.action.budget import RESERVE

    if RESERVE * (budget - 1.0) * horizon >= 9:  # the held-back share buys a trial: trials recur later on
        assert len(within) > len(first) and within[-1] >= horizon // 2, "the held-back share buys trials later on"
    if reference == "given":  # every exploiting plan one call: the surplus buys (B - 1) H / 7 trials of 8
        assert len(within) >= int((budget - 1.0) * horizon // 8) - 1
    running = walk(engine_of(budget, reference=reference), world(11, n, tilt=0.0))
    assert len(first) >= sum(p.trial for p, _, _ in running[: len(first)])  # at least as early as without one


@pytest.mark.parametrize("horizon", [0, -3, 2.5, True, "60"])
def test_a_horizon_must_be_a_number_of_decisions(horizon):
    with pytest.raises(ConfigError) as error:
        EngineConfig(investor="balanced", draft_budget=3.0, draft_horizon=horizon)
    assert error.value.field == "draft_horizon"


def test_a_horizon_needs_a_budget_and_survives_the_state():
    with pytest.raises(ConfigError) as error:
        EngineConfig(investor="balanced", draft_horizon=60)
    assert error.value.field == "draft_horizon" and "draft_budget" in str(error.value)
    engine = engine_of(3.0, draft_horizon=40)
    walk(engine, world(12, 10))
    restored = MemTrial.from_json(engine.to_json())
    assert restored.config.draft_horizon == 40 and restored.credit == engine.credit
    assert [p.masks for p, _, _ in walk(engine, world(13, 10), start=10)] == [
        p.masks for p, _, _ in walk(restored, world(13, 10), start=10)
    ]


def test_the_memory_free_reference_costs_no_call_and_anchors_every_decision():
    engine = engine_of(None, reference="memory_free")
    with pytest.raises(InputError) as error:
        engine.plan("x", time=0, maturity=20, retrieved=list("abcd"), reference=[0.2, 0.3, 0.5])
    assert error.value.field == "reference"
    steps = walk(engine, world(6, 20))
    for plan, decision, settlement in steps:
        assert decision.reference_index == plan.masks.index(0)
        assert settlement.reference_utility == settlement.draft_utilities[plan.masks.index(0)]


def test_the_budget_and_its_credit_survive_the_state_and_a_correction():
    dates = world(7, 30)
    engine = engine_of(3.0)
    walk(engine, dates[:20])
    restored = MemTrial.from_json(engine.to_json())
    assert restored.config.draft_budget == 3.0 and restored.credit == engine.credit
    a, b = walk(engine, dates[20:], start=20), walk(restored, dates[20:], start=20)
    assert [p.masks for p, _, _ in a] == [p.masks for p, _, _ in b]
    assert json.loads(engine.to_json()) == json.loads(restored.to_json())
    exploit = next(p for p, _, _ in a if not p.trial)
    before = engine.values()
    engine.correct(exploit.decision_id, rel_prices=dates[int(exploit.decision_id[1:])][2] * 1.01, reason="feed")
    assert engine.values() == before  # an exploiting decision taught nothing, so correcting it changes nothing


@pytest.mark.parametrize("budget", [0, 0.5, -1, float("nan"), float("inf"), True, "3"])
def test_a_budget_must_be_a_number_of_calls_of_at_least_one(budget):
    with pytest.raises(ConfigError) as error:
        EngineConfig(investor="balanced", draft_budget=budget)
    assert error.value.field == "draft_budget"


def test_an_engine_at_a_budget_bets_as_a_rest_agent_and_a_backtest_at_that_budget_do():
    # method 4.11: a budget's e-process bets on the wider grid, wherever the engine is made; a gate given
    # explicitly is kept, and an engine that takes a budget later keeps the bets it was made with
    from memtrial.action.budget import BUDGET_BETS, budget_gate
    from memtrial.engine.config import default_setting
    from memtrial.trust.gate import DEFAULT_BETS

    assert MemTrial(investor="balanced", draft_budget=3).config.gate.bets == BUDGET_BETS
    assert EngineConfig(investor="balanced", draft_budget=3).gate == budget_gate(default_setting("gate"), 3.0)
    assert EngineConfig(investor="balanced").gate.bets == DEFAULT_BETS
    given = GateConfig(test="anytime", bets=(0.3,))
    assert EngineConfig(investor="balanced", gate=given, draft_budget=3).gate == given
    later = MemTrial(investor="balanced")
    later.change_settings({"draft_budget": 3})
    assert later.config.draft_budget == 3 and later.config.gate.bets == DEFAULT_BETS


# Monte Carlo through the engine: 150 null worlds x 80 dates at each budget (the slow tier), as the backtests run
# a budget (its trials first over an 80-decision horizon, the wider bets, the memory-free draft as reference,
# blends at partial trust) and with an open-ended running credit. Which plans are trials, and which exploiting
# plans draft a pair, is decided at plan time, so the e-process sees a predictably chosen subsequence of the
# scores; the score-level check of the bound is in test_dial.py.
@pytest.mark.slow
@pytest.mark.parametrize("budget", [2.0, 3.0, 4.0])
@pytest.mark.parametrize("as_backtested", [False, True, "saturated"])
def test_under_the_null_every_budget_keeps_p_ever_omega_at_least_x_below_alpha_to_the_x(budget, as_backtested):
    from memtrial.action.budget import BUDGET_BETS

    backtested = {"draft_horizon": 80, "bets": BUDGET_BETS}
    runs, highest = 150, []
    for seed in range(runs):
        if as_backtested == "saturated":  # PlantedMem's: seven retrieved, screened in eight runs
            engine, dates = wide_engine(budget, **backtested), wide_world(10_000 + seed, 80, tilt=0.0)
        else:
            settings = {**backtested, "reference": "memory_free", "design": "fold"} if as_backtested else {}
            engine, dates = engine_of(budget, **settings), world(10_000 + seed, 80, tilt=0.0)
        steps = walk(engine, dates)
        highest.append(max(p.dial.trust_weight for p, _, _ in steps))
    highest = np.array(highest)
    for x in (0.5, 1.0):
        rate, bound = float(np.mean(highest >= x)), ALPHA**x
        slack = 3.0 * np.sqrt(bound * (1.0 - bound) / runs)
        assert rate <= bound + slack, f"budget {budget}: P(ever omega >= {x}) = {rate} > {bound} (+ {slack:.3f})"
    assert np.mean(highest > 0) > 0.05  # the dial moves under the null: the check is not vacuous


def test_with_a_given_reference_which_plans_are_trials_depends_on_the_budget_alone():
    schedules = [
        [p.trial for p, _, _ in walk(engine_of(3.0), world(seed, 40, tilt=t))] for seed, t in ((1, 0.0), (2, 0.6))
    ]
    assert schedules[0] == schedules[1]


def test_the_odd_half_is_the_fold_over_with_i_equal_to_minus_abcd():
    from memtrial.credit.design import build_design, defining_relation, fold_over, half_fraction, odd_half

    assert odd_half(4) == build_design("fold", 4) == [1, 2, 4, 7, 8, 11, 13, 14] == fold_over(half_fraction(4), 4)
    assert defining_relation(odd_half(4), 4) == [(0, 1), (15, -1)]
    assert all(sum(m >> j & 1 for m in odd_half(4)) == 4 for j in range(4))  # each experience in four runs


def test_a_design_without_a_memory_free_run_drafts_the_reference_as_a_ninth_draft():
    dates = world(8, 20)
    anchored = walk(engine_of(None, reference="memory_free", design="fold"), dates)
    given = walk(engine_of(None, design="fold"), dates)
    for (plan, decision, settlement), (other, _, settled) in zip(anchored, given, strict=True):
        assert plan.masks == (1, 2, 4, 7, 8, 11, 13, 14, 0) and plan.extra_reference and plan.draft_calls == 9
        assert other.masks == plan.masks[:8] and not other.extra_reference
        assert settlement.contributions == pytest.approx(settled.contributions, abs=1e-15)  # the design's runs only
        assert decision.reference_index == 8 and settlement.reference_utility == settlement.draft_utilities[8]
    budgeted = walk(engine_of(4.0, reference="memory_free", design="fold"), dates)
    assert all(p.draft_calls == 9 for p, _, _ in budgeted if p.trial) and any(p.trial for p, _, _ in budgeted)
    calls = np.cumsum([p.draft_calls for p, _, _ in budgeted])
    assert np.all(calls <= 4.0 * np.arange(1, 21))


def wide_world(seed, n_dates, useful="a", tilt=0.4, k=7):
    """Like :func:`world` with ``k`` retrieved among ten lessons and a draft for every mask of them."""
    rng = np.random.default_rng(seed)
    dates = []
    for _ in range(n_dates):
        ids = [str(x) for x in rng.choice(list("abcdefghij"), k, replace=False)]
        drafts = rng.dirichlet(np.full(3, 5.0), size=1 << k)
        if useful in ids:  # every mask holding the useful lesson leans toward the first asset
            holds = (np.arange(1 << k) >> ids.index(useful)) & 1 == 1
            drafts[holds] = (1 - tilt) * drafts[holds] + tilt * np.array([1.0, 0.0, 0.0])
        rel = np.cumprod(1.0 + rng.normal([0.004, 0.0, 0.0], 0.01, size=(20, 3)), axis=0)
        dates.append((ids, drafts, rel))
    return dates


def wide_engine(budget, **settings):
    engine = engine_of(budget, reference="memory_free", design="saturated", k=7, **settings)
    for lesson in "ghij":
        engine.add_experience(lesson)
    return engine


def test_a_saturated_trial_screens_seven_experiences_in_nine_calls_and_credits_each():
    from memtrial.credit.design import saturated

    steps = walk(wide_engine(3.0, draft_horizon=40), wide_world(4, 40))
    trials = [(p, s) for p, _, s in steps if p.trial]
    assert trials and len(trials) < len(steps)
    for plan, settlement in trials:
        assert list(plan.masks) == [*saturated(7), 0] and plan.draft_calls == 9
        assert set(settlement.contributions) == set(plan.experience_ids) and len(plan.experience_ids) == 7
    assert sum(p.draft_calls for p, _, _ in steps) <= 3.0 * len(steps)
    whole = wide_engine(None)
    walk(whole, wide_world(4, 40))
    values = whole.values()
    assert max(values, key=values.get) == "a"  # the useful lesson is found among the seven
    exploits = [p for p, _, _ in steps if not p.trial]
    assert all(m < 1 << 7 for p in exploits for m in p.masks)  # any subset of the seven, not only a designed one


@pytest.mark.parametrize(("budget", "horizon"), [(1.0, None), (1.5, None), (3.0, None), (2.0, 40), (4.0, 30)])
def test_reserved_retries_keep_every_call_within_the_budget_and_later_decisions_their_call(budget, horizon):
    """Each plan asks for up to 40 retries and makes a random share of those granted: the calls made,
    retries included, stay within B * n (with a horizon H, B * n + (B - 1) * (H - n)), and every decision's
    plan keeps at least one call."""
    rng = np.random.default_rng(7)
    engine = engine_of(budget, draft_horizon=horizon)
    made_total = 0
    for t, (ids, drafts, rel) in enumerate(world(3, 50)):
        plan = engine.plan(f"d{t}", time=20 * t, maturity=20 * t + 20, retrieved=ids, n_assets=3)
        granted = engine.reserve_calls(40)
        made = int(rng.integers(0, granted + 1))
        engine.release_calls(f"d{t}", granted, made)
        made_total += plan.draft_calls + made
        n = t + 1
        lent = 0.0 if horizon is None else (budget - 1.0) * max(horizon - n, 0)
        assert plan.draft_calls >= 1 and made_total <= budget * n + lent + 1e-9
        assert engine.credit.calls == made_total
        engine.decide(f"d{t}", drafts[list(plan.masks)])
        engine.settle(f"d{t}", rel)
    log = list(engine.history.log_entries())  # the log accounts for every call: plans' and retries'
    assert any(e.kind == "retry" for e in log) == (budget > 1.0)  # a budget of one call spares none
    assert made_total == sum(
        e.payload["details"]["draft_calls"] if e.kind == "prediction" else e.payload["draft_calls"]
        for e in log
        if e.kind in ("exploit", "prediction", "retry")
    )


def test_without_a_budget_every_wanted_retry_is_granted_and_bad_counts_are_refused():
    engine = engine_of()
    engine.plan("d0", time=0, maturity=20, retrieved=list("abcd"), n_assets=3)
    assert engine.reserve_calls(12) == 12
    engine.release_calls("d0", 12, 3)
    with pytest.raises(InputError, match=r"wanted must be a number of calls \(an integer >= 0\), got -1"):
        engine.reserve_calls(-1)
    with pytest.raises(InputError, match=r"made must be in \[0, reserved = 2\], got 3"):
        engine.release_calls("d0", 2, 3)


@pytest.mark.parametrize(
    "decision_id,reserved,made,field",
    [
        ("d0", 2, 1.5, "made"),  # logged as 1.5 calls, held as 2.5, read back as 2
        ("d0", "a", 0, "reserved"),  # a TypeError
        ("d0", 2, True, "made"),
        ("d0", -1, 0, "reserved"),
        ("nope", 2, 1, "decision_id"),  # a retry entry for a decision that does not exist
    ],
)
def test_calls_released_read_the_wrong_way_are_refused_naming_them_and_nothing_changes(
    decision_id, reserved, made, field
):
    from memtrial.errors import MemtrialError

    engine = engine_of(3.0)
    engine.plan("d0", time=0, maturity=20, retrieved=list("abcd"), n_assets=3)
    engine.reserve_calls(2)
    before = engine.to_json()
    with pytest.raises(MemtrialError) as refused:
        engine.release_calls(decision_id, reserved, made)
    assert refused.value.field == field
    assert engine.to_json() == before


def test_draft_credit_is_trial_is_a_query_and_deposit_adds_the_budget():
    from memtrial.action.budget import DraftCredit

    credit = DraftCredit(credit=1.5, calls=3, decisions=2)
    assert credit.is_trial(2.0, 4, horizon=10) and not credit.is_trial(2.0, 4)
    assert credit == DraftCredit(credit=1.5, calls=3, decisions=2)
    credit.deposit(2.0)
    assert credit == DraftCredit(credit=3.5, calls=3, decisions=2)


def test_plan_budget_returns_the_new_credit_and_leaves_the_given_one_unchanged():
    from memtrial.action.budget import DraftCredit, plan_budget

    design = [1, 2, 4, 7]
    asked: list[bool] = []

    def memory() -> tuple[int | None, float]:
        asked.append(True)
        return 3, 0.8

    credit = DraftCredit(credit=3.0, calls=10, decisions=4)
    trial = plan_budget(credit, 2.0, None, design, needs_reference=True, memory=memory, pairs=True, blends=False)
    assert (trial.trial, trial.masks, trial.memory_share, trial.extra_reference) == (True, (1, 2, 4, 7, 0), 0.0, True)
    assert trial.credit == DraftCredit(credit=0.0, calls=15, decisions=5) and asked == []
    exploit = plan_budget(credit, 1.0, None, design, needs_reference=True, memory=memory, pairs=True, blends=False)
    assert (exploit.trial, exploit.masks, exploit.memory_share, exploit.extra_reference) == (False, (0, 3), 0.8, False)
    assert asked == [True]
    assert exploit.credit == DraftCredit(credit=2.0, calls=12, decisions=5)
    assert credit == DraftCredit(credit=3.0, calls=10, decisions=4)
    unlimited = plan_budget(credit, None, None, design, needs_reference=False, memory=memory, pairs=True, blends=False)
    assert (unlimited.trial, unlimited.masks, unlimited.credit) == (True, (1, 2, 4, 7), credit)


def test_a_plan_retrieving_a_fresh_experience_takes_its_trial_from_the_held_back_share():
    from memtrial.action.budget import FRESH_AHEAD, RESERVE, DraftCredit, plan_budget

    design = [3, 5, 6, 9, 10, 12, 15, 0]  # eight runs
    later = 40  # decisions the horizon has after this one: it could lend 2 * 40 = 80 calls, and holds back 20
    credit = DraftCredit(credit=-56.0, decisions=10)
    assert RESERVE * 2.0 * later >= FRESH_AHEAD * 8 - 4  # what is held back covers most of two trials early
    asked: list[bool] = []

    def plan(credit: DraftCredit, fresh):
        return plan_budget(
            credit,
            3.0,
            10 + later + 1,
            design,
            needs_reference=False,
            memory=lambda: (None, 0.0),
            pairs=False,
            blends=True,
            fresh=fresh,
        )

    def ask(answer: bool):
        return lambda: asked.append(answer) or answer

    # the share lent now (-56 + 3 + 60 = 7 calls) does not cover the eight runs; a fresh plan may take more
    assert plan(credit, ask(True)).trial and not plan(credit, ask(False)).trial and asked == [True, False]
    asked.clear()
    trial = plan(DraftCredit(credit=0.0, decisions=10), ask(False))
    assert trial.trial and asked == []  # a trial on schedule never asks


@pytest.mark.parametrize("budget", [2.0, 3.0])
def test_fresh_experiences_at_every_decision_keep_the_calls_within_the_budget(budget):
    """Every plan retrieves experiences never seen before, so every plan that may take a trial early does: the
    calls still stay within B n + (B - 1) max(H - n, 0) after every decision n, and every decision keeps a call."""
    horizon, n = 50, 60
    engine = engine_of(budget, draft_horizon=horizon)
    rng = np.random.default_rng(5)
    calls = []
    for t in range(n):
        ids = [f"new{t}_{j}" for j in range(4)]
        for experience in ids:
            engine.add_experience(experience)
        plan = engine.plan(f"d{t}", time=20 * t, maturity=20 * t + 20, retrieved=ids, n_assets=3)
        engine.decide(f"d{t}", rng.dirichlet(np.ones(3), size=len(plan.masks)))
        engine.settle(f"d{t}", np.cumprod(1.0 + rng.normal(0.0, 0.01, size=(20, 3)), axis=0))
        calls.append(plan.draft_calls)
    spent = np.cumsum(calls)
    done = np.arange(1, n + 1)
    assert np.all(np.asarray(calls) >= 1)
    assert np.all(spent <= budget * done + (budget - 1.0) * np.maximum(horizon - done, 0) + 1e-9)
    trials = [t for t, c in enumerate(calls) if c == 8]
    steady = walk(engine_of(budget, draft_horizon=horizon), world(5, n, tilt=0.0))  # experiences seen again
    assert len(trials) >= sum(p.trial for p, _, _ in steady)  # fresh plans take their trials, not fewer
