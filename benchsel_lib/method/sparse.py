"""Sparse selection: a cross-validated Lasso of the summary score (the ``"sparse"`` objective).

A peer method selects benchmarks by regressing a summary of all scores on
the benchmarks with a Lasso whose strength is cross-validated, then keeping
the benchmarks with the largest coefficients.  Here the regression is
written on second moments only, so missing scores need no completion.

Summary target
    :math:`y = \\tfrac1N\\sum_j x_j`, the mean standardized score over all
    ``N`` benchmarks.  With the correlation :math:`R` of the standardized
    scores and :math:`w = \\mathbf 1/N`: :math:`\\operatorname{cov}(x, y) = Rw`
    and :math:`\\operatorname{var}(y) = w^\\top R w`.

Lasso in covariance form
    Over the features ``F`` (the candidates and the mandatory benchmarks),

    .. math::  f(b) = \\tfrac12 b^\\top R_{FF} b - b^\\top (Rw)_F
               + \\lambda \\sum_{j\\in F\\setminus U} |b_j| ,

    the population least-squares loss of predicting ``y`` from
    :math:`b^\\top x` (up to the constant :math:`\\tfrac12 w^\\top R w`), with the
    mandatory benchmarks ``U`` unpenalized.  :func:`lasso_cov_path` solves it
    by cyclic coordinate descent with soft thresholding, warm started along
    a decreasing grid of strengths, with an active set (coordinate descent
    on the non-zero coefficients until converged, then a check of the
    optimality conditions on all features).

Cross-validated strength
    The training rows are split into ``n_folds`` folds (row ``i`` in fold
    ``i % n_folds``).  The path is fit on the correlation of the other rows
    and scored by the held-out risk
    :math:`(w - b)^\\top R_{te} (w - b) = b^\\top R_{te} b - 2 b^\\top R_{te} w + w^\\top R_{te} w`,
    the squared error of predicting ``y`` by :math:`b^\\top x` under the
    held-out second moments (:func:`held_out_risk`).  Fold correlations are
    pairwise-complete (:func:`pairwise_correlation`).  The strength with the
    smallest mean risk is chosen (ties to the larger strength).

Selection
    On the full correlation: the mandatory benchmarks, then the benchmarks
    active at the chosen strength by decreasing :math:`|b_j|`, then those that
    enter at the smaller strengths of the grid in order of entry, then the
    rest by decreasing gradient :math:`|(Rw)_j - (R b)_j|` at the smallest
    strength (:func:`sparse_order`).  Everything is deterministic; ties go to
    the lowest index.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["SparseResult", "lasso_cov_path", "pairwise_correlation", "held_out_risk", "lambda_grid", "sparse_order"]


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
        Mean held-out risk at each strength.
    n_active : int
        Non-mandatory benchmarks with a non-zero coefficient at ``lam`` on
        the full correlation.
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
        Linear term (for the summary target, :math:`Rw`).
    lambdas : sequence of float
        Non-negative strengths, in the order they are solved (decreasing for
        warm starts to pay off).
    unpenalized : sequence of int
        Features without penalty (mandatory benchmarks); they belong to ``F``.
    features : bool ndarray (N,) or sequence of int, optional
        The features ``F`` (default: all).

    Returns
    -------
    ndarray (len(lambdas), N)
        Coefficients per strength, zero outside ``F``.

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
    if features is None:
        F = np.arange(N)
    else:
        f = np.asarray(features)
        F = np.flatnonzero(f) if f.dtype == bool else np.unique(f.astype(int))
    U = [int(j) for j in unpenalized]
    if set(U) - set(F.tolist()):
        F = np.union1d(F, U)
    lams = np.asarray(lambdas, dtype=float)
    if lams.ndim != 1 or (lams < 0).any() or not np.isfinite(lams).all():
        raise ValueError("lambdas must be a one-dimensional sequence of non-negative finite strengths")
    penal = np.ones(N, dtype=bool)
    penal[U] = False
    diag = np.diag(R)
    if (diag[F] <= 0).any():
        raise ValueError("R needs a positive diagonal on the features")
    out = np.zeros((lams.size, N))
    b = np.zeros(N)
    active: list[int] = list(dict.fromkeys(U))  # in ascending first-entry order
    for t, lam in enumerate(lams):
        while True:
            A = np.asarray(active, dtype=int)
            if A.size:
                _cd_active(R, c, b, A, penal, float(lam))
            # optimality check on the zero coefficients: |c_j - (R b)_j| <= lam
            grad = c[F] - R[F][:, A] @ b[A] if A.size else c[F].copy()
            inactive = np.ones(F.size, dtype=bool)
            if A.size:
                inactive[np.searchsorted(F, A)] = False
            viol = inactive & (np.abs(grad) > lam * (1.0 + 1e-12) + 1e-15)
            if not viol.any():
                break
            active.extend(int(j) for j in F[viol])
        active = [j for j in active if b[j] != 0.0 or not penal[j]]
        out[t] = b
    return out


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
    Z = np.setdiff1d(np.arange(cA.size), P)
    if Z.size and (np.abs(cA[Z] - RAA[np.ix_(Z, P)] @ xP) > lam * (1.0 + 1e-9)).any():
        return None
    return x


def pairwise_correlation(X: np.ndarray) -> np.ndarray:
    """Pairwise-complete correlation of rows with missing entries, made positive definite.

    Each pair of columns is correlated over the rows observing both (Pearson,
    means and scales of those rows); pairs with fewer than 3 common rows, or
    a constant column among them, get 0; the diagonal is 1.  The eigenvalues
    are then clipped at ``1e-8`` and the matrix rescaled to a unit diagonal.
    O(m N^2 + N^3).
    """
    X = np.asarray(X, dtype=float)
    O = (~np.isnan(X)).astype(float)
    Z = np.where(O > 0, X, 0.0)
    n = O.T @ O
    sx = Z.T @ O  # sx[i, j]: sum of column i over rows observing i and j
    sxx = (Z * Z).T @ O
    sxy = Z.T @ Z
    with np.errstate(divide="ignore", invalid="ignore"):
        nn = np.maximum(n, 1.0)
        cov = sxy - sx * sx.T / nn
        var_i = sxx - sx * sx / nn
        var_j = var_i.T
        den = np.sqrt(np.maximum(var_i, 0.0) * np.maximum(var_j, 0.0))
        ok = (n >= _MIN_PAIRS) & (den > 1e-12 * np.maximum(np.maximum(sxx, sxx.T), 1e-300))
        C = np.where(ok, cov / np.where(ok, den, 1.0), 0.0)
    C = np.clip((C + C.T) / 2.0, -1.0, 1.0)
    np.fill_diagonal(C, 1.0)
    w, V = np.linalg.eigh(C)
    C = (V * np.maximum(w, _EIGEN_FLOOR)) @ V.T
    d = np.sqrt(np.diag(C))
    C = C / np.outer(d, d)
    return (C + C.T) / 2.0


def held_out_risk(C: np.ndarray, B: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Squared error of predicting :math:`y = w^\\top x` by :math:`b^\\top x` under second moments ``C``.

    :math:`b^\\top C b - 2 b^\\top C w + w^\\top C w = (w - b)^\\top C (w - b)` for
    every row ``b`` of ``B`` (one coefficient vector per strength).  With
    ``C`` the mean of :math:`x_i x_i^\\top` over some rows it is the mean of
    :math:`(y_i - b^\\top x_i)^2` over them.  O(L N^2) for ``L`` rows of ``B``.
    """
    D = np.asarray(w, dtype=float)[None, :] - np.atleast_2d(np.asarray(B, dtype=float))
    return np.einsum("ij,jk,ik->i", D, np.asarray(C, dtype=float), D)


def _mandatory_solution(R: np.ndarray, c: np.ndarray, U: list[int]) -> np.ndarray:
    b = np.zeros(R.shape[0])
    if U:
        b[U] = np.linalg.lstsq(R[np.ix_(U, U)], c[U], rcond=None)[0]
    return b


def lambda_grid(R: np.ndarray, c: np.ndarray, *, unpenalized: Sequence[int] = (),
                features: np.ndarray | None = None, n_lambdas: int = 50) -> np.ndarray:
    """The strengths of the path: ``n_lambdas`` log-spaced from ``lam_max`` down to ``1e-3 lam_max``.

    ``lam_max`` is the smallest strength at which only the unpenalized
    benchmarks are active: the largest :math:`|c_j - (R b)_j|` over the
    penalized features at the unpenalized-only solution (``b = 0`` when
    there is none).  O(|U|^3 + |U| N).
    """
    R = np.asarray(R, dtype=float)
    c = np.asarray(c, dtype=float)
    N = R.shape[0]
    U = [int(j) for j in unpenalized]
    free = np.ones(N, dtype=bool) if features is None else np.asarray(features, dtype=bool).copy()
    free[U] = False
    b = _mandatory_solution(R, c, U)
    grad = c - R[:, U] @ b[U] if U else c
    lam_max = float(np.abs(grad[free]).max()) if free.any() else 0.0
    if not lam_max > 0.0:
        lam_max = 1e-12
    return np.geomspace(lam_max, lam_max * _LAMBDA_RATIO, int(n_lambdas))


def _as_correlation(S: np.ndarray) -> np.ndarray:
    d = np.sqrt(np.maximum(np.diag(S), 0.0))
    safe = np.where(d > 0, d, 1.0)
    R = S / np.outer(safe, safe)
    R[d == 0, :] = 0.0
    R[:, d == 0] = 0.0
    np.fill_diagonal(R, 1.0)
    return R


def _by_size(js: Sequence[int], values: np.ndarray) -> list[int]:
    """``js`` by decreasing ``|values[j]|``, ties to the lower index."""
    return sorted((int(j) for j in js), key=lambda j: (-abs(float(values[j])), j))


def sparse_order(
    R: np.ndarray,
    train: np.ndarray,
    k: int,
    *,
    initial: Sequence[int] = (),
    candidates: np.ndarray | None = None,
    n_folds: int = 5,
    n_lambdas: int = 50,
) -> SparseResult:
    """``k`` benchmarks from the cross-validated Lasso of the mean standardized score (see the module docstring).

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
        Every benchmark counts in the summary target.
    n_folds : int
        Folds of the strength's cross-validation (row ``i`` in fold ``i % n_folds``).
    n_lambdas : int
        Strengths in the grid, log-spaced over three decades from ``lam_max``
        of the full correlation; the folds use the same grid.

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
    ``n_folds + 1`` paths (:func:`lasso_cov_path`), each at most
    ``O(n_lambdas * sweeps * N^2)``, plus per fold two pairwise correlations
    and their eigendecompositions, ``O(M N^2 + N^3)``.  The order does not
    depend on ``k`` (the strength is chosen once), so a smaller selection is
    a prefix of a larger one.
    """
    S = np.asarray(R, dtype=float)
    N = S.shape[0]
    R = _as_correlation(S)
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
    U = list(dict.fromkeys(int(j) for j in initial))
    feats = np.ones(N, dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool).copy()
    feats[U] = True
    w = np.full(N, 1.0 / N)

    c = R @ w
    lambdas = lambda_grid(R, c, unpenalized=U, features=feats, n_lambdas=n_lambdas)

    # cross-validated strength
    fold = np.arange(m) % n_folds
    risk = np.zeros(n_lambdas)
    for f in range(n_folds):
        R_tr = pairwise_correlation(tr[fold != f])
        R_te = pairwise_correlation(tr[fold == f])
        B = lasso_cov_path(R_tr, R_tr @ w, lambdas, unpenalized=U, features=feats)
        risk += held_out_risk(R_te, B, w)
    risk /= n_folds
    best = float(risk.min())
    i_star = int(np.flatnonzero(risk <= best + _RISK_RTOL * max(1.0, abs(best)))[0])

    # the order on the full correlation
    B = lasso_cov_path(R, c, lambdas, unpenalized=U, features=feats)
    free = feats.copy()
    free[U] = False
    order = list(U)
    seen = np.zeros(N, dtype=bool)
    seen[U] = True
    n_active = int(((B[i_star] != 0.0) & free).sum())
    for i in range(i_star, n_lambdas):
        new = np.flatnonzero((B[i] != 0.0) & free & ~seen)
        order.extend(_by_size(new, B[i]))
        seen[new] = True
    rest = np.flatnonzero(free & ~seen)
    grad = c - R @ B[-1]
    order.extend(_by_size(rest, grad))
    return SparseResult(order=order[:int(k)], lam=float(lambdas[i_star]), lambdas=lambdas, cv_risk=risk,
                        n_active=n_active)
