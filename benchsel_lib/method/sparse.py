"""Sparse selections: a per-target Lasso with one cross-validated strength, and the Lasso of the mean score.

Three ways to select with the Lasso, all written on second moments only, so
missing scores need no completion:

* ``"sparse"`` (:func:`sparse_order`): every benchmark is predicted from
  the others by a Lasso with one cross-validated strength; the benchmarks
  that carry the most weight in those predictions are selected.  The
  sections below describe it.
* ``"mean-lasso"`` (:func:`mean_lasso_order`): the rule of BenchPred's
  released code.  One Lasso predicts the mean score of all benchmarks; the
  benchmarks are taken in the order they enter its path (no cross-validation).
* ``"imputed-lasso"`` (:func:`imputed_lasso_order`): the same rule as
  BenchPred's released code runs it, on the mean-imputed training matrix and
  BenchPred's grid of strengths; the set of ``k`` need not contain the one
  of ``k - 1``, and a thinly observed benchmark is seldom selected.

Per-target Lasso in covariance form
    Every benchmark ``j`` (all ``N``, candidate or not) is a target,
    predicted from the features ``F`` (the candidates and the mandatory
    benchmarks ``U``) other than ``j`` itself.  With the correlation :math:`R`
    of the standardized scores, its coefficients :math:`b_j` minimize

    .. math::  f_j(b) = \\tfrac12 b^\\top R b - b^\\top R_{:,j}
               + \\lambda \\sum_{c\\in F\\setminus U} |b_c|
               \\quad\\text{subject to}\\quad b_c = 0 \\;(c\\notin F),\\; b_j = 0,

    the population least-squares loss of predicting :math:`x_j` by
    :math:`b^\\top x` (up to the constant :math:`\\tfrac12 R_{jj}`), the
    mandatory benchmarks unpenalized.  The coefficients form an ``N x N``
    matrix :math:`B` (column ``j`` is :math:`b_j`).  The targets are separable
    and share one strength :math:`\\lambda`.  :func:`multi_target_lasso_path`
    solves all of them at once by FISTA (accelerated proximal gradient, with
    adaptive restart) on :math:`B`, warm started along a decreasing grid of strengths
    (:func:`lambda_grid`: 20 strengths log-spaced over three decades from the
    smallest at which only the mandatory benchmarks are active).
    :func:`lasso_cov_path` solves one target by coordinate descent; it is the
    direct fit the multi-target solver is checked against.

Cross-validated strength
    The training rows are split into ``n_folds`` folds (row ``i`` in fold
    ``i % n_folds``).  The path is fit on the pairwise-complete correlation
    of the other rows (:func:`pairwise_correlation`) with the grid of the
    full problem, and scored by the held-out risk summed over the targets
    (:func:`held_out_risk`: the squared error of predicting every benchmark
    from the others under the held-out second moments).  The strength with
    the smallest mean risk over the folds is chosen (ties to the larger strength).

Selection
    On the full correlation, at the chosen strength: the mandatory
    benchmarks, then the candidates by decreasing importance
    :math:`\\sum_j |B_{cj}|` (the total weight a benchmark carries in
    predicting the others), then the candidates of zero importance by the
    strength at which they first get a non-zero coefficient along the grid
    (larger first), then by their importance at the smallest strength
    (:func:`sparse_order`, which states the cost).  Everything is
    deterministic; ties go to the lowest index.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .._memo import LRUMemo, array_key
from .covariance import cov_to_corr, floor_eigenvalues, pairwise_pearson
from .folds import Fold, InterleavedFolds, cross_fit
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


def _soft(z: float, t: float) -> float:
    if z > t:
        return z - t
    if z < -t:
        return z + t
    return 0.0


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

    Minimizes, for each ``lam`` of ``lambdas``,

    .. math::  f(b) = \\tfrac12 b_F^\\top R_{FF} b_F - b_F^\\top c_F
               + \\lambda \\sum_{j\\in F\\setminus U} |b_j|

    over the coefficients of the features ``F``; the ``unpenalized``
    benchmarks ``U`` carry no penalty.  Each coordinate step is the soft
    thresholding :math:`b_j = S(c_j - \\sum_{l\\ne j} R_{jl} b_l, \\lambda) / R_{jj}`.
    The solution at one strength starts the next (warm start).  At each
    strength, coordinate descent runs over the non-zero coefficients (and
    ``U``) until the largest change is below ``1e-10`` times the largest
    coefficient (or 1000 sweeps); then every zero coefficient whose gradient
    exceeds the strength joins and descent resumes, until none does.  Once a
    sweep leaves the signs of the coefficients unchanged, the stationarity
    equations of that sign pattern are solved directly and the solution is
    kept when it satisfies the optimality conditions (it is then exact),
    which spares the many slow sweeps of an ill-conditioned ``R``.

    Parameters
    ----------
    R : ndarray (N, N)
        Symmetric positive semi-definite matrix with a positive diagonal on ``F``
        (a correlation).
    c : ndarray (N,)
        Linear term (for target ``j``, :math:`R_{:,j}`).
    lambdas : sequence of float
        Non-negative strengths, in the order they are solved (decreasing for
        warm starts to pay off).
    unpenalized : sequence of int
        Features without penalty (mandatory benchmarks); they belong to ``F``.
    features : bool ndarray (N,) or sequence of int, optional
        The features ``F`` (default: all).
    max_active : int, optional
        Stop after the first strength at which more than this many penalized
        coefficients are non-zero (default: solve every strength).

    Returns
    -------
    ndarray (n_solved, N)
        Coefficients per strength, zero outside ``F``: every strength of
        ``lambdas``, or those up to the one that stopped the path.

    Notes
    -----
    A sweep over ``a`` active coefficients costs ``O(a^2)``, a direct solve
    ``O(a^3)``, the optimality check ``O(a N)``; a path is
    ``O(n_lambdas * (sweeps * a^2 + a^3 + a N))``, at most
    ``O(n_lambdas * sweeps * N^2)`` with few sweeps per strength.
    """
    R = np.asarray(R, dtype=float)
    c = np.asarray(c, dtype=float)
    N = R.shape[0]
    if R.shape != (N, N) or c.shape != (N,):
        raise ValueError(f"R must be square and c match it, got shapes {R.shape} and {c.shape}")
    U = [int(j) for j in unpenalized]
    F = _feature_index(features, N, U)
    lams = _check_lambdas(lambdas)
    penal = np.ones(N, dtype=bool)
    penal[U] = False
    if (np.diag(R)[F] <= 0).any():
        raise ValueError("R needs a positive diagonal on the features")
    out = np.zeros((lams.size, N))
    b = np.zeros(N)
    active: list[int] = list(dict.fromkeys(U))  # in ascending first-entry order
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
    while True:
        A = np.asarray(active, dtype=int)
        if A.size:
            _cd_active(R, c, b, A, penal, lam)
        # optimality check on the zero coefficients: |c_j - (R b)_j| <= lam
        grad = c[F] - R[F][:, A] @ b[A] if A.size else c[F].copy()
        inactive = np.ones(F.size, dtype=bool)
        if A.size:
            inactive[np.searchsorted(F, A)] = False
        viol = inactive & (np.abs(grad) > lam * (1.0 + 1e-12) + 1e-15)
        if not viol.any():
            return
        active.extend(int(j) for j in F[viol])


def _cd_active(R: np.ndarray, c: np.ndarray, b: np.ndarray, A: np.ndarray, penal: np.ndarray, lam: float) -> None:
    """Cyclic coordinate descent on the coordinates ``A`` (others fixed at zero), in place.

    After a sweep that leaves the pattern of signs unchanged, the solution
    with that pattern is tried directly (:func:`_solve_pattern`); when it
    satisfies the optimality conditions on ``A`` it is exact and descent
    stops.  O(sweeps a^2 + tries a^3).
    """
    RAA = R[np.ix_(A, A)]
    bA = b[A].copy()
    cA = c[A]
    g = cA - RAA @ bA  # c_j - (R b)_j on A
    dA = np.diag(RAA).copy()
    pA = penal[A]
    cols = [RAA[:, i] for i in range(A.size)]
    signs = np.sign(bA)
    tried: bytes | None = None
    for _ in range(_MAX_SWEEPS):
        big = 0.0
        for i in range(A.size):
            old = bA[i]
            z = g[i] + dA[i] * old
            new = _soft(z, lam) / dA[i] if pA[i] else z / dA[i]
            if new != old:
                delta = new - old
                g -= cols[i] * delta
                bA[i] = new
                if abs(delta) > big:
                    big = abs(delta)
        scale = float(np.abs(bA).max()) if bA.size else 0.0
        if big <= _CD_TOL * scale:
            break
        now = np.sign(bA)
        key = now.tobytes()
        if np.array_equal(now, signs) and key != tried:
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
    P = np.flatnonzero((s != 0) | ~pA)
    if not P.size:
        return None
    rhs = cA[P] - lam * np.where(pA[P], s[P], 0.0)
    try:
        xP = np.linalg.solve(RAA[np.ix_(P, P)], rhs)
    except np.linalg.LinAlgError:
        return None
    if not np.isfinite(xP).all():
        return None
    pen = pA[P]
    if (np.sign(xP[pen]) != s[P][pen]).any():
        return None
    x = np.zeros(cA.size)
    x[P] = xP
    outside = np.ones(cA.size, dtype=bool)
    outside[P] = False
    Z = np.flatnonzero(outside)
    if Z.size and (np.abs(cA[Z] - RAA[np.ix_(Z, P)] @ xP) > lam * (1.0 + 1e-9)).any():
        return None
    return x


def _feature_index(features: np.ndarray | Sequence[int] | None, N: int, U: Sequence[int]) -> np.ndarray:
    """The features as sorted indices, the unpenalized ones included."""
    if features is None:
        F = np.arange(N)
    else:
        f = np.asarray(features)
        F = np.flatnonzero(f) if f.dtype == bool else np.unique(f.astype(int))
    if set(U) - set(F.tolist()):
        F = np.union1d(F, np.asarray(list(U), dtype=int))
    return F


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

    For each ``lam`` of ``lambdas`` and each target ``j`` (all ``N``), column
    ``j`` of the result minimizes

    .. math::  \\tfrac12 b^\\top R b - b^\\top R_{:,j} + \\lambda \\sum_{c\\in F\\setminus U} |b_c|

    subject to :math:`b_c = 0` for ``c`` outside the features ``F`` and
    :math:`b_j = 0`; the ``unpenalized`` benchmarks ``U`` carry no penalty.
    All targets are solved together by FISTA on the matrix ``B``: a gradient
    step :math:`B - (RB - R)/L` with ``L`` the largest eigenvalue of
    :math:`R_{FF}`, soft thresholding of the penalized rows by
    :math:`\\lambda/L`, zeroing of the excluded entries (rows outside ``F``,
    the diagonal), then Nesterov's extrapolation, its momentum restarted
    whenever the step points against it (adaptive gradient restart, which
    spares FISTA's oscillations on an ill-conditioned ``R``).  The solution at one
    strength starts the next (warm start; the momentum restarts).  At each
    strength the iterations stop once the largest change of ``B`` is below
    ``tol * max(1, max|B|)``, or after ``max_iter`` iterations.

    Parameters
    ----------
    R : ndarray (N, N)
        Symmetric positive semi-definite matrix (a correlation).
    lambdas : sequence of float
        Non-negative strengths, in the order they are solved (decreasing for
        warm starts to pay off).
    features : bool ndarray (N,) or sequence of int, optional
        The features ``F`` (default: all); the unpenalized ones are added.
    unpenalized : sequence of int
        Features without penalty (mandatory benchmarks).
    tol : float
        Relative stopping tolerance on the largest change of ``B``.
    max_iter : int
        Most iterations per strength.

    Returns
    -------
    ndarray (len(lambdas), N, N)
        ``B`` per strength: entry ``(c, j)`` is the coefficient of benchmark
        ``c`` in the prediction of benchmark ``j``; zero outside the rows of
        ``F`` and on the diagonal.

    Notes
    -----
    An iteration costs the product :math:`R_{FA} Y_A` over the rows ``A`` of
    the extrapolated point that are not zero, at most :math:`2|F|^2N`; a
    path at most ``O(n_lambdas * max_iter * |F|^2 N)``, plus one
    eigendecomposition of :math:`R_{FF}`.
    """
    R = np.asarray(R, dtype=float)
    N = R.shape[0]
    if R.ndim != 2 or R.shape != (N, N):
        raise ValueError(f"R must be square, got shape {R.shape}")
    U = list(dict.fromkeys(int(j) for j in unpenalized))
    F = _feature_index(features, N, U)
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
            if rows.size == F.size:
                G = RFF @ Y
            elif rows.size:
                G = RFF[:, rows] @ Y[rows]
            else:
                G = np.zeros_like(Y)
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
            if np.vdot(Y - Z, delta) > 0.0:  # the momentum points uphill: restart it
                step = 1.0
            nxt = (1.0 + np.sqrt(1.0 + 4.0 * step * step)) / 2.0
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
    C = (C + C.T) / 2.0
    np.fill_diagonal(C, 1.0)
    return floor_eigenvalues(C, _EIGEN_FLOOR)


def held_out_risk(C: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared error of predicting every benchmark ``j`` by :math:`b_j^\\top x` under second moments ``C``, summed.

    :math:`\\operatorname{tr} C - 2\\operatorname{tr}(B^\\top C) + \\operatorname{tr}(B^\\top C B)
    = \\sum_j (e_j - b_j)^\\top C (e_j - b_j)` for the coefficient matrix
    ``B`` (column ``j`` predicts benchmark ``j``), or for each of a stack of
    them.  With ``C`` the mean of :math:`x_i x_i^\\top` over some rows it is
    the sum over the targets of the mean of :math:`(x_{ij} - b_j^\\top x_i)^2`
    over them.  O(L N^3) for ``L`` matrices.

    Parameters
    ----------
    C : ndarray (N, N)
        Second moments (a held-out correlation).
    B : ndarray (N, N) or (L, N, N)
        Coefficients.

    Returns
    -------
    float ndarray of shape ``B.shape[:-2]``
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
    U = list(dict.fromkeys(int(j) for j in unpenalized))
    F = _feature_index(features, N, U)
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

    Every benchmark is predicted from the features (candidates and mandatory
    benchmarks) other than itself, one strength shared by all targets and
    chosen by cross-validation on ``train``; the candidates are ordered by
    their importance :math:`\\sum_j |B_{cj}|` at that strength.

    Parameters
    ----------
    R : ndarray (N, N)
        Training correlation (a covariance is rescaled to one).
    train : ndarray (M, N)
        Standardized training rows, NaN missing; cross-validates the strength.
    k : int
        Number of benchmarks, mandatory ones included (the caller checks the range).
    initial : sequence of int
        Mandatory benchmarks: unpenalized, first in the order in this order.
    candidates : bool ndarray (N,), optional
        Benchmarks that may be selected besides ``initial`` (default: all).
        Every benchmark is a target.
    n_folds : int
        Folds of the strength's cross-validation (row ``i`` in fold ``i % n_folds``).
    n_lambdas : int
        Strengths in the grid, log-spaced over three decades from ``lam_max``
        of the full correlation; the folds use the same grid.
    tol, max_iter : float, int
        Stopping rule of :func:`multi_target_lasso_path` at each strength;
        100 iterations (not the solver's 300) keep a selection on about a
        hundred benchmarks within a few seconds, at the price of a path
        that is not fully converged at the smallest strengths of an
        ill-conditioned correlation.

    Returns
    -------
    SparseResult
        The order and the chosen strength, grid, mean held-out risks and
        active count.

    Raises
    ------
    ValueError
        ``train`` not ``(M, N)``, fewer than ``2 n_folds`` training rows, or
        ``n_folds < 2`` / ``n_lambdas < 1``.

    Notes
    -----
    ``n_folds + 1`` paths (:func:`multi_target_lasso_path`), about
    ``(n_folds + 1) * n_lambdas * iterations * 2 N^3`` operations, plus per
    fold two pairwise correlations and their eigendecompositions,
    ``O(M N^2 + N^3)``, and the held-out risks, ``O(n_lambdas N^3)``.  The
    order does not depend on ``k`` (the strength is chosen once), so a
    smaller selection is a prefix of a larger one.
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

    risk = np.zeros(n_lambdas)
    for _, r in cross_fit(InterleavedFolds(n_folds).folds(m), fold_risk):
        risk += r
    risk /= n_folds
    best = float(risk.min())
    i_star = int(np.flatnonzero(risk <= best + _RISK_RTOL * max(1.0, abs(best)))[0])

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

    The target is the mean standardized score :math:`\\bar z = \\frac1N
    \\sum_j z_j` over all ``N`` benchmarks, regressed on the features ``F``
    (the candidates and the mandatory benchmarks ``U``, unpenalized) by the
    Lasso in covariance form (:func:`lasso_cov_path` with linear term
    :math:`c = \\frac1N R\\mathbf 1`, the covariance of each benchmark with
    the mean).  Along ``n_lambdas`` strengths log-spaced over four decades
    from the smallest at which only ``U`` is active, the candidates are
    ordered by the strength at which they first get a non-zero coefficient
    (ties to the lower index); candidates that never enter follow by
    decreasing :math:`|c_j - R_{jU} b_U|` (their correlation with what ``U``
    leaves of the mean), then by index.  BenchPred's released code selects the
    non-zero coefficients of the Lasso of the mean score whose strength gives
    ``k`` of them; that set is the first ``k`` of this order whenever no
    benchmark leaves the path before ``k`` have entered.

    Parameters
    ----------
    R : ndarray (N, N)
        Training correlation (a covariance is rescaled to one).
    k : int
        Number of benchmarks, mandatory ones included (the caller checks the range).
    initial : sequence of int
        Mandatory benchmarks, first in this order.
    candidates : bool ndarray (N,), optional
        Benchmarks that may be selected besides ``initial`` (default: all);
        every benchmark counts in the mean.
    n_lambdas : int
        Strengths of the path.

    Returns
    -------
    list of int
        The first ``k`` benchmarks of the order (mandatory first); it does not
        depend on ``k``, so a smaller selection is a prefix of a larger one.

    Notes
    -----
    One single-target path, ``O(n_lambdas * sweeps * N^2)`` at most (few
    sweeps per strength once warm started), plus ``O(|U|^3 + N^2)``.
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
    """The second moments of the mean-imputed, centred training rows: ``X.T @ X / m``.

    Every missing score is replaced by its benchmark's training mean (as
    BenchPred's released code does), then every column is centred.  Entry
    ``(i, j)`` is the share of models that ran both benchmarks times the mean,
    over those models, of the product of their scores centred at each
    benchmark's mean: a benchmark that few models ran has a small variance
    and small covariances.

    Parameters
    ----------
    train : ndarray (m, N)
        Training rows (standardized in the pipelines), NaN missing.

    Returns
    -------
    ndarray (N, N)
        Symmetric positive semi-definite.

    Notes
    -----
    ``O(m N^2)`` time, ``O(m N)`` extra memory.
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

    BenchPred's released selection.  Every missing score of ``train`` is
    replaced by its benchmark's mean (a benchmark no row observes by 0); with
    the imputed matrix centred, :math:`X` (``m`` rows), and its row means
    :math:`\\bar x = X\\mathbf 1 / N` as the target, the Lasso of
    scikit-learn's loss :math:`\\frac1{2m}\\lVert\\bar x - Xb\\rVert^2 +
    \\alpha\\sum_{j\\notin U}|b_j|` is solved in covariance form
    (:func:`lasso_cov_path` on :math:`G = X^\\top X / m` and
    :math:`c = G\\mathbf 1 / N`) on the features ``F`` (the candidates with
    a non-zero imputed variance, and the mandatory benchmarks ``U``,
    unpenalized), going down the grid ``alphas`` until more than
    ``k - |U| + 10`` penalized coefficients are non-zero.  The selection is
    the non-zero set with the most non-zeros, at most ``k - |U|``, at the
    smallest such strength: the set of BenchPred's scan up the grid (which
    keeps the smallest strength with exactly ``k``, else the closest count
    below), unless a count of ``k`` or closer comes back only below the
    strengths solved (benchmarks do leave the path: on a Merged fold the
    count goes 10, 11, then 10 again with another set, which this rule
    follows as BenchPred's does).  A set with fewer than ``k`` is completed by the
    candidates with the largest :math:`|c_j - G_{jF} b_F|` at that strength
    (the nearest to entering), then by index.  Unlike
    :func:`mean_lasso_order`, the imputed second moments weigh a benchmark by
    the fraction of models that observed it.

    Parameters
    ----------
    train : ndarray (m, N)
        Standardized training rows, NaN missing.
    k : int
        Number of benchmarks, mandatory ones included (the caller checks the range).
    initial : sequence of int
        Mandatory benchmarks, first in this order.
    candidates : bool ndarray (N,), optional
        Benchmarks that may be selected besides ``initial`` (default: all);
        every benchmark counts in the mean.
    alphas : sequence of float
        The grid of strengths (default :data:`IMPUTED_ALPHAS`, BenchPred's).

    Returns
    -------
    list of int
        Mandatory benchmarks first, then the set's benchmarks by the strength
        at which they entered (earlier first, then index), then the
        completion.  The set of ``k`` need not contain the set of ``k - 1``.

    Notes
    -----
    ``O(m N^2)`` for the second moments, then one path down to the first
    strength with more than ``k + 10`` non-zeros (memoized: the path of a
    larger ``k`` on the same matrix serves this one, so sizes asked for from
    the largest down cost one path): per strength a few
    coordinate-descent sweeps over the ``a <= k + 10`` active coefficients,
    ``O(a^2)`` each, and an ``O(a N)`` optimality check.

    The path is exact wherever a sign pattern settles (:func:`lasso_cov_path`
    then solves its stationarity equations).  scikit-learn's ``lasso_path``
    (the coordinate descent of BenchPred's ``Lasso``, mandatory benchmarks
    partialled out) gave the same orders on BenchPress, Merged, MTEB and MMLU
    folds only with its duality-gap tolerance at ``1e-8`` or below, and was
    then 3 to 57 times slower on the last three; at its default ``tol=1e-4``
    1 to 14 of 60 orders (1 of 60 sets) per matrix differed.  It is not used.
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
