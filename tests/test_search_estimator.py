"""The search as scikit-learn's searches are: its choice is a fitted Pipeline, its parameters are BaseEstimator's."""
from __future__ import annotations

import numpy as np
import pytest
from _synthetic import as_matrix, low_rank_scores
from sklearn.base import BaseEstimator, clone

from benchsel_lib import Pipeline
from benchsel_lib.method.candidates import Grid
from benchsel_lib.method.inner_search import ChosenPredictor
from benchsel_lib.method.predictors import make_predictor
from benchsel_lib.method.pipeline import PipelineSearch


def _matrix(missing: float = 0.0):
    return as_matrix(50 + 10 * low_rank_scores(3, 80, 9, missing=missing))


def _given(search, matrix, row: int = 0) -> dict[str, float]:
    return {b: float(matrix.scores[row, matrix.benchmarks.index(b)]) for b in search.selected}


@pytest.mark.parametrize("grid", [
    Grid(selectors=("mi", "entropy-obs"), predictors=("gaussian", "ridge")),
    Grid(selectors=("mi",), predictors=("gaussian", "knn"), stack=True),
])
def test_the_best_estimator_is_a_fitted_pipeline_that_predicts_what_the_search_predicts(grid):
    m = _matrix()
    search = PipelineSearch(k=3, candidates=grid, seed=1).fit(m)
    best = search.best_estimator_
    assert isinstance(best, Pipeline) and best.selected == search.selected
    assert best.k == 3 and best.calibrator is None
    for row in (0, 5):
        mine, theirs = best.predict(_given(search, m, row)), search.predict(_given(search, m, row))
        np.testing.assert_allclose(mine["mean"].to_numpy(), theirs["mean"].to_numpy(), rtol=1e-12, atol=1e-12)


def test_best_params_refit_from_a_clone_select_the_same_benchmarks():
    m = _matrix(missing=0.1)
    search = PipelineSearch(k=4, candidates=Grid(selectors=("mi", "random"), predictors=("gaussian", "ridge")),
                            seed=2).fit(m)
    params = search.best_params_
    assert params["k"] == 4 and list(params["selector"].initial) == search.selected
    assert isinstance(params["predictor"], ChosenPredictor)
    assert params["predictor"].predictor == search.choice_.predictor
    refit = clone(search.best_estimator_).fit(m)
    assert refit.selected == search.selected


def test_a_stack_choice_predicts_the_weighted_sum_of_its_predictors():
    rng = np.random.default_rng(0)
    train = rng.standard_normal((40, 5))
    query = np.full((3, 5), np.nan)
    query[:, :2] = rng.standard_normal((3, 2))
    weights = {"gaussian": 0.25, "ridge": 0.75, "knn": 0.0}
    cov = np.corrcoef(train, rowvar=False)
    got = ChosenPredictor("stack", weights).fit(train, cov=cov).predict(query)
    by_hand = sum(w * make_predictor(n).fit(train, cov=cov).predict(query) for n, w in weights.items() if w > 0)
    by_hand[:, :2] = query[:, :2]
    np.testing.assert_allclose(got, by_hand, rtol=1e-12)


def test_pipelines_and_searches_take_their_parameter_conventions_from_scikit_learn():
    search = Pipeline.auto(k=4)
    assert isinstance(search, BaseEstimator) and isinstance(Pipeline(), BaseEstimator)
    copy = clone(search)
    assert copy is not search and copy.get_params(deep=False).keys() == search.get_params(deep=False).keys()
    assert repr(Pipeline(k=3)) == "Pipeline(k=3)"  # scikit-learn shows the parameters that differ from the defaults
    deep = Pipeline.paper(k=2, objective="entropy").get_params()
    assert deep["selector__objective"] == "entropy" and deep["scaling__clip"] == 10.0


def test_a_new_fit_or_parameter_forgets_the_best_estimator():
    m = _matrix()
    search = PipelineSearch(k=3, candidates=Grid(selectors=("mi",), predictors=("gaussian", "ridge"))).fit(m)
    first = search.best_estimator_
    assert search.best_estimator_ is first  # kept between accesses
    search.fit(m)
    assert search.best_estimator_ is not first
    search.set_params(seed=5)
    with pytest.raises(ValueError, match="not fitted"):
        search.best_estimator_


def _spy_inner_fits(monkeypatch):
    """Record every fit of a pipeline in an inner fold (the ones handed their selections): class, calibrator,
    predictor, and the rows it was fit on."""
    from benchsel_lib.method.fitting import BasePipeline

    seen, fit_path = [], BasePipeline.fit_path

    def spy(self, X, **kw):
        prepared = kw.get("prepared")
        if prepared is not None and prepared.selections is not None:
            seen.append((type(self), self.calibrator, self.predictor, np.asarray(X).shape[0]))
        return fit_path(self, X, **kw)

    monkeypatch.setattr(BasePipeline, "fit_path", spy)
    return seen


def test_a_search_scores_each_candidate_by_fitting_a_pipeline_clone_in_each_inner_fold(monkeypatch):
    seen = _spy_inner_fits(monkeypatch)
    m = _matrix()
    PipelineSearch(k=2, candidates=Grid(selectors=("mi", "random"), predictors=("gaussian", "ridge")),
                   search_folds=4, seed=3).fit(m)
    assert len(seen) == 4 * 2 * 2  # folds x selectors x predictors
    assert all(cls is Pipeline and cal is None for cls, cal, _, _ in seen)
    assert sorted({p for _, _, p, _ in seen}) == ["gaussian", "ridge"]
    assert all(rows < m.shape[0] for _, _, _, rows in seen)  # the inner-training rows only


def test_a_pipeline_with_conformal_intervals_fits_clones_of_itself_without_intervals(monkeypatch):
    seen = _spy_inner_fits(monkeypatch)
    pipe = Pipeline(3, selector="mi", predictor="knn", calibrator="conformal", seed=2).fit(_matrix())
    assert seen and all(cls is Pipeline and cal is None and p == "knn" for cls, cal, p, _ in seen)
    assert pipe.calibrator == "conformal"  # the pipeline itself keeps its intervals
