"""Correlation estimates whose N x N arrays would not fit the memory limit are refused before any work."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib import Pipeline
from benchsel_lib.cli import main as cli_main
from benchsel_lib.method import correlation as corr_mod
from benchsel_lib.method import lowrank
from benchsel_lib.method.correlation import (
    Correlation,
    check_dense_memory,
    dense_memory,
    dense_route,
    estimate_correlation,
)


def _wide(missing: float = 0.3) -> np.ndarray:
    """12 models x 40 benchmarks, 30 % missing: wide once the low-rank threshold is lowered."""
    return 50 + 10 * low_rank_scores(0, 12, 40, missing=missing)


def test_dense_memory_counts_the_n_by_n_arrays_of_each_route():
    assert dense_memory(10_000, "pairwise") == 7 * 8 * 10_000**2
    assert dense_memory(100, "em") == 16 * 8 * 100**2
    assert dense_memory(10_000, "low-rank") == 0


def test_dense_route_names_the_dense_estimates_and_skips_the_low_rank_one(monkeypatch):
    X = _wide()
    assert dense_route("pairwise", X) == "pairwise"
    assert dense_route("em", X) == "em"
    assert dense_route("auto", X) == "em"  # small: EM is not too costly here
    monkeypatch.setattr(lowrank, "LOW_RANK_BENCHMARKS", 20)
    monkeypatch.setattr(corr_mod, "EM_WIDE_BENCHMARKS", 20)
    assert dense_route("auto", X) is None  # the floored correlation, held low-rank
    assert dense_route("fast", X) is None
    assert dense_route("pairwise", X) == "pairwise"


def test_refusal_says_the_memory_needed_and_the_low_rank_alternative(monkeypatch):
    monkeypatch.setattr(lowrank, "LOW_RANK_BENCHMARKS", 20)
    monkeypatch.setattr(corr_mod, "DENSE_MEMORY_LIMIT", 50_000)
    with pytest.raises(ValueError) as info:
        check_dense_memory(12, 40, "pairwise")
    msg = str(info.value)
    assert "'pairwise'" in msg and "12 models x 40 benchmarks" in msg
    assert "about 0.0896 MB" in msg and "limit of 0.05 MB" in msg  # 7 arrays x 8 bytes x 40^2
    assert "above the limit" in msg and "estimator 'auto'" in msg and "low-rank" in msg
    check_dense_memory(12, 40, None)  # a low-rank route needs no N x N array
    check_dense_memory(12, 2, "pairwise")  # small enough


def test_refusal_on_a_matrix_that_is_not_wide_suggests_fewer_benchmarks(monkeypatch):
    monkeypatch.setattr(corr_mod, "DENSE_MEMORY_LIMIT", 1_000)
    with pytest.raises(ValueError, match="fewer benchmarks.*DENSE_MEMORY_LIMIT"):
        check_dense_memory(100, 40, "em")


def test_pipeline_fit_refuses_a_dense_estimate_above_the_limit_before_any_work(monkeypatch):
    monkeypatch.setattr(lowrank, "LOW_RANK_BENCHMARKS", 20)
    monkeypatch.setattr(corr_mod, "EM_WIDE_BENCHMARKS", 20)
    monkeypatch.setattr(corr_mod, "DENSE_MEMORY_LIMIT", 50_000)
    matrix = as_matrix(_wide())
    called = []
    monkeypatch.setattr(corr_mod, "pairwise_covariance", lambda *a, **k: called.append(1))
    for estimator in ("pairwise", "em"):
        with pytest.raises(ValueError, match=f"the '{estimator}' correlation estimate .* would need about"):
            Pipeline.paper(k=2, estimator=estimator).fit(matrix)
    assert not called  # refused before the estimate started
    with pytest.raises(ValueError, match="would need about"):
        estimate_correlation(matrix.scores, method="pairwise")
    with pytest.raises(ValueError, match="would need about"):
        Correlation("pairwise").estimate(matrix.scores, matrix.scores)


def test_default_estimator_on_the_same_wide_matrix_fits_within_the_limit(monkeypatch):
    monkeypatch.setattr(lowrank, "LOW_RANK_BENCHMARKS", 20)
    monkeypatch.setattr(corr_mod, "EM_WIDE_BENCHMARKS", 20)
    monkeypatch.setattr(corr_mod, "DENSE_MEMORY_LIMIT", 50_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the note that EM is replaced
        pipe = Pipeline.paper(k=2, objective="entropy").fit(as_matrix(_wide()))
    assert len(pipe.selected) == 2


def test_cli_refuses_the_pairwise_estimator_in_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(lowrank, "LOW_RANK_BENCHMARKS", 20)
    monkeypatch.setattr(corr_mod, "DENSE_MEMORY_LIMIT", 50_000)
    X = _wide()
    path = tmp_path / "wide.csv"
    lines = ["model," + ",".join(f"b{j}" for j in range(X.shape[1]))]
    lines += [f"m{i}," + ",".join("" if np.isnan(v) else f"{v:.4f}" for v in row) for i, row in enumerate(X)]
    path.write_text("\n".join(lines) + "\n")
    code = cli_main(["select", "--data", str(path), "-k", "2", "--pipeline", "paper", "--estimator", "pairwise"])
    err = capsys.readouterr().err
    assert code != 0
    refusal = [line for line in err.splitlines() if "would need about" in line]
    assert len(refusal) == 1 and "--estimator auto" in refusal[0]
    assert "Traceback" not in err
