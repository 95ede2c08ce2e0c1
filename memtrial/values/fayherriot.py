"""Empirical-Bayes Fay–Herriot fit on per-experience sufficient statistics.

Model, in units of the contribution noise scale s (method 4.4):

    m_h = v_h + e_h,        e_h ~ N(0, 1 / n_h)
    v_h = z_h' beta + u_h,  beta ~ N(0, sigma_b2 I),  u_h ~ N(0, tau2)

so ``m ~ N(0, V)`` with ``V = sigma_b2 Z Z' + diag(tau2 + 1/n)``.
(sigma_b2, tau2) maximise the Gaussian marginal likelihood over a grid.

Everything uses the low-rank structure of V. For each tau2 let
``D = diag(tau2 + 1/n)`` and ``G = Z' D^-1 Z = Q diag(lam) Q'`` (one batched
eigendecomposition over the tau2 grid, p x p each). Then for every sigma_b2 at
once, by the matrix determinant lemma and Woodbury,

    log det V  = log det D + sum_j log(1 + sigma_b2 lam_j)
    m' V^-1 m  = m' D^-1 m - sum_j (Q' Z' D^-1 m)_j**2 / (1/sigma_b2 + lam_j)

so the whole (sigma_b2, tau2) table costs O(T H p^2 + S T p) for H
experiences, p <= 8 features, T tau2 values and S sigma_b2 values.

:func:`fit_many` fits a batch of independent problems (a backtest's
successive dates, several learners' states) in one pass. Each problem goes
through exactly the arithmetic it would alone, so :func:`fit_fay_herriot`,
which is ``fit_many`` on one problem, gives bit-identical results:

- a problem of H experiences is always computed on :func:`width` (H) rows,
  the rows past H masked out (counts 1, values and features 0, excluded from
  every sum), so sums over experiences run over the same length whatever
  batch the problem is in; reductions run per problem, linear algebra per
  matrix;
- problems with the same counts and features (learners of one calendar that
  differ only in what they learn from) share the eigendecomposition of
  ``Z' D^-1 Z``, which depends on nothing else.

The posterior mean is formed as ``tau2 V^-1 m + Z beta`` (with
``beta = sigma_b2 Z' V^-1 m``), which is exact: with tau2 = sigma_b2 = 0 every
value is exactly 0, not rounding noise.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from memtrial.errors import InputError

__all__ = [
    "VARIANCE_GRID",
    "FayHerriotBatch",
    "FayHerriotFit",
    "SpectraCache",
    "fit_fay_herriot",
    "fit_many",
    "log_likelihood_table",
    "posterior",
    "stack_problems",
    "width",
]

#: {0} and 13 log-spaced points from 1e-6 to 1e2, for both sigma_b2 and tau2.
VARIANCE_GRID: NDArray[np.float64] = np.concatenate([[0.0], np.logspace(-6.0, 2.0, 13)])

_LOG_2PI = float(np.log(2.0 * np.pi))
_WIDTH_STEP = 16


@dataclass(frozen=True, slots=True)
class FayHerriotFit:
    """A fitted model, in units of s (multiply means by s, variances by s**2).

    mean, variance: (H,) posterior of v for the fitted experiences.
    beta, beta_cov: (p,) and (p, p) posterior of the feature coefficients.
    """

    sigma_b2: float
    tau2: float
    log_likelihood: float
    mean: NDArray[np.float64]
    variance: NDArray[np.float64]
    beta: NDArray[np.float64]
    beta_cov: NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class FayHerriotBatch:
    """B fitted problems of one size: sigma_b2, tau2, log_likelihood (B,); mean, variance (B, H);
    beta (B, p); beta_cov (B, p, p)."""

    sigma_b2: NDArray[np.float64]
    tau2: NDArray[np.float64]
    log_likelihood: NDArray[np.float64]
    mean: NDArray[np.float64]
    variance: NDArray[np.float64]
    beta: NDArray[np.float64]
    beta_cov: NDArray[np.float64]

    def __getitem__(self, index: int) -> FayHerriotFit:
        return FayHerriotFit(
            float(self.sigma_b2[index]),
            float(self.tau2[index]),
            float(self.log_likelihood[index]),
            self.mean[index],
            self.variance[index],
            self.beta[index],
            self.beta_cov[index],
        )

    def fit(self, index: int, size: int) -> FayHerriotFit:
        """Problem ``index``'s fit on its first ``size`` experiences (a batch holds every problem on its widest)."""
        fit = self[index]
        return replace(fit, mean=fit.mean[:size], variance=fit.variance[:size])


def stack_problems(
    problems: Sequence[tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]], n_features: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Problems of several sizes, each (m, n, z) with m, n (H,) and z (H, p), as :func:`fit_many` takes them:
    (m, n, z, sizes), each problem on the first rows, m = 0, n = 1 and z = 0 past its size."""
    sizes = np.array([len(m) for m, _, _ in problems], dtype=np.int64)
    columns = int(sizes.max()) if sizes.size else 0
    m, n, z = (
        np.zeros((len(problems), columns)),
        np.ones((len(problems), columns)),
        np.zeros((len(problems), columns, n_features)),
    )
    for row, ((values, counts, features), size) in enumerate(zip(problems, sizes.tolist(), strict=True)):
        m[row, :size], n[row, :size], z[row, :size] = values, counts, features
    return m, n, z, sizes


def _check(
    m: NDArray[np.float64], n: NDArray[np.float64], features: NDArray[np.float64], sizes: NDArray[np.int64] | None
) -> None:
    if m.ndim != 2 or n.shape != m.shape:
        raise InputError(f"m and n must have one shape (B, H), got {m.shape} and {n.shape}", field="m")
    if sizes is not None and (
        np.shape(sizes) != m.shape[:1] or np.any(np.asarray(sizes) < 0) or np.any(np.asarray(sizes) > m.shape[1])
    ):
        raise InputError(f"sizes must be ({m.shape[0]},) integers in [0, {m.shape[1]}]", field="sizes")
    live = (
        np.ones(m.shape, dtype=bool) if sizes is None else np.arange(m.shape[1])[None, :] < np.asarray(sizes)[:, None]
    )
    if not np.all(n[live] > 0):
        raise InputError("every count n must be > 0", field="n")
    if features.ndim != 3 or features.shape[:2] != m.shape:
        raise InputError(f"features must have shape {m.shape + ('p',)}, got {features.shape}", field="features")


def _as_batch(
    m: NDArray[np.float64],
    n: NDArray[np.float64],
    features: NDArray[np.float64],
    sizes: NDArray[np.int64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    m = np.asarray(m, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    features = np.asarray(features, dtype=np.float64)
    if features.ndim == 2 and m.ndim == 2:
        features = np.broadcast_to(features, (m.shape[0], *features.shape))
    _check(m, n, features, sizes)
    return m, n, features


def width(size: int) -> int:
    """The number of rows a problem of ``size`` experiences is computed on: ``size`` rounded up to a
    multiple of 16. Reductions over experiences depend on the length they run over, so a problem
    is always computed at this width, alone or in a batch of others of any size."""
    return max(_WIDTH_STEP, -(-size // _WIDTH_STEP) * _WIDTH_STEP)


def _padded(
    m: NDArray[np.float64],
    n: NDArray[np.float64],
    features: NDArray[np.float64],
    sizes: NDArray[np.int64],
    columns: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Problems on ``columns`` rows: rows past a problem's size hold m = 0, n = 1, z = 0 and are masked out."""
    count, held = m.shape
    live = np.arange(columns)[None, :] < sizes[:, None]
    if held == columns and live.all():  # nothing to pad
        return m, n, features, live
    out_m, out_n = np.zeros((count, columns)), np.ones((count, columns))
    out_z = np.zeros((count, columns, features.shape[2]))
    kept = min(held, columns)
    out_m[:, :kept], out_n[:, :kept], out_z[:, :kept] = m[:, :kept], n[:, :kept], features[:, :kept]
    out_m[~live], out_n[~live], out_z[~live] = 0.0, 1.0, 0.0
    return out_m, out_n, out_z, live


def _inverse_d(
    n: NDArray[np.float64], live: NDArray[np.bool_], tau: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """D^-1 and log D for every tau (leading axes of ``tau`` broadcast against n's), 0 on masked rows."""
    d = tau + 1.0 / n
    inverse, log_d = 1.0 / d, np.log(d)
    if not live.all():
        masked = np.broadcast_to(~live, inverse.shape)
        inverse[masked], log_d[masked] = 0.0, 0.0
    return inverse, log_d


class SpectraCache:
    """Eigendecompositions of ``Z' D^-1 Z`` by problem (counts, features, tau grid), least recently
    used dropped past ``size``: worlds that share a calendar (one PlantedMem world under several
    investors) share their learners' counts and features, hence these. A cached entry is the
    very result the computation gives, so fits are identical with or without a cache."""

    def __init__(self, size: int = 8192) -> None:
        self.size = size
        self.entries: OrderedDict[bytes, tuple[NDArray[np.float64], NDArray[np.float64]]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: bytes) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
        entry = self.entries.get(key)
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
            self.entries.move_to_end(key)
        return entry

    def put(self, key: bytes, entry: tuple[NDArray[np.float64], NDArray[np.float64]]) -> None:
        self.entries[key] = entry
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


def _spectra(
    features: NDArray[np.float64],
    distinct: NDArray[np.int64],
    problem_keys: Mapping[int, bytes],
    d_inv: NDArray[np.float64],
    tau_grid: NDArray[np.float64],
    cache: SpectraCache | None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Eigenvalues (clipped at 0) and eigenvectors of Z' D^-1 Z for every tau, per distinct problem:
    (U, T, p) and (U, T, p, p). ``problem_keys``: each distinct problem's (n, z, mask) bytes (read with a cache)."""
    keys = [problem_keys[b] + tau_grid.tobytes() for b in distinct.tolist()] if cache is not None else []
    found = [cache.get(key) for key in keys] if cache is not None else [None] * distinct.size
    missing = np.array([row for row, entry in enumerate(found) if entry is None], dtype=np.int64)
    p = features.shape[2]
    eigenvalues, vectors = np.empty((distinct.size, tau_grid.size, p)), np.empty((distinct.size, tau_grid.size, p, p))
    if missing.size:
        if missing.size == features.shape[0]:  # every problem, each distinct: no copies
            inverse, z = d_inv, features
        else:
            inverse, z = d_inv[missing], features[distinct[missing]]
        weighted = inverse[:, :, :, None] * z[:, None, :, :]  # (M, T, H, p)
        gram = np.matmul(weighted.transpose(0, 1, 3, 2), z[:, None, :, :])  # (M, T, p, p)
        values, vecs = np.linalg.eigh(gram)
        if missing.size == distinct.size:
            eigenvalues, vectors = np.maximum(values, 0.0), vecs
        else:
            eigenvalues[missing], vectors[missing] = np.maximum(values, 0.0), vecs
        if cache is not None:
            for row in missing.tolist():
                cache.put(keys[row], (eigenvalues[row].copy(), vectors[row].copy()))
    for row, entry in enumerate(found):
        if entry is not None:
            eigenvalues[row], vectors[row] = entry
    return eigenvalues, vectors


def _tables(
    m: NDArray[np.float64],
    n: NDArray[np.float64],
    features: NDArray[np.float64],
    live: NDArray[np.bool_],
    sigma_grid: NDArray[np.float64],
    tau_grid: NDArray[np.float64],
    cache: SpectraCache | None = None,
) -> NDArray[np.float64]:
    """Log marginal likelihood of each problem for every (sigma_b2, tau2): (B, S, T)."""
    n_problems, _, n_features = features.shape
    sizes = live.sum(axis=1)
    # D, log det D, Z' D^-1 Z and its eigendecomposition depend on (n, z) only: computed once per
    # distinct problem (learners of one calendar that differ only in what they learn from share them)
    # a problem's key: the bytes of its n, z and mask, one row of ``packed``
    packed = np.concatenate(
        [
            np.ascontiguousarray(part).view(np.uint8).reshape(n_problems, -1)
            for part in (n, features.reshape(n_problems, -1), live)
        ],
        axis=1,
    )
    if n_problems == 1:
        distinct = row_of = np.zeros(1, dtype=np.int64)
    else:
        # the first problem with the same bytes (a stable sort keeps each key's first problem first)
        _, first_with, key_of = np.unique(
            packed.view(np.dtype((np.void, packed.shape[1]))).ravel(), return_index=True, return_inverse=True
        )
        first = first_with[key_of.ravel()]
        distinct = np.unique(first)
        row_of = np.searchsorted(distinct, first)
    problem_keys = {b: packed[b].tobytes() for b in distinct.tolist()} if cache is not None else {}
    everyone = distinct.size == n_problems  # then row_of is 0, 1, ..., B - 1
    shared_d_inv, shared_log_d = _inverse_d(
        n[distinct, None, :], live[distinct, None, :], tau_grid[None, :, None]
    )  # (U, T, H)
    d_inv = shared_d_inv if everyone else shared_d_inv[row_of]  # (B, T, H)
    log_det_d = shared_log_d.sum(axis=2)[row_of]  # (B, T)
    quad_d = (d_inv * (m * m)[:, None, :]).sum(axis=2)
    constant = (sizes * _LOG_2PI)[:, None]
    base = -0.5 * (log_det_d + quad_d + constant)
    table = np.broadcast_to(base[:, None, :], (n_problems, sigma_grid.size, tau_grid.size)).copy()
    positive = sigma_grid > 0.0
    if n_features == 0 or not positive.any():
        return table
    eigenvalues, vectors = _spectra(features, distinct, problem_keys, shared_d_inv, tau_grid, cache)
    sigma = sigma_grid[positive][None, :, None]  # (1, S+, 1)
    cross = np.matmul((d_inv * m[:, None, :])[:, :, None, :], features[:, None, :, :])[:, :, 0, :]  # (B, T, p)
    projected = np.matmul(cross[:, :, None, :], vectors[row_of])[:, :, 0, :]  # (B, T, p): Q' Z' D^-1 m
    # sums over the p eigenpairs, one term after another on (problems, S+, T) slabs
    log_det_gain = np.zeros((distinct.size, sigma.shape[1], tau_grid.size))
    quad_gain = np.zeros((n_problems, sigma.shape[1], tau_grid.size))
    per_problem = eigenvalues[row_of]
    for j in range(n_features):
        log_det_gain += np.log1p(sigma * eigenvalues[:, None, :, j])
        quad_gain += projected[:, None, :, j] ** 2 / (1.0 / sigma + per_problem[:, None, :, j])
    log_det = log_det_d[:, None, :] + log_det_gain[row_of]
    quad = quad_d[:, None, :] - quad_gain
    table[:, positive] = -0.5 * (log_det + quad + constant[:, :, None])
    return table


def log_likelihood_table(
    m: NDArray[np.float64],
    n: NDArray[np.float64],
    features: NDArray[np.float64],
    sigma_grid: NDArray[np.float64],
    tau_grid: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Log marginal likelihood of m for every (sigma_b2, tau2), shape (S, T)."""
    batch_m, batch_n, batch_z = _as_batch(
        np.asarray(m)[None], np.asarray(n)[None], np.asarray(features, dtype=np.float64)[None]
    )
    size = batch_m.shape[1]
    padded = _padded(batch_m, batch_n, batch_z, np.array([size]), width(size))
    return np.asarray(
        _tables(*padded, np.asarray(sigma_grid, dtype=np.float64), np.asarray(tau_grid, dtype=np.float64))[0]
    )


def _posteriors(
    m: NDArray[np.float64],
    n: NDArray[np.float64],
    features: NDArray[np.float64],
    live: NDArray[np.bool_],
    sigma_b2: NDArray[np.float64],
    tau2: NDArray[np.float64],
    log_likelihood: NDArray[np.float64],
) -> FayHerriotBatch:
    """Posterior of v and beta of each problem at its own hyperparameters (0 on masked rows)."""
    n_problems, _, n_features = features.shape
    d_inv = 1.0 / (tau2[:, None] + 1.0 / n)  # (B, H)
    if not live.all():
        d_inv[~live] = 0.0
    v_inv_m = d_inv * m
    v_inv_diag = d_inv.copy()
    beta = np.zeros((n_problems, n_features))
    beta_cov = np.zeros((n_problems, n_features, n_features))
    fitted = tau2[:, None] * v_inv_m
    content = (sigma_b2 > 0.0) & (n_features > 0)
    if content.any():
        rows = np.flatnonzero(content)
        z, w, s2 = features[rows], d_inv[rows], sigma_b2[rows]
        weighted = z * w[:, :, None]  # (b, H, p)
        gram = np.matmul(z.transpose(0, 2, 1), weighted)  # (b, p, p)
        kernel_inv = np.linalg.inv(np.eye(n_features)[None] / s2[:, None, None] + gram)
        projected = np.matmul(weighted.transpose(0, 2, 1), m[rows][:, :, None])  # (b, p, 1)
        corrected = v_inv_m[rows] - np.matmul(weighted, np.matmul(kernel_inv, projected))[:, :, 0]
        v_inv_m[rows] = corrected
        v_inv_diag[rows] = v_inv_diag[rows] - (np.matmul(weighted, kernel_inv) * weighted).sum(axis=2)
        beta[rows] = s2[:, None] * np.matmul(z.transpose(0, 2, 1), corrected[:, :, None])[:, :, 0]
        z_v_inv_z = gram - np.matmul(np.matmul(gram, kernel_inv), gram)
        beta_cov[rows] = s2[:, None, None] * np.eye(n_features)[None] - (s2**2)[:, None, None] * z_v_inv_z
        fitted[rows] = tau2[rows][:, None] * corrected + np.matmul(z, beta[rows][:, :, None])[:, :, 0]
    noise = 1.0 / n
    variance = np.where(live, np.maximum(noise - noise**2 * v_inv_diag, 0.0), 0.0)
    return FayHerriotBatch(sigma_b2, tau2, log_likelihood, fitted, variance, beta, beta_cov)


def fit_many(
    m: NDArray[np.float64],
    n: NDArray[np.float64],
    features: NDArray[np.float64],
    sigma_grid: NDArray[np.float64] = VARIANCE_GRID,
    tau_grid: NDArray[np.float64] = VARIANCE_GRID,
    sizes: NDArray[np.int64] | None = None,
    cache: SpectraCache | None = None,
) -> FayHerriotBatch:
    """Fit B independent problems at once.

    m, n: (B, H); features: (B, H, p), or (H, p) shared by every problem.
    sizes: (B,) the number of experiences of each problem (its first rows;
    the rest is ignored); default H for all. The result has H columns, 0 past
    a problem's size. Each problem is fitted exactly as :func:`fit_fay_herriot`
    fits it alone: problems are computed in groups of one :func:`width`, and
    problems with equal counts and features share one eigendecomposition
    (kept across calls in ``cache`` when one is given).
    """
    m, n, features = _as_batch(m, n, features, sizes)
    count, held = m.shape
    sizes = np.full(count, held, dtype=np.int64) if sizes is None else np.asarray(sizes, dtype=np.int64)
    if features.shape[2] == 0:
        sigma_grid = np.zeros(1)
    sigma_grid, tau_grid = np.asarray(sigma_grid, dtype=np.float64), np.asarray(tau_grid, dtype=np.float64)
    p = features.shape[2]
    out = FayHerriotBatch(
        np.zeros(count),
        np.zeros(count),
        np.zeros(count),
        np.zeros((count, held)),
        np.zeros((count, held)),
        np.zeros((count, p)),
        np.zeros((count, p, p)),
    )
    widths = np.array([width(int(size)) for size in sizes], dtype=np.int64)
    for columns in np.unique(widths):
        rows = np.flatnonzero(widths == columns)
        padded_m, padded_n, padded_z, live = _padded(m[rows], n[rows], features[rows], sizes[rows], int(columns))
        table = _tables(padded_m, padded_n, padded_z, live, sigma_grid, tau_grid, cache)
        flat = table.reshape(table.shape[0], -1).argmax(axis=1)
        best_sigma, best_tau = np.unravel_index(flat, table.shape[1:])
        best = table.reshape(table.shape[0], -1)[np.arange(table.shape[0]), flat]
        batch = _posteriors(padded_m, padded_n, padded_z, live, sigma_grid[best_sigma], tau_grid[best_tau], best)
        kept = min(held, int(columns))
        out.sigma_b2[rows], out.tau2[rows], out.log_likelihood[rows] = batch.sigma_b2, batch.tau2, batch.log_likelihood
        out.mean[rows, :kept], out.variance[rows, :kept] = batch.mean[:, :kept], batch.variance[:, :kept]
        out.beta[rows], out.beta_cov[rows] = batch.beta, batch.beta_cov
    return out


def fit_fay_herriot(
    m: NDArray[np.float64],
    n: NDArray[np.float64],
    features: NDArray[np.float64],
    sigma_grid: NDArray[np.float64] = VARIANCE_GRID,
    tau_grid: NDArray[np.float64] = VARIANCE_GRID,
) -> FayHerriotFit:
    """Choose (sigma_b2, tau2) by marginal likelihood and return the posterior.

    m: (H,) mean centred contribution per experience, in units of s.
    n: (H,) number of records per experience.
    features: (H, p) content features (p may be 0). Without features only
    sigma_b2 = 0 is considered.
    Ties go to the first grid pair (smaller sigma_b2, then smaller tau2).
    """
    return fit_many(
        np.asarray(m)[None], np.asarray(n)[None], np.asarray(features, dtype=np.float64)[None], sigma_grid, tau_grid
    )[0]


def posterior(
    m: NDArray[np.float64],
    n: NDArray[np.float64],
    features: NDArray[np.float64],
    sigma_b2: float,
    tau2: float,
    log_likelihood: float = float("nan"),
) -> FayHerriotFit:
    """Posterior of v and beta at fixed hyperparameters (all in units of s).

    mean = tau2 V^-1 m + Z beta, beta = sigma_b2 Z' V^-1 m; variance is the
    diagonal of diag(1/n) - diag(1/n) V^-1 diag(1/n).
    """
    batch_m, batch_n, batch_z = _as_batch(
        np.asarray(m)[None], np.asarray(n)[None], np.asarray(features, dtype=np.float64)[None]
    )
    size = batch_m.shape[1]
    padded_m, padded_n, padded_z, live = _padded(batch_m, batch_n, batch_z, np.array([size]), width(size))
    fit = _posteriors(
        padded_m,
        padded_n,
        padded_z,
        live,
        np.array([float(sigma_b2)]),
        np.array([float(tau2)]),
        np.array([float(log_likelihood)]),
    )[0]
    return FayHerriotFit(
        fit.sigma_b2, fit.tau2, fit.log_likelihood, fit.mean[:size], fit.variance[:size], fit.beta, fit.beta_cov
    )
