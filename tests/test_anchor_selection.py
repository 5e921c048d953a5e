"""The anchor-point objective (k-medoids on 1 - R^2), checked against brute-force enumeration."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from benchsel_lib.method.medoids import anchor_dissimilarity, k_medoids, medoid_cost
from benchsel_lib.method.selection import select


def _corr(seed: int, n: int, m: int = 30) -> np.ndarray:
    """A random correlation matrix of ``n`` benchmarks (sample correlation of mixed Gaussian columns)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) @ rng.standard_normal((n, n))
    return np.corrcoef(X.T)


def _cost(R: np.ndarray, medoids) -> float:
    """Independent k-medoids objective: sum over benchmarks of min over medoids of 1 - R^2."""
    return float(sum(min(1.0 - R[i, j] ** 2 if i != j else 0.0 for j in medoids) for i in range(R.shape[0])))


def _brute_optimum(R: np.ndarray, k: int, fixed=(), candidates=None) -> float:
    n = R.shape[0]
    pool = [j for j in (range(n) if candidates is None else candidates) if j not in fixed]
    return min(_cost(R, list(fixed) + list(c)) for c in itertools.combinations(pool, k - len(fixed)))


CASES = [(seed, n, k) for seed, n in enumerate((4, 5, 6, 7, 8, 9)) for k in range(1, 5) if k < n]


def test_dissimilarity_is_one_minus_squared_correlation_and_ignores_scale():
    R = _corr(0, 5)
    D = anchor_dissimilarity(R)
    assert np.allclose(D, 1.0 - R**2) and np.all(np.diag(D) == 0.0)
    s = np.array([1.0, 2.0, 0.5, 3.0, 1.5])
    assert np.allclose(anchor_dissimilarity(R * np.outer(s, s)), D)


@pytest.mark.parametrize("seed,n,k", CASES)
def test_selected_set_is_within_the_brute_force_optimum_and_swap_optimal(seed, n, k):
    R = _corr(seed, n)
    sel = select(R, k, objective="anchors")
    got = _cost(R, sel.order)
    opt = _brute_optimum(R, k)
    assert len(set(sel.order)) == k
    assert got >= opt - 1e-12
    # PAM's stopping rule: no single exchange of a medoid for a non-medoid lowers the objective
    for m, h in itertools.product(sel.order, sorted(set(range(n)) - set(sel.order))):
        assert _cost(R, [h if j == m else j for j in sel.order]) >= got - 1e-9
    # never worse than the greedy BUILD alone
    build = []
    for _ in range(k):
        build.append(min((j for j in range(n) if j not in build), key=lambda j: _cost(R, build + [j])))
    assert got <= _cost(R, build) + 1e-12


@pytest.mark.parametrize("seed,n", [(s, n) for s, n in enumerate((4, 5, 6, 7, 8, 9))])
def test_one_medoid_and_all_but_one_candidate_are_exact(seed, n):
    R = _corr(seed + 100, n)
    for k in (1, n - 1):
        sel = select(R, k, objective="anchors")
        assert _cost(R, sel.order) == pytest.approx(_brute_optimum(R, k), abs=1e-12)
    # one free medoid besides a mandatory one is exact too
    sel = select(R, 2, objective="anchors", initial=[n - 1])
    assert _cost(R, sel.order) == pytest.approx(_brute_optimum(R, 2, fixed=(n - 1,)), abs=1e-12)


def test_medoids_report_their_objective_and_order_prefixes_greedily():
    R = _corr(3, 9)
    D = anchor_dissimilarity(R)
    res = k_medoids(D, 4)
    assert res.cost == pytest.approx(medoid_cost(D, res.order)) == pytest.approx(_cost(R, res.order))
    # every next anchor is the one of the remaining anchors that lowers the objective most
    for t in range(1, 4):
        rest = res.order[t:]
        assert res.order[t] == min(rest, key=lambda j: (_cost(R, res.order[:t] + [j]), j))
    assert res.order[0] == min(res.order, key=lambda j: (_cost(R, [j]), j))


def test_mandatory_benchmarks_stay_medoids_and_lead_the_order():
    R = _corr(5, 8)
    sel = select(R, 4, objective="anchors", initial=[6, 2])
    assert sel.order[:2] == [6, 2] and len(set(sel.order)) == 4
    assert _cost(R, sel.order) >= _brute_optimum(R, 4, fixed=(6, 2)) - 1e-12
    assert select(R, 2, objective="anchors", initial=[6, 2]).order == [6, 2]


def test_excluded_and_filtered_benchmarks_are_never_medoids_but_are_covered():
    R = _corr(6, 8)
    free = select(R, 3, objective="anchors").order
    out = free[:2]
    sel = select(R, 3, objective="anchors", exclude=out)
    assert not set(out) & set(sel.order) and sel.excluded == sorted(out)
    cands = [j for j in range(8) if j not in out]
    # the objective still sums over the excluded benchmarks
    assert _cost(R, sel.order) >= _brute_optimum(R, 3, candidates=cands) - 1e-12
    counts = np.array([10, 10, 1, 10, 1, 10, 10, 10])
    thin = select(R, 3, objective="anchors", min_observed=5, observed_counts=counts)
    assert not {2, 4} & set(thin.order) and thin.excluded == [2, 4]


def test_same_input_gives_the_same_selection():
    R = _corr(7, 9)
    a = select(R, 4, objective="anchors", initial=[1])
    b = select(R.copy(), 4, objective="anchors", initial=[1])
    assert a.order == b.order and a.n_evaluations == b.n_evaluations
    # an exactly tied matrix (every off-diagonal correlation equal) picks the lowest indices
    E = np.full((6, 6), 0.5) + 0.5 * np.eye(6)
    assert select(E, 3, objective="anchors").order == [0, 1, 2]


def test_selection_fields_follow_the_other_orders():
    R = _corr(8, 7)
    sel = select(R, 3, objective="anchors", names=[f"b{j}" for j in range(7)])
    ent = select(R, 3, objective="lasso", initial=sel.order)  # the same order, traced the same way
    assert sel.objective == sel.strategy == "anchors"
    assert sel.names == [f"b{j}" for j in sel.order]
    np.testing.assert_allclose(sel.gains, ent.gains)
    np.testing.assert_allclose(sel.residual_fraction, ent.residual_fraction)
    np.testing.assert_allclose(sel.mi, ent.mi)
    assert sel.n_evaluations > 0 and sel.total_cost is None
    assert list(sel.as_frame()["benchmark"]) == sel.names


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(k=0), "out of range"),
        (dict(k=8), "out of range"),
        (dict(k=3, exclude=[0, 1, 2, 3, 4]), "only 2 benchmarks are selectable"),
        (dict(k=1, initial=[0, 1]), "smaller than the number of mandatory"),
        (dict(k=2, initial=["nope"], names=[f"b{j}" for j in range(7)]), "unknown mandatory benchmark 'nope'"),
        (dict(k=2, costs=np.ones(7), budget=3.0), "anchors objective has no cost-aware form"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, match):
    kwargs = dict(kwargs)
    k = kwargs.pop("k")
    with pytest.raises(ValueError, match=match):
        select(_corr(9, 7), k, objective="anchors", **kwargs)


def test_blocked_cost_evaluation_gives_the_same_medoids(monkeypatch):
    import benchsel_lib.method.medoids as medoids

    D = anchor_dissimilarity(_corr(10, 12, m=40))
    whole = k_medoids(D, 4, fixed=[3])
    monkeypatch.setattr(medoids, "_BLOCK_ENTRIES", 7)  # one or two candidate columns per block
    assert k_medoids(D, 4, fixed=[3]) == whole


def test_a_pipeline_path_selects_the_medoids_of_each_size_not_a_prefix_of_the_largest():
    from _synthetic import low_rank_scores

    from benchsel_lib.method.pipeline import Pipeline
    from benchsel_lib.method.selectors import Selector

    X = low_rank_scores(6, 50, 12, noise=1.0)  # a matrix whose 3 medoids are not the first 3 of its 6
    names = [f"b{j}" for j in range(12)]
    for pipe in (Pipeline.paper(objective="anchors"), Pipeline.from_name("anchors+ridge")):
        path = pipe.fit_path(X, names=names, k_max=6, ks=[3, 6])
        R = path.correlation
        own = {k: select(R, k, objective="anchors").order for k in (3, 6)}
        assert set(own[3]) != set(own[6][:3])
        assert {st.k: list(st.selected) for st in path.steps} == own
    assert Selector("anchors").select_sizes(R, [6, 3], names=names, counts=np.full(12, 50), n_models=50) == own
    mi = Selector("mi").select_sizes(R, [3, 6], names=names, counts=np.full(12, 50), n_models=50)
    assert mi[3] == mi[6][:3] and not Selector("anchors").nested and Selector("mi").nested
