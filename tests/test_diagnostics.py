"""Tests for benchsel_lib.diagnostics: eigenspectrum, Lemma 1, BH, Shapiro-Wilk, Mardia, stability."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.studies.diagnostics import (
    adjust_pvalues,
    cholesky_residual_trace,
    eigenspectrum,
    mardia_test,
    positions_from_cv,
    selection_positions,
    selection_summary,
    shapiro_wilk_table,
    spectral_comparison,
)


def random_spd(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n)) * rng.uniform(0.1, 2.0, size=n)
    return A @ A.T + 1e-3 * np.eye(n)


def schur_residual_trace(cov: np.ndarray, subset: list[int]) -> float:
    """tr(Sigma_{rest|A}) by an explicit Schur complement (independent of the library)."""
    rest = [i for i in range(cov.shape[0]) if i not in subset]
    if not rest:
        return 0.0
    S = cov[np.ix_(rest, rest)] - cov[np.ix_(rest, subset)] @ np.linalg.solve(
        cov[np.ix_(subset, subset)], cov[np.ix_(subset, rest)]
    )
    return float(np.trace(S))


def naive_greedy_pivots(cov: np.ndarray, k: int) -> list[int]:
    """Greedy entropy by brute force: pick the largest conditional variance via Schur complements."""
    chosen: list[int] = []
    for _ in range(k):
        best, best_var = None, -np.inf
        for j in range(cov.shape[0]):
            if j in chosen:
                continue
            if chosen:
                var = cov[j, j] - cov[j, chosen] @ np.linalg.solve(cov[np.ix_(chosen, chosen)], cov[chosen, j])
            else:
                var = cov[j, j]
            if var > best_var + 1e-12:
                best, best_var = j, var
        chosen.append(best)
    return chosen


# ------------------------------------------------------------------ eigenspectrum
def test_eigenspectrum_matches_numpy_eigvalsh_on_known_matrix():
    cov = random_spd(9, seed=1)
    spec = eigenspectrum(cov)
    ref = np.sort(np.linalg.eigvalsh(cov))[::-1]
    np.testing.assert_allclose(spec.eigenvalues, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(spec.cumulative, np.cumsum(ref) / ref.sum(), rtol=1e-12)
    np.testing.assert_allclose(spec.residual, 1 - np.cumsum(ref) / ref.sum(), atol=1e-12)
    np.testing.assert_allclose(spec.explained.sum(), 1.0)
    assert spec.total == pytest.approx(np.trace(cov))
    assert np.all(np.diff(spec.eigenvalues) <= 0)


def test_eigenspectrum_component_counts_on_constructed_spectrum():
    lam = np.array([60.0, 20.0, 12.0, 4.0, 3.0, 0.6, 0.4])  # total 100
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(7, 7)))
    spec = eigenspectrum(Q @ np.diag(lam) @ Q.T)
    # rho = .60 .80 .92 .96 .99 .996 1.0
    assert spec.components == {0.90: 3, 0.95: 4, 0.99: 5}
    assert spec.n_components(0.5) == 1
    assert spec.n_components(1.0) == 7
    frame = spec.to_frame()
    assert list(frame.columns) == ["k", "eigenvalue", "explained", "cumulative", "residual"]
    with pytest.raises(ValueError, match="level"):
        spec.n_components(1.5)


def test_eigenspectrum_as_correlation_and_bad_input():
    cov = random_spd(5, seed=3)
    spec = eigenspectrum(cov, as_correlation=True)
    assert spec.total == pytest.approx(5.0)
    with pytest.raises(ValueError, match="square"):
        eigenspectrum(np.ones((2, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        eigenspectrum(np.array([[1.0, 0.5], [0.0, 1.0]]))


def test_eigenspectrum_clips_roundoff_negative_eigenvalues():
    v = np.array([1.0, 1.0, 1.0]) / np.sqrt(3)
    cov = np.outer(v, v) - 1e-13 * np.eye(3)
    spec = eigenspectrum(cov)
    assert spec.n_clipped == 2 and spec.min_raw_eigenvalue < 0
    assert np.all(spec.eigenvalues >= 0)
    assert spec.components[0.99] == 1


# ------------------------------------------------------------------ Lemma 1
@pytest.mark.parametrize("seed", range(6))
def test_eigen_tail_lower_bounds_residual_trace_of_every_subset(seed):
    n = 7
    cov = random_spd(n, seed)
    tail = eigenspectrum(cov).tail
    for k in range(1, n):
        for subset in itertools.combinations(range(n), k):
            assert tail[k - 1] <= schur_residual_trace(cov, list(subset)) + 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_pivoted_cholesky_residual_equals_schur_trace_of_greedy_set(seed):
    n = 8
    cov = random_spd(n, seed + 10)
    traces, pivots = cholesky_residual_trace(cov)
    assert list(pivots) == naive_greedy_pivots(cov, n)
    for k in range(1, n + 1):
        # Lemma 1(b): tr(Sigma_{rest|A_k}) = tr(Sigma - L_k L_k^T)
        assert traces[k - 1] == pytest.approx(schur_residual_trace(cov, list(pivots[:k])), rel=1e-9, abs=1e-9)
    # explicit L_k L_k^T check with an independent factorization of the pivot block
    k = 4
    P = list(pivots[:k])
    L_pp = np.linalg.cholesky(cov[np.ix_(P, P)])
    L = np.linalg.solve(L_pp, cov[P, :]).T  # rows: all variables, cols: k
    assert np.trace(cov - L @ L.T) == pytest.approx(traces[k - 1], rel=1e-9)


def test_residual_trace_with_given_order_and_spectral_comparison():
    cov = random_spd(6, seed=42)
    order = [5, 2, 0]
    traces, pivots = cholesky_residual_trace(cov, order=order)
    assert list(pivots) == order
    for k in range(1, 4):
        assert traces[k - 1] == pytest.approx(schur_residual_trace(cov, order[:k]), rel=1e-9)
    names = [f"b{i}" for i in range(6)]
    df = spectral_comparison(cov, k_max=5, names=names)
    assert list(df["k"]) == [1, 2, 3, 4, 5]
    assert (df["cholesky_residual"] >= df["eigen_tail"] - 1e-9).all()
    assert (df["ratio"].dropna() >= 1 - 1e-9).all()
    assert df["pivot_name"].iloc[0] == names[int(np.argmax(np.diag(cov)))]
    with pytest.raises(ValueError, match="out of range"):
        cholesky_residual_trace(cov, 7)
    with pytest.raises(ValueError, match="distinct"):
        cholesky_residual_trace(cov, order=[1, 1])


def test_residual_trace_is_finite_and_zero_on_rank_deficient_matrix():
    rng = np.random.default_rng(5)
    B = rng.normal(size=(6, 2))
    cov = B @ B.T
    traces, _ = cholesky_residual_trace(cov)
    assert np.isfinite(traces).all()
    assert traces[1] == pytest.approx(0.0, abs=1e-9)


# ------------------------------------------------------------------ BH / Bonferroni
def brute_force_bh_reject(p: np.ndarray, alpha: float) -> np.ndarray:
    """Benjamini-Hochberg by definition: reject the k* smallest, k* = max{k : p_(k) <= k alpha / m}."""
    m = p.size
    ps = np.sort(p)
    kstar = 0
    for k in range(1, m + 1):
        if ps[k - 1] <= k * alpha / m:
            kstar = k
    if kstar == 0:
        return np.zeros(m, dtype=bool)
    return p <= ps[kstar - 1]


@pytest.mark.parametrize("seed", range(20))
def test_bh_adjusted_pvalues_agree_with_brute_force_definition(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 40))
    p = np.concatenate([rng.uniform(0, 0.01, size=m // 3), rng.uniform(0, 1, size=m - m // 3)])
    p = np.round(p, 3)  # create ties
    q = adjust_pvalues(p, method="bh")
    for alpha in (0.01, 0.05, 0.2):
        np.testing.assert_array_equal(q <= alpha, brute_force_bh_reject(p, alpha))
    # adjusted value by definition: min over j >= rank(i) of m p_(j) / j
    ps = np.sort(p)
    brute = np.array([min(1.0, min(m * ps[j] / (j + 1) for j in range(m) if ps[j] >= pi)) for pi in p])
    np.testing.assert_allclose(q, brute, rtol=1e-12)


def test_bonferroni_and_bad_pvalues():
    np.testing.assert_allclose(adjust_pvalues([0.01, 0.2, 0.5], method="bonferroni"), [0.03, 0.6, 1.0])
    with pytest.raises(ValueError, match="correction"):
        adjust_pvalues([0.1], method="holm")
    with pytest.raises(ValueError, match="0, 1"):
        adjust_pvalues([1.2])


# ------------------------------------------------------------------ Shapiro-Wilk
def test_shapiro_table_flags_non_normal_column_and_excludes_thin_column():
    rng = np.random.default_rng(0)
    M = 200
    X = np.full((M, 4), np.nan)
    X[:, 0] = rng.normal(size=M)
    X[:, 1] = rng.exponential(size=M) ** 2  # clearly non-normal
    X[:, 2] = rng.normal(size=M)
    X[:3, 3] = [0.1, 0.5, 0.2]  # 3 observations: not tested
    df = shapiro_wilk_table(X, names=["a", "skewed", "c", "thin"], correction="bh", min_observed=8)
    assert list(df.columns) == ["n", "W", "p", "p_adjusted", "reject", "tested", "reason"]
    assert bool(df.loc["skewed", "reject"]) is True
    assert not bool(df.loc["a", "reject"])
    assert df.loc["thin", "n"] == 3 and not df.loc["thin", "tested"]
    assert pd.isna(df.loc["thin", "W"]) and pd.isna(df.loc["thin", "p_adjusted"])
    assert pd.isna(df.loc["thin", "reject"])
    assert "fewer than 8" in df.loc["thin", "reason"]
    assert df.attrs["n_tested"] == 3 and df.attrs["n_excluded"] == 1 and df.attrs["min_observed"] == 8
    # the correction runs over the tested columns only
    tested = df[df["tested"]]
    np.testing.assert_allclose(tested["p_adjusted"], adjust_pvalues(tested["p"].to_numpy()))


def test_shapiro_table_uses_observed_entries_and_bonferroni():
    from scipy import stats

    rng = np.random.default_rng(1)
    x = rng.normal(size=50)
    X = np.column_stack([x, rng.normal(size=50)])
    X[::5, 0] = np.nan
    df = shapiro_wilk_table(X, correction="bonferroni")
    res = stats.shapiro(x[~np.isnan(X[:, 0])])
    assert df.loc["b0", "n"] == 40
    assert df.loc["b0", "W"] == pytest.approx(res.statistic)
    assert df.loc["b0", "p_adjusted"] == pytest.approx(min(1.0, 2 * res.pvalue))
    with pytest.raises(ValueError, match="correction"):
        shapiro_wilk_table(X, correction="fdr")
    with pytest.raises(ValueError, match="names"):
        shapiro_wilk_table(X, names=["only-one"])


def test_shapiro_table_reports_constant_column_untested():
    X = np.column_stack([np.ones(20), np.arange(20.0) ** 2])
    df = shapiro_wilk_table(X)
    assert not df.loc["b0", "tested"] and df.loc["b0", "reason"] == "constant column"


# ------------------------------------------------------------------ Mardia
def test_mardia_does_not_reject_gaussian_data():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(4, 4))
    X = rng.normal(size=(400, 4)) @ A.T
    res = mardia_test(X)
    assert res.n_rows == 400 and res.dim == 4 and res.rank == 4 and not res.pseudo_inverse
    assert res.skew_df == pytest.approx(4 * 5 * 6 / 6)
    assert res.kurt_expected == pytest.approx(24.0)
    assert not res.skew_reject and not res.kurt_reject


def test_mardia_rejects_strongly_skewed_data():
    rng = np.random.default_rng(8)
    X = rng.exponential(size=(300, 3)) ** 2
    res = mardia_test(X)
    assert res.skew_reject and res.kurt_reject
    assert res.skew_p < 1e-6 and res.kurt_statistic > 0


def test_mardia_statistics_match_direct_formulas():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(30, 3))
    res = mardia_test(X)
    Xc = X - X.mean(0)
    S = Xc.T @ Xc / 30
    D = Xc @ np.linalg.inv(S) @ Xc.T
    assert res.b1 == pytest.approx((D**3).sum() / 30**2, rel=1e-9)
    assert res.b2 == pytest.approx((np.diag(D) ** 2).sum() / 30, rel=1e-9)
    assert res.skew_statistic == pytest.approx(30 * res.b1 / 6)
    assert res.kurt_statistic == pytest.approx((res.b2 - 15) / np.sqrt(8 * 15 / 30))


def test_mardia_complete_rows_rule_and_pseudo_inverse():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(50, 3))
    X = np.column_stack([X, X[:, 0] + X[:, 1]])  # singular covariance
    X[:5, 2] = np.nan
    res = mardia_test(X)
    assert res.n_rows == 45 and res.n_dropped == 5
    assert res.pseudo_inverse and res.rank == 3 and res.notes
    assert np.isfinite([res.b1, res.b2, res.skew_p, res.kurt_p]).all()
    with pytest.raises(ValueError, match="complete rows"):
        mardia_test(np.where(rng.random((10, 6)) < 0.5, np.nan, 1.0))


# ------------------------------------------------------------------ selection stability
def test_selection_positions_and_summary():
    names = ["a", "b", "c", "d"]
    folds = [["a", "b", "c"], ["b", "a", "c"], [0, 2, 1]]
    pos = selection_positions(folds, names=names)
    assert list(pos.columns) == ["benchmark", "fold", "position"]
    assert len(pos) == 9 and pos.attrs["n_folds"] == 3
    row = pos[(pos["fold"] == 2) & (pos["benchmark"] == "c")]
    assert int(row["position"].iloc[0]) == 2
    summ = selection_summary(pos, top=2)
    assert list(summ.index[:3]) == ["a", "b", "c"]
    assert summ.loc["a", "mean_position"] == pytest.approx(4 / 3)
    assert summ.loc["a", "folds_in_top"] == 3 and summ.loc["c", "folds_in_top"] == 1
    assert summ.loc["d", "n_folds_selected"] == 0 and pd.isna(summ.loc["d", "mean_position"])
    with pytest.raises(ValueError, match="twice"):
        selection_positions([["a", "a"]], names=names)
    with pytest.raises(ValueError, match="not a benchmark"):
        selection_positions([["zz"]], names=names)
    with pytest.raises(ValueError, match="pass names"):
        selection_positions([[0, 1]])


def test_positions_from_cv_table_uses_largest_k_per_fold():
    rows = []
    for fold, order in enumerate([("x", "y", "z"), ("y", "x", "z")]):
        for k in (1, 2, 3):
            rows.append(dict(pipeline="mi", holdout=0.1, fold=fold, k=k, selected=order[:k]))
    cv = pd.DataFrame(rows)
    pos = positions_from_cv(cv, pipeline="mi", holdout=0.1)
    assert len(pos) == 6
    assert selection_summary(pos).loc["z", "mean_position"] == 3
    with pytest.raises(ValueError, match="no rows"):
        positions_from_cv(cv, pipeline="entropy")
