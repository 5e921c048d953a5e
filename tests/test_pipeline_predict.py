"""Tests of a new model's predictions by the paper's pipeline: conditional means with intervals in original units.

``Pipeline.paper(...).fit(matrix, revealed=[...]).predict(given)`` conditions on the given scores
(Eqs. cond-mean, cond-var); the given scores are checked by ``check_given``, and the command's
``--scores`` text is read by ``parse_scores``.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from scipy.stats import norm

from benchsel_lib._names import suggest_names
from benchsel_lib.cli import parse_scores
from benchsel_lib.data import ScoreMatrix
from benchsel_lib.method.calibration import inflation_factors
from benchsel_lib.method.folds import InnerFolds
from benchsel_lib.method.correlation import Correlation
from benchsel_lib.method.gaussian import GaussianPredictor
from benchsel_lib.method.pipeline import Pipeline, check_given

RIDGE = 1e-2


def _gaussian_matrix(m: int = 300, seed: int = 0, *, scale=(100.0, 2.0, 0.05), offset=(50.0, -3.0, 0.6)) -> ScoreMatrix:
    """Fully observed 3-benchmark matrix with known structure and very different units per column."""
    rng = np.random.default_rng(seed)
    C = np.array([[1.0, 0.8, 0.5], [0.8, 1.0, 0.3], [0.5, 0.3, 1.0]])
    Z = rng.multivariate_normal(np.zeros(3), C, size=m)
    X = Z * np.asarray(scale) + np.asarray(offset)
    return ScoreMatrix(X, [f"m{i}" for i in range(m)], ["alpha", "beta", "gamma"], "synthetic")


def _logit_matrix() -> ScoreMatrix:
    """Two correlated benchmarks on bounded scales: an accuracy in [0, 0.9] and a score out of 80."""
    rng = np.random.default_rng(1)
    Z = rng.multivariate_normal([0, 0], [[1, 0.7], [0.7, 1]], size=200)
    X = expit(Z) * np.array([0.9, 80.0])
    return ScoreMatrix(X, [f"m{i}" for i in range(200)], ["acc", "score"])


def _predict(matrix: ScoreMatrix, given, *, level: float = 0.9, skip_missing: bool = False, **options) -> pd.DataFrame:
    """Fit the paper's pipeline (MI objective) for the given benchmarks and predict the rest."""
    names = [n for n, _ in (given.items() if isinstance(given, dict) else given)]
    pipe = Pipeline.paper(objective="mi", **options).fit(matrix, revealed=names)
    return pipe.predict(given, level=level, skip_missing=skip_missing)


def _hand_conditional(X: np.ndarray, given_col: int, value: float, level: float):
    """Eqs. cond-mean / cond-var with mean 0 and ridge in standardized space, mapped back by hand."""
    mu, s = X.mean(axis=0), X.std(axis=0, ddof=1)  # training mean / std (n - 1, as the paper)
    R = np.corrcoef(X.T)
    z = (value - mu[given_col]) / s[given_col]
    tgt = [j for j in range(X.shape[1]) if j != given_col]
    r = R[tgt, given_col]
    m = r / (R[given_col, given_col] + RIDGE) * z
    var = 1.0 - r**2 / (R[given_col, given_col] + RIDGE)
    pred = mu[tgt] + s[tgt] * m
    sd = s[tgt] * np.sqrt(var)
    q = norm.ppf(0.5 + level / 2)
    return tgt, pred, pred - q * sd, pred + q * sd, sd


def test_prediction_equals_hand_computed_conditional_mean_in_original_units():
    mat = _gaussian_matrix()
    value = 180.0  # 1.3 sd above the mean of "alpha" (units of 100)
    df = _predict(mat, {"alpha": value}, level=0.9, estimator="pairwise")
    tgt, pred, lo, hi, sd = _hand_conditional(np.asarray(mat.scores), 0, value, 0.9)
    assert df.index.name == "benchmark"
    assert list(df.index) == [mat.benchmarks[j] for j in tgt]
    assert list(df.columns) == ["mean", "lower", "upper", "sd", "n_observed"]
    np.testing.assert_allclose(df["mean"], pred, rtol=1e-9)
    np.testing.assert_allclose(df["lower"], lo, rtol=1e-9)
    np.testing.assert_allclose(df["upper"], hi, rtol=1e-9)
    np.testing.assert_allclose(df["sd"], sd, rtol=1e-9)
    # original units: "gamma" lives around 0.6 with spread 0.05, "beta" around -3 with spread 2
    assert abs(df.loc["gamma", "mean"] - 0.6) < 0.2
    assert abs(df.loc["beta", "mean"] + 3.0) < 6.0
    assert df.attrs["used"] == {"alpha": value}
    assert list(df["n_observed"]) == [300, 300]


def test_interval_contains_prediction_and_widens_with_level():
    pipe = Pipeline.paper(objective="mi", estimator="pairwise").fit(_gaussian_matrix(), revealed=["beta"])
    given = {"beta": -1.0}
    widths = []
    for level in (0.5, 0.8, 0.9, 0.95):
        df = pipe.predict(given, level=level)
        assert (df["lower"] < df["mean"]).all() and (df["mean"] < df["upper"]).all()
        widths.append((df["upper"] - df["lower"]).to_numpy())
        # the half-width is z * sd
        np.testing.assert_allclose((df["upper"] - df["lower"]) / 2, norm.ppf(0.5 + level / 2) * df["sd"], rtol=1e-9)
        assert df.attrs["level"] == level
    assert all((b > a).all() for a, b in itertools.pairwise(widths))


def test_more_given_scores_shrink_the_interval():
    mat = _gaussian_matrix()
    one = _predict(mat, {"alpha": 60.0}, estimator="pairwise")
    two = _predict(mat, {"alpha": 60.0, "beta": -2.5}, estimator="pairwise")
    assert two.loc["gamma", "sd"] < one.loc["gamma", "sd"]
    # a pipeline fit for one revealed set predicts any other given set the same way
    pipe = Pipeline.paper(objective="mi", estimator="pairwise").fit(mat, revealed=["alpha"])
    pd.testing.assert_frame_equal(pipe.predict({"alpha": 60.0, "beta": -2.5}), two)


def test_nothing_revealed_predicts_the_training_mean_with_the_marginal_sd():
    mat = _gaussian_matrix()
    X = np.asarray(mat.scores)
    for j, name in enumerate(mat.benchmarks):
        pipe = Pipeline.paper(objective="mi", estimator="pairwise").fit(mat, revealed=[name])
        # a model that has none of the revealed scores is predicted from nothing
        step = pipe.path_.predict(np.full((1, X.shape[1]), np.nan))[0]
        tgt = step.targets
        assert list(tgt) == [t for t in range(X.shape[1]) if t != j]
        np.testing.assert_allclose(pipe.scaling_.inverse(step.mean[0], tgt), X.mean(axis=0)[tgt], rtol=1e-9)
        np.testing.assert_allclose(np.sqrt(step.var[0]) * pipe.scaling_.standardizer.std[tgt],
                                   X.std(axis=0, ddof=1)[tgt], rtol=1e-9)
    # and a prediction needs at least one given score
    with pytest.raises(ValueError, match="no scores given"):
        pipe.predict({})


def test_logit_transform_maps_prediction_and_interval_endpoints_through_the_inverse():
    mat = _logit_matrix()
    X = np.asarray(mat.scores)
    df = _predict(mat, {"acc": 0.7}, level=0.9, logit=True, estimator="pairwise")
    assert list(df.index) == ["score"]
    row = df.loc["score"]
    assert 0 < row["lower"] < row["mean"] < row["upper"] <= X[:, 1].max() + 1e-9
    # by hand in logit space
    smax = X.max(axis=0)
    F = np.log(np.clip(X / smax, 1e-3, 1 - 1e-3)) - np.log1p(-np.clip(X / smax, 1e-3, 1 - 1e-3))
    mu, s, r = F.mean(axis=0), F.std(axis=0, ddof=1), np.corrcoef(F.T)[0, 1]
    p = 0.7 / smax[0]
    z = (np.log(p / (1 - p)) - mu[0]) / s[0]
    f = mu[1] + s[1] * r / (1 + RIDGE) * z
    f_sd = s[1] * np.sqrt(1 - r**2 / (1 + RIDGE))
    q = norm.ppf(0.95)
    np.testing.assert_allclose(row["mean"], expit(f) * smax[1], rtol=1e-8)
    np.testing.assert_allclose(row["lower"], expit(f - q * f_sd) * smax[1], rtol=1e-8)
    np.testing.assert_allclose(row["upper"], expit(f + q * f_sd) * smax[1], rtol=1e-8)
    # the reported sd is the delta-method sd through the inverse logit
    np.testing.assert_allclose(row["sd"], smax[1] * expit(f) * (1 - expit(f)) * f_sd, rtol=1e-8)


def test_missing_entries_use_the_em_estimate_and_give_finite_predictions():
    mat = _gaussian_matrix(m=120, seed=3)
    X = np.array(mat.scores)
    X[np.random.default_rng(0).random(X.shape) < 0.3] = np.nan
    X[0] = [50.0, -3.0, 0.6]  # every column keeps observations
    sparse = ScoreMatrix(X, mat.models, mat.benchmarks)
    pipe = Pipeline.paper(objective="mi").fit(sparse, revealed=["alpha"])
    assert pipe.component("correlation").resolved(pipe.scaling_.values(sparse.scores)) == "em"
    df = pipe.predict({"alpha": 120.0})
    assert np.isfinite(df[["mean", "lower", "upper", "sd"]].to_numpy()).all()
    assert list(df["n_observed"]) == list(sparse.observed.sum(axis=0)[1:])


def test_predicting_a_frame_matches_one_model_at_a_time():
    mat = _gaussian_matrix()
    pipe = Pipeline.paper(objective="mi", estimator="pairwise").fit(mat, revealed=["alpha"])
    frame = pd.DataFrame(
        {"alpha": [10.0, 90.0, np.nan], "beta": [np.nan, np.nan, 1.0]}, index=["new1", "new2", "new3"]
    )
    out = pipe.predict(frame, level=0.8)
    assert list(out.index.names) == ["model", "benchmark"]
    assert list(out.index.get_level_values("model").unique()) == ["new1", "new2", "new3"]
    for model, given in [("new1", {"alpha": 10.0}), ("new2", {"alpha": 90.0}), ("new3", {"beta": 1.0})]:
        single = _predict(mat, given, level=0.8, estimator="pairwise")
        pd.testing.assert_frame_equal(out.loc[model], single, check_dtype=False)
    assert out.attrs["used"]["new3"] == {"beta": 1.0}


def test_unknown_benchmark_error_suggests_close_matches():
    mat = _gaussian_matrix(m=20)
    with pytest.raises(ValueError, match=r"unknown benchmark 'alpa'.*did you mean 'alpha'"):
        check_given({"alpa": 1.0}, mat)
    with pytest.raises(ValueError, match=r"unknown benchmark 'alpa'.*did you mean 'alpha'"):
        Pipeline.paper(objective="mi", estimator="pairwise").fit(mat, revealed=["alpha"]).predict({"alpa": 1.0})
    assert suggest_names("GAMMA", mat.benchmarks) == ["gamma"]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ([("alpha", 1.0), ("alpha", 2.0)], "given more than once"),
        ([("alpha", float("nan"))], "not finite"),
        ([("alpha", float("inf"))], "not finite"),
        ([("alpha", "abc")], "not a number"),
        ([("gamma", 60.0)], "out of range"),  # a percentage for a [0, 1]-ish column
    ],
)
def test_bad_given_scores_raise_value_errors(given, message):
    mat = _gaussian_matrix(m=50)
    with pytest.raises(ValueError, match=message):
        check_given(given, mat)
    pipe = Pipeline.paper(objective="mi", estimator="pairwise").fit(mat, revealed=[given[0][0]])
    with pytest.raises(ValueError, match=message):
        pipe.predict(given)


def test_missing_given_scores_are_skipped_on_request():
    mat = _gaussian_matrix(m=50)
    pipe = Pipeline.paper(objective="mi", estimator="pairwise").fit(mat, revealed=["alpha"])
    df = pipe.predict([("alpha", 60.0), ("beta", float("nan"))], skip_missing=True)
    assert df.attrs["used"] == {"alpha": 60.0} and df.attrs["ignored"] == ["beta"]
    pd.testing.assert_frame_equal(df, pipe.predict({"alpha": 60.0}))


def test_range_rule_accepts_strong_but_plausible_new_models():
    mat = _gaussian_matrix(m=50)
    top = float(np.nanmax(mat.scores[:, 0]))
    assert check_given({"alpha": top + 300.0}, mat) == {"alpha": top + 300.0}  # 3 sd above the best
    df = _predict(mat, {"alpha": top + 300.0}, estimator="pairwise")
    assert df.attrs["used"] == {"alpha": top + 300.0}


@pytest.mark.parametrize("level", [0.0, 1.0, -0.5, 1.5])
def test_level_outside_open_unit_interval_is_rejected(level):
    with pytest.raises(ValueError, match="level"):
        _predict(_gaussian_matrix(m=20), {"alpha": 50.0}, level=level)


def test_giving_every_benchmark_leaves_nothing_to_predict():
    mat = _gaussian_matrix(m=20)
    pipe = Pipeline.paper(objective="mi", estimator="pairwise").fit(mat, revealed=["alpha"])
    with pytest.raises(ValueError, match="nothing to predict"):
        pipe.predict({"alpha": 50.0, "beta": -3.0, "gamma": 0.6})
    with pytest.raises(ValueError, match="nothing to predict"):
        Pipeline.paper(objective="mi", estimator="pairwise").fit(mat, revealed=["alpha", "beta", "gamma"])


def test_unknown_scaling_is_rejected():
    with pytest.raises(ValueError, match="scaling"):
        Pipeline(scaling="probit").fit(_gaussian_matrix(m=20))


def test_parse_scores_handles_spaces_commas_and_equals_in_names():
    assert parse_scores("GPQA Diamond=71, HLE (x)=5.5") == [("GPQA Diamond", 71.0), ("HLE (x)", 5.5)]
    assert parse_scores("a,b=1,c=2") == [("a,b", 1.0), ("c", 2.0)]
    assert parse_scores("x=y=3") == [("x=y", 3.0)]
    assert parse_scores(["a=1", "b=2"]) == [("a", 1.0), ("b", 2.0)]
    assert parse_scores("a=1,a=2") == [("a", 1.0), ("a", 2.0)]  # duplicates are check_given's job


@pytest.mark.parametrize("text", ["a=abc", "a", "=3", ""])
def test_parse_scores_rejects_malformed_text(text):
    with pytest.raises(ValueError):
        parse_scores(text)


# ------------------------------------------------------------ variance inflation
def _hand_inflation(X: np.ndarray, given: list[int], *, inner_folds: int, seed: int) -> float:
    """The inner-CV factor by hand for a fully observed matrix (pairwise correlation, ridge 1e-2).

    Folds: ``np.array_split`` of ``default_rng(seed).permutation(M)``. Held-out rows are
    standardized with the full-matrix mean / std (n - 1), the correlation is that of the
    other folds, and the factor is the mean of ``(z_T - m_T)^2 / v_T`` over every held-out
    row and non-given column.
    """
    M, N = X.shape
    Z = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
    labels = np.empty(M, dtype=int)
    for f, chunk in enumerate(np.array_split(np.random.default_rng(seed).permutation(M), inner_folds)):
        labels[chunk] = f
    T = [j for j in range(N) if j not in given]
    ratios = []
    for f in range(inner_folds):
        R = np.corrcoef(X[labels != f].T)
        W = np.linalg.solve(R[np.ix_(given, given)] + RIDGE * np.eye(len(given)), R[np.ix_(given, T)])
        var = 1.0 - np.einsum("at,at->t", R[np.ix_(given, T)], W)
        zv = Z[labels == f]
        ratios.append(((zv[:, T] - zv[:, given] @ W) ** 2 / var).ravel())
    return float(np.concatenate(ratios).mean())


def _inflation_of(matrix: ScoreMatrix, given: list[str], *, inner_folds: int = 3, seed: int = 0) -> float:
    """The variance factor the pipeline fits (``inflation="inner"``) for conditioning on ``given``."""
    pipe = Pipeline.paper(objective="mi", estimator="pairwise", inflation="inner", inner_folds=inner_folds,
                          seed=seed).fit(matrix, revealed=given)
    cols = matrix.benchmark_index(given)
    values = np.nanmean(np.asarray(matrix.scores, dtype=float)[:, cols], axis=0)
    return pipe.predict(dict(zip(given, values.tolist()))).attrs["inflation"]


def test_given_inflation_scales_sd_and_interval_by_its_square_root():
    mat = _gaussian_matrix()
    plain = _predict(mat, {"alpha": 120.0}, level=0.8, estimator="pairwise")
    wide = _predict(mat, {"alpha": 120.0}, level=0.8, estimator="pairwise", inflation=2.25)
    np.testing.assert_allclose(wide["mean"], plain["mean"], rtol=1e-12)
    np.testing.assert_allclose(wide["sd"], 1.5 * plain["sd"], rtol=1e-12)
    np.testing.assert_allclose(wide["upper"] - wide["lower"], 1.5 * (plain["upper"] - plain["lower"]), rtol=1e-12)
    assert plain.attrs["inflation"] == 1.0 and wide.attrs["inflation"] == 2.25


def test_inner_inflation_equals_the_hand_computed_inner_cv_factor():
    mat = _gaussian_matrix(m=90, seed=5)
    X = np.asarray(mat.scores, dtype=float)
    for given, idx in [(["alpha"], [0]), (["beta", "gamma"], [1, 2])]:
        expected = _hand_inflation(X, idx, inner_folds=3, seed=7)
        assert _inflation_of(mat, given, inner_folds=3, seed=7) == pytest.approx(expected, rel=1e-9)
        # the calibration step's function gives the same factor
        z = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
        fac = inflation_factors(X, z, {0: idx}, len(idx), correlation=Correlation("pairwise"),
                                predictor=GaussianPredictor(ridge=RIDGE),
                                folds=InnerFolds(3, 7, stream=None))
        assert fac[0][len(idx) - 1] == pytest.approx(expected, rel=1e-9)
    df = _predict(mat, {"alpha": 60.0}, estimator="pairwise", inflation="inner", inner_folds=3, seed=7)
    assert df.attrs["inflation"] == pytest.approx(_hand_inflation(X, [0], inner_folds=3, seed=7), rel=1e-9)
    plain = _predict(mat, {"alpha": 60.0}, estimator="pairwise")
    np.testing.assert_allclose(df["mean"], plain["mean"], rtol=1e-12)
    np.testing.assert_allclose(df["sd"], np.sqrt(df.attrs["inflation"]) * plain["sd"], rtol=1e-12)


def test_inner_inflation_is_near_one_for_data_from_the_model_and_reproducible():
    mat = _gaussian_matrix(m=600, seed=2)
    a = [_inflation_of(mat, g, seed=3) for g in (["alpha"], ["alpha", "gamma"])]
    assert a == [_inflation_of(mat, g, seed=3) for g in (["alpha"], ["alpha", "gamma"])]
    assert all(0.85 < f < 1.15 for f in a)


def test_inflation_with_nothing_revealed_is_one():
    mat = _gaussian_matrix(m=60)
    X = np.asarray(mat.scores, dtype=float)
    z = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
    fac = inflation_factors(X, z, {"none": [], "beta": [1]}, 1, correlation=Correlation("pairwise"),
                            predictor=GaussianPredictor(ridge=RIDGE), folds=InnerFolds(3, 0, stream=None))
    assert fac["none"][0] == 1.0 and fac["beta"][0] != 1.0


def test_predicting_a_frame_with_inner_inflation_matches_one_model_at_a_time():
    mat = _gaussian_matrix(m=120, seed=4)
    pipe = Pipeline.paper(objective="mi", estimator="pairwise", inflation="inner", seed=1).fit(mat, revealed=["alpha"])
    frame = pd.DataFrame({"alpha": [10.0, 90.0, np.nan], "beta": [np.nan, 0.5, 1.0]}, index=["n1", "n2", "n3"])
    out = pipe.predict(frame)
    for model, given in [("n1", {"alpha": 10.0}), ("n2", {"alpha": 90.0, "beta": 0.5}), ("n3", {"beta": 1.0})]:
        single = _predict(mat, given, estimator="pairwise", inflation="inner", seed=1)
        assert out.attrs["inflation"][model] == pytest.approx(single.attrs["inflation"], rel=1e-12)
        pd.testing.assert_frame_equal(out.loc[model], single, check_dtype=False)
    fixed = Pipeline.paper(objective="mi", estimator="pairwise", inflation=3.0).fit(mat, revealed=["alpha"])
    assert fixed.predict(frame).attrs["inflation"] == {"n1": 3.0, "n2": 3.0, "n3": 3.0}


def test_logit_predictions_widen_with_inflation_and_keep_their_center():
    mat = _logit_matrix()
    plain = _predict(mat, {"acc": 0.7}, logit=True, estimator="pairwise").iloc[0]
    wide = _predict(mat, {"acc": 0.7}, logit=True, estimator="pairwise", inflation=4.0).iloc[0]
    assert wide["mean"] == pytest.approx(plain["mean"], rel=1e-12)
    assert wide["lower"] < plain["lower"] and wide["upper"] > plain["upper"]


@pytest.mark.parametrize("inflation", [0, -1.0, float("nan"), float("inf"), "big", "auto", True])
def test_bad_inflation_is_rejected(inflation):
    with pytest.raises(ValueError, match="inflation"):
        _predict(_gaussian_matrix(m=30), {"alpha": 50.0}, estimator="pairwise", inflation=inflation)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"inner_folds": 1}, "inner_folds"),
    ({"inner_folds": 31}, "inner_folds"),
    ({"seed": -1}, "seed"),
])
def test_bad_inner_folds_or_seed_is_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _predict(_gaussian_matrix(m=30), {"alpha": 50.0}, estimator="pairwise", inflation="inner", **kwargs)


def test_inner_inflation_rejects_unknown_benchmarks():
    pipe = Pipeline.paper(objective="mi", estimator="pairwise", inflation="inner")
    with pytest.raises(ValueError, match="unknown revealed benchmark 'alfa'; did you mean 'alpha'"):
        pipe.fit(_gaussian_matrix(m=30), revealed=["alfa"])
