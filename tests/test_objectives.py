"""Tests for benchsel_lib.method.objectives: the entropy and MI gains against brute-force log-determinants, and the
greedy on the total residual variance against brute-force conditional covariances."""
from __future__ import annotations

import math

import numpy as np
import pytest
from _synthetic import random_spd

from benchsel_lib.method.objectives import (
    LOG_2PIE,
    EntropyGain,
    MutualInformationGain,
    PivotedCholesky,
    entropy_gains_along,
    gains_along,
    residual_trace_greedy,
    variance_floor,
)
from benchsel_lib.method.plan import selection_cost
from benchsel_lib.method.selection import select


def logdet(S: np.ndarray, idx) -> float:
    idx = list(idx)
    return float(np.linalg.slogdet(S[np.ix_(idx, idx)])[1]) if idx else 0.0


def brute_mi(S: np.ndarray, A) -> float:
    rest = [j for j in range(S.shape[0]) if j not in A]
    return 0.5 * (logdet(S, A) + logdet(S, rest) - logdet(S, range(S.shape[0]))) if A and rest else 0.0


ORDER = [4, 0, 7, 2, 9]


@pytest.mark.parametrize("seed", range(3))
def test_entropy_gains_along_an_order_are_differences_of_log_determinants(seed):
    S = random_spd(10, seed)
    expected = [0.5 * (LOG_2PIE + logdet(S, ORDER[: t + 1]) - logdet(S, ORDER[:t])) for t in range(len(ORDER))]
    gains = gains_along(EntropyGain(S, variance_floor(S)), ORDER)
    np.testing.assert_allclose(gains, expected, rtol=1e-10)
    np.testing.assert_allclose(entropy_gains_along(S, ORDER, variance_floor(S)), expected, rtol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_mi_gains_along_an_order_are_differences_of_brute_force_mutual_information(seed):
    S = random_spd(10, seed)
    expected = [brute_mi(S, ORDER[: t + 1]) - brute_mi(S, ORDER[:t]) for t in range(len(ORDER))]
    gains = gains_along(MutualInformationGain(S, variance_floor(S)), ORDER)
    np.testing.assert_allclose(gains, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("objective", [EntropyGain, MutualInformationGain])
def test_vector_and_one_candidate_gains_agree_on_a_lazily_updated_state(objective):
    S = random_spd(12, 5)
    gain = objective(S, variance_floor(S))
    state = PivotedCholesky(S, 4, gain.floor)
    for p in (3, 8):
        state.add_lazy(p)  # rows of the other benchmarks stay stale until refreshed
    cands = np.array([0, 1, 5, 11])
    gain.prepare(state)
    one = [gain.gain(state, int(j)) for j in cands]
    vec, keys = gain.gains(state, cands)
    np.testing.assert_allclose(vec, [g for g, _ in one], rtol=1e-13)
    np.testing.assert_allclose(keys, [k for _, k in one], rtol=1e-13)
    # the surrogate ranks as the gain does: for entropy it is the conditional variance itself
    assert list(np.argsort(keys)) == list(np.argsort(vec))
    if objective is EntropyGain:
        A = [3, 8]
        for j, (g, v) in zip(cands, one):
            cond = S[j, j] - S[j, A] @ np.linalg.solve(S[np.ix_(A, A)], S[A, j])
            assert v == pytest.approx(cond, rel=1e-10)
            assert g == pytest.approx(0.5 * (LOG_2PIE + math.log(cond)), rel=1e-10)


def test_a_dependent_benchmark_gains_the_floor_not_minus_infinity():
    S = random_spd(6, 1)
    S[:, 5] = S[:, 4]
    S[5, :] = S[4, :]  # benchmark 5 duplicates benchmark 4: its variance given 4 is zero
    floor = variance_floor(S)
    gains = gains_along(EntropyGain(S, floor), [4, 5])
    assert gains[1] == pytest.approx(0.5 * (LOG_2PIE + math.log(floor)))
    assert np.isfinite(gains_along(MutualInformationGain(S, floor), [4, 5])).all()


def test_mi_gains_are_refused_before_the_step_is_prepared():
    S = random_spd(6, 2)
    gain = MutualInformationGain(S, variance_floor(S))
    state = PivotedCholesky(S, 2, gain.floor)
    with pytest.raises(RuntimeError, match="prepare"):
        gain.gain(state, 0)
    gain.prepare(state)
    state.add(1)  # a new step: the complement's precision is stale
    with pytest.raises(RuntimeError, match="prepare"):
        gain.gains(state, np.array([0, 2]))


def brute_trace(S: np.ndarray, A) -> float:
    """tr(Sigma_{rest | A}) by a direct solve: Sigma_rr - Sigma_rA Sigma_AA^{-1} Sigma_Ar."""
    A = list(A)
    rest = [j for j in range(S.shape[0]) if j not in A]
    if not A:
        return float(np.trace(S))
    cond = S[np.ix_(rest, rest)] - S[np.ix_(rest, A)] @ np.linalg.solve(S[np.ix_(A, A)], S[np.ix_(A, rest)])
    return float(np.trace(cond))


@pytest.mark.parametrize("seed", range(4))
def test_each_trace_greedy_step_adds_the_benchmark_that_leaves_the_least_residual_variance(seed):
    S = random_spd(9, seed)
    cands = np.ones(9, dtype=bool)
    cands[[2, 6]] = False  # never candidates, still part of the residual
    order = residual_trace_greedy(S, 5, initial=[4], candidates=cands)
    assert order[0] == 4 and len(order) == 5 and not {2, 6} & set(order)
    for t in range(1, len(order)):
        before = order[:t]
        options = [j for j in range(9) if cands[j] and j not in before]
        traces = {j: brute_trace(S, before + [j]) for j in options}
        assert traces[order[t]] == pytest.approx(min(traces.values()), rel=1e-10)


def test_the_first_trace_pick_is_the_best_single_benchmark_by_brute_force():
    S = random_spd(12, 7)
    first = residual_trace_greedy(S, 1)[0]
    singles = [brute_trace(S, [j]) for j in range(12)]
    assert first == int(np.argmin(singles))


def test_trace_selections_are_nested_and_report_the_residual_they_minimize():
    S = random_spd(10, 3)
    five = select(S, 5, objective="trace")
    assert select(S, 3, objective="trace").order == five.order[:3]
    traces = [brute_trace(S, five.order[: t + 1]) / np.trace(S) for t in range(5)]
    np.testing.assert_allclose(five.residual_fraction, traces, rtol=1e-9)
    # entropy's greedy leaves at least as much residual variance after its first pick
    assert five.residual_fraction[0] <= select(S, 1, objective="entropy").residual_fraction[0] + 1e-12


def test_a_duplicated_benchmark_explains_nothing_once_its_twin_is_revealed():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5))
    X = np.column_stack([X, X[:, 0]])  # column 5 duplicates column 0
    S = np.corrcoef(X.T)
    order = residual_trace_greedy(S, 6)
    assert sorted(order) == list(range(6))
    assert order[-1] in (0, 5)  # the second twin comes last: revealing it lowers nothing


def test_the_trace_objective_has_no_cost_aware_form():
    with pytest.raises(ValueError, match="the trace objective has no cost-aware form"):
        select(random_spd(5, 0), 2, objective="trace", costs=np.ones(5), budget=3.0)


def test_the_trace_greedy_is_planned_as_cheaper_than_mi_and_dearer_than_entropy():
    assert selection_cost("entropy", 200, 10) < selection_cost("trace", 200, 10) < selection_cost("mi", 200, 10)


# ------------------------------------------------------------------ the greedy on the mean-imputed training matrix
def sparse_rows(m: int, n: int, seed: int, missing: float = 0.35) -> np.ndarray:
    """A low-rank (m x n) matrix with noise and a share of missing (NaN) entries; every column keeps 3 scores."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3)) @ rng.normal(size=(3, n)) + 0.5 * rng.normal(size=(m, n))
    hide = rng.random((m, n)) < missing
    hide[:3] = False
    X[hide] = np.nan
    return X


def brute_filled_residual(X: np.ndarray, A) -> float:
    """Summed squared residual of least squares of every other column on the columns ``A``, over the rows of ``X``
    with each missing score set to its column's mean and every column centred (the intercept)."""
    F = np.where(np.isnan(X), np.nanmean(X, axis=0), X)
    F = F - F.mean(axis=0)
    rest = [j for j in range(X.shape[1]) if j not in A]
    if not A:
        return float((F[:, rest] ** 2).sum())
    coef = np.linalg.lstsq(F[:, list(A)], F[:, rest], rcond=None)[0]
    return float(((F[:, rest] - F[:, list(A)] @ coef) ** 2).sum())


@pytest.mark.parametrize("seed", range(4))
def test_each_imputed_trace_step_leaves_the_least_squared_residual_on_the_mean_imputed_matrix(seed):
    X = sparse_rows(30, 8, seed)
    sel = select(np.corrcoef(np.nan_to_num(X).T), 5, objective="imputed-trace", train=X, initial=[6])
    order = sel.order
    assert order[0] == 6 and len(set(order)) == 5
    for t in range(1, len(order)):
        before = order[:t]
        res = {j: brute_filled_residual(X, before + [j]) for j in range(8) if j not in before}
        assert res[order[t]] == pytest.approx(min(res.values()), rel=1e-9)


def test_imputed_trace_on_a_complete_matrix_is_the_trace_greedy_on_its_covariance():
    X = sparse_rows(40, 9, 5, missing=0.0)
    C = np.cov(X.T, bias=True)
    got = select(np.corrcoef(X.T), 6, objective="imputed-trace", train=X).order
    assert got == residual_trace_greedy(C, 6)
    assert select(np.corrcoef(X.T), 4, objective="imputed-trace", train=X).order == got[:4]  # nested


def test_imputed_trace_prefers_the_twin_that_more_models_ran():
    rng = np.random.default_rng(1)
    f = rng.normal(size=60)
    X = np.column_stack([f + 0.3 * rng.normal(size=60) for _ in range(6)])
    X[:, 0] = X[:, 1]
    X[:45, 0] = np.nan  # benchmark 0 is benchmark 1 where it was run, by 15 of the 60 models
    S = np.corrcoef(np.nan_to_num(X).T)
    order = select(S, 6, objective="imputed-trace", train=X).order
    assert order.index(1) < order.index(0)
    # on the pairwise correlation the twins are the same benchmark: the trace greedy takes the lower index
    R = np.ma.corrcoef(np.ma.masked_invalid(X).T).filled(0.0)
    assert residual_trace_greedy(R, 6).index(0) < residual_trace_greedy(R, 6).index(1)


def test_imputed_trace_needs_the_training_rows():
    with pytest.raises(ValueError, match="objective 'imputed-trace' needs train="):
        select(random_spd(5, 0), 2, objective="imputed-trace")
    with pytest.raises(ValueError, match="the imputed-trace objective has no cost-aware form"):
        select(random_spd(5, 0), 2, objective="imputed-trace", train=sparse_rows(10, 5, 0), costs=np.ones(5),
               budget=3.0)


def test_imputed_trace_is_planned_as_dearer_than_trace_by_the_second_moments():
    assert selection_cost("imputed-trace", 50, 10, n_models=100) > selection_cost("trace", 50, 10, n_models=100)
