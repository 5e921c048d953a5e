"""The mean-lasso objective (entry order of the Lasso path of the mean score), checked against brute force."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib.method.pipeline import Pipeline
from benchsel_lib.method.search import selection_cost
from benchsel_lib.method.selection import select
from benchsel_lib.method.sparse import mean_lasso_order


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
    assert selection_cost("mean-lasso", 50, 5, 100) < selection_cost("sparse", 50, 5, 100)
