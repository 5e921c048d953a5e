"""Repeated inner cross-validation of the recommended pipeline's search (``search_repeats``)."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib._random import balanced_folds, rng
from benchsel_lib.method import predictors as predictors_module
from benchsel_lib.method.pipeline import Pipeline, clone
from benchsel_lib.method.predictors import (
    inner_cv_predictions,
    inner_folds,
    make_predictor,
)
from benchsel_lib.method.search import pipeline_path

_data = partial(low_rank_scores, m=50, n=10, noise=0.5, missing=0.2, standardize=True)
_PREDICTORS = ("gaussian", "ridge", "knn")


def test_the_first_draw_of_the_inner_folds_is_the_one_of_a_single_search_and_the_next_draws_differ():
    first = inner_folds(50, 5, 3)
    assert all(np.array_equal(a, np.sort(b)) for a, b in zip(first, balanced_folds(rng(3, 11).permutation(50), 5)))
    second = inner_folds(50, 5, 3, repeat=1)
    assert sorted(np.concatenate(second).tolist()) == list(range(50))
    assert not all(np.array_equal(a, b) for a, b in zip(first, second))
    assert all(np.array_equal(a, b) for a, b in zip(second, inner_folds(50, 5, 3, repeat=1)))


def _oof(X, revealed, seed, repeat, monkeypatch):
    """Out-of-fold predictions of ``inner_cv_predictions`` on the ``repeat``-th draw of the inner folds."""
    with monkeypatch.context() as mp:
        mp.setattr(predictors_module, "inner_folds",
                   lambda m, n_folds, s: inner_folds(m, n_folds, s, repeat=repeat))
        return inner_cv_predictions(X, revealed, {p: make_predictor(p) for p in _PREDICTORS}, n_folds=5, seed=seed)


def test_a_repeated_inner_score_pools_the_residuals_of_every_draw_of_the_folds(monkeypatch):
    X = _data(21)
    revealed = [1, 4, 8]
    rec = pipeline_path(X, 3, fixed=revealed, predictors=_PREDICTORS, stack=False, n_folds=5, seed=4, levels=(),
                        repeats=3)[0]
    draws = [_oof(X, revealed, 4, r, monkeypatch) for r in range(3)]
    for p in _PREDICTORS:
        res = sum(float(((pr[p] - np.where(mk, X, 0.0))[mk] ** 2).sum()) for pr, mk in draws)
        tot = sum(float((np.where(mk, X, 0.0)[mk] ** 2).sum()) for _, mk in draws)
        got = rec.scores.loc[rec.scores["predictor"] == p, "r2"].item()
        assert got == pytest.approx(1.0 - res / tot, abs=1e-12)
    assert rec.scores["n_eval"].eq(3 * int(draws[0][1].sum())).all()  # every draw's residual of each entry


def test_repeated_conformal_scores_hold_every_draws_residuals():
    X = _data(22)
    one, two = (pipeline_path(X, 3, fixed=[0, 3, 6], predictors=("gaussian",), stack=False, levels=(0.8,),
                              seed=1, repeats=r)[0] for r in (1, 2))
    assert two.conformal.size == 2 * one.conformal.size > 0
    assert np.isfinite(two.quantiles[0.8])


def test_a_repeated_search_is_deterministic_and_keeps_its_parameter():
    M = as_matrix(_data(23, m=60))
    pipe = Pipeline.auto(k=3, search_repeats=2, seed=5)
    assert pipe.get_params()["search_repeats"] == 2 and clone(pipe).search_repeats == 2
    a, b = pipe.fit(M), clone(pipe).fit(M)
    assert a.selected == b.selected
    assert a.choice_.inner_r2 == b.choice_.inner_r2
    assert np.isfinite(a.choice_.inner_r2)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_search_refuses_a_repeat_count_that_is_not_a_positive_integer(bad):
    with pytest.raises(ValueError, match="search_repeats"):
        Pipeline.auto(k=3, search_repeats=bad).fit(as_matrix(_data(24)))
    with pytest.raises(ValueError, match="repeats"):
        pipeline_path(_data(24), 3, strategies=("mi",), predictors=("gaussian",), stack=False, repeats=bad)


def test_the_search_budget_counts_every_draw_of_the_inner_folds(monkeypatch):
    from benchsel_lib.method import search

    monkeypatch.setattr(search, "SEARCH_MIN_MODELS", 40)  # so that an 80-model search can be subsampled
    X = _data(25, m=80)
    kw = dict(k=3, n_ks=3, observed=float((~np.isnan(X)).mean()))
    one = search.search_cost(80, 10, **kw)
    assert search.search_cost(80, 10, repeats=2, **kw) == pytest.approx(2 * one)
    assert search.plan_search(80, 10, budget=1.5 * one, **kw).full
    assert search.plan_search(80, 10, budget=1.5 * one, repeats=2, **kw).rows is not None
    single, double = (pipeline_path(X, 3, seed=2, budget=1.5 * one, repeats=r)[-1] for r in (1, 2))
    assert single.plan is None
    assert double.plan is not None and "of the 80 models" in double.plan


def test_the_stack_of_a_repeated_search_is_cross_fitted_within_each_draw(monkeypatch):
    from benchsel_lib.method.predictors import nnls_weights

    X = _data(26)
    revealed = [2, 5, 9]
    rec = pipeline_path(X, 3, fixed=revealed, predictors=_PREDICTORS, stack=True, n_folds=5, seed=6, levels=(),
                        repeats=2)[0]
    res = tot = 0.0
    for r in range(2):
        preds, mask = _oof(X, revealed, 6, r, monkeypatch)
        truth = np.where(mask, X, 0.0)
        cross = np.zeros_like(truth)
        for rows in inner_folds(X.shape[0], 5, 6, repeat=r):
            inf = np.zeros_like(mask)
            inf[rows] = mask[rows]
            w = nnls_weights([preds[p][mask & ~inf] for p in _PREDICTORS], truth[mask & ~inf])
            cross[inf] = sum(wb * preds[p][inf] for wb, p in zip(w, _PREDICTORS))
        res += float(((cross - truth)[mask] ** 2).sum())
        tot += float((truth[mask] ** 2).sum())
    got = rec.scores.loc[rec.scores["predictor"] == "stack", "r2"].item()
    assert got == pytest.approx(1.0 - res / tot, abs=1e-12)
