"""Sparse selections: a per-target Lasso with one cross-validated strength, and the Lasso of the mean score.

All are written on second moments only, so missing scores need no completion:
``"sparse"`` (:func:`sparse_order`, below), ``"mean-lasso"``
(:func:`mean_lasso_order`, the entry order of the Lasso path of the mean
score, BenchPred's released rule) and ``"imputed-lasso"``
(:func:`imputed_lasso_order`, that rule on the mean-imputed training matrix
and BenchPred's grid).

Per-target Lasso in covariance form
    Every benchmark ``j`` is a target, predicted from the features ``F``
    (candidates and mandatory benchmarks ``U``) other than itself.  With the
    correlation :math:`R`, column ``j`` of the coefficient matrix :math:`B` minimizes

    .. math::  f_j(b) = \\tfrac12 b^\\top R b - b^\\top R_{:,j}
               + \\lambda \\sum_{c\\in F\\setminus U} |b_c|
               \\quad\\text{subject to}\\quad b_c = 0 \\;(c\\notin F),\\; b_j = 0,

    the population least-squares loss (up to a constant), the mandatory
    benchmarks unpenalized, one strength for all targets.
    :func:`multi_target_lasso_path` solves all targets at once by FISTA along
    the grid of :func:`lambda_grid`; :func:`lasso_cov_path` solves one target
    by coordinate descent (the direct fit it is checked against).

Cross-validated strength and selection
    Row ``i`` of the training rows is in fold ``i % n_folds``; the path is
    fit on the other rows' :func:`pairwise_correlation` and scored by
    :func:`held_out_risk`; the strength of smallest mean risk wins (ties to
    the larger).  On the full correlation at that strength: the mandatory
    benchmarks, then the candidates by decreasing importance
    :math:`\\sum_j |B_{cj}|`, then those of zero importance by the strength at
    which they enter (larger first), then by importance at the smallest
    strength; ties to the lowest index.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .._memo import LRUMemo, array_key
from .covariance import cov_to_corr, floor_eigenvalues, pairwise_pearson
from .folds import Fold, InterleavedFolds, cross_fit
from .objectives import first_tied
from .regression import mean_imputed

__all__ = ["SparseResult", "lasso_cov_path", "multi_target_lasso_path", "pairwise_correlation", "held_out_risk",
           "lambda_grid", "sparse_order", "mean_lasso_order", "imputed_lasso_order", "imputed_gram", "IMPUTED_ALPHAS"]


#: relative stopping tolerance of coordinate descent (largest coefficient change over the largest coefficient)
_CD_TOL = 1e-10

#: most coordinate-descent sweeps per strength
_MAX_SWEEPS = 1000

#: smallest strength of the grid, relative to the largest
_LAMBDA_RATIO = 1e-3

#: eigenvalue floor of the fold correlations
_EIGEN_FLOOR = 1e-8

#: pairs with fewer common observations than this get correlation 0
_MIN_PAIRS = 3

#: relative tolerance under which two mean risks tie
_RISK_RTOL = 1e-12

#: strengths of the path of the mean score (:func:`mean_lasso_order`) and its smallest, relative to the largest
_MEAN_N_LAMBDAS = 400
_MEAN_LAMBDA_RATIO = 1e-4

#: BenchPred's grid of strengths (scikit-learn's ``Lasso(alpha)``, whose loss is
#: :math:`\frac1{2m}\lVert y - Xb\rVert^2 + \alpha\lVert b\rVert_1`): 1000 values log-spaced from 1e-4 to 10
IMPUTED_ALPHAS: tuple[float, ...] = tuple(float(a) for a in np.logspace(-4, 1, 1000))

#: :func:`imputed_lasso_order` goes down the grid until more than ``k`` plus this many coefficients are non-zero
_IMPUTED_SLACK = 10

#: the imputed Lasso's paths (:func:`_imputed_path`), the longest computed per (second moments, mandatory, features)
_IMPUTED_PATHS = LRUMemo(8)


class SparseResult(NamedTuple):
    """Result of :func:`sparse_order`.

    Attributes
    ----------
    order : list of int
        The selected benchmarks (mandatory first), ``k`` of them.
    lam : float
        The cross-validated strength (one of ``lambdas``).
    lambdas : numpy.ndarray
        The grid of strengths, decreasing.
    cv_risk : numpy.ndarray
        Mean held-out risk (summed over the targets) at each strength.
    n_active : int
        Candidates (mandatory ones not counted) with a non-zero importance
        :math:`\\sum_j |B_{cj}|` at ``lam`` on the full correlation.
    """

    order: list[int]
    lam: float
    lambdas: np.ndarray
    cv_risk: np.ndarray
    n_active: int


def lasso_cov_path(
    R: np.ndarray,
    c: np.ndarray,
    lambdas: Sequence[float],
    *,
    unpenalized: Sequence[int] = (),
    features: np.ndarray | Sequence[int] | None = None,
    max_active: int | None = None,
) -> np.ndarray:
    """Lasso in covariance form along a grid of strengths, by cyclic coordinate descent.

    For each ``lam`` of ``lambdas`` it minimizes

    .. math::  f(b) = \\tfrac12 b_F^\\top R_{FF} b_F - b_F^\\top c_F
               + \\lambda \\sum_{j\\in F\\setminus U} |b_j|

    over the features ``F`` (default all), the ``unpenalized`` ``U`` without
    penalty, warm started from the previous strength.  Descent runs over the
    non-zero coefficients and ``U`` until the largest change is below ``1e-10``
    of the largest coefficient (or 1000 sweeps), then every zero coefficient
    whose gradient exceeds ``lam`` joins, until none does.  Once a sweep keeps
    the sign pattern, its stationarity equations are solved directly and the
    solution kept when optimal (exact), sparing an ill-conditioned ``R`` many
    sweeps.

    Parameters
    ----------
    R : ndarray (N, N)
        Symmetric PSD, positive diagonal on ``F`` (a correlation).
    c : ndarray (N,)
        Linear term (for target ``j``, :math:`R_{:,j}`).
    lambdas : sequence of float
        Non-negative strengths in the order solved (decreasing for warm starts).
    unpenalized, features
        ``U`` (mandatory benchmarks, part of ``F``) and ``F`` (bool mask or indices).
    max_active : int, optional
        Stop after the first strength with more than this many penalized non-zeros.

    Returns
    -------
    ndarray (n_solved, N)
        Coefficients per strength solved, zero outside ``F``.

    Notes
    -----
    A sweep over ``a`` active coefficients is ``O(a^2)``, a direct solve
    ``O(a^3)``, the optimality check ``O(a N)``: a path is
    ``O(n_lambdas * (sweeps * a^2 + a^3 + a N))``.
    """
    R = np.asarray(R, dtype=float)
    c = np.asarray(c, dtype=float)
    N = R.shape[0]
    if R.shape != (N, N) or c.shape != (N,):
        raise ValueError(f"R must be square and c match it, got shapes {R.shape} and {c.shape}")
    U, F = _feature_index(features, N, unpenalized)
    lams = _check_lambdas(lambdas)
    penal = np.ones(N, dtype=bool)
    penal[U] = False
    if (np.diag(R)[F] <= 0).any():
        raise ValueError("R needs a positive diagonal on the features")
    out = np.zeros((lams.size, N))
    b = np.zeros(N)
    active: list[int] = list(U)  # in ascending first-entry order
    for t, lam in enumerate(lams):
        _solve_strength(R, c, b, active, F, penal, float(lam))
        active = [j for j in active if b[j] != 0.0 or not penal[j]]
        out[t] = b
        if max_active is not None and int(np.count_nonzero(b[penal])) > max_active:
            return out[:t + 1]
    return out


def _solve_strength(R: np.ndarray, c: np.ndarray, b: np.ndarray, active: list[int], F: np.ndarray,
                    penal: np.ndarray, lam: float) -> None:
    """Solve :func:`lasso_cov_path` at one strength, ``b`` and ``active`` in place (warm started from them).

    Coordinate descent on the active coefficients, then every zero
    coefficient whose gradient exceeds ``lam`` joins, until none does.
    O(sweeps a^2 + a^3 + a N) per round.
    """
    cF, thr = c[F], lam * (1.0 + 1e-12) + 1e-15
    while True:
        A = np.asarray(active, dtype=int)
        if A.size:  # then the optimality check on the zero coefficients: |c_j - (R b)_j| <= lam
            _cd_active(R, c, b, A, penal, lam)
            viol = np.abs(cF - R[A[:, None], F].T @ b[A]) > thr  # R[A[:, None], F].T: the layout of R[F][:, A]
            viol[np.searchsorted(F, A)] = False
        else:
            viol = np.abs(cF) > thr
        if not viol.any():
            return
        active.extend(F[viol].tolist())


def _cd_active(R: np.ndarray, c: np.ndarray, b: np.ndarray, A: np.ndarray, penal: np.ndarray, lam: float) -> None:
    """Cyclic coordinate descent on the coordinates ``A`` (others fixed at zero), in place.

    After a sweep that leaves the pattern of signs unchanged, the solution
    with that pattern is tried directly (:func:`_solve_pattern`); when it
    satisfies the optimality conditions on ``A`` it is exact and descent
    stops.  O(sweeps a^2 + tries a^3).
    """
    RAA = R[A[:, None], A]  # R[np.ix_(A, A)]
    cA = c[A]
    g = cA - RAA @ b[A]  # c_j - (R b)_j on A
    bA, dA = b[A].tolist(), np.diag(RAA).tolist()  # Python floats: the same arithmetic, faster scalars
    pA = penal[A]
    pen, cols = pA.tolist(), list(np.ascontiguousarray(RAA.T))  # cols[i] holds column i of RAA
    signs = np.sign(bA)
    tried: bytes | None = None
    for _ in range(_MAX_SWEEPS):
        big = 0.0
        for i, d in enumerate(dA):
            old = bA[i]
            z = g.item(i) + d * old
            new = (z - lam if z > lam else z + lam if z < -lam else 0.0) / d if pen[i] else z / d
            if new != old:
                delta = new - old
                g -= cols[i] * delta
                bA[i] = new
                if abs(delta) > big:
                    big = abs(delta)
        now = np.array(bA)
        if big <= _CD_TOL * float(np.abs(now).max()):
            break
        np.sign(now, out=now)
        key = now.tobytes()
        if (now == signs).all() and key != tried:  # np.array_equal (same shapes)
            tried = key
            x = _solve_pattern(RAA, cA, now, pA, lam)
            if x is not None:
                bA = x
                break
        signs = now
    b[A] = bA


def _solve_pattern(RAA: np.ndarray, cA: np.ndarray, s: np.ndarray, pA: np.ndarray, lam: float) -> np.ndarray | None:
    """The Lasso solution on ``A`` with the sign pattern ``s``, or None when it violates the optimality conditions.

    With ``P`` the non-zero (or unpenalized) coordinates, the stationarity
    conditions are linear: :math:`R_{PP} b_P = c_P - \\lambda s_P`.  The
    solution is kept when its signs are ``s`` on the penalized part of ``P``
    and every other coordinate has :math:`|c_j - R_{jP} b_P| \\le \\lambda`.  O(a^3).
    """
    inP = (s != 0) | ~pA
    P = np.flatnonzero(inP)
    if not P.size:
        return None
    pen, sP = pA[P], s[P]
    rhs = cA[P] - lam * np.where(pen, sP, 0.0)
    try:
        xP = np.linalg.solve(RAA[P[:, None], P], rhs)
    except np.linalg.LinAlgError:
        return None
    if not np.isfinite(xP).all() or (np.sign(xP[pen]) != sP[pen]).any():
        return None
    Z = np.flatnonzero(~inP)
    if Z.size and (np.abs(cA[Z] - RAA[Z[:, None], P] @ xP) > lam * (1.0 + 1e-9)).any():
        return None
    x = np.zeros(cA.size)
    x[P] = xP
    return x


def _feature_index(features: np.ndarray | Sequence[int] | None, N: int,
                   unpenalized: Sequence[int]) -> tuple[list[int], np.ndarray]:
    """The unpenalized benchmarks ``U`` (first occurrences) and the features as sorted indices, ``U`` included."""
    U = list(dict.fromkeys(int(j) for j in unpenalized))
    if features is None:
        F = np.arange(N)
    else:
        f = np.asarray(features)
        F = np.flatnonzero(f) if f.dtype == bool else np.unique(f.astype(int))
    if set(U) - set(F.tolist()):
        F = np.union1d(F, np.asarray(U, dtype=int))
    return U, F


def _selection_features(N: int, initial: Sequence[int], candidates: np.ndarray | None
                        ) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The mandatory benchmarks ``U`` (first occurrences), the features (``candidates`` and ``U``) and the free ones."""
    U = list(dict.fromkeys(int(j) for j in initial))
    feats = np.ones(N, dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool).copy()
    feats[U] = True
    free = feats.copy()
    free[U] = False
    return U, feats, free


def _check_lambdas(lambdas: Sequence[float]) -> np.ndarray:
    lams = np.asarray(lambdas, dtype=float)
    if lams.ndim != 1 or (lams < 0).any() or not np.isfinite(lams).all():
        raise ValueError("lambdas must be a one-dimensional sequence of non-negative finite strengths")
    return lams


def multi_target_lasso_path(
    R: np.ndarray,
    lambdas: Sequence[float],
    *,
    features: np.ndarray | Sequence[int] | None = None,
    unpenalized: Sequence[int] = (),
    tol: float = 1e-7,
    max_iter: int = 300,
) -> np.ndarray:
    """The per-target Lasso of every benchmark on the other features, along a grid of strengths, by FISTA.

    Column ``j`` of the result at ``lam`` minimizes the module docstring's
    :math:`f_j` (features ``F``, default all, with the ``unpenalized`` ``U``
    added).  All targets are solved together on ``B``: a gradient step with
    ``L`` the largest eigenvalue of :math:`R_{FF}`, soft thresholding of the
    penalized rows by :math:`\\lambda/L`, zeroing outside ``F`` and on the
    diagonal, then Nesterov's extrapolation with adaptive gradient restart.  Each
    strength is warm started from the previous one and stops once the largest
    change of ``B`` is below ``tol * max(1, max|B|)`` or after ``max_iter``
    iterations.

    Returns
    -------
    ndarray (len(lambdas), N, N)
        ``B`` per strength: entry ``(c, j)`` is the coefficient of benchmark ``c``
        in the prediction of benchmark ``j``.

    Notes
    -----
    An iteration costs :math:`R_{FA} Y_A` over the non-zero rows ``A``, at most
    :math:`2|F|^2N`: a path is at most ``O(n_lambdas * max_iter * |F|^2 N)``,
    plus one eigendecomposition of :math:`R_{FF}`.
    """
    R = np.asarray(R, dtype=float)
    N = R.shape[0]
    if R.ndim != 2 or R.shape != (N, N):
        raise ValueError(f"R must be square, got shape {R.shape}")
    U, F = _feature_index(features, N, unpenalized)
    lams = _check_lambdas(lambdas)
    out = np.zeros((lams.size, N, N))
    if not F.size:
        return out
    RFF = R[np.ix_(F, F)]
    RFN = R[F, :]  # the linear terms of every target, restricted to F
    lip = float(np.linalg.eigvalsh(RFF)[-1])
    if not lip > 0.0:
        raise ValueError("R needs a positive largest eigenvalue on the features")
    pen = np.flatnonzero(~np.isin(F, U))  # the penalized rows of B_F
    every = pen.size == F.size
    diag = (np.arange(F.size), F)  # a benchmark never predicts itself
    X = np.zeros((F.size, N))
    for t, lam in enumerate(lams):
        thr = float(lam) / lip
        Y = X.copy()
        step = 1.0
        for _ in range(int(max_iter)):
            rows = np.flatnonzero(Y.any(axis=1))
            G = RFF @ Y if rows.size == F.size else RFF[:, rows] @ Y[rows]  # no row: zeros
            G -= RFN
            G *= 1.0 / lip
            Z = np.subtract(Y, G, out=G)  # the gradient step
            if every:
                A = np.abs(Z)
                A -= thr
                np.maximum(A, 0.0, out=A)
                Z = np.copysign(A, Z, out=A)
            elif pen.size:
                Zp = Z[pen]
                Z[pen] = np.copysign(np.maximum(np.abs(Zp) - thr, 0.0), Zp)
            Z[diag] = 0.0
            delta = Z - X
            change = max(float(delta.max()), -float(delta.min()))
            if np.vdot(np.subtract(Y, Z, out=Y), delta) > 0.0:  # the momentum points uphill: restart it
                step = 1.0
            nxt = (1.0 + math.sqrt(1.0 + 4.0 * step * step)) / 2.0
            delta *= (step - 1.0) / nxt
            Y = np.add(Z, delta, out=delta)  # Nesterov's extrapolation
            X, step = Z, nxt
            if change <= tol * max(1.0, float(X.max()), -float(X.min())):
                break
        out[t][F] = X
    return out


def pairwise_correlation(X: np.ndarray) -> np.ndarray:
    """Pairwise-complete correlation of rows with missing entries, made positive definite.

    Each pair of columns is correlated over the rows observing both
    (:func:`~benchsel_lib.method.covariance.pairwise_pearson`: means and
    scales of those rows); pairs with fewer than 3 common rows, or a constant
    column among them, get 0; the diagonal is 1.  The eigenvalues are then
    clipped at ``1e-8`` and the matrix rescaled to a unit diagonal.
    O(m N^2 + N^3).
    """
    C, _ = pairwise_pearson(np.asarray(X, dtype=float), min_overlap=_MIN_PAIRS)
    C = np.nan_to_num(C, nan=0.0)
    np.fill_diagonal(C, 1.0)
    return floor_eigenvalues(C, _EIGEN_FLOOR)  # which symmetrizes C first


def held_out_risk(C: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared error of predicting every benchmark ``j`` by :math:`b_j^\\top x` under second moments ``C``, summed.

    :math:`\\sum_j (e_j - b_j)^\\top C (e_j - b_j)` for a coefficient matrix
    ``B`` (N, N) or each of a stack (L, N, N); returns an array of shape
    ``B.shape[:-2]``.  O(L N^3).
    """
    C = np.asarray(C, dtype=float)
    B = np.asarray(B, dtype=float)
    CB = np.matmul(C, B)
    return np.trace(C) - 2.0 * np.einsum("...ij,ij->...", B, C) + np.einsum("...ij,...ij->...", B, CB)


def _mandatory_solution(R: np.ndarray, U: list[int]) -> np.ndarray:
    """The least-squares fit of every target on the mandatory benchmarks other than itself (``N x N``)."""
    N = R.shape[0]
    B = np.zeros((N, N))
    if not U:
        return B
    others = np.setdiff1d(np.arange(N), U)
    if others.size:
        B[np.ix_(U, others)] = np.linalg.lstsq(R[np.ix_(U, U)], R[np.ix_(U, others)], rcond=None)[0]
    for j in U:
        V = [u for u in U if u != j]
        if V:
            B[V, j] = np.linalg.lstsq(R[np.ix_(V, V)], R[V, j], rcond=None)[0]
    return B


def lambda_grid(R: np.ndarray, *, unpenalized: Sequence[int] = (),
                features: np.ndarray | Sequence[int] | None = None, n_lambdas: int = 20) -> np.ndarray:
    """The strengths of the path: ``n_lambdas`` log-spaced from ``lam_max`` down to ``1e-3 lam_max``.

    ``lam_max`` is the smallest strength at which only the unpenalized
    benchmarks are active for every target: the largest
    :math:`|(R_{:,j} - R B_0{}_{:,j})_c|` over the penalized features ``c`` and
    the targets :math:`j \\ne c`, with :math:`B_0` the least-squares fit of
    every target on the unpenalized benchmarks other than itself (zero when
    there is none).  O(|U|^3 + |U| N^2).
    """
    R = np.asarray(R, dtype=float)
    N = R.shape[0]
    U, F = _feature_index(features, N, unpenalized)
    free = F[~np.isin(F, U)]
    lam_max = 0.0
    if free.size:
        B0 = _mandatory_solution(R, U)
        G = R[free, :] - (R[np.ix_(free, U)] @ B0[U, :] if U else 0.0)
        G[np.arange(free.size), free] = 0.0  # a benchmark is no feature of its own target
        lam_max = float(np.abs(G).max())
    if not lam_max > 0.0:
        lam_max = 1e-12
    return np.geomspace(lam_max, lam_max * _LAMBDA_RATIO, int(n_lambdas))


def sparse_order(
    R: np.ndarray,
    train: np.ndarray,
    k: int,
    *,
    initial: Sequence[int] = (),
    candidates: np.ndarray | None = None,
    n_folds: int = 5,
    n_lambdas: int = 20,
    tol: float = 1e-7,
    max_iter: int = 100,
) -> SparseResult:
    """``k`` benchmarks from the per-target Lasso with a cross-validated strength (see the module docstring).

    Parameters
    ----------
    R : ndarray (N, N)
        Training correlation (a covariance is rescaled to one).
    train : ndarray (M, N)
        Standardized training rows, NaN missing; cross-validates the strength.
    k : int
        Number of benchmarks, mandatory ones included (the caller checks the range).
    initial : sequence of int
        Mandatory benchmarks: unpenalized, first in the order.
    candidates : bool ndarray (N,), optional
        Benchmarks that may be selected besides ``initial`` (default: all); every benchmark is a target.
    n_folds, n_lambdas : int
        Folds of the cross-validation; strengths of the grid (:func:`lambda_grid`).
    tol, max_iter : float, int
        :func:`multi_target_lasso_path`'s stopping rule; 100 iterations keep a
        hundred benchmarks within seconds, at the price of a path not fully
        converged at the smallest strengths of an ill-conditioned correlation.

    Returns
    -------
    SparseResult

    Raises
    ------
    ValueError
        ``train`` not ``(M, N)``, fewer than ``2 n_folds`` rows, ``n_folds < 2`` or ``n_lambdas < 1``.

    Notes
    -----
    ``n_folds + 1`` paths, about ``(n_folds + 1) * n_lambdas * iterations * 2
    N^3`` operations, plus per fold two pairwise correlations,
    ``O(M N^2 + N^3)``, and the held-out risks, ``O(n_lambdas N^3)``.  The order
    does not depend on ``k``: a smaller selection is a prefix of a larger one.
    """
    S = np.asarray(R, dtype=float)
    N = S.shape[0]
    R = floor_eigenvalues(cov_to_corr(S), _EIGEN_FLOOR)  # a pairwise estimate can be indefinite
    tr = np.asarray(train, dtype=float)
    if tr.ndim != 2 or tr.shape[1] != N:
        raise ValueError(f"train must be (models x {N} benchmarks) like R, got shape {tr.shape}")
    n_folds, n_lambdas = int(n_folds), int(n_lambdas)
    if n_folds < 2 or n_lambdas < 1:
        raise ValueError(f"n_folds must be >= 2 and n_lambdas >= 1, got {n_folds} and {n_lambdas}")
    m = tr.shape[0]
    if m < 2 * n_folds:
        raise ValueError(f"the sparse objective needs at least {2 * n_folds} training rows for {n_folds} folds, "
                         f"got {m}")
    U, feats, free = _selection_features(N, initial, candidates)
    lambdas = lambda_grid(R, unpenalized=U, features=feats, n_lambdas=n_lambdas)
    kw = dict(features=feats, unpenalized=U, tol=tol, max_iter=max_iter)

    # cross-validated strength: each fold's risk of the path fit on the other folds
    def fold_risk(fold: Fold) -> np.ndarray:
        path = multi_target_lasso_path(pairwise_correlation(tr[fold.train]), lambdas, **kw)
        return held_out_risk(pairwise_correlation(tr[fold.held]), path)

    risk = sum(r for _, r in cross_fit(InterleavedFolds(n_folds).folds(m), fold_risk)) / n_folds
    i_star = first_tied(-risk, _RISK_RTOL)

    # the order on the full correlation
    imp = np.abs(multi_target_lasso_path(R, lambdas, **kw)).sum(axis=2)  # (n_lambdas, N): sum_j |B_cj|
    cand = np.flatnonzero(free)
    now = imp[i_star]
    lead = sorted((int(c) for c in cand if now[c] > 0.0), key=lambda c: (-float(now[c]), c))
    nonzero = imp > 0.0
    entry = np.where(nonzero.any(axis=0), nonzero.argmax(axis=0), n_lambdas)  # first strength with a coefficient
    rest = sorted((int(c) for c in cand if not now[c] > 0.0),
                  key=lambda c: (int(entry[c]), -float(imp[-1, c]), c))
    order = U + lead + rest
    return SparseResult(order=order[:int(k)], lam=float(lambdas[i_star]), lambdas=lambdas, cv_risk=risk,
                        n_active=len(lead))


def mean_lasso_order(
    R: np.ndarray,
    k: int,
    *,
    initial: Sequence[int] = (),
    candidates: np.ndarray | None = None,
    n_lambdas: int = _MEAN_N_LAMBDAS,
) -> list[int]:
    """``k`` benchmarks in the order they enter the Lasso path of the mean score (BenchPred's released rule).

    The target is the mean standardized score over all ``N`` benchmarks; the
    Lasso in covariance form (:func:`lasso_cov_path`, :math:`c = \\frac1N
    R\\mathbf 1`) on the features (candidates, default all, and the mandatory
    ``initial``, unpenalized and first) runs along ``n_lambdas`` strengths
    log-spaced over four decades from the smallest at which only the mandatory
    ones are active.  Candidates follow by the strength at which they enter
    (then index); those that never enter by decreasing :math:`|c_j - R_{jU}
    b_U|`, then index.  BenchPred's set of ``k`` is the first ``k`` of this
    order whenever no benchmark leaves the path before ``k`` have entered.  The
    order does not depend on ``k`` (prefixes).

    Notes
    -----
    One single-target path, ``O(n_lambdas * sweeps * N^2)`` at most, plus ``O(|U|^3 + N^2)``.
    """
    S = np.asarray(R, dtype=float)
    N = S.shape[0]
    n_lambdas = int(n_lambdas)
    if n_lambdas < 2:
        raise ValueError(f"n_lambdas must be >= 2, got {n_lambdas}")
    R = floor_eigenvalues(cov_to_corr(S), _EIGEN_FLOOR)
    U, feats, free = _selection_features(N, initial, candidates)
    cand = np.flatnonzero(free)
    c = R.mean(axis=1)
    b_U = np.linalg.lstsq(R[np.ix_(U, U)], c[U], rcond=None)[0] if U else np.zeros(0)
    grad0 = c - (R[:, U] @ b_U if U else 0.0)
    lam_max = float(np.abs(grad0[cand]).max()) if cand.size else 0.0
    order = list(U)
    if lam_max > 0.0:
        lambdas = np.geomspace(lam_max, lam_max * _MEAN_LAMBDA_RATIO, n_lambdas)
        nonzero = lasso_cov_path(R, c, lambdas, unpenalized=U, features=feats)[:, cand] != 0.0
        entry = np.where(nonzero.any(axis=0), nonzero.argmax(axis=0), n_lambdas)
        order += [int(cand[i]) for i in np.lexsort((cand, entry)) if entry[i] < n_lambdas]
    seen = set(order)
    order += sorted((int(j) for j in cand if int(j) not in seen), key=lambda j: (-abs(float(grad0[j])), j))
    return order[:int(k)]


def _imputed_path(G: np.ndarray, c: np.ndarray, lams: np.ndarray, unpenalized: list[int], feats: np.ndarray,
                  max_active: int) -> np.ndarray:
    """:func:`lasso_cov_path` of ``(G, c)`` down ``lams``, at least to where more than ``max_active`` are non-zero.

    A path's rows do not depend on where it stops, so the longest one per
    ``(G, unpenalized, feats, lams)`` is memoized (read-only) and the caller
    cuts it after its first row with more than ``max_active`` penalized
    non-zeros.  ``c`` (the row means of ``G``) is not part of the key.
    """
    key = array_key(G, tuple(unpenalized), feats.tobytes(), lams.tobytes())
    hit = _IMPUTED_PATHS.get(key)
    if hit is None or hit[0] < max_active:
        path = lasso_cov_path(G, c, lams, unpenalized=unpenalized, features=feats, max_active=max_active)
        path.setflags(write=False)  # shared by every size it serves
        hit = _IMPUTED_PATHS.put(key, (max_active, path))
    return hit[1]


def imputed_gram(train: np.ndarray) -> np.ndarray:
    """The second moments of the mean-imputed, centred training rows ``(m, N)``: ``X.T @ X / m``.

    Missing scores take their benchmark's mean (as BenchPred's code does), so a
    benchmark that few models ran has small variance and covariances.  ``O(m
    N^2)`` time, ``O(m N)`` extra memory.
    """
    X = np.array(train, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"train must be (models x benchmarks), got shape {X.shape}")
    m = X.shape[0]
    filled, mean, _ = mean_imputed(X)
    X = filled - mean[None, :]  # centred: every column's mean is 0
    return X.T @ X / max(m, 1)


def imputed_lasso_order(
    train: np.ndarray,
    k: int,
    *,
    initial: Sequence[int] = (),
    candidates: np.ndarray | None = None,
    alphas: Sequence[float] = IMPUTED_ALPHAS,
) -> list[int]:
    """``k`` benchmarks: the Lasso of the mean score on the mean-imputed matrix, at the strength that leaves ``k``.

    BenchPred's released selection.  On the centred mean-imputed ``train``
    (:func:`imputed_gram`, :math:`G`) with target its row means, scikit-learn's
    loss :math:`\\frac1{2m}\\lVert\\bar x - Xb\\rVert^2 + \\alpha\\sum_{j\\notin
    U}|b_j|` is solved in covariance form (:func:`lasso_cov_path`, :math:`c =
    G\\mathbf 1 / N`) on the candidates (default all) with a non-zero imputed
    variance and the mandatory ``initial`` (unpenalized, first), down the grid
    ``alphas`` (default :data:`IMPUTED_ALPHAS`) until more than ``k - |U| + 10``
    penalized coefficients are non-zero.  The selection is the non-zero set with
    the most non-zeros, at most ``k - |U|``, at the smallest such strength
    (BenchPred's scan, which follows benchmarks that leave the path), by entry
    strength then index, completed by the largest :math:`|c_j - G_{jF} b_F|`,
    then index.  The set of ``k`` need not contain that of ``k - 1``.

    Notes
    -----
    ``O(m N^2)``, then one path (memoized: a larger ``k``'s path serves this
    one) of a few ``O(a^2)`` sweeps and an ``O(a N)`` check per strength,
    ``a <= k + 10``.  scikit-learn's ``lasso_path`` gave the same orders only at
    ``tol <= 1e-8``, 3 to 57 times slower; it is not used.
    """
    G = imputed_gram(train)
    N = G.shape[0]
    c = G.mean(axis=1)
    U, feats, free = _selection_features(N, initial, candidates)
    varies = np.diag(G) > 1e-12 * max(1.0, float(np.diag(G).max(initial=0.0)))
    feats &= varies
    free &= varies
    want = int(k) - len(U)
    lams = np.sort(np.asarray(alphas, dtype=float))[::-1]
    order = list(U)
    b = np.zeros(N)
    if want > 0 and free.any():
        path = _imputed_path(G, c, lams, [j for j in U if varies[j]], feats, want + _IMPUTED_SLACK)
        nz = (path[:, free] != 0.0).sum(axis=1)  # the penalized non-zeros: U and the constant columns are not free
        over = np.flatnonzero(nz > want + _IMPUTED_SLACK)
        if over.size:  # where the path of this size stops (a memoized one may go further)
            path, nz = path[:over[0] + 1], nz[:over[0] + 1]
        ok = np.flatnonzero(nz <= want)
        if ok.size:
            best = int(ok[np.lexsort((-ok, -nz[ok]))[0]])  # most non-zeros, then the smallest strength
            b = path[best]
            on = np.flatnonzero(free & (b != 0.0))
            entry = (path[:best + 1, on] != 0.0).argmax(axis=0)
            order += [int(on[i]) for i in np.lexsort((on, entry))]
    if len(order) < int(k):
        seen = set(order)
        grad = np.abs(c - G @ b)
        rest = [int(j) for j in np.flatnonzero(free) if int(j) not in seen]
        rest += [int(j) for j in np.flatnonzero(~feats) if int(j) not in seen and (candidates is None or
                                                                                 bool(candidates[j]))]
        order += sorted(rest, key=lambda j: (-float(grad[j]), j))
    return order[:int(k)]
