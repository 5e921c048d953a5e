"""Selection strategies beyond the paper's greedy entropy / MI / random (extensions).

:func:`select_benchmarks` returns an ordered list of benchmark columns for a
standardized training matrix.  Strategies (names in :data:`STRATEGIES`):

* ``"entropy"``, ``"mi"``, ``"random"`` -- :func:`benchsel_lib.selection.select`
  (Algorithms 1 and 2, the paper's baseline) on the training correlation.
* ``"entropy-obs"``, ``"mi-obs"`` -- the same with a ``min_observed`` filter:
  only benchmarks observed by at least ``ceil(obs_fraction * m)`` training
  models (default 30 %) are candidates.  On sparse leaderboards a rarely run
  benchmark has a noisy correlation and is missing for most new models.
* ``"greedy"`` -- *predictive greedy*: forward selection that adds the
  benchmark maximizing the leave-one-out R^2 of per-target ridge regression
  (:class:`~benchsel_lib.predictors.RidgePredictor`'s fits; exact LOO from
  :func:`~benchsel_lib.predictors.ridge_loo`) on the training models.
* ``"lasso"`` -- the order in which benchmarks enter a multi-target group-lasso
  path ``min_B E||z - B^T z_A||^2 + lam sum_a ||B_a||_2`` computed from the
  training correlation (column-subset selection with a group penalty; the
  L1-path idea of lasso-style benchmark selection).

All are deterministic given ``seed`` (only ``"random"`` draws), put the
mandatory ``initial`` benchmarks first, and honour ``min_observed``.
Costs / budget: supported by entropy, MI and random (Krause-Guestrin modified
greedy of :func:`~benchsel_lib.selection.select`) and by ``"greedy"`` (gain per
unit cost while affordable, without the singleton check); ``"lasso"`` has no
cost-aware form and raises when costs are given.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._checks import check_int
from .._memo import LRUMemo, array_key
from .correlation import inner_correlation
from .regression import RidgePredictor, ridge_loo_batch
from .selection import select

__all__ = [
    "STRATEGIES",
    "select_benchmarks",
    "predictive_greedy",
    "lasso_path_order",
    "min_observed_for",
    "OBS_FRACTION",
]


STRATEGIES = ("mi", "entropy", "random", "mi-obs", "entropy-obs", "greedy", "lasso")


OBS_FRACTION = 0.3


def min_observed_for(n_train: int, fraction: float = OBS_FRACTION) -> int:
    """The ``min_observed`` of the ``*-obs`` strategies: ``ceil(fraction * n_train)``, at least 1."""
    return max(1, int(math.ceil(fraction * n_train)))


def _candidates(counts: np.ndarray, min_observed: int | None, initial: Sequence[int]) -> np.ndarray:
    ok = np.ones(counts.size, dtype=bool) if min_observed is None else counts >= min_observed
    ok[list(initial)] = True
    return ok


def _check_k(k: Any, n_cand: int, n_init: int) -> int:
    k = check_int(k, "k")
    if k > n_cand:
        raise ValueError(f"k={k} is larger than the {n_cand} candidate benchmarks left by the min_observed filter")
    if k < n_init:
        raise ValueError(f"k={k} is smaller than the {n_init} mandatory (initial) benchmarks")
    return int(k)


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
    targets ``j`` outside ``S``.  For each target the models observing it and
    at least one benchmark of ``S`` count; those that observe all of ``S``
    enter ``SS_res`` with their exact ridge LOO residuals (strength chosen by
    LOO), the others with ``z^2`` (unexplained, as a model lacking a selected
    benchmark is harder to predict).  ``SS_tot = sum z^2`` over the same rows.
    The first step scores every candidate; later steps only the
    ``max_candidates`` best first-step candidates (a screen that keeps the
    cost at O(N^2 + k max_candidates N) ridge fits).  With ``costs`` and
    ``budget`` the gain per unit cost is maximized among affordable candidates.
    """
    tr = np.asarray(train, dtype=float)
    m, N = tr.shape
    pr = predictor or RidgePredictor()
    tm = ~np.isnan(tr)
    z2 = np.where(tm, tr, 0.0) ** 2
    cand = np.ones(N, dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool).copy()
    chosen = [int(i) for i in initial]
    spent = 0.0 if costs is None else float(np.sum(np.asarray(costs)[chosen]))

    def score(S: list[int]) -> float:
        Sarr = np.asarray(S)
        any_s = tm[:, Sarr].any(axis=1)
        all_s = tm[:, Sarr].all(axis=1)
        targets = np.setdiff1d(np.arange(N), Sarr)
        fit = ridge_loo_batch(tr, Sarr, targets, pr.alphas, observed=tm)
        rows = tm[:, targets] & any_s[:, None]
        tot_j = (z2[:, targets] * rows).sum(axis=0)
        miss_j = (z2[:, targets] * (rows & ~all_s[:, None])).sum(axis=0)
        ok = (fit["n"] >= max(pr.min_rows, len(S) + 2)) & np.isfinite(fit["mse"])
        res_j = np.where(ok, fit["n"] * np.nan_to_num(fit["mse"]) + miss_j, tot_j)
        tot = float(tot_j.sum())
        return 1.0 - float(res_j.sum()) / tot if tot > 0 else -np.inf

    pool: np.ndarray | None = None
    while len(chosen) < k:
        free = [c for c in np.flatnonzero(cand).tolist() if c not in chosen]
        if pool is not None:
            free = [c for c in pool.tolist() if c not in chosen] or free
        if costs is not None and budget is not None:
            free = [c for c in free if spent + float(costs[c]) <= budget * (1 + 1e-12)]
        if not free:
            break
        base = score(chosen) if chosen else 0.0
        gains = np.array([score(chosen + [c]) - base for c in free])
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


def lasso_path_order(
    cov: np.ndarray, k: int, *, initial: Sequence[int] = (), candidates: np.ndarray | None = None,
    n_iter: int = 200,
) -> list[int]:
    """First ``k`` benchmarks to enter the multi-target group-lasso path on a correlation matrix.

    The loss ``L(B) = tr(R) - 2 tr(B^T R_{A.}) + tr(B^T R_AA B)`` is the
    population squared error of predicting every benchmark from the active
    set ``A``; a candidate ``c`` enters when its gradient norm
    ``g_c = ||2 (R_{c.} - R_{cA} B)||_2`` reaches the penalty ``lam``.  Starting
    from the mandatory benchmarks (or the one with the largest ``||R_{c.}||``,
    the first knot), the path is followed knot by knot: solve the active
    problem at the current ``lam`` by proximal gradient (``n_iter`` steps,
    warm started), set ``lam`` to the largest inactive ``g_c`` and add that
    benchmark.  Benchmarks never leave the active set (the entry order is
    what is used).  Deterministic; O(k (n_iter k^2 N + k N^2)).
    """
    R = np.asarray(cov, dtype=float)
    N = R.shape[0]
    cand = np.ones(N, dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool)
    active = [int(i) for i in initial]
    row_norms = np.linalg.norm(R, axis=1)
    if not active:
        active = [int(np.argmax(np.where(cand, row_norms, -np.inf)))]
    lam = 2.0 * float(np.max(np.where(cand, row_norms, 0.0)))
    B = np.zeros((len(active), N))
    while True:
        A = np.asarray(active)
        RAA, RA = R[np.ix_(A, A)], R[A]
        if B.shape[0] < A.size:
            B = np.vstack([B, np.zeros((A.size - B.shape[0], N))])
        step = 1.0 / (2.0 * max(float(np.linalg.eigvalsh(RAA)[-1]), 1e-12))
        for _ in range(n_iter):
            G = 2.0 * (RAA @ B - RA)
            Bn = B - step * G
            nr = np.linalg.norm(Bn, axis=1, keepdims=True)
            B = Bn * np.maximum(0.0, 1.0 - step * lam / np.maximum(nr, 1e-300))
        if len(active) >= k:
            break
        g = np.linalg.norm(2.0 * (R - R[:, A] @ B), axis=1)
        g[A] = -np.inf
        g[~cand] = -np.inf
        nxt = int(np.argmax(g))
        if not np.isfinite(g[nxt]):
            break
        lam = min(lam, float(g[nxt]))
        active.append(nxt)
    return active[:k]


def select_benchmarks(
    train: np.ndarray,
    k: int,
    *,
    strategy: str = "mi",
    cov: np.ndarray | None = None,
    seed: int = 0,
    initial: Sequence[int] = (),
    min_observed: int | None = None,
    costs: Sequence[float] | None = None,
    budget: float | None = None,
    obs_fraction: float = OBS_FRACTION,
) -> list[int]:
    """Ordered benchmark columns chosen by ``strategy`` on standardized training rows.

    Parameters
    ----------
    train : ndarray (m, N)
        Standardized training scores, NaN missing.
    k : int
        Number of benchmarks (including ``initial``); at most the candidates left by the filter.
    strategy : str
        One of :data:`STRATEGIES`.
    cov : ndarray (N, N), optional
        Training correlation (default :func:`~benchsel_lib.predictors.inner_correlation`).
    seed : int
        Seed of ``"random"`` (the others are deterministic).
    initial : sequence of int
        Mandatory columns, first in the given order.
    min_observed : int, optional
        Candidate filter (training models observing the benchmark); the
        ``*-obs`` strategies default it to ``ceil(obs_fraction * m)``.
    costs, budget
        Knapsack constraint (not for ``"lasso"``).

    Returns
    -------
    list of int
        Fewer than ``k`` only when a budget stops the selection.

    Raises
    ------
    ValueError
        Unknown strategy, ``k`` out of range, costs with ``"lasso"``.

    Notes
    -----
    Results are memoized on the exact bytes of ``train`` and ``cov`` and the
    options (cross-validation asks for the same selection once per pipeline).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown selection strategy {strategy!r}: use one of {STRATEGIES}")
    key = None
    if costs is None and budget is None:
        key = (array_key(np.asarray(train, dtype=float)),
               None if cov is None else array_key(np.asarray(cov, dtype=float)),
               strategy, k, int(seed), tuple(initial), min_observed, float(obs_fraction))
        hit = _SELECTIONS.get(key)
        if hit is not None:
            return list(hit)
    out = _select_benchmarks(train, k, strategy=strategy, cov=cov, seed=seed, initial=initial,
                             min_observed=min_observed, costs=costs, budget=budget, obs_fraction=obs_fraction)
    if key is not None:
        _SELECTIONS.put(key, tuple(out))
    return out


_SELECTIONS = LRUMemo(256)


def _select_benchmarks(
    train: np.ndarray, k: int, *, strategy: str, cov: np.ndarray | None, seed: int, initial: Sequence[int],
    min_observed: int | None, costs: Sequence[float] | None, budget: float | None, obs_fraction: float,
) -> list[int]:
    """:func:`select_benchmarks` without the memo (same arguments)."""
    tr = np.asarray(train, dtype=float)
    if tr.ndim != 2:
        raise ValueError(f"train must be 2-D (models x benchmarks), got shape {tr.shape}")
    m, N = tr.shape
    counts = (~np.isnan(tr)).sum(axis=0)
    init = [int(i) for i in initial]
    if any(not 0 <= i < N for i in init) or len(set(init)) != len(init):
        raise ValueError(f"initial must list distinct columns in 0..{N - 1}, got {list(initial)!r}")
    if strategy.endswith("-obs") and min_observed is None:
        min_observed = min_observed_for(m, obs_fraction)
    cand = _candidates(counts, min_observed, init)
    k = _check_k(k, int(cand.sum()), len(init))
    c = None if costs is None else np.asarray(costs, dtype=float)
    if c is not None and (c.shape != (N,) or not np.isfinite(c).all() or (c <= 0).any()):
        raise ValueError(f"costs must be {N} positive finite numbers")
    if (c is None) != (budget is None):
        raise ValueError("give both costs and budget, or neither")
    base = strategy.removesuffix("-obs")
    if base in ("mi", "entropy", "random"):

        R = inner_correlation(tr) if cov is None else np.asarray(cov, dtype=float)
        kw: dict[str, Any] = dict(method=base, initial=init, observed_counts=counts, min_observed=min_observed)
        if base == "random":
            kw["seed"] = int(seed)
        if c is not None:
            kw.update(costs=c, budget=float(budget))
        return [int(i) for i in select(R, k, **kw).order]
    if base == "greedy":
        return predictive_greedy(tr, k, initial=init, candidates=cand, costs=c, budget=budget)
    if c is not None:
        raise ValueError("the lasso strategy has no cost-aware form; use mi, entropy, random or greedy with costs")
    R = inner_correlation(tr) if cov is None else np.asarray(cov, dtype=float)
    return lasso_path_order(R, k, initial=init, candidates=cand)
