"""memtrial.values.bayes: the full-Bayes value model in NumPyro, checked against published results and the EB learner."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from oracles import simulate

from memtrial.values import EmpiricalBayesLearner, sufficient_statistics
from memtrial.values.cache import COMPILE_CACHE_BYTES

ROOT = Path(__file__).resolve().parents[2]

# memtrial.values.bayes (JAX and NumPyro, 2 s to import) is imported by each test: collecting this module, as the
# fast tier does, imports neither


def simulate_with_target(seed, n_experiences, n_dates):
    truth, records = simulate(np.random.default_rng(seed), n_experiences, n_dates)
    # what a date-centred contribution estimates: (3/4) of the gap to the other experiences' mean
    target = np.array([0.75 * (truth[h] - np.delete(truth, h).mean()) for h in range(n_experiences)])
    return records, target


@pytest.mark.slow  # NUTS
def test_eight_schools_reproduce_the_published_posterior_means():
    from memtrial.values.bayes import hierarchical_normal_means

    result = hierarchical_normal_means([28, 8, -3, 7, -1, 1, 18, 12], [15, 10, 16, 11, 9, 11, 10, 18])
    print(f"\neight schools: mu {result['mu'][0]:.2f}, tau {result['tau'][0]:.2f}, divergences {result['divergences']}")
    assert result["mu"][0] == pytest.approx(4.4, abs=0.3)
    assert result["tau"][0] == pytest.approx(3.6, abs=0.3)
    assert result["divergences"] == 0


@pytest.mark.slow  # NUTS
def test_with_plentiful_data_nuts_agrees_with_the_empirical_bayes_learner():
    from memtrial.values.bayes import BayesLearner

    records, _ = simulate_with_target(0, n_experiences=40, n_dates=600)
    bayes = BayesLearner("identity").fit(records)
    empirical = EmpiricalBayesLearner("identity").fit(records)
    full = np.array([bayes.predict(h) for h in range(40)])
    closed = np.array([empirical.predict(h) for h in range(40)])
    sd = np.mean([empirical.posterior(h).sd for h in range(40)])
    print(f"\nNUTS vs closed form: max |diff| {np.abs(full - closed).max():.5f}, mean posterior sd {sd:.5f}")
    assert np.corrcoef(full, closed)[0, 1] > 0.98
    assert np.abs(full - closed).max() < 1.5 * sd  # tolerance: one and a half posterior sds, the largest gap
    assert bayes.divergences_ == 0


@pytest.mark.slow  # Monte Carlo
def test_ninety_percent_intervals_cover_the_truth_about_ninety_percent_of_the_time():
    from memtrial.values.bayes import BayesLearner

    records, target = simulate_with_target(1, n_experiences=80, n_dates=1200)
    bayes = BayesLearner("identity").fit(records)
    posteriors = [bayes.posterior(h) for h in range(80)]
    coverage = np.mean([p.lower <= t <= p.upper for p, t in zip(posteriors, target, strict=True)])
    print(f"\n90% interval coverage over 80 experiences: {coverage:.3f}")
    assert 0.80 <= coverage <= 0.98  # binomial sd at 80 draws is 0.034
    assert all(0.0 <= p.p_positive <= 1.0 and p.lower < p.mean < p.upper for p in posteriors)


@pytest.mark.slow  # NUTS
def test_content_features_predict_unseen_experiences_with_intervals():
    from memtrial.values.bayes import BayesLearner

    rng = np.random.default_rng(2)
    n_experiences = 60
    kind = rng.choice([-1.0, 0.0, 1.0], size=n_experiences)
    features = {h: np.r_[2.0 * kind[h], rng.normal(size=3)] for h in range(n_experiences)}
    records = [
        (t, int(h), 0.01 * kind[h] + rng.normal(0, 0.02)) for t in range(500) for h in rng.choice(45, 4, replace=False)
    ]
    bayes = BayesLearner("content", features=features, n_components=None).fit(records)
    unseen = np.array([bayes.predict(h) for h in range(45, n_experiences)])
    assert np.corrcoef(unseen, kind[45:])[0, 1] > 0.8
    posterior = bayes.posterior(50)
    assert posterior.lower < posterior.mean < posterior.upper


@pytest.mark.slow  # NUTS
def test_many_problems_of_different_sizes_fit_in_one_batched_call():
    from memtrial.values.bayes import Problem, fit_many

    problems = []
    closed = []
    for seed, size in ((3, 12), (4, 30), (5, 48)):
        records, _ = simulate_with_target(seed, n_experiences=size, n_dates=40 * size)
        stats = sufficient_statistics(records)
        problems.append(
            Problem(
                stats.means / stats.scale,
                stats.counts.astype(float),
                np.zeros((size, 0)),
                stats.residual_ss / stats.scale**2,
                stats.dof,
            )
        )
        learner = EmpiricalBayesLearner("identity").fit(records)
        closed.append(np.array([learner.predict(e) for e in stats.experience_ids]) / stats.scale)
    samples = fit_many(problems)
    assert [s.shape for s in samples] == [(1000, 12), (1000, 30), (1000, 48)]
    for draws, reference in zip(samples, closed, strict=True):
        assert np.corrcoef(draws.mean(axis=0), reference)[0, 1] > 0.95


def test_values_module_exposes_the_bayes_learner_lazily():
    import memtrial.values
    from memtrial.values.bayes import BayesLearner

    assert memtrial.values.BayesLearner is BayesLearner


def test_the_service_turns_on_the_compile_cache_once_and_leaves_it_off_where_its_folder_cannot_be_made(
    tmp_path,
):
    # a fresh process (JAX's cache is process-wide): no folder can be made under a file, so the cache stays off;
    # then the default folder (MEMTRIAL_JAX_CACHE) is made and used, bounded, and a later call keeps the one on
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    code = (
        "import os, jax; from memtrial.values.bayes import use_compile_cache; "
        "print(use_compile_cache(), jax.config.jax_compilation_cache_dir); "
        f"os.environ['MEMTRIAL_JAX_CACHE'] = {str(tmp_path / 'jax')!r}; "
        "print(use_compile_cache(), jax.config.jax_compilation_cache_dir, jax.config.jax_compilation_cache_max_size); "
        f"os.environ['MEMTRIAL_JAX_CACHE'] = {str(tmp_path / 'other')!r}; print(use_compile_cache())"
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    environment |= {"MEMTRIAL_JAX_CACHE": str(blocked / "jax"), "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=True, timeout=300
    )
    assert result.stdout.split("\n")[:3] == [
        "None None",
        f"{tmp_path / 'jax'} {tmp_path / 'jax'} {COMPILE_CACHE_BYTES}",  # bounded: entries read under a lock
        str(tmp_path / "jax"),
    ]
    assert (tmp_path / "jax").is_dir() and not (tmp_path / "other").exists()


def test_an_engine_with_the_bayes_learner_takes_new_experiences_as_with_the_empirical_one():
    # the real-data backtests swap in the Bayes learner, then add each decision's experiences (with their
    # embeddings): the engine's call named the field, which the Bayes learner did not take
    import numpy as np
    import pytest

    from memtrial import EngineConfig, MemTrial
    from memtrial.errors import InputError
    from memtrial.values.bayes import BayesLearner

    engine = MemTrial(EngineConfig(investor="balanced"))
    engine.learner = BayesLearner("content", method="svi", num_samples=10)
    engine.add_experience("bonds after a rate shock", np.ones(4))
    assert np.array_equal(engine.learner.features["bonds after a rate shock"], np.ones(4))
    with pytest.raises(InputError) as error:
        engine.add_experience("cash in drawdowns", np.ones(3))
    assert error.value.field == "embedding" and "has 3 dimensions, expected 4" in str(error.value)
    assert "cash in drawdowns" not in engine.experiences
