"""The command line on a wide matrix (few models, more benchmarks than the low-rank threshold) with missing scores.

A probe per command: it finishes (the recommended pipeline's select also says
that it held the correlation in low-rank form) and gives the same output when
run again.
"""
from __future__ import annotations

import numpy as np
import pytest

from benchsel_lib.cli import main
from benchsel_lib.method.lowrank import LOW_RANK_BENCHMARKS


@pytest.fixture(scope="module")
def wide_csv(tmp_path_factory) -> str:
    """40 models x (threshold + 100) benchmarks, low rank plus noise, 30 % of the scores missing."""
    rng = np.random.default_rng(5)
    m, n = 40, LOW_RANK_BENCHMARKS + 100
    X = 60 + 10 * (rng.normal(size=(m, 4)) @ rng.normal(size=(4, n)) / 2 + 0.3 * rng.normal(size=(m, n)))
    X[rng.random((m, n)) < 0.3] = np.nan
    path = tmp_path_factory.mktemp("wide") / "wide.csv"
    names = [f"b{j}" for j in range(n)]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("model," + ",".join(names) + "\n")
        for i in range(m):
            fh.write(f"m{i}," + ",".join("" if np.isnan(v) else f"{v:.4f}" for v in X[i]) + "\n")
    return str(path)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv", [("cv", "--k-max", "3", "--folds", "3", "--format", "csv"),
                                  ("select", "-k", "3", "--format", "csv")], ids=["cv", "select"])
def test_a_wide_matrix_with_missing_scores_runs_and_repeats_its_output(capsys, wide_csv, argv):
    first = _run(capsys, argv[0], "--data", wide_csv, *argv[1:])
    assert first[0] == 0, first[2]
    assert first[1].strip()
    if argv[0] == "select":
        assert "low-rank" in first[2]
    again = _run(capsys, argv[0], "--data", wide_csv, *argv[1:])
    assert again == first
