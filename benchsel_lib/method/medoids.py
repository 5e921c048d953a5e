"""Anchor points: benchmarks chosen as the medoids of a k-medoids clustering (the ``"anchors"`` objective).

The dissimilarity of benchmarks ``i`` and ``j`` is :math:`d_{ij} = 1 -
R_{ij}^2`, the variance of ``i`` that a univariate linear prediction from
``j`` leaves unexplained (blind to the sign of the correlation), so the
k-medoids objective :math:`\\sum_i \\min_{m\\in A} d_{im}` is the summed
residual variance when every benchmark is predicted from its best anchor.
:func:`k_medoids` is PAM (Kaufman and Rousseeuw): a greedy BUILD, then
best-exchange SWAP steps until none lowers the objective, a local optimum of
the one-exchange neighbourhood.  Mandatory medoids are never swapped out;
non-candidates are never medoids but are still covered.  Ties (a relative
``1e-12``, :func:`~benchsel_lib.method.objectives.tie_threshold`) go to the
lowest index.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .objectives import first_tied, tie_threshold

__all__ = ["Medoids", "anchor_dissimilarity", "medoid_cost", "k_medoids"]


#: relative tolerance of the objective: smaller differences are ties, smaller improvements stop SWAP
_COST_RTOL = 1e-12


class Medoids(NamedTuple):
    """Result of :func:`k_medoids`.

    Attributes
    ----------
    order : list of int
        The medoids: the ``fixed`` ones first in their given order, then the
        others in greedy order (each the one among the remaining medoids that
        lowers the objective most given those before it), so that every
        prefix is the greedy k-medoid solution within the final set.
    cost : float
        The objective :math:`\\sum_i \\min_{m} d_{im}` of the final set.
    n_swaps : int
        Improving exchanges made by SWAP.
    n_evaluations : int
        Objective evaluations of candidate sets (BUILD and SWAP).
    """

    order: list[int]
    cost: float
    n_swaps: int
    n_evaluations: int


def anchor_dissimilarity(cov: np.ndarray) -> np.ndarray:
    """The anchor-point dissimilarity :math:`d_{ij} = 1 - R_{ij}^2` of a covariance or correlation matrix.

    ``cov`` is rescaled to a correlation (a zero-variance benchmark is
    uncorrelated with every other, so at dissimilarity 1 from it);
    :math:`R_{ij}^2` is clipped to ``[0, 1]`` and the diagonal is 0.  O(N^2).
    """
    S = np.asarray(cov, dtype=float)
    sd = np.sqrt(np.maximum(np.diag(S), 0.0))
    scale = np.outer(sd, sd)
    with np.errstate(divide="ignore", invalid="ignore"):
        R2 = np.where(scale > 0.0, S * S / np.where(scale > 0.0, scale * scale, 1.0), 0.0)
    D = 1.0 - np.clip(R2, 0.0, 1.0)
    np.fill_diagonal(D, 0.0)
    return D


def medoid_cost(dissimilarity: np.ndarray, medoids: Sequence[int]) -> float:
    """The k-medoids objective :math:`\\sum_i \\min_{m\\in\\text{medoids}} d_{im}` over every point. O(kN)."""
    D = np.asarray(dissimilarity, dtype=float)
    return float(D[:, list(medoids)].min(axis=1).sum())


#: most entries of one temporary (N x block of candidate columns) in :func:`_cost_with`
_BLOCK_ENTRIES = 1 << 22


def _cost_with(nearest: np.ndarray, D: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Objective after adding each column of ``cols`` to a set whose nearest distances are ``nearest``.

    O(N |cols|) time, in column blocks of at most ``_BLOCK_ENTRIES`` temporary entries.
    """
    step = max(1, _BLOCK_ENTRIES // max(1, nearest.size))
    out = np.empty(cols.size)
    for s in range(0, cols.size, step):
        out[s:s + step] = np.minimum(nearest[:, None], D[:, cols[s:s + step]]).sum(axis=0)
    return out


def _build(D: np.ndarray, fixed: list[int], pool: np.ndarray, count: int) -> tuple[list[int], np.ndarray, int]:
    """``fixed``, then ``count`` times the point of ``pool`` (sorted) that lowers the objective most; the
    nearest distances of every point and the evaluations. O(count |pool| N)."""
    nearest = D[:, fixed].min(axis=1) if fixed else np.full(D.shape[0], np.inf)
    chosen = list(fixed)
    n_eval = 0
    for _ in range(count):
        i = first_tied(-_cost_with(nearest, D, pool), _COST_RTOL)
        n_eval += pool.size
        h = int(pool[i])
        chosen.append(h)
        nearest = np.minimum(nearest, D[:, h])
        pool = np.delete(pool, i)
    return chosen, nearest, n_eval


def k_medoids(
    dissimilarity: np.ndarray,
    k: int,
    *,
    fixed: Sequence[int] = (),
    candidates: np.ndarray | None = None,
) -> Medoids:
    """PAM k-medoids (BUILD, then best-exchange SWAP until no exchange improves) with fixed medoids.

    Parameters
    ----------
    dissimilarity : ndarray (N, N)
        Non-negative, zero diagonal (:func:`anchor_dissimilarity`); every row is a point to cover.
    k : int
        Number of medoids, ``fixed`` included (the caller checks the range).
    fixed : sequence of int
        Mandatory medoids, never swapped out; they lead ``order`` in this order.
    candidates : bool ndarray (N,), optional
        Points that may become medoids besides ``fixed`` (default: all).

    Returns
    -------
    Medoids

    Notes
    -----
    Each SWAP iteration evaluates every (non-fixed medoid, non-medoid
    candidate) exchange at O(N) per pair from the cached nearest and
    second-nearest distances, applies the best one if it lowers the objective
    by more than a relative ``1e-12`` and stops otherwise.  Cost
    O(iterations * k * (N - k) * N) time, O(N^2) memory; BUILD and the final
    ordering O(k (N - k) N).  Ties go to the lowest index (BUILD, ordering)
    and to the first medoid in order, then the lowest candidate (SWAP).
    """
    D = np.asarray(dissimilarity, dtype=float)
    N = D.shape[0]
    fixed = [int(j) for j in fixed]
    cand = np.ones(N, dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool).copy()
    cand[fixed] = False
    medoids, _, n_eval = _build(D, fixed, np.flatnonzero(cand), k - len(fixed))
    free = cand.copy()
    free[medoids] = False

    # SWAP: best exchange over all (non-fixed medoid, non-medoid candidate) pairs
    n_swaps = 0
    while len(medoids) > len(fixed) and free.any():
        DM = D[:, medoids]
        near = np.asarray(medoids)[np.argmin(DM, axis=1)]  # among tied nearest medoids any one: then d2 = d1
        d1, d2 = np.partition(np.column_stack([DM, np.full(N, np.inf)]), 1, axis=1)[:, :2].T
        best_cost = tie_threshold(float(d1.sum()), _COST_RTOL)
        best: tuple[int, int] | None = None
        H = np.flatnonzero(free)
        for pos in range(len(fixed), len(medoids)):
            costs = _cost_with(np.where(near == medoids[pos], d2, d1), D, H)
            n_eval += H.size
            j = first_tied(-costs, _COST_RTOL)
            if costs[j] < best_cost:
                best_cost, best = float(costs[j]), (pos, int(H[j]))
        if best is None:
            break
        pos, h = best
        free[medoids[pos]] = True
        free[h] = False
        medoids[pos] = h
        n_swaps += 1

    # order: fixed first, then greedily within the final medoids
    order, nearest, _ = _build(D, fixed, np.array(sorted(medoids[len(fixed):]), dtype=int), len(medoids) - len(fixed))
    cost = float(nearest.sum()) if order else float("inf")
    return Medoids(order=order, cost=cost, n_swaps=n_swaps, n_evaluations=int(n_eval))
