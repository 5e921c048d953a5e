"""Tests for benchsel_lib.method.selection and .objectives, checked against independent brute-force computations."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from _synthetic import random_spd

from benchsel_lib.method.objectives import (
    complement_precision_diag,
    log_det,
    mutual_information,
    residual_traces,
)
from benchsel_lib.method.selection import Selection, select, too_thin

LOG_2PIE = math.log(2 * math.pi * math.e)


# ----------------------------------------------------------------------------- helpers
def slogdet_block(S: np.ndarray, idx) -> float:
    idx = list(idx)
    if not idx:
        return 0.0
    sign, val = np.linalg.slogdet(S[np.ix_(idx, idx)])
    assert sign > 0
    return float(val)


def brute_mi(S: np.ndarray, A) -> float:
    n = S.shape[0]
    A = list(A)
    rest = [j for j in range(n) if j not in A]
    if not A or not rest:
        return 0.0
    return 0.5 * (slogdet_block(S, A) + slogdet_block(S, rest) - slogdet_block(S, range(n)))


def brute_entropy(S: np.ndarray, A) -> float:
    return 0.5 * (len(list(A)) * LOG_2PIE + slogdet_block(S, A))


def brute_greedy(S: np.ndarray, k: int, f, start=()) -> list[int]:
    """Plain greedy: argmax of exact marginal gains f(A + j) - f(A), recomputed from scratch."""
    A = list(start)
    while len(A) < k:
        base = f(S, A)
        cand = [j for j in range(S.shape[0]) if j not in A]
        gains = [f(S, A + [j]) - base for j in cand]
        assert sorted(gains)[-1] - sorted(gains)[-2] > 1e-9 if len(gains) > 1 else True, "instance has a tie"
        A.append(cand[int(np.argmax(gains))])
    return A


# ----------------------------------------------------------------------------- entropy exactness
@pytest.mark.parametrize("seed", range(5))
def test_entropy_greedy_equals_bruteforce_greedy(seed):
    S = random_spd(14, seed)
    sel = select(S, 9, objective="entropy")
    assert sel.order == brute_greedy(S, 9, brute_entropy)
    assert sel.strategy == "greedy"


@pytest.mark.parametrize("seed", range(3))
def test_entropy_gains_logdet_and_residual_match_slogdet_and_schur(seed):
    S = random_spd(12, seed)
    sel = select(S, 7)
    for t in range(7):
        A = sel.order[: t + 1]
        assert sel.logdet[t] == pytest.approx(slogdet_block(S, A), abs=1e-10)
        prev = slogdet_block(S, A[:-1])
        assert sel.gains[t] == pytest.approx(0.5 * (LOG_2PIE + slogdet_block(S, A) - prev), abs=1e-10)
        rest = [j for j in range(12) if j not in A]
        schur = S[np.ix_(rest, rest)] - S[np.ix_(rest, A)] @ np.linalg.solve(S[np.ix_(A, A)], S[np.ix_(A, rest)])
        assert sel.residual_fraction[t] == pytest.approx(np.trace(schur) / np.trace(S), rel=1e-10)
    # entropy gains are non-increasing (submodularity) and the residual decreases
    assert np.all(np.diff(sel.gains) <= 1e-12)
    assert np.all(np.diff(sel.residual_fraction) < 0)


def test_entropy_greedy_is_pivoted_cholesky():
    S = random_spd(10, 7)
    sel = select(S, 10)
    P = np.eye(10)[sel.order]
    L = np.linalg.cholesky(P @ S @ P.T)
    assert np.allclose(np.log(np.diag(L) ** 2), np.diff(np.r_[0.0, sel.logdet]))
    assert sel.residual_fraction[-1] == pytest.approx(0.0, abs=1e-12)


# ----------------------------------------------------------------------------- MI exactness
@pytest.mark.parametrize("seed", range(4))
def test_mi_gains_equal_bruteforce_logdet_differences(seed):
    n = 11
    S = random_spd(n, seed)
    sel = select(S, n, objective="mi")
    values = [brute_mi(S, sel.order[: t + 1]) for t in range(n)]
    assert np.allclose(sel.gains, np.diff(np.r_[0.0, values]), atol=1e-9)
    assert np.allclose(sel.mi, values, atol=1e-9)
    assert sel.mi[-1] == 0.0  # I(X_V; X_empty) = 0


@pytest.mark.parametrize("seed", range(4))
def test_mi_greedy_equals_bruteforce_greedy(seed):
    S = random_spd(12, 10 + seed)
    assert select(S, 7, objective="mi").order == brute_greedy(S, 7, brute_mi)


@pytest.mark.parametrize("objective", ["entropy", "random"])
def test_mi_diagnostic_is_reported_for_every_objective(objective):
    S = random_spd(9, 3)
    sel = select(S, 5, objective=objective, seed=1)
    assert np.allclose(sel.mi, [brute_mi(S, sel.order[: t + 1]) for t in range(5)], atol=1e-10)


def test_mi_first_gain_with_empty_selection_is_log_variance_ratio():
    S = random_spd(8, 2)
    sel = select(S, 1, objective="mi")
    j = sel.order[0]
    rest = [i for i in range(8) if i != j]
    cond = S[j, j] - S[j, rest] @ np.linalg.solve(S[np.ix_(rest, rest)], S[rest, j])
    assert sel.gains[0] == pytest.approx(0.5 * (math.log(S[j, j]) - math.log(cond)))


def _hilbert_fractions(n: int) -> list[list[Fraction]]:
    return [[Fraction(1, i + j + 1) for j in range(n)] for i in range(n)]


def _exact_inverse_diagonal(A: list[list[Fraction]]) -> np.ndarray:
    """Diagonal of A^{-1} in exact rational arithmetic (Gauss-Jordan)."""
    n = len(A)
    M = [row[:] + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(A)]
    for c in range(n):
        pv = M[c][c]
        M[c] = [x / pv for x in M[c]]
        for r in range(n):
            if r != c and M[r][c] != 0:
                f = M[r][c]
                M[r] = [a - f * b for a, b in zip(M[r], M[c])]
    return np.array([float(M[i][n + i]) for i in range(n)])


def test_rank_one_precision_downdate_drifts_where_refactorization_does_not():
    """Appendix C: iterating Eq. inv-downdate keeps the error of the first inverse; refactoring does not."""
    n = 9
    H = _hilbert_fractions(n)  # condition number ~5e11
    Hf = np.array([[float(x) for x in row] for row in H])
    P = np.linalg.inv(Hf)
    remaining = list(range(n))
    down_err, fresh_err = [], []
    for j in range(n - 2):  # select 0, 1, ..., n-3
        a = remaining.index(j)
        # Eq. inv-downdate: P_ab <- P_ab - P_aj P_jb / P_jj, then drop row/column j
        P = P - np.outer(P[:, a], P[a, :]) / P[a, a]
        P = np.delete(np.delete(P, a, axis=0), a, axis=1)
        remaining.remove(j)
        exact = _exact_inverse_diagonal([[H[r][c] for c in remaining] for r in remaining])
        fresh = complement_precision_diag(Hf, np.array(remaining), 1e-12)
        down_err.append(float(np.max(np.abs(np.diag(P) - exact) / exact)))
        fresh_err.append(float(np.max(np.abs(fresh - exact) / exact)))
    # after several steps the complement is small and well conditioned: refactorization is
    # accurate to near machine precision, the downdated precision still carries O(1e-8) error
    assert fresh_err[-1] < 1e-11
    assert down_err[-1] > 1e-10
    assert down_err[-1] > 1e3 * fresh_err[-1]
    assert down_err[-1] > down_err[-3]  # the downdate error grows again over the last steps


def test_complement_precision_uses_cholesky_and_falls_back_to_clamped_eigenvalues():
    S = random_spd(9, 4)
    comp = np.array([0, 2, 3, 5, 8])
    exact = np.diag(np.linalg.inv(S[np.ix_(comp, comp)]))
    assert np.allclose(complement_precision_diag(S, comp, 1e-12), exact, rtol=1e-12)
    # singular block (duplicated benchmark): Cholesky fails, eigenvalues are clamped at the floor
    D = np.array([[1.0, 1.0, 0.2], [1.0, 1.0, 0.2], [0.2, 0.2, 1.0]])
    P = complement_precision_diag(D, np.arange(3), 1e-12)
    w, V = np.linalg.eigh(D)
    assert np.isfinite(P).all() and np.allclose(P, (V**2) @ (1 / np.maximum(w, 1e-12)), rtol=1e-6)
    assert P[0] > 1e10  # the duplicate is (numerically) perfectly predicted by its twin


# ----------------------------------------------------------------------------- submodularity properties
def _random_chain(rng, n):
    """Random A subset B and v outside B."""
    perm = rng.permutation(n)
    b = int(rng.integers(0, n - 1))
    a = int(rng.integers(0, b + 1))
    B = sorted(perm[:b].tolist())
    A = sorted(perm[:a].tolist())
    return A, B, int(perm[b])


@pytest.mark.parametrize("seed", range(5))
def test_shifted_entropy_is_monotone_and_submodular(seed):
    rng = np.random.default_rng(seed)
    n = 9
    S = random_spd(n, 100 + seed) * 0.05  # small variances: the unshifted entropy is not monotone
    lam = np.linalg.eigvalsh(S)[0]
    c = max(0.0, -0.5 * math.log(2 * math.pi * math.e * lam))

    def Hc(A):
        return brute_entropy(S, A) + c * len(A)

    for _ in range(40):
        A, B, v = _random_chain(rng, n)
        dA = Hc(A + [v]) - Hc(A)
        dB = Hc(B + [v]) - Hc(B)
        assert dA >= dB - 1e-10  # submodular
        assert dB >= -1e-10  # monotone (non-negative marginals)


@pytest.mark.parametrize("seed", range(5))
def test_mutual_information_is_submodular(seed):
    rng = np.random.default_rng(seed)
    n = 9
    S = random_spd(n, 200 + seed)
    for _ in range(40):
        A, B, v = _random_chain(rng, n)
        dA = brute_mi(S, A + [v]) - brute_mi(S, A)
        dB = brute_mi(S, B + [v]) - brute_mi(S, B)
        assert dA >= dB - 1e-10


def test_mutual_information_is_not_monotone():
    S = np.array([[1.0, 0.9], [0.9, 1.0]])
    assert mutual_information(S, [0]) == pytest.approx(-0.5 * math.log(1 - 0.81))
    assert mutual_information(S, [0, 1]) == 0.0 < mutual_information(S, [0])
    sel = select(S, 2, objective="mi")
    assert sel.gains[1] < 0 and sel.mi[1] == 0.0


# ----------------------------------------------------------------------------- budgets
def _brute_budget_opt(S, costs, budget, c):
    n = S.shape[0]
    best = 0.0
    for r in range(1, n + 1):
        for A in itertools.combinations(range(n), r):
            if costs[list(A)].sum() <= budget:
                best = max(best, brute_entropy(S, A) + c * r)
    return best


@pytest.mark.parametrize("seed", range(8))
def test_budgeted_entropy_within_krause_guestrin_guarantee(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 9))
    S = random_spd(n, 300 + seed) * rng.uniform(0.05, 3.0)
    costs = rng.uniform(0.2, 2.0, n)
    budget = float(rng.uniform(costs.min(), costs.sum() / 2))
    for lazy in (False, True):
        sel = select(S, None, costs=costs, budget=budget, lazy=lazy)
        assert sel.total_cost <= budget + 1e-12
        assert sel.strategy in ("cost-effective", "singleton")
        value = brute_entropy(S, sel.order) + sel.shift * len(sel.order)
        opt = _brute_budget_opt(S, costs, budget, sel.shift)
        assert value >= 0.5 * (1 - 1 / math.e) * opt - 1e-10
        # the shift makes every marginal non-negative
        assert np.all(sel.gains + sel.shift >= -1e-12)


def test_budget_reports_singleton_when_it_wins():
    S = np.diag([1e6, 1.0, 1.0])
    sel = select(S, None, costs=[1.0, 0.1, 0.1], budget=1.0)
    assert sel.strategy == "singleton" and sel.order == [0]
    sel = select(S, None, costs=[1.0, 0.1, 0.1], budget=1.05)  # 0 unaffordable after 1, 2
    assert sel.strategy == "singleton" and sel.order == [0]
    sel = select(S, None, costs=[1.0, 0.1, 0.1], budget=1.2)  # 0 still fits after 1, 2
    assert sel.strategy == "cost-effective" and sel.order == [1, 2, 0]
    sel = select(S, None, costs=[0.5, 0.1, 0.1], budget=1.0)
    assert sel.strategy == "cost-effective" and set(sel.order) == {0, 1, 2}


@pytest.mark.parametrize("lazy", [False, True])
def test_mi_under_a_budget_keeps_the_better_singleton_and_reports_its_exact_gain(lazy):
    # benchmark 0 is the common factor of 1-4 (loadings 0.7) and costs 1; the others cost 0.3 each
    L = np.r_[1.0, [0.7] * 4]
    S = np.outer(L, L) * np.where(np.eye(5, dtype=bool), 0.0, 1.0) + np.eye(5)
    S[1:, 1:] = np.where(np.eye(4, dtype=bool), 1.0, 0.49)
    sel = select(S, None, objective="mi", costs=[1.0, 0.3, 0.3, 0.3, 0.3], budget=1.0, lazy=lazy)
    # the cost-effective greedy takes three cheap ones (MI 0.678), the singleton {0} has more (0.789)
    assert brute_mi(S, [1, 2, 3]) < brute_mi(S, [0])
    assert sel.strategy == "singleton" and sel.order == [0]
    assert sel.gains == pytest.approx([brute_mi(S, [0])], rel=1e-12)


def test_budget_respects_k_and_mandatory_and_mi_heuristic():
    S = random_spd(8, 4)
    costs = np.linspace(0.5, 1.5, 8)
    sel = select(S, 3, costs=costs, budget=10.0, initial=[7])
    assert len(sel) == 3 and sel.order[0] == 7
    sel = select(S, None, costs=costs, budget=3.0, objective="mi")
    assert sel.total_cost <= 3.0 and sel.strategy in ("cost-effective", "singleton")
    sel = select(S, None, costs=costs, budget=3.0, objective="random", seed=0)
    assert sel.total_cost <= 3.0 and sel.strategy == "random"


# ----------------------------------------------------------------------------- mandatory, lazy
def test_mandatory_benchmarks_first_counted_in_k_then_greedy():
    S = random_spd(10, 5)
    names = [f"b{i}" for i in range(10)]
    sel = select(S, 5, initial=["b8", 2], names=names)
    assert sel.order[:2] == [8, 2] and len(sel) == 5
    assert sel.order == brute_greedy(S, 5, brute_entropy, start=[8, 2])
    assert sel.names == [names[j] for j in sel.order]
    mi = select(S, 4, initial=[3], objective="mi")
    assert mi.order == brute_greedy(S, 4, brute_mi, start=[3])
    assert mi.gains[0] == pytest.approx(brute_mi(S, [3]))


@pytest.mark.parametrize("objective", ["entropy", "mi"])
@pytest.mark.parametrize("seed", range(3))
def test_lazy_greedy_selects_same_set_with_fewer_evaluations(objective, seed):
    S = random_spd(40, 50 + seed)
    eager = select(S, 12, objective=objective)
    lazy = select(S, 12, objective=objective, lazy=True)
    assert lazy.order == eager.order
    assert np.allclose(lazy.gains, eager.gains)
    assert eager.n_evaluations == sum(40 - t for t in range(12))
    assert lazy.n_evaluations < eager.n_evaluations


def test_lazy_with_mandatory_and_budget_matches_eager():
    S = random_spd(20, 9)
    costs = np.random.default_rng(0).uniform(0.5, 2.0, 20)
    for objective in ("entropy", "mi"):
        a = select(S, None, objective=objective, costs=costs, budget=6.0, initial=[4])
        b = select(S, None, objective=objective, costs=costs, budget=6.0, initial=[4], lazy=True)
        assert a.order == b.order and a.strategy == b.strategy
        assert b.n_evaluations <= a.n_evaluations


# ----------------------------------------------------------------------------- ties
def _exact_correlation():
    """Correlation matrix with an exact unit diagonal: a block {0,1,2,3} (r=0.6) and loners."""
    n = 7
    C = np.eye(n)
    for i in range(4):
        for j in range(4):
            if i != j:
                C[i, j] = 0.6
    C[4, 5] = C[5, 4] = 0.3
    C[2, 6] = C[6, 2] = 0.5  # benchmark 2 is the most central one
    return C


def test_ties_on_exact_correlation_matrix_are_explicit_and_deterministic():
    C = _exact_correlation()
    assert np.all(np.diag(C) == 1.0)
    assert select(C, 1).order == [2]  # auto: largest total squared correlation
    assert select(C, 1, tie_break="argmax").order == [0]  # plain np.argmax: first maximum
    assert select(C, 1, tie_break="index").order == [0]
    # MI tie-break: largest MI gain among the (all tied) entropy candidates
    mi_first = select(C, 1, objective="mi").order[0]
    assert select(C, 1, tie_break="mi").order == [mi_first]
    # rounding noise on the diagonal moves plain argmax but not the tolerance-based rules
    Cn = C.copy()
    Cn[5, 5] = np.nextafter(1.0, 2.0)
    assert select(Cn, 1, tie_break="argmax").order == [5]
    assert select(Cn, 1).order == [2]
    assert select(Cn, 1, tie_break="index").order == [0]
    assert select(Cn, 1, tie_break="index", tie_tol=0.0).order == [5]
    # lazy evaluation resolves ties identically
    for rule in ("auto", "argmax", "index", "mi"):
        assert select(Cn, 4, tie_break=rule, lazy=True).order == select(Cn, 4, tie_break=rule).order


def test_tie_break_secondary_key_ties_fall_back_to_lowest_index():
    C = np.eye(5)  # everything tied, every centrality 0
    assert select(C, 3).order == [0, 1, 2]


# ----------------------------------------------------------------------------- min_observed
def test_min_observed_excludes_thinly_observed_candidate():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 6))
    X[:, 5] = X[:, :5].sum(axis=1) + 0.1 * rng.standard_normal(60)  # the hub: MI's first pick
    C = np.corrcoef(X.T)
    counts = np.array([60, 60, 60, 60, 60, 2])  # the hub observed for only 2 models
    assert select(C, 1, objective="mi").order == [5]
    sel = select(C, 3, objective="mi", min_observed=5, observed_counts=counts)
    assert 5 not in sel.order and sel.excluded == [5]
    # the excluded benchmark still belongs to the predicted rest
    assert sel.mi[-1] == pytest.approx(brute_mi(C, sel.order))
    assert select(C, 3, min_observed=None, observed_counts=counts).excluded == []
    # mandatory benchmarks are never excluded
    sel = select(C, 2, initial=[5], min_observed=5, observed_counts=counts)
    assert sel.order[0] == 5 and sel.excluded == []
    with pytest.raises(ValueError, match="observed_counts"):
        select(C, 2, min_observed=5)
    with pytest.raises(ValueError, match="selectable"):
        select(C, 6, min_observed=5, observed_counts=counts)


# ----------------------------------------------------------------------------- random
def test_random_selection_is_seeded_and_reports_entropy_gains():
    S = random_spd(15, 1)
    a = select(S, 8, objective="random", seed=42)
    b = select(S, 8, objective="random", seed=42)
    c = select(S, 8, objective="random", seed=43)
    assert a.order == b.order and a.order != c.order
    assert a.order == np.random.default_rng(42).permutation(15)[:8].tolist()
    assert a.n_evaluations == 0
    for t in range(8):
        A = a.order[: t + 1]
        assert a.gains[t] == pytest.approx(brute_entropy(S, A) - brute_entropy(S, A[:-1]))
        assert a.logdet[t] == pytest.approx(slogdet_block(S, A))
    r = select(S, 5, objective="random", seed=3, initial=[14])
    assert r.order[0] == 14 and len(set(r.order)) == 5


# ----------------------------------------------------------------------------- robustness
def _near_singular_cases():
    rng = np.random.default_rng(0)
    Y = rng.standard_normal((5, 10))
    rank_def = np.cov(Y.T)  # M < N: rank 4
    D = np.cov(rng.standard_normal((40, 6)).T)
    idx = [0, 1, 2, 3, 4, 5, 2]
    dup = D[np.ix_(idx, idx)]  # duplicated column
    Z = np.cov(rng.standard_normal((40, 6)).T)
    Z[3, :] = 0.0
    Z[:, 3] = 0.0  # zero-variance column
    return {"rank_deficient": rank_def, "duplicated": dup, "zero_variance": Z}


@pytest.mark.parametrize("case", ["rank_deficient", "duplicated", "zero_variance"])
@pytest.mark.parametrize("objective", ["entropy", "mi", "random"])
def test_near_singular_covariances_give_finite_results(case, objective):
    S = _near_singular_cases()[case]
    n = S.shape[0]
    for lazy in (False, True):
        sel = select(S, n, objective=objective, seed=0, lazy=lazy)
        assert sorted(sel.order) == list(range(n))
        for arr in (sel.gains, sel.residual_fraction, sel.logdet, sel.mi):
            assert np.isfinite(arr).all()
        assert np.all(sel.residual_fraction >= 0) and np.all(sel.mi >= 0)
    costs = np.ones(n)
    sel = select(S, None, objective=objective, seed=0, costs=costs, budget=3.0)
    assert np.isfinite(sel.gains).all() and len(sel) == 3


def test_as_frame_is_tidy():
    S = random_spd(6, 0)
    names = list("abcdef")
    df = select(S, 3, names=names).as_frame()
    assert list(df.columns) == ["step", "benchmark", "index", "gain", "residual_fraction", "logdet", "mi"]
    assert df["step"].tolist() == [1, 2, 3] and set(df["benchmark"]) <= set(names)
    assert isinstance(select(S, 2), Selection)


def test_reference_log_det_and_mutual_information():
    S = random_spd(5, 0)
    assert log_det(S, []) == 0.0
    assert log_det(S, [1, 3]) == pytest.approx(slogdet_block(S, [1, 3]))
    assert mutual_information(S, []) == 0.0 and mutual_information(S, range(5)) == 0.0
    assert mutual_information(S, [0, 2]) == pytest.approx(brute_mi(S, [0, 2]))
    assert log_det(S, ["b"], names=list("abcde")) == pytest.approx(math.log(S[1, 1]))


# ----------------------------------------------------------------------------- bad input
S4 = np.eye(4)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(cov=S4, k=0), "out of range"),
        (dict(cov=S4, k=5), "out of range"),
        (dict(cov=S4, k=2.5), "integer"),
        (dict(cov=np.ones((3, 4)), k=1), "square"),
        (dict(cov=np.array([[1.0, 0.5], [0.1, 1.0]]), k=1), "symmetric"),
        (dict(cov=np.array([[1.0, np.nan], [np.nan, 1.0]]), k=1), "NaN"),
        (dict(cov=np.zeros((3, 3)), k=1), "zero total variance"),
        (dict(cov=S4, k=2, objective="pca"), "unknown objective"),
        (dict(cov=S4, k=2, tie_break="first"), "unknown tie_break"),
        (dict(cov=S4, k=2, tie_tol=-1.0), "tie_tol"),
        (dict(cov=S4, k=2, initial=["x"], names=list("abcd")), "unknown mandatory benchmark 'x'"),
        (dict(cov=S4, k=2, initial=[9]), "out of range"),
        (dict(cov=S4, k=3, initial=[1, 1]), "mandatory benchmark 1 is given more than once"),
        (dict(cov=S4, k=1, initial=[1, 2]), "mandatory"),
        (dict(cov=S4, k=2, names=["a", "b"]), "names"),
        (dict(cov=S4, k=2, costs=[1, 1, 1, 1]), "together"),
        (dict(cov=S4, k=2, costs=[1, 0, 1, 1], budget=2.0), "positive"),
        (dict(cov=S4, k=2, costs=[1, -1, 1, 1], budget=2.0), "positive"),
        (dict(cov=S4, k=2, costs=[1, 1, 1], budget=2.0), "one entry per benchmark"),
        (dict(cov=S4, k=2, costs=[1, np.inf, 1, 1], budget=2.0), "infinite"),
        (dict(cov=S4, k=2, costs=[1, 1, 1, 1], budget=0.0), "budget"),
        (dict(cov=S4, k=None, costs=[3, 3, 3, 3], budget=2.0), "affordable"),
        (dict(cov=S4, k=3, costs=[1, 1, 1, 1], budget=2.0), "more than the budget allows"),
        (dict(cov=S4, k=2, costs=[1, 1, 1, 1], budget=2.0, initial=[0, 1, 2]), "cost"),
        (dict(cov=S4, k=None), "integer"),
    ],
)
def test_bad_input_raises_value_error_naming_the_problem(kwargs, match):
    kwargs = dict(kwargs)
    cov, k = kwargs.pop("cov"), kwargs.pop("k")
    with pytest.raises(ValueError, match=match):
        select(cov, k, **kwargs)


def test_residual_traces_are_the_schur_complement_traces_the_selection_reports():
    S = random_spd(7, seed=3)
    order = [4, 0, 6, 2]
    brute = []
    for t in range(1, len(order) + 1):
        A, rest = order[:t], [j for j in range(7) if j not in order[:t]]
        schur = S[np.ix_(rest, rest)] - S[np.ix_(rest, A)] @ np.linalg.solve(S[np.ix_(A, A)], S[np.ix_(A, rest)])
        brute.append(np.trace(schur))
    np.testing.assert_allclose(residual_traces(S, order), brute, rtol=1e-12)
    sel = select(S, 4, objective="entropy")
    np.testing.assert_allclose(residual_traces(S, sel.order), sel.residual_fraction * np.trace(S), rtol=1e-12)
    # a rank-2 covariance leaves nothing after two pivots, never a negative trace
    B = np.random.default_rng(1).standard_normal((5, 2))
    low = residual_traces(B @ B.T, [0, 1, 2, 3])
    assert low[0] > 0 and np.all(low[1:] >= 0) and np.all(low[1:] < 1e-12)
    with pytest.raises(ValueError, match="distinct indices in 0..6"):
        residual_traces(S, [1, 1])


def test_the_candidate_filter_removes_thin_benchmarks_but_never_a_mandatory_one():
    counts = np.array([10, 2, 7, 1, 9])
    np.testing.assert_array_equal(too_thin(counts, 5), [False, True, False, True, False])
    np.testing.assert_array_equal(too_thin(counts, 5, mandatory=[3]), [False, True, False, False, False])
    assert not too_thin(counts, None).any()
    sel = select(random_spd(5, seed=1), 3, objective="entropy", min_observed=5, observed_counts=counts, initial=[3])
    assert sel.excluded == [1] and sel.order[0] == 3 and 1 not in sel.order
