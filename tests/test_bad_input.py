"""Bad input to the public API is refused with a message that names the problem, or said aloud: never silent."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib import (
    Pipeline,
    ScoreMatrix,
    ScoreWarning,
    Selector,
    cross_validate,
    load_csv,
    select,
    summarize_cv,
)
from benchsel_lib.data import column_problems
from benchsel_lib.data.loaders import parse_number
from benchsel_lib.method.gaussian import conditional_impute, conditional_moments
from benchsel_lib.method.pipeline import check_given
from benchsel_lib.method.regression import RidgePredictor
from benchsel_lib.method.scaling import fit_standardizer, inverse_logit_transform, logit_transform
from benchsel_lib.method.inner_search import pipeline_path
from benchsel_lib.protocol.summaries import calibration_table, top_residuals
from benchsel_lib.studies.diagnostics import positions_from_cv, selection_summary
from benchsel_lib.studies.pipelines import (
    entries_scored,
    k_gain,
    paired_summary,
    peer_differences,
    pooled_coverage,
)


def _matrix(m: int = 20) -> ScoreMatrix:
    return as_matrix(50 + 10 * low_rank_scores(0, m, 6))


def _fitted() -> Pipeline:
    return Pipeline.paper(k=2).fit(_matrix())


@pytest.mark.parametrize(("call", "message"), [
    (lambda: check_given({"b0": 0.5}, _matrix().scores), "matrix must be a ScoreMatrix, got ndarray"),
    (lambda: _fitted().predict("b0"), "give the scores as a mapping benchmark -> score or as (benchmark, score) "
                                      "pairs, got 'b0'"),
    (lambda: _fitted().predict([("b0", 50.0, 1)]), "given scores must be (benchmark, score) pairs, got ('b0', 50.0, 1)"),
    (lambda: _fitted().predict({"b1": True}), "value True for benchmark 'b1' is not a number"),
    (lambda: _fitted().predict(pd.DataFrame({"b1": [True]}, index=["new"])), "value True for benchmark 'b1' (model "
                                                                            "'new') is not a number"),
    (lambda: Pipeline(3, selector=None).fit(_matrix()), "selector must be a Selector or a preset name, got None"),
    (lambda: cross_validate(_matrix(), 5), "pipelines must be a Pipeline, a name or a sequence of them, got 5"),
    (lambda: ScoreMatrix(np.ones((2, 2)), None, ["x", "y"]), "model names must be a sequence of names, got None"),
    (lambda: ScoreMatrix(np.ones((2, 2)), "ab", ["x", "y"]), "model names must be a sequence of names, got 'ab'"),
    (lambda: ScoreMatrix(np.ones((2, 2)), ["a", "b"], [" ", "y"]), "benchmark names must not be empty: position(s) "
                                                                  "[0] hold ' '"),
    (lambda: select(np.eye(4), 2, objective="random", seed=1.5), "seed must be a non-negative integer, a sequence of "
                                                                 "them or a numpy Generator, got 1.5"),
    (lambda: conditional_moments(np.eye(6), np.zeros((2, 6)), [9], [1, 2]), "columns index 9 is out of range 0..5"),
    (lambda: conditional_moments(np.eye(6), np.zeros((2, 3)), [0], [1, 2]), "query must be (models x 6 benchmarks) "
                                                                          "like cov, got shape (2, 3)"),
    (lambda: fit_standardizer(np.random.default_rng(0).random((5, 2))).transform(np.ones((2, 3))),
     "X must have 2 columns, one per benchmark the standardizer was fitted on, got shape (2, 3)"),
    (lambda: cross_validate(_matrix(), "entropy", k_max=2, n_folds=3, min_train_observed=100, progress=False),
     "min_train_observed=100 drops every benchmark in fold 0 (holdout 0.1): its 13 training models observe a "
     "benchmark at most 13 times"),
    (lambda: Pipeline(3, selector=Selector("mi", exclude=tuple(f"b{j}" for j in range(6)))).fit(_matrix()),
     "no selection of k=3 benchmarks is possible on this matrix (the candidates' exclude lists leave too few "
     "benchmarks: mi: 0; lower k, or exclude fewer benchmarks)"),
    (lambda: select(np.eye(4), 2, lazy="no"), "lazy must be True or False, got 'no'"),
    (lambda: _matrix().take(cols=[100]), "cols position 100 is out of range: the matrix has 6 benchmarks (0 to 5)"),
    (lambda: _matrix().take(rows=[-1]), "rows position -1 is out of range: the matrix has 20 models (0 to 19)"),
    (lambda: _matrix().take(cols=[1.7]), "cols must be a sequence of integer positions, got [1.7]"),
    (lambda: _matrix().take(cols=[True, False]), "cols must be a sequence of integer positions, got [True, False]"),
    (lambda: _matrix().observed_counts(axis=5), "axis must be 0 (per benchmark) or 1 (per model), got 5"),
    (lambda: RidgePredictor().fit(np.zeros((0, 3))), "train has no rows (models)"),
    (lambda: RidgePredictor().fit([[1.0, np.inf]]), "train contains infinite values (use NaN for missing)"),
    (lambda: pipeline_path(np.zeros((6, 1)), 1), "train needs at least two benchmarks, one to reveal and one to "
                                                 "predict, got shape (6, 1)"),
    (lambda: Pipeline.paper(k=2).fit(ScoreMatrix(_matrix().scores * 1e160, _matrix().models, _matrix().benchmarks)),
     "the scores of column(s) [0, 1, 2, 3, 4, 5] are too large for floating-point arithmetic"),
    (lambda: Pipeline.from_name("auto", estimator="bogus"), "unknown correlation estimator 'bogus'"),
    (lambda: Pipeline.from_name("auto", tie_break="bogus"), "unknown tie_break 'bogus'"),
    (lambda: Pipeline.from_name("auto", inflation="bogus"), "unknown inflation 'bogus'"),
    (lambda: Pipeline.from_name("auto", ridge=-5), "ridge must be a non-negative number, got -5"),
    (lambda: Pipeline.from_name("mi+ridge", predictor="knn"), "predictor= applies to the paper's pipelines "
                                                              "('entropy', 'mi', 'random'); 'mi+ridge' names its own "
                                                              "predictor"),
    (lambda: _fitted().predict({"b0": 50.0}, skip_missing="yes"), "skip_missing must be True or False, got 'yes'"),
    (lambda: _fitted().predict({"b0": 50.0}, level="0.9"), "level must be a number in (0, 1), got '0.9'"),
    (lambda: cross_validate(_matrix(), "entropy", levels=[np.float32(0.5), 1j]), "levels must be a number or a "
                                                                                 "sequence of numbers"),
    (lambda: cross_validate(_matrix(), "entropy", progress="x"), "progress must be True or False, got 'x'"),
    (lambda: cross_validate(_matrix(), "entropy", return_details="x"), "return_details must be True or False, "
                                                                       "got 'x'"),
    (lambda: Pipeline.auto(k=1).fit(_matrix().take(cols=[0])), "the matrix has 1 benchmark: a pipeline needs at least "
                                                                "two, one to run and one to predict"),
    (lambda: RidgePredictor().fit(np.zeros((5, 4)), cov=np.eye(3)), "cov is 3 x 3 but train has 4 benchmark columns"),
    (lambda: RidgePredictor().fit(np.zeros((5, 2)), cov=[[1.0, np.nan], [np.nan, 1.0]]), "cov contains NaN or "
                                                                                        "infinite entries"),
    (lambda: select(np.eye(4), 2, objective="greedy", train=np.full((12, 4), np.nan)), "train has no observed score"),
    (lambda: select(np.eye(4), 2, objective="greedy", train=np.full((12, 4), np.inf)), "train contains infinite "
                                                                                       "values"),
    (lambda: select(np.eye(4), 2, objective="imputed-lasso", train=[["a"] * 4] * 12), "train must be a numeric "
                                                                                      "(models x benchmarks) array"),
    (lambda: Pipeline.paper(k=2).set_params(selector__bogus=1), "invalid parameter selector__bogus: Selector has the "
                                                               "fields ('objective', "),
    (lambda: Pipeline.paper(k=2, costs={f"b{j}": "x" for j in range(6)}, budget=3).fit(_matrix()),
     "cost 'x' of benchmark 'b0' is not a number"),
    (lambda: Pipeline.paper(k=2, costs=[1.0] * 6, budget=3).fit(_matrix()),
     "costs must be a mapping benchmark name -> cost, got list"),
    (lambda: cross_validate(_matrix(), "entropy", holdouts=None), "holdouts must be a number or a sequence of numbers, "
                                                                  "got None"),
    (lambda: cross_validate(_matrix(), "entropy", holdouts="0.1"), "holdouts must be a number or a sequence of "
                                                                   "numbers, got '0.1'"),
    (lambda: fit_standardizer(np.ones((3, 2)), ddof="x"), "ddof must be an integer >= 0, got 'x'"),
    (lambda: fit_standardizer(np.ones((3, 2)), ddof=1.5), "ddof must be an integer >= 0, got 1.5"),
    (lambda: logit_transform(np.ones((2, 2)), eps=None), "eps must be a number in (0, 0.5), got None"),
    (lambda: logit_transform(np.ones((2, 2)), smax=["a", "b"]), "smax must be a numeric vector, one maximum per "
                                                                "benchmark"),
    (lambda: inverse_logit_transform(np.ones((2, 2)), np.ones((2, 2))), "smax must be a vector of length 2 (one per "
                                                                        "column of F), got shape (2, 2)"),
    (lambda: Selector("mi", lazy=1), "lazy must be True or False, got 1"),
    (lambda: ScoreMatrix(np.ones((2, 2)) + 1j, ["a", "b"], ["x", "y"]), "scores must be real numbers, got complex "
                                                                        "values"),
    (lambda: _fitted().predict(pd.DataFrame({"b0": [50.0, 51.0]}, index=["new", "new"])),
     "model 'new' is given more than once (one row per new model)"),
])
def test_bad_input_is_refused_with_a_message_that_names_it(call, message):
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value).startswith(message)


def test_a_refitted_parameter_makes_the_pipeline_forget_its_fit():
    p = Pipeline.paper(k=3).fit(_matrix())
    p.set_params(predictor="ridge", k=1)
    with pytest.raises(ValueError, match="not fitted: call fit"):
        p.predict({"b0": 50.0})
    assert p.fit(_matrix()).k == 1 and len(p.selected) == 1


def test_one_candidate_may_be_named_without_a_sequence():
    one = Pipeline.auto(k=2, selectors="mi", predictors="ridge")
    assert [s.objective for s in one.component("selector")] == ["mi"] and one.component("predictor") == ["ridge"]


def test_one_models_row_as_a_series_predicts_as_the_same_mapping():
    p, m = _fitted(), _matrix()
    row = pd.Series({b: m.scores[0, m.benchmarks.index(b)] for b in p.selected})
    pd.testing.assert_frame_equal(p.predict(row), p.predict(row.to_dict()))


def test_no_interval_levels_may_be_said_with_none():
    kw = dict(k_max=2, n_folds=3, seed=0, progress=False)
    pd.testing.assert_frame_equal(cross_validate(_matrix(), "entropy", levels=None, **kw),
                                  cross_validate(_matrix(), "entropy", levels=(), **kw))


def test_logit_scaling_says_which_benchmark_it_clips_to_one_floor():
    m = _matrix()
    scores = m.scores.copy()
    scores[:5, 1] = -1.0
    with pytest.warns(ScoreWarning, match=r"benchmark 'b1': 5 of 20 observed scores are <= 0; logit scaling"):
        p = Pipeline.paper(k=2, logit=True).fit(ScoreMatrix(scores, m.models, m.benchmarks))
    assert len(p.notes_) == 1 and "'b1'" in p.notes_[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Pipeline.paper(k=2, logit=True).fit(m).notes_ == []


def test_cross_validation_says_it_does_not_use_a_pipelines_own_seed():
    kw = dict(k_max=2, n_folds=3, seed=0, progress=False)
    with pytest.warns(UserWarning, match=r"pipeline 'r' has seed=1, which cross-validation does not use"):
        seeded = cross_validate(_matrix(), Pipeline.paper(objective="random", seed=1, name="r"), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = cross_validate(_matrix(), Pipeline.paper(objective="random", name="r"), **kw)
    pd.testing.assert_frame_equal(seeded, plain)


def test_a_summary_counts_the_folds_its_means_are_taken_over():
    df = pd.DataFrame({"pipeline": "m", "holdout": 0.1, "k": 1, "fold": [0, 1, 2], "r2": [0.5, np.nan, 0.7]})
    row = summarize_cv(df).iloc[0]
    assert row["n_folds"] == 3 and row["n_scored"] == 2 and row["r2_mean"] == pytest.approx(0.6)


def test_one_mandatory_benchmark_may_be_given_as_a_plain_name():
    m = _matrix()
    assert Pipeline.paper(k=3, initial="b4").fit(m).selected[0] == "b4"
    assert Pipeline.auto(k=3, initial="b4", selectors=["mi"], predictors=["gaussian"]).fit(m).selected[0] == "b4"


def test_scores_given_as_an_iterator_of_pairs_are_read_once():
    p = _fitted()
    given = {b: 50.0 for b in p.selected}
    out = p.predict(iter(given.items()))
    assert out.attrs["used"] == given and out.attrs["ignored"] == []


def test_the_random_order_is_the_same_at_every_call_unless_asked_otherwise():
    S = np.eye(12)
    assert select(S, 5, objective="random").order == select(S, 5, objective="random").order
    assert select(S, 5, objective="random", seed=(3, 1)).order == select(S, 5, objective="random", seed=(3, 1)).order


def test_a_column_equal_up_to_rounding_is_constant_but_a_small_real_spread_is_not():
    X = 50 + 10 * low_rank_scores(0, 20, 4)
    X[:, 1] = 0.3
    X[0, 1] = 0.1 + 0.2  # 0.30000000000000004
    X[:, 2] = 0.3 + 1e-6 * np.arange(20)
    names = ["b0", "b1", "b2", "b3"]
    assert [(p.benchmark, p.kind) for p in column_problems(X, names)] == [("b1", "constant")]
    with pytest.warns(ScoreWarning, match="benchmark 'b1' is constant"):
        p = Pipeline.paper(k=3, objective="mi").fit(as_matrix(X))
    assert "b1" not in p.selected


def test_cross_validation_says_it_keeps_a_constant_column():
    X = 50 + 10 * low_rank_scores(0, 30, 5)
    X[:, 1] = 42.0
    with pytest.warns(ScoreWarning, match="benchmark 'b1' is constant .*: cross-validation keeps it among the "
                                          "candidates, as the paper's protocol does"):
        cross_validate(as_matrix(X), "entropy", k_max=2, n_folds=3, progress=False)


def test_a_search_too_small_for_its_inner_folds_says_so_and_gives_no_intervals():
    m = _matrix(8)
    with pytest.warns(UserWarning, match="only 8 training models: too few for 5-fold inner cross-validation "
                                         r"\(need 10\); using the default mi\+gaussian, without intervals"):
        p = Pipeline.auto(k=2).fit(m)
    assert any("too few for 5-fold inner cross-validation" in n for n in p.notes_)
    out = p.predict({b: 50.0 for b in p.selected})
    assert out["lower"].isna().all() and out["mean"].notna().all()
    # given benchmarks stay the given ones; only the predictor falls back
    with pytest.warns(UserWarning, match="using the default predictor gaussian, without intervals"):
        given = Pipeline.auto(k=2).fit(m, revealed=["b5", "b1"])
    assert given.selected == ["b5", "b1"] and given.choice_.name == "given+gaussian"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # enough models: nothing to say
        Pipeline.auto(k=2, selectors=["mi"], predictors=["gaussian", "ridge"]).fit(_matrix(40))


def test_an_indefinite_covariance_is_refused_where_it_would_give_a_negative_variance():
    C = np.eye(6)
    C[0, 1] = C[1, 0] = 5.0
    with pytest.raises(ValueError, match="cov is not positive semi-definite: the conditional variance of benchmark 1 "
                                         "given the observed ones is -23.8 < 0"):
        conditional_impute(C, np.zeros(6), [0.5], [0])
    # a positive semi-definite one, singular included, is fine
    v = np.array([1.0, 2.0, 0.0, 1.0, 0.0, 3.0])
    res = conditional_impute(np.outer(v, v) + np.diag([0, 0, 1, 0, 1, 0]), np.zeros(6), [1.0], [0])
    assert np.all(np.diag(res.cov) >= -1e-12)


def test_a_csv_whose_first_column_holds_scores_is_refused(tmp_path):
    X = 0.5 + 0.1 * low_rank_scores(0, 10, 3)
    path = tmp_path / "nomodels.csv"
    path.write_text("b0,b1,b2\n" + "\n".join(",".join(f"{x:.4f}" for x in row) for row in X) + "\n")
    with pytest.raises(ValueError, match="the first column, read as model names, holds scores"):
        load_csv(path)
    ids = tmp_path / "ids.csv"  # integer ids are names
    ids.write_text("model,b1,b2\n" + "\n".join(f"{i},{row[1]:.4f},{row[2]:.4f}" for i, row in enumerate(X)) + "\n")
    assert load_csv(ids).models[:2] == ("0", "1")


def test_a_number_with_an_underscore_is_a_typo_not_a_number(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("model,b0,b1\nm0,1_0,2\nm1,3,4\nm2,5,6\n")
    with pytest.raises(ValueError, match="non-numeric value '1_0' in row 'm0', column 'b0'"):
        load_csv(path)
    assert parse_number(" 2.5 ") == 2.5
    with pytest.raises(ValueError):
        parse_number("1_000")


def test_holdouts_that_give_the_same_training_sets_are_said_to():
    with pytest.warns(UserWarning, match="holdouts 0.1 and 0.2 give the same training sets: with 3 folds of 20 models "
                                         "a training set holds at most the 14 models outside its validation fold"):
        df = cross_validate(_matrix(), "entropy", holdouts=(0.1, 0.2), k_max=2, n_folds=3, progress=False)
    assert set(df["holdout"]) == {0.1, 0.2}


def test_a_pipeline_whose_filters_leave_no_candidate_is_said_to_have_no_rows():
    X = 50 + 10 * low_rank_scores(0, 30, 5, missing=0.3)
    thin = Pipeline.paper(objective="mi", estimator="pairwise", min_observed=300, name="thin")
    with pytest.warns(UserWarning, match="pipeline 'thin' selected no benchmark in any split of synthetic: its "
                                         r"candidate filters \(min_observed\) or exclusions leave none"):
        df = cross_validate(as_matrix(X), [thin, "entropy"], k_max=2, n_folds=3, progress=False)
    assert set(df["pipeline"]) == {"entropy"}


# ------------------------------------------------------------------ summaries of a run
@pytest.fixture(scope="module")
def two_runs():
    m = as_matrix(50 + 10 * low_rank_scores(0, 36, 6))
    pipes = [Pipeline.paper(objective=o, estimator="pairwise") for o in ("mi", "entropy")]
    run = {s: cross_validate(m, pipes, k_max=3, n_folds=3, seed=s, levels=(0.5, 0.9), progress=False) for s in (0, 1)}
    return run[0], run[1]


def test_summaries_refuse_rows_of_two_runs_instead_of_averaging_them(two_runs):
    both = pd.concat(two_runs, ignore_index=True)
    for call in (lambda: paired_summary(both, ks=(2,), reference="mi", baseline="entropy"),
                 lambda: peer_differences(both, ["entropy"], ks=(2,), reference="mi"),
                 lambda: k_gain(both, pipeline="mi", k0=1, k1=3)):
        with pytest.raises(ValueError, match="the frame has more than one row of '(mi|entropy)' at holdout=0.1, fold=0, k=1: rows of several runs"):
            call()
    with pytest.raises(ValueError, match="rows of several runs would be counted as folds"):
        summarize_cv(both)
    # one run, or runs told apart by a seed column, pair
    assert peer_differences(two_runs[0], ["entropy"], ks=(2,), reference="mi")["n_cells"].tolist() == [3]
    seeded = pd.concat([r.assign(seed=s) for s, r in enumerate(two_runs)], ignore_index=True)
    assert peer_differences(seeded, ["entropy"], ks=(2,), reference="mi")["n_cells"].tolist() == [6]
    assert summarize_cv(seeded)["n_folds"].eq(3).all()


@pytest.mark.parametrize(("call", "message"), [
    (lambda df: peer_differences(df, ["entropy"], ks=2, reference="mi"), "ks must be a list of subset sizes, got 2"),
    (lambda df: peer_differences(df, ["entropy"], ks=(2, 2), reference="mi"), "ks lists a size twice: [2, 2]"),
    (lambda df: peer_differences(df, ["entropy"], ks=(), reference="mi"), "ks must list one or more subset sizes"),
    (lambda df: peer_differences(df, "entropy", ks=(2,), reference="mi"), "peers must be a list of pipeline names"),
    (lambda df: peer_differences(df, ["mi"], ks=(2,), reference="mi"), "peers lists the reference 'mi'"),
    (lambda df: k_gain(df, pipeline="mi", k0=3, k1=1), "k0=3 must be smaller than k1=1"),
    (lambda df: entries_scored(df, pipelines=["mi"], ks=(5,)), "k = [5] is not in the frame: it has k = [1, 2, 3]"),
    (lambda df: pooled_coverage(df, pipeline="auto", levels=(0.5,)), "pipeline 'auto' is not in the frame"),
    (lambda df: calibration_table(df, ks=[9]), "ks must list subset sizes of the frame, k = [1, 2, 3]; got [9]"),
    (lambda df: top_residuals(df, n=0), "n must be a positive integer (ranks 1..n), got 0"),
    (lambda df: paired_summary(df, ks=(2,), reference="mi", baseline="entropy", n_se=-1),
     "n_se must be a non-negative number, got -1"),
    (lambda df: paired_summary(df, ks=(2,), reference="mi", baseline="mi"), "reference and baseline are both 'mi'"),
    (lambda df: selection_summary(positions_from_cv(df, pipeline="mi"), top=2, n_folds=1),
     "n_folds=1 is smaller than the 3 folds the positions come from"),
    (lambda df: positions_from_cv(df, pipeline="mi", holdout=None), "holdout must be a fraction in (0, 1), got None"),
    (lambda df: positions_from_cv(df.assign(selected=df["selected"].astype(str)), pipeline="mi"),
     "the selected column holds text"),
    (lambda df: positions_from_cv(pd.concat([df.assign(seed=0), df.assign(seed=1)]), pipeline="mi"),
     "cv table holds 2 seeds of 'mi'"),
    (lambda df: positions_from_cv(pd.concat([df, df]), pipeline="mi"),
     "cv table has more than one row of 'mi' per fold and k"),
])
def test_a_summary_of_what_the_run_does_not_hold_is_refused_by_name(two_runs, call, message):
    with pytest.raises(ValueError) as err:
        call(two_runs[0])
    assert message in str(err.value)


def test_top_residuals_of_a_filtered_frame_are_those_of_its_rows(two_runs):
    df = two_runs[0]
    mi = top_residuals(df[df["pipeline"] == "mi"])
    assert set(mi["pipeline"]) == {"mi"} and len(mi) < len(top_residuals(df))
    assert set(top_residuals(df[df["k"] == 1])["k"]) == {1}


def test_rows_without_a_holdout_are_summarized_not_dropped(two_runs):
    df = two_runs[0].assign(holdout=np.nan, split="random")
    s = summarize_cv(df)
    assert len(s) == len(summarize_cv(two_runs[0])) and s["holdout"].isna().all() and (s["split"] == "random").all()
    assert len(calibration_table(df)) == len(calibration_table(two_runs[0]))


def test_a_summary_with_nothing_to_compare_gives_no_verdict_and_bad_band_arguments_are_named(two_runs):
    df = two_runs[0].copy()
    df.loc[(df["pipeline"] == "mi") & (df["k"] == 2), "r2"] = np.nan
    row = paired_summary(df, ks=(2,), reference="mi", baseline="entropy").iloc[0]
    assert row["vs_baseline"] == "n/a" and np.isnan(row["diff_baseline"])
    assert paired_summary(two_runs[0], ks=(2,), reference="mi", baseline="entropy").iloc[0]["vs_baseline"] in (
        "better", "level", "worse")
    from benchsel_lib.studies.bands import variant_range
    band = pd.DataFrame({"variant": ["a", "b"], "k": [1, 1], "pipeline": ["mi", "mi"], "r2": [0.5, 0.6]})
    assert variant_range(band, k=1)["max"].iloc[0] == 0.6
    with pytest.raises(ValueError, match="metric 'pipeline' is not a numeric column of the band"):
        variant_range(band, k=1, metric="pipeline")


# --------------------------------------------------------------------------- mistakes that used to pass silently
def _percent_matrix() -> ScoreMatrix:
    """Scores on a 0-100 scale between 25 and 95 (like GPQA Diamond), 40 models x 6 benchmarks."""
    X = low_rank_scores(3, 40, 6)
    X = 25 + 70 * (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    return as_matrix(X)


def _fraction_matrix() -> ScoreMatrix:
    """Scores on a 0-1 scale between 0.3 and 0.9, 40 models x 6 benchmarks."""
    return as_matrix(_percent_matrix().scores / 100 + 0.05)


@pytest.mark.parametrize(("make", "value", "message"), [
    (_percent_matrix, 0.71, "value 0.71 for benchmark 'b0' is below its observed range 25..95; 0.71 x 100 = 71 "
                            "lies in the observed range: a fraction given for a percentage?"),
    (_fraction_matrix, 0.006, "value 0.006 for benchmark 'b0' is below its observed range 0.3..1; 0.006 x 100 = 0.6 "
                              "lies in the observed range: 100 times too small?"),
])
def test_a_score_100_times_too_small_is_said_in_one_line_and_is_an_error_when_strict(make, value, message):
    m = make()
    pipe = Pipeline.paper(k=2).fit(m)
    clean = pipe.predict({"b0": value * 100})
    with pytest.warns(ScoreWarning) as record:
        out = pipe.predict({"b0": value})
    said = [str(w.message) for w in record]
    assert said == [message] and record[0].category.__name__ == "ScaleWarning"
    assert out.index.equals(clean.index)  # the prediction itself is made, as before: only said aloud
    with pytest.raises(ValueError) as err:
        pipe.predict({"b0": value}, strict=True)
    assert str(err.value) == message
    with pytest.raises(ValueError, match="a fraction given for a percentage"):
        check_given({"b0": 0.71}, _percent_matrix(), strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipe.predict({"b0": value * 100}, strict=True)  # a plausible score: neither warned nor refused


def test_a_score_100_times_too_large_names_the_slip_in_its_error():
    with pytest.raises(ValueError) as err:
        check_given({"b0": 55.2}, _fraction_matrix())
    assert str(err.value).endswith("55.2 / 100 = 0.552 lies in the observed range: a percentage given for a fraction?")
    assert "out of range" in str(err.value) and "observed range 0.3..1" in str(err.value)


def test_scores_that_can_be_negative_or_sit_at_the_ends_of_the_range_are_not_called_slips():
    signed = as_matrix(low_rank_scores(0, 40, 4))  # centred scores: no percentage, no fraction
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_given({"b0": float(np.nanmax(signed.scores[:, 0])) * 1.5}, signed)
        check_given({"b0": 25.0, "b1": 95.0}, _percent_matrix())
        check_given({"b0": 0.3, "b1": 1.0}, _fraction_matrix())


def test_the_papers_pipeline_on_two_models_gives_no_intervals_and_says_why():
    m = as_matrix(50 + 10 * low_rank_scores(0, 2, 6))
    with pytest.warns(UserWarning, match=r"only 2 training models: every correlation from two points is \+-1, too "
                                         r"few for Gaussian intervals; predictions come without intervals"):
        pipe = Pipeline.paper(k=2).fit(m)
    out = pipe.predict({"b0": 50.0})
    assert out[["lower", "upper", "sd"]].isna().all().all() and out["mean"].notna().all()
    assert any("too few for Gaussian intervals" in n for n in pipe.notes_)


def test_a_matrix_of_one_model_is_refused_by_its_model_count_before_any_column_check():
    m = as_matrix(50 + 10 * low_rank_scores(0, 1, 6))
    for make in (lambda: Pipeline.paper(k=2), lambda: Pipeline.auto(k=2)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "is constant" warning first
            with pytest.raises(ValueError) as err:
                make().fit(m)
        assert str(err.value) == ("the matrix has 1 model: a pipeline needs at least 2 models (rows), to see how the "
                                  "benchmarks vary together")


def test_a_search_asked_for_every_benchmark_is_refused_before_any_work(monkeypatch):
    from benchsel_lib.method import pipeline as pipeline_module

    monkeypatch.setattr(pipeline_module.Pipeline, "fit_path", lambda *a, **k: pytest.fail("the search ran"))
    with pytest.raises(ValueError, match=r"k=6 leaves nothing to predict: the matrix has 6 benchmarks .* "
                                         r"choose k <= 5"):
        Pipeline.auto(k=6).fit(_matrix())


# --------------------------------------------------------------------------- the other scale, within the range bound
def test_a_value_above_1_on_a_benchmark_observed_within_0_and_1_is_said_and_refused_when_strict():
    m = _fraction_matrix()
    pipe = Pipeline.paper(k=2).fit(m)
    message = ("value 2 for benchmark 'b0' is above its observed range 0.3..1; 2 is above 1 while every "
               "observed score lies in [0, 1]: a percentage given for a fraction?")
    with pytest.warns(ScoreWarning) as record:
        pipe.predict({"b0": 2.0})
    assert [str(w.message) for w in record] == [message]
    with pytest.raises(ValueError) as err:
        pipe.predict({"b0": 2.0}, strict=True)
    assert str(err.value) == message
    with pytest.raises(ValueError, match="a percentage given for a fraction"):
        pipe.predict({"b0": 3.5}, strict=True)


def test_a_value_below_1_on_a_benchmark_observed_from_1_up_is_said_and_refused_when_strict():
    with pytest.raises(ValueError, match="0.15 is below 1 while every observed score is at least 1: a fraction "
                                         "given for a percentage"):
        check_given({"b0": 0.15}, _percent_matrix(), strict=True)


def test_real_high_and_low_scores_on_either_scale_are_not_called_slips():
    low_start = as_matrix(np.column_stack([np.linspace(0.4, 90.0, 40), np.linspace(3.0, 60.0, 40)]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_given({"b0": 71.0}, _percent_matrix(), strict=True)  # 71 on a 0-100 benchmark
        check_given({"b1": 1.2}, low_start, strict=True)  # a low but real percentage (ARC-AGI-1 = 1.2)
        check_given({"b0": 1.0}, _fraction_matrix(), strict=True)  # the top of a 0-1 scale


def test_the_command_line_says_a_percentage_given_for_a_0_1_mteb_benchmark(capsys, shared_data_dir):
    from benchsel_lib.cli import main

    args = ["predict", "--data", "mteb", "--pipeline", "paper", "--format", "csv", "--scores", "ArguAna=2"]
    assert main(args) == 0
    _, err = capsys.readouterr()
    assert "value 2 for benchmark 'ArguAna'" in err and "a percentage given for a fraction?" in err
    assert main([*args, "--strict"]) == 2
    _, err = capsys.readouterr()
    assert "a percentage given for a fraction?" in err
