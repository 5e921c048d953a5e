"""The sparse objective (cross-validated Lasso of the mean score), checked against direct fits and brute force."""
from __future__ import annotations

import numpy as np
import pytest
from _synthetic import as_matrix, low_rank_scores
from scipy.optimize import minimize

from benchsel_lib import Pipeline, cross_validate
from benchsel_lib.method.pipeline import parse_pipeline
from benchsel_lib.method.search import selection_cost
from benchsel_lib.method.selection import OBJECTIVES, select
from benchsel_lib.method.selectors import SELECTORS, Selector, selector_named
from benchsel_lib.method.sparse import (
    held_out_risk,
    lambda_grid,
    lasso_cov_path,
    pairwise_correlation,
    sparse_order,
)


def _corr(seed: int, n: int, m: int = 30) -> np.ndarray:
    """A random correlation matrix of ``n`` benchmarks (sample correlation of mixed Gaussian columns)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) @ rng.standard_normal((n, n))
    return np.corrcoef(X.T)


def _direct_fit(R, c, lam, unpenalized=(), features=None):
    """The same objective minimized by L-BFGS-B on b = p - q (p, q >= 0) for the penalized coordinates."""
    n = R.shape[0]
    F = list(range(n)) if features is None else list(features)
    U = [j for j in F if j in unpenalized]
    P = [j for j in F if j not in unpenalized]

    def unpack(v):
        b = np.zeros(n)
        b[U] = v[:len(U)]
        b[P] = v[len(U):len(U) + len(P)] - v[len(U) + len(P):]
        return b

    def fun(v):
        b = unpack(v)
        g = R @ b - c
        val = 0.5 * b @ R @ b - b @ c + lam * v[len(U):].sum()
        grad = np.concatenate([g[U], g[P] + lam, -g[P] + lam])
        return val, grad

    v0 = np.zeros(len(U) + 2 * len(P))
    bounds = [(None, None)] * len(U) + [(0.0, None)] * (2 * len(P))
    res = minimize(fun, v0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"ftol": 1e-16, "gtol": 1e-13, "maxiter": 50000, "maxcor": 50})
    return unpack(res.x)


PATH_CASES = [(seed, n) for seed, n in enumerate((4, 5, 6, 7, 8))]


@pytest.mark.parametrize("seed,n", PATH_CASES)
def test_coordinate_descent_equals_a_direct_fit_and_meets_the_optimality_conditions(seed, n):
    R = _corr(seed, n)
    w = np.full(n, 1.0 / n)
    c = R @ w
    for unpen in ((), (n - 1,)):
        feats = np.ones(n, dtype=bool)
        feats[0] = False  # one benchmark outside the features: its coefficient stays zero
        grid = lambda_grid(R, c, unpenalized=unpen, features=feats, n_lambdas=12)
        B = lasso_cov_path(R, c, grid, unpenalized=unpen, features=feats)
        assert B.shape == (12, n) and np.all(B[:, 0] == 0.0)
        F = np.flatnonzero(feats)
        for i in (0, 3, 7, 11):
            lam, b = grid[i], B[i]
            direct = _direct_fit(R, c, lam, unpenalized=unpen, features=F)
            np.testing.assert_allclose(b, direct, atol=1e-6)
            grad = R @ b - c
            for j in F:
                if j in unpen:
                    assert abs(grad[j]) <= 1e-9
                elif b[j] == 0.0:
                    assert abs(grad[j]) <= lam * (1 + 1e-8) + 1e-12
                else:
                    assert grad[j] == pytest.approx(-lam * np.sign(b[j]), abs=1e-9)


def test_only_mandatory_benchmarks_are_active_at_the_largest_strength_and_tiny_strengths_approach_w():
    n = 6
    R = 0.6 * _corr(11, n) + 0.4 * np.eye(n)  # well conditioned
    w = np.full(n, 1.0 / n)
    c = R @ w
    grid = lambda_grid(R, c, n_lambdas=20)
    B = lasso_cov_path(R, c, [grid[0], 2.0 * grid[0]])
    assert np.all(B == 0.0)
    # the largest strength is the first at which a benchmark is about to enter
    assert np.count_nonzero(lasso_cov_path(R, c, [grid[0] * 0.999])) == 1
    Bm = lasso_cov_path(R, c, lambda_grid(R, c, unpenalized=[2, 4]), unpenalized=[2, 4])
    assert set(np.flatnonzero(Bm[0])) == {2, 4}
    np.testing.assert_allclose(Bm[0][[2, 4]], np.linalg.solve(R[np.ix_([2, 4], [2, 4])], c[[2, 4]]), atol=1e-9)
    tiny = lasso_cov_path(R, c, [grid[0] * 1e-9])[0]
    np.testing.assert_allclose(tiny, w, atol=1e-7)  # the exact regression of y on every benchmark


def test_held_out_risk_is_the_mean_squared_error_of_predicting_the_mean_score():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((25, 7)) @ rng.standard_normal((7, 7))
    X -= X.mean(axis=0)
    C = np.cov(X.T, ddof=0)  # = X'X / m for centred rows
    w = np.full(7, 1.0 / 7)
    B = rng.standard_normal((4, 7))
    y = X @ w
    brute = np.array([np.mean((y - X @ b) ** 2) for b in B])
    np.testing.assert_allclose(held_out_risk(C, B, w), brute, rtol=1e-12)
    expanded = np.array([b @ C @ b - 2 * b @ C @ w + w @ C @ w for b in B])
    np.testing.assert_allclose(held_out_risk(C, B, w), expanded, rtol=1e-10)
    assert held_out_risk(C, w[None, :], w)[0] == pytest.approx(0.0, abs=1e-15)


def test_pairwise_correlation_is_pearson_on_complete_data_and_handles_thin_pairs():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 5)) @ rng.standard_normal((5, 5))
    np.testing.assert_allclose(pairwise_correlation(X), np.corrcoef(X.T), atol=1e-10)
    Y = X.copy()
    Y[2:, 0] = np.nan  # column 0 shares only two rows with the others
    Y[5:9, 1] = np.nan
    C = pairwise_correlation(Y)
    assert np.allclose(np.diag(C), 1.0) and np.allclose(C, C.T)
    assert abs(C[0, 1]) < 1e-6 and np.linalg.eigvalsh(C)[0] > 0
    keep = ~np.isnan(Y[:, 1])
    assert C[1, 2] == pytest.approx(np.corrcoef(X[keep, 1], X[keep, 2])[0, 1], abs=1e-6)


def _data(seed=0, m=60, n=10, noise=0.7, missing=0.0):
    X = low_rank_scores(seed, m, n, noise=noise, standardize=True, missing=missing)
    return pairwise_correlation(X), X


def test_selection_has_k_benchmarks_mandatory_first_and_only_candidates():
    R, X = _data(1)
    for k in (1, 4, 10):
        sel = select(R, k, objective="sparse", train=X)
        assert len(sel.order) == len(set(sel.order)) == k and sel.strategy == sel.objective == "sparse"
    sel = select(R, 4, objective="sparse", train=X, initial=[7, 2])
    assert sel.order[:2] == [7, 2] and len(set(sel.order)) == 4
    out = select(R, 3, objective="sparse", train=X).order[:2]
    ex = select(R, 5, objective="sparse", train=X, exclude=out)
    assert not set(out) & set(ex.order) and ex.excluded == sorted(out)
    counts = np.array([60, 60, 3, 60, 3, 60, 60, 60, 60, 60])
    thin = select(R, 5, objective="sparse", train=X, min_observed=10, observed_counts=counts)
    assert not {2, 4} & set(thin.order) and thin.excluded == [2, 4]
    assert len(select(R, 8, objective="sparse", train=X, exclude=[0, 1]).order) == 8


def test_selection_is_deterministic_nested_and_its_strength_is_on_the_grid():
    R, X = _data(2)
    res = sparse_order(R, X, 10)
    again = sparse_order(R.copy(), X.copy(), 10)
    assert res.order == again.order and res.lam == again.lam
    np.testing.assert_array_equal(res.cv_risk, again.cv_risk)
    for k in range(1, 10):
        assert sparse_order(R, X, k).order == res.order[:k]
        assert select(R, k, objective="sparse", train=X).order == res.order[:k]
    assert res.lam in res.lambdas and np.all(np.diff(res.lambdas) < 0)
    assert res.lambdas[-1] == pytest.approx(res.lambdas[0] * 1e-3)
    i = int(np.flatnonzero(res.lambdas == res.lam)[0])
    assert res.cv_risk[i] == res.cv_risk.min()
    # the active benchmarks at the chosen strength lead the order, by decreasing coefficient
    B = lasso_cov_path(R, R @ np.full(10, 0.1), res.lambdas)[i]
    lead = res.order[:res.n_active]
    assert set(lead) == set(np.flatnonzero(B)) and list(np.abs(B[lead])) == sorted(np.abs(B[lead]), reverse=True)


def test_cross_validated_strength_is_computed_from_the_folds():
    R, X = _data(3, m=40, n=8)
    res = sparse_order(R, X, 3, n_folds=4, n_lambdas=15)
    w = np.full(8, 1.0 / 8)
    risk = np.zeros(15)
    for f in range(4):
        rows = np.arange(40) % 4 == f
        Rtr, Rte = pairwise_correlation(X[~rows]), pairwise_correlation(X[rows])
        B = lasso_cov_path(Rtr, Rtr @ w, res.lambdas)
        risk += [(w - b) @ Rte @ (w - b) for b in B]
    np.testing.assert_allclose(res.cv_risk, risk / 4, rtol=1e-8, atol=1e-14)
    assert res.lambdas[0] == pytest.approx(np.abs(R @ w).max())


def test_strength_is_chosen_inside_the_grid_when_the_mean_is_not_in_the_span_of_the_candidates():
    # with every benchmark a candidate, b = w predicts the mean exactly and the smallest strength wins;
    # with half of them the target has a part the candidates cannot explain and the risk has an interior minimum
    R, X = _data(1, m=60, n=20, noise=1.0)
    cand = np.zeros(20, dtype=bool)
    cand[:10] = True
    res = sparse_order(R, X, 3, candidates=cand)
    i = int(np.flatnonzero(res.lambdas == res.lam)[0])
    assert 0 < i < len(res.lambdas) - 1
    assert res.cv_risk[i] < res.cv_risk[0] and res.cv_risk[i] < res.cv_risk[-1]
    assert set(res.order) <= set(range(10))
    sel = select(R, 3, objective="sparse", train=X, exclude=list(range(10, 20)))
    assert sel.order == res.order


def test_missing_scores_are_handled_and_train_is_required():
    R, X = _data(4, missing=0.3)
    assert np.isnan(X).any()
    sel = select(R, 5, objective="sparse", train=X)
    assert len(set(sel.order)) == 5 and np.isfinite(sel.gains).all()
    with pytest.raises(ValueError, match="needs train="):
        select(R, 3, objective="sparse")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(k=0), "out of range"),
        (dict(k=11), "out of range"),
        (dict(k=3, train_rows=9), "at least 10 training rows"),
        (dict(k=3, train_cols=9), "train must be"),
        (dict(k=2, costs=np.ones(10), budget=3.0), "sparse objective has no cost-aware form"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, match):
    R, X = _data(5)
    kwargs = dict(kwargs)
    k = kwargs.pop("k")
    X = X[:kwargs.pop("train_rows", 60), :kwargs.pop("train_cols", 10)]
    with pytest.raises(ValueError, match=match):
        select(R, k, objective="sparse", train=X, **kwargs)
    with pytest.raises(ValueError, match="train must be"):
        sparse_order(R, X[:, :3], 2)


def test_sparse_is_a_named_selector_and_pipeline_strategy():
    assert "sparse" in OBJECTIVES and selector_named("sparse") == Selector("sparse")
    assert SELECTORS["sparse"].label == "sparse"
    assert parse_pipeline("sparse+ridge") == ("sparse", "ridge")
    with pytest.raises(ValueError, match="sparse objective has no cost-aware form"):
        Selector("sparse", costs={"b0": 1.0}, budget=1.0)
    assert selection_cost("sparse", 50, 5, 100) > selection_cost("entropy", 50, 5, 100)


def test_selector_passes_the_training_rows_and_keys_its_memo_on_them():
    R, X = _data(1, m=60, n=20, noise=1.0)
    names = [f"b{j}" for j in range(20)]
    counts = np.full(20, 60)
    sel = Selector("sparse", exclude=tuple(names[10:]))  # the strength matters only when the mean is not in the span
    Y = X[30:]  # other rows, another cross-validated strength
    direct = [select(R, 10, objective="sparse", train=T, exclude=list(range(10, 20))).order for T in (X, Y)]
    assert direct[0] != direct[1]
    got = [sel.select(R, 10, names=names, counts=counts, n_models=60, train=T).order for T in (X, Y)]
    assert got == direct


def test_sparse_pipeline_fits_and_cross_validates_end_to_end():
    m = as_matrix(50 + 10 * low_rank_scores(11, 60, 8, missing=0.1))
    p = Pipeline.from_name("sparse+ridge", k=3).fit(m)
    assert len(p.selected) == 3 and set(p.selected) <= set(m.benchmarks)
    direct = Pipeline.paper(k=3, objective="sparse").fit(m)
    assert direct.selection_.objective == "sparse" and direct.selected == direct.selection_.names
    df = cross_validate(m, ["sparse+ridge", "sparse+gaussian"], k_max=3, n_folds=3, seed=1, progress=False,
                        levels=(0.9,))
    assert set(df["method"]) == {"sparse+ridge", "sparse+gaussian"}
    assert set(df["k"]) == {1, 2, 3} and np.isfinite(df["r2"]).all()
