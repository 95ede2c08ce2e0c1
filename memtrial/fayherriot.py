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

The posterior mean is formed as ``tau2 V^-1 m + Z beta`` (with
``beta = sigma_b2 Z' V^-1 m``), which is exact: with tau2 = sigma_b2 = 0 every
value is exactly 0, not rounding noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memtrial.errors import InputError

__all__ = ["VARIANCE_GRID", "FayHerriotFit", "fit_fay_herriot", "log_likelihood_table", "posterior"]

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


def _check(m: NDArray[np.float64], n: NDArray[np.float64], features: NDArray[np.float64]) -> None:
    if m.ndim != 1 or n.shape != m.shape:
        raise InputError(f"m and n must be 1-d of one length, got {m.shape} and {n.shape}", field="m")
    if not np.all(n > 0):
        raise InputError("every count n must be > 0", field="n")
    if features.ndim != 2 or features.shape[0] != m.shape[0]:
        raise InputError(f"features must have shape ({m.shape[0]}, p), got {features.shape}", field="features")


def log_likelihood_table(
    m: NDArray[np.float64],
    n: NDArray[np.float64],
    features: NDArray[np.float64],
    sigma_grid: NDArray[np.float64],
    tau_grid: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Log marginal likelihood of m for every (sigma_b2, tau2), shape (S, T)."""
    _check(m, n, features)
    n_experiences, n_features = features.shape
    d = tau_grid[:, None] + 1.0 / n[None, :]
    d_inv = 1.0 / d
    log_det_d = np.log(d).sum(axis=1)
    quad_d = (d_inv * (m * m)[None, :]).sum(axis=1)
    base = -0.5 * (log_det_d + quad_d + n_experiences * _LOG_2PI)
    table = np.broadcast_to(base, (sigma_grid.size, tau_grid.size)).copy()
    positive = sigma_grid > 0.0
    if n_features == 0 or not positive.any():
        return table
    weighted = d_inv[:, :, None] * features[None, :, :]  # (T, H, p)
    gram = np.matmul(weighted.transpose(0, 2, 1), features)  # (T, p, p)
    cross = (d_inv * m[None, :]) @ features  # (T, p)
    eigenvalues, vectors = np.linalg.eigh(gram)
    eigenvalues = np.maximum(eigenvalues, 0.0)
    projected = np.matmul(cross[:, None, :], vectors)[:, 0, :]  # (T, p): Q' Z' D^-1 m
    sigma = sigma_grid[positive][:, None, None]  # (S+, 1, 1)
    quad = quad_d[None, :] - (projected[None, :, :] ** 2 / (1.0 / sigma + eigenvalues[None, :, :])).sum(axis=2)
    log_det = log_det_d[None, :] + np.log1p(sigma * eigenvalues[None, :, :]).sum(axis=2)
    table[positive] = -0.5 * (log_det + quad + n_experiences * _LOG_2PI)
    return table


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
    m = np.asarray(m, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    features = np.asarray(features, dtype=np.float64)
    if features.shape[1] == 0:
        sigma_grid = np.zeros(1)
    table = log_likelihood_table(m, n, features, sigma_grid, tau_grid)
    row, column = np.unravel_index(int(np.argmax(table)), table.shape)
    return posterior(m, n, features, float(sigma_grid[row]), float(tau_grid[column]), float(table[row, column]))


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
    _check(m, n, features)
    n_features = features.shape[1]
    d_inv = 1.0 / (tau2 + 1.0 / n)
    v_inv_m = d_inv * m
    v_inv_diag = d_inv.copy()
    beta = np.zeros(n_features)
    beta_cov = np.zeros((n_features, n_features))
    fitted = tau2 * v_inv_m
    if sigma_b2 > 0.0 and n_features:
        weighted = features * d_inv[:, None]
        gram = features.T @ weighted
        kernel_inv = np.linalg.inv(np.eye(n_features) / sigma_b2 + gram)
        v_inv_m = v_inv_m - weighted @ (kernel_inv @ (weighted.T @ m))
        v_inv_diag = v_inv_diag - ((weighted @ kernel_inv) * weighted).sum(axis=1)
        beta = sigma_b2 * (features.T @ v_inv_m)
        z_v_inv_z = gram - gram @ kernel_inv @ gram
        beta_cov = sigma_b2 * np.eye(n_features) - sigma_b2**2 * z_v_inv_z
        fitted = tau2 * v_inv_m + features @ beta
    noise = 1.0 / n
    variance = np.maximum(noise - noise**2 * v_inv_diag, 0.0)
    return FayHerriotFit(
        sigma_b2=sigma_b2,
        tau2=tau2,
        log_likelihood=log_likelihood,
        mean=fitted,
        variance=variance,
        beta=beta,
        beta_cov=beta_cov,
    )
