"""A search takes the grid of its candidate space that fits the training matrix's missing share (the recommended one: its sparse grid above half)."""
from __future__ import annotations

import numpy as np
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib.method.candidates import CandidateSpace, Grid
from benchsel_lib.method.pipeline import Pipeline, clone
from benchsel_lib.method.candidates import (
    DEFAULT_PREDICTORS,
    DEFAULT_SELECTORS,
    SPARSE_MISSING,
    SPARSE_PREDICTORS,
    SPARSE_SELECTORS,
)
from benchsel_lib.method.pipeline import PipelineSearch
from benchsel_lib.protocol.cv import cross_validate


def _with_missing_share(share: float, seed: int = 0, m: int = 60, n: int = 10) -> np.ndarray:
    """Low-rank scores with exactly ``round(share * m * n)`` entries missing, every row and column keeping two."""
    X = low_rank_scores(seed, m=m, n=n, noise=0.3)
    rng = np.random.default_rng(seed + 1)
    keep = np.zeros((m, n), dtype=bool)
    for i in range(m):  # two observed entries per row, spread over the columns
        keep[i, [i % n, (i + 1 + i // n) % n]] = True
    free = np.flatnonzero(~keep.ravel())
    n_missing = int(round(share * m * n))
    assert n_missing <= free.size
    X.ravel()[rng.choice(free, size=n_missing, replace=False)] = np.nan
    return X


def _fit(X: np.ndarray, pipe: Pipeline) -> Pipeline:
    return pipe.fit(as_matrix(X))


def test_sparse_matrix_searches_the_sparse_candidates():
    X = _with_missing_share(0.6)
    assert np.isnan(X).mean() > SPARSE_MISSING
    p = _fit(X, Pipeline.auto(k=3))
    assert p.sparse_
    scored = p.choice_.scores
    assert set(scored["selector"]) == set(SPARSE_SELECTORS)
    assert set(scored["predictor"]) == set(SPARSE_PREDICTORS) | {"stack"}


def test_denser_matrix_searches_the_first_candidates():
    X = _with_missing_share(0.3)
    p = _fit(X, Pipeline.auto(k=3))
    assert not p.sparse_
    scored = p.choice_.scores
    assert set(scored["selector"]) == set(DEFAULT_SELECTORS)
    assert set(scored["predictor"]) == set(DEFAULT_PREDICTORS) | {"stack"}


def test_exactly_half_missing_is_not_sparse():
    X = _with_missing_share(SPARSE_MISSING)
    assert np.isnan(X).mean() == SPARSE_MISSING
    assert not _fit(X, Pipeline.auto(k=2)).sparse_


@pytest.mark.parametrize("given", [dict(selectors=("mi", "lasso")), dict(predictors=("gaussian", "ridge"))])
def test_given_candidates_are_searched_on_every_matrix(given):
    p = Pipeline.auto(k=2, **given)
    assert len(p.component("candidates")) == 1  # one grid, whatever the missing share
    fitted = _fit(_with_missing_share(0.6), p)
    assert not fitted.sparse_
    scored = fitted.choice_.scores
    assert set(scored["selector"]) == set(given.get("selectors", DEFAULT_SELECTORS))


def test_the_sparse_grid_shares_auto_options():
    p = Pipeline.auto(k=2, min_observed=7, initial=["b3"])
    dense, sparse = p.component("candidates")
    assert dense.max_missing == SPARSE_MISSING and sparse.max_missing == 1.0
    assert [s.label for s in sparse.selectors] == list(SPARSE_SELECTORS) and sparse.predictors == SPARSE_PREDICTORS
    for s in sparse.selectors:
        assert s.initial == ("b3",)
        assert s.min_observed == (0.3 if s.label == "entropy-obs" else 7)  # entropy-obs keeps its own filter


def test_the_candidate_space_survives_clone_and_get_params():
    p = Pipeline.auto(k=2, min_observed=7)
    q = clone(p)
    assert q.component("candidates") == p.component("candidates")
    assert q.get_params(deep=False)["candidates"] == p.candidates
    assert _fit(_with_missing_share(0.6), q).sparse_


def test_cross_validation_decides_on_each_fold_training_rows():
    X = _with_missing_share(0.6)
    df = cross_validate(as_matrix(X), [Pipeline.auto()], holdouts=(0.1,), k_max=3, ks=(3,), n_folds=5, seed=0,
                        scheme="paper", progress=False)
    selectors = {c.split("+")[0] for c in df["choice"]}
    assert selectors <= set(SPARSE_SELECTORS)


@pytest.mark.parametrize("make, match", [
    (lambda: Grid(("no-such-selector",), ("knn",)), "no-such-selector"),
    (lambda: Grid(("imputed-trace",), ("no-such-predictor",)), "no-such-predictor"),
    (lambda: Grid((), ("knn",)), "one or more selectors"),
    (lambda: Grid(("mi", "mi"), ("knn",)), "distinct labels"),
    (lambda: Grid(("mi",), ("knn",), max_missing=1.5), "max_missing"),
    (lambda: CandidateSpace([Grid(("mi",), ("knn",), max_missing=0.5)]), "max_missing=1"),
    (lambda: CandidateSpace(["mi"]), "Grid objects"),
])
def test_bad_candidate_spaces_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_a_search_takes_the_first_grid_that_applies_to_the_missing_share():
    space = CandidateSpace([Grid(("mi",), ("gaussian",), max_missing=0.2), Grid(("random",), ("knn",))])
    assert space.for_missing(0.2).selectors[0].label == "mi" and space.for_missing(0.21).selectors[0].label == "random"
    fitted = PipelineSearch(k=2, candidates=space).fit(as_matrix(_with_missing_share(0.3)))
    assert set(fitted.cv_results_["selector"]) == {"random"} and fitted.sparse_
