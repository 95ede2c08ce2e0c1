"""Batch functions of the core give each item exactly the value it gets alone."""

import math

import numpy as np
import pytest

from memtrial.action.rule import noise_gain, noise_gains
from memtrial.errors import InputError
from memtrial.numeric import t_sf
from memtrial.values import RunningStatistics


def test_t_sf_of_an_array_equals_each_value_alone():
    rng = np.random.default_rng(3)
    t = np.concatenate([rng.standard_normal(60) * 3.0, [0.0, -0.0, 40.0, -40.0, math.inf, -math.inf, math.nan]])
    dof = np.concatenate([rng.uniform(0.5, 5_000.0, 60), [1.0, 2.0, 3.0, 5_000.0, 7.0, 7.0, 7.0]])
    batch = t_sf(t, dof)
    alone = [float(t_sf(value, degrees)) for value, degrees in zip(t.tolist(), dof.tolist(), strict=True)]
    assert np.array_equal(batch, np.array(alone), equal_nan=True)


def test_t_sf_matches_the_t_distribution_within_1e_12():
    stats = pytest.importorskip("scipy.stats")
    t = np.linspace(-6.0, 6.0, 49)
    dof = np.geomspace(1.0, 3_000.0, 49)
    np.testing.assert_allclose(t_sf(t, dof), stats.t.sf(t, dof), rtol=1e-10, atol=1e-12)


def test_noise_gains_equal_noise_gain_of_each_decision():
    rng = np.random.default_rng(4)
    scores = rng.standard_normal((25, 10)) * 0.01  # 8 drafts, then two other columns, as a replay holds them
    gains = noise_gains(scores[:, :8], scores[:, 9])
    assert gains is not None
    alone = [noise_gain(scores[row, :8], float(scores[row, 9])) for row in range(25)]
    assert gains.tolist() == alone


def test_noise_gains_of_a_single_draft_is_none():
    assert noise_gains(np.zeros((3, 1)), np.zeros(3)) is None


def test_noise_gains_with_mismatched_means_is_rejected():
    with pytest.raises(InputError, match=r"^mean_utilities must have shape \(3,\), got \(2,\)$"):
        noise_gains(np.zeros((3, 4)), np.zeros(2))


def test_noise_gains_of_one_decision_as_a_vector_is_rejected():
    with pytest.raises(InputError, match=r"^draft_utilities must have shape \(D, R\), got \(4,\)$"):
        noise_gains(np.zeros(4), np.zeros(1))


def test_running_statistics_hold_each_experiences_count_mean_and_squared_deviations():
    rng = np.random.default_rng(5)
    dates = [
        {e: float(v) for e, v in zip(rng.choice(6, 4, replace=False).tolist(), rng.standard_normal(4))}
        for _ in range(30)
    ]
    running = RunningStatistics(centre=True)
    for contributions in dates:
        assert running.add_date(contributions)
    centred: dict[int, list[float]] = {}
    for contributions in dates:
        date_mean = sum(contributions.values()) / len(contributions)
        for experience, value in contributions.items():
            centred.setdefault(experience, []).append(value - date_mean)
    rows = [running.index[e] for e in sorted(centred)]
    assert running.counts[rows].tolist() == [len(centred[e]) for e in sorted(centred)]
    np.testing.assert_allclose(running.sums[rows], [sum(centred[e]) for e in sorted(centred)], rtol=1e-12, atol=1e-12)
    expected_m2 = [float(np.sum((np.array(centred[e]) - np.mean(centred[e])) ** 2)) for e in sorted(centred)]
    np.testing.assert_allclose(running.m2[rows], expected_m2, rtol=1e-10, atol=1e-12)
    everything = np.concatenate([centred[e] for e in sorted(centred)])
    assert running.n_records == 120 and running.n_dates == 30
    assert running.total == pytest.approx(everything.sum(), abs=1e-12)
    assert running.total_sq == pytest.approx(float(np.sum(everything**2)), rel=1e-12)


def test_running_statistics_reject_a_non_finite_contribution_and_change_nothing():
    running = RunningStatistics(centre=True)
    with pytest.raises(InputError, match=r"^contributions must be finite$"):
        running.add_date({1: 0.5, 2: math.nan})
    assert running.n_records == 0 and len(running) == 0


def test_rank_orders_gives_each_padded_row_the_order_and_scores_it_gets_alone():
    """Lists of several lengths padded into one batch (``valid``), some at omega 0: each row's order over its own
    candidates and its scores are those of the list ranked alone, and the padding comes last."""
    from memtrial.curation import rank_orders

    rng = np.random.default_rng(8)
    sizes, width = [3, 7, 5, 7], 7
    rows = []
    for size in sizes:
        similarity = np.round(rng.normal(size=size), 1)  # ties, broken by the given order
        rows.append((similarity, rng.normal(size=size), np.abs(rng.normal(size=size)), rng.integers(0, 4, size)))
    omega = np.array([0.0, 0.4, 1.0, 0.0])
    shape = (len(sizes), width)
    batch = [np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=np.int64)]
    valid = np.zeros(shape, dtype=bool)
    for at, (size, row) in enumerate(zip(sizes, rows, strict=True)):
        for part, values in zip(batch, row, strict=True):
            part[at, :size] = values
        valid[at, :size] = True
    known = valid.copy()
    orders, scores = rank_orders(*batch[:3], batch[3], known, omega, valid=valid)
    for at, (size, row) in enumerate(zip(sizes, rows, strict=True)):
        alone_order, alone_scores = rank_orders(
            *(np.asarray(v)[None] for v in row[:3]),
            np.asarray(row[3])[None],
            np.ones((1, size), bool),
            omega[at : at + 1],
        )
        assert orders[at, :size].tolist() == alone_order[0].tolist()
        assert sorted(orders[at, size:].tolist()) == list(range(size, width))  # padding last
        np.testing.assert_array_equal(scores[at, :size], alone_scores[0])


def test_value_posteriors_of_many_experiences_equal_each_read_alone():
    """Learnt and unseen experiences, with and without features, in both modes: ValueFit.posteriors of a list
    equals posterior of each alone, bit for bit, and a batch refit of learners of several sizes equals each
    learner's own refit."""
    from memtrial.values import EmpiricalBayesLearner, refit_learners

    def learner(n_experiences: int, seed: int) -> EmpiricalBayesLearner:
        local = np.random.default_rng(seed)
        made = EmpiricalBayesLearner("auto", n_components=None, centre=False)
        for e in range(n_experiences + 2):  # two with features but never learnt
            made.add_features(e, local.normal(size=4))
        for _ in range(30):
            picked = local.choice(n_experiences, size=3, replace=False)
            made.update(None, {int(e): float(local.normal(0.1 * e, 1.0)) for e in picked})
        return made

    sizes = [5, 12, 20]
    together = [learner(n, seed) for seed, n in enumerate(sizes)]
    alone = [learner(n, seed) for seed, n in enumerate(sizes)]
    refit_learners(together)
    for batch_learner, own, size in zip(together, alone, sizes, strict=True):
        ids = [*range(size + 2), "stranger"]  # learnt, then two with features only, then one with neither
        for mode in ("identity", "content"):
            fitted, fit = batch_learner.fits_[mode], own.fits_[mode]  # own: its own refit, alone
            for hyper in (False, True):
                means, sds = fitted.posteriors(ids, hyper)
                for e, mean, sd in zip(ids, means.tolist(), sds.tolist(), strict=True):
                    assert (mean, sd) == tuple(fit.posterior(e, hyper)), (mode, hyper, e)


def test_add_scores_grows_each_gate_as_its_own_statistics_grow():
    """The e-process's addition of many gates at once (a cohort's) equals GateStatistics.add of each alone."""
    from memtrial.trust.gate import DEFAULT_BETS, GateStatistics, add_scores, log_e_values

    rng = np.random.default_rng(8)
    scores = np.clip(rng.normal(0.1, 0.5, (40, 6)), -1.0, 1.0)  # 40 dates, 6 gates
    bets = np.asarray(DEFAULT_BETS)
    alone = [GateStatistics(DEFAULT_BETS) for _ in range(6)]
    together = np.zeros((6, bets.size))
    for row in scores:
        together = add_scores(together, row, bets)
        for statistics, score in zip(alone, row.tolist(), strict=True):
            statistics.add(score)
    assert np.array_equal(together, np.array([s.log_growth for s in alone]))
    assert log_e_values(together).tolist() == [s.log_e_value() for s in alone]
    # and the sum of log(1 + bet r) over the scores, written out (method 4.8), added one score after another
    by_hand = np.zeros((6, bets.size))
    for row in scores:
        by_hand = by_hand + np.log1p(row[:, None] * bets[None, :])
    assert np.array_equal(together, by_hand)


def test_selected_modes_of_many_learners_equal_each_learners_own():
    """The auto mode's choice of many learners at once, fixed modes and auto learners before and after
    enough scores among them, equals each learner's selected_mode."""
    from memtrial.values import EmpiricalBayesLearner, LearnerMode, selected_modes

    rng = np.random.default_rng(9)
    learners = [EmpiricalBayesLearner(mode) for mode in ("auto", "identity", "auto", "content", "auto", "auto")]
    for at, learner in enumerate(learners):
        if learner.mode is not LearnerMode.AUTO:
            continue
        for _ in range(3 * at):  # 0, 6, 12, 15 scores of each mode
            learner.record_score("identity", float(rng.uniform(-1, 1)))
            learner.record_score("content", float(rng.uniform(-1, 1)))
    learners[5].min_auto_scores = 100  # enough scores for the others, not for this one
    chosen = selected_modes(learners)
    assert chosen == [learner.selected_mode for learner in learners]
    # the rule written out: content once both modes have the learner's minimum of scores and content's mean is higher
    for learner, mode in zip(learners, chosen, strict=True):
        if learner.mode is not LearnerMode.AUTO:
            assert mode is learner.mode
            continue
        identity, content = learner.mode_scores[LearnerMode.IDENTITY], learner.mode_scores[LearnerMode.CONTENT]
        enough = min(identity.count, content.count) >= learner.min_auto_scores
        better = enough and content.total / content.count > identity.total / identity.count
        assert mode is (LearnerMode.CONTENT if better else LearnerMode.IDENTITY)
    assert set(chosen) == {LearnerMode.IDENTITY, LearnerMode.CONTENT}  # the check sees both choices
    assert selected_modes([]) == []


def test_contribution_counts_read_the_values_learnt_since_a_change():
    """A budget's fresh rule counts an experience's contributions since its detected change where it has one
    (Curator.since_changes), else the learner's; without a curator, the learner's."""
    from memtrial.curation import Curator, QuarantineConfig, contribution_counts

    curator = Curator(QuarantineConfig(enabled=True, change_threshold=20.0))
    decision = 0
    for _ in range(30):  # experience "a" helps, then hurts: its change is detected; "b" stays alike
        decision += 1
        curator.observe(f"d{decision}", {"a": 1.0, "b": 0.5})
    for _ in range(40):
        decision += 1
        curator.observe(f"d{decision}", {"a": -1.0, "b": 0.5})
        if curator.changed_at("a") is not None:
            break
    assert curator.changed_at("a") is not None and curator.changed_at("b") is None
    curator.observe("later", {"a": -1.0})
    since = curator.since_changes(["a", "b", "c"])
    assert list(since) == ["a"] and since["a"] == curator.regime_posterior("a") and since["a"].n >= 1
    learnt = {"a": 70, "b": 70, "c": 0}.__getitem__
    assert contribution_counts(curator, ["a", "b", "c"], learnt) == [since["a"].n, 70, 0]
    assert contribution_counts(None, ["a", "b", "c"], learnt) == [70, 70, 0]
    assert curator.reset_values(["a", "b"]) == {"a": since["a"].mean * since["a"].n / (since["a"].n + 2.0)}
