"""Chapter 7's page module: the claims of Appendix H under the book's one verdict rule, and the chapter's tables."""
from __future__ import annotations

import numpy as np
import pandas as pd

from benchsel_lib.book.pages import normality


def _sw(w, *, names=None, n=100, reject=None, tested=None):
    """A shapiro_wilk_table-like frame with its attrs."""
    k = len(w)
    names = names or [f"b{j}" for j in range(k)]
    reject = [True] * k if reject is None else reject
    tested = [True] * k if tested is None else tested
    t = pd.DataFrame({"n": [n] * k, "W": [x if ok else np.nan for x, ok in zip(w, tested)],
                      "reject": pd.array([r if ok else pd.NA for r, ok in zip(reject, tested)], dtype="boolean"),
                      "tested": tested}, index=names)
    t.attrs = {"n_tested": int(sum(tested)), "n_excluded": int(k - sum(tested)), "min_observed": 8,
               "n_rejected": int(sum(bool(r) for r, ok in zip(reject, tested) if ok))}
    return t


def _mmlu(w_marketing=0.66, n_reject=57):
    names = ["marketing", "world_religions"] + [f"s{j}" for j in range(55)]
    w = [w_marketing, 0.70] + list(np.linspace(0.75, 0.95, 55))
    return _sw(w, names=names, reject=[True] * n_reject + [False] * (57 - n_reject))


def _claims(sw, *, mardia=None, every_column=None):
    mardia = pd.DataFrame(columns=["kurtosis β₂", "null N(N+2)", "rejects"]) if mardia is None else mardia
    rows = normality.claims(sw=sw, mardia=mardia, every_column=every_column, n_models={"mmlu": 234, "mteb": 263,
                            "merged": 118}, correction="bh", alpha=0.05, min_observed=8)
    return {c.claim.split(" (")[0]: c for c in rows}


def test_rejection_counts_reproduce_partly_or_not_by_the_count_rule():
    assert _claims({"mmlu": _mmlu()})["MMLU: benchmarks that reject"].verdict == "reproduced"
    assert _claims({"mmlu": _mmlu(n_reject=56)})["MMLU: benchmarks that reject"].verdict == "partly"
    assert _claims({"mmlu": _mmlu(n_reject=40)})["MMLU: benchmarks that reject"].verdict == "not reproduced"


def test_a_smaller_mmlu_matrix_is_named_in_the_why_column_not_downgraded():
    row = _claims({"mmlu": _mmlu()})["MMLU: benchmarks that reject"]
    assert row.verdict == "reproduced" and "234 of the paper's 5,452 models" in row.why


def test_lowest_w_is_graded_as_a_statistic():
    assert _claims({"mmlu": _mmlu()})["MMLU: lowest W"].verdict == "reproduced"
    assert _claims({"mmlu": _mmlu(w_marketing=0.70)})["MMLU: lowest W"].verdict == "partly"
    row = _claims({"mmlu": _mmlu(w_marketing=0.77)})["MMLU: lowest W"]
    assert row.verdict == "not reproduced" and row.run == "0.77, 0.70"


def test_merged_is_counted_where_every_column_is_tested():
    sw = {"merged": _sw([0.8] * 10 + [0.99] * 4, tested=[True] * 12 + [False] * 2, reject=[True] * 10 + [False] * 4)}
    every = pd.DataFrame({"fewest observed models": [3, 8], "tested": [114, 106], "not tested": [0, 8],
                          "rejected": [60, 60]})
    row = _claims(sw, every_column=every)["Merged: benchmarks that reject"]
    assert (row.run, row.verdict, row.section) == ("60 of 114", "reproduced", "thin-columns")
    row = _claims(sw)["Merged: benchmarks that reject"]
    assert row.run == "10 of 12" and row.verdict == "not reproduced" and "not tested" in row.why


def test_matrices_not_run_and_mardia_without_complete_rows_are_not_run():
    rows = _claims({"mteb": _sw([0.46, 0.50, 0.9], names=["SprintDuplicateQuestions", "STS17", "x"])})
    assert rows["MMLU: benchmarks that reject"].verdict == "not run"
    assert rows["Merged: benchmarks that reject"].verdict == "not run"
    assert rows["Mardia's tests reject"].verdict == "not run"
    assert all(r.run != "nan" and "nan" not in r.run for r in rows.values())


def test_mardia_claims_compare_rejections_and_the_mmlu_kurtosis():
    mardia = pd.DataFrame({"kurtosis β₂": [4049.0, 3645.0], "null N(N+2)": [3363.0, 3248.0], "rejects": [True, True]},
                          index=["mmlu", "mteb"])
    sw = {"mmlu": _mmlu(), "mteb": _sw([0.46, 0.50], names=["SprintDuplicateQuestions", "STS17"]),
          "merged": _sw([0.8, 0.9])}
    rows = _claims(sw, mardia=mardia)
    assert rows["Mardia's tests reject"].verdict == "reproduced" and "Merged" in rows["Mardia's tests reject"].why
    assert rows["MMLU: Mardia's kurtosis β₂"].verdict == "not reproduced"
    mardia.loc["mmlu", "kurtosis β₂"] = 6000.0
    assert _claims(sw, mardia=mardia)["MMLU: Mardia's kurtosis β₂"].verdict == "partly"
    mardia.loc["mteb", "rejects"] = False
    assert _claims(sw, mardia=mardia)["Mardia's tests reject"].verdict == "not reproduced"


def test_summary_and_worst_tables_list_the_papers_numbers():
    sw = {"mmlu": _mmlu(), "mteb": _sw([0.46, 0.50, 0.9], names=["SprintDuplicateQuestions", "STS17", "x"])}
    s = normality.shapiro_summary(sw)
    assert s["paper rejected"].tolist() == ["57 of 57", "56 of 56"] and s["tested"].tolist() == [57, 3]
    worst = normality.worst_table(sw["mmlu"], "mmlu", 1)
    assert worst["Benchmark"].tolist() == ["marketing", "world_religions"] and worst["paper W"].tolist() == [0.66, 0.70]


def test_threshold_sensitivity_and_mardia_on_a_small_matrix():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X[3:, 2] = np.nan  # a thin column: 3 observed models, fewer complete rows than needed
    t = normality.threshold_sensitivity(X, [3, 8], correction="bh", alpha=0.05)
    assert t["tested"].tolist() == [3, 2] and t["not tested"].tolist() == [0, 1]
    m = normality.mardia_table({"full": X[:, :2], "thin": X}, alpha=0.05)
    assert list(m.index) == ["full"] and m.at["full", "complete rows"] == "40 of 40"
