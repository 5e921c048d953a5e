"""Tests for the recommended pipeline's search (method/pipeline.py): choice on training rows only, conformal coverage, bad input."""
from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib.data import load_csv
from benchsel_lib.method.pipeline import Pipeline, parse_pipeline
from benchsel_lib.method.inner_search import FALLBACK, SearchSettings, pipeline_path
from benchsel_lib.protocol.cv import CVProtocol, cross_validate
from benchsel_lib.protocol.splits import cv_splits
from benchsel_lib.protocol.summaries import coverage_column as _cov_col

_data = partial(low_rank_scores, m=80, n=10, noise=0.5, missing=0.2, standardize=True)
_matrix = as_matrix


def _recommend(train, k, **kwargs):
    """The recommended pipeline at the one subset size ``k`` (the last step of its path)."""
    return pipeline_path(train, k, ks=[k], settings=SearchSettings(**kwargs))[-1]


def _pairwise(*names):
    """Pipelines by short name, with the pairwise correlation estimate."""
    return [Pipeline.from_name(n, estimator="pairwise") for n in names]


def test_recommend_exposes_choice_scores_and_intervals():
    X = _data(1)
    rec = _recommend(X, 3, selectors=("mi", "lasso"), predictors=("gaussian", "ridge"), seed=0)
    assert rec.k == 3 and len(rec.selection) == 3
    assert rec.selector in ("mi", "lasso") and rec.predictor in ("gaussian", "ridge", "stack")
    s = rec.scores[rec.scores["k"] == 3]
    assert set(s["predictor"]) == {"gaussian", "ridge", "stack"}
    assert rec.inner_r2 == pytest.approx(s["r2"].max())
    assert rec.note is None
    if rec.predictor == "stack":
        assert all(w >= 0 for w in rec.weights.values())
    query = np.full((2, 10), np.nan)
    query[:, rec.selection] = X[:2, rec.selection]
    pred = rec.predict(X, query)
    lo, hi = rec.interval(pred, 0.8)
    assert np.isfinite(pred).all() and (hi >= lo).all()


def test_auto_choice_ignores_validation_rows():
    X = _data(2, m=60)
    f, train, val = cv_splits(60, n_folds=5, holdout=0.1, seed=0)[0]
    Y = X.copy()
    rng = np.random.default_rng(9)
    Y[val] = np.where(np.isnan(Y[val]), np.nan, rng.normal(scale=3.0, size=Y[val].shape))
    kw = dict(pipelines=("auto",), holdouts=(0.1,), k_max=3, n_folds=5, seed=0, levels=(0.8,), progress=False)
    a = cross_validate(_matrix(X), **kw)
    b = cross_validate(_matrix(Y), **kw)
    a0, b0 = a[a["fold"] == 0], b[b["fold"] == 0]
    assert list(a0["choice"]) == list(b0["choice"])
    np.testing.assert_array_equal(a0["inner_r2"].to_numpy(), b0["inner_r2"].to_numpy())
    assert list(a0["selected"]) == list(b0["selected"])
    assert not np.allclose(a0["r2"].to_numpy(), b0["r2"].to_numpy())  # the validation rows did change


def test_conformal_intervals_cover_held_out_models():
    rng = np.random.default_rng(3)
    m, n = 400, 8
    L = np.linalg.cholesky(0.6 * np.ones((n, n)) + 0.4 * np.eye(n))
    X = rng.normal(size=(m, n)) @ L.T
    train, test = X[:300], X[300:]
    rec = _recommend(train, 2, selectors=("mi",), predictors=("gaussian", "ridge"), levels=(0.5, 0.8, 0.9))
    query = np.full_like(test, np.nan)
    query[:, rec.selection] = test[:, rec.selection]
    pred = rec.predict(train, query)
    tgt = np.setdiff1d(np.arange(n), rec.selection)
    for lev in (0.5, 0.8, 0.9):
        lo, hi = rec.interval(pred, lev)
        cov = np.mean((test[:, tgt] >= lo[:, tgt]) & (test[:, tgt] <= hi[:, tgt]))
        assert abs(cov - lev) < 0.05, (lev, cov)


def test_too_few_training_models_fall_back_to_the_named_default():
    X = _data(4, m=7, missing=0.0)
    rec = _recommend(X, 2)
    assert (rec.selector, rec.predictor) == FALLBACK
    assert "too few" in rec.note and "mi+gaussian" in rec.note
    query = np.full((1, 10), np.nan)
    query[0, rec.selection] = 0.3
    assert np.isfinite(rec.predict(X, query)).all()


def test_bad_input_is_named():
    X = _data(5)
    with pytest.raises(ValueError, match="unknown predictor 'nope'"):
        _recommend(X, 2, predictors=("nope",))
    with pytest.raises(ValueError, match="unknown pipeline"):
        parse_pipeline("mi")
    with pytest.raises(ValueError, match="unknown predictor 'x'"):
        parse_pipeline("mi+x")
    Y = X.copy()
    Y[10:, :8] = np.nan
    with pytest.raises(ValueError, match="candidate benchmarks"):
        _recommend(Y, 4, selectors=("mi-obs",), predictors=("ridge",))
    with pytest.raises(ValueError, match="unknown selector 'foo'"):
        cross_validate(_matrix(X), ("foo+ridge",), k_max=2, n_folds=3, progress=False)


def test_pipeline_path_is_deterministic_and_never_nan():
    X = _data(6, missing=0.5)
    a = pipeline_path(X, 4, settings=SearchSettings(seed=1, levels=(0.8,)))
    b = pipeline_path(X, 4, settings=SearchSettings(seed=1, levels=(0.8,)))
    assert [r.name for r in a] == [r.name for r in b]
    assert a[-1].scores.equals(b[-1].scores)
    for r in a:
        q = np.full((3, 10), np.nan)
        q[:, r.selection] = X[:3, r.selection]
        assert np.isfinite(r.predict(X, q)).all()


def test_the_search_scores_its_candidates_on_every_inner_held_out_row_under_the_mean_rule():
    X = _data(6, missing=0.6)
    skip, mean = (pipeline_path(X, 2, ks=[1], settings=SearchSettings(seed=1, levels=(), unreached=rule))[0] for rule in ("skip", "mean"))
    key = ["selector", "predictor"]
    n = skip.scores.set_index(key)["n_eval"].to_frame("skip").join(mean.scores.set_index(key)["n_eval"].rename("mean"))
    assert (n["mean"] >= n["skip"]).all() and (n["mean"] > n["skip"]).any()  # rows that observe no revealed one
    full = _data(6, missing=0.0)
    a, b = (pipeline_path(full, 2, ks=[1], settings=SearchSettings(seed=1, levels=(), unreached=rule))[0] for rule in ("skip", "mean"))
    assert a.scores.equals(b.scores)  # every row observes every benchmark: nothing to leave out
    with pytest.raises(ValueError, match="unknown unreached rule 'all'"):
        pipeline_path(X, 2, settings=SearchSettings(unreached="all"))


def test_cross_validate_scores_fixed_pipelines_like_the_gaussian_path():
    X = _data(7, missing=0.1)
    M = _matrix(X)
    kw = dict(holdouts=(0.1,), k_max=3, n_folds=4, seed=0, progress=False, levels=())
    paper = cross_validate(M, ("mi",), **kw)
    pipe = cross_validate(M, ("mi+gaussian",), **kw)
    np.testing.assert_allclose(pipe["r2"].to_numpy(), paper["r2"].to_numpy(), atol=1e-8)
    assert list(pipe["selected"]) == list(paper["selected"])


def test_a_benchmark_no_training_model_observed_is_named():
    X = _data(8)
    X[:, 4] = np.nan
    with pytest.raises(ValueError, match=r"no training model observed benchmark column\(s\) \[4\]"):
        _recommend(X, 2)


# ------------------------------------------------------------------ command line
def _cli(capsys, *argv):
    from benchsel_lib.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def small_csv(tmp_path):
    import pandas as pd

    X = _data(9, m=40, n=6, missing=0.1) * 0.1 + 0.5
    df = pd.DataFrame(X, index=[f"model-{i}" for i in range(40)], columns=[f"b{j}" for j in range(6)])
    df.index.name = "model"
    path = tmp_path / "scores.csv"
    df.to_csv(path)
    return path


def test_cli_predict_defaults_to_the_recommended_pipeline(capsys, small_csv):
    import json

    code, out, _ = _cli(capsys, "predict", "--data", small_csv, "--scores", "b0=0.55,b1=0.5", "--format", "json",
                        "--estimator", "pairwise")
    assert code == 0
    doc = json.loads(out)
    assert doc["pipeline"] == "auto" and doc["chosen"].startswith("given+")
    assert {r["predictor"] for r in doc["scores"]} >= {"gaussian", "ridge", "stack"}
    preds = doc["predictions"]
    assert len(preds) == 4 and all(r["lower"] <= r["predicted"] <= r["upper"] for r in preds)
    code, out, _ = _cli(capsys, "predict", "--data", small_csv, "--scores", "b0=0.55,b1=0.5", "--estimator", "pairwise")
    assert "pipeline: given+" in out and "inner-CV R^2 at k=2" in out


def test_cli_select_auto_and_paper_path(capsys, small_csv):
    import json

    code, out, _ = _cli(capsys, "select", "--data", small_csv, "-k", "2", "--format", "json", "--estimator", "pairwise")
    assert code == 0
    doc = json.loads(out)
    assert doc["pipeline"] == "auto" and len(doc["selection"]) == 2 and doc["scores"]
    code, out, _ = _cli(capsys, "select", "--data", small_csv, "-k", "2", "--pipeline", "paper", "--objective", "mi",
                        "--format", "json", "--estimator", "pairwise")
    assert code == 0 and json.loads(out)["objective"] == "mi"


def test_cli_select_nested_gives_the_auto_pipeline_with_one_selector_for_every_size(capsys, small_csv):
    import json

    from benchsel_lib.method.choice import Nested

    code, out, _ = _cli(capsys, "select", "--data", small_csv, "-k", "3", "--nested", "--format", "json",
                        "--estimator", "pairwise")
    assert code == 0
    doc = json.loads(out)
    assert doc["choice"] == "nested" and len(doc["selection"]) == 3
    pipe = Pipeline.auto(3, choice="nested").fit(load_csv(small_csv))
    assert [r["benchmark"] for r in doc["selection"]] == pipe.selected
    assert pipe.choice_.selector == Nested.selector(pipe.choice_.scores.to_dict("records"), [1, 2, 3])
    code, out, _ = _cli(capsys, "select", "--data", small_csv, "-k", "3", "--nested", "--estimator", "pairwise")
    assert code == 0 and f"--nested: {pipe.choice_.selector} at every size" in out


def test_cli_cv_compares_pipelines_in_json(capsys, small_csv):
    import json

    code, out, _ = _cli(capsys, "cv", "--data", small_csv, "--pipelines", "auto,lasso+ridge,mi", "--k-max", "2",
                        "--folds", "4", "--format", "json", "--estimator", "pairwise")
    assert code == 0
    rows = json.loads(out)["summary"]
    assert {(r["pipeline"], r["k"]) for r in rows} == {(m, k) for m in ("auto", "lasso+ridge", "mi") for k in (1, 2)}
    assert all(np.isfinite(r["r2_mean"]) for r in rows)


@pytest.mark.parametrize("argv, needle", [
    (["cv", "--pipelines", "mi+nope"], "unknown predictor 'nope'"),
    (["predict", "--scores", "b0=0.5", "--pipeline", "auto", "--scaling", "logit"], "options of --pipeline paper"),
    (["select", "-k", "2", "--pipeline", "auto", "--objective", "mi"], "options of --pipeline paper"),
    (["select", "-k", "2", "--pipeline", "paper", "--nested"], "--nested is an option of --pipeline auto"),
])
def test_cli_pipeline_errors_exit_2_with_one_line(capsys, small_csv, argv, needle):
    code, _, err = _cli(capsys, argv[0], "--data", small_csv, *argv[1:])
    assert code == 2 and needle in err and "Traceback" not in err


def test_a_selector_whose_filter_leaves_too_few_candidates_is_left_out_and_named():
    X = _data(10, m=60, n=10, missing=0.0)
    X[6:, 3:] = np.nan  # only columns 0-2 are observed by >= 30% of the models
    rec = _recommend(X, 4, selectors=("mi-obs", "mi"), predictors=("ridge",), stack=False)
    assert rec.selector == "mi" and "mi-obs left out" in rec.note
    with pytest.raises(ValueError, match="candidate benchmarks"):
        _recommend(X, 4, selectors=("mi-obs",), predictors=("ridge",), stack=False)


def test_cross_validate_at_chosen_subset_sizes_equals_the_full_run_at_those_sizes():
    m = _matrix(low_rank_scores(10, m=70, n=9, noise=0.4, missing=0.1))
    kw = dict(pipelines=_pairwise("mi", "random", "auto", "lasso+ridge"), k_max=5, n_folds=3,
              progress=False, levels=(0.8,))
    full = cross_validate(m, **kw)
    part = cross_validate(m, ks=[2, 5], **kw)
    assert sorted(part["k"].unique()) == [2, 5]
    cols = ["pipeline", "fold", "k", "r2", "selected", "choice", "cov_80"]
    want = full[full["k"].isin([2, 5])][cols].sort_values(["pipeline", "fold", "k"]).reset_index(drop=True)
    got = part[cols].sort_values(["pipeline", "fold", "k"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_exact=False, atol=1e-12, rtol=0)


@pytest.mark.parametrize("ks", [[0], [6], [], [2.5]])
def test_subset_sizes_outside_one_to_k_max_are_refused(ks):
    m = _matrix(np.random.default_rng(0).normal(size=(30, 6)))
    with pytest.raises(ValueError, match="ks="):
        cross_validate(m, ("mi",), k_max=5, n_folds=3, ks=ks, progress=False)


@pytest.mark.parametrize("ks", [[0], [4], [], [2.5], [True]])
def test_pipeline_path_refuses_subset_sizes_outside_one_to_k_max(ks):
    X = np.random.default_rng(1).normal(size=(30, 6))
    with pytest.raises(ValueError, match="ks="):
        pipeline_path(X, 3, ks=ks, settings=SearchSettings(selectors=("mi",), predictors=("gaussian",), stack=False, levels=()))


def test_inner_optimism_is_the_mean_paired_gap_between_inner_and_held_out_r2():
    from benchsel_lib.studies.pipelines import inner_optimism

    df = pd.DataFrame(dict(pipeline=["auto"] * 4 + ["mi"] * 2, k=[5, 5, 10, 10, 5, 10],
                           inner_r2=[0.6, 0.5, 0.7, np.nan, np.nan, np.nan], r2=[0.4, 0.45, 0.5, 0.6, 0.1, 0.2]))
    out = inner_optimism(df, ks=(5, 10)).set_index("k")
    assert out.loc[5, "optimism"] == pytest.approx(((0.6 - 0.4) + (0.5 - 0.45)) / 2)
    assert out.loc[5, "optimism_se"] == pytest.approx(np.std([0.2, 0.05], ddof=1) / np.sqrt(2))
    assert out.loc[10, "n_cells"] == 1 and out.loc[10, "r2"] == pytest.approx(0.5)  # the NaN cell is left out


def test_inner_optimism_sets_the_inner_score_against_the_r2_of_every_held_out_model_where_it_is_known():
    from benchsel_lib.studies.pipelines import inner_optimism

    df = pd.DataFrame(dict(pipeline=["auto"] * 2, k=[5, 5], inner_r2=[0.6, 0.5], r2=[0.55, 0.5], r2_all=[0.4, 0.3]))
    out = inner_optimism(df, ks=(5,)).set_index("k")
    assert out.loc[5, "optimism"] == pytest.approx(0.2) and out.loc[5, "r2"] == pytest.approx(0.35)


def test_compare_pipelines_equals_separate_cross_validations_per_seed():
    from benchsel_lib.studies.pipelines import compare_pipelines

    M = _matrix(_data(14, m=60))
    fixed = ("mi+ridge", "lasso+knn")
    kw = dict(holdouts=(0.1,), k_max=3, n_folds=4, scheme="paper", progress=False, ks=(1, 3))
    reference = [Pipeline.auto(), Pipeline.paper(objective="mi", config="released", estimator="pairwise")]
    pairs = [Pipeline.from_name(n, config="released", estimator="pairwise") for n in fixed]
    got = compare_pipelines(M, fixed=fixed, seeds=(0, 5), estimator="pairwise",
                            protocol=CVProtocol(n_folds=4, k_max=3, levels=(0.8,), ks=(1, 3)))
    want = pd.concat([part.assign(seed=s) for s in (0, 5) for part in (
        cross_validate(M, reference, seed=s, levels=(0.8,), **kw),
        cross_validate(M, pairs, seed=s, levels=(), **kw))], ignore_index=True)
    assert set(got["pipeline"]) == {"auto", "mi", *fixed} and sorted(set(got["seed"])) == [0, 5]
    key = ["seed", "pipeline", "fold", "k"]
    got, want = (d.sort_values(key).reset_index(drop=True) for d in (got, want))
    for col in ("r2", "ss_res", "inner_r2", _cov_col(0.8)):
        np.testing.assert_array_equal(got[col].to_numpy(dtype=float), want[col].to_numpy(dtype=float))
    assert list(got["selected"]) == list(want["selected"])


def test_compare_pipelines_scores_every_held_out_model_under_the_mean_rule():
    from benchsel_lib.studies.pipelines import compare_pipelines

    M = _matrix(_data(15, m=50, missing=0.5))
    kw = dict(holdouts=(0.1,), k_max=2, n_folds=4, scheme="paper", progress=False, ks=(1,), seed=0)
    pairs = [Pipeline.from_name("mi+ridge", config="released", estimator="pairwise")]
    got = {rule: compare_pipelines(M, fixed=("mi+ridge",), seeds=(0,), estimator="pairwise",
                                   protocol=CVProtocol(n_folds=4, k_max=2, ks=(1,), unreached=rule))
           for rule in ("skip", "mean")}
    want = pd.concat([cross_validate(M, [Pipeline.auto(), Pipeline.paper(objective="mi", config="released",
                                                                         estimator="pairwise")],
                                     levels=(), unreached="mean", **kw),
                      cross_validate(M, pairs, levels=(), unreached="mean", **kw)], ignore_index=True)
    key = ["pipeline", "fold", "k"]
    mean, want = (d.sort_values(key).reset_index(drop=True) for d in (got["mean"], want))
    np.testing.assert_array_equal(mean["r2"].to_numpy(dtype=float), want["r2"].to_numpy(dtype=float))
    assert (mean["n_eval"] >= got["skip"].sort_values(key)["n_eval"].to_numpy()).all()
    assert mean["n_eval"].sum() > got["skip"]["n_eval"].sum()  # some held-out model observes no revealed one


def test_entries_scored_sums_each_methods_scored_entries_over_the_cells():
    from benchsel_lib.studies.pipelines import entries_scored

    df = pd.DataFrame(dict(pipeline=["auto", "auto", "auto", "a+b", "a+b"], fold=[0, 1, 0, 0, 1], k=[5, 5, 10, 5, 5],
                           n_eval=[10, 20, 7, 30, 31]))
    got = entries_scored(df, pipelines=["a+b", "auto"])
    assert got.to_dict("index") == {"a+b": {5: 61, 10: 0}, "auto": {5: 30, 10: 7}}
    assert list(entries_scored(df).index) == ["auto", "a+b"]
    with pytest.raises(ValueError, match="'n_eval' column"):
        entries_scored(df.drop(columns="n_eval"))
    with pytest.raises(ValueError, match="pipeline 'mi' is not in the frame"):
        entries_scored(df, pipelines=["mi"])


def test_paired_summary_reads_the_difference_to_the_baseline_in_standard_errors():
    from benchsel_lib.studies.pipelines import paired_summary

    rows = []
    for fold in range(4):
        for method, r2 in (("auto", 0.5 + 0.01 * fold), ("mi", 0.2 + 0.01 * fold), ("x+y", 0.45)):
            rows.append(dict(seed=0, fold=fold, k=5, pipeline=method, r2=r2))
        for method, r2 in (("auto", 0.5 + 0.02 * (fold % 2)), ("mi", 0.5 + 0.02 * ((fold + 1) % 2)), ("x+y", 0.1)):
            rows.append(dict(seed=0, fold=fold, k=10, pipeline=method, r2=r2))
    out = paired_summary(pd.DataFrame(rows), ks=(5, 10)).set_index("k")
    assert out.loc[5, "vs_baseline"] == "better" and out.loc[5, "diff_baseline"] == pytest.approx(0.3)
    assert out.loc[10, "vs_baseline"] == "level"  # alternating +-0.02: mean 0 within its standard error
    assert out.loc[5, "best_fixed"] == "x+y" and out.loc[5, "diff_se"] == pytest.approx(
        np.std([0.05, 0.06, 0.07, 0.08], ddof=1) / 2)


def test_choice_counts_are_the_most_frequent_choices_per_k():
    from benchsel_lib.studies.pipelines import choice_counts

    df = pd.DataFrame(dict(pipeline=["auto"] * 6 + ["mi"], k=[5, 5, 5, 10, 10, 10, 5],
                           choice=["a+b", "a+b", "c+d", "c+d", "c+d", "e+f", np.nan]))
    assert choice_counts(df, ks=(5, 10), top=1) == {5: {"a+b": 2}, 10: {"c+d": 2}}
    assert choice_counts(df, ks=(5,)) == {5: {"a+b": 2, "c+d": 1}}


def test_peer_differences_pair_the_reference_and_each_peer_by_seed_and_fold():
    from benchsel_lib.studies.pipelines import peer_differences

    rows = []
    for seed in (0, 42):
        for fold in range(3):
            for method, r2 in (("auto", 0.6 + 0.01 * fold), ("a+b", 0.5 + 0.02 * fold), ("c+d", 0.7)):
                rows.append(dict(seed=seed, fold=fold, k=5, pipeline=method, r2=r2))
    rows.append(dict(seed=0, fold=0, k=5, pipeline="e+f", r2=np.nan))
    out = peer_differences(pd.DataFrame(rows), ["a+b", "c+d", "missing"], ks=(5,)).set_index("peer")
    assert list(out.index) == ["a+b", "c+d"]  # a peer absent from the table is skipped
    d = [0.1, 0.09, 0.08] * 2
    assert out.loc["a+b", "diff"] == pytest.approx(np.mean(d))
    assert out.loc["a+b", "diff_se"] == pytest.approx(np.std(d, ddof=1) / np.sqrt(6))
    assert out.loc["c+d", "diff"] == pytest.approx(-0.09) and out.loc["c+d", "n_cells"] == 6
    assert out.loc["c+d", "reference_r2"] == pytest.approx(0.61) and out.loc["c+d", "peer_r2"] == pytest.approx(0.7)


def test_shared_differences_score_both_methods_on_the_entries_both_score():
    from benchsel_lib.protocol.summaries import ScoredEntries
    from benchsel_lib.studies.pipelines import shared_differences

    def e(index, res, truth):
        return ScoredEntries(np.array(index, dtype=np.int64), np.array(res, float), np.array(truth, float))

    truth = {i: 1.0 + i for i in range(8)}  # one split: every method sees the same truth of an entry
    rows = []
    for fold, (a, b) in enumerate([((0, 1, 2, 3), (2, 3, 4)), ((1, 5, 6), (0, 5, 6, 7))]):
        rows.append(dict(fold=fold, k=5, pipeline="auto", r2=0.0,
                         entries=e(a, [0.1 * i for i in a], [truth[i] for i in a])))
        rows.append(dict(fold=fold, k=5, pipeline="a+b", r2=0.0,
                         entries=e(b, [0.3] * len(b), [truth[i] for i in b])))
    out = shared_differences(pd.DataFrame(rows), ["a+b", "missing"], ks=(5,))
    assert list(out["peer"]) == ["a+b"]
    # fold 0 shares entries 2, 3; fold 1 shares 5, 6
    want_auto = [1 - (0.2 + 0.3) / (3 + 4), 1 - (0.5 + 0.6) / (6 + 7)]
    want_peer = [1 - 0.6 / 7, 1 - 0.6 / 13]
    r = out.iloc[0]
    assert r.reference_r2 == pytest.approx(np.mean(want_auto)) and r.peer_r2 == pytest.approx(np.mean(want_peer))
    d = np.subtract(want_auto, want_peer)
    assert r["diff"] == pytest.approx(d.mean()) and r.diff_se == pytest.approx(np.std(d, ddof=1) / np.sqrt(2))
    assert (r.n_cells, r.n_shared, r.n_own) == (2, 4, 7)
    df = pd.DataFrame(rows)
    with pytest.raises(ValueError, match="'entries' column"):
        shared_differences(df.drop(columns="entries"), ["a+b"], ks=(5,))
    apart = df.copy()  # two selections that together reveal every entry: no shared entry, NaN
    apart.at[1, "entries"], apart.at[3, "entries"] = e((4,), [0.3], [5.0]), e((7,), [0.3], [8.0])
    out = shared_differences(apart, ["a+b"], ks=(5,)).iloc[0]
    assert np.isnan(out.reference_r2) and np.isnan(out["diff"]) and (out.n_cells, out.n_shared, out.n_own) == (0, 0, 7)
    bad = df.copy()
    bad.at[1, "entries"] = e((2, 3, 4), [0.3] * 3, [9.0, 9.0, 9.0])
    with pytest.raises(ValueError, match="different splits"):
        shared_differences(bad, ["a+b"], ks=(5,))
    bad.at[1, "entries"] = np.nan  # a row of a run that kept no entries
    with pytest.raises(ValueError, match="no scored entries"):
        shared_differences(bad, ["a+b"], ks=(5,))


def test_compare_pipelines_keeps_the_entries_that_pair_two_methods_on_the_same_entries():
    from benchsel_lib.studies.pipelines import compare_pipelines, shared_differences

    M = _matrix(_data(15, m=50, missing=0.4))
    df = compare_pipelines(M, fixed=("mi+ridge", "random+knn"), seeds=(3,), estimator="pairwise",
                           protocol=CVProtocol(n_folds=4, k_max=3, ks=(2, 3), keep_entries=True))
    out = shared_differences(df, ["mi+ridge", "random+knn", "mi"], ks=(2, 3)).set_index(["k", "peer"])
    assert len(out) == 6 and (out["n_cells"] == 4).all() and (out["n_shared"] <= out["n_own"]).all()
    for (k, peer), r in out.iterrows():  # each cell by hand from the kept entries
        cells = []
        for fold in range(4):
            at = df[(df["k"] == k) & (df["fold"] == fold)].set_index("pipeline")["entries"]
            a, b = at["auto"], at[peer]
            common, ia, ib = np.intersect1d(a.index, b.index, return_indices=True)
            tot = a.sq_truth[ia].sum()
            cells.append((1 - a.sq_residual[ia].sum() / tot, 1 - b.sq_residual[ib].sum() / tot))
        assert r.reference_r2 == pytest.approx(np.mean([c[0] for c in cells]))
        assert r.peer_r2 == pytest.approx(np.mean([c[1] for c in cells]))
    # against a copy of itself a method is scored on all its own entries: its protocol R^2
    auto = df[df["pipeline"] == "auto"]
    own = shared_differences(pd.concat([df, auto.assign(pipeline="copy")], ignore_index=True), ["copy"], ks=(2,))
    assert own["diff"].iloc[0] == 0.0 and own["n_shared"].iloc[0] == own["n_own"].iloc[0]
    assert own["reference_r2"].iloc[0] == pytest.approx(auto[auto["k"] == 2]["r2"].mean())


def test_k_gain_is_the_paired_difference_between_two_subset_sizes():
    from benchsel_lib.studies.pipelines import k_gain

    df = pd.DataFrame(dict(pipeline=["auto"] * 4 + ["mi"] * 2, seed=0, fold=[0, 0, 1, 1, 0, 0], k=[5, 10] * 3,
                           r2=[0.5, 0.6, 0.4, 0.3, 0.0, 1.0]))
    g = k_gain(df, k0=5, k1=10)
    assert g["gain"] == pytest.approx(0.0) and g["n_cells"] == 2
    assert g["r2_k0"] == pytest.approx(0.45) and g["r2_k1"] == pytest.approx(0.45)
    assert g["gain_se"] == pytest.approx(np.std([0.1, -0.1], ddof=1) / np.sqrt(2))
    assert np.isnan(g["gain_common"]) and np.isnan(g["gain_common_se"])  # no same-entries column
    g = k_gain(df.assign(r2_common=[0.5, 0.7, 0.4, 0.6, 0.0, 0.0]), k0=5, k1=10)
    assert g["gain"] == pytest.approx(0.0)  # the protocol's R^2 is unchanged by the same-entries column
    assert g["gain_common"] == pytest.approx(0.2) and g["gain_common_se"] == pytest.approx(0.0)
    assert np.isnan(g["only_r2_k0"]) and np.isnan(g["common_r2_k1"])  # no sums of squares given
    assert g["worst_fold"] == 1 and g["worst_gain"] == pytest.approx(-0.1)  # fold 1 falls, fold 0 gains
    assert g["others_gain"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="not scored at both k = 5 and k = 7"):
        k_gain(df, k0=5, k1=7)


def test_k_gain_splits_each_size_into_the_entries_both_score_and_those_only_it_scores():
    from benchsel_lib.studies.pipelines import k_gain

    # two folds; per row: all entries scored (ss_res, ss_tot) and those every size scores (*_common)
    df = pd.DataFrame(dict(pipeline="auto", seed=0, fold=[0, 0, 1, 1, 2], k=[5, 10, 5, 10, 5],
                           r2=[0.5, 0.4, 0.6, 0.5, 0.9],
                           ss_res=[5.0, 9.0, 4.0, 6.0, 1.0], ss_tot=[10.0, 15.0, 10.0, 12.0, 10.0],
                           ss_res_common=[4.0, 3.0, 3.0, 2.0, 1.0], ss_tot_common=[8.0, 8.0, 6.0, 6.0, 10.0]))
    g = k_gain(df, k0=5, k1=10)
    assert g["n_cells"] == 2  # fold 2 has no k = 10 and is left out of the sums too
    assert g["common_r2_k0"] == pytest.approx(1 - 7 / 14) and g["common_r2_k1"] == pytest.approx(1 - 5 / 14)
    assert g["only_r2_k0"] == pytest.approx(1 - 2 / 6) and g["only_r2_k1"] == pytest.approx(1 - 10 / 13)
    same = df.assign(ss_tot_common=df.ss_tot, ss_res_common=df.ss_res)
    assert np.isnan(k_gain(same, k0=5, k1=10)["only_r2_k1"])  # every entry is scored at both sizes
    assert g["nested_cells"] == -1  # no selected column
    picks = [("a", "b"), ("b", "a", "c"), ("a", "b"), ("c", "d", "e"), ("a",)]
    assert k_gain(df.assign(selected=picks), k0=5, k1=10)["nested_cells"] == 1  # fold 0 nests, fold 1 does not


def test_newly_scored_names_the_held_out_models_only_the_larger_selection_brings_into_the_score():
    from benchsel_lib.studies.pipelines import newly_scored

    X = np.random.default_rng(0).normal(size=(14, 6))
    _, train, val = cv_splits(14, n_folds=2, holdout=0.0, seed=3, scheme="paper")[0]
    via_b4, via_b3, only_b3, thin = val[:4]
    X[via_b4, [0, 1, 3]] = np.nan  # observes b4 (revealed at k = 3 only) and targets b2, b5
    X[via_b3, [0, 1, 2, 4]] = np.nan  # observes b3 (revealed at k = 3 only) and target b5
    X[only_b3, [0, 1, 2, 4, 5]] = np.nan  # observes b3 alone: nothing left to score
    X[thin, 2] = np.nan  # misses one target: scored at both sizes
    X[train[:4], 3] = np.nan  # b3: observed by fewer training models than b4, so its model comes first
    df = pd.DataFrame(dict(pipeline="auto", seed=3, holdout=0.0, fold=0, k=[1, 3], r2=0.5,
                           selected=[("b0",), ("b0", "b4", "b3")], n_eval=[4 * 5 - 1, 4 * 3 - 1 + 2 + 1]))
    new = newly_scored(as_matrix(X), df, fold=0, seed=3, k0=1, k1=3, holdout=0.0, n_folds=2)
    assert new.to_dict("records") == [
        dict(model=f"m{via_b3}", targets=1, revealed=("b3",), train_observed=(len(train) - 4,)),
        dict(model=f"m{via_b4}", targets=2, revealed=("b4",), train_observed=(len(train),))]
    assert newly_scored(as_matrix(X), df, fold=0, seed=3, k0=3, k1=3, holdout=0.0, n_folds=2).empty
    with pytest.raises(ValueError, match="no row at fold 1"):
        newly_scored(as_matrix(X), df, fold=1, seed=3, k0=1, k1=3, holdout=0.0, n_folds=2)
    with pytest.raises(ValueError, match="pipeline 'mi' is not in the frame"):
        newly_scored(as_matrix(X), df, fold=0, seed=3, pipeline="mi", k0=1, k1=3, holdout=0.0, n_folds=2)
    with pytest.raises(ValueError, match="'selected' column"):
        newly_scored(as_matrix(X), df.drop(columns="selected"), fold=0, seed=3, k0=1, k1=3)
    # scoring every held-out model (unreached="mean"): k = 1 already scores via_b4 and via_b3
    mean = newly_scored(as_matrix(X), df.drop(columns="n_eval"), fold=0, seed=3, k0=1, k1=3, holdout=0.0,
                        n_folds=2, unreached="mean")
    assert mean.empty
    with pytest.raises(ValueError, match="unknown unreached rule 'all'"):
        newly_scored(as_matrix(X), df, fold=0, seed=3, k0=1, k1=3, unreached="all")
    with pytest.raises(ValueError, match="this split scores .* entries at k = 1 where the run scored 19"):
        newly_scored(as_matrix(X), df.assign(seed=6), fold=0, seed=6, k0=1, k1=3, holdout=0.0, n_folds=2)


def test_seed_gains_gives_each_seeds_paired_gain_from_k0_to_k1():
    from benchsel_lib.studies.pipelines import seed_gains

    # seed 1: gains +0.1 and -0.3 in its two folds; seed 7: +0.2 in its one fold scored at both sizes
    df = pd.DataFrame(dict(pipeline=["b"] * 7 + ["a"] * 2, seed=[7, 7, 1, 1, 1, 1, 7, 1, 1],
                           fold=[0, 0, 0, 0, 1, 1, 1, 0, 0], k=[5, 10, 5, 10, 5, 10, 5, 5, 10],
                           r2=[0.5, 0.7, 0.4, 0.5, 0.6, 0.3, 0.9, 0.2, 0.2]))
    out = seed_gains(df)
    assert list(zip(out.pipeline, out.seed)) == [("b", 1), ("b", 7), ("a", 1)]  # first appearance, then seed
    b1, b7 = out.iloc[0], out.iloc[1]
    assert b1.r2_k0 == pytest.approx(0.5) and b1.r2_k1 == pytest.approx(0.4) and b1.n_cells == 2
    assert b1.gain == pytest.approx(-0.1) and b1.gain_se == pytest.approx(np.std([0.1, -0.3], ddof=1) / np.sqrt(2))
    assert b7.r2_k0 == pytest.approx(0.5) and b7.gain == pytest.approx(0.2) and b7.n_cells == 1  # fold 1 has no k=10
    assert np.isnan(b7.gain_se) and b1.nested_cells == -1
    assert list(seed_gains(df, pipelines=["a"]).pipeline) == ["a"]
    with pytest.raises(ValueError, match="pipeline 'c' is not in the frame"):
        seed_gains(df, pipelines=["c"])
    with pytest.raises(ValueError, match="not scored at both k = 5 and k = 7"):
        seed_gains(df, k0=5, k1=7)


def test_paired_summaries_pair_the_holdouts_of_one_cross_validate_run():
    from benchsel_lib.studies.pipelines import k_gain, paired_summary, peer_differences

    # no seed column (one run), two holdouts x two folds: four cells, each with its own difference
    rows = []
    for i, (holdout, fold) in enumerate([(0.1, 0), (0.1, 1), (0.2, 0), (0.2, 1)]):
        for method, r2 in (("auto", 0.6 + 0.1 * i), ("a+b", 0.5), ("mi", 0.4)):
            rows += [dict(pipeline=method, holdout=holdout, fold=fold, k=5, r2=r2),
                     dict(pipeline=method, holdout=holdout, fold=fold, k=10, r2=r2 + 0.01 * i)]
    df = pd.DataFrame(rows)
    d = [0.1, 0.2, 0.3, 0.4]
    out = peer_differences(df, ["a+b"], ks=(5,)).iloc[0]
    assert out["n_cells"] == 4 and out["diff"] == pytest.approx(np.mean(d))
    assert out["diff_se"] == pytest.approx(np.std(d, ddof=1) / 2)
    assert paired_summary(df, ks=(5,)).iloc[0]["n_cells"] == 4
    g = k_gain(df, k0=5, k1=10)
    assert g["n_cells"] == 4 and g["gain"] == pytest.approx(0.015)  # 0, 0.01, 0.02, 0.03: not averaged over holdouts
    with pytest.warns(UserWarning, match="holdouts 0.1 and 0.2 give the same training sets"):  # 3 folds: both capped
        real = cross_validate(_matrix(_data(3)), _pairwise("entropy", "random"), holdouts=(0.1, 0.2), k_max=3,
                              n_folds=3, scheme="paper", seed=0, progress=False)
    assert k_gain(real, pipeline="entropy", k0=1, k1=3)["n_cells"] == 6
    assert peer_differences(real, ["random"], ks=(1, 3), reference="entropy")["n_cells"].tolist() == [6, 6]


@pytest.mark.parametrize("name, kwargs, drop, needle", [
    ("k_gain", {}, "fold", "no 'fold' column"),
    ("k_gain", {"pipeline": "x"}, None, "pipeline 'x' is not in the frame"),
    ("peer_differences", {"peers": ["mi"], "ks": (7,)}, None, r"k = \[7\] is not scored: the frame has k = \[5, 10\]"),
    ("paired_summary", {"baseline": "none"}, None, "pipeline 'none' is not in the frame"),
    ("seed_gains", {}, "seed", "no 'seed' column"),
    ("choice_counts", {}, None, "no 'choice' column"),
    ("inner_optimism", {}, None, "no 'inner_r2' column"),
    ("pooled_coverage", {"levels": (0.8,)}, None, r"no 'n_eval', 'cov_80' columns: .*levels=\(0\.8,\)"),
])
def test_paired_summaries_name_a_missing_column_size_or_method(name, kwargs, drop, needle):
    from benchsel_lib.studies import pipelines

    df = pd.DataFrame(dict(pipeline=["auto", "auto", "mi", "mi"], seed=0, fold=0, k=[5, 10, 5, 10], r2=0.5))
    with pytest.raises(ValueError, match=needle):
        getattr(pipelines, name)(df if drop is None else df.drop(columns=drop), **kwargs)


def test_every_listed_peer_is_a_pipeline_and_the_paper_is_run_by_every_comparison():
    from benchsel_lib.method.pipeline import parse_pipeline
    from benchsel_lib.studies.pipelines import PEERS, peer_pairs

    pairs = peer_pairs(PEERS)
    assert "mi" in PEERS and "mi" not in pairs and len(pairs) == len(PEERS) - 1
    assert all(parse_pipeline(p) is not None for p in pairs)
    with pytest.raises(ValueError, match="unknown selector 'nope'"):
        peer_pairs(["nope+ridge"])
    with pytest.raises(ValueError, match="'auto' is not"):
        peer_pairs(["auto"])


def test_held_aside_sizes_are_capped_to_leave_four_benchmarks_hidden():
    from benchsel_lib.studies.pipelines import aside_ks

    assert aside_ks(24) == (5, 10)
    assert aside_ks(14) == (5, 10)
    assert aside_ks(11) == (5, 7)
    assert aside_ks(8) == (4,)  # both sizes capped to the same one
    assert aside_ks(6, ks=(1, 5)) == (1, 2)
    with pytest.raises(ValueError, match="4 benchmarks leave fewer than 4"):
        aside_ks(4)


def test_held_aside_sources_are_not_the_papers_matrices_and_fit_the_comparison(shared_data_dir):
    from benchsel_lib.data import DATASETS, load_source
    from benchsel_lib.studies.pipelines import HELD_ASIDE

    assert not set(HELD_ASIDE) & set(DATASETS)
    for name in HELD_ASIDE:
        m, n = load_source(name, data_dir=shared_data_dir).shape
        assert m >= 50 and n >= 11, name


def test_compare_aside_caps_the_sizes_and_scores_every_peer_there(shared_data_dir):
    from benchsel_lib.studies.pipelines import aside_tables, compare_aside

    run = compare_aside("wildbench", peers=["mi+knn", "mi"], ks=(2, 10),
                        protocol=CVProtocol(n_folds=2, levels=(0.8,)), data_dir=shared_data_dir)
    assert (run.label, run.shape, run.ks) == ("WildBench", (63, 11), (2, 7))
    df = run.results
    assert set(df["pipeline"]) == {"auto", "mi", "mi+knn"}
    assert set(df.loc[df["pipeline"] == "mi+knn", "k"]) == {2, 7}
    peers, gains, cov = aside_tables([run], ["mi+knn", "mi"], levels=(0.8,))
    assert list(peers["k"]) == [2, 2, 7, 7] and set(peers["matrix"]) == {"WildBench"}
    assert (int(gains["k0"].iloc[0]), int(gains["k1"].iloc[0])) == (2, 7)
    assert list(cov["nominal"]) == [0.8]
    empty = aside_tables([], ["mi"])
    assert all(len(t) == 0 for t in empty)


def _row(selector, predictor, r2, k=5):
    return dict(selector=selector, predictor=predictor, r2=r2, k=k)


def test_the_monotone_rule_keeps_the_previous_pipeline_only_when_the_best_falls_below_its_score():
    from benchsel_lib.method.choice import choice_rule

    previous = _row("mi", "ridge", 0.55, k=4)
    rows = [_row("mi", "ridge", 0.48), _row("lasso", "knn", 0.50), _row("random", "gaussian", 0.30)]
    kept = choice_rule("monotone").choose(rows, previous=previous)
    assert (kept["selector"], kept["predictor"], kept["r2"]) == ("mi", "ridge", 0.48)  # the best 0.50 < 0.55
    assert choice_rule("best").choose(rows, previous=previous)["selector"] == "lasso"
    rows[1]["r2"] = 0.56  # now the best beats the previous choice's score: switch
    assert choice_rule("monotone").choose(rows, previous=previous)["selector"] == "lasso"
    rows[1]["r2"] = 0.55  # a tie with the previous score also switches
    assert choice_rule("monotone").choose(rows, previous=previous)["selector"] == "lasso"
    # the previous pipeline was not scored at this k: the best
    assert choice_rule("monotone").choose(rows[1:], previous=dict(previous, r2=0.9))["selector"] == "lasso"
    assert choice_rule("monotone").choose(rows, previous=None)["selector"] == "lasso"
    # ties go to the smaller order key
    tie = [_row("b", "x", 0.5), _row("a", "x", 0.5)]
    assert choice_rule("best").choose(tie, order=lambda r: r["selector"])["selector"] == "a"
    with pytest.raises(ValueError, match="choice rule"):
        choice_rule("one-se")


def test_the_monotone_path_never_switches_to_a_score_below_the_previous_choice():
    X = low_rank_scores(4, m=40, n=8, noise=1.0, missing=0.2, standardize=True)
    kw = dict(selectors=("mi", "random"), predictors=("gaussian", "ridge"), levels=())
    best = pipeline_path(X, 5, settings=SearchSettings(choice="best", **kw))
    mono = pipeline_path(X, 5, settings=SearchSettings(**kw))
    assert [r.name for r in best] != [r.name for r in mono]  # the rule acts on this case
    for prev, rec in zip(mono, mono[1:]):
        scores = rec.scores[rec.scores["k"] == rec.k]
        if scores["r2"].max() < prev.inner_r2:  # kept: the same pipeline, its selection one benchmark longer
            assert rec.name == prev.name and rec.selection[:-1] == prev.selection
        else:
            assert rec.inner_r2 == pytest.approx(scores["r2"].max()) and rec.inner_r2 >= prev.inner_r2
    # a size asked for alone gets the choice it has on the whole path
    for k in (4, 5):
        alone = pipeline_path(X, 5, ks=[k], settings=SearchSettings(**kw))
        assert [(r.k, r.name, r.selection, r.inner_r2) for r in alone] == [
            (mono[k - 1].k, mono[k - 1].name, mono[k - 1].selection, mono[k - 1].inner_r2)]
    with pytest.raises(ValueError, match="choice rule"):
        pipeline_path(X, 3, settings=SearchSettings(choice="smallest", **kw))


def test_a_selector_left_out_leaves_the_other_candidates_searched_by_inner_cv():
    from benchsel_lib.method.selectors import Selector

    X = low_rank_scores(4, m=40, n=8, noise=1.0, missing=0.2, standardize=True)
    strict = Selector("entropy", min_observed=39)  # no benchmark passes its filter: it cannot select
    kw = dict(predictors=("gaussian", "ridge"), levels=())
    recs = pipeline_path(X, 5, settings=SearchSettings(selectors=("mi", "random", strict), **kw))
    alone = pipeline_path(X, 5, settings=SearchSettings(selectors=("mi", "random"), **kw))
    for rec, ref in zip(recs, alone):
        assert "entropy left out" in rec.note
        assert np.isfinite(rec.inner_r2) and set(rec.scores["selector"]) == {"mi", "random"}
        assert (rec.name, rec.selection, rec.inner_r2) == (ref.name, ref.selection, ref.inner_r2)


def test_nested_selector_is_the_best_mean_over_the_sizes_of_each_selectors_best_predictor():
    from benchsel_lib.method.choice import Nested

    rows = [_row("mi", "ridge", 0.60, k=1), _row("mi", "knn", 0.40, k=1), _row("mi", "ridge", 0.50, k=2),
            _row("lasso", "knn", 0.70, k=1), _row("lasso", "ridge", 0.30, k=2),
            _row("random", "ridge", 0.90, k=3), _row("random", "ridge", np.nan, k=1)]
    # mi: mean(0.60, 0.50) = 0.55 beats lasso: mean(0.70, 0.30) = 0.50; random has no finite score at sizes 1, 2
    assert Nested.selector(rows, [1, 2]) == "mi"
    assert Nested.selector(rows, [1]) == "lasso"  # the best predictor at each size counts, not the others
    assert Nested.selector(rows, [1, 2, 3]) == "random"  # each selector over the sizes it was scored at
    tie = [_row("b", "x", 0.5, k=1), _row("a", "x", 0.5, k=1)]
    assert Nested.selector(tie, [1], order={"a": 1, "b": 0}.get) == "b"
    with pytest.raises(ValueError, match="no scored candidate"):
        Nested.selector(rows, [4])


def test_the_nested_rule_keeps_one_selector_so_each_selection_is_a_prefix_of_the_largest():
    from benchsel_lib.method.choice import Nested

    X = low_rank_scores(4, m=40, n=8, noise=1.0, missing=0.2, standardize=True)
    kw = dict(selectors=("mi", "random", "lasso"), predictors=("gaussian", "ridge"), levels=())
    best = pipeline_path(X, 5, settings=SearchSettings(choice="best", **kw))
    nested = pipeline_path(X, 5, settings=SearchSettings(choice="nested", **kw))
    assert len({r.selector for r in best}) > 1  # the per-size choice switches selector on this case
    assert len({r.selector for r in nested}) == 1
    scores = nested[-1].scores
    assert nested[0].selector == Nested.selector(scores.to_dict("records"), range(1, 6))
    for rec in nested:
        assert rec.selection == nested[-1].selection[:rec.k]
        at = scores[(scores["k"] == rec.k) & (scores["selector"] == rec.selector)]
        assert rec.inner_r2 == pytest.approx(at["r2"].max())  # the selector's best predictor at that size


def test_the_pipelines_choice_rule_is_a_declared_validated_parameter():
    from benchsel_lib.method.pipeline import clone
    from benchsel_lib.method.choice import Nested

    X = low_rank_scores(4, m=40, n=8, noise=1.0, missing=0.2, standardize=True)
    p = Pipeline.auto(k=4, choice="nested", selectors=("mi", "random", "lasso"), predictors=("gaussian", "ridge"))
    assert p.get_params()["choice"] == "nested" and clone(p).choice == "nested"
    assert Pipeline.auto().choice == "monotone"
    fitted = p.fit(as_matrix(X))
    scores = fitted.choice_.scores
    assert fitted.choice_.selector == Nested.selector(scores.to_dict("records"), range(1, 5))
    assert set(scores["k"]) == {1, 2, 3, 4}  # every size up to k is scored
    with pytest.raises(ValueError, match="unknown choice rule 'first'"):
        Pipeline.auto(choice="first").fit(as_matrix(X))
