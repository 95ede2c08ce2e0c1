"""Full-Bayes Fay–Herriot value model in NumPyro (method 4.4), on CPU or GPU through JAX.

The model works on per-experience sufficient statistics, in units of the
empirical noise scale s0 (so the priors are scale free):

    s       ~ HalfNormal(2)              noise sd of one contribution
    sigma_b ~ HalfNormal(1)              spread of the content coefficients
    tau     ~ HalfNormal(1)              spread of values beyond content
    beta_j  = sigma_b * b_j,  b_j ~ N(0, 1)          (non-centred)
    v_h     = mu + z_h' beta + tau * u_h,  u_h ~ N(0, 1)
    m_h     ~ N(v_h, (s * obs_scale_h)**2),  obs_scale_h = 1 / sqrt(n_h)
    rss     ~ Gamma(dof / 2, rate = 1 / (2 s**2))    (within-experience residuals)

``mu`` is fixed at 0 for date-centred contributions; the same function with
``mu ~ N(0, mu_scale)``, a known noise (s = 1) and tau ~ HalfCauchy runs the
classic hierarchical normal-means problem (:func:`hierarchical_normal_means`).
Models are plain functions whose observed values default to None; inference
choices live outside them. NUTS is the default; SVI (AutoNormal) serves
batches of independent problems in one compiled, vmapped call.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from memtrial.errors import ConfigError, InputError, LifecycleError, MissingExtraError, parse_choice

try:
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS, SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
except ModuleNotFoundError as error:
    raise MissingExtraError("the full-Bayes learner", error.name or "jax", "bayes") from None

from memtrial.values.cache import COMPILE_CACHE_BYTES, COMPILE_CACHE_MIN_SECONDS, default_jax_cache
from memtrial.values.empirical import checked_features
from memtrial.values.statistics import LearnerMode, Record, RunningStatistics, SufficientStatistics, content_features

__all__ = [
    "BayesLearner",
    "BayesPosterior",
    "TauPrior",
    "enable_compile_cache",
    "fay_herriot_model",
    "fit_many",
    "hierarchical_normal_means",
    "use_compile_cache",
]

CREDIBLE = 0.90
_FITTED = ("samples_", "stats_", "_index", "_content", "_beta", "_tau", "divergences_", "statistics")
_FITS: dict[tuple[object, ...], tuple[tuple[Any, ...], dict[str, Any]]] = {}


def enable_compile_cache(folder: str | os.PathLike[str] | None = None) -> Path:
    """Turn on JAX's persistent compilation cache (default :func:`default_jax_cache`, ``~/.cache/memtrial/jax``)."""
    path = Path(folder if folder is not None else default_jax_cache())
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))  # type: ignore[no-untyped-call]
    jax.config.update("jax_persistent_cache_min_compile_time_secs", COMPILE_CACHE_MIN_SECONDS)  # type: ignore[no-untyped-call]
    if importlib.util.find_spec("filelock") is not None:  # JAX's bound needs it; without it the cache is unbounded
        jax.config.update("jax_compilation_cache_max_size", COMPILE_CACHE_BYTES)  # type: ignore[no-untyped-call]
    return path


def use_compile_cache() -> Path | None:
    """:func:`enable_compile_cache` at its default folder for the service's refits, unless a cache is on already
    (a folder set by ``JAX_COMPILATION_CACHE_DIR`` or an earlier call, kept as it is): a restarted server or another
    replica loads the NUTS kernels an earlier one compiled (about 7 CPU seconds each) instead of compiling them
    again. Where the default folder cannot be made (a read-only or unknown home), the cache stays off and fits
    compile as before. The cache's folder, or None."""
    configured = jax.config.jax_compilation_cache_dir  # type: ignore[attr-defined]
    if configured:
        return Path(configured)
    try:
        return enable_compile_cache()
    except (OSError, RuntimeError):  # RuntimeError: Path.home() without HOME or a user entry
        return None


class TauPrior(StrEnum):
    """The prior on tau, the spread of values around their content-predicted mean."""

    HALF_NORMAL = "half_normal"
    HALF_CAUCHY = "half_cauchy"


def fay_herriot_model(
    obs_scale: Any,
    z: Any,
    mask: Any,
    dof: Any,
    m: Any = None,
    rss: Any = None,
    *,
    noise_known: bool = False,
    tau_prior: TauPrior | str = TauPrior.HALF_NORMAL,
    tau_scale: float = 1.0,
    sigma_scale: float = 1.0,
    mu_scale: float | None = None,
) -> None:
    """The value model. obs_scale, mask: (H,); z: (H, p); dof: scalar (0: no residual term)."""
    s = 1.0 if noise_known else numpyro.sample("s", dist.HalfNormal(2.0))
    prior = parse_choice(TauPrior, tau_prior, "tau_prior")
    tau_distribution = dist.HalfCauchy(tau_scale) if prior is TauPrior.HALF_CAUCHY else dist.HalfNormal(tau_scale)
    tau = numpyro.sample("tau", tau_distribution)
    mu = 0.0 if mu_scale is None else numpyro.sample("mu", dist.Normal(0.0, mu_scale))
    v = mu
    if z.shape[-1]:
        sigma_b = numpyro.sample("sigma_b", dist.HalfNormal(sigma_scale))
        with numpyro.plate("features", z.shape[-1]):
            b = numpyro.sample("b", dist.Normal(0.0, 1.0))
        beta = numpyro.deterministic("beta", sigma_b * b)
        v = v + z @ beta
    with numpyro.plate("experiences", obs_scale.shape[-1]):
        u = numpyro.sample("u", dist.Normal(0.0, 1.0))
        values = numpyro.deterministic("v", v + tau * u)
        with numpyro.handlers.mask(mask=mask):
            numpyro.sample("m", dist.Normal(values, s * obs_scale), obs=m)
    if not noise_known:
        with numpyro.handlers.mask(mask=dof > 0):
            numpyro.sample("rss", dist.Gamma(jnp.maximum(dof, 1.0) / 2.0, 1.0 / (2.0 * s**2)), obs=rss)


class BayesPosterior(NamedTuple):
    """Posterior of one value (utility units): mean, sd, 90% interval, P(v > 0)."""

    mean: float
    sd: float
    lower: float
    upper: float
    p_positive: float


def _summary(samples: NDArray[np.float64]) -> list[BayesPosterior]:
    """Per column of (draws, H) samples."""
    low, high = np.quantile(samples, [(1 - CREDIBLE) / 2, (1 + CREDIBLE) / 2], axis=0)
    return [
        BayesPosterior(float(mu), float(sd), float(lo), float(hi), float(p))
        for mu, sd, lo, hi, p in zip(
            samples.mean(axis=0), samples.std(axis=0), low, high, (samples > 0).mean(axis=0), strict=True
        )
    ]


def _nuts(
    model: Any, seed: int, num_warmup: int, num_samples: int, num_chains: int, target_accept: float, **data: Any
) -> tuple[dict[str, np.ndarray], int]:
    mcmc = MCMC(
        NUTS(model, target_accept_prob=target_accept),
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=num_chains,
        chain_method="sequential",
        progress_bar=False,
    )
    mcmc.run(jax.random.PRNGKey(seed), extra_fields=("diverging",), **data)
    divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    return {k: np.asarray(v) for k, v in mcmc.get_samples().items()}, divergences


def hierarchical_normal_means(
    y: ArrayLike,
    sigma: ArrayLike,
    mu_scale: float = 5.0,
    tau_scale: float = 5.0,
    seed: int = 0,
    num_samples: int = 2000,
    num_chains: int = 4,
) -> dict[str, Any]:
    """theta_j ~ N(mu, tau), y_j ~ N(theta_j, sigma_j): the feature-free level of the value model
    (mu ~ N(0, mu_scale), tau ~ HalfCauchy(tau_scale), non-centred), by NUTS.

    Returns posterior means and sds of mu, tau and theta, and the divergence count.
    """
    y_array = jnp.asarray(y, dtype=jnp.float32)
    sigma_array = jnp.asarray(sigma, dtype=jnp.float32)
    if y_array.shape != sigma_array.shape or y_array.ndim != 1:
        raise InputError(
            f"y and sigma must be 1-d of one length, got {y_array.shape} and {sigma_array.shape}", field="y"
        )
    model = partial(
        fay_herriot_model, noise_known=True, tau_prior=TauPrior.HALF_CAUCHY, tau_scale=tau_scale, mu_scale=mu_scale
    )
    samples, divergences = _nuts(
        model,
        seed,
        num_samples,
        num_samples,
        num_chains,
        0.95,
        obs_scale=sigma_array,
        z=jnp.zeros((y_array.shape[0], 0)),
        mask=jnp.ones(y_array.shape[0], bool),
        dof=jnp.asarray(0.0),
        m=y_array,
    )
    return {
        "mu": (float(samples["mu"].mean()), float(samples["mu"].std())),
        "tau": (float(samples["tau"].mean()), float(samples["tau"].std())),
        "theta": (samples["v"].mean(axis=0).tolist(), samples["v"].std(axis=0).tolist()),
        "divergences": divergences,
    }


@dataclass(frozen=True, slots=True)
class Problem:
    """One learner's data in model units: padded arrays are built by :func:`fit_many`."""

    means: NDArray[np.float64]
    counts: NDArray[np.float64]
    features: NDArray[np.float64]
    residual_ss: float
    dof: int


def _problem(stats: SufficientStatistics, features: NDArray[np.float64]) -> Problem:
    scale = stats.scale if stats.scale > 0 else 1.0
    return Problem(
        stats.means / scale, stats.counts.astype(np.float64), features, stats.residual_ss / scale**2, stats.dof
    )


def _bucket(size: int) -> int:
    """Pad sizes to powers of two so compiled kernels are reused across calls."""
    return 1 << max(int(size) - 1, 0).bit_length()


@partial(jax.jit, static_argnames=("num_steps", "num_draws"))
def _svi_batch(
    keys: Any, obs_scale: Any, z: Any, mask: Any, dof: Any, m: Any, rss: Any, num_steps: int, num_draws: int
) -> Any:
    guide = AutoNormal(fay_herriot_model)
    optimizer = numpyro.optim.Adam(0.03)
    svi = SVI(fay_herriot_model, guide, optimizer, Trace_ELBO())

    def one(key: Any, obs_scale: Any, z: Any, mask: Any, dof: Any, m: Any, rss: Any) -> Any:
        fit_key, draw_key = jax.random.split(key)
        state = svi.init(fit_key, obs_scale, z, mask, dof, m, rss)
        state = jax.lax.fori_loop(0, num_steps, lambda _, s: svi.update(s, obs_scale, z, mask, dof, m, rss)[0], state)
        params = svi.get_params(state)
        draws = guide.sample_posterior(draw_key, params, sample_shape=(num_draws,))
        values = draws["u"] * draws["tau"][:, None]
        beta = jnp.zeros((num_draws, z.shape[-1]))
        if z.shape[-1]:
            beta = draws["b"] * draws["sigma_b"][:, None]
            values = values + beta @ z.T
        return values, draws["tau"], beta

    return jax.vmap(one)(keys, obs_scale, z, mask, dof, m, rss)


def fit_many(
    problems: Sequence[Problem], seed: int = 0, num_steps: int = 1500, num_draws: int = 1000
) -> list[NDArray[np.float64]]:
    """SVI on many independent problems in one compiled call: (draws, H_i) value samples each, model units."""
    return [values for values, _, _ in _svi_draws(problems, seed, num_steps, num_draws)]


def _svi_draws(
    problems: Sequence[Problem], seed: int, num_steps: int, num_draws: int
) -> list[tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]]:
    """Per problem: value draws (draws, H_i), tau draws (draws,), beta draws (draws, p_i)."""
    if not problems:
        return []
    size = _bucket(max(p.means.shape[0] for p in problems))
    width = max(p.features.shape[1] for p in problems)
    batch = _bucket(len(problems))
    obs_scale = np.ones((batch, size))
    z = np.zeros((batch, size, width))
    mask = np.zeros((batch, size), bool)
    m = np.zeros((batch, size))
    dof = np.zeros(batch)
    rss = np.ones(batch)
    for i, problem in enumerate(problems):
        h, p = problem.means.shape[0], problem.features.shape[1]
        obs_scale[i, :h] = 1.0 / np.sqrt(problem.counts)
        z[i, :h, :p] = problem.features
        mask[i, :h] = True
        m[i, :h] = problem.means
        dof[i] = problem.dof
        rss[i] = problem.residual_ss if problem.dof > 0 else 1.0
    keys = jax.random.split(jax.random.PRNGKey(seed), batch)
    values, tau, beta = (
        np.asarray(a, dtype=np.float64)
        for a in _svi_batch(keys, obs_scale, z, mask, dof, m, rss, num_steps=num_steps, num_draws=num_draws)
    )
    return [
        (values[i, :, : p.means.shape[0]], tau[i], beta[i, :, : p.features.shape[1]]) for i, p in enumerate(problems)
    ]


class BayesLearner:
    """Full-Bayes counterpart of :class:`memtrial.values.empirical.EmpiricalBayesLearner` (same fit/predict).

    Parameters
    ----------
    mode : "identity" or "content" ("auto" fits content, whose prior on sigma_b
        lets the data switch content off).
    features : mapping experience id -> embedding (d,).
    method : "nuts" (default) or "svi".
    """

    def __init__(
        self,
        mode: LearnerMode | str = LearnerMode.CONTENT,
        features: Mapping[Hashable, ArrayLike] | None = None,
        n_components: int | None = 8,
        method: str = "nuts",
        num_samples: int = 1000,
        seed: int = 0,
    ) -> None:
        self.mode = parse_choice(LearnerMode, mode, "mode")
        if method not in ("nuts", "svi"):
            raise ConfigError(f"method must be one of ['nuts', 'svi'], got {method!r}", field="method")
        self.method, self.num_samples, self.seed, self.n_components = method, num_samples, seed, n_components
        self.features = {key: np.asarray(value, dtype=np.float64) for key, value in (features or {}).items()}
        self.samples_: NDArray[np.float64] | None = None
        self.stats_: SufficientStatistics | None = None
        self._index: dict[Hashable, int] = {}
        self._content: dict[Hashable, NDArray[np.float64]] = {}
        self._beta: NDArray[np.float64] | None = None
        self._tau: NDArray[np.float64] | None = None
        self.divergences_ = 0
        self.statistics = RunningStatistics()
        self._stale = False

    @property
    def is_fitted(self) -> bool:
        self._refit()
        return self.samples_ is not None

    def update(self, date: Hashable, contributions: Mapping[Any, float]) -> BayesLearner:
        """Learn from one new date (running statistics; the model is refitted when next asked)."""
        if self.statistics.add_date(contributions):
            self._stale = True
        return self

    def _refit(self) -> None:
        if self._stale:
            self._stale = False
            self._fit_statistics(self.statistics.snapshot())

    def state_dict(self) -> dict[str, Any]:
        return {"statistics": self.statistics.to_dict(), "mode_scores": {}}

    def load_state_dict(self, data: Mapping[str, Any]) -> None:
        self.statistics = RunningStatistics.from_dict(data["statistics"])
        self._stale = True

    # -- the engine's learner interface (shared with EmpiricalBayesLearner) ----
    @property
    def selected_mode(self) -> LearnerMode:
        return self.mode

    @property
    def scores(self) -> dict[LearnerMode, list[float]]:
        return {LearnerMode.IDENTITY: [], LearnerMode.CONTENT: []}

    def record_score(self, mode: LearnerMode | str, score: float) -> None:
        """Prequential scores steer only the empirical learner's ``auto`` mode."""

    def predict_modes(self, experience_ids: Iterable[Hashable]) -> dict[LearnerMode, tuple[float, ...]]:
        return {self.mode: tuple(self.predict(e) for e in experience_ids)}

    def add_features(self, experience_id: Hashable, vector: ArrayLike, field: str = "features") -> None:
        """Set the embedding of one experience, checked as the empirical learner checks it."""
        self.features[experience_id] = checked_features(self.features, experience_id, vector, field)

    def remove_features(self, experience_id: Hashable) -> None:
        self.features.pop(experience_id, None)

    def count(self, experience_id: Hashable) -> int:
        if self.stats_ is None or experience_id not in self._index:
            return 0
        return int(self.stats_.counts[self._index[experience_id]])

    def _vectors(self) -> dict[Hashable, NDArray[np.float64]]:
        if self.mode is LearnerMode.IDENTITY or not self.features:
            return {}
        ids = list(self.features)
        z = content_features(np.array([self.features[i] for i in ids]), self.n_components)
        return dict(zip(ids, z, strict=True))

    def fit(self, records: Iterable[Record]) -> BayesLearner:
        frozen = tuple(r if isinstance(r, tuple) else (r.date, r.experience_id, r.contribution) for r in records)
        key = (
            self.mode,
            self.method,
            self.num_samples,
            self.seed,
            self.n_components,
            hash(tuple((k, v.tobytes()) for k, v in self.features.items())),
            hash(frozen),
        )
        cached = _FITS.get(key)
        if cached is not None and cached[0] == frozen:
            self.__dict__.update(cached[1])
            self._stale = False
            return self
        self._fit(frozen)
        _FITS[key] = (frozen, {name: self.__dict__[name] for name in _FITTED})
        while len(_FITS) > 16:
            _FITS.pop(next(iter(_FITS)))
        return self

    def _fit(self, records: Iterable[Record]) -> None:
        self.statistics = RunningStatistics.from_records(records)
        self._stale = False
        self._fit_statistics(self.statistics.snapshot())

    def _fit_statistics(self, stats: SufficientStatistics | None) -> None:
        self.stats_ = stats
        if stats is None or stats.scale <= 0:
            self.samples_ = None
            return
        self._content = self._vectors()
        problem = _problem(stats, stats.features(self._content))
        self._index = {e: i for i, e in enumerate(stats.experience_ids)}
        if self.method == "svi":
            values, tau, beta = _svi_draws([problem], self.seed, 1500, self.num_samples)[0]
            self.samples_, self._tau, self._beta = (
                values * stats.scale,
                tau * stats.scale,
                (beta * stats.scale if beta.shape[1] else None),
            )
            return
        samples, self.divergences_ = _nuts(
            fay_herriot_model,
            self.seed,
            self.num_samples,
            self.num_samples,
            1,
            0.9,
            obs_scale=jnp.asarray(1.0 / np.sqrt(problem.counts)),
            z=jnp.asarray(problem.features),
            mask=jnp.ones(problem.means.shape[0], bool),
            dof=jnp.asarray(float(problem.dof)),
            m=jnp.asarray(problem.means),
            rss=jnp.asarray(problem.residual_ss if problem.dof > 0 else 1.0),
        )
        self.samples_ = samples["v"] * stats.scale
        self._beta = samples["beta"] * stats.scale if "beta" in samples else None
        self._tau = samples["tau"] * stats.scale

    def posterior(self, experience_id: Hashable) -> BayesPosterior:
        """Mean, sd, 90% credible interval and P(v > 0) of one value (utility units)."""
        self._refit()
        if self.samples_ is None:
            raise LifecycleError("the learner has no centred records yet: fit it on dates with >= 2 experiences")
        row = self._index.get(experience_id)
        if row is not None:
            return _summary(self.samples_[:, [row]])[0]
        assert self._tau is not None
        draws = self._tau * np.random.default_rng(self.seed).standard_normal(self._tau.shape[0])
        z = self._content.get(experience_id)
        if z is not None and self._beta is not None:
            draws = draws + self._beta @ z
        return _summary(draws[:, None])[0]

    def predict(self, experience_id: Hashable) -> float:
        return self.posterior(experience_id).mean if self.is_fitted else 0.0

    def predictions(self, experience_ids: Sequence[Hashable]) -> list[float]:
        """:meth:`predict` of each of ``experience_ids`` (the engine reads a plan's or every experience's at once)."""
        return [self.predict(experience_id) for experience_id in experience_ids]

    def reported_posteriors(self, experience_ids: Iterable[Hashable]) -> list[BayesPosterior]:
        """:meth:`posterior` of each experience: the full-Bayes sd already holds the hyperparameters'
        uncertainty (what the empirical-Bayes learner's reported sd adds to its plug-in one)."""
        return [self.posterior(experience_id) for experience_id in experience_ids]

    @property
    def has_noise_scale(self) -> bool:
        """Whether the contributions learnt so far give a noise scale (some are not all 0)."""
        self._refit()
        return self.samples_ is not None and bool(np.any(self.samples_ != 0.0))
