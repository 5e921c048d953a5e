"""benchsel_lib.book.pages.own_data (chapter 11): the worked example's tables and commands."""
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
                rows.append(dict(dataset=name, pipeline=m, k=5, nominal=q, coverage=q + g, gap=g,
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
    status, out, err = page.run_command(["select", "--data", "s.csv", "-k", "2", "--pipeline", "paper",
                                         "--format", "csv"])
    assert status == 0 and out.startswith("step,benchmark") and len(out.strip().splitlines()) == 3
    status, _, err = page.run_command(["select", "--data", "missing.csv", "-k", "2"])
    assert status == 2 and "missing.csv" in err
