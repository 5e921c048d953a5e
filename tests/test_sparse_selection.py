"""The sparse objective (per-target Lasso with a cross-validated strength), checked against direct fits and brute force."""
from __future__ import annotations

import numpy as np
import pytest
from _synthetic import low_rank_scores
from scipy.optimize import minimize

from benchsel_lib.method.plan import selection_cost
from benchsel_lib.method.selection import select
from benchsel_lib.method.selectors import Selector
from benchsel_lib.method.sparse import (
    held_out_risk,
    lambda_grid,
    lasso_cov_path,
    multi_target_lasso_path,
    pairwise_correlation,
    sparse_order,
)

#: a stopping rule tight enough for FISTA to reach the exact solutions of these small problems
TIGHT = dict(tol=1e-13, max_iter=20000)


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
    c = R[:, 0]  # target 0, predicted from the others: it is no feature of its own
    for unpen in ((), (n - 1,)):
        feats = np.ones(n, dtype=bool)
        feats[0] = False
        lam_max = np.abs(c[1:]).max()
        grid = np.geomspace(lam_max, lam_max * 1e-3, 12)
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


def _features(n, seed):
    """All benchmarks but one (a non-candidate that is still a target)."""
    feats = np.ones(n, dtype=bool)
    feats[seed % n] = False
    return feats


@pytest.mark.parametrize("seed,n", PATH_CASES)
def test_each_column_of_the_multi_target_path_is_the_single_target_fit_without_itself(seed, n):
    R = _corr(seed, n)
    for unpen in ((), (n - 1,)):
        feats = _features(n, seed)
        grid = lambda_grid(R, unpenalized=unpen, features=feats, n_lambdas=12)
        B = multi_target_lasso_path(R, grid, features=feats, unpenalized=unpen, **TIGHT)
        assert B.shape == (12, n, n)
        assert np.all(np.diagonal(B, axis1=1, axis2=2) == 0.0) and np.all(B[:, ~feats, :] == 0.0)
        for j in range(n):
            F = [c for c in np.flatnonzero(feats) if c != j]
            U = [u for u in unpen if u != j]
            single = lasso_cov_path(R, R[:, j], grid, unpenalized=U, features=F)
            for i in (0, 4, 8, 11):
                np.testing.assert_allclose(B[i, :, j], single[i], atol=1e-5)


@pytest.mark.parametrize("seed,n", [(7, 5), (8, 8)])
def test_multi_target_solution_meets_the_optimality_conditions(seed, n):
    R = 0.7 * _corr(seed, n) + 0.3 * np.eye(n)
    unpen = (1,)
    feats = _features(n, seed)
    feats[1] = True
    grid = lambda_grid(R, unpenalized=unpen, features=feats, n_lambdas=8)
    B = multi_target_lasso_path(R, grid, features=feats, unpenalized=unpen, **TIGHT)
    for lam, Bl in zip(grid, B):
        G = R @ Bl - R  # gradient of every target's smooth part
        for j in range(n):
            for c in np.flatnonzero(feats):
                if c == j:
                    continue
                if c in unpen:
                    assert abs(G[c, j]) <= 1e-8
                elif Bl[c, j] == 0.0:
                    assert abs(G[c, j]) <= lam * (1 + 1e-6) + 1e-10
                else:
                    assert G[c, j] == pytest.approx(-lam * np.sign(Bl[c, j]), abs=1e-8)


def test_the_largest_strength_leaves_only_the_mandatory_fit_and_the_default_stop_is_close():
    n = 6
    R = 0.6 * _corr(11, n) + 0.4 * np.eye(n)  # well conditioned
    off = np.abs(R - np.eye(n))
    grid = lambda_grid(R, n_lambdas=20)
    assert grid[0] == pytest.approx(off.max()) and grid[-1] == pytest.approx(grid[0] * 1e-3)
    assert np.all(multi_target_lasso_path(R, [grid[0] * (1 + 1e-9), 2.0 * grid[0]]) == 0.0)
    assert np.count_nonzero(multi_target_lasso_path(R, [grid[0] * 0.99], **TIGHT)) >= 1
    u = 2
    gm = lambda_grid(R, unpenalized=[u])
    B0 = multi_target_lasso_path(R, gm[:1], unpenalized=[u], **TIGHT)[0]
    others = [j for j in range(n) if j != u]
    np.testing.assert_allclose(B0[u, others], R[u, others], atol=1e-9)  # the fit on the mandatory one alone
    assert np.abs(np.delete(B0, u, axis=0)).max() < 1e-8
    # the default stopping rule (tol 1e-7, 300 iterations) is close to the exact path on a well-conditioned R
    np.testing.assert_allclose(multi_target_lasso_path(R, grid), multi_target_lasso_path(R, grid, **TIGHT),
                               atol=1e-4)


def test_held_out_risk_is_the_summed_mean_squared_error_of_predicting_each_benchmark():
    rng = np.random.default_rng(3)
    m, n = 25, 7
    X = rng.standard_normal((m, n)) @ rng.standard_normal((n, n))
    X -= X.mean(axis=0)
    C = np.cov(X.T, ddof=0)  # = X'X / m for centred rows
    B = rng.standard_normal((4, n, n))
    for Bl in B:
        np.fill_diagonal(Bl, 0.0)
    brute = np.array([sum(np.mean((X[:, j] - X @ Bl[:, j]) ** 2) for j in range(n)) for Bl in B])
    np.testing.assert_allclose(held_out_risk(C, B), brute, rtol=1e-12)
    assert held_out_risk(C, B[1]) == pytest.approx(brute[1], rel=1e-12)
    assert held_out_risk(C, np.zeros((n, n))) == pytest.approx(np.trace(C), rel=1e-14)


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


def test_cross_validation_picks_a_strength_inside_the_grid_with_every_benchmark_a_candidate():
    for seed in (1, 2):
        R, X = _data(seed, m=60, n=20, noise=1.0)
        res = sparse_order(R, X, 3)
        i = int(np.flatnonzero(res.lambdas == res.lam)[0])
        assert 0 < i < len(res.lambdas) - 1
        assert res.cv_risk[i] < res.cv_risk[0] and res.cv_risk[i] < res.cv_risk[-1]
        assert 0 < res.n_active <= 20


def test_cross_validated_strength_is_computed_from_the_folds():
    R, X = _data(3, m=40, n=8)
    res = sparse_order(R, X, 3, n_folds=4, n_lambdas=15)
    risk = np.zeros(15)
    for f in range(4):
        rows = np.arange(40) % 4 == f
        Rtr, Rte = pairwise_correlation(X[~rows]), pairwise_correlation(X[rows])
        B = multi_target_lasso_path(Rtr, res.lambdas, max_iter=100)
        risk += [sum((e - b) @ Rte @ (e - b) for e, b in zip(np.eye(8), Bl.T)) for Bl in B]
    np.testing.assert_allclose(res.cv_risk, risk / 4, rtol=1e-8, atol=1e-12)
    assert res.lambdas[0] == pytest.approx(np.abs(R - np.eye(8)).max())
    assert res.lam == res.lambdas[int(np.argmin(res.cv_risk))]


def test_order_is_by_importance_at_the_chosen_strength_then_by_entry():
    R, X = _data(2, n=12)
    cand = np.ones(12, dtype=bool)
    cand[[3, 8]] = False  # targets, never selected
    res = sparse_order(R, X, 11, initial=[5], candidates=cand, n_lambdas=20)
    assert res.order[0] == 5 and len(res.order) == 10 and not {3, 8} & set(res.order)
    i = int(np.flatnonzero(res.lambdas == res.lam)[0])
    B = multi_target_lasso_path(R, res.lambdas, features=cand, unpenalized=[5], max_iter=100)
    imp = np.abs(B).sum(axis=2)
    lead = res.order[1:1 + res.n_active]
    assert all(imp[i, c] > 0 for c in lead) and list(imp[i, lead]) == sorted(imp[i, lead], reverse=True)
    assert all(imp[i, c] == 0 for c in res.order[1 + res.n_active:])
    # the whole rule: importance at the chosen strength, then entry along the grid, the weakest importance, index
    entry = [next((t for t in range(20) if imp[t, c] > 0), 20) for c in range(12)]
    cands = [c for c in range(12) if cand[c] and c != 5]
    expected = ([5] + sorted((c for c in cands if imp[i, c] > 0), key=lambda c: (-imp[i, c], c))
                + sorted((c for c in cands if imp[i, c] == 0), key=lambda c: (entry[c], -imp[-1, c], c)))
    assert res.order == expected


def test_selection_has_k_benchmarks_mandatory_first_and_only_candidates():
    R, X = _data(1)
    sel = select(R, 10, objective="sparse", train=X)
    assert len(sel.order) == len(set(sel.order)) == 10 and sel.strategy == sel.objective == "sparse"
    sel = select(R, 4, objective="sparse", train=X, initial=[7, 2])
    assert sel.order[:2] == [7, 2] and len(set(sel.order)) == 4
    out = sel.order[:2]
    ex = select(R, 5, objective="sparse", train=X, exclude=out)
    assert not set(out) & set(ex.order) and ex.excluded == sorted(out)
    counts = np.array([60, 60, 3, 60, 3, 60, 60, 60, 60, 60])
    thin = select(R, 5, objective="sparse", train=X, min_observed=10, observed_counts=counts)
    assert not {2, 4} & set(thin.order) and thin.excluded == [2, 4]


def test_selection_is_deterministic_nested_and_its_strength_is_on_the_grid():
    R, X = _data(2)
    res = sparse_order(R, X, 10)
    again = sparse_order(R.copy(), X.copy(), 10)
    assert res.order == again.order and res.lam == again.lam
    np.testing.assert_array_equal(res.cv_risk, again.cv_risk)
    assert sparse_order(R, X, 3).order == res.order[:3]
    for k in (1, 6):
        assert select(R, k, objective="sparse", train=X).order == res.order[:k]
    assert res.lam in res.lambdas and np.all(np.diff(res.lambdas) < 0) and len(res.lambdas) == 20
    assert res.lambdas[-1] == pytest.approx(res.lambdas[0] * 1e-3)
    i = int(np.flatnonzero(res.lambdas == res.lam)[0])
    assert res.cv_risk[i] == res.cv_risk.min()


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
    R, full = _data(5)
    kwargs = dict(kwargs)
    k = kwargs.pop("k")
    X = full[:kwargs.pop("train_rows", 60), :kwargs.pop("train_cols", 10)]
    with pytest.raises(ValueError, match=match):
        select(R, k, objective="sparse", train=X, **kwargs)
    with pytest.raises(ValueError, match="train must be"):
        sparse_order(R, X[:, :3], 2)
    with pytest.raises(ValueError, match="n_folds must be"):
        sparse_order(R, full, 2, n_folds=1)
    with pytest.raises(ValueError, match="lambdas must be"):
        multi_target_lasso_path(R, [-1.0])


def test_the_sparse_selection_is_costed_above_mi_for_the_search_plan():
    assert selection_cost("sparse", 50, 5, n_models=100) > selection_cost("mi", 50, 5, n_models=100)


def test_selector_passes_the_training_rows_and_keys_its_memo_on_them():
    R, X = _data(1, m=60, n=20, noise=1.0)
    names = [f"b{j}" for j in range(20)]
    counts = np.full(20, 60)
    sel = Selector("sparse")
    Y = X[30:]  # other rows, another cross-validated strength
    direct = [select(R, 10, objective="sparse", train=T).order for T in (X, Y)]
    assert direct[0] != direct[1]
    got = [sel.select(R, 10, names=names, counts=counts, n_models=60, train=T).order for T in (X, Y)]
    assert got == direct
