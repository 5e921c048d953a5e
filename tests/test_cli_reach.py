"""``benchsel cv`` and ``benchsel select`` report the reach and the all-models R^2 beside the protocol's R^2."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.cli import main
from benchsel_lib.data import load_csv
from benchsel_lib.method.pipeline import Pipeline
from benchsel_lib.protocol.cv import cross_validate
from benchsel_lib.protocol.summaries import summarize_cv


@pytest.fixture(scope="module")
def sparse_csv(tmp_path_factory) -> Path:
    """30 models x 5 benchmarks, low rank; b0 observed by models 0-3 only, ~30% of the rest missing."""
    rng = np.random.default_rng(4)
    X = 0.5 + 0.1 * (rng.normal(size=(30, 2)) @ rng.normal(size=(2, 5)) + 0.3 * rng.normal(size=(30, 5)))
    X[rng.random(X.shape) < 0.3] = np.nan
    X[:, 0] = np.nan
    X[:4, 0] = [0.45, 0.5, 0.55, 0.6]
    X[~(~np.isnan(X)).any(axis=1), 1] = 0.5
    df = pd.DataFrame(X, index=[f"model-{i}" for i in range(30)], columns=[f"b{j}" for j in range(5)])
    df.index.name = "model"
    path = tmp_path_factory.mktemp("reach") / "sparse.csv"
    df.to_csv(path)
    return path


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


CV = ("--pipelines", "entropy,random", "--folds", "3", "--k-max", "2", "--seed", "1", "--estimator", "pairwise")


def test_cv_table_prints_the_all_models_r2_and_the_reach_beside_r2(capsys, sparse_csv):
    code, out, _ = _run(capsys, "cv", "--data", sparse_csv, *CV)
    assert code == 0
    head = next(line for line in out.splitlines() if line.startswith("k "))
    for method in ("entropy", "random"):
        at = head.index(method)
        assert head.index(f"{method}: all models") > at and head.index(f"{method}: reach") > at
    assert "skips a held-out model that ran none of the selected benchmarks" in out and "%" in out


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_cv_csv_and_json_carry_the_all_models_r2_and_the_reach_of_the_library(capsys, sparse_csv, fmt):
    code, out, _ = _run(capsys, "cv", "--data", sparse_csv, *CV, "--format", fmt)
    assert code == 0
    got = pd.read_csv(io.StringIO(out)) if fmt == "csv" else pd.DataFrame(json.loads(out)["summary"])
    cols = list(got.columns)
    assert cols[cols.index("r2_sd") + 1:cols.index("r2_sd") + 5] == ["r2_all_mean", "r2_all_sd", "reach_mean",
                                                                     "reach_sd"]
    pipelines = [Pipeline.paper(objective=o, estimator="pairwise") for o in ("entropy", "random")]
    lib = summarize_cv(cross_validate(load_csv(sparse_csv), pipelines, k_max=2, n_folds=3, seed=1, progress=False))
    for col in ("r2_mean", "r2_all_mean", "reach_mean"):
        np.testing.assert_allclose(got[col].to_numpy(float), lib[col].to_numpy(float), rtol=1e-12)


def test_select_prints_how_many_models_ran_a_selected_benchmark(capsys, sparse_csv):
    args = ("select", "--data", sparse_csv, "-k", "1", "--require", "b0", "--pipeline", "paper",
            "--estimator", "pairwise", "--min-observed", "0")
    code, out, _ = _run(capsys, *args)
    assert code == 0 and "reach: 4 of 30 models (13%) ran at least one selected benchmark" in out
    code, out, err = _run(capsys, *args, "--format", "csv")
    assert code == 0 and "reach" not in out + err  # csv: the rows alone, as the other lines of the table
    code, out, _ = _run(capsys, *args, "--format", "json")
    assert code == 0 and json.loads(out)["reach"] == {"reached": 4, "of": 30, "share": 4 / 30}


def test_select_with_the_recommended_pipeline_prints_the_reach_of_its_selection(capsys, sparse_csv):
    code, out, _ = _run(capsys, "select", "--data", sparse_csv, "-k", "2", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    X = np.asarray(load_csv(sparse_csv).scores)
    cols = [int(r["benchmark"][1:]) for r in doc["selection"]]
    hand = int((~np.isnan(X[:, cols])).any(axis=1).sum())
    assert doc["reach"] == {"reached": hand, "of": 30, "share": hand / 30}
    code, out, err = _run(capsys, "select", "--data", sparse_csv, "-k", "2", "--format", "csv")
    assert code == 0 and f"reach: {hand} of 30 models" in err  # beside the pipeline's other lines
