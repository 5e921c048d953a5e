"""Tests of the ``benchsel`` command (benchsel_lib.cli)."""
from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.cli import DEFAULT_MIN_OBSERVED, main

BENCH = [f"b{j}" for j in range(6)]


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory) -> Path:
    """A 36 x 6 low-rank score matrix with ~12% missing and one thinly observed column."""
    rng = np.random.default_rng(0)
    M = 36
    X = rng.normal(size=(M, 2)) @ rng.normal(size=(2, 6)) + 0.3 * rng.normal(size=(M, 6))
    X = 0.5 + 0.1 * X
    X[rng.random(X.shape) < 0.12] = np.nan
    X[:, 5] = np.nan
    X[:3, 5] = [0.4, 0.5, 0.6]  # b5: observed for 3 models only
    df = pd.DataFrame(X, index=[f"model-{i}" for i in range(M)], columns=BENCH)
    df.index.name = "model"
    path = tmp_path_factory.mktemp("cli") / "scores.csv"
    df.to_csv(path)
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """Call ``main``; the pairwise estimator keeps tests fast (EM is tested in the library's own tests)."""
    argv = [str(a) for a in argv]
    if argv and argv[0] in {"select", "predict", "cv"} and "--estimator" not in argv and "--help" not in argv:
        argv += ["--estimator", "pairwise"]
    if argv and argv[0] in {"select", "predict"} and "--pipeline" not in argv and "--help" not in argv:
        argv += ["--pipeline", "paper"]  # the paper's path; the recommended pipeline has its own tests
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("benchsel: error: ")
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]


# ------------------------------------------------------------------ datasets
def test_datasets_lists_every_builtin_matrix_with_shape(capsys, shared_data_dir):
    code, out, _ = run(capsys, "datasets", "--format", "json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["datasets"]}
    assert set(rows) == {"mteb", "merged", "mmlu", "benchpress"}
    assert (rows["mteb"]["models"], rows["mteb"]["benchmarks"]) == (263, 56)
    assert 0.77 < rows["mteb"]["observed_fraction"] < 0.78
    code, out, _ = run(capsys, "datasets")
    assert code == 0 and "merged" in out and "118" in out


# -------------------------------------------------------------------- select
def test_select_on_a_builtin_matrix_prints_the_ordered_selection(capsys, shared_data_dir):
    code, out, _ = run(capsys, "select", "--data", "mmlu", "-k", "3", "--objective", "mi", "--format", "csv")
    df = pd.read_csv(io.StringIO(out))
    assert list(df["step"]) == [1, 2, 3]
    assert df["residual_fraction"].is_monotonic_decreasing
    assert df["mi"].notna().all()


def test_select_objective_trace_is_the_librarys_residual_trace_greedy(capsys, small_csv):
    from benchsel_lib import Pipeline, load_csv
    from benchsel_lib.method.objectives import residual_trace_greedy

    code, out, _ = run(capsys, "select", "--data", small_csv, "-k", "4", "--objective", "trace", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["objective"] == "trace"
    got = [row["benchmark"] for row in doc["selection"]]
    matrix = load_csv(small_csv)
    pipe = Pipeline.paper(4, objective="trace", estimator="pairwise", min_observed=DEFAULT_MIN_OBSERVED).fit(matrix)
    assert got == list(pipe.selection_.names)
    # the same greedy run directly on the fitted correlation, b5 (3 models) left out
    cov = pipe.correlation_
    candidates = np.array([b != "b5" for b in matrix.benchmarks])
    assert got == [matrix.benchmarks[j] for j in residual_trace_greedy(cov, 4, candidates=candidates)]
    assert "b5" not in got


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_select_on_a_user_csv_in_every_format(capsys, small_csv, fmt):
    code, out, _ = run(capsys, "select", "--data", small_csv, "-k", "3", "--format", fmt)
    assert code == 0
    if fmt == "csv":
        df = pd.read_csv(io.StringIO(out))
        assert len(df) == 3 and set(df["benchmark"]) <= set(BENCH)
        assert {"gain", "residual_fraction", "logdet", "mi"} <= set(df.columns)
    elif fmt == "json":
        doc = json.loads(out)
        assert len(doc["selection"]) == 3 and doc["objective"] == "entropy"
    else:
        assert "objective: entropy" in out and "b" in out


def test_select_excludes_thin_candidates_with_a_message_on_stderr(capsys, small_csv):
    code, out, err = run(capsys, "select", "--data", small_csv, "-k", "5", "--format", "csv")
    assert code == 0
    assert "b5 (3)" in err and "--min-observed" in err
    assert "b5" not in set(pd.read_csv(io.StringIO(out))["benchmark"])
    code, out, err = run(capsys, "select", "--data", small_csv, "-k", "6", "--min-observed", "0", "--format", "csv")
    assert code == 0 and err == ""
    assert "b5" in set(pd.read_csv(io.StringIO(out))["benchmark"])


def test_select_require_puts_mandatory_benchmarks_first(capsys, small_csv):
    code, out, _ = run(capsys, "select", "--data", small_csv, "-k", "3", "--require", "b4", "b2", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    names = [r["benchmark"] for r in doc["selection"]]
    assert names[:2] == ["b4", "b2"] and len(names) == 3
    assert [r["required"] for r in doc["selection"]] == [True, True, False]


def test_select_with_costs_and_budget_reports_the_winning_strategy(capsys, small_csv, tmp_path):
    costs = tmp_path / "costs.csv"
    costs.write_text("benchmark,cost\nb0,1\nb1,2\nb2,3\nb3,1\nb4,4\n")
    code, out, _ = run(capsys, "select", "--data", small_csv, "--costs", costs, "--default-cost", "2",
                       "--budget", "5", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["strategy"] in {"cost-effective", "singleton"}
    assert doc["total_cost"] <= 5
    assert sum(r["cost"] for r in doc["selection"]) == doc["total_cost"]
    code, out, _ = run(capsys, "select", "--data", small_csv, "--costs", costs, "--default-cost", "2", "--budget", "5")
    assert code == 0 and "won (modified greedy" in out


def test_select_affords_what_the_budget_covers_up_to_rounding_as_the_selection_does(capsys, small_csv, tmp_path):
    costs = tmp_path / "costs.csv"  # 0.1 + 0.2 is 0.30000000000000004 in floating point
    costs.write_text("benchmark,cost\nb0,0.1\nb1,0.2\nb2,0.3\nb3,0.3\nb4,0.3\n")
    code, out, err = run(capsys, "select", "--data", small_csv, "--costs", costs, "--default-cost", "1",
                         "-k", "2", "--budget", "0.3", "--require", "b0", "b1", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [r["benchmark"] for r in doc["selection"]] == ["b0", "b1"]
    # above the budget by more than rounding: refused in one line, naming the cost
    code, _, err = run(capsys, "select", "--data", small_csv, "--costs", costs, "--default-cost", "1",
                       "-k", "2", "--budget", "0.29", "--require", "b0", "b1")
    assert code == 2 and "the required benchmarks cost 0.3, more than --budget 0.29" in err


def test_select_budget_alone_uses_unit_costs(capsys, small_csv):
    code, out, _ = run(capsys, "select", "--data", small_csv, "--budget", "2", "--format", "csv")
    assert code == 0
    assert len(pd.read_csv(io.StringIO(out))) == 2


def test_select_axis_models_selects_reference_models(capsys, small_csv):
    code, out, _ = run(capsys, "select", "--data", small_csv, "-k", "2", "--axis", "models", "--format", "csv")
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    assert "model" in df.columns and df["model"].str.startswith("model-").all()


# ------------------------------------------------------------------- predict
def test_predict_on_a_builtin_matrix_reports_used_scores_and_intervals(capsys, shared_data_dir):
    code, out, _ = run(capsys, "predict", "--data", "mmlu", "--scores", "astronomy=0.6,virology=0.5", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["used"] == {"astronomy": 0.6, "virology": 0.5}
    preds = pd.DataFrame(doc["predictions"])
    assert len(preds) == 55 and "astronomy" not in set(preds["benchmark"])
    assert (preds["lower"] <= preds["predicted"]).all() and (preds["predicted"] <= preds["upper"]).all()
    assert preds["predicted"].between(0, 1).all()  # original units (accuracies)


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_predict_on_a_user_csv_in_every_format(capsys, small_csv, fmt):
    code, out, err = run(capsys, "predict", "--data", small_csv, "--scores", "b0=0.55, b1=0.45", "--format", fmt)
    assert code == 0
    if fmt == "csv":
        df = pd.read_csv(io.StringIO(out))
        assert list(df.columns[:5]) == ["benchmark", "predicted", "lower", "upper", "sd"]
        assert set(df["benchmark"]) == set(BENCH) - {"b0", "b1"}
        assert "b0=0.55" in err  # what was used goes to stderr, stdout stays CSV
    elif fmt == "json":
        assert json.loads(out)["used"] == {"b0": 0.55, "b1": 0.45}
    else:
        assert "conditioned on 2 given score(s): b0=0.55, b1=0.45" in out and "central 90%" in out


def test_predict_higher_level_gives_wider_intervals(capsys, small_csv):
    widths = []
    for level in ("0.5", "0.95"):
        code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores", "b0=0.5", "--level", level, "--format", "csv")
        assert code == 0
        df = pd.read_csv(io.StringIO(out))
        widths.append((df["upper"] - df["lower"]).to_numpy())
    assert (widths[1] > widths[0]).all()


def test_predict_scores_file_two_column_and_wide_formats(capsys, small_csv, tmp_path):
    long = tmp_path / "new_model.csv"
    long.write_text("benchmark,score\nb0,0.55\nb2,\n")  # an empty value is "not run"
    code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores-file", long, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["used"] == {"b0": 0.55} and doc["ignored"] == ["b2"]
    assert "b2" in {r["benchmark"] for r in doc["predictions"]}
    wide = tmp_path / "new_models.csv"
    wide.write_text("model,b0,b3\nnew-a,0.5,0.6\nnew-b,0.4,\n")
    code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores-file", wide, "--format", "csv")
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    assert set(df["model"]) == {"new-a", "new-b"}
    assert len(df[df["model"] == "new-a"]) == 4 and len(df[df["model"] == "new-b"]) == 5


def test_predict_logit_scaling_keeps_predictions_below_the_training_maximum(capsys, small_csv):
    code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores", "b0=0.6", "--scaling", "logit", "--format", "csv")
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    top = pd.read_csv(small_csv, index_col=0).max()
    assert (df["upper"].to_numpy() <= top[df["benchmark"]].to_numpy() + 1e-12).all()


# ------------------------------------------------------------------------ cv
@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_cv_on_a_small_matrix_in_every_format(capsys, small_csv, fmt):
    code, out, err = run(capsys, "cv", "--data", small_csv, "--pipelines", "entropy,random", "--folds", "3",
                         "--k-max", "3", "--seed", "1", "--format", fmt)
    assert code == 0
    assert err == ""  # no progress bar when stderr is not a terminal
    if fmt == "csv":
        df = pd.read_csv(io.StringIO(out))
        assert len(df) == 2 * 3 and {"r2_mean", "r2_sd"} <= set(df.columns)
        assert (df["n_folds"] == 3).all()
    elif fmt == "json":
        doc = json.loads(out)
        assert len(doc["summary"]) == 6 and doc["folds"] == 3
    else:
        assert "entropy" in out and "random" in out and "+-" in out


def test_cv_out_writes_the_full_per_fold_table(capsys, small_csv, tmp_path):
    target = tmp_path / "results.csv"
    code, _, err = run(capsys, "cv", "--data", small_csv, "--pipelines", "entropy", "--folds", "3", "--k-max", "2",
                       "--out", target)
    assert code == 0 and "wrote 6 rows" in err
    df = pd.read_csv(target)
    assert len(df) == 3 * 2 and {"pipeline", "holdout", "fold", "k", "r2", "selected"} <= set(df.columns)


def test_cv_is_reproducible_with_the_same_seed(capsys, small_csv):
    args = ("cv", "--data", small_csv, "--pipelines", "random", "--folds", "3", "--k-max", "2", "--format", "csv")
    assert run(capsys, *args)[1] == run(capsys, *args)[1]


def test_cv_defaults_are_capped_for_a_small_matrix(capsys, small_csv, tmp_path):
    # 6 benchmarks: the default --k-max 15 becomes 5 (k = 6 would leave nothing to predict)
    code, out, _ = run(capsys, "cv", "--data", small_csv, "--pipelines", "entropy", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["k_max"] == 5 and doc["folds"] == 10
    assert [r["k"] for r in doc["summary"]] == [1, 2, 3, 4, 5]
    # 5 models: the default 10 folds becomes leave-one-out, said on stderr
    tiny = tmp_path / "tiny.csv"
    tiny.write_text("model,a,b,c\nm1,1,2,3\nm2,2,3,5\nm3,3,5,6\nm4,4,4,8\nm5,5,7,9\n")
    code, out, err = run(capsys, "cv", "--data", tiny, "--pipelines", "entropy", "--format", "json")
    assert code == 0 and json.loads(out)["folds"] == 5
    assert "using --folds 5 (leave-one-out)" in err


def test_cv_json_records_the_floor_each_method_ran_with(capsys, small_csv):
    # without --min-observed each method keeps its own default: auto's floor, none for the paper's pipelines
    base = ("cv", "--data", small_csv, "--pipelines", "entropy,lasso+ridge,auto", "--folds", "3", "--k-max", "2",
            "--format", "json")
    doc = json.loads(run(capsys, *base)[1])
    assert doc["min_observed"] == {"entropy": 0, "lasso+ridge": 0, "auto": DEFAULT_MIN_OBSERVED}
    doc = json.loads(run(capsys, *base, "--min-observed", "0")[1])
    assert doc["min_observed"] == {"entropy": 0, "lasso+ridge": 0, "auto": 0}


def test_cv_levels_add_coverage_columns(capsys, small_csv):
    args = ("cv", "--data", small_csv, "--pipelines", "entropy", "--folds", "3", "--k-max", "2", "--levels", "0.5,0.9")
    code, out, _ = run(capsys, *args, "--format", "csv")
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    assert {"cov_50_mean", "cov_90_mean", "mean_sq_z_mean"} <= set(df.columns)
    assert "inflation_mean" not in df.columns and not any(c.endswith("_cal_mean") for c in df.columns)
    assert df["cov_50_mean"].between(0, 1).all() and (df["cov_90_mean"] >= df["cov_50_mean"]).all()
    code, out, _ = run(capsys, *args)
    assert code == 0 and "interval coverage" in out and "cov_90" in out


def test_cv_inflation_inner_reports_factor_and_calibrated_coverage(capsys, small_csv):
    from benchsel_lib.data import load_csv
    from benchsel_lib.method.pipeline import Pipeline
    from benchsel_lib.protocol.cv import cross_validate
    from benchsel_lib.protocol.summaries import summarize_cv

    args = ("cv", "--data", small_csv, "--pipelines", "entropy,random", "--folds", "3", "--k-max", "2", "--seed", "5",
            "--inflation", "inner")
    code, out, _ = run(capsys, *args, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["inflation"] == "inner" and doc["levels"] == [0.5, 0.8, 0.9, 0.95] and doc["inner_folds"] == 3
    got = pd.DataFrame(doc["summary"])
    # the same numbers as the library call
    pipelines = [Pipeline.paper(objective=o, estimator="pairwise", inflation="inner") for o in ("entropy", "random")]
    lib = summarize_cv(cross_validate(load_csv(small_csv), pipelines, k_max=2, n_folds=3, seed=5,
                                      levels=(0.5, 0.8, 0.9, 0.95), progress=False))
    for col in ("inflation_mean", "cov_90_mean", "cov_90_cal_mean", "r2_mean"):
        np.testing.assert_allclose(got[col].to_numpy(), lib[col].to_numpy(), rtol=1e-12)
    code, out, _ = run(capsys, *args)
    assert code == 0 and "inflation" in out and "cov_95_cal" in out and "_cal: after the variance inflation" in out


def test_predict_inflation_factor_widens_intervals_by_its_square_root(capsys, small_csv):
    base = ("predict", "--data", small_csv, "--scores", "b0=0.55", "--format", "csv")
    code, out, _ = run(capsys, *base)
    plain = pd.read_csv(io.StringIO(out))
    code, out, err = run(capsys, *base, "--inflation", "4")
    assert code == 0
    wide = pd.read_csv(io.StringIO(out))
    np.testing.assert_allclose(wide["predicted"], plain["predicted"], rtol=1e-9)
    np.testing.assert_allclose(wide["upper"] - wide["lower"], 2 * (plain["upper"] - plain["lower"]), rtol=1e-6)
    assert "variance inflation: 4 (given)" in err  # csv keeps stdout a clean table
    code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores", "b0=0.55", "--inflation", "4")
    assert code == 0 and "variance inflation: 4 (given); interval half-widths x 2" in out


def test_predict_inflation_inner_uses_the_library_factor_and_says_so(capsys, small_csv):
    from benchsel_lib.data import load_csv
    from benchsel_lib.method.pipeline import Pipeline

    code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores", "b0=0.55,b3=0.5", "--inflation", "inner",
                       "--seed", "4", "--inner-folds", "4", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["inflation_mode"] == "inner" and doc["inner_folds"] == 4 and doc["seed"] == 4
    lib = Pipeline.paper(objective="mi", estimator="pairwise", inflation="inner", inner_folds=4, seed=4).fit(
        load_csv(small_csv), revealed=["b0", "b3"]).predict({"b0": 0.55, "b3": 0.5})
    assert doc["inflation"] == pytest.approx(lib.attrs["inflation"], rel=1e-12)
    np.testing.assert_allclose(pd.DataFrame(doc["predictions"])["upper"], lib["upper"], rtol=1e-12)
    code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores", "b0=0.55,b3=0.5", "--inflation", "inner")
    assert code == 0 and "(auto: inner 3-fold CV on the 36 training models, seed 0)" in out


def test_predict_inflation_inner_with_a_many_model_scores_file_fits_one_factor_per_pattern(capsys, small_csv, tmp_path):
    wide = tmp_path / "new_models.csv"
    wide.write_text("model,b0,b3\nnew-a,0.5,0.6\nnew-b,0.4,\n")
    code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores-file", wide, "--inflation", "inner", "--format", "json")
    assert code == 0
    factors = json.loads(out)["inflation"]
    assert set(factors) == {"new-a", "new-b"} and all(f > 0 for f in factors.values())
    code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores-file", wide, "--inflation", "inner")
    assert code == 0 and "one per set of given scores" in out and "new-a" in out.splitlines()[3]


def test_predict_without_inflation_says_nothing_about_inflation(capsys, small_csv):
    code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores", "b0=0.55", "--format", "json")
    doc = json.loads(out)
    assert doc["inflation"] == 1.0 and doc["inflation_mode"] == "none"
    code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores", "b0=0.55")
    assert "inflation" not in out


# -------------------------------------------------------------- error paths
@pytest.fixture
def bad_costs(tmp_path) -> Path:
    p = tmp_path / "bad_costs.csv"
    p.write_text("benchmark,cost\nb0,-1\n")
    return p


@pytest.fixture
def headless_costs(tmp_path) -> Path:
    p = tmp_path / "headless_costs.csv"
    p.write_text("b0,1\nb1,2\n")
    return p


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["select", "--data", "mtebb", "-k", "3"], ["unknown dataset 'mtebb'", "did you mean 'mteb'"]),
        (["select", "--data", "{csv}", "-k", "99"], ["-k 99 is out of range", "choose 1..6"]),
        (["select", "--data", "{csv}", "-k", "0"], ["out of range"]),
        (["select", "--data", "{csv}", "-k", "three"], ["invalid integer 'three'"]),
        (["select", "--data", "{csv}", "-k", "1_0"], ["invalid integer '1_0'"]),
        (["select", "--data", "{csv}", "-k", "2", "--min-observed", "1_0"], ["invalid integer '1_0'"]),
        (["cv", "--data", "{csv}", "--min-observed", "2.5"], ["invalid integer '2.5'"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0_5"], ["value '0_5' for benchmark 'b0' is not a number"]),
        (["select", "--data", "{csv}", "-k", "2", "--require", "bX"], ["unknown benchmark 'bX'"]),
        (["select", "--data", "{csv}", "-k", "2", "--costs", "{bad_costs}", "--budget", "3"], ["positive"]),
        (["select", "--data", "{csv}", "-k", "2", "--costs", "nowhere.csv", "--budget", "3"], ["costs file not found"]),
        (["select", "--data", "{csv}", "-k", "2", "--costs", "{csv}", "--budget", "3"], ["costs file"]),
        (["select", "--data", "{csv}", "--costs", "{headless_costs}", "--default-cost", "1", "--budget", "3"],
         ["the first line 'b0,1' looks like a cost, but it is read as the header; add a header row 'benchmark,cost'"]),
        (["select", "--data", "{csv}", "-k", "2", "--objective", "variance"], ["invalid choice"]),
        (["select", "--data", "{csv}", "--objective", "trace", "--budget", "3"],
         ["--objective trace has no cost-aware form", "entropy, mi, random"]),
        (["select", "--data", "missing_file.csv", "-k", "2"], ["not found", "missing_file.csv"]),
        (["predict", "--data", "{csv}", "--scores", "bq=0.5"], ["unknown benchmark 'bq'"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0.5,b0=0.6"], ["'b0' is given more than once"]),
        (["predict", "--data", "{csv}", "--scores", "b0=high"], ["'high'", "not a number"]),
        (["predict", "--data", "{csv}", "--scores", "b0=55"], ["out of range"]),
        (["predict", "--data", "{csv}", "--scores", "b0=nan"], ["not finite"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0.5", "--level", "90"], ["--level"]),
        (["predict", "--data", "{csv}", "--scores-file", "nope.csv"], ["scores file not found"]),
        (["predict", "--data", "{csv}"], ["one of the arguments --scores --scores-file is required"]),
        (["cv", "--data", "{csv}", "--pipelines", "entropy,magic"], ["unknown pipeline 'magic'"]),
        (["cv", "--data", "{csv}", "--k-max", "50"], ["--k-max 50 is out of range"]),
        (["cv", "--data", "{csv}", "--holdouts", "10"], ["holdout 10 is out of range"]),
        (["cv", "--data", "{csv}", "--folds", "1", "--k-max", "2"], ["--folds 1 is out of range"]),
        (["frobnicate"], ["invalid choice"]),
        (["select", "--data", "{csv}", "-k", "2", "--objective", "random", "--seed", "-1"], ["--seed must be >= 0"]),
        (["select", "--data", "{folder}", "-k", "2"], ["is a folder"]),
        (["select", "--data", "{csv}", "-k", "2", "--data-dir", "{folder}/missing"], ["--data-dir", "not an existing folder"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0.5", "--inflation", "0"], ["--inflation", "finite number > 0"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0.5", "--inflation", "-2"], ["--inflation", "finite number > 0"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0.5", "--inflation", "nan"], ["--inflation", "finite number > 0"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0.5", "--inflation", "wide"], ["--inflation", "none, inner or a number"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0.5", "--inflation", "inner", "--inner-folds", "1"],
         ["--inner-folds 1 is out of range", "choose 2..36"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0.5", "--inflation", "inner", "--inner-folds", "37"],
         ["--inner-folds 37 is out of range"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0.5", "--inflation", "inner", "--seed", "-1"], ["--seed must be >= 0"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0.5", "--seed", "3"], ["are for --inflation inner"]),
        (["predict", "--data", "{csv}", "--scores", "b0=0.5", "--inflation", "2", "--inner-folds", "3"], ["are for --inflation inner"]),
        (["cv", "--data", "{csv}", "--k-max", "6"], ["--k-max 6 is out of range", "choose 1..5"]),
        (["cv", "--data", "{csv}", "--seed", "-1"], ["--seed must be >= 0"]),
        (["cv", "--data", "{csv}", "--levels", "1.5"], ["level 1.5 is out of range (--levels)"]),
        (["cv", "--data", "{csv}", "--levels", "0.5,high"], ["level 'high' (--levels) is not a number"]),
        (["cv", "--data", "{csv}", "--levels", "0.5,0.5"], ["--levels lists 0.5 twice"]),
        (["cv", "--data", "{csv}", "--levels", ","], ["--levels is empty"]),
        (["cv", "--data", "{csv}", "--inflation", "outer"], ["invalid choice: 'outer'"]),
        (["cv", "--data", "{csv}", "--inner-folds", "2"], ["--inner-folds is for --inflation inner"]),
        (["cv", "--data", "{csv}", "--inflation", "inner", "--inner-folds", "1"], ["--inner-folds 1 is out of range"]),
        (["cv", "--data", "{csv}", "--inflation", "inner", "--inner-folds", "40"],
         ["--inner-folds 40 is out of range", "smallest training set"]),
        (["cv", "--data", "{csv}", "--out", "{folder}/missing/results.csv"], ["cannot write --out"]),
        (["predict", "--data", "{csv}", "--scores-file", "{folder}"], ["scores file", "is a folder"]),
        (["select", "--data", "{csv}", "--costs", "{folder}", "--budget", "3"], ["costs file", "is a folder"]),
        (["select", "--data", "{csv}", "-k", "2", "--min-observed", "50"], ["-k 2 is larger than the 0 benchmarks left"]),
        (["select", "--data", "{csv}", "--budget", "2", "--min-observed", "50"], ["no benchmarks are left after --min-observed 50"]),
        (["select", "--data", "{csv}", "--budget", "0.5"], ["no benchmark is affordable within --budget 0.5"]),
    ],
)
def test_bad_input_exits_2_with_a_one_line_message(capsys, small_csv, bad_costs, headless_costs, tmp_path, argv,
                                                   needles):
    argv = [a.format(csv=small_csv, bad_costs=bad_costs, headless_costs=headless_costs, folder=tmp_path) for a in argv]
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, *needles)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["select", "-k", "2", "--require", "model-99"], "unknown model 'model-99'; did you mean"),
        (["select", "-k", "2", "--require", "model-1", "model-1"], "--require lists model 'model-1' twice"),
        (["select", "-k", "1", "--require", "model-1", "model-2"], "--require names 2 models but -k is 1"),
        (["select", "-k", "99"], "-k 99 is out of range: {csv} has 36 models, choose 1..36"),
        (["predict", "--scores", "nobody=0.5"], "unknown model 'nobody' (36 models in the matrix)"),
        (["predict", "--scores", "model-1=0.5,model-1=0.6"], "model 'model-1' is given more than once"),
        (["predict", "--scores", "model-1=high"], "value 'high' for model 'model-1' is not a number"),
        (["predict", "--scores", "model-1=nan"], "value nan for model 'model-1' is not finite"),
        (["predict", "--scores", "model-1=55"], "value 55 for model 'model-1' is out of range"),
        (["predict", "--scores", "=0.5"], "missing model name before '=' in '=0.5'"),
        (["predict", "--scores", "model-1"], "expected MODEL=VALUE, got 'model-1'"),
        (["predict", "--scores-file", "{rows}"], "benchmark 'new-b': unknown model 'nobody'"),
        (["predict", "--scores-file", "{pairs}"], "unknown model 'nobody'"),
    ],
)
def test_axis_models_names_models_in_every_message(capsys, small_csv, tmp_path, argv, message):
    rows = tmp_path / "rows.csv"
    rows.write_text("benchmark,model-0,nobody\nnew-b,0.5,0.5\nnew-c,0.4,\n")
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("model,score\nmodel-0,0.5\nnobody,0.4\n")
    argv = [a.format(rows=rows, pairs=pairs) for a in argv]
    code, _, err = run(capsys, argv[0], "--data", small_csv, "--axis", "models", *argv[1:])
    assert_one_line_error(code, err, message.format(csv=small_csv))
    assert "benchmark" not in err.replace("benchmark 'new-b'", "")


@pytest.mark.parametrize("sep", [";", "\t"])
def test_semicolon_and_tab_separated_data_give_the_same_selection(capsys, small_csv, tmp_path, sep):
    other = tmp_path / "scores.csv"
    pd.read_csv(small_csv, index_col=0).to_csv(other, sep=sep)
    args = ("-k", "3", "--format", "csv")
    assert run(capsys, "select", "--data", other, *args)[1] == run(capsys, "select", "--data", small_csv, *args)[1]


def test_semicolon_separated_scores_file_is_read(capsys, small_csv, tmp_path):
    scores = tmp_path / "new.csv"
    scores.write_text("benchmark;score\nb0;0.55\nb3;0.5\n")
    code, out, _ = run(capsys, "predict", "--data", small_csv, "--scores-file", scores, "--format", "json")
    assert code == 0 and json.loads(out)["used"] == {"b0": 0.55, "b3": 0.5}


def test_data_with_an_undetected_delimiter_names_the_problem(capsys, small_csv, tmp_path):
    piped = tmp_path / "piped.csv"
    pd.read_csv(small_csv, index_col=0).head(8).to_csv(piped, sep="|")
    code, _, err = run(capsys, "select", "--data", piped, "-k", "2")
    assert_one_line_error(code, err, f"{piped}: the header row 'model|b0|b1|b2|b3|b4|b5' is a single column",
                          "no comma, semicolon or tab")
    assert "score matrix is empty" not in err


@pytest.mark.parametrize("option", ["--data", "--scores-file"])
def test_pickled_file_is_one_line_naming_the_file(capsys, small_csv, tmp_path, option):
    pickled = tmp_path / "scores.csv"
    pickled.write_bytes(pickle.dumps(pd.read_csv(small_csv, index_col=0)))
    if option == "--data":
        code, _, err = run(capsys, "select", "--data", pickled, "-k", "2")
    else:
        code, _, err = run(capsys, "predict", "--data", small_csv, "--scores-file", pickled)
    assert_one_line_error(code, err, f"{pickled} is not a text CSV file (it looks like a Python pickle)")
    assert "codec" not in err


def test_npz_given_as_data_is_one_line_naming_the_file(capsys, tmp_path):
    npz = tmp_path / "matrix.npz"
    np.savez(npz, B=np.ones((3, 3)))
    code, _, err = run(capsys, "select", "--data", npz, "-k", "2")
    assert_one_line_error(code, err, f"{npz} is not a text CSV file (it looks like a zip archive")


def test_scores_file_row_without_scores_is_one_line(capsys, small_csv, tmp_path):
    wide = tmp_path / "new_models.csv"
    wide.write_text("model,b0,b3\nnew-a,,\nnew-b,0.4,\n")
    code, _, err = run(capsys, "predict", "--data", small_csv, "--scores-file", wide)
    assert_one_line_error(code, err, "model 'new-a': no scores given (every entry is empty)")


def test_costs_file_missing_a_benchmark_needs_default_cost(capsys, small_csv, tmp_path):
    costs = tmp_path / "costs.csv"
    costs.write_text("benchmark,cost\nb0,1\n")
    code, _, err = run(capsys, "select", "--data", small_csv, "--costs", costs, "--budget", "2")
    assert_one_line_error(code, err, "no cost for 5 benchmark(s)", "--default-cost")


def test_ragged_user_csv_is_a_one_line_error(capsys, tmp_path):
    bad = tmp_path / "ragged.csv"
    bad.write_text("model,a,b\nx,1,2\ny,3\n")
    code, _, err = run(capsys, "select", "--data", bad, "-k", "1")
    assert_one_line_error(code, err, "ragged")


# ---------------------------------------------------------------------- help
@pytest.mark.parametrize("command", [[], ["datasets"], ["select"], ["predict"], ["cv"]])
def test_help_shows_examples(capsys, command):
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0
    assert "examples:" in out and "benchsel" in out


def test_no_command_prints_help_and_exits_2(capsys):
    code, _, err = run(capsys)
    assert code == 2 and "usage:" in err


# --------------------------------------------------------- installed script
def test_installed_console_script_runs_and_fails_cleanly(small_csv):
    exe = shutil.which("benchsel", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    cmd = [exe] if exe else [sys.executable, "-m", "benchsel_lib.cli"]
    ok = subprocess.run([*cmd, "select", "--data", str(small_csv), "-k", "2", "--format", "json",
                         "--estimator", "pairwise"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert len(json.loads(ok.stdout)["selection"]) == 2
    bad = subprocess.run([*cmd, "predict", "--data", str(small_csv), "--scores", "nosuch=1"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("benchsel: error: unknown benchmark 'nosuch'")
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_python_dash_m_entry_point(small_csv):
    res = subprocess.run([sys.executable, "-m", "benchsel_lib.cli", "--version"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.startswith("benchsel ")


def test_command_uses_one_blas_thread_unless_the_user_sets_it():
    code = "import benchsel_lib.cli, os; print(os.environ['OPENBLAS_NUM_THREADS'], os.environ['OMP_NUM_THREADS'])"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 0 and res.stdout.split() == ["1", "1"]
    env["OPENBLAS_NUM_THREADS"] = "2"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert res.stdout.split() == ["2", "1"]


def test_cv_scheme_and_config_reach_the_protocol(capsys, small_csv):
    from benchsel_lib import Pipeline, cross_validate, summarize_cv
    from benchsel_lib.cli import _load

    code, out, _ = run(capsys, "cv", "--data", small_csv, "--pipelines", "entropy,random", "--folds", "3",
                       "--k-max", "2", "--seed", "42", "--scheme", "paper", "--config", "early", "--estimator", "em",
                       "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["scheme"] == "paper" and doc["config"] == "early"
    pipelines = [Pipeline.paper(objective=o, estimator="em", config="early") for o in ("entropy", "random")]
    ref = summarize_cv(cross_validate(_load(small_csv, data_dir=None), pipelines, k_max=2, n_folds=3, seed=42,
                                      scheme="paper"))
    got = pd.DataFrame(doc["summary"])
    assert np.allclose(got.sort_values(["pipeline", "k"])["r2_mean"], ref.sort_values(["pipeline", "k"])["r2_mean"])
    code, _, err = run(capsys, "cv", "--data", small_csv, "--scheme", "shuffled")
    assert code == 2 and "--scheme" in err


def test_the_search_fallback_is_said_once_and_other_warnings_still_show(capsys, tmp_path):
    csv = tmp_path / "five_models.csv"  # five models: too few for the recommended pipeline's 5-fold inner search
    csv.write_text("model,a,b,c,d\nm1,1,2,3,4\nm2,2,3,3,5\nm3,3,1,3,2\nm4,4,4,3,1\nm5,1,2,3,4\n")
    for argv in (("predict", "--scores", "a=2"), ("select", "-k", "2")):
        code, out, err = run(capsys, argv[0], "--data", csv, *argv[1:], "--pipeline", "auto")
        assert code == 0
        assert out.count("too few for 5-fold inner cross-validation") == 1  # the output's note line
        assert "too few" not in err
        assert "benchmark 'c' is constant" in err  # a warning that is not the note is shown as before
