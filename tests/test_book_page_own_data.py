"""benchsel_lib.book.pages.own_data (chapter 11): the worked example's tables, commands and sentences."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.book.pages import own_data as page


def _calib(gap_cal=(0.01, 0.2)):
    rows = []
    for name in ("MTEB", "MMLU"):
        for m in ("entropy", "mi"):
            for q, g in ((0.5, 0.05), (0.9, -0.05)):
                rows.append(dict(dataset=name, method=m, k=5, nominal=q, coverage=q + g, gap=g,
                                 coverage_cal=q + gap_cal[q == 0.5], gap_cal=gap_cal[q == 0.5]))
    return pd.DataFrame(rows)


def test_the_coverage_summary_is_one_row_per_matrix_with_its_largest_gaps():
    cov = page.coverage_summary(_calib(), k=5)
    assert list(cov["matrix"]) == ["MTEB", "MMLU"]
    np.testing.assert_allclose(cov["coverage"], [0.85, 0.85])
    np.testing.assert_allclose(cov["largest gap inflated"], [0.2, 0.2])
    plain = page.coverage_summary(_calib().drop(columns=["coverage_cal", "gap_cal"]), k=5)
    assert plain["coverage inflated"].isna().all()
    with pytest.raises(ValueError, match="no calibration rows at k = 10"):
        page.coverage_summary(_calib(), k=10)


def test_the_selection_table_lists_each_pick_with_its_cost_and_the_variance_left():
    sel = SimpleNamespace(names=("b", "a"), residual_fraction=np.array([0.4, 0.2, 0.1]))
    t = page.selection_table(sel, pd.Series({"a": 1.5, "b": 0.5}))
    assert list(t["benchmark"]) == ["b", "a"] and list(t["cost"]) == [0.5, 1.5]
    np.testing.assert_allclose(t["variance left"], [0.4, 0.2])


def test_the_commands_prediction_is_compared_benchmark_by_benchmark():
    py = pd.DataFrame({"mean": [0.5, 0.7], "lower": [0.4, 0.6], "upper": [0.6, 0.8]}, index=["x", "y"])
    csv = "benchmark,predicted,lower,upper,sd,n_train\ny,0.7,0.6,0.8001,0.1,9\nx,0.5,0.4,0.6,0.1,9\n"
    t = page.command_agreement(py, csv)
    assert list(t["benchmark"]) == ["x", "y"]
    np.testing.assert_allclose(t["difference"], [0.0, 1e-4], atol=1e-12)
    with pytest.raises(ValueError, match="the command predicts"):
        page.command_agreement(py.iloc[:1], csv)


def test_a_shell_line_quotes_arguments_with_spaces_or_commas():
    assert page.shell_line(["predict", "--scores", "a=1,b=2", "--data", "my file.csv"]) == \
        "benchsel predict --scores 'a=1,b=2' --data 'my file.csv'"


def test_a_command_runs_in_this_process_with_its_output_captured(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal(size=(30, 4)), index=[f"m{i}" for i in range(30)],
                 columns=list("abcd")).to_csv(tmp_path / "s.csv", index_label="model")
    monkeypatch.chdir(tmp_path)
    status, out, err = page.run_command(["select", "--data", "s.csv", "-k", "2", "--method", "gaussian",
                                         "--format", "csv"])
    assert status == 0 and out.startswith("step,benchmark") and len(out.strip().splitlines()) == 3
    status, _, err = page.run_command(["select", "--data", "missing.csv", "-k", "2"])
    assert status == 2 and "missing.csv" in err


def _prose(**changes):
    calib = _calib()
    ex = pd.DataFrame(dict(method=["mi", "mi"], split=["top", "random"], r2=[0.7, 0.8], cov_90=[0.8, 0.9]))
    dual = pd.DataFrame(dict(method=["mi", "random"], k=5, r2_mean=[0.45, 0.41]))
    sel = SimpleNamespace(names=("SciFact", "STS12"), residual_fraction=np.array([0.3, 0.12]),
                          strategy="cost-effective")
    agreement = pd.DataFrame(dict(benchmark=["x"], Python=[0.5], command=[0.5], difference=[0.0]))
    kw = dict(selection=sel, budget=8.0, cost=7.6, mandatory=["SciFact"], demo={"inside": 9, "n": 10, "mae": 0.039},
              calib=calib, coverage=page.coverage_summary(calib, k=5), k_cov=5, extrapolation=ex, dual=dual,
              k_dual=5, reference_models=["m1", "m2"], calib_datasets=["mteb", "mmlu"],
              extrapolation_dataset="mteb", extrapolation_quantile=0.8, dual_dataset="mmlu", agreement=agreement,
              same_selection=True)
    kw.update(changes)
    return page.prose(**kw)


def test_the_answer_trusts_the_intervals_only_within_the_tolerance_of_the_nominal_level():
    text = _prose()["answer"]
    assert "cover 0.85 of the held-out scores at *k* = 5 on MTEB and MMLU" in text
    assert "more than 0.03 from the nominal 90%" in text
    calib = _calib().assign(coverage=lambda d: d["nominal"] + 0.01)
    good = _prose(calib=calib, coverage=page.coverage_summary(calib, k=5))["answer"]
    assert "within 0.03 of the nominal 90%, so they can be trusted there" in good
    assert "One caution: trained on the weaker models of MTEB, the predictions of the strongest 20% reach R² 0.70 " \
           "against 0.80" in text
    assert "identical predictions to the Python calls" in text


def test_the_calibration_passage_says_whether_the_inflation_closes_the_gap():
    worse = _prose()["calibration_md"]
    assert "does not close that gap on average" in worse and "larger than without it" in worse
    better = _prose(calib=_calib(gap_cal=(0.0, 0.0)),
                    coverage=page.coverage_summary(_calib(gap_cal=(0.0, 0.0)), k=5))["calibration_md"]
    assert "closes that gap on average" in better and "not larger than without it" in better


def test_the_extrapolation_passage_counts_the_methods_that_do_worse_on_the_strongest_models():
    text = _prose()["extrapolation_md"]
    assert "R² is lower on the strongest models with MI selection (1 of 1)" in text
    assert "cover less there with MI (1 of 1)" in text
    even = _prose(extrapolation=pd.DataFrame(dict(method=["mi", "mi"], split=["top", "random"], r2=[0.8, 0.7],
                                                  cov_90=[0.9, 0.9])))["extrapolation_md"]
    assert "with no selection (0 of 1)" in even and "as reliably as a random split" in even


def test_the_command_passage_reports_a_difference_and_a_different_selection():
    agreement = pd.DataFrame(dict(benchmark=["x"], Python=[0.5], command=[0.5], difference=[2e-9]))
    text = _prose(agreement=agreement, same_selection=False)["command_md"]
    assert "selects other benchmarks" in text and "by at most 2.0e-09" in text
    assert _prose(agreement=None)["command_md"] == "The commands were not run here."


def test_the_caption_names_the_largest_gaps_and_the_lines_that_coincide():
    assert page.coincidence_sentence([]) == ""
    assert page.coincidence_sentence([("MMLU", ["a", "b"])]) == \
        "Lines that lie on top of one another (within 0.005): MMLU: a and b."
    caption = _prose()["calib_caption"]
    assert "The largest gap is +0.050 (entropy selection on MTEB, nominal 50%); after the inflation it is +0.200" \
        in caption
    assert all("$" not in v for v in _prose().passages.values())
