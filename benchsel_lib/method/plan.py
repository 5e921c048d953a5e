"""The cost model of the recommended pipeline's search and its plan for big matrices.

Before any work, :func:`plan_search` estimates the operations of the inner search (:func:`search_cost`).
Above :data:`SEARCH_BUDGET` the inner cross-validation runs on seeded subsamples of the models and/or the
benchmarks and costly selectors are left out; the final selection and fits use every model and benchmark.
The paper's matrices (at most 263 models and 114 benchmarks) lie far below the floors.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._random import rng
from .correlation import EM_MAX_MISSING, em_too_costly
from .candidates import DEFAULT_PREDICTORS, DEFAULT_SELECTORS
from .predictors import predictor_cost
from .selection import OBJECTIVE_FACTS
from .selectors import Selector, selector_named

__all__ = ["SearchPlan", "plan_search", "search_cost", "selection_cost", "SEARCH_BUDGET", "SEARCH_MIN_MODELS",
           "SEARCH_MIN_BENCHMARKS", "SELECTION_BUDGET"]

#: estimated operations (:func:`search_cost`) above which the inner search runs on subsamples (about
#: ten seconds on one core)
SEARCH_BUDGET = 3e10
#: a subsample of the models keeps at least this many (a matrix with no more models is never subsampled)
SEARCH_MIN_MODELS = 2000
#: a subsample of the benchmarks keeps at least this many (a matrix with no more is never subsampled)
SEARCH_MIN_BENCHMARKS = 1000
#: a candidate selector whose selection on every benchmark is estimated above this many operations
#: (:func:`selection_cost`) is left out of a search that has other candidates
SELECTION_BUDGET = 1e12


def selection_cost(objective: str, n_benchmarks: int, k: int, *, n_models: int = 0) -> float:
    """Estimated operations of one selection of ``k`` among ``n_benchmarks``, the objective's own estimate
    (:data:`~benchsel_lib.method.selection.OBJECTIVE_FACTS`). O(1)."""
    return OBJECTIVE_FACTS[objective].cost(float(n_benchmarks), float(k), float(n_models))


def _correlation_cost(m: float, N: float, observed: float) -> float:
    """Estimated operations of :func:`~benchsel_lib.method.correlation.inner_correlation` of ``m`` rows."""
    if observed < 1.0 - EM_MAX_MISSING or em_too_costly(int(m), int(N)) or (observed >= 1.0 and m >= N):
        if observed >= 1.0 and m < N:  # complete and wide: the low-rank route
            return 2.0 * m * m * N + 2.0 * m * N * N
        return 2.0 * m * N * N + 9.0 * N**3  # two products and one eigendecomposition
    s = observed * N  # EM: about 30 iterations of block factorizations, products and the N x N updates
    return 30.0 * (m * min(s, N - s) ** 3 / 3.0 + 2.0 * m * N * N + 10.0 * N**3)


def search_cost(
    n_models: int,
    n_benchmarks: int,
    *,
    k: int,
    selectors: Sequence[str | Selector] = DEFAULT_SELECTORS,
    predictors: Sequence[str] = DEFAULT_PREDICTORS,
    n_ks: int = 1,
    n_folds: int = 5,
    observed: float = 1.0,
) -> float:
    """Estimated operations of :func:`~benchsel_lib.method.inner_search.pipeline_path` on an ``n_models x n_benchmarks`` training matrix. O(1).

    Per inner fold (``m - m / F`` training rows, ``m / F`` query rows): the fold's correlation, one
    selection per selector (:func:`selection_cost`; ``"given"``: none) and, for each of the ``n_ks`` subset
    sizes of each selector, every predictor (its own estimate,
    :data:`~benchsel_lib.method.predictors.PREDICTORS`).  About 2e9 of these operations take a second on
    one core; the estimate orders the work, it does not promise seconds.

    Parameters
    ----------
    n_models, n_benchmarks : int
    k : int
        The largest subset size.
    selectors, predictors : sequences
        The candidates (``"given"``: a given revealed set, no selection).
    n_ks : int
        Subset sizes scored per selector.
    n_folds : int
    observed : float
        Observed fraction of the entries.

    Returns
    -------
    float
    """
    m, N, k = float(n_models), float(n_benchmarks), float(max(1, int(k)))
    F = float(max(2, int(n_folds)))
    m_t, v = m - m / F, m / F
    sels = [None if s == "given" else selector_named(s) for s in selectors]
    fold = _correlation_cost(m_t, N, float(observed))
    fold += sum(selection_cost(sel.objective, int(N), int(k), n_models=int(m_t)) for sel in sels if sel is not None)
    # in the order given (not a set's): the same sum in every process
    fold += len(sels) * n_ks * sum(predictor_cost(p, m_t, v, N, k) for p in dict.fromkeys(predictors))
    return F * fold


@dataclass(frozen=True)
class SearchPlan:
    """How :func:`~benchsel_lib.method.inner_search.pipeline_path` runs its inner cross-validation (see :func:`plan_search`).

    Attributes
    ----------
    rows, columns : ndarray of int or None
        The models and benchmarks the inner cross-validation uses (sorted; None: all).
    left_out : tuple of str
        Candidate selectors left out (over :data:`SELECTION_BUDGET`).
    cost, planned : float
        Estimated operations of the full and of the planned search.
    shape : (int, int)
    seed : int
    budget : float
    given : bool
        The search only chooses a predictor for a given revealed set.
    """

    rows: np.ndarray | None
    columns: np.ndarray | None
    left_out: tuple[str, ...]
    cost: float
    planned: float
    shape: tuple[int, int]
    seed: int = 0
    budget: float = SEARCH_BUDGET
    given: bool = False

    @property
    def full(self) -> bool:
        """Whether the search runs on every model and benchmark with every candidate. O(1)."""
        return self.rows is None and self.columns is None and not self.left_out

    def note(self) -> str | None:
        """The plan in one line (None for the full search). O(1)."""
        if self.full:
            return None
        m, N = self.shape
        sub = [f"{drawn.size:,} of the {n:,} {what}"
               for drawn, n, what in ((self.rows, m, "models"), (self.columns, N, "benchmarks")) if drawn is not None]
        parts = []
        if sub:
            parts.append(f"its inner cross-validation runs on a seeded subsample of {' and '.join(sub)} "
                         f"(seed {self.seed})")
        if self.left_out:
            parts.append(f"{', '.join(self.left_out)} left out of the candidates (its selection on {N:,} benchmarks "
                         f"is estimated over {SELECTION_BUDGET:.0e} operations)")
        tail = "fit uses" if self.given else "selection and fit use"
        return (f"the inner search on {m:,} models x {N:,} benchmarks is estimated at {self.cost:.1e} operations, "
                f"over the budget of {self.budget:.0e}: {'; '.join(parts)}, estimated at {self.planned:.1e}; "
                f"the final {tail} every model and benchmark")


def plan_search(
    n_models: int,
    n_benchmarks: int,
    *,
    k: int,
    selectors: Sequence[str | Selector] = DEFAULT_SELECTORS,
    predictors: Sequence[str] = DEFAULT_PREDICTORS,
    n_ks: int = 1,
    n_folds: int = 5,
    observed: float = 1.0,
    keep: Sequence[int] = (),
    seed: int = 0,
    budget: float | None = None,
) -> SearchPlan:
    """Choose, before any work, how the inner search of :func:`~benchsel_lib.method.inner_search.pipeline_path` runs.

    Within ``budget`` (default :data:`SEARCH_BUDGET`) estimated operations (:func:`search_cost`, whose
    parameters these are) the search runs on everything.  Otherwise, in this order: a selector whose
    selection costs more than :data:`SELECTION_BUDGET` is left out (when another remains); with more than
    :data:`SEARCH_MIN_BENCHMARKS` benchmarks, the largest seeded subsample of them (the ``keep`` columns
    always in) whose selections and correlations fit half the budget; with more than
    :data:`SEARCH_MIN_MODELS` models, the largest seeded subsample of them whose whole search fits the
    budget.  Subsamples are uniform without replacement from the streams ``(seed, 12)`` (models) and
    ``(seed, 13)`` (benchmarks), sorted.  O(log(M) + log(N)) cost evaluations plus the draws.

    Parameters
    ----------
    n_models, n_benchmarks : int
    k, selectors, predictors, n_ks, n_folds, observed
        As for :func:`search_cost`.
    keep : sequence of int
        Columns every subsample of the benchmarks keeps (mandatory and given ones).
    seed : int
    budget : float, optional

    Returns
    -------
    SearchPlan
    """
    m, N = int(n_models), int(n_benchmarks)
    budget = SEARCH_BUDGET if budget is None else float(budget)
    given = list(selectors) == ["given"]
    kw = {"k": k, "predictors": predictors, "n_ks": n_ks, "n_folds": n_folds, "observed": observed}
    cost = search_cost(m, N, selectors=selectors, **kw)
    if cost <= budget:
        return SearchPlan(None, None, (), cost, cost, (m, N), int(seed), budget, given)
    sels = [None if s == "given" else selector_named(s) for s in selectors]
    costly = [sel.label for sel in sels
              if sel is not None and selection_cost(sel.objective, N, k, n_models=m) > SELECTION_BUDGET]
    if len(costly) == len(sels):
        costly = []
    kept = [s for s, sel in zip(selectors, sels) if sel is None or sel.label not in costly]

    def largest(lo: int, hi: int, fits) -> int:
        """The largest n in [lo, hi] with fits(n) (lo when none)."""
        if fits(hi):
            return hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo

    no_fits = {**kw, "predictors": ()}  # the selections and correlations (no predictor) within half the budget
    n_cols = largest(min(N, SEARCH_MIN_BENCHMARKS), N,
                     lambda n: search_cost(max(m, 2), n, selectors=kept, **no_fits) <= budget / 2.0)
    n_rows = largest(min(m, SEARCH_MIN_MODELS), m, lambda r: search_cost(r, n_cols, selectors=kept, **kw) <= budget)
    rows = columns = None
    if n_rows < m:
        rows = np.sort(rng(int(seed), 12).choice(m, n_rows, replace=False))
    if n_cols < N:
        forced = np.unique(np.asarray(list(keep), dtype=int))
        rest = np.setdiff1d(np.arange(N), forced)
        extra = rng(int(seed), 13).choice(rest.size, max(0, n_cols - forced.size), replace=False)
        columns = np.sort(np.concatenate([forced, rest[extra]]))
    planned = search_cost(n_rows, n_cols, selectors=kept, **kw)
    return SearchPlan(rows, columns, tuple(costly), cost, planned, (m, N), int(seed), budget, given)


