"""Columns that look wrong: constant ones are never selected, mixed 0-1/0-100 scales are reported in one line."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib import (
    Pipeline,
    ScoreWarning,
    Selector,
    cross_validate,
    estimate_correlation,
    load_matrix,
    select,
)
from benchsel_lib.cli import main as cli_main
from benchsel_lib.data import column_problems

CONSTANT, MIXED = 3, 5


def _bad_scores(seed: int = 0) -> np.ndarray:
    """Eight correlated 0-100 benchmarks; column 3 constant, five scores of column 5 given as fractions."""
    X = 50 + 10 * low_rank_scores(seed, 40, 8)
    X[:, CONSTANT] = 42.0
    X[:5, MIXED] /= 100
    return X


def _standardized_correlation(X: np.ndarray) -> np.ndarray:
    return estimate_correlation(X, method="pairwise").corr


# --------------------------------------------------------------------------- detection
def test_constant_and_mixed_scale_columns_are_named_in_one_line_each():
    problems = column_problems(_bad_scores(), [f"b{j}" for j in range(8)])
    assert [(p.benchmark, p.kind) for p in problems] == [("b3", "constant"), ("b5", "mixed-scale")]
    assert problems[0].message == "benchmark 'b3' is constant (all 40 observed scores are 42)"
    assert problems[1].message.startswith("benchmark 'b5' mixes scales: 5 of 40 scores lie in (0, 1]")
    assert all("\n" not in p.message for p in problems)


def test_two_fractions_among_percentages_are_reported():
    X = np.column_stack([[0.55, 0.7, 35.0, 50.0, 60.0, 70.0], np.arange(6.0)])
    (problem,) = column_problems(X, ["a", "b"])
    assert problem.kind == "mixed-scale"
    assert problem.message == ("benchmark 'a' mixes scales: 2 of 6 scores lie in (0, 1] (up to 0.7) and the others "
                               "from 35 to 70; fractions among percentages?")


def test_a_single_percentage_among_fractions_is_reported():
    X = np.column_stack([[0.31, 0.52, 0.6, 85.3, 0.77, 0.9], np.arange(6.0)])
    (problem,) = column_problems(X, ["a", "b"])
    assert problem.kind == "mixed-scale"
    assert problem.message == ("benchmark 'a' mixes scales: 1 of 6 scores lies above 1 (85.3) and the others in "
                               "(0, 1] (from 0.31 to 0.9); percentages among fractions?")
    X[0, 0] = 45.0
    (problem,) = column_problems(X, ["a", "b"])
    assert "2 of 6 scores lie above 1 (45 to 85.3)" in problem.message


def test_a_single_observation_counts_as_constant_and_an_empty_column_is_left_to_require_observed():
    X = np.full((4, 2), np.nan)
    X[0, 0] = 7.0
    problems = column_problems(X, ["one", "none"])
    assert [(p.benchmark, p.kind) for p in problems] == [("one", "constant")]
    assert "the only observed score is 7" in problems[0].message


@pytest.mark.parametrize("column", [
    [0.5, 3.5, 4.4, 20.0, 94.0],       # a low but real percentage: the next score is only 7x higher
    [0.1, 0.4, 0.7, 0.9, 1.0],         # a 0-1 benchmark
    [12.0, 35.0, 60.0, 80.0, 99.0],    # a 0-100 benchmark
    [0.0, 0.0, 55.0, 60.0, 70.0],      # zeros are not fractions
    [0.05, 0.1, 30.0, 50.0, 70.0],     # two real low scores: times 100 they are still below the rest
    [0.6, 35.0, 50.0, 60.0, 70.0],     # a single fraction cannot be told from a real low score
    [0.2, 0.5, 0.9, 1.5, 3.0],         # a ratio that may exceed 1: the scores above 1 are close to the rest
    [0.5, 0.7, 0.9, 25.0, 30.0],       # above 1 but, divided by 100, below every fraction: not a percentage of them
])
def test_ordinary_columns_are_not_reported(column):
    X = np.column_stack([column, np.arange(5.0)])
    assert column_problems(X, ["a", "b"]) == []


@pytest.mark.parametrize("name", ["mteb", "merged", "benchpress", "mmlu"])
def test_the_papers_matrices_have_no_column_problems(name):
    assert load_matrix(name).column_problems() == []


# --------------------------------------------------------------------------- selection
def test_select_never_picks_an_excluded_benchmark_and_keeps_it_in_the_residual():
    R = _standardized_correlation(_bad_scores())
    plain = select(R, 4, objective="entropy", tie_break="index")
    assert CONSTANT in plain.order[:2]  # unit variance and no correlation: entropy wants it early
    kept = select(R, 4, objective="entropy", tie_break="index", exclude=[CONSTANT])
    assert CONSTANT not in kept.order and kept.excluded == [CONSTANT]
    # the residual still counts the excluded column: brute force tr(Schur complement) / N
    A = list(kept.order)
    rest = [j for j in range(8) if j not in A]
    schur = R[np.ix_(rest, rest)] - R[np.ix_(rest, A)] @ np.linalg.solve(R[np.ix_(A, A)], R[np.ix_(A, rest)])
    assert kept.residual_fraction[-1] == pytest.approx(np.trace(schur) / 8, rel=1e-10)


@pytest.mark.parametrize("objective", ["entropy", "mi", "random", "lasso"])
def test_every_objective_honours_exclude(objective):
    R = _standardized_correlation(_bad_scores())
    order = select(R, 6, objective=objective, seed=0, exclude=[CONSTANT, 0]).order
    assert sorted(order) == [1, 2, 4, 5, 6, 7]


def test_exclude_errors_name_the_problem():
    R = _standardized_correlation(_bad_scores())
    names = [f"b{j}" for j in range(8)]
    with pytest.raises(ValueError, match="benchmark 'b3' is both mandatory"):
        select(R, 2, names=names, initial=["b3"], exclude=["b3"])
    with pytest.raises(ValueError, match="only 6 benchmarks are selectable after exclude= removed 2"):
        select(R, 7, exclude=[0, 1])
    with pytest.raises(ValueError, match="unknown excluded benchmark 'nope'"):
        select(R, 2, names=names, exclude=["nope"])
    with pytest.raises(ValueError, match="both mandatory"):
        Selector("entropy", initial=("b3",), exclude=("b3",))
    with pytest.raises(ValueError, match="exclude lists a benchmark twice"):
        Selector("entropy", exclude=("b3", "b3"))


# --------------------------------------------------------------------------- the pipeline
@pytest.mark.parametrize("make", [lambda: Pipeline.paper(5, objective="entropy"), lambda: Pipeline.paper(5, objective="mi"),
                                  lambda: Pipeline.auto(3)], ids=["entropy", "mi", "auto"])
def test_a_whole_matrix_fit_never_selects_a_constant_column_and_says_why(make):
    m = as_matrix(_bad_scores())
    with pytest.warns(ScoreWarning) as record:
        p = make().fit(m)
    constant = m.benchmarks[CONSTANT]
    assert constant not in p.selected
    messages = [str(w.message) for w in record if issubclass(w.category, ScoreWarning)]
    assert messages[0] == f"benchmark {constant!r} is constant (all 40 observed scores are 42): " \
                          "it carries no information and is never selected; its prediction is that value, " \
                          "without an interval"
    assert "mixes scales" in messages[1]
    assert p.notes_[:2] == messages[:2]
    # the constant column is still predicted: its value, and no interval (its spread is a floor, not a fit)
    cols = [m.benchmarks.index(b) for b in p.selected]
    row = next(i for i in range(m.shape[0]) if np.isfinite(m.scores[i, cols]).all())
    out = p.predict({m.benchmarks[j]: float(m.scores[row, j]) for j in cols})  # a search predicts from its selection
    assert out.loc[constant, "mean"] == pytest.approx(42.0)
    assert out.loc[constant, ["lower", "upper"]].isna().all()
    others = out.drop(index=constant)
    assert others[["lower", "upper"]].notna().all().all()


def test_a_mandatory_constant_column_is_kept_with_a_note():
    m = as_matrix(_bad_scores())
    constant = m.benchmarks[CONSTANT]
    with pytest.warns(ScoreWarning) as record:
        p = Pipeline.paper(3, objective="entropy", initial=[constant]).fit(m)
    assert p.selected[0] == constant
    assert str(record[0].message).endswith("it carries no information, but is selected because it is mandatory")


def test_a_clean_matrix_fits_without_warnings_or_notes():
    m = as_matrix(50 + 10 * low_rank_scores(0, 40, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = Pipeline.paper(3).fit(m)
    assert p.notes_ == []


def test_too_few_informative_columns_is_one_clear_error():
    m = as_matrix(_bad_scores())
    with pytest.warns(ScoreWarning), pytest.raises(ValueError, match=r"1 constant benchmark\(s\) are never selected"):
        Pipeline.paper(8).fit(m)


def test_the_command_line_prints_each_problem_as_one_warning_line(capsys, tmp_path):
    X = _bad_scores()
    path = tmp_path / "bad.csv"
    pd.DataFrame(X, index=[f"m{i}" for i in range(40)], columns=[f"b{j}" for j in range(8)]) \
        .rename_axis("model").to_csv(path)
    code = cli_main(["select", "--data", str(path), "-k", "3", "--pipeline", "paper", "--format", "csv"])
    out, err = capsys.readouterr()
    assert code == 0
    warnings_shown = [line for line in err.splitlines() if line.startswith("benchsel: warning:")]
    assert warnings_shown == [
        "benchsel: warning: benchmark 'b3' is constant (all 40 observed scores are 42): "
        "it carries no information and is never selected; its prediction is that value, without an interval",
        warnings_shown[1],
    ]
    assert warnings_shown[1].startswith("benchsel: warning: benchmark 'b5' mixes scales")
    assert "ScoreWarning" not in err and "warnings.warn" not in err
    assert ",b3," not in out


def test_cross_validation_reports_the_problems_and_keeps_the_papers_protocol(capsys, tmp_path):
    path = tmp_path / "bad.csv"
    pd.DataFrame(_bad_scores(), index=[f"m{i}" for i in range(40)], columns=[f"b{j}" for j in range(8)]) \
        .rename_axis("model").to_csv(path)
    code = cli_main(["cv", "--data", str(path), "--pipelines", "entropy", "--holdouts", "0.5", "--k-max", "2"])
    _, err = capsys.readouterr()
    assert code == 0
    assert err.splitlines()[:2] == [
        "benchsel: warning: benchmark 'b3' is constant (all 40 observed scores are 42): "
        "cross-validation keeps it among the candidates, as the paper's protocol does",
        err.splitlines()[1],
    ]
    assert err.splitlines()[1].startswith("benchsel: warning: benchmark 'b5' mixes scales")


def test_an_excluded_benchmark_that_is_not_in_the_matrix_is_refused_not_ignored():
    m = as_matrix(_bad_scores())
    selector = Selector("entropy", exclude=("b33",))
    with pytest.raises(ValueError, match="unknown excluded benchmark 'b33'; did you mean 'b3'"):
        Pipeline(k=2, selector=selector).fit(m)
    with pytest.raises(ValueError, match="unknown excluded benchmark 'b33'"):
        cross_validate(m, [Pipeline(selector=selector, name="x")], k_max=2, n_folds=3, progress=False)
    # a name the whole matrix has is fine, also in a split that dropped it
    assert Selector("entropy", exclude=("b1",)).resolve_exclude(["b0", "b2"]) == []


def test_a_top_score_written_as_a_percentage_among_fractions_is_reported():
    X = np.column_stack([[0.475, 0.52, 0.61, 0.66, 0.741, 75.2], np.arange(6.0)])
    (problem,) = column_problems(X, ["mmlu", "b"])
    assert problem.kind == "mixed-scale"
    assert problem.message == ("benchmark 'mmlu' mixes scales: 1 of 6 scores lies above 1 (75.2) and the others in "
                               "(0, 1] (from 0.475 to 0.741); percentages among fractions?")
