"""The one selection entry point, :func:`select` (paper Sections 2-4, Appendices B, C).

The objectives (:data:`OBJECTIVES`) are described in :func:`select`.  The two
Gaussian ones are gains over one pivoted Cholesky state
(:mod:`~benchsel_lib.method.objectives`); this module holds the greedy that
maximizes them, eager or lazy (Minoux), with the practitioners' extras of
Section 6 and Appendix B: mandatory benchmarks, knapsack budgets
(Krause-Guestrin), deterministic tie breaking and a minimum-observation
filter.  A pipeline names these options once, in a
:class:`~benchsel_lib.method.selectors.Selector`.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

from .._checks import (as_float_array, check_bool, check_covariance, check_int, check_k, check_nonnegative,
                       resolve_indices)
from .._random import check_entropy
from .base import check_train
from .lowrank import LowRankCorrelation, as_correlation_matrix
from .medoids import anchor_dissimilarity, k_medoids
from .objectives import (EntropyGain, MutualInformationGain, Objective, PivotedCholesky, entropy_gain,
                         entropy_gains_along, first_tied, gains_along, pivot_along, residual_trace_greedy,
                         tie_threshold, trace_order, variance_floor)
from .regression import RidgePredictor, ridge_loo_batch
from .sparse import imputed_gram, imputed_lasso_order, mean_lasso_order, sparse_order

__all__ = ["ObjectiveFacts", "OBJECTIVE_FACTS", "OBJECTIVES", "UNNESTED", "COST_AWARE", "NEEDS_TRAIN",
           "check_cost_form", "TIE_BREAKS", "check_tie_break", "within_budget", "too_thin", "Selection", "select",
           "lasso_path_order", "predictive_greedy"]


@dataclass(frozen=True)
class ObjectiveFacts:
    """The facts of one selection objective.

    Attributes
    ----------
    nested : bool
        Whether its selection of ``k`` benchmarks is the first ``k`` of any
        larger one (a set of ``k`` medoids depends on ``k``, and so does the
        strength that leaves ``k`` non-zero coefficients: a pipeline selects
        those once per subset size).
    needs_train : bool
        Whether it selects on the training rows themselves, not only on their
        correlation (``train=`` of :func:`select`).
    cost_aware : bool
        Whether it has a budgeted, cost-aware form (gain per unit cost).
    cost : callable (N, k, m) -> float
        Estimated operations of one selection of ``k`` among ``N`` benchmarks
        from ``m`` training rows, the factorization of the ``N x N``
        correlation that every selection ends with (its diagnostics,
        ``N^3 / 3``) included; read off timings on one core (about 2e9 a
        second), they order a search's work (:mod:`~benchsel_lib.method.plan`),
        they do not promise seconds.
    """

    cost: Callable[[float, float, float], float]
    nested: bool = True
    needs_train: bool = False
    cost_aware: bool = False


#: the objectives by name, with their facts (the costs: the terms of each objective's complexity in
#: :func:`select`, with the constants of the implementation)
OBJECTIVE_FACTS: dict[str, ObjectiveFacts] = {
    "entropy": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + k * k * N, cost_aware=True),
    "mi": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + (k + 1.0) * 2.0 * N**3 / 3.0, cost_aware=True),
    "random": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + k * k * N, cost_aware=True),
    "lasso": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + k * (200.0 * k * k * N + 2.0 * k * N * N)),
    "greedy": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 20.0 * k**3 * m * N, needs_train=True, cost_aware=True),
    "anchors": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + (k + 1.0) * k * N * N, nested=False),
    "sparse": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 6.0 * 20.0 * 60.0 * 2.0 * N**3
                             + 5.0 * (2.0 * m * N * N + 18.0 * N**3), needs_train=True),
    "mean-lasso": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 9.0 * N**3 + 400.0 * 3.0 * N * N),
    "imputed-lasso": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 2.0 * m * N * N + 600.0 * 3.0 * (k * k + k * N),
                                    nested=False, needs_train=True),
    "trace": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 3.0 * k * N * N),
    "imputed-trace": ObjectiveFacts(lambda N, k, m: N**3 / 3.0 + 2.0 * m * N * N + 3.0 * k * N * N, needs_train=True),
}

#: the objectives of :func:`select`, by name (:data:`OBJECTIVE_FACTS` holds their facts)
OBJECTIVES = tuple(OBJECTIVE_FACTS)
#: the objectives that the greedy optimizer maximizes, by name
_GAINS = {"entropy": EntropyGain, "mi": MutualInformationGain}
#: the objectives whose ``k`` benchmarks are not the first ``k`` of a larger selection (a pipeline selects
#: them once per subset size)
UNNESTED = tuple(name for name, f in OBJECTIVE_FACTS.items() if not f.nested)
#: the objectives that select on the training rows themselves (``train=`` of :func:`select`)
NEEDS_TRAIN = tuple(name for name, f in OBJECTIVE_FACTS.items() if f.needs_train)
#: the objectives with a budgeted, cost-aware form (gain per unit cost); the others select by count only
COST_AWARE = tuple(name for name, f in OBJECTIVE_FACTS.items() if f.cost_aware)
#: objectives that work from a :class:`~benchsel_lib.method.lowrank.LowRankCorrelation`'s factors (no N x N array)
LOW_RANK_OBJECTIVES = ("entropy", "mi", "random", "lasso")


def check_cost_form(objective: str) -> None:
    """Raise ValueError when ``objective`` has no cost-aware form (it is not in :data:`COST_AWARE`). O(1)."""
    if objective not in COST_AWARE:
        raise ValueError(f"the {objective} objective has no cost-aware form; use "
                         f"{', '.join(COST_AWARE[:-1])} or {COST_AWARE[-1]} with costs")


#: the rules that break a tie between equally good candidates (``tie_break`` of :func:`select`)
TIE_BREAKS: tuple[str, ...] = ("auto", "argmax", "index", "mi")


def check_tie_break(tie_break: Any) -> str:
    """``tie_break`` if it is one of :data:`TIE_BREAKS`; ``ValueError`` naming them otherwise. O(1)."""
    if not isinstance(tie_break, str) or tie_break not in TIE_BREAKS:
        raise ValueError(f"unknown tie_break {tie_break!r}; expected one of {TIE_BREAKS}")
    return tie_break


#: relative slack on the budget (floating-point sums of costs)
_BUDGET_RTOL = 1e-12


def within_budget(cost: float, budget: float) -> bool:
    """Whether ``cost`` fits ``budget``, up to a relative float slack of ``1e-12``.

    Sums of costs carry rounding (``1.2 - 0.1 - 0.1 < 1.0``), which must not
    make an affordable benchmark unaffordable (Appendix B's budget).  O(1).
    """
    return float(cost) <= budget + _BUDGET_RTOL * budget


def too_thin(counts: np.ndarray, min_observed: int | None, *, mandatory: Sequence[int] = ()) -> np.ndarray:
    """Which benchmarks the candidate filter ``min_observed`` removes (a boolean mask).

    Those that fewer than ``min_observed`` training models observe
    (``counts``), never a mandatory one; None removes none.  O(N).
    """
    c = np.asarray(counts)
    thin = np.zeros(c.size, dtype=bool) if min_observed is None else c < min_observed
    thin[list(mandatory)] = False
    return thin


@dataclass
class Selection:
    """Result of :func:`select`.

    Attributes
    ----------
    order : list of int
        Selected benchmark indices in selection order (mandatory ones first).
    names : list of str or None
        Names of the selected benchmarks (when ``names`` was given).
    gains : numpy.ndarray
        Marginal gain of each step in the objective: for ``"entropy"``
        (and ``"random"``) :math:`\\tfrac12\\log(2\\pi e\\, d_j)` (Eq. schur-entropy),
        for ``"mi"`` :math:`\\tfrac12[\\log\\sigma^2_{j|A} - \\log\\sigma^2_{j|\\bar A_j}]`
        (Eq. mi-gain); for the other objectives the entropy gains along the
        order.  Never shifted; see ``shift``.
    residual_fraction : numpy.ndarray
        :math:`\\operatorname{tr}(\\Sigma - L_tL_t^\\top)/\\operatorname{tr}\\Sigma` after each
        step, i.e. the summed conditional variance of the unselected benchmarks
        over the total variance (Lemma 1b).
    logdet : numpy.ndarray
        Cumulative :math:`\\log\\det\\Sigma_{A_tA_t}` after each step.
    mi : numpy.ndarray
        :math:`I(X_{A_t}; X_{\\bar A_t})` after each step (Eq. mi-formula), filled
        for every objective; 0 once the complement is empty.
    objective : str
        One of :data:`OBJECTIVES`.
    strategy : str
        ``"greedy"`` (cardinality), ``"cost-effective"`` or ``"singleton"``
        (which Krause-Guestrin strategy won under a budget), or the objective.
    n_evaluations : int
        Number of marginal-gain evaluations performed by the selection loop
        (mandatory steps and diagnostics not counted); for ``"anchors"`` the
        k-medoids objective evaluations of BUILD and SWAP.
    excluded : list of int
        Candidates removed by ``min_observed`` or ``exclude``.
    shift : float
        Modular shift ``c`` of the entropy objective used under a budget
        (0 otherwise); the shifted marginal is ``gain + shift``.
    total_cost : float or None
        Summed cost of the selection when ``costs`` were given.
    """

    order: list[int]
    names: list[str] | None
    gains: np.ndarray
    residual_fraction: np.ndarray
    logdet: np.ndarray
    mi: np.ndarray
    objective: str
    strategy: str = "greedy"
    n_evaluations: int = 0
    excluded: list[int] = field(default_factory=list)
    shift: float = 0.0
    total_cost: float | None = None

    def __len__(self) -> int:
        return len(self.order)

    def as_frame(self) -> Any:
        """Tidy table, one row per step. O(k) for ``k`` steps.

        Columns: ``step`` (1-based), ``benchmark`` (name, or index when no names),
        ``index``, ``gain``, ``residual_fraction``, ``logdet``, ``mi``.
        """
        labels = self.names if self.names is not None else list(self.order)
        return pd.DataFrame({"step": np.arange(1, len(self.order) + 1), "benchmark": labels,
                             "index": list(self.order), "gain": self.gains,
                             "residual_fraction": self.residual_fraction, "logdet": self.logdet, "mi": self.mi})


class _TieBreaker:
    """Deterministic choice among (near-)equal gains; see :func:`select`."""

    def __init__(
        self, S: np.ndarray, mode: str, tol: float, floor: float, objective: str, variance_keys: bool = False
    ) -> None:
        self.S, self.mode, self.tol, self.floor, self.objective = S, mode, tol, floor, objective
        #: keys are conditional variances (entropy without costs): ties are relative in the variance
        self.variance_keys = variance_keys
        self._r2: np.ndarray | None = None

    def threshold(self, best: float) -> float:
        """Smallest key still tied with ``best``."""
        if self.mode == "argmax":
            return best
        if self.variance_keys:
            return best * (1.0 - self.tol)
        return tie_threshold(best, self.tol)

    def _centrality(self, tied: np.ndarray, selected: np.ndarray) -> np.ndarray:
        if isinstance(self.S, LowRankCorrelation):  # O(N r^2), no N x N array
            return self.S.centrality(tied, selected, self.floor)
        if self._r2 is None:
            dg = np.maximum(np.diag(self.S), self.floor)
            r2 = self.S**2 / np.outer(dg, dg)
            np.fill_diagonal(r2, 0.0)
            self._r2 = r2
        return self._r2[np.ix_(tied, np.flatnonzero(~selected))].sum(axis=1)

    def choose(self, cands: np.ndarray, keys: np.ndarray, state: PivotedCholesky) -> int:
        """Pick from ``cands`` (ascending indices) with primary ``keys``."""
        if self.mode == "argmax":
            return int(cands[int(np.argmax(keys))])
        best = float(keys.max())
        tied = cands[keys >= self.threshold(best)]
        if tied.size == 1 or self.mode == "index":
            return int(tied.min())
        tied = np.sort(tied)
        if self.mode == "auto":
            sec = self._centrality(tied, state.selected)
        elif self.objective != "mi":  # tie_break "mi": the MI gain is the secondary key
            for j in tied:  # the lazy greedy leaves the rows of unevaluated candidates stale
                state.refresh(int(j))
            mi = MutualInformationGain(self.S, self.floor)
            mi.prepare(state)
            sec = mi.gains(state, tied)[0]
        else:  # "mi" tie-break for the MI objective: primary == secondary
            return int(tied[0])
        return int(tied[first_tied(sec, self.tol)])


def _greedy(
    objective: Objective,
    *,
    initial: list[int],
    candidates: np.ndarray,
    k: int,
    costs: np.ndarray | None,
    budget_left: float,
    shift: float,
    tie: _TieBreaker,
    lazy: bool,
    budget_tol: float,
) -> tuple[list[int], list[float], int, dict[int, float]]:
    """The greedy optimizer: mandatory steps, then greedy steps on ``objective``'s gains, eager or lazy (Minoux).

    A candidate's key is the objective's surrogate or, with ``costs``, its gain
    plus ``shift`` per unit cost.  Returns the order, each step's gain, the
    gain evaluations and the unshifted gains at the first greedy step (for the
    best singleton under a budget).  Eager: :math:`O(kN)` gains and
    :math:`O(k^2N)` Cholesky updates, plus the objective's work per step.
    """
    state = PivotedCholesky(objective.S, k, objective.floor)
    step_gains: list[float] = []
    n_eval = 0
    first: dict[int, float] = {}
    add = state.add_lazy if lazy and objective.lazy_rows else state.add
    for p in initial:
        objective.prepare(state)
        step_gains.append(objective.gain(state, p)[0])
        add(p)

    avail = candidates.copy()  # bool mask of still-selectable benchmarks
    avail[state.selected] = False
    heap = [(-math.inf, int(j), -1) for j in np.flatnonzero(avail)] if lazy else []
    heapq.heapify(heap)
    while state.t < k:
        if costs is not None:
            avail &= costs <= budget_left + budget_tol
        if not avail.any():
            break
        objective.prepare(state)
        record = first if state.t == len(initial) else None  # the gains at the first greedy step are recorded
        if not lazy:  # every available candidate's gain
            cands = np.flatnonzero(avail)
            gains, surrogate = objective.gains(state, cands)
            if record is not None:
                record.update(zip(cands.tolist(), gains.tolist()))
            p = tie.choose(cands, surrogate if costs is None else (gains + shift) / costs[cands], state)
            g, n = float(gains[int(np.searchsorted(cands, p))]), int(cands.size)
        else:
            picked = _lazy_step(objective, state, heap, avail, cost=costs, shift=shift, tie=tie, record=record)
            if picked is None:
                break
            p, g, n = picked
        n_eval += n
        step_gains.append(g)
        add(p)
        avail[p] = False
        if costs is not None:
            budget_left -= float(costs[p])
    return state.order, step_gains, n_eval, first


def _lazy_step(objective: Objective, state: PivotedCholesky, heap: list[tuple[float, int, int]],
               avail: np.ndarray, *, cost: np.ndarray | None, shift: float, tie: _TieBreaker,
               record: dict[int, float] | None) -> tuple[int, float, int] | None:
    """One lazy (Minoux) step on the max-heap of stale keys ``(-key, j, step)``: the pick, its gain and the evaluations.

    Pops until the top is fresh, re-evaluates every candidate whose bound reaches
    the tie threshold, lets ``tie`` choose among the tied and pushes the others
    back; None when the heap runs out.
    """
    step = state.t
    n_eval = 0
    fresh: dict[int, float] = {}

    def evaluate(j: int) -> float:
        nonlocal n_eval
        g, surrogate = objective.gain(state, j)
        n_eval += 1
        fresh[j] = g
        if record is not None:
            record[j] = g
        return surrogate if cost is None else float((g + shift) / cost[j])

    # pop until the top of the heap is fresh
    while heap:
        negk, j, stamp = heap[0]
        if not avail[j]:
            heapq.heappop(heap)
            continue
        if stamp == step:
            break
        heapq.heapreplace(heap, (-evaluate(j), j, step))
    if not heap:
        return None
    thr = tie.threshold(-heap[0][0])
    tied: list[tuple[int, float]] = []
    while heap and -heap[0][0] >= thr:
        negk, j, stamp = heapq.heappop(heap)
        if not avail[j]:
            continue
        key = -negk if stamp == step else evaluate(j)  # a fresh key is at least thr (the loop's condition)
        if key < thr:
            heapq.heappush(heap, (-key, j, step))
            continue
        tied.append((j, key))
    tied.sort()
    tc = np.array([j for j, _ in tied], dtype=int)
    tk = np.array([key for _, key in tied])
    p = tie.choose(tc, tk, state)
    for j, key in tied:
        if j != p:
            heapq.heappush(heap, (-key, j, step))
    return p, fresh[p], n_eval


def _krause_guestrin(gain: Objective, order: list[int], step_gains: list[float], first: dict[int, float], *,
                     initial: list[int], k: int, shift: float, tie: _TieBreaker,
                     budgeted: bool) -> tuple[list[int], list[float] | None, str]:
    """The greedy's result, or under a budget the Krause-Guestrin modified greedy (Appendix B).

    That is the better, in the shifted objective, of the cost-effective greedy
    and the best affordable singleton (``first``: the gains at the first
    greedy step).  Returns the order, each step's gain (None when the
    singleton won) and the strategy.  O(k^2 N) under a budget.
    """
    if not budgeted:
        return order, step_gains, "greedy"
    S, floor = gain.S, gain.floor
    if first and len(initial) < k:
        js = np.array(sorted(first))
        gs = np.array([first[j] for j in js])
        j_single = tie.choose(js, gs, pivot_along(S, initial, floor)[0])
        val_single = first[j_single] + shift
        m = len(initial)
        if gain.name == "mi":
            val_greedy = float(np.sum(step_gains[m:]))
        else:  # the entropy of the greedy's picks, recomputed along the order as the selection reports it
            val_greedy = float(entropy_gains_along(S, order, floor)[m:].sum()) + shift * (len(order) - m)
        if val_single > val_greedy:
            return list(initial) + [j_single], None, "singleton"
    return order, step_gains, "cost-effective"


def _random_order(
    candidates: np.ndarray,
    initial: list[int],
    k: int,
    *,
    costs: np.ndarray | None,
    budget_left: float,
    budget_tol: float,
    seed: int | Sequence[int] | np.random.Generator | None,
) -> list[int]:
    """The paper's random baseline: the mandatory benchmarks, then a seeded uniform permutation of the candidates.

    Under a budget a candidate that no longer fits is skipped. O(N).
    """
    rng = np.random.default_rng(check_entropy(seed))  # a Generator is returned as it is
    order = list(initial)
    for j in rng.permutation(np.flatnonzero(candidates)).tolist():
        if len(order) >= k:
            break
        if costs is not None:
            if costs[j] > budget_left + budget_tol:
                continue
            budget_left -= float(costs[j])
        order.append(int(j))
    return order


def _check_costs(costs: object, budget: object, n: int) -> tuple[np.ndarray | None, float | None]:
    if costs is None and budget is None:
        return None, None
    if costs is None or budget is None:
        raise ValueError("costs and budget must be given together")
    c = as_float_array(costs, "costs must be a numeric vector with one cost per benchmark")
    if c.ndim != 1 or c.shape[0] != n:
        raise ValueError(f"costs must have one entry per benchmark ({n}), got shape {c.shape}")
    if not np.isfinite(c).all():
        raise ValueError("costs contain NaN or infinite values")
    if (c <= 0).any():
        bad = np.flatnonzero(c <= 0)[:10].tolist()
        raise ValueError(f"costs must be positive; non-positive cost at index {bad}")
    is_number = isinstance(budget, (int, float, np.integer, np.floating)) and not isinstance(budget, bool)
    if not is_number or not 0 < budget < math.inf:
        raise ValueError(f"budget must be a positive finite number, got {budget!r}")
    return c, float(budget)


def _candidate_mask(
    n: int,
    *,
    init: list[int],
    names: Sequence[str] | None,
    min_observed: int | None,
    observed_counts: object,
    exclude: Sequence[int | str],
) -> tuple[np.ndarray, list[int], list[str]]:
    """The benchmarks the greedy may add (neither mandatory nor removed), those removed (sorted) and why. O(N)."""
    candidates = np.ones(n, dtype=bool)
    excluded: list[int] = []
    counts = None if observed_counts is None else _check_counts(observed_counts, n)
    if min_observed is not None:
        check_int(min_observed, "min_observed", minimum=0)
        if counts is None:
            raise ValueError("min_observed needs observed_counts (models observing each benchmark)")
        thin = too_thin(counts, min_observed, mandatory=init)
        excluded = np.flatnonzero(thin).tolist()
        candidates &= ~thin
    out_of_play = resolve_indices(exclude, n, names, role="excluded")
    both = sorted(set(out_of_play) & set(init))
    if both:
        label = names[both[0]] if names is not None else both[0]
        raise ValueError(f"benchmark {label!r} is both mandatory (initial) and excluded")
    candidates[out_of_play] = False
    why = ([f"min_observed={min_observed} excluded {len(excluded)}"] if excluded else []) + (
        [f"exclude= removed {len(out_of_play)}"] if out_of_play else [])
    excluded = sorted(set(excluded) | set(out_of_play))
    candidates[init] = False
    return candidates, excluded, why


def _check_counts(observed_counts: object, n: int) -> np.ndarray:
    """``observed_counts`` as ``n`` non-negative finite floats; ``ValueError`` otherwise. O(N)."""
    oc = np.asarray(observed_counts, dtype=float)
    if oc.shape != (n,) or not np.isfinite(oc).all() or (oc < 0).any():
        raise ValueError(f"observed_counts must be {n} non-negative finite counts, got shape {oc.shape}")
    return oc


def _resolve_size(
    k: int | None,
    n: int,
    *,
    init: list[int],
    candidates: np.ndarray,
    costs: np.ndarray | None,
    budget: float | None,
    why: list[str],
) -> tuple[int, float, float]:
    """``k`` checked (None: the most the budget pays for, cheapest first), the budget left, its slack. O(N log N)."""
    left, btol = math.inf, 0.0
    max_card = len(init) + int(candidates.sum())
    if costs is not None:  # and so budget (_check_costs)
        btol = _BUDGET_RTOL * budget  # float slack: 1.2 - 0.1 - 0.1 < 1.0 must not make 1.0 unaffordable
        init_cost = float(costs[init].sum())
        if not within_budget(init_cost, budget):
            raise ValueError(f"mandatory benchmarks cost {init_cost:g}, more than the budget {budget:g}")
        left = budget - init_cost
        n_afford = int(np.searchsorted(np.cumsum(np.sort(costs[candidates])), left + btol, side="right"))
        max_card = len(init) + n_afford
        if n_afford == 0 and (k is None or k > len(init)):
            raise ValueError(f"no benchmark is affordable within budget {budget:g}")
        if k is None:
            return max_card, left, btol
    k = check_k(k, n)
    if k < len(init):
        raise ValueError(f"k={k} is smaller than the number of mandatory benchmarks ({len(init)})")
    if k > max_card and costs is None:
        raise ValueError(f"k={k} is out of range: only {max_card} benchmarks are selectable"
                         + (" after " + " and ".join(why) if why else ""))
    if k > max_card:
        raise ValueError(f"k={k} is more than the budget allows: at most {max_card} benchmarks fit in budget "
                         f"{budget:g} (pass k=None for as many as the budget allows)")
    return k, left, btol


@dataclass(frozen=True)
class _Options:
    """The options of :func:`select` with their defaults, declared once (documented there)."""

    objective: str = "entropy"
    initial: Sequence[int | str] = ()
    costs: object = None
    budget: float | None = None
    seed: int | Sequence[int] | np.random.Generator | None = 0
    names: Sequence[str] | None = None
    tie_break: str = "auto"
    tie_tol: float = 1e-10
    min_observed: int | None = None
    observed_counts: object = None
    lazy: bool = False
    train: object = None
    exclude: Sequence[int | str] = ()


#: the keyword options of :func:`select`, in their declared order
_OPTION_NAMES = tuple(f.name for f in fields(_Options))


def select(cov: object, k: int | None, **options: Any) -> Selection:
    """Select ``k`` benchmarks from a covariance (or correlation) matrix: the one selection entry point.

    Parameters
    ----------
    cov : array_like, shape (N, N)
        Symmetric, finite covariance or correlation matrix, not necessarily
        positive semi-definite (the paper's pairwise estimate often is not):
        a residual variance below the floor (1e-12 of the largest variance),
        negative ones included, counts as the floor.  A
        :class:`~benchsel_lib.method.lowrank.LowRankCorrelation` (rank ``r``)
        is used through its factors by the objectives of
        :data:`LOW_RANK_OBJECTIVES` without costs -- entropy :math:`O(k^2 N
        + k r N)`, MI :math:`O(k N r^2)` (Woodbury), lasso without N x N
        products, the diagnostics by the matrix determinant lemma -- and
        formed densely for the others.
    k : int or None
        Number of benchmarks, mandatory ones included, in ``1..N``.  Under a
        budget an upper bound, or None for as many as the budget allows.

    Other Parameters
    ----------------
    objective : str, default "entropy"
        One of :data:`OBJECTIVES`; those of :data:`COST_AWARE` take costs,
        those of :data:`NEEDS_TRAIN` need ``train``.

        * ``"entropy"``: greedy :math:`H(X_A)`, i.e. pivoted Cholesky (Algorithm 1).
        * ``"mi"``: greedy :math:`I(X_A;X_{\\bar A})` (Algorithm 2), the
          complement's precision diagonal from a fresh Cholesky each step
          (clamped eigendecomposition when near-singular, Appendix C).
        * ``"random"``: a uniform random order from ``numpy.random.default_rng(seed)``.
        * ``"lasso"``: the entry order of the multi-target group-lasso path (:func:`lasso_path_order`).
        * ``"greedy"``: forward selection on the leave-one-out R^2 of ridge on ``train`` (:func:`predictive_greedy`).
        * ``"anchors"``: the ``k`` medoids of PAM on :math:`1 - R_{ij}^2`
          (:func:`~benchsel_lib.method.medoids.k_medoids`), mandatory ones
          fixed; not nested in ``k``.
        * ``"sparse"``: per-target Lasso, strength cross-validated on
          ``train`` (:func:`~benchsel_lib.method.sparse.sparse_order`; at least 10 rows).
        * ``"mean-lasso"``: the Lasso path of the mean score, BenchPred's rule
          (:func:`~benchsel_lib.method.sparse.mean_lasso_order`).
        * ``"imputed-lasso"``: that Lasso on the mean-imputed ``train``; not
          nested in ``k`` (:func:`~benchsel_lib.method.sparse.imputed_lasso_order`).
        * ``"trace"``: greedy minimization of :math:`\\operatorname{tr}(\\Sigma_{\\bar A|A})`
          (:func:`~benchsel_lib.method.objectives.residual_trace_greedy`).
        * ``"imputed-trace"``: the same on the second moments of the
          mean-imputed ``train`` (:func:`~benchsel_lib.method.sparse.imputed_gram`).
    initial : sequence of int or str
        Mandatory benchmarks (indices, or names with ``names``), first in
        this order (Section 6); never removed by ``min_observed``.
    costs, budget : array_like (N,), float
        Knapsack constraint :math:`\\sum_{j\\in A} c_j \\le \\mathcal C`
        (Eq. budget-max), mandatory benchmarks included, by the
        Krause-Guestrin modified greedy (Appendix B): the cost-effective
        greedy on :math:`\\Delta_c(j|A)/c_j` against the best affordable
        singleton, the better in the shifted objective (``strategy``).  For
        entropy :math:`\\Delta_c = \\tfrac12\\log(2\\pi e\\,d_j) + c`, :math:`c =
        \\max(0, -\\tfrac12\\log(2\\pi e\\,\\max(\\lambda_{\\min}, \\mathrm{floor})))`,
        so every marginal is non-negative and Theorem 3's
        :math:`\\tfrac12(1-1/e)` holds; for MI (non-monotone) the rule is a
        heuristic; ``"random"`` skips what no longer fits.
    seed : int, sequence of int, Generator or None, default 0
        The random order's seed (``"random"`` only); None draws fresh entropy.
    names : sequence of str, optional
        Benchmark names (N of them), for names in ``initial``/``exclude`` and ``.names``.
    tie_break : {"auto", "argmax", "index", "mi"}
        Candidates whose key is within ``tie_tol * max(1, |best|)`` of the
        best tie (every first entropy gain on a correlation does).
        ``"auto"``: the most central, largest
        :math:`\\sum_{j\\notin A, j\\ne i}\\Sigma_{ij}^2/(\\Sigma_{ii}\\Sigma_{jj})`,
        then the lowest index.  ``"argmax"``: ``numpy.argmax``, no tolerance
        (the paper's code, whose first pick is set by the rounding of the
        diagonal, :func:`benchsel_lib.studies.first_pick.rounded_diagonal`).
        ``"index"``: the lowest index.  ``"mi"``: the largest MI gain, then
        the lowest index.
    tie_tol : float, default 1e-10
        Relative tolerance of a tie.
    min_observed : int, optional
        Drop candidates observed by fewer training models (``observed_counts``,
        needed); they stay in the predicted rest.  None (the paper) drops none.
    observed_counts : array_like (N,), optional
        Models observing each benchmark.
    lazy : bool, default False
        Lazy greedy (Minoux; Appendix B): a max-heap of stale gains, upper
        bounds by submodularity; the same selection (every candidate whose
        bound reaches the tie threshold is re-evaluated) with fewer gain
        evaluations.  Entropy refreshes a Cholesky row only when evaluated;
        MI's complement refactorization stays eager.  At the paper's sizes the
        eager loop is faster in wall time.
    train : array_like (M, N), optional
        Standardized training rows (NaN missing), for :data:`NEEDS_TRAIN`.
    exclude : sequence of int or str
        Never candidates (e.g. constant columns), still in the predicted rest;
        not also mandatory.

    Returns
    -------
    Selection
        For every objective but ``"mi"`` the gains are the entropy gains along the order.

    Raises
    ------
    ValueError
        Bad covariance, ``k`` out of range, unknown objective or tie rule,
        bad mandatory benchmarks, costs or budget, nothing affordable, too few
        candidates, a benchmark mandatory and excluded, a missing or
        misshapen ``train``.
    TypeError
        An unknown option (the message lists them).

    Notes
    -----
    Complexity: entropy :math:`O(k^2N)`, MI :math:`O(kN^3)`, both plus
    :math:`O(N^3)` once for the MI diagnostic; anchors :math:`O(N^2 +
    \\text{iterations}\\cdot k(N-k)N)`; sparse six multi-target Lasso paths
    of 20 strengths, each at most :math:`O(2000 N^3)`, plus five fold
    correlations :math:`O(MN^2 + N^3)`; mean-lasso :math:`O(N^3)` plus 400
    strengths of :math:`O(N^2)` sweeps; imputed-lasso :math:`O(MN^2)` plus
    :math:`O(k^2 + kN)` sweeps per strength; trace :math:`O(kN^2)`;
    imputed-trace :math:`O(MN^2 + kN^2)`; budgets add nothing asymptotically.
    """
    unknown = sorted(set(options) - set(_OPTION_NAMES))
    if unknown:
        raise TypeError(f"select() got an unexpected keyword argument {unknown[0]!r}; "
                        f"its options are {', '.join(_OPTION_NAMES)}")
    o = _Options(**options)
    S, objective, lazy, tol, names = _check_options(cov, o)
    n = S.shape[0]
    floor = variance_floor(S)
    init = resolve_indices(o.initial, n, names, role="mandatory")
    c, b = _check_costs(o.costs, o.budget, n)
    if c is not None:
        check_cost_form(objective)
    tr = _check_train(objective, o.train, n)
    candidates, excluded, why = _candidate_mask(n, init=init, names=names, min_observed=o.min_observed,
                                                observed_counts=o.observed_counts, exclude=o.exclude)
    k, left, btol = _resolve_size(k, n, init=init, candidates=candidates, costs=c, budget=b, why=why)
    shift = 0.0
    if c is not None and objective == "entropy":  # Appendix B: every conditional variance is at least lambda_min
        shift = max(0.0, -entropy_gain(max(float(np.linalg.eigvalsh(S)[0]), floor), log=math.log))
    gain = _GAINS[objective](S, floor) if objective in _GAINS else None
    tie = _TieBreaker(S, o.tie_break, tol, floor, objective, variance_keys=gain is not None and gain.key_is_variance
                      and c is None)
    n_eval = 0
    step_gains: list[float] | None = None
    strategy = objective
    if gain is not None:
        order, step_gains, n_eval, first = _greedy(gain, initial=init, candidates=candidates, k=k, costs=c,
                                                   budget_left=left, shift=shift, tie=tie, lazy=lazy, budget_tol=btol)
        order, step_gains, strategy = _krause_guestrin(gain, order, step_gains, first, initial=init, k=k,
                                                       shift=shift, tie=tie, budgeted=c is not None)
    elif objective == "random":
        order = _random_order(candidates, init, k, costs=c, budget_left=left, budget_tol=btol, seed=o.seed)
    else:
        order, n_eval = _other_order(objective, S, tr, k, init=init, candidates=candidates, floor=floor, tol=tol,
                                     costs=c, budget=b)
    diag_out = trace_order(S, order, floor)
    if objective == "mi":
        gains = np.asarray(step_gains) if step_gains is not None else gains_along(gain, order)
    else:
        gains = diag_out["gains"]
    return Selection(order=[int(j) for j in order], names=[names[j] for j in order] if names is not None else None,
                     gains=np.asarray(gains, dtype=float), residual_fraction=diag_out["residual_fraction"],
                     logdet=diag_out["logdet"], mi=diag_out["mi"], objective=objective, strategy=strategy,
                     n_evaluations=int(n_eval), excluded=excluded, shift=float(shift),
                     total_cost=float(c[order].sum()) if c is not None else None)


def _check_options(cov: object, o: _Options) -> tuple[Any, str, bool, float, list[str] | None]:
    """:func:`select`'s checks of ``cov``, the objective, tie rule, ``lazy``, ``tie_tol`` and ``names``. O(N^2).

    ``cov`` stays low-rank for an objective of :data:`LOW_RANK_OBJECTIVES` without costs (a budget's entropy
    shift needs the smallest eigenvalue).  Returns the matrix, the objective in lower case, ``lazy``, the
    tolerance and the names as strings.
    """
    objective, names = o.objective, o.names
    low_rank = isinstance(objective, str) and objective.lower() in LOW_RANK_OBJECTIVES and o.costs is None
    S = cov if isinstance(cov, LowRankCorrelation) and low_rank else check_covariance(cov)
    n = S.shape[0]
    if not isinstance(objective, str) or objective.lower() not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; expected one of {OBJECTIVES}")
    check_tie_break(o.tie_break)
    lazy = check_bool(o.lazy, "lazy")
    tol = check_nonnegative(o.tie_tol, "tie_tol")
    if names is not None:
        names = [str(s) for s in names]
        if len(names) != n:
            raise ValueError(f"names has {len(names)} entries but cov has {n} benchmarks")
        if len(set(names)) != n:
            raise ValueError("names contains duplicates")
    if float(S.diagonal().max()) <= 0.0:
        raise ValueError("cov has zero total variance")
    return S, objective.lower(), lazy, tol, names


def _check_train(objective: str, train: object, n: int) -> np.ndarray | None:
    """The training rows an objective of :data:`NEEDS_TRAIN` reads, checked (None for the others). O(M N)."""
    if objective not in NEEDS_TRAIN:
        return None
    if train is None:
        raise ValueError(f"objective {objective!r} needs train= (the standardized training rows)")
    tr = check_train(train)  # a fold may miss a benchmark
    if tr.shape[1] != n:
        raise ValueError(f"train must be (models x {n} benchmarks), got shape {tr.shape}")
    if np.isnan(tr).all():
        raise ValueError("train has no observed score")
    return tr


def _other_order(objective: str, S: np.ndarray, tr: np.ndarray | None, k: int, *, init: list[int],
                 candidates: np.ndarray, floor: float, tol: float, costs: np.ndarray | None,
                 budget: float | None) -> tuple[list[int], int]:
    """The order of an objective other than entropy, MI and random (:func:`select`), and its gain evaluations."""
    with_mandatory = candidates.copy()
    with_mandatory[init] = True
    n_eval = 0
    if objective == "lasso":
        order = lasso_path_order(S, k, initial=init, candidates=with_mandatory)
    elif objective == "anchors":
        medoids = k_medoids(anchor_dissimilarity(S), k, fixed=init, candidates=candidates)
        order, n_eval = medoids.order, medoids.n_evaluations
    elif objective == "sparse":
        order = sparse_order(S, tr, k, initial=init, candidates=with_mandatory).order
    elif objective == "mean-lasso":
        order = mean_lasso_order(S, k, initial=init, candidates=with_mandatory)
    elif objective == "imputed-lasso":
        order = imputed_lasso_order(tr, k, initial=init, candidates=with_mandatory)
    elif objective == "trace":
        order = residual_trace_greedy(S, k, initial=init, candidates=candidates, floor=floor, tie_tol=tol)
    elif objective == "imputed-trace":
        G = imputed_gram(tr)
        order = residual_trace_greedy(G, k, initial=init, candidates=candidates, floor=variance_floor(G),
                                      tie_tol=tol)
    else:  # "greedy"
        order = predictive_greedy(tr, k, initial=init, candidates=with_mandatory, costs=costs, budget=budget)
    return order, n_eval


def predictive_greedy(
    train: np.ndarray,
    k: int,
    *,
    initial: Sequence[int] = (),
    candidates: np.ndarray | None = None,
    costs: np.ndarray | None = None,
    budget: float | None = None,
    max_candidates: int = 20,
    predictor: RidgePredictor | None = None,
) -> list[int]:
    """Forward selection maximizing the leave-one-out R^2 of per-target ridge on the training models.

    Objective of a set ``S``: ``1 - sum_j SS_res(j) / sum_j SS_tot(j)`` over
    targets ``j`` outside ``S``, over the models observing ``j`` and some of
    ``S``: those observing all of ``S`` enter ``SS_res`` with their exact ridge
    LOO residuals (strength chosen by LOO), the others with ``z^2``.  The first
    step scores every candidate, later ones the ``max_candidates`` best of the
    first (O(N^2 + k max_candidates N) ridge fits).  With ``costs`` and
    ``budget``: gain per unit cost among the affordable.
    """
    tr = np.asarray(train, dtype=float)
    m, N = tr.shape
    pr = predictor or RidgePredictor()
    tm = ~np.isnan(tr)
    z2 = np.where(tm, tr, 0.0) ** 2
    cand = np.ones(N, dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool).copy()
    chosen = [int(i) for i in initial]
    spent = 0.0 if costs is None else float(np.sum(np.asarray(costs)[chosen]))
    pool: np.ndarray | None = None
    while len(chosen) < k:
        free = _free_candidates(cand, chosen, pool, costs=costs, budget=budget, spent=spent)
        if not free:
            break
        base = _loo_r2(tr, tm, z2, chosen, pr) if chosen else 0.0
        gains = np.array([_loo_r2(tr, tm, z2, chosen + [c], pr) - base for c in free])
        if costs is not None:
            gains = gains / np.maximum(np.asarray(costs, dtype=float)[free], 1e-300)
        best = int(np.argmax(gains))  # first maximum: lowest listed column on ties
        if pool is None:
            keep = np.argsort(-gains, kind="stable")[:max_candidates]
            pool = np.asarray(free)[keep]
        chosen.append(int(free[best]))
        if costs is not None:
            spent += float(costs[free[best]])
    return chosen


def _free_candidates(cand: np.ndarray, chosen: list[int], pool: np.ndarray | None, *, costs: np.ndarray | None,
                     budget: float | None, spent: float) -> list[int]:
    """:func:`predictive_greedy`'s candidates at one step: the screened pool (or every candidate), affordable. O(N)."""
    free = [c for c in np.flatnonzero(cand).tolist() if c not in chosen]
    if pool is not None:
        free = [c for c in pool.tolist() if c not in chosen] or free
    if costs is not None and budget is not None:
        free = [c for c in free if within_budget(spent + float(costs[c]), budget)]
    return free


def _loo_r2(tr: np.ndarray, tm: np.ndarray, z2: np.ndarray, S: list[int], pr: RidgePredictor) -> float:
    """:func:`predictive_greedy`'s objective of the set ``S``: the pooled leave-one-out R^2 of the other targets.

    ``tm``: observed mask of ``tr``; ``z2``: its squared scores (0 where
    missing). O(N) ridge fits (:func:`~benchsel_lib.method.regression.ridge_loo_batch`).
    """
    N = tr.shape[1]
    Sarr = np.asarray(S)
    any_s = tm[:, Sarr].any(axis=1)
    all_s = tm[:, Sarr].all(axis=1)
    targets = np.setdiff1d(np.arange(N), Sarr)
    fit = ridge_loo_batch(tr, Sarr, targets, alphas=pr.alphas, observed=tm)
    rows = tm[:, targets] & any_s[:, None]
    tot_j = (z2[:, targets] * rows).sum(axis=0)
    miss_j = (z2[:, targets] * (rows & ~all_s[:, None])).sum(axis=0)
    ok = pr.enough_rows(fit["n"], len(S)) & np.isfinite(fit["mse"])
    res_j = np.where(ok, fit["n"] * np.nan_to_num(fit["mse"]) + miss_j, tot_j)
    tot = float(tot_j.sum())
    return 1.0 - float(res_j.sum()) / tot if tot > 0 else -np.inf


def lasso_path_order(
    cov: np.ndarray, k: int, *, initial: Sequence[int] = (), candidates: np.ndarray | None = None,
    n_iter: int = 200,
) -> list[int]:
    """First ``k`` benchmarks to enter the multi-target group-lasso path on a correlation matrix.

    The loss ``L(B) = tr(R) - 2 tr(B^T R_{A.}) + tr(B^T R_AA B)`` is the
    population squared error of predicting every benchmark from the active set
    ``A``; a candidate ``c`` enters when its gradient norm ``||2 (R_{c.} - R_{cA}
    B)||_2`` reaches the penalty ``lam``.  From the mandatory benchmarks (or the
    largest ``||R_{c.}||``, the first knot), knot by knot: solve the active
    problem at ``lam`` by proximal gradient (``n_iter`` warm-started steps), set
    ``lam`` to the largest inactive gradient norm and add that benchmark (never
    removed).  Deterministic; O(k (n_iter k^2 N + k N^2)).  A
    :class:`~benchsel_lib.method.lowrank.LowRankCorrelation` of rank ``r`` gives
    the norms from its factors: O(k (n_iter k^2 N + k r N + N r^2)).
    """
    R = as_correlation_matrix(cov)
    N = R.shape[0]
    cand = np.ones(N, dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool)
    active = [int(i) for i in initial]
    if isinstance(R, LowRankCorrelation):  # ||r_c||^2 = d_c^2 + 2 d_c ||w_c||^2 + w_c^T (W^T W) w_c, O(N r^2)
        W, d = R.W, R.d
        sq = d * d + 2.0 * d * np.einsum("ij,ij->i", W, W) + np.einsum("ij,jk,ik->i", W, W.T @ W, W)
        row_norms = np.sqrt(np.maximum(sq, 0.0))
    else:
        row_norms = np.linalg.norm(R, axis=1)
    if not active:
        active = [int(np.argmax(np.where(cand, row_norms, -np.inf)))]
    lam = 2.0 * float(np.max(np.where(cand, row_norms, 0.0)))
    B = np.zeros((len(active), N))
    while True:
        A = np.asarray(active)
        RAA, RA = R[np.ix_(A, A)], R[A, :]
        if B.shape[0] < A.size:
            B = np.vstack([B, np.zeros((A.size - B.shape[0], N))])
        step = 1.0 / (2.0 * max(float(np.linalg.eigvalsh(RAA)[-1]), 1e-12))
        for _ in range(n_iter):  # B - step 2 (RAA B - RA), shrunk by max(0, 1 - step lam / ||row||), in place
            G = RAA @ B
            G -= RA
            G *= 2.0
            G *= step
            Bn = np.subtract(B, G, out=G)
            nr = np.sqrt(np.add.reduce(Bn * Bn, axis=1, keepdims=True))  # np.linalg.norm's sum
            nr = np.subtract(1.0, np.divide(step * lam, np.maximum(nr, 1e-300, out=nr), out=nr), out=nr)
            B = np.multiply(Bn, np.maximum(0.0, nr, out=nr), out=Bn)
        if len(active) >= k:
            break
        if isinstance(R, LowRankCorrelation):  # ||r_c||^2 - 2 R_cA (B r_c) + R_cA (B B^T) R_Ac, O(k r N + k^2 N)
            Br = B * R.d[None, :] + (B @ R.W) @ R.W.T  # (k, N): column c is B r_c
            sq = row_norms**2 - 2.0 * np.einsum("ac,ac->c", RA, Br) + np.einsum("ac,ab,bc->c", RA, B @ B.T, RA)
            g = 2.0 * np.sqrt(np.maximum(sq, 0.0))
        else:
            g = np.linalg.norm(2.0 * (R - R[:, A] @ B), axis=1)
        g[A] = -np.inf
        g[~cand] = -np.inf
        nxt = int(np.argmax(g))
        if not np.isfinite(g[nxt]):
            break
        lam = min(lam, float(g[nxt]))
        active.append(nxt)
    return active[:k]

