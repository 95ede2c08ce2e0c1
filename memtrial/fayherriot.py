"""Empirical-Bayes Fay–Herriot fit on per-experience sufficient statistics.

Model, in units of the contribution noise scale s (SPEC 4.4):

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

:func:`fit_many` fits a batch of independent problems of one size (a
backtest's successive dates) in one pass. Each problem goes through exactly
the arithmetic it would alone (reductions run per problem, linear algebra per
matrix), so :func:`fit_fay_herriot`, which is ``fit_many`` on one problem,
gives bit-identical results.

The posterior mean is formed as ``tau2 V^-1 m + Z beta`` (with
``beta = sigma_b2 Z' V^-1 m``), which is exact: with tau2 = sigma_b2 = 0 every
value is exactly 0, not rounding noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memtrial.errors import InputError

__all__ = ["VARIANCE_GRID", "FayHerriotBatch", "FayHerriotFit", "fit_fay_herriot", "fit_many", "log_likelihood_table", "posterior"]

#: {0} and 13 log-spaced points from 1e-6 to 1e2, for both sigma_b2 and tau2.
VARIANCE_GRID: NDArray[np.float64] = np.concatenate([[0.0], np.logspace(-6.0, 2.0, 13)])

_LOG_2PI = float(np.log(2.0 * np.pi))


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


def _check(m: NDArray[np.float64], n: NDArray[np.float64], features: NDArray[np.float64]) -> None:
    if m.ndim != 2 or n.shape != m.shape:
        raise InputError(f"m and n must have one shape (B, H), got {m.shape} and {n.shape}", field="m")
    if not np.all(n > 0):
        raise InputError("every count n must be > 0", field="n")
    if features.ndim != 3 or features.shape[:2] != m.shape:
        raise InputError(f"features must have shape {m.shape + ('p',)}, got {features.shape}", field="features")


def _as_batch(
    m: NDArray[np.float64], n: NDArray[np.float64], features: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    m = np.asarray(m, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    features = np.asarray(features, dtype=np.float64)
    if features.ndim == 2 and m.ndim == 2:
        features = np.broadcast_to(features, (m.shape[0], *features.shape))
    _check(m, n, features)
    return m, n, features


def _tables(m: NDArray[np.float64], n: NDArray[np.float64], features: NDArray[np.float64], sigma_grid: NDArray[np.float64], tau_grid: NDArray[np.float64]) -> NDArray[np.float64]:
    """Log marginal likelihood of each problem for every (sigma_b2, tau2): (B, S, T)."""
    n_problems, n_experiences, n_features = features.shape
    d = tau_grid[None, :, None] + 1.0 / n[:, None, :]  # (B, T, H)
    d_inv = 1.0 / d
    log_det_d = np.log(d).sum(axis=2)  # (B, T)
    quad_d = (d_inv * (m * m)[:, None, :]).sum(axis=2)
    base = -0.5 * (log_det_d + quad_d + n_experiences * _LOG_2PI)
    table = np.broadcast_to(base[:, None, :], (n_problems, sigma_grid.size, tau_grid.size)).copy()
    positive = sigma_grid > 0.0
    if n_features == 0 or not positive.any():
        return table
    weighted = d_inv[:, :, :, None] * features[:, None, :, :]  # (B, T, H, p)
    gram = np.matmul(weighted.transpose(0, 1, 3, 2), features[:, None, :, :])  # (B, T, p, p)
    cross = np.matmul((d_inv * m[:, None, :])[:, :, None, :], features[:, None, :, :])[:, :, 0, :]  # (B, T, p)
    eigenvalues, vectors = np.linalg.eigh(gram)
    eigenvalues = np.maximum(eigenvalues, 0.0)
    projected = np.matmul(cross[:, :, None, :], vectors)[:, :, 0, :]  # (B, T, p): Q' Z' D^-1 m
    sigma = sigma_grid[positive][None, :, None, None]  # (1, S+, 1, 1)
    quad = quad_d[:, None, :] - (projected[:, None, :, :] ** 2 / (1.0 / sigma + eigenvalues[:, None, :, :])).sum(axis=3)
    log_det = log_det_d[:, None, :] + np.log1p(sigma * eigenvalues[:, None, :, :]).sum(axis=3)
    table[:, positive] = -0.5 * (log_det + quad + n_experiences * _LOG_2PI)
    return table


def log_likelihood_table(
    m: NDArray[np.float64],
    n: NDArray[np.float64],
    features: NDArray[np.float64],
    sigma_grid: NDArray[np.float64],
    tau_grid: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Log marginal likelihood of m for every (sigma_b2, tau2), shape (S, T)."""
    batch_m, batch_n, batch_z = _as_batch(np.asarray(m)[None], np.asarray(n)[None], np.asarray(features, dtype=np.float64)[None])
    return np.asarray(_tables(batch_m, batch_n, batch_z, np.asarray(sigma_grid, dtype=np.float64), np.asarray(tau_grid, dtype=np.float64))[0])


def _posteriors(
    m: NDArray[np.float64], n: NDArray[np.float64], features: NDArray[np.float64], sigma_b2: NDArray[np.float64], tau2: NDArray[np.float64], log_likelihood: NDArray[np.float64]
) -> FayHerriotBatch:
    """Posterior of v and beta of each problem at its own hyperparameters."""
    n_problems, _, n_features = features.shape
    d_inv = 1.0 / (tau2[:, None] + 1.0 / n)  # (B, H)
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
    variance = np.maximum(noise - noise**2 * v_inv_diag, 0.0)
    return FayHerriotBatch(sigma_b2, tau2, log_likelihood, fitted, variance, beta, beta_cov)


def fit_many(
    m: NDArray[np.float64],
    n: NDArray[np.float64],
    features: NDArray[np.float64],
    sigma_grid: NDArray[np.float64] = VARIANCE_GRID,
    tau_grid: NDArray[np.float64] = VARIANCE_GRID,
) -> FayHerriotBatch:
    """Fit B independent problems with the same number of experiences.

    m, n: (B, H); features: (B, H, p), or (H, p) shared by every problem.
    Each problem is fitted exactly as :func:`fit_fay_herriot` fits it alone.
    """
    m, n, features = _as_batch(m, n, features)
    if features.shape[2] == 0:
        sigma_grid = np.zeros(1)
    table = _tables(m, n, features, np.asarray(sigma_grid, dtype=np.float64), np.asarray(tau_grid, dtype=np.float64))
    flat = table.reshape(table.shape[0], -1).argmax(axis=1)
    rows, columns = np.unravel_index(flat, table.shape[1:])
    best = table.reshape(table.shape[0], -1)[np.arange(table.shape[0]), flat]
    return _posteriors(m, n, features, np.asarray(sigma_grid)[rows].astype(np.float64), np.asarray(tau_grid)[columns].astype(np.float64), best)


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
    return fit_many(np.asarray(m)[None], np.asarray(n)[None], np.asarray(features, dtype=np.float64)[None], sigma_grid, tau_grid)[0]


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
    batch_m, batch_n, batch_z = _as_batch(np.asarray(m)[None], np.asarray(n)[None], np.asarray(features, dtype=np.float64)[None])
    return _posteriors(batch_m, batch_n, batch_z, np.array([float(sigma_b2)]), np.array([float(tau2)]), np.array([float(log_likelihood)]))[0]
