"""Chapter 7's page module: claims computed from the tests it is given, at most partly on another MMLU matrix."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book.pages import normality


def _sw(w, n=100, reject=None, tested=None, names=None):
    """A shapiro_wilk_table-like frame with its attrs."""
    k = len(w)
    names = names or [f"b{j}" for j in range(k)]
    reject = [True] * k if reject is None else reject
    tested = [True] * k if tested is None else tested
    n = [n] * k if np.isscalar(n) else n
    t = pd.DataFrame({"n": n, "W": [x if t else np.nan for x, t in zip(w, tested)],
                      "reject": pd.array([r if t else pd.NA for r, t in zip(reject, tested)], dtype="boolean"),
                      "tested": tested}, index=names)
    t.attrs = {"n_tested": int(sum(tested)), "n_excluded": int(k - sum(tested)),
               "n_rejected": int(sum(bool(r) for r, t in zip(reject, tested) if t))}
    return t


def _mmlu_like(w_marketing=0.66):
    names = ["marketing", "world_religions"] + [f"s{j}" for j in range(55)]
    w = [w_marketing, 0.70] + list(np.linspace(0.75, 0.95, 55))
    return _sw(w, names=names)


def _claims(sw, *, mmlu_shape=(5452, 57), mardia=None, sensitivity=None, correction="bh", alpha=0.05):
    mardia = pd.DataFrame(columns=normality.MARDIA_COLUMNS) if mardia is None else mardia
    return {c.claim: c for c in normality.claims(sw=sw, mardia=mardia, sensitivity=sensitivity,
                                                 mmlu_shape=mmlu_shape, datasets=list(sw), correction=correction,
                                                 alpha=alpha)}


def test_mmlu_claims_reproduce_on_the_papers_matrix_and_only_partly_on_another():
    sw = {"mmlu": _mmlu_like()}
    assert _claims(sw)["MMLU: rejections"].verdict == "reproduced"
    assert _claims(sw)["MMLU: lowest W"].verdict == "reproduced"
    other = _claims(sw, mmlu_shape=(234, 57))
    assert other["MMLU: rejections"].verdict == "partly" and "234 of the paper's 5,452" in other["MMLU: rejections"].why
    assert other["MMLU: lowest W"].verdict == "partly"


def test_a_lowest_w_far_from_the_papers_is_not_reproduced():
    row = _claims({"mmlu": _mmlu_like(w_marketing=0.77)})["MMLU: lowest W"]
    assert row.verdict == "not reproduced" and row.run == "0.77, 0.70"


def test_the_merged_count_is_taken_where_every_column_is_tested():
    sw = {"merged": _sw([0.8] * 10 + [0.99] * 4, tested=[True] * 12 + [False] * 2,
                        reject=[True] * 10 + [False] * 4)}
    sens = pd.DataFrame({"fewest observed models": [3, 8], "tested": [114, 106], "excluded": [0, 8],
                         "rejected": [60, 60], "not rejected": [54, 46]})
    row = _claims(sw, sensitivity=sens)["Merged: rejections"]
    assert (row.run, row.verdict) == ("60 of 114", "reproduced") and "without 2 thin columns" in row.why
    row = _claims(sw, sensitivity=sens.iloc[1:])["Merged: rejections"]
    assert row.run == "10 of 12" and row.verdict == "not reproduced"


def test_matrices_not_run_give_not_run_rows_and_other_settings_are_named():
    sw = {"mteb": _sw([0.46, 0.50, 0.9], names=["SprintDuplicateQuestions", "STS17", "x"])}
    rows = _claims(sw, correction="bonferroni", alpha=0.01)
    assert rows["MMLU: rejections"].verdict == "not run" and rows["Merged: rejections"].verdict == "not run"
    assert "Bonferroni at α = 0.01" in rows["MTEB: rejections"].why
    assert rows["Mardia's tests reject"].verdict == "not run"


def test_mardia_claims_compare_the_mmlu_kurtosis_with_the_papers():
    mardia = pd.DataFrame([[234, 0, 57, 1500.0, 0.0, 4049.0, 3363.0, 64.0, 0.0],
                           [133, 130, 56, 2100.0, 0.0, 3645.0, 3248.0, 28.4, 1e-100]],
                          columns=normality.MARDIA_COLUMNS, index=pd.Index(["MMLU", "MTEB"], name="matrix"))
    sw = {"mmlu": _mmlu_like(), "mteb": _sw([0.46, 0.50], names=["SprintDuplicateQuestions", "STS17"])}
    rows = _claims(sw, mardia=mardia, mmlu_shape=(234, 57))
    assert rows["Mardia's tests reject"].verdict == "reproduced" and rows["Mardia's tests reject"].run == \
        "z = 64.0, 28.4"
    assert rows["MMLU: Mardia's β₂"].verdict == "not reproduced"
    view = normality.mardia_view(mardia)
    assert list(view["complete rows"]) == ["234 of 234", "133 of 263"]
    assert set(view["p (β₂)"]) == {"<\u00a00.001"} and view.columns[0] == "Matrix"


def test_the_worst_table_keeps_the_papers_benchmarks_with_their_rank():
    t = _sw([0.5, 0.6, 0.7, 0.8], names=["a", "b", "STS17", "SprintDuplicateQuestions"])
    w = normality.worst_table({"mteb": t}, n_worst=1)
    assert list(w["Benchmark"]) == ["a", "STS17", "SprintDuplicateQuestions"] and list(w["rank"]) == [1, 3, 4]
    assert w["paper W"].isna().tolist() == [True, False, False]


def test_band_and_excluded_tables_count_columns_by_observed_models():
    t = _sw([0.8, 0.9, 0.99, 0.7], n=[5, 30, 30, 60], tested=[False, True, True, True],
            reject=[False, True, False, True])
    bands = normality.band_table(t)
    assert bands.to_dict("records") == [
        {"observed models": "fewer than 20", "columns": 1, "tested": 0, "rejected": 0},
        {"observed models": "20 to 50", "columns": 2, "tested": 2, "rejected": 1},
        {"observed models": "more than 50", "columns": 1, "tested": 1, "rejected": 1}]
    ex = normality.excluded_table({"merged": t})
    assert ex.to_dict("records") == [{"Matrix": "Merged", "Benchmark": "b0", "observed models": 5}]


def test_the_prose_of_a_real_run_is_free_of_parameter_names_and_missing_values(shared_data_dir):
    import benchsel_lib as bs
    from benchsel_lib.studies.diagnostics import shapiro_wilk_table

    matrices = {n: bs.load_matrix(n) for n in ("mmlu", "mteb", "merged")}
    sw = {n: shapiro_wilk_table(m, correction="bh", alpha=0.05, min_observed=8) for n, m in matrices.items()}
    sens = normality.threshold_sensitivity(matrices["merged"], [3, 8], correction="bh", alpha=0.05)
    mardia, notes = normality.mardia_table(matrices, alpha=0.05)
    p = normality.prose(sw=sw, mardia=mardia, mardia_notes=notes, matrices=matrices, sensitivity=sens,
                        bands=normality.band_table(sw["merged"]), datasets=list(matrices), alpha=0.05,
                        correction="bh", min_observed=8)
    text = " ".join(p.passages.values())
    assert "min_observed" not in text and "n_worst" not in text and "nan" not in text and "$" not in text
    assert "the paper's count" in p["threshold_md"] and "Merged cannot be tested" in p["mardia_md"]
    assert set(notes) == {"merged"}


@pytest.mark.parametrize("thresholds", [[3, 8], [20]])
def test_threshold_sensitivity_has_one_row_per_threshold(shared_data_dir, thresholds):
    import benchsel_lib as bs

    s = normality.threshold_sensitivity(bs.load_matrix("merged"), thresholds, correction="bh", alpha=0.05)
    assert list(s["fewest observed models"]) == thresholds and (s["tested"] + s["excluded"] == 114).all()
