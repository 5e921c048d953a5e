"""The steps the paper's text leaves open, each computed the paper's way on a small matrix,
and the sparse-matrix results they reproduce (Section 5.1, Appendix F, Appendix G, Appendix I).

Facts pinned here:

1. EM stops at the first iteration whose relative Frobenius change of Sigma (after the
   PSD floor) is below 5e-4: always in cross-validation splits, and for full-matrix
   estimates in the heavy regime (full Merged then stops after exactly the 274 iterations
   of Appendix G, with 8 / 12 components for 90% / 95% of the variance, Section 5.2).
2. Column standard deviations divide by n - 1.
3. A validation model that observes none of the selected benchmarks is not scored
   (the other reading, predicting it by the training mean, is tested in test_evaluation).
4. ``scheme="paper"`` draws folds, training sets and the random baseline from the
   streams of the paper's code release, so seed 42 gives the paper's own folds.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib import (
    Pipeline,
    ScoreMatrix,
    cross_validate,
    estimate_correlation,
    load_matrix,
)
from benchsel_lib.method.em import CV_TOL, FULL_TOL, em_settings
from benchsel_lib.method.scaling import fit_standardizer
from benchsel_lib.protocol.splits import cv_splits
from benchsel_lib.studies.diagnostics import eigenspectrum


def _sparse_toy(seed: int = 3, M: int = 14, N: int = 6) -> np.ndarray:
    """A small low-rank matrix with about half of its entries missing, two columns observed thrice."""
    rng = np.random.default_rng(seed)
    X = 60 + 8 * (rng.normal(size=(M, 2)) @ rng.normal(size=(2, N))) + rng.normal(size=(M, N))
    X[rng.random((M, N)) < 0.45] = np.nan
    X[:, 0] = 60 + 8 * rng.normal(size=M)  # keep every row observed somewhere
    X[3:, 4:] = np.nan  # two thin columns: observed by the first three models only
    return X


def _paper_em(Z: np.ndarray, *, max_iter: int, tol: float, eps: float, alpha: float) -> tuple[np.ndarray, int]:
    """Appendix G written per row: pairwise start, PSD floor after every M-step, shrinkage
    at the start and once more at the end, stop at the first relative change below ``tol``."""
    M, N = Z.shape
    O = ~np.isnan(Z)
    B = np.where(O, Z, 0.0)
    mu = B.sum(0) / O.sum(0)
    Bc = np.where(O, Z - mu, 0.0)
    S = Bc.T @ Bc / np.maximum(O.T.astype(float) @ O - 1.0, 1.0)

    def floor(A: np.ndarray) -> np.ndarray:
        w, V = np.linalg.eigh((A + A.T) / 2)
        return (V * np.maximum(w, eps)) @ V.T

    def shrink(A: np.ndarray) -> np.ndarray:
        return (1 - alpha) * A + alpha * np.trace(A) / N * np.eye(N)

    S = shrink(floor(S))
    it = 0
    for it in range(1, max_iter + 1):
        Xc, C = B.copy(), np.zeros((N, N))
        for i in range(M):
            o, m = O[i], ~O[i]
            if m.any():
                K = np.linalg.solve(S[np.ix_(o, o)], S[np.ix_(o, m)])
                Xc[i, m] = mu[m] + (Z[i, o] - mu[o]) @ K
                C[np.ix_(m, m)] += S[np.ix_(m, m)] - S[np.ix_(m, o)] @ K
        mu = Xc.mean(0)
        S_new = floor((Xc - mu).T @ (Xc - mu) / M + C / M)
        change = np.linalg.norm(S_new - S) / np.linalg.norm(S)
        S = S_new
        if change < tol:
            break
    return shrink(S), it


# ------------------------------------------------------------------ fact 1: the EM tolerance
@pytest.mark.parametrize(
    "M, N, frac, config, context, expected",
    [
        (100, 50, 0.9, "released", "full", (500, FULL_TOL, 1e-6)),
        (100, 50, 0.9, "released", "cv", (500, CV_TOL, 1e-6)),
        (100, 50, 0.3, "released", "full", (1000, CV_TOL, 1e-3)),
        (100, 50, 0.3, "released", "cv", (1000, CV_TOL, 1e-3)),
        (40, 50, 0.9, "released", "cv", (1000, CV_TOL, 1e-3)),
        (100, 50, 0.3, "early", "full", (500, FULL_TOL, 1e-6)),
        (100, 50, 0.3, "early", "cv", (500, CV_TOL, 1e-6)),
        (40, 50, 0.9, "early", "full", (1000, CV_TOL, 1e-3)),
        (40, 50, 0.9, "early", "cv", (500, CV_TOL, 1e-3)),
    ],
)
def test_em_settings_give_the_code_release_tolerance_cap_and_floor(M, N, frac, config, context, expected):
    s = em_settings(M, N, frac, config=config, context=context)
    assert (s["max_iter"], s["tol"], s["eps_psd"]) == expected
    # an accelerated run would stop elsewhere than the plain iterate the loose tolerance defines
    assert s["accelerate"] == ("squarem" if s["tol"] == FULL_TOL else None)
    with pytest.raises(ValueError, match="context"):
        em_settings(M, N, frac, context="train")


@pytest.mark.parametrize("context", ["cv", "full"])
def test_cv_split_em_equals_the_per_row_em_stopped_at_the_first_change_below_5e_4(context):
    X = _sparse_toy()
    M, N = X.shape
    assert M > N and np.isnan(X).mean() > 0.5  # heavy regime by sparsity: floor 1e-3, tol 5e-4
    est = estimate_correlation(X, context=context)
    Z = fit_standardizer(X).transform(X)
    S, n_iter = _paper_em(Z, max_iter=1000, tol=5e-4, eps=1e-3, alpha=0.0)
    assert est.em.n_iter == n_iter < 1000
    assert est.em.rel_change[-1] < 5e-4 <= est.em.rel_change[:-1].min()
    d = 1 / np.sqrt(np.diag(S))
    np.testing.assert_allclose(est.corr, S * np.outer(d, d), atol=1e-9)


def test_cv_split_em_with_fewer_models_than_benchmarks_shrinks_before_and_after():
    X = _sparse_toy(seed=5, M=14, N=6)[:5]  # M = 5 < N = 6: shrinkage (N - M) / N
    est = estimate_correlation(X, context="cv")
    Z = fit_standardizer(X).transform(X)
    S, n_iter = _paper_em(Z, max_iter=1000, tol=5e-4, eps=1e-3, alpha=1 / 6)
    assert est.em.n_iter == n_iter and est.em.shrinkage == pytest.approx(1 / 6)
    d = 1 / np.sqrt(np.diag(S))
    np.testing.assert_allclose(est.corr, S * np.outer(d, d), atol=1e-9)


def test_full_merged_em_stops_after_274_iterations_with_8_and_12_components_for_90_and_95_percent(shared_data_dir):
    """Appendix G: "it converges in 274 iterations"; Section 5.2: 8 components for 90%, 12 for 95%."""
    est = estimate_correlation(load_matrix("merged", data_dir=shared_data_dir).scores, std_floor="variance")
    assert est.em.n_iter == 274 and est.em.converged
    spec = eigenspectrum(est.corr)
    assert [spec.n_components(q) for q in (0.90, 0.95)] == [8, 12]


# ------------------------------------------------------------------ fact 2: n - 1
def test_standard_deviation_divides_by_n_minus_one():
    X = np.array([[1.0, 10.0, 7.0], [3.0, np.nan, np.nan], [np.nan, 14.0, np.nan], [8.0, 12.0, np.nan]])
    st = fit_standardizer(X, std_floor="variance")
    assert st.std[0] == pytest.approx(np.sqrt(((1 - 4) ** 2 + (3 - 4) ** 2 + (8 - 4) ** 2) / 2))
    assert st.std[1] == pytest.approx(np.sqrt((4 + 4 + 0) / 2))
    assert st.std[2] == pytest.approx(1e-6)  # one observation: no spread, only the floor
    assert fit_standardizer(X, std_floor="variance", ddof=0).std[1] == pytest.approx(np.sqrt(8 / 3))


# ------------------------------------------------------------------ fact 4: the paper's streams
def test_paper_scheme_folds_training_sets_and_random_baseline_follow_the_release_streams():
    M, N, K, seed = 23, 7, 5, 42
    chunks = np.array_split(np.random.default_rng(seed).permutation(M), K)
    for h in (0.1, 0.5):
        for f, tr, va in cv_splits(M, n_folds=K, holdout=h, seed=seed, scheme="paper"):
            np.testing.assert_array_equal(va, np.sort(chunks[f]))
            pool = np.concatenate([chunks[j] for j in range(K) if j != f])
            n = min(round((1 - h) * M), pool.size)
            want = pool if n >= pool.size else np.random.default_rng((seed, f, int(h * 10000))).permutation(pool)[:n]
            np.testing.assert_array_equal(tr, np.sort(want))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(M, 2)) @ rng.normal(size=(2, N)) + rng.normal(size=(M, N))
    m = ScoreMatrix(X, [f"m{i}" for i in range(M)], [f"b{j}" for j in range(N)])
    df = cross_validate(m, Pipeline.paper(objective="random", estimator="pairwise"), holdouts=(0.5,), k_max=4,
                        n_folds=K, seed=seed, scheme="paper")
    for f in range(K):
        perm = np.random.default_rng((seed + 7, f, 5000)).permutation(N)[:4]
        got = df[(df.fold == f) & (df.k == 4)].selected.iloc[0]
        assert list(got) == [f"b{j}" for j in perm]
    with pytest.raises(ValueError, match="scheme"):
        cv_splits(M, scheme="sklearn")


# ------------------------------------------------------------------ what the facts reproduce
@pytest.mark.parametrize("seed, scheme", [(0, "nested"), (42, "nested"), (42, "paper")])
def test_merged_mi_picks_arena_hard_first_and_reaches_the_papers_r2_at_k5(seed, scheme, shared_data_dir):
    """Appendix F: "MI consistently selects arena_hard/score first"; Table 4: MI R^2 = 0.51 at k = 5."""
    df = cross_validate(load_matrix("merged", data_dir=shared_data_dir), "mi", holdouts=(0.1,), k_max=5, seed=seed,
                        scheme=scheme, progress=False)
    first = df[df.k == 1].selected.map(lambda s: s[0])
    assert (first == "arena_hard/score").sum() >= (10 if scheme == "paper" else 9)
    assert abs(df[df.k == 5].r2.mean() - 0.51) <= 0.05


def test_benchpress_early_configuration_reproduces_mi_and_random_on_the_papers_folds(shared_data_dir):
    """Appendix I: MI -0.11 and random 0.24 at k = 5 (10% holdout), from the earlier configuration."""
    early = [Pipeline.paper(objective=o, config="early") for o in ("mi", "random")]
    df = cross_validate(load_matrix("benchpress", data_dir=shared_data_dir), early, holdouts=(0.1,), k_max=5,
                        seed=42, scheme="paper", progress=False)
    at5 = df[df.k == 5].groupby("pipeline").r2
    mean, se = at5.mean(), at5.std(ddof=1) / np.sqrt(at5.count())
    for method, paper in (("mi", -0.11), ("random", 0.24)):
        assert abs(mean[method] - paper) <= min(se[method], 0.02)


def test_selections_by_tolerance_reproduces_cross_validate_at_the_protocol_tolerance():
    from benchsel_lib.studies.em import selections_by_tolerance

    rng = np.random.default_rng(11)
    X = 50 + 5 * (rng.normal(size=(40, 3)) @ rng.normal(size=(3, 9))) + rng.normal(size=(40, 9))
    X[rng.random(X.shape) < 0.4] = np.nan
    X[:, 0] = 50 + rng.normal(size=40)
    m = ScoreMatrix(X, models=[f"m{i}" for i in range(40)], benchmarks=[f"b{j}" for j in range(9)])
    cv = cross_validate(m, "mi", holdouts=(0.1,), k_max=3, n_folds=5, seed=4)
    ref = cv[cv["k"] == 3].sort_values("fold")["selected"].map(tuple).tolist()
    tab = selections_by_tolerance(m, tols=(None, 1e-6), k=3, n_folds=5, seed=4)
    assert sorted(tab["tol"].unique()) == [1e-6, CV_TOL]
    assert tab[tab["tol"] == CV_TOL].sort_values("fold")["selected"].tolist() == ref
    assert (tab[tab["tol"] == 1e-6]["em_iterations"].to_numpy() >= tab[tab["tol"] == CV_TOL]["em_iterations"].to_numpy()).all()
    two = selections_by_tolerance(m, tols=(None, 1e-6), k=3, n_folds=5, seed=4, n_jobs=2)
    pd.testing.assert_frame_equal(two, tab)  # worker processes do not change the result
    with pytest.raises(ValueError, match="n_jobs"):
        selections_by_tolerance(m, n_jobs=0)
    with pytest.raises(ValueError, match="tolerance"):
        selections_by_tolerance(m, tols=(0.0,))
    with pytest.raises(ValueError, match="method"):
        selections_by_tolerance(m, method="random")


@pytest.mark.parametrize("name, config, expected", [
    ("mteb", "released", {"entropy": 0.7494, "mi": 0.7620, "random": 0.7573}),
    ("merged", "released", {"entropy": 0.4845, "mi": 0.5146, "random": 0.5322}),
    ("benchpress", "early", {"entropy": 0.1245, "mi": -0.1145, "random": 0.2350}),
])
def test_mean_r2_at_k5_on_the_papers_folds_is_pinned(name, config, expected, shared_data_dir):
    """The table "paper's folds (seed 42)" of the book's appendix: entropy / MI / random at k = 5, 10% holdout."""
    pipes = [Pipeline.paper(objective=o, config=config) for o in expected]
    df = cross_validate(load_matrix(name, data_dir=shared_data_dir), pipes, k_max=5, ks=(5,), seed=42,
                        scheme="paper", progress=False)
    got = df.groupby("pipeline").r2.mean().round(4).to_dict()
    assert got == expected
