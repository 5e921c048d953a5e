"""Tests of benchsel_lib.estimation against independent computations."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from benchsel_lib.method.correlation import estimate_correlation
from benchsel_lib.method.covariance import (
    cov_to_corr,
    observed_mean,
    pairwise_covariance,
    pairwise_pearson,
)
from benchsel_lib.method.em import em_covariance, em_settings
from benchsel_lib.method.scaling import fit_standardizer


def _random_spd(n: int, rng: np.random.Generator) -> np.ndarray:
    A = rng.standard_normal((n, n))
    return A @ A.T / n + 0.5 * np.eye(n)


def _mar_data(M: int, N: int, rng: np.random.Generator, *, p_base: float = 0.3):
    """Gaussian data; column 0 always observed, others missing with a probability driven by column 0 (MAR)."""
    S = _random_spd(N, rng)
    mu = rng.standard_normal(N)
    X = rng.multivariate_normal(mu, S, size=M)
    prob = np.clip(p_base + 0.3 * (X[:, [0]] > mu[0]), 0, 0.9)
    miss = rng.random((M, N)) < prob
    miss[:, 0] = False
    Xm = X.copy()
    Xm[miss] = np.nan
    return Xm, mu, S


def _brute_em_step(X, mu, S, *, correction=True):
    """One EM iteration written per row, as in Appendix G (independent of the library)."""
    M, N = X.shape
    Xc = X.copy()
    Csum = np.zeros((N, N))
    ll = 0.0
    for i in range(M):
        o = np.flatnonzero(~np.isnan(X[i]))
        m = np.flatnonzero(np.isnan(X[i]))
        Soo = S[np.ix_(o, o)]
        d = X[i, o] - mu[o]
        ll += -0.5 * (o.size * np.log(2 * np.pi) + np.linalg.slogdet(Soo)[1] + d @ np.linalg.solve(Soo, d))
        if m.size:
            Smo = S[np.ix_(m, o)]
            Xc[i, m] = mu[m] + Smo @ np.linalg.solve(Soo, d)
            Csum[np.ix_(m, m)] += S[np.ix_(m, m)] - Smo @ np.linalg.solve(Soo, Smo.T)
    mu2 = Xc.mean(axis=0)
    R = Xc - mu2
    S2 = R.T @ R / M + (Csum / M if correction else 0.0)
    return mu2, S2, ll


# ---------------------------------------------------------------------------
# standardizer and pairwise covariance
# ---------------------------------------------------------------------------


def test_standardizer_uses_observed_entries_and_relative_floor():
    X = np.array([[1.0, 5.0, 100.0], [3.0, np.nan, 100.0], [np.nan, 5.0, 100.0], [2.0, 5.0, 100.001]])
    st = fit_standardizer(X, std_floor="relative")
    assert st.mean[0] == pytest.approx(2.0)
    assert st.std[0] == pytest.approx(np.std([1.0, 3.0, 2.0], ddof=1))  # n - 1 denominator, as the paper
    # constant column: floored at 0.01 * (|mean| + 1)
    assert st.std[1] == pytest.approx(0.01 * 6.0)
    # tiny spread relative to level: the relative floor is active
    assert st.std[2] == pytest.approx(0.01 * (abs(st.mean[2]) + 1))
    Z = st.transform(X)
    np.testing.assert_allclose(st.inverse_transform(Z), X)


def test_standardizer_variance_floor_and_single_observation_column():
    X = np.array([[1.0, 7.0], [3.0, np.nan], [5.0, np.nan]])
    st = fit_standardizer(X, std_floor="variance")
    assert st.std[1] == pytest.approx(1e-6)  # sqrt(1e-12)
    for ddof in (0, 1):
        for floor in ("relative", "variance"):
            s = fit_standardizer(X, std_floor=floor, ddof=ddof)
            assert np.isfinite(s.std).all() and (s.std > 0).all()


def test_pairwise_covariance_equals_double_loop():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((9, 5))
    X[rng.random(X.shape) < 0.35] = np.nan
    X[0, :] = 1.0  # keep every column observed
    X[1, 4] = np.nan
    M, N = X.shape
    obs = ~np.isnan(X)
    mu = np.array([X[obs[:, j], j].mean() for j in range(N)])
    ref = np.zeros((N, N))
    for j in range(N):
        for k in range(N):
            both = obs[:, j] & obs[:, k]
            s = sum((X[i, j] - mu[j]) * (X[i, k] - mu[k]) for i in range(M) if both[i])
            ref[j, k] = s / max(both.sum() - 1, 1)
    np.testing.assert_allclose(pairwise_covariance(X), ref, atol=1e-13)


def test_pairwise_covariance_fully_observed_is_sample_covariance():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 4))
    np.testing.assert_allclose(pairwise_covariance(X), np.cov(X, rowvar=False), atol=1e-13)


def test_pairwise_covariance_never_nan_with_single_coobservation():
    X = np.array([[1.0, np.nan], [np.nan, 2.0], [3.0, np.nan]])
    C = pairwise_covariance(X)
    assert np.isfinite(C).all()
    assert C[0, 1] == 0.0


def test_observed_mean_is_each_columns_mean_over_its_observed_rows():
    X = np.array([[1.0, np.nan, np.nan], [3.0, 4.0, np.nan], [np.nan, 8.0, np.nan]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a column no row observes is no division by zero
        np.testing.assert_array_equal(observed_mean(X), [2.0, 6.0, np.nan])
        np.testing.assert_array_equal(observed_mean(X, empty=0.0), [2.0, 6.0, 0.0])


def test_pairwise_pearson_is_each_pairs_own_correlation_and_undefined_where_thin_or_constant():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((14, 6)) @ rng.standard_normal((6, 6)) + 50.0  # far from 0: rounding is tested
    X[rng.random(X.shape) < 0.3] = np.nan
    X[:, 5] = np.where(np.isnan(X[:, 5]), np.nan, 0.7)  # constant wherever observed
    X[3:, 4] = np.nan  # column 4: three rows at most in common with any other
    obs = ~np.isnan(X)
    corr, counts = pairwise_pearson(X, min_overlap=4)
    for a in range(6):
        for b in range(6):
            both = obs[:, a] & obs[:, b]
            assert counts[a, b] == both.sum()
            if both.sum() < 4 or 5 in (a, b):
                assert np.isnan(corr[a, b]), (a, b)
            else:
                assert corr[a, b] == pytest.approx(np.corrcoef(X[both, a], X[both, b])[0, 1], abs=1e-10)
    assert np.isfinite(corr[:4, :4]).all()
    # three common rows are the least a correlation is read from, whatever min_overlap says
    assert np.isnan(pairwise_pearson(X[:2], min_overlap=1)[0]).all()


# ---------------------------------------------------------------------------
# EM
# ---------------------------------------------------------------------------


def test_em_recovers_known_covariance_under_mar_missingness():
    rng = np.random.default_rng(2)
    X, mu, S = _mar_data(3000, 6, rng)
    r = em_covariance(X, tol=1e-8, shrinkage=None, eps_psd=None)
    assert r.converged
    assert np.abs(r.cov - S).max() < 0.12
    assert np.abs(r.mean - mu).max() < 0.08
    # the naive complete-case mean of a MAR column is biased; EM is not
    assert np.isnan(r.completed).sum() == 0


def test_em_step_matches_brute_force_including_correction():
    rng = np.random.default_rng(3)
    X, _, _ = _mar_data(40, 7, rng, p_base=0.4)
    X[1, 1:] = np.nan  # a row with a single observed entry
    X[2, :] = rng.standard_normal(7)  # a fully observed row
    mu0 = np.nanmean(X, axis=0)
    S0 = _random_spd(7, rng)
    r = em_covariance(X, max_iter=1, tol=1e-300, shrinkage=None, eps_psd=None, init=(mu0, S0))
    mu1, S1, ll0 = _brute_em_step(X, mu0, S0)
    np.testing.assert_allclose(r.mean, mu1, atol=1e-12)
    np.testing.assert_allclose(r.cov, S1, atol=1e-12)
    assert r.loglik[0] == pytest.approx(ll0, rel=1e-12)
    # many patterns with few observed entries (exercises both block forms)
    Y, _, _ = _mar_data(60, 12, rng, p_base=0.6)
    S0 = _random_spd(12, rng)
    mu0 = np.nanmean(Y, axis=0)
    r = em_covariance(Y, max_iter=1, tol=1e-300, shrinkage=None, eps_psd=None, init=(mu0, S0))
    mu1, S1, ll0 = _brute_em_step(Y, mu0, S0)
    np.testing.assert_allclose(r.cov, S1, atol=1e-12)
    assert r.loglik[0] == pytest.approx(ll0, rel=1e-12)


def _clamp(S, eps):
    w, V = np.linalg.eigh(S)
    return (V * np.maximum(w, eps)) @ V.T


@pytest.mark.parametrize("accelerate", [None, "squarem"])
def test_em_iterates_with_a_binding_psd_floor_match_brute_force_steps(accelerate):
    # low-rank scores: most eigenvalues sit on the floor, so every update clamps
    # and the next E-step reuses the floor's eigendecomposition for Sigma^{-1}
    rng = np.random.default_rng(21)
    M, N, eps = 50, 12, 1e-2
    X = rng.standard_normal((M, 3)) @ rng.standard_normal((3, N)) + 1e-3 * rng.standard_normal((M, N))
    miss = rng.random((M, N)) < np.where(np.arange(M)[:, None] % 2 == 0, 0.15, 0.8)  # both block forms
    miss[:, 0] = False
    X[miss] = np.nan
    mu0 = np.nanmean(X, axis=0)
    S0 = _random_spd(N, rng)
    n = 6 if accelerate is None else 30
    r = em_covariance(X, max_iter=n, tol=1e-300, shrinkage=None, eps_psd=eps, init=(mu0, S0),
                      accelerate=accelerate)
    if accelerate is None:
        mu, S = mu0, _clamp(S0, eps)
        lls = []
        for _ in range(n):
            mu, S, ll = _brute_em_step(X, mu, S)
            S = _clamp(S, eps)
            lls.append(ll)
        assert np.linalg.eigvalsh(S).min() == pytest.approx(eps)  # the floor did bind
        np.testing.assert_allclose(r.mean, mu, atol=1e-10)
        np.testing.assert_allclose(r.cov, S, atol=1e-10)
        np.testing.assert_allclose(r.loglik, lls, rtol=1e-10)
    else:  # SQUAREM: the same iterates as with the floor's spectrum thrown away (Cholesky every E-step)
        from benchsel_lib.method import em as estimation

        original = estimation.psd_floor

        def without_spectrum(S, eps, **kw):
            out = original(S, eps, **kw)
            return (out[0], None) if kw.get("spectrum") else out

        estimation.psd_floor = without_spectrum
        try:
            ref = em_covariance(X, max_iter=n, tol=1e-300, shrinkage=None, eps_psd=eps, init=(mu0, S0),
                                accelerate=accelerate)
        finally:
            estimation.psd_floor = original
        assert r.n_iter == ref.n_iter == n
        np.testing.assert_allclose(r.cov, ref.cov, atol=1e-10)
        np.testing.assert_allclose(r.loglik, ref.loglik, rtol=1e-10)


def test_dropping_the_correction_biases_variances_downward():
    rng = np.random.default_rng(4)
    X, _, S = _mar_data(400, 4, rng, p_base=0.5)
    r = em_covariance(X, tol=1e-10, shrinkage=None, eps_psd=None)
    # at the EM fixpoint the full update (with correction) leaves Sigma unchanged ...
    _, S_full, _ = _brute_em_step(X, r.mean, r.cov, correction=True)
    np.testing.assert_allclose(S_full, r.cov, atol=1e-7)
    # ... while the update without the conditional-covariance term shrinks every
    # variance of a column with missing entries, and keeps shrinking it
    mu, C = r.mean, r.cov
    for _ in range(10):
        mu, C, _ = _brute_em_step(X, mu, C, correction=False)
    assert (np.diag(C)[1:] < np.diag(r.cov)[1:] - 1e-3).all()
    assert np.diag(C)[0] == pytest.approx(np.diag(r.cov)[0], rel=1e-2)  # fully observed column


def test_observed_loglik_is_non_decreasing_without_shrinkage_or_projection():
    rng = np.random.default_rng(5)
    X, _, _ = _mar_data(200, 8, rng, p_base=0.4)
    r = em_covariance(X, max_iter=200, tol=1e-10, shrinkage=None, eps_psd=None, accelerate=None)
    diffs = np.diff(r.loglik)
    assert (diffs >= -1e-9 * np.abs(r.loglik[1:])).all()
    assert r.loglik[-1] > r.loglik[0]


def test_fully_observed_converges_fast_to_sample_covariance():
    rng = np.random.default_rng(6)
    X = rng.multivariate_normal(np.zeros(5), _random_spd(5, rng), size=100)
    r = em_covariance(X, tol=1e-6, shrinkage=None, eps_psd=None)
    assert r.converged and r.n_iter <= 3
    np.testing.assert_allclose(r.cov, np.cov(X, rowvar=False, ddof=0), atol=1e-12)
    np.testing.assert_allclose(r.completed, X)


def test_rank_deficient_uses_ledoit_wolf_intensity():
    rng = np.random.default_rng(7)
    M, N = 6, 10
    X = rng.standard_normal((M, N))
    X[0, 3] = np.nan
    r = em_covariance(X, tol=1e-6, max_iter=100)
    assert r.shrinkage == pytest.approx((N - M) / N)
    assert np.isfinite(r.cov).all()
    assert np.linalg.eigvalsh(r.cov).min() > 0
    # "auto" applies nothing when M >= N; a float is used as given
    Y = rng.standard_normal((20, 4))
    assert em_covariance(Y).shrinkage == 0.0
    assert em_covariance(Y, shrinkage=0.25).shrinkage == 0.25


def test_shrinkage_is_applied_once_after_convergence():
    rng = np.random.default_rng(8)
    X = rng.standard_normal((5, 8))
    a = 3 / 8
    r = em_covariance(X, tol=1e-10, eps_psd=1e-3, max_iter=100)
    unshrunk = em_covariance(X, tol=1e-10, eps_psd=1e-3, shrinkage=None, init=(r.mean, r.cov), max_iter=5)
    # r.cov = (1 - a) S* + a tr(S*)/N I for the fixpoint S*: undo it and check S* is a fixpoint-ish
    S_star = (r.cov - a * np.trace(r.cov) / 8 * np.eye(8)) / (1 - a)
    assert np.trace(S_star) == pytest.approx(np.trace(r.cov))
    assert np.isfinite(unshrunk.cov).all()


def test_em_is_deterministic():
    rng = np.random.default_rng(9)
    X, _, _ = _mar_data(80, 6, rng)
    a = em_covariance(X, max_iter=100)
    b = em_covariance(X.copy(), max_iter=100)
    np.testing.assert_array_equal(a.cov, b.cov)
    np.testing.assert_array_equal(a.loglik, b.loglik)


@pytest.mark.parametrize("max_iter", [1000, 40])
def test_snapshots_at_looser_tolerances_equal_separate_runs(max_iter):
    rng = np.random.default_rng(12)
    X, _, _ = _mar_data(20, 30, rng, p_base=0.5)  # M < N: shrinkage and a binding PSD floor
    tight = em_covariance(X, tol=1e-7, max_iter=max_iter, eps_psd=1e-3, snapshot_tols=(1e-2, 5e-4, 1e-7))
    assert [s[0] for s in tight.snapshots] == [1e-2, 5e-4, 1e-7]
    for t, mean, cov, n_iter, converged in tight.snapshots:
        alone = em_covariance(X, tol=t, max_iter=max_iter, eps_psd=1e-3)
        assert (n_iter, converged) == (alone.n_iter, alone.converged)
        np.testing.assert_array_equal(cov, alone.cov)
        np.testing.assert_array_equal(mean, alone.mean)
    assert tight.snapshots[0][3] < tight.snapshots[1][3]


def test_snapshot_tolerances_must_be_looser_and_the_iteration_plain():
    X = np.random.default_rng(13).standard_normal((10, 4))
    X[0, 1] = np.nan
    with pytest.raises(ValueError, match="snapshot_tols"):
        em_covariance(X, tol=1e-4, snapshot_tols=(1e-5,))
    with pytest.raises(ValueError, match="plain iteration"):
        em_covariance(X, tol=1e-4, snapshot_tols=(1e-3,), accelerate="squarem")


def test_squarem_reaches_the_same_fixpoint():
    rng = np.random.default_rng(10)
    X, _, _ = _mar_data(300, 8, rng, p_base=0.5)
    plain = em_covariance(X, tol=1e-11, max_iter=5000, shrinkage=None, eps_psd=None, accelerate=None)
    fast = em_covariance(X, tol=1e-11, max_iter=5000, shrinkage=None, eps_psd=None, accelerate="squarem")
    assert plain.converged and fast.converged
    assert fast.n_iter < plain.n_iter
    np.testing.assert_allclose(fast.cov, plain.cov, atol=1e-7)


def test_psd_floor_keeps_eigenvalues_above_eps():
    rng = np.random.default_rng(11)
    X = rng.standard_normal((30, 12))
    X[:, 5] = X[:, 4]  # duplicated column
    X[rng.random(X.shape) < 0.5] = np.nan
    X[0] = 0.0
    r = em_covariance(X, eps_psd=1e-3, max_iter=50)
    assert np.linalg.eigvalsh(r.cov).min() >= 1e-3 * (1 - 1e-8)


# ---------------------------------------------------------------------------
# settings, correlation, bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "M,N,frac,config,expected",
    [
        (100, 50, 0.9, "released", (500, 1e-6)),
        (100, 50, 0.3, "released", (1000, 1e-3)),
        (40, 50, 0.9, "released", (1000, 1e-3)),
        (100, 50, 0.3, "early", (500, 1e-6)),
        (40, 50, 0.9, "early", (1000, 1e-3)),
    ],
)
def test_em_settings_configs(M, N, frac, config, expected):
    s = em_settings(M, N, frac, config=config)
    assert (s["max_iter"], s["eps_psd"]) == expected
    assert s["shrinkage"] == (pytest.approx((N - M) / N) if M < N else None)


def test_cov_to_corr_guards_zero_and_negative_diagonal():
    C = np.array([[4.0, 2.0, 1.0], [2.0, 0.0, 0.0], [1.0, 0.0, 1.0]])
    R = cov_to_corr(C)
    assert np.isfinite(R).all()
    np.testing.assert_allclose(np.diag(R), 1.0)
    assert R[0, 2] == pytest.approx(0.5)
    assert R[0, 1] == 0.0


def test_estimate_correlation_auto_rule():
    rng = np.random.default_rng(12)
    X = rng.standard_normal((40, 5)) * [1, 2, 3, 4, 5] + 10
    est = estimate_correlation(X)
    assert est.method == "pairwise" and est.em is None
    np.testing.assert_allclose(est.corr, np.corrcoef(X, rowvar=False), atol=1e-12)
    np.testing.assert_allclose(est.mean, X.mean(axis=0))
    Xm = X.copy()
    Xm[3, 2] = np.nan
    est = estimate_correlation(Xm)
    assert est.method == "em" and est.em is not None
    assert estimate_correlation(rng.standard_normal((4, 6))).method == "em"  # M < N


@pytest.mark.parametrize("case", ["constant", "duplicated", "wide", "sparse"])
def test_estimate_correlation_is_finite_on_degenerate_input(case):
    rng = np.random.default_rng(13)
    X = rng.standard_normal((12, 6))
    if case == "constant":
        X[:, 2] = 3.0
    elif case == "duplicated":
        X[:, 4] = X[:, 1]
    elif case == "wide":
        X = rng.standard_normal((4, 15))
    else:
        X[rng.random(X.shape) < 0.6] = np.nan
        X[0] = 1.0
        X[:, 0] = rng.standard_normal(12)
        X[:, 3] = np.where(np.arange(12) == 5, 2.0, np.nan)  # a single-observation column
    for method in ("auto", "pairwise", "em"):
        est = estimate_correlation(X, method=method, em_options={"max_iter": 100})
        assert np.isfinite(est.corr).all() and np.isfinite(est.cov).all()
        np.testing.assert_allclose(np.diag(est.corr), 1.0)


@pytest.mark.parametrize(
    "X,msg",
    [
        (np.array([[1.0, np.nan], [2.0, np.nan]]), "all-missing column"),
        (np.array([[1.0, 2.0], [np.nan, np.nan], [3.0, 1.0]]), "all-missing row"),
        (np.array([[1.0, 2.0]]), "at least 2 models"),
        (np.array([[1.0, np.inf], [2.0, 3.0]]), "infinite"),
    ],
)
def test_bad_input_raises_value_error_naming_the_problem(X, msg):
    for fn in (em_covariance, estimate_correlation):
        with pytest.raises(ValueError, match=msg):
            fn(X)


def test_bad_options_raise_value_error():
    X = np.random.default_rng(0).standard_normal((10, 3))
    with pytest.raises(ValueError, match="method"):
        estimate_correlation(X, method="magic")
    with pytest.raises(ValueError, match="std_floor"):
        fit_standardizer(X, std_floor="none")
    with pytest.raises(ValueError, match="config"):
        em_settings(10, 3, 1.0, config="later")
    with pytest.raises(ValueError, match="shrinkage"):
        em_covariance(X, shrinkage=1.5)
    with pytest.raises(ValueError, match="accelerate"):
        em_covariance(X, accelerate="aitken")


@pytest.mark.parametrize(
    "M,N,frac,config,expected",
    [
        (100, 50, 0.9, "released", "squarem"),  # light regime: EM converges, SQUAREM is sound
        (100, 50, 0.3, "released", None),  # heavy regime: the capped plain iterate defines the estimate
        (40, 50, 0.9, "released", None),
        (100, 50, 0.3, "early", "squarem"),
    ],
)
def test_em_settings_accelerates_only_in_the_light_regime(M, N, frac, config, expected):
    assert em_settings(M, N, frac, config=config)["accelerate"] == expected
    assert em_settings(M, N, frac, config=config, accelerate=None)["accelerate"] is None
    assert em_settings(M, N, frac, config=config, accelerate="squarem")["accelerate"] == "squarem"


def test_em_settings_rejects_unknown_acceleration():
    with pytest.raises(ValueError, match="accelerate"):
        em_settings(100, 50, 0.9, accelerate="anderson")


def test_default_settings_reach_the_plain_fixpoint_on_a_light_regime_matrix():
    rng = np.random.default_rng(3)
    C = np.array([[1.0, 0.6, 0.3, 0.1], [0.6, 1.0, 0.5, 0.2], [0.3, 0.5, 1.0, 0.4], [0.1, 0.2, 0.4, 1.0]])
    X = rng.multivariate_normal(np.zeros(4), C, size=300)
    miss = rng.random(X.shape) < 0.2
    miss[:, 0] = False  # no all-missing rows
    X[miss] = np.nan
    opts = em_settings(*X.shape, float(np.isfinite(X).mean()))
    assert opts["accelerate"] == "squarem"
    fast = em_covariance(X, **{**opts, "tol": 1e-10})
    plain = em_covariance(X, **{**opts, "tol": 1e-10, "accelerate": None})
    assert fast.converged and plain.converged
    assert fast.n_iter < plain.n_iter
    np.testing.assert_allclose(fast.cov, plain.cov, atol=1e-7)
