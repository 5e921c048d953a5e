"""The Lasso of the mean score (BenchPred's selection): the entry order on the correlation (mean-lasso) and the
set of k on the mean-imputed matrix (imputed-lasso), checked against brute force."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib._memo import LRUMemo
from benchsel_lib.method import sparse
from benchsel_lib.method.pipeline import Pipeline
from benchsel_lib.method.plan import selection_cost
from benchsel_lib.method.selection import select
from benchsel_lib.method.selectors import Selector
from benchsel_lib.method.sparse import imputed_lasso_order, mean_lasso_order


def _corr(seed: int, n: int, m: int = 40) -> np.ndarray:
    """A random correlation matrix of ``n`` benchmarks (sample correlation of mixed Gaussian columns)."""
    rng = np.random.default_rng(seed)
    return np.corrcoef((rng.standard_normal((m, n)) @ rng.standard_normal((n, n))).T)


def _brute_lasso(R: np.ndarray, c: np.ndarray, lam: float, unpenalized=()) -> np.ndarray:
    """The Lasso ``1/2 b'Rb - b'c + lam sum_{j not in U} |b_j|`` by enumerating every support and sign pattern.

    For a support ``S`` (containing ``U``) and signs ``s`` the stationarity equations give
    ``b_S = R_SS^{-1} (c_S - lam s)`` (``s = 0`` on ``U``); the solution is the one whose signs agree and
    whose zero coefficients satisfy ``|c_j - R_jS b_S| <= lam``.
    """
    n = R.shape[0]
    U = list(unpenalized)
    free = [j for j in range(n) if j not in U]
    best, best_val = None, np.inf
    for signs in itertools.product((-1, 0, 1), repeat=len(free)):
        S = U + [j for j, s in zip(free, signs) if s]
        s_vec = np.zeros(n)
        s_vec[free] = signs
        b = np.zeros(n)
        if S:
            b[S] = np.linalg.solve(R[np.ix_(S, S)], c[S] - lam * s_vec[S])
        on = [j for j, s in zip(free, signs) if s]
        if any(np.sign(b[j]) != s_vec[j] for j in on):
            continue
        off = [j for j in free if j not in S]
        if off and np.max(np.abs(c[off] - R[off] @ b)) > lam * (1 + 1e-9):
            continue
        val = 0.5 * b @ R @ b - b @ c + lam * np.abs(b[free]).sum()
        if val < best_val:
            best, best_val = b, val
    assert best is not None
    return best


def _strength_with(R, c, k, unpenalized=()):
    """A strength at which the brute-force Lasso has exactly ``k`` penalized non-zeros (bisection), or None."""
    lo, hi = 1e-9, float(np.abs(c).max()) * 2
    for _ in range(60):
        mid = np.sqrt(lo * hi)
        nz = int((np.abs(_brute_lasso(R, c, mid, unpenalized)) > 1e-12).sum()) - len(unpenalized)
        if nz == k:
            return mid
        lo, hi = (mid, hi) if nz > k else (lo, mid)
    return None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_first_k_are_the_lasso_support_of_the_mean_score_with_k_non_zeros(seed):
    n = 6
    R = _corr(seed, n)
    c = R.mean(axis=1)
    order = mean_lasso_order(R, n)
    assert sorted(order) == list(range(n))
    for k in range(1, n):
        lam = _strength_with(R, c, k)
        assert lam is not None
        support = set(np.flatnonzero(np.abs(_brute_lasso(R, c, lam)) > 1e-12).tolist())
        assert set(order[:k]) == support


def test_mandatory_benchmarks_come_first_unpenalized_and_the_rest_follow_the_path_given_them():
    n = 6
    R = _corr(3, n)
    c = R.mean(axis=1)
    order = mean_lasso_order(R, n, initial=[4, 1])
    assert order[:2] == [4, 1] and sorted(order) == list(range(n))
    for k in range(1, n - 2):
        lam = _strength_with(R, c, k, unpenalized=[4, 1])
        support = set(np.flatnonzero(np.abs(_brute_lasso(R, c, lam, unpenalized=[4, 1])) > 1e-12).tolist())
        assert set(order[:2 + k]) == support


def test_the_benchmark_closest_to_the_mean_score_enters_first():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((200, 6))
    X[:, 2] = X.mean(axis=1) + 0.05 * rng.standard_normal(200)  # benchmark 2 tracks the mean of all
    assert mean_lasso_order(np.corrcoef(X.T), 1) == [2]


def test_order_is_deterministic_nested_and_respects_candidates_and_covariance_scale():
    R = _corr(7, 9)
    full = mean_lasso_order(R, 9)
    assert mean_lasso_order(R.copy(), 4) == full[:4]
    D = np.diag([2.0, 0.5, 1.0, 3.0, 1.0, 1.0, 4.0, 1.0, 0.2])
    assert mean_lasso_order(D @ R @ D, 9) == full  # a covariance is rescaled to its correlation
    cand = np.ones(9, dtype=bool)
    cand[[full[0], full[1]]] = False
    sub = mean_lasso_order(R, 5, candidates=cand)
    assert not {full[0], full[1]} & set(sub) and len(set(sub)) == 5
    for k in (1, 3, 9):
        sel = select(R, k, objective="mean-lasso")
        assert sel.order == full[:k] and sel.strategy == sel.objective == "mean-lasso"


def test_filters_and_exclusions_of_select_apply():
    R = _corr(8, 10)
    counts = np.array([60, 60, 3, 60, 3, 60, 60, 60, 60, 60])
    thin = select(R, 5, objective="mean-lasso", min_observed=10, observed_counts=counts)
    assert not {2, 4} & set(thin.order) and thin.excluded == [2, 4]
    first = select(R, 2, objective="mean-lasso").order
    ex = select(R, 4, objective="mean-lasso", exclude=first)
    assert not set(first) & set(ex.order) and ex.excluded == sorted(first)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(k=0), "out of range"),
        (dict(k=11), "out of range"),
        (dict(k=2, costs=np.ones(10), budget=3.0), "mean-lasso objective has no cost-aware form"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        select(_corr(9, 10), **kwargs, objective="mean-lasso")
    with pytest.raises(ValueError, match="n_lambdas must be"):
        mean_lasso_order(_corr(9, 10), 3, n_lambdas=1)


def test_a_pipeline_named_after_it_selects_on_missing_scores_as_select_does():
    M = as_matrix(low_rank_scores(11, 50, 12, missing=0.2))
    pipe = Pipeline.from_name("mean-lasso+ridge", k=4).fit(M)
    assert pipe.selected == [M.benchmarks[j] for j in mean_lasso_order(pipe.correlation_, 4)]
    assert selection_cost("mean-lasso", 50, 5, n_models=100) < selection_cost("sparse", 50, 5, n_models=100)


def _imputed_moments(train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``G = X'X/m`` and ``c = X' xbar / m`` of the column-mean-imputed, centred matrix, computed directly."""
    X = np.array(train, dtype=float)
    for j in range(X.shape[1]):
        col = X[:, j]
        col[np.isnan(col)] = np.mean(col[~np.isnan(col)])
    X -= X.mean(axis=0)
    ybar = X.mean(axis=1)
    return X.T @ X / X.shape[0], X.T @ ybar / X.shape[0]


def _benchpred_scan(G, c, k, alphas, unpenalized=()):
    """BenchPred's rule on brute-force fits: up the grid, the smallest strength with exactly ``k``
    penalized non-zeros, else the first with the closest count below ``k``."""
    best, best_gap = set(), np.inf
    for a in sorted(alphas):
        b = _brute_lasso(G, c, a, unpenalized)
        nz = {int(j) for j in np.flatnonzero(np.abs(b) > 1e-12) if j not in unpenalized}
        if len(nz) <= k and k - len(nz) < best_gap:
            best, best_gap = nz, k - len(nz)
        if best_gap == 0:
            break
    return best


def _sparse_scores(seed: int, m: int = 40, n: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) @ rng.standard_normal((n, n))
    X[rng.random((m, n)) < 0.3] = np.nan
    X[0] = rng.standard_normal(n)  # every column keeps an observation
    return X


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_imputed_lasso_selects_what_benchpreds_scan_of_direct_fits_selects(seed):
    X = _sparse_scores(seed)
    G, c = _imputed_moments(X)
    alphas = np.logspace(-3, 0, 60)
    exact = 0
    for k in range(1, 5):
        got, scan = imputed_lasso_order(X, k, alphas=alphas), _benchpred_scan(G, c, k, alphas)
        assert len(got) == k and scan <= set(got)  # a set short of k is completed
        exact += len(scan) == k
    assert exact >= 3
    mand = imputed_lasso_order(X, 3, initial=[4], alphas=alphas)
    assert mand[0] == 4 and set(mand[1:]) == _benchpred_scan(G, c, 2, alphas, unpenalized=[4])


def test_the_imputed_lasso_weighs_a_benchmark_by_how_many_models_ran_it():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((120, 6))
    X[:, 2] = X.mean(axis=1) + 0.05 * rng.standard_normal(120)  # tracks the mean of all ...
    R = np.corrcoef(X.T)
    X[6:, 2] = np.nan  # ... but six models ran it
    assert mean_lasso_order(R, 1) == [2]
    assert imputed_lasso_order(X, 1) != [2]


def test_the_imputed_lasso_completes_a_short_set_and_is_selected_once_per_size():
    X = _sparse_scores(5, n=6)
    short = imputed_lasso_order(X, 4, alphas=[10.0])  # nothing enters at this strength
    G, c = _imputed_moments(X)
    assert short == sorted(range(6), key=lambda j: (-abs(c[j]), j))[:4]
    assert not Selector("imputed-lasso").nested
    with pytest.raises(ValueError, match="needs train="):
        select(np.corrcoef(np.nan_to_num(X).T), 2, objective="imputed-lasso")
    M = as_matrix(low_rank_scores(12, 50, 10, missing=0.2))
    pipe = Pipeline.from_name("imputed-lasso+imputed-ridge", k=3).fit(M)
    assert len(set(pipe.selected)) == 3 and selection_cost("imputed-lasso", 50, 5, n_models=100) < selection_cost(
        "sparse", 50, 5, n_models=100)


def test_the_imputed_lasso_computes_one_path_for_every_size_and_gives_each_what_a_fresh_path_gives(monkeypatch):
    X = low_rank_scores(7, 60, 40, missing=0.3, standardize=True)
    sizes, mand = range(1, 16), [3, 11]
    fresh = {}
    for k in sizes:
        monkeypatch.setattr(sparse, "_IMPUTED_PATHS", LRUMemo(32))  # a path of its own for each size
        fresh[k] = imputed_lasso_order(X, k)
        fresh[-k] = imputed_lasso_order(X, k, initial=mand) if k >= len(mand) else None
    monkeypatch.setattr(sparse, "_IMPUTED_PATHS", LRUMemo(32))
    paths = []
    solve = sparse.lasso_cov_path
    monkeypatch.setattr(sparse, "lasso_cov_path", lambda *a, **kw: paths.append(kw["max_active"]) or solve(*a, **kw))
    for k in reversed(sizes):  # the largest first: its path serves the smaller sizes
        assert imputed_lasso_order(X, k) == fresh[k]
        if k >= len(mand):
            assert imputed_lasso_order(X, k, initial=mand) == fresh[-k]
    assert paths == [15 + 10, 15 - 2 + 10]  # one path without the mandatory benchmarks, one with
    monkeypatch.setattr(sparse, "_IMPUTED_PATHS", LRUMemo(32))
    by_size = Selector("imputed-lasso").select_sizes(
        np.corrcoef(np.nan_to_num(X).T), list(sizes), names=[f"b{j}" for j in range(40)],
        counts=(~np.isnan(X)).sum(axis=0), n_models=60, train=X)
    assert by_size == {k: fresh[k] for k in sizes} and list(by_size) == list(sizes)
    assert len(paths) == 3
