"""Straightforward reference implementations that the fast paths are checked against."""

import numpy as np

from memtrial.fayherriot import VARIANCE_GRID


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
