"""memtrial.values: the empirical-Bayes Fay–Herriot learner against a dense oracle and planted truths."""

import numpy as np
import pytest
from oracles import dense_oracle, simulate

from memtrial.errors import ConfigError, InputError, LifecycleError
from memtrial.values import EmpiricalBayesLearner, LearnerMode, ValuePosterior, content_features, refit_mode
from memtrial.values.fayherriot import VARIANCE_GRID, fit_fay_herriot, log_likelihood_table


def random_problem(rng, n_experiences, n_features):
    z = rng.normal(size=(n_experiences, n_features))
    n = rng.integers(1, 25, size=n_experiences).astype(float)
    truth = z @ rng.normal(0, 0.4, size=n_features) + rng.normal(0, 0.3, size=n_experiences)
    return truth + rng.normal(size=n_experiences) / np.sqrt(n), n, z


@pytest.mark.parametrize("seed", range(12))
def test_low_rank_fit_equals_the_dense_oracle(seed):
    rng = np.random.default_rng(seed)
    m, n, z = random_problem(rng, int(rng.integers(3, 80)), int(rng.integers(0, 9)))
    table, sigma_b2, tau2, mean, variance, beta = dense_oracle(m, n, z)
    sigma_grid = VARIANCE_GRID if z.shape[1] else np.zeros(1)
    np.testing.assert_allclose(log_likelihood_table(m, n, z, sigma_grid, VARIANCE_GRID), table, rtol=0, atol=1e-8)
    fit = fit_fay_herriot(m, n, z)
    assert (fit.sigma_b2, fit.tau2) == (sigma_b2, tau2)
    np.testing.assert_allclose(fit.mean, mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(fit.variance, variance, rtol=0, atol=1e-8)
    np.testing.assert_allclose(fit.beta, beta, rtol=0, atol=1e-8)


def test_learner_posterior_equals_the_dense_oracle_on_its_own_statistics():
    rng = np.random.default_rng(7)
    truth, records = simulate(rng)
    embeddings = {h: np.r_[truth[h] * 100, rng.normal(size=12)] for h in range(40)}
    learner = EmpiricalBayesLearner("content", features=embeddings).fit(records)
    fit = learner.fits_[LearnerMode.CONTENT]
    ids = sorted(fit.index, key=fit.index.get)
    # rebuild m, n, s and z independently of the learner
    y = {}
    for date in {r[0] for r in records}:
        day = [r for r in records if r[0] == date]
        day_mean = np.mean([r[2] for r in day])
        for _, h, c in day:
            y.setdefault(h, []).append(c - day_mean)
    n = np.array([len(y[h]) for h in ids], dtype=float)
    residual = sum(((np.array(y[h]) - np.mean(y[h])) ** 2).sum() for h in ids)
    s = np.sqrt(residual / (len(records) - len(ids) - (300 - 1)))
    m = np.array([np.mean(y[h]) for h in ids]) / s
    features = content_features(np.array([embeddings[h] for h in range(40)]))
    z = features[ids]
    _, _, _, mean, variance, _ = dense_oracle(m, n, z)
    assert fit.scale == pytest.approx(s, rel=1e-12)
    np.testing.assert_allclose([learner.predict(h) for h in ids], mean * s, rtol=0, atol=1e-10)
    np.testing.assert_allclose([learner.posterior(h).sd for h in ids], np.sqrt(variance) * s, rtol=0, atol=1e-10)


def test_posterior_means_recover_planted_values():
    rng = np.random.default_rng(11)
    truth, records = simulate(rng, n_experiences=40, n_dates=400)
    learner = EmpiricalBayesLearner("identity").fit(records)
    estimates = np.array([learner.predict(h) for h in range(40)])
    assert np.corrcoef(estimates, truth - truth.mean())[0, 1] > 0.8
    noise_scale = learner.fits_[LearnerMode.IDENTITY].scale
    assert noise_scale == pytest.approx(0.02, rel=0.1)  # the planted draft noise


def test_experiences_seen_once_shrink_toward_zero():
    rng = np.random.default_rng(5)
    truth, records = simulate(rng, n_experiences=30, n_dates=200)
    records += [("once", "new-a", 0.05), ("once", "new-b", -0.05)]
    learner = EmpiricalBayesLearner("identity").fit(records)
    assert learner.count("new-a") == 1
    assert 0 < learner.predict("new-a") < 0.05
    assert -0.05 < learner.predict("new-b") < 0
    assert learner.posterior("new-a").sd > learner.posterior(0).sd


def test_same_day_shifts_change_no_value():
    rng = np.random.default_rng(2)
    _, records = simulate(rng, n_experiences=20, n_dates=100)
    shifted = [(t, h, c + 10.0 * np.sin(t)) for t, h, c in records]
    first = EmpiricalBayesLearner("identity").fit(records)
    second = EmpiricalBayesLearner("identity").fit(shifted)
    np.testing.assert_allclose(
        [first.predict(h) for h in range(20)], [second.predict(h) for h in range(20)], atol=1e-12
    )


def test_content_features_predict_unseen_experiences():
    rng = np.random.default_rng(3)
    n_experiences = 120
    kind = rng.choice([-1.0, 0.0, 1.0], size=n_experiences)
    truth = 0.01 * kind
    embeddings = {
        h: np.r_[1.5 * kind[h] * np.eye(8)[0] + rng.normal(size=8), rng.normal(size=24)] for h in range(n_experiences)
    }
    records = []
    for t in range(400):
        for h in rng.choice(80, 4, replace=False):  # experiences 80.. are never retrieved
            records.append((t, int(h), truth[h] + rng.normal(0, 0.02)))
    learner = EmpiricalBayesLearner("content", features=embeddings).fit(records)
    assert learner.fits_[LearnerMode.CONTENT].model.sigma_b2 > 0
    unseen = np.array([learner.predict(h) for h in range(80, n_experiences)])
    assert np.corrcoef(unseen, truth[80:])[0, 1] > 0.5
    assert learner.posterior(100).sd > 0


def test_identity_learner_predicts_zero_for_unseen_experiences():
    rng = np.random.default_rng(4)
    _, records = simulate(rng, n_experiences=10, n_dates=50)
    learner = EmpiricalBayesLearner("identity").fit(records)
    assert learner.predict("never-seen") == 0.0
    assert learner.posterior("never-seen").mean == 0.0


def test_unfitted_learner_predicts_the_prior_mean_and_has_no_posterior():
    learner = EmpiricalBayesLearner()
    assert learner.predict("a") == 0.0
    with pytest.raises(LifecycleError, match="the learner has no centred records yet"):
        learner.posterior("a")


def test_all_zero_contributions_give_zero_values():
    learner = EmpiricalBayesLearner().fit([(t, h, 0.0) for t in range(5) for h in "abcd"])
    assert learner.posterior("a") == ValuePosterior(0.0, 0.0)


def test_auto_uses_identity_until_both_modes_have_enough_scores():
    learner = EmpiricalBayesLearner("auto")
    for _ in range(9):
        learner.record_score("identity", 0.1)
        learner.record_score("content", 0.5)
    assert learner.selected_mode is LearnerMode.IDENTITY
    learner.record_score("identity", 0.1)
    learner.record_score("content", 0.5)
    assert learner.selected_mode is LearnerMode.CONTENT


def test_auto_keeps_identity_when_content_scores_worse():
    learner = EmpiricalBayesLearner("auto")
    for _ in range(10):
        learner.record_score("identity", 0.3)
        learner.record_score("content", -0.2)
    assert learner.selected_mode is LearnerMode.IDENTITY


@pytest.mark.parametrize(
    ("mode", "refitted"),
    [("auto", LearnerMode.CONTENT), ("content", LearnerMode.CONTENT), (LearnerMode.IDENTITY, LearnerMode.IDENTITY)],
)
def test_refit_mode_of_auto_is_content_and_of_any_other_mode_itself(mode, refitted):
    assert refit_mode(mode) is refitted


def test_refit_mode_rejects_an_unknown_mode_naming_the_field():
    with pytest.raises(ConfigError, match="mode") as raised:
        refit_mode("bayes")
    assert raised.value.field == "mode"


def test_learner_rejects_an_unknown_mode():
    with pytest.raises(ConfigError, match=r"mode must be one of \['identity', 'content', 'auto'\], got 'magic'"):
        EmpiricalBayesLearner("magic")


def test_learner_rejects_features_of_another_dimension():
    learner = EmpiricalBayesLearner("content", features={"a": np.zeros(4)})
    with pytest.raises(InputError, match="features of 'b' has 3 dimensions, expected 4"):
        learner.add_features("b", np.zeros(3))


def test_content_features_are_standardised_principal_components():
    rng = np.random.default_rng(0)
    z = content_features(rng.normal(size=(50, 20)) @ rng.normal(size=(20, 20)))
    assert z.shape == (50, 8)
    np.testing.assert_allclose(z.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(z.std(axis=0), 1, atol=1e-12)
    np.testing.assert_allclose(np.corrcoef(z.T), np.eye(8), atol=1e-10)


def _problem(rng, size, p=3):
    m = rng.normal(0, 1, size)
    n = rng.integers(1, 40, size).astype(float)
    z = rng.normal(0, 1, (size, p))
    return m, n, z


def test_a_batch_of_mixed_sizes_fits_each_problem_exactly_as_alone():
    from memtrial.values.fayherriot import SpectraCache, fit_many, width

    rng = np.random.default_rng(11)
    sizes = [3, 16, 17, 40, 9, 33]
    assert [width(s) for s in sizes] == [16, 16, 32, 48, 16, 48]
    problems = [_problem(rng, s) for s in sizes]
    columns = max(sizes)
    m, n, z = np.zeros((len(sizes), columns)), np.ones((len(sizes), columns)), np.zeros((len(sizes), columns, 3))
    for row, (pm, pn, pz) in enumerate(problems):
        m[row, : pm.size], n[row, : pn.size], z[row, : pz.shape[0]] = pm, pn, pz
    cache = SpectraCache()
    for _ in range(2):  # the second pass reads every eigendecomposition from the cache
        batch = fit_many(m, n, z, sizes=np.array(sizes), cache=cache)
        for row, (pm, pn, pz) in enumerate(problems):
            alone = fit_fay_herriot(pm, pn, pz)
            assert (batch.sigma_b2[row], batch.tau2[row], batch.log_likelihood[row]) == (
                alone.sigma_b2,
                alone.tau2,
                alone.log_likelihood,
            )
            assert np.array_equal(batch.mean[row, : pm.size], alone.mean) and np.array_equal(
                batch.variance[row, : pm.size], alone.variance
            )
            assert np.array_equal(batch.beta[row], alone.beta) and np.all(batch.mean[row, pm.size :] == 0.0)
    assert cache.hits == len(sizes) and cache.misses == len(sizes)


def test_problems_sharing_counts_and_features_share_one_eigendecomposition_and_stay_exact():
    from memtrial.values.fayherriot import SpectraCache, fit_many

    rng = np.random.default_rng(12)
    _, n, z = _problem(rng, 20)
    ms = rng.normal(0, 1, (3, 20))  # three learners of one calendar: one counts vector, other values
    cache = SpectraCache()
    batch = fit_many(ms, np.tile(n, (3, 1)), np.broadcast_to(z, (3, *z.shape)), cache=cache)
    assert cache.misses == 1 and cache.hits == 0
    for row in range(3):
        assert np.array_equal(batch.mean[row], fit_fay_herriot(ms[row], n, z).mean)


def test_fit_many_rejects_sizes_outside_the_arrays():
    from memtrial.values.fayherriot import fit_many

    with pytest.raises(InputError, match="sizes"):
        fit_many(np.zeros((1, 4)), np.ones((1, 4)), np.zeros((1, 4, 2)), sizes=np.array([5]))
