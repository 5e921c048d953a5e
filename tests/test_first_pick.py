"""The first-pick study: which tie rule or numeric path decides greedy entropy's first pick.

Small synthetic matrices only (pairwise correlation on complete data, EM on a
sparse one); every test takes a second or two.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.data import ScoreMatrix
from benchsel_lib.method.covariance import cov_to_corr
from benchsel_lib.method.pipeline import Pipeline
from benchsel_lib.method.selection import select
from benchsel_lib.protocol.cv import CVProtocol, cross_validate
from benchsel_lib.studies.bands import first_pick_band
from benchsel_lib.studies.first_pick import (
    PATH_RULES,
    TIE_RULES,
    FirstPickStudy,
    describe_first_pick,
    first_pick_study,
    first_picks,
    rounded_diagonal,
)

CV = dict(protocol=CVProtocol(holdouts=(0.1,), k_max=3, n_folds=4, seed=42, scheme="paper"))


def _variances_by_rounding() -> tuple[list[float], list[float]]:
    """Variances whose ``v * (1/sqrt(v))**2`` rounds above 1, and ones where it rounds to 1 or below."""
    grid = 1.0 + np.arange(1, 4000) * 1e-3
    r = rounded_diagonal(grid)
    return grid[r > 1.0].tolist(), grid[r <= 1.0].tolist()


def _known_tie_cov() -> np.ndarray:
    """A covariance on which the rules must disagree about the first pick.

    Correlations: benchmark 2 is the most central (largest summed squared
    correlation), benchmark 0 is nearly isolated. Variances: benchmark 3 has
    the largest, and benchmark 1 is the only one whose rounded correlation
    diagonal exceeds 1.
    """
    up, flat = _variances_by_rounding()
    R0 = np.array([[1.0, 0.05, 0.1, 0.0],
                   [0.05, 1.0, 0.5, 0.2],
                   [0.1, 0.5, 1.0, 0.6],
                   [0.0, 0.2, 0.6, 1.0]])
    v = np.array([flat[0], up[0], flat[1], max(flat)])
    assert v[3] > v[:3].max()
    d = np.sqrt(v)
    S = R0 * np.outer(d, d)
    np.fill_diagonal(S, v)  # exact variances: the rounding of the diagonal is known
    assert np.linalg.eigvalsh(S).min() > 0
    return S


def _matrix(*, missing: float = 0.0, seed: int = 3, m: int = 40, n: int = 6) -> ScoreMatrix:
    """One factor on benchmarks 1..n-1, benchmark 0 pure noise: the central benchmark is not the first."""
    rng = np.random.default_rng(seed)
    f = rng.normal(size=(m, 1))
    X = 50 + 10 * (f @ rng.uniform(0.6, 1.0, size=(1, n))) + 4 * rng.normal(size=(m, n))
    X[:, 0] = 50 + 10 * rng.normal(size=m)
    X[rng.random(X.shape) < missing] = np.nan
    X[np.isnan(X).all(axis=1), 0] = 50.0  # keep every model observed somewhere
    return ScoreMatrix(X, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(n)], source="synthetic")


# ------------------------------------------------------------------ the per-matrix rules
def test_first_pick_rules_disagree_on_a_known_tie():
    S = _known_tie_cov()
    picks = first_picks(S)
    assert set(picks) == set(TIE_RULES + PATH_RULES)
    assert picks["index"] == picks["argmax"] == 0  # unit diagonal: every gain ties, lowest index
    assert picks["rounded"] == 1  # the only diagonal entry that rounds above 1
    assert picks["auto"] == 2  # the most central benchmark
    assert picks["covariance"] == 3  # the largest variance
    R = cov_to_corr(S)
    assert picks["mi"] == select(R, 1, objective="entropy", tie_break="mi").order[0]
    # the rounded diagonal is 1 up to rounding only
    assert np.abs(rounded_diagonal(S) - 1.0).max() <= 4 * np.finfo(float).eps
    assert first_picks(S, rules=("rounded",)) == {"rounded": 1}
    with pytest.raises(ValueError, match="unknown rule"):
        first_picks(S, rules=("largest",))
    with pytest.raises(ValueError, match="square"):
        first_picks(S[:3])


def test_rounded_first_pick_is_the_lowest_index_of_the_top_rounding_class():
    up, flat = _variances_by_rounding()
    v = np.array([flat[0], up[1], flat[2], up[0], flat[3]])
    assert int(np.argmax(rounded_diagonal(v))) == 1
    S = np.diag(v)
    assert first_picks(S, rules=("rounded", "index"))["rounded"] == 1
    S[1, 1] = flat[4]  # the same benchmark, one rounding class lower: the next one of the top class wins
    assert first_picks(S, rules=("rounded",))["rounded"] == 3


# ------------------------------------------------------------------ the study on the CV splits
@pytest.fixture(scope="module")
def complete_study() -> tuple[ScoreMatrix, FirstPickStudy, pd.DataFrame]:
    m = _matrix()
    idx = cross_validate(m, Pipeline.paper(objective="entropy", tie_break="index"), holdouts=(0.1,), k_max=3,
                         n_folds=4, seed=42, scheme="paper", progress=False)
    at2 = float(idx[idx.k == 2].r2.mean())
    study = first_pick_study(m, paper={2: round(at2, 2)}, n_draws=300, **CV)
    return m, study, idx


def test_first_pick_study_tables_and_rules(complete_study):
    m, st, idx = complete_study
    assert list(st.picks.index) == [0, 1, 2, 3]
    assert set(TIE_RULES + PATH_RULES + ("n_top",)) <= set(st.picks.columns)
    assert (st.picks["index"] == "b0").all() and (st.picks["argmax"] == "b0").all()
    assert (st.picks["auto"] != "b0").all()  # the noise benchmark is not central: the rules must differ
    assert st.sources == {**{r: "cv" for r in TIE_RULES}, **{r: "band" for r in PATH_RULES}}
    assert list(st.curves.index) == [1, 2, 3]
    # a tie rule's curve is its own cross-validation
    np.testing.assert_allclose(st.curves["index"].to_numpy(), idx.groupby("k").r2.mean().to_numpy(), atol=1e-12)
    # the band rebuilds the argmax run exactly: the first pick decides the curve
    assert st.band_gap <= 1e-12
    assert (st.picks["n_top"] >= 1).all()


def test_first_pick_study_path_rule_curve_equals_a_forced_band(complete_study):
    m, st, _ = complete_study
    _, folds = first_pick_band(m, pipeline=Pipeline.paper(objective="entropy", tie_break="argmax"),
                               picks=sorted(set(st.picks["rounded"])), return_folds=True, holdouts=(0.1,), k_max=3,
                               n_folds=4, seed=42, scheme="paper", progress=False)
    chosen = folds[folds.variant == folds.fold.map(st.picks["rounded"])]
    np.testing.assert_allclose(chosen.groupby("k").r2.mean().to_numpy(), st.curves["rounded"].to_numpy(), atol=1e-12)


def test_first_pick_study_noise_model_and_paper_comparison(complete_study):
    m, st, idx = complete_study
    assert st.draws.shape == (300, 3)
    q = st.curves[["noise_q05", "noise_median", "noise_q95"]].to_numpy()
    assert (np.diff(q, axis=1) >= -1e-12).all()
    assert st.pick_share.sum() == pytest.approx(1.0)
    assert set(st.pick_share.index) <= set(m.benchmarks)
    # the reported value is the index rule's own curve to two decimals: it matches, auto does not
    assert st.paper == {2: round(float(idx[idx.k == 2].r2.mean()), 2)}
    assert bool(st.matches["index"]) and bool(st.matches["argmax"])
    assert list(st.paper_percentile.index) == [2] and 0.0 <= st.paper_percentile[2] <= 1.0
    assert 0.0 <= st.match_share <= 1.0
    assert st.match_share == pytest.approx(float((np.abs(st.draws[:, 1] - st.paper[2]) <= 0.005).mean()))


def test_describe_first_pick_quotes_the_study(complete_study):
    _, st, _ = complete_study
    text = describe_first_pick(st)
    c = st.curves.loc[2]
    for r in ("auto", "index"):
        assert f"{c[r]:.2f} ({r})" in text
    assert f"{st.paper[2]:.2f} at k = 2" in text
    assert "reproduce" in text and "index" in text.split("reproduce")[0].rsplit(";", 1)[-1]
    assert f"{c['noise_median']:.2f}" in text
    text5 = describe_first_pick(st, k=3)
    assert "k = 3" in text5
    with pytest.raises(ValueError, match="k=9"):
        describe_first_pick(st, k=9)
    with pytest.raises(ValueError, match="k must be a positive integer, got 3.0"):  # not printed as "k = 3.0"
        describe_first_pick(st, k=3.0)


def test_first_pick_study_on_a_sparse_matrix_uses_the_em_covariance():
    m = _matrix(missing=0.35, seed=5, m=36)
    st = first_pick_study(m, pipeline=Pipeline.paper(objective="entropy", config="early"), n_draws=50, **CV)
    assert st.paper == {} and st.match_share != st.match_share  # no reported values: NaN
    assert not st.matches.any()
    assert st.curves["paper"].isna().all()
    assert st.band_gap <= 1e-12
    text = describe_first_pick(st)
    assert "paper" not in text.split(".")[0]


def test_first_pick_study_rejects_bad_input():
    m = _matrix()
    with pytest.raises(ValueError, match="entropy selector"):
        first_pick_study(m, pipeline=Pipeline.paper(objective="mi"), n_draws=0, **CV)
    with pytest.raises(ValueError, match="forces"):
        first_pick_study(m, pipeline=Pipeline.paper(objective="entropy", initial=("b1",)), n_draws=0, **CV)
    with pytest.raises(ValueError, match="tie rule"):
        first_pick_study(m, rules=("auto", "first"), n_draws=0, **CV)
    with pytest.raises(ValueError, match="k_max"):
        first_pick_study(m, paper={5: 0.2}, n_draws=0, **CV)
    with pytest.raises(ValueError, match="jitter"):
        first_pick_study(m, jitter=0.0, **CV)
    with pytest.raises(ValueError, match="ScoreMatrix"):
        first_pick_study(m.scores, **CV)


def test_the_first_pick_figure_has_the_noise_panel_only_when_the_model_ran(complete_study):
    from benchsel_lib.book.plotting import plot_first_pick

    _, st, _ = complete_study
    assert len(plot_first_pick(st).axes) == 2
    with pytest.raises(ValueError, match="k=9"):
        plot_first_pick(st, k=9)
    with pytest.raises(ValueError, match="FirstPickStudy"):
        plot_first_pick(pd.DataFrame())


def test_the_chapter_compares_with_the_paper_only_on_its_folds_and_sizes():
    from benchsel_lib.book.pages.benchpress import first_pick_reference

    paper = dict(holdout=0.1, seed=42, scheme="paper", estimator="auto", n_folds=10)
    assert first_pick_reference(k_max=15, **paper) == {5: 0.21, 15: 0.25}
    assert first_pick_reference(k_max=10, **paper) == {5: 0.21}
    for change in (dict(seed=1), dict(scheme="nested"), dict(holdout=0.2), dict(estimator="pairwise"), dict(n_folds=3)):
        assert first_pick_reference(k_max=15, **{**paper, **change}) is None


def test_first_pick_study_without_the_noise_model_or_the_argmax_rule():
    st = first_pick_study(_matrix(), rules=("index", "auto"), n_draws=0, paper={2: 0.5}, **CV)
    assert st.draws.shape == (0, 3) and st.pick_share.empty
    assert st.curves[["noise_q05", "noise_median", "noise_q95"]].isna().all().all()
    assert st.paper_percentile.empty and st.match_share != st.match_share  # NaN without draws
    assert st.band_gap != st.band_gap  # NaN: "argmax" did not run as its own cross-validation
    assert list(st.curves.columns) == ["paper", "index", "auto", "rounded", "covariance", "noise_q05", "noise_median",
                                       "noise_q95"]
    assert st.sources == {"index": "cv", "auto": "cv", "rounded": "band", "covariance": "band"}
    assert list(st.matches.index) == ["index", "auto", "rounded", "covariance"]
