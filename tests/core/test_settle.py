"""memtrial.outcomes.mandates: mandates, projection and utility."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog, minimize

from memtrial.errors import ConfigError, InfeasibleMandateError, InputError
from memtrial.outcomes.mandates import (
    INVESTORS,
    Investor,
    nav_paths,
    project,
    project_simplex,
    relative_prices,
    utility,
)

# equities, real estate (risky) | bonds, cash (defensive) | commodities (neither)
RISKY = np.array([True, True, False, False, False])
DEFENSIVE = np.array([False, False, True, True, False])


def test_investor_profiles_match_the_specification():
    assert {name: (i.risky_cap, i.defensive_floor, i.gamma) for name, i in INVESTORS.items()} == {
        "conservative": (0.40, 0.40, 10.0),
        "balanced": (0.65, 0.20, 5.0),
        "aggressive": (0.90, 0.05, 2.0),
    }


def test_investor_rejects_a_cap_above_one():
    with pytest.raises(ConfigError, match=r"risky_cap must be in \[0, 1\], got 1.5"):
        Investor("x", 1.5, 0.1, 2.0)


def test_utility_of_a_two_asset_book_matches_the_hand_computation():
    weights, previous = np.array([0.6, 0.4]), np.array([0.5, 0.5])
    rel = np.array([[1.10, 1.00], [1.21, 0.95]])
    fee = 15 / 1e4 * (0.1 + 0.1)  # 0.0003
    path1 = (1 - fee) * (0.6 * 1.10 + 0.4 * 1.00)  # 1.059682
    path2 = (1 - fee) * (0.6 * 1.21 + 0.4 * 0.95)  # 1.1056682
    r1, r2 = path1 - 1, path2 / path1 - 1
    variance = 2 * ((r1 - r2) / 2) ** 2  # H times the population variance of two returns
    expected = (path2 - 1) - 5.0 / 2 * variance
    assert expected == pytest.approx(0.10533667, abs=1e-8)
    assert utility(weights, rel, previous, gamma=5.0) == pytest.approx(expected, abs=1e-14)


def test_utility_with_horizon_one_penalises_the_squared_return():
    fee = 15 / 1e4 * 1.0
    r = (1 - fee) * 1.02 - 1
    got = utility([1.0, 0.0], [[1.02, 0.99]], [0.5, 0.5], gamma=10.0)
    assert got == pytest.approx(r - 5.0 * r**2, abs=1e-15)


def test_utility_of_a_batch_equals_each_row_alone():
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(5), size=300)
    rel = np.cumprod(1 + rng.normal(0, 0.01, size=(20, 5)), axis=0)
    previous = np.full(5, 0.2)
    batch = utility(weights, rel, previous, gamma=2.0)
    assert batch.shape == (300,)
    singles = [utility(w, rel, previous, gamma=2.0) for w in weights[:5]]
    np.testing.assert_allclose(batch[:5], singles, rtol=0, atol=1e-15)


def test_utility_without_fee_or_risk_is_the_holding_return():
    rel = np.array([[1.05, 1.0], [1.10, 1.2]])
    assert utility([0.5, 0.5], rel, [0.0, 1.0], gamma=0.0, fee_bp=0.0) == pytest.approx(0.15, abs=1e-15)


def test_nav_path_starts_after_the_entry_fee():
    path = nav_paths([1.0, 0.0], [[1.0, 1.0]], [0.0, 1.0], fee_bp=100.0)
    assert path.tolist() == [pytest.approx(1 - 0.01 * 2)]


def test_relative_prices_from_closes_and_from_returns_agree():
    closes = np.array([[100.0, 50.0], [101.0, 49.0], [103.02, 49.49]])
    returns = closes[1:] / closes[:-1] - 1
    np.testing.assert_allclose(relative_prices(closes), relative_prices(returns=returns), rtol=1e-14)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([0.5, 0.6], "weights must sum to 1 \\(fully invested\\), got a row summing to 1.1"),
        ([1.2, -0.2], "weights must be >= 0 \\(long only\\)"),
        ([np.nan, 1.0], "weights must be finite \\(no NaN or inf\\)"),
    ],
)
def test_utility_rejects_bad_weights(weights, message):
    with pytest.raises(InputError, match=message) as error:
        utility(weights, [[1.0, 1.0]], [0.5, 0.5], gamma=1.0)
    assert error.value.field == "weights"


def test_utility_rejects_prices_of_the_wrong_width():
    with pytest.raises(InputError, match=r"rel_prices must have shape \(H, 2\) with H >= 1, got \(1, 3\)"):
        utility([0.5, 0.5], [[1.0, 1.0, 1.0]], [0.5, 0.5], gamma=1.0)


def test_utility_rejects_non_positive_prices():
    with pytest.raises(InputError, match="rel_prices must be finite and > 0"):
        utility([0.5, 0.5], [[1.0, 0.0]], [0.5, 0.5], gamma=1.0)


def _satisfies(w, investor, tolerance=1e-9):
    return (
        np.all(w >= -tolerance)
        and abs(w.sum() - 1) <= tolerance
        and w[RISKY].sum() <= investor.risky_cap + tolerance
        and w[DEFENSIVE].sum() >= investor.defensive_floor - tolerance
    )


def _optimality_gap(x, p, investor):
    """max over the feasible set of (x - p).(y - p): <= 0 exactly when p is the projection."""
    n = x.size
    result = linprog(
        -(x - p),
        A_ub=np.vstack([RISKY.astype(float), -DEFENSIVE.astype(float)]),
        b_ub=[investor.risky_cap, -investor.defensive_floor],
        A_eq=np.ones((1, n)),
        b_eq=[1.0],
        bounds=[(0, None)] * n,
        method="highs",
    )
    assert result.status == 0
    return float(-result.fun - (x - p) @ p)


points = st.lists(st.floats(min_value=-2, max_value=2, allow_nan=False), min_size=5, max_size=5).map(np.array)


@settings(max_examples=200, deadline=None)
@given(points, st.sampled_from(sorted(INVESTORS)))
def test_projection_satisfies_the_mandate_and_is_optimal(x, name):
    investor = INVESTORS[name]
    p = project(x, RISKY, DEFENSIVE, investor)
    assert _satisfies(p, investor)
    assert _optimality_gap(x, p, investor) <= 1e-9


def test_projection_agrees_with_a_generic_solver():
    rng = np.random.default_rng(1)
    investor = INVESTORS["conservative"]
    constraints = [
        {"type": "eq", "fun": lambda w: w.sum() - 1},
        {"type": "ineq", "fun": lambda w: investor.risky_cap - w[RISKY].sum()},
        {"type": "ineq", "fun": lambda w: w[DEFENSIVE].sum() - investor.defensive_floor},
    ]
    for _ in range(20):
        x = rng.normal(0.2, 0.4, size=5)
        solved = minimize(
            lambda w, x=x: 0.5 * ((w - x) ** 2).sum(),
            np.full(5, 0.2),
            jac=lambda w, x=x: w - x,
            bounds=[(0, 1)] * 5,
            constraints=constraints,
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 500},
        )
        np.testing.assert_allclose(project(x, RISKY, DEFENSIVE, investor), solved.x, atol=1e-6)


def test_no_feasible_point_on_a_dense_grid_is_closer_than_the_projection():
    risky, defensive = np.array([True, False, False]), np.array([False, True, False])
    investor = INVESTORS["balanced"]
    x = np.array([0.9, 0.0, 0.3])
    p = project(x, risky, defensive, investor)
    best = ((p - x) ** 2).sum()
    step = 0.002
    for a, b in itertools.product(np.arange(0, 1 + step, step), repeat=2):
        y = np.array([a, b, 1 - a - b])
        if y[2] < 0 or a > investor.risky_cap or b < investor.defensive_floor:
            continue
        assert ((y - x) ** 2).sum() >= best - 1e-12


def test_projection_of_a_feasible_point_is_the_point_itself():
    w = np.array([0.2, 0.1, 0.3, 0.2, 0.2])
    np.testing.assert_allclose(project(w, RISKY, DEFENSIVE, INVESTORS["balanced"]), w, atol=1e-15)


def test_projection_of_a_batch_equals_each_row_alone():
    rng = np.random.default_rng(2)
    batch = rng.dirichlet(np.ones(5), size=16)
    projected = project(batch, RISKY, DEFENSIVE, INVESTORS["conservative"])
    for row, expected in zip(batch, projected, strict=True):
        np.testing.assert_allclose(project(row, RISKY, DEFENSIVE, INVESTORS["conservative"]), expected, atol=1e-15)


def test_projection_without_defensive_assets_is_infeasible():
    with pytest.raises(
        InfeasibleMandateError, match="no long-only portfolio of this universe satisfies the balanced mandate"
    ):
        project([0.5, 0.5], [True, False], [False, False], INVESTORS["balanced"])


def test_projection_rejects_an_asset_in_both_groups():
    with pytest.raises(InputError, match=r"an asset cannot be both risky and defensive, got both at indices \[0\]"):
        project([0.5, 0.5], [True, False], [True, True], INVESTORS["balanced"])


def test_simplex_projection_is_exact_on_a_known_case():
    np.testing.assert_allclose(project_simplex(np.array([[0.5, 0.3, -0.2]]), 1.0), [[0.6, 0.4, 0.0]], atol=1e-15)
