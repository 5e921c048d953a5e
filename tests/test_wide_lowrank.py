"""The low-rank correlation of wide matrices against independent dense computations on small matrices."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel_lib.method import correlation as corr_mod
from benchsel_lib.method import lowrank
from benchsel_lib.method.correlation import (Correlation, estimate_correlation, floored_pairwise_correlation,
                                             inner_correlation)
from benchsel_lib.method.covariance import floor_eigenvalues
from benchsel_lib.method.gaussian import GaussianPredictor, conditional_moments
from benchsel_lib.method.lowrank import LowRankCorrelation, low_rank_floored_correlation, wide_route
from benchsel_lib.method.objectives import complement_precision_diag
from benchsel_lib.method.selection import _TieBreaker, lasso_path_order, select
from benchsel_lib.method.selectors import Selector


def _scores(m: int = 14, n: int = 40, missing: float = 0.3, seed: int = 0) -> np.ndarray:
    """A seeded low-rank-plus-noise score matrix with ``missing`` of its entries NaN (every column seen twice)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3)) @ rng.normal(size=(3, n)) + 0.5 * rng.normal(size=(m, n))
    hide = rng.random((m, n)) < missing
    hide[:2] = False  # every column observed at least twice
    X[hide] = np.nan
    return X


def _dense_mean_imputed(X: np.ndarray, floor: float) -> np.ndarray:
    """Independent computation: correlation of the mean-imputed matrix, eigenvalues floored, unit diagonal."""
    filled = np.where(np.isnan(X), np.nanmean(X, axis=0), X)
    C = np.corrcoef(filled, rowvar=False)
    return floor_eigenvalues(C, floor)


@pytest.fixture
def small_low_rank() -> tuple[LowRankCorrelation, np.ndarray]:
    R = low_rank_floored_correlation(_scores(), floor=1e-3)
    return R, R.to_dense()


def test_low_rank_estimate_equals_the_floored_correlation_of_the_mean_imputed_matrix() -> None:
    X = _scores()
    R = low_rank_floored_correlation(X, floor=1e-3)
    np.testing.assert_allclose(R.to_dense(), _dense_mean_imputed(X, 1e-3), atol=1e-10)
    np.testing.assert_allclose(R.diagonal(), 1.0, atol=1e-12)


def test_low_rank_estimate_on_complete_data_equals_the_dense_floored_pairwise_correlation() -> None:
    X = _scores(missing=0.0)
    dense = floored_pairwise_correlation(X, low_rank=False)
    low = floored_pairwise_correlation(X, low_rank=True)
    assert isinstance(low, LowRankCorrelation) and isinstance(dense, np.ndarray)
    np.testing.assert_allclose(low.to_dense(), dense, atol=1e-10)


def test_low_rank_indexing_returns_the_dense_entries(small_low_rank) -> None:
    R, D = small_low_rank
    rows, cols = np.array([3, 0, 7]), np.array([7, 1, 3, 39])
    np.testing.assert_allclose(R[np.ix_(rows, cols)], D[np.ix_(rows, cols)], atol=1e-14)
    np.testing.assert_allclose(R[:, 5], D[:, 5], atol=1e-14)
    np.testing.assert_allclose(R[2, :], D[2, :], atol=1e-14)
    assert R[4, 4] == pytest.approx(D[4, 4]) and R[4, 9] == pytest.approx(D[4, 9])
    np.testing.assert_allclose(np.asarray(R), D, atol=1e-14)
    assert R.trace() == pytest.approx(np.trace(D))


def test_woodbury_complement_precision_equals_the_inverse_of_the_dense_block(small_low_rank) -> None:
    R, D = small_low_rank
    comp = np.setdiff1d(np.arange(40), [2, 11, 30])
    expected = np.diag(np.linalg.inv(D[np.ix_(comp, comp)]))
    np.testing.assert_allclose(complement_precision_diag(R, comp, 1e-12), expected, rtol=1e-8)


def test_determinant_lemma_logdets_equal_the_dense_ones(small_low_rank) -> None:
    R, D = small_low_rank
    order = [5, 17, 2]
    got = R.logdets_removing(order)
    keep = np.ones(40, dtype=bool)
    expected = [np.linalg.slogdet(D)[1]]
    for j in order:
        keep[j] = False
        expected.append(np.linalg.slogdet(D[np.ix_(keep, keep)])[1])
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_tie_break_centrality_equals_the_dense_one(small_low_rank) -> None:
    R, D = small_low_rank
    selected = np.zeros(40, dtype=bool)
    selected[[1, 8]] = True
    tied = np.array([0, 4, 9, 33])
    dense = _TieBreaker(D, "auto", 1e-10, 1e-12, "entropy")._centrality(tied, selected)
    low = _TieBreaker(R, "auto", 1e-10, 1e-12, "entropy")._centrality(tied, selected)
    np.testing.assert_allclose(low, dense, rtol=1e-10)


@pytest.mark.parametrize("objective", ["entropy", "mi", "random"])
def test_low_rank_selection_equals_the_dense_selection(small_low_rank, objective: str) -> None:
    R, D = small_low_rank
    a = select(R, 6, objective=objective, seed=3)
    b = select(D, 6, objective=objective, seed=3)
    assert a.order == b.order
    np.testing.assert_allclose(a.gains, b.gains, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(a.residual_fraction, b.residual_fraction, rtol=1e-8)
    np.testing.assert_allclose(a.logdet, b.logdet, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(a.mi, b.mi, rtol=1e-6, atol=1e-6)


def test_low_rank_selection_with_mandatory_and_filtered_benchmarks_equals_the_dense_one(small_low_rank) -> None:
    R, D = small_low_rank
    counts = np.r_[np.full(20, 10), np.full(20, 3)]
    sel = Selector("mi", min_observed=5, initial=("b7",))
    names = [f"b{j}" for j in range(40)]
    a = sel.select(R, 5, names=names, counts=counts, n_models=14)
    b = sel.select(D, 5, names=names, counts=counts, n_models=14)
    assert a.order == b.order and a.order[0] == 7 and all(j < 20 for j in a.order)


def test_low_rank_lasso_path_order_equals_the_dense_one(small_low_rank) -> None:
    R, D = small_low_rank
    assert lasso_path_order(R, 6) == lasso_path_order(D, 6)
    assert lasso_path_order(R, 4, initial=[3]) == lasso_path_order(D, 4, initial=[3])


def test_low_rank_conditional_means_equal_the_dense_ones(small_low_rank) -> None:
    R, D = small_low_rank
    rng = np.random.default_rng(1)
    query = rng.normal(size=(6, 40))
    query[rng.random((6, 40)) < 0.4] = np.nan
    columns, targets = [3, 9, 21, 30], np.arange(40)
    m1, v1 = conditional_moments(R, query, columns, targets)
    m2, v2 = conditional_moments(D, query, columns, targets)
    np.testing.assert_allclose(m1, m2, atol=1e-10)
    np.testing.assert_allclose(v1, v2, atol=1e-10)
    train = _scores()
    p1 = GaussianPredictor().fit(train, cov=R).predict(query)
    p2 = GaussianPredictor().fit(train, cov=D).predict(query)
    np.testing.assert_allclose(p1, p2, atol=1e-10)


def test_wide_route_holds_only_matrices_far_above_the_paper_sizes() -> None:
    assert not wide_route(263, 114) and not wide_route(50, 2000) and not wide_route(20000, 300)
    assert wide_route(50, 10000) and not wide_route(20000, 10000)
    assert lowrank.LOW_RANK_BENCHMARKS >= 1000
    assert lowrank.LOW_RANK_BENCHMARKS > corr_mod.EM_WIDE_BENCHMARKS  # "auto" never runs EM on a wide matrix


def test_estimates_on_a_forced_wide_matrix_are_low_rank_and_equal_the_explicit_route(monkeypatch) -> None:
    X = _scores(m=12, n=60)
    monkeypatch.setattr(lowrank, "LOW_RANK_BENCHMARKS", 30)
    monkeypatch.setattr(corr_mod, "EM_WIDE_BENCHMARKS", 30)  # EM too costly here, as it is on every wide matrix
    est = estimate_correlation(X, method="auto", context="cv")
    assert est.method == "pairwise-floored" and isinstance(est.corr, LowRankCorrelation)
    inner = inner_correlation(X)
    assert isinstance(inner, LowRankCorrelation)
    via_pipeline = Correlation("auto").estimate(X, X)
    assert isinstance(via_pipeline, LowRankCorrelation)
    Z = (X - np.nanmean(X, axis=0)) / np.nanstd(X, axis=0, ddof=1)
    np.testing.assert_allclose(est.corr.to_dense(), _dense_mean_imputed(Z, corr_mod.EIGEN_FLOOR), atol=1e-9)


def test_paper_sized_matrices_keep_the_dense_estimate() -> None:
    X = _scores(m=30, n=60)
    assert isinstance(floored_pairwise_correlation(X), np.ndarray)
    assert isinstance(inner_correlation(X), np.ndarray)
    assert isinstance(estimate_correlation(X).corr, np.ndarray)
