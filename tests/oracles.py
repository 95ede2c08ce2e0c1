"""Straightforward reference implementations that the fast paths are checked against."""

import numpy as np

from memtrial.values.fayherriot import VARIANCE_GRID


def dense_oracle(m, n, z):
    """The model written the straightforward way: a dense H x H solve per grid point."""
    n_experiences, n_features = z.shape
    sigma_grid = VARIANCE_GRID if n_features else np.zeros(1)
    table = np.empty((sigma_grid.size, VARIANCE_GRID.size))
    for i, sigma_b2 in enumerate(sigma_grid):
        for j, tau2 in enumerate(VARIANCE_GRID):
            v = sigma_b2 * z @ z.T + np.diag(tau2 + 1 / n)
            _, log_det = np.linalg.slogdet(v)
            table[i, j] = -0.5 * (log_det + m @ np.linalg.solve(v, m) + n_experiences * np.log(2 * np.pi))
    i, j = np.unravel_index(np.argmax(table), table.shape)
    sigma_b2, tau2 = sigma_grid[i], VARIANCE_GRID[j]
    v = sigma_b2 * z @ z.T + np.diag(tau2 + 1 / n)
    prior = sigma_b2 * z @ z.T + tau2 * np.eye(n_experiences)
    mean = prior @ np.linalg.solve(v, m)
    covariance = prior - prior @ np.linalg.solve(v, prior)
    beta = sigma_b2 * z.T @ np.linalg.solve(v, m)
    return table, sigma_b2, tau2, mean, np.diag(covariance), beta


def simulate(rng, n_experiences=40, n_dates=300, noise=0.02, spread=0.01):
    """Planted values, four experiences a date, a shared market move per date and draft noise."""
    truth = rng.normal(0, spread, size=n_experiences)
    records = []
    for t in range(n_dates):
        market = rng.normal(0, 0.05)
        for h in rng.choice(n_experiences, 4, replace=False):
            records.append((t, int(h), truth[h] + market + rng.normal(0, noise)))
    return truth, records


def solve_likelihood_table(m, n, features, sigma_grid, tau_grid):
    """The likelihood table with one p x p solve per (sigma_b2, tau2) (the previous implementation)."""
    n_experiences, n_features = features.shape
    d = tau_grid[:, None] + 1.0 / n[None, :]
    d_inv = 1.0 / d
    log_det_d = np.log(d).sum(axis=1)
    quad_d = (m[None, :] ** 2 * d_inv).sum(axis=1)
    table = np.empty((sigma_grid.size, tau_grid.size))
    if n_features:
        gram = np.einsum("th,hp,hq->tpq", d_inv, features, features)
        cross = (d_inv * m[None, :]) @ features
    identity = np.eye(n_features)
    for row, sigma_b2 in enumerate(sigma_grid):
        if sigma_b2 == 0.0 or n_features == 0:
            log_det, quad = log_det_d, quad_d
        else:
            kernel = identity / sigma_b2 + gram
            solved = np.linalg.solve(kernel, cross[:, :, None])[:, :, 0]
            quad = quad_d - (cross * solved).sum(axis=1)
            log_det = log_det_d + np.linalg.slogdet(identity + sigma_b2 * gram)[1]
        table[row] = -0.5 * (log_det + quad + n_experiences * np.log(2 * np.pi))
    return table
