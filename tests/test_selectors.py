"""Tests for the selectors (method/selectors.py): filtered greedy, predictive greedy, group-lasso path order."""
from __future__ import annotations

import itertools
from dataclasses import replace
from functools import partial

import numpy as np
import pytest
from _reference import ridge_loo
from _synthetic import as_matrix, low_rank_scores

from benchsel_lib import Pipeline, cross_validate
from benchsel_lib.method.correlation import inner_correlation
from benchsel_lib.method.pipeline import parse_pipeline
from benchsel_lib.method.selection import (
    COST_AWARE,
    OBJECTIVES,
    TIE_BREAKS,
    lasso_path_order,
    predictive_greedy,
    select,
)
from benchsel_lib.method.selectors import (
    SELECTORS,
    Selector,
    min_observed_for,
    selector_named,
)

_data = partial(low_rank_scores, m=60, n=8, noise=0.5, missing=0.0, standardize=True)


def _select(X, k, *, selector="mi", seed=0, initial=(), costs=None, budget=None):
    """The preset selector named ``selector`` on standardized rows ``X`` (columns named "0", "1", ...), as column indices."""
    names = [str(j) for j in range(X.shape[1])]
    changes = {}
    if initial:
        changes["initial"] = tuple(names[j] for j in initial)
    if costs is not None:
        changes.update(costs=dict(zip(names, np.asarray(costs, dtype=float).tolist())), budget=budget)
    sel = replace(selector_named(selector), **changes)
    return sel.select(inner_correlation(X), k, names=names, counts=(~np.isnan(X)).sum(axis=0), n_models=X.shape[0],
                      train=X, seed=seed).order


@pytest.mark.parametrize("selector", tuple(SELECTORS))
def test_every_selector_is_deterministic_and_respects_initial(selector):
    X = _data(1, missing=0.1)
    a = _select(X, 4, selector=selector, seed=3, initial=[5])
    b = _select(X, 4, selector=selector, seed=3, initial=[5])
    assert a == b
    assert a[0] == 5 and len(a) == 4 and len(set(a)) == 4


def test_obs_selectors_only_pick_well_observed_benchmarks():
    X = _data(2, m=50)
    X[10:, [0, 3]] = np.nan  # observed by 10 of 50 models
    need = min_observed_for(50)
    assert need == 15
    for s in ("mi-obs", "entropy-obs"):
        picked = _select(X, 5, selector=s)
        assert not {0, 3} & set(picked)


def test_k_larger_than_filtered_candidates_is_a_clear_error():
    X = _data(3, m=20)
    X[5:, :6] = np.nan
    with pytest.raises(ValueError, match="larger than the 2 candidate benchmarks"):
        _select(X, 3, selector="mi-obs")


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_every_objective_is_a_named_selector_and_a_pipeline_selector_with_or_without_costs(objective):
    assert selector_named(objective) == Selector(objective) and SELECTORS[objective].label == objective
    assert parse_pipeline(f"{objective}+ridge") == (objective, "ridge")
    if objective in COST_AWARE:
        assert Selector(objective, costs={"b0": 1.0}, budget=1.0).budget == 1.0
    else:
        with pytest.raises(ValueError, match=f"the {objective} objective has no cost-aware form; use entropy, mi, "
                                             "random or greedy with costs"):
            Selector(objective, costs={"b0": 1.0}, budget=1.0)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_every_objective_fits_a_pipeline_and_cross_validates_end_to_end(objective):
    m = as_matrix(50 + 10 * low_rank_scores(11, 60, 8, missing=0.1))
    p = Pipeline.from_name(f"{objective}+ridge", k=3).fit(m)
    assert len(p.selected) == 3 and set(p.selected) <= set(m.benchmarks)
    direct = Pipeline.paper(k=3, objective=objective).fit(m)
    assert direct.selection_.objective == objective and direct.selected == direct.selection_.names
    df = cross_validate(m, [Pipeline.paper(objective=objective)], k_max=3, n_folds=2, seed=1, progress=False,
                        levels=(0.9,))
    assert list(df["pipeline"].unique()) == [objective]
    assert set(df["k"]) == {1, 2, 3} and np.isfinite(df["r2"]).all()


def test_lasso_refuses_costs_and_unknown_selector_is_named():
    X = _data(4)
    with pytest.raises(ValueError, match="no cost-aware form"):
        _select(X, 2, selector="lasso", costs=np.ones(8), budget=3.0)
    with pytest.raises(ValueError, match="unknown selector 'bogus'"):
        _select(X, 2, selector="bogus")


def test_a_selector_and_select_refuse_the_same_unknown_tie_rule_naming_the_rules():
    R = np.corrcoef(_data(4).T)
    for make in (lambda: Selector("mi", tie_break="first"), lambda: select(R, 2, objective="mi", tie_break="first")):
        with pytest.raises(ValueError, match=r"unknown tie_break 'first'; expected one of \('auto', 'argmax'"):
            make()
    for rule in TIE_BREAKS:  # every rule the message names is accepted by both
        assert Selector("mi", tie_break=rule).tie_break == rule
        assert len(select(R, 2, objective="mi", tie_break=rule).order) == 2


def test_lasso_first_pick_is_the_largest_correlation_row_norm():
    X = _data(5)
    R = np.corrcoef(X.T)
    order = lasso_path_order(R, 3)
    assert order[0] == int(np.argmax(np.linalg.norm(R, axis=1)))
    # the order is a prefix chain: asking for fewer gives the first ones
    assert lasso_path_order(R, 2) == order[:2]
    # mandatory benchmarks start the path
    assert lasso_path_order(R, 3, initial=[6])[0] == 6


def _brute_objective(X: np.ndarray, S: list[int]) -> float:
    obs = ~np.isnan(X)
    res = tot = 0.0
    for j in range(X.shape[1]):
        if j in S:
            continue
        rows = obs[:, j] & obs[:, S].any(axis=1)
        t = float(np.sum(X[rows, j] ** 2))
        tot += t
        full = obs[:, j] & obs[:, S].all(axis=1)
        if full.sum() >= max(8, len(S) + 2):
            _, _, _, mse = ridge_loo(X[np.ix_(full, S)], X[full, j], alphas=tuple(np.logspace(-2, 4, 13)))
            res += full.sum() * mse + float(np.sum(X[rows & ~full, j] ** 2))
        else:
            res += t
    return 1 - res / tot


def test_predictive_greedy_first_pick_maximizes_the_loo_objective():
    X = _data(6, m=40, n=6, missing=0.1)
    order = predictive_greedy(X, 2, max_candidates=6)
    scores = [_brute_objective(X, [c]) for c in range(6)]
    assert order[0] == int(np.argmax(scores))
    second = [(_brute_objective(X, [order[0], c]), c) for c in range(6) if c != order[0]]
    assert order[1] == max(second)[1]
    # no pair is better than greedy's by much on this small problem (sanity, not optimality)
    best_pair = max(_brute_objective(X, list(p)) for p in itertools.combinations(range(6), 2))
    assert _brute_objective(X, order) >= best_pair - 0.1


def test_predictive_greedy_respects_the_budget():
    X = _data(7, m=40, n=6)
    costs = np.array([5.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    order = _select(X, None, selector="greedy", costs=costs, budget=3.0)  # k=None: as many as the budget allows
    assert sum(costs[order]) <= 3.0
