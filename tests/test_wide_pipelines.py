"""Pipelines and cross-validation on a wide matrix forced onto the low-rank correlation, against the dense path."""
from __future__ import annotations

import numpy as np
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib.method import correlation, lowrank
from benchsel_lib.method.lowrank import LowRankCorrelation
from benchsel_lib.method.pipeline import Pipeline
from benchsel_lib.protocol.cv import cross_validate


@pytest.fixture
def wide_floored(monkeypatch):
    """EM too costly on 40 benchmarks (the floored pairwise correlation, as on every wide matrix)."""
    monkeypatch.setattr(correlation, "EM_WIDE_BENCHMARKS", 10)
    return monkeypatch


def _fit(method: str, X: np.ndarray, monkeypatch, threshold: int) -> Pipeline:
    monkeypatch.setattr(lowrank, "LOW_RANK_BENCHMARKS", threshold)
    return Pipeline.paper(k=3, objective=method).fit(as_matrix(X))


@pytest.mark.parametrize("method", ["entropy", "mi", "random"])
def test_paper_pipeline_on_a_forced_wide_matrix_selects_and_predicts_as_the_dense_one(wide_floored, method):
    X = low_rank_scores(6, m=10, n=40) * 10 + 50  # complete: the same correlation on both paths
    low = _fit(method, X, wide_floored, 20)
    dense = _fit(method, X, wide_floored, 10_000)
    assert isinstance(low.correlation_, LowRankCorrelation) and isinstance(dense.correlation_, np.ndarray)
    np.testing.assert_allclose(np.asarray(low.correlation_), dense.correlation_, atol=1e-10)
    assert low.selected == dense.selected
    scores = {b: float(X[0, int(b[1:])]) for b in low.selected}
    np.testing.assert_allclose(np.asarray(low.predict(scores), dtype=float),
                               np.asarray(dense.predict(scores), dtype=float), atol=1e-8)


def test_cross_validation_on_a_forced_wide_matrix_equals_the_dense_one(wide_floored):
    X = low_rank_scores(7, m=12, n=40) * 10 + 50
    wide_floored.setattr(lowrank, "LOW_RANK_BENCHMARKS", 20)
    methods = ("entropy", "mi", "random")
    a = cross_validate(as_matrix(X), methods, k_max=3, n_folds=3, progress=False)
    wide_floored.setattr(lowrank, "LOW_RANK_BENCHMARKS", 10_000)
    b = cross_validate(as_matrix(X), methods, k_max=3, n_folds=3, progress=False)
    assert len(a) == 27 and list(a["pipeline"]) == list(b["pipeline"]) and list(a["selected"]) == list(b["selected"])
    np.testing.assert_allclose(a["r2"].to_numpy(float), b["r2"].to_numpy(float), atol=1e-8)


def test_recommended_search_on_a_forced_wide_matrix_keeps_the_correlation_factored(wide_floored):
    X = low_rank_scores(8, m=24, n=40, missing=0.3) * 10 + 50
    wide_floored.setattr(lowrank, "LOW_RANK_BENCHMARKS", 20)
    pipe = Pipeline.auto(k=3).fit(as_matrix(X))
    assert isinstance(pipe.correlation_, LowRankCorrelation)
    assert len(pipe.selected) == 3 and len(set(pipe.selected)) == 3
