"""EM studies of the book (Appendix G): settings ablation, synthetic recovery, the tolerance's effect on selection."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._checks import check_data_matrix, check_int
from ..method.correlation import estimate_correlation
from ..method.covariance import cov_to_corr, observed_mean, pairwise_covariance
from ..method.em import EMResult, em_covariance, em_settings
from ..method.selection import select
from ..protocol.splits import cv_splits
from ..protocol.sweep import Cell, check_n_jobs, run_sweep
from .diagnostics import eigenspectrum

__all__ = [
    "compare_em_settings",
    "condition_number",
    "em_recovery_study",
    "selections_by_tolerance",
]


def condition_number(eigenvalues: Any) -> float:
    """The condition number ``w_max / w_min`` of a symmetric matrix from its eigenvalues; inf when it is singular.

    A matrix is taken as singular when its smallest eigenvalue is at most
    ``N * eps * w_max`` (``N`` eigenvalues, ``eps`` the float64 machine
    epsilon; NumPy's ``matrix_rank`` tolerance): below that the eigenvalue is
    zero to rounding, and its sign and size depend on the linear-algebra
    library, not on the matrix. O(N).

    Parameters
    ----------
    eigenvalues : array_like of float
        The eigenvalues of a symmetric matrix, in any order.

    Returns
    -------
    float
        ``w_max / w_min``, or ``inf`` for a singular matrix (or one with no
        positive eigenvalue).

    Raises
    ------
    ValueError
        No eigenvalue, or one that is NaN or infinite.

    Examples
    --------
    >>> condition_number([1e-3, 1.0, 2.0])
    2000.0
    >>> condition_number([-3e-13, 1.0, 30.0])
    inf
    """
    w = np.sort(np.asarray(eigenvalues, dtype=float).ravel())
    if w.size == 0 or not np.isfinite(w).all():
        raise ValueError(f"eigenvalues must be a non-empty finite sequence, got {w.size} value(s)")
    if w[-1] <= 0 or w[0] <= w.size * np.finfo(float).eps * w[-1]:
        return float("inf")
    return float(w[-1] / w[0])


def compare_em_settings(
    X: np.ndarray,
    settings: dict[str, dict],
    *,
    pairs: list[tuple[int, int]] | None = None,
    pair_names: list[str] | None = None,
    tol: float = 1e-6,
) -> tuple[pd.DataFrame, dict[str, EMResult]]:
    """Fit :func:`em_covariance` under several settings and summarize each fit.

    Used to show the effect of the PSD floor and of Ledoit-Wolf shrinkage
    (Appendix G, "Rank deficiency and sparsity") on one matrix.

    Parameters
    ----------
    X : array_like of shape (M, N)
        Standardized scores with NaN for missing entries.
    settings : dict label -> dict
        Per row of the output, keyword arguments for :func:`em_covariance`
        (for example ``{"eps_psd": 1e-3, "shrinkage": "auto", "max_iter": 1000}``).
    pairs : list of (j, k), optional
        Benchmark index pairs whose estimated correlations are reported.
    pair_names : list of str, optional
        Column names for ``pairs`` (default ``"corr[j,k]"``).
    tol : float
        Convergence tolerance passed to every fit unless a setting overrides it.

    Returns
    -------
    (pandas.DataFrame, dict)
        The table has one row per setting (index: its label) with columns
        ``eps_psd, shrinkage, n_iter, converged, min_eigenvalue,
        condition_number, k90, k95`` (:func:`condition_number` of the
        covariance; components of the correlation matrix for
        90/95% explained variance, Section 5.2) and one column per pair; the
        dict maps each label to its :class:`EMResult`.

    Notes
    -----
    Cost: one EM fit per setting (see :func:`em_covariance`) plus one
    O(N^3) eigendecomposition each.
    """

    if not isinstance(settings, dict) or not settings:
        raise ValueError("settings must be a non-empty dict label -> em_covariance keyword arguments")
    A = check_data_matrix(X, min_rows=2)
    N = A.shape[1]
    pairs = [] if pairs is None else [(int(j), int(k)) for j, k in pairs]
    for j, k in pairs:
        if not (0 <= j < N and 0 <= k < N):
            raise ValueError(f"pair ({j}, {k}) is out of range for {N} benchmarks")
    if pair_names is None:
        pair_names = [f"corr[{j},{k}]" for j, k in pairs]
    if len(pair_names) != len(pairs):
        raise ValueError(f"pair_names has {len(pair_names)} entries for {len(pairs)} pairs")
    rows, fits = [], {}
    for label, kw in settings.items():
        if not isinstance(kw, dict):
            raise ValueError(f"settings[{label!r}] must be a dict of em_covariance arguments")
        opts = {"tol": tol, **kw}
        res = em_covariance(A, **opts)
        fits[label] = res
        w = np.linalg.eigvalsh((res.cov + res.cov.T) / 2.0)
        R = cov_to_corr(res.cov)
        spectrum = eigenspectrum(R)
        row = {
            "eps_psd": res.eps_psd,
            "shrinkage": res.shrinkage,
            "n_iter": res.n_iter,
            "converged": res.converged,
            "min_eigenvalue": float(w[0]),
            "condition_number": condition_number(w),
            "k90": spectrum.n_components(0.90),
            "k95": spectrum.n_components(0.95),
        }
        for (j, k), name in zip(pairs, pair_names):
            row[name] = float(R[j, k])
        rows.append(row)
    return pd.DataFrame(rows, index=pd.Index(list(settings), name="setting")), fits


def em_recovery_study(
    *,
    n_models: int = 200,
    n_benchmarks: int = 20,
    rank: int = 3,
    missing_fractions: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7),
    mechanism: Literal["mar", "mcar"] = "mar",
    strength: float = 1.5,
    n_reps: int = 1,
    seed: int = 0,
    max_iter: int = 500,
    eps_psd: float | None = 1e-6,
    tol: float = 1e-6,
) -> pd.DataFrame:
    """Synthetic recovery check: EM vs pairwise under known covariance and missingness.

    Draws ``M`` models from ``N(mu, R)`` where ``R`` is the correlation matrix
    of ``W W^T + 0.25 I`` (``W`` is ``N x rank`` standard normal) and ``mu`` is
    standard normal, then hides entries. Benchmark 0 is always observed; for
    ``mechanism="mar"`` entry ``(i, j)``, ``j >= 1``, is missing with
    probability ``sigmoid(a + strength * z_i)`` where ``z_i`` is model ``i``'s
    standardized benchmark-0 score (strong models skip benchmarks more often,
    missing at random given benchmark 0) and ``a`` is set by bisection so the
    expected missing fraction of benchmarks 1..N-1 equals the target;
    ``"mcar"`` uses a constant probability. Every column keeps at least two
    observations.

    Parameters
    ----------
    n_models, n_benchmarks, rank : int
        Size of the synthetic matrix and rank of its factor part.
    missing_fractions : tuple of float
        Target missing fractions (of benchmarks 1..N-1), each in [0, 0.95].
    mechanism : {"mar", "mcar"}
        Missingness mechanism.
    strength : float
        Slope of the MAR logistic in the benchmark-0 score.
    n_reps : int
        Replicates per fraction (seeds ``seed, seed + 1, ...``).
    seed : int
        Base random seed.
    max_iter, eps_psd, tol :
        Passed to :func:`em_covariance` (shrinkage off).

    Returns
    -------
    pandas.DataFrame
        One row per (missing_fraction, rep, estimator) with columns
        ``missing_fraction, rep, estimator ("em" | "pairwise"),
        observed_fraction, corr_error`` (``||R_hat - R||_F / ||R||_F``),
        ``mean_error`` (RMS error of the mean; the observed-entry mean of
        Eq. mean-missing for "pairwise"), ``n_iter`` (EM iterations, 0 for
        pairwise).

    Notes
    -----
    Cost per replicate: one EM fit on an ``M x N`` matrix plus the pairwise
    estimate, O(M N^2) per EM iteration.
    """

    for name, v, lo in (("n_models", n_models, 3), ("n_benchmarks", n_benchmarks, 2), ("rank", rank, 1),
                        ("n_reps", n_reps, 1), ("max_iter", max_iter, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    if mechanism not in ("mar", "mcar"):
        raise ValueError(f"unknown mechanism {mechanism!r}: use 'mar' or 'mcar'")
    fracs = [float(f) for f in missing_fractions]
    if not fracs or any(not 0.0 <= f <= 0.95 for f in fracs):
        raise ValueError(f"missing_fractions must be non-empty values in [0, 0.95], got {missing_fractions!r}")
    M, N = int(n_models), int(n_benchmarks)
    rows = []
    for rep in range(int(n_reps)):
        rng = np.random.default_rng(int(seed) + rep)
        W = rng.standard_normal((N, int(rank)))
        R = cov_to_corr(W @ W.T + 0.25 * np.eye(N))
        mu = rng.standard_normal(N)
        X = mu + rng.standard_normal((M, N)) @ np.linalg.cholesky(R).T
        z = (X[:, 0] - X[:, 0].mean()) / X[:, 0].std()
        u = rng.random((M, N - 1))
        for f in fracs:
            if mechanism == "mcar" or f == 0.0:
                p = np.full(M, f)
            else:
                lo_a, hi_a = -30.0, 30.0
                for _ in range(100):
                    a = (lo_a + hi_a) / 2.0
                    if np.mean(1.0 / (1.0 + np.exp(-(a + strength * z)))) < f:
                        lo_a = a
                    else:
                        hi_a = a
                p = 1.0 / (1.0 + np.exp(-(a + strength * z)))
            miss = u < p[:, None]
            for j in range(N - 1):  # keep >= 2 observations per column
                if (~miss[:, j]).sum() < 2:
                    miss[np.argsort(p)[:2], j] = False
            Xm = X.copy()
            Xm[:, 1:][miss] = np.nan
            obs_frac = float((~np.isnan(Xm)).mean())
            mu_pw = observed_mean(Xm)
            R_pw = cov_to_corr(pairwise_covariance(Xm, mean=mu_pw))
            res = em_covariance(Xm, max_iter=int(max_iter), tol=tol, shrinkage=None, eps_psd=eps_psd)
            R_em = cov_to_corr(res.cov)
            nR = float(np.linalg.norm(R))
            for est, Rh, mh, it in (("pairwise", R_pw, mu_pw, 0), ("em", R_em, res.mean, res.n_iter)):
                rows.append({
                    "missing_fraction": f,
                    "rep": rep,
                    "estimator": est,
                    "observed_fraction": obs_frac,
                    "corr_error": float(np.linalg.norm(Rh - R)) / nR,
                    "mean_error": float(np.sqrt(np.mean((mh - mu) ** 2))),
                    "n_iter": int(it),
                })
    return pd.DataFrame(rows)


def _tolerance_fits(X: np.ndarray, tols: Sequence[float | None], *, config: str, method: str, k: int,
                    tie_break: str) -> list[tuple[float, tuple[int, ...], int]]:
    """The fits of one fold of :func:`selections_by_tolerance`: (tolerance used, picks, EM iterations) per tolerance.

    One EM run at the tightest tolerance; the plain EM iteration does not
    depend on the tolerance except where it stops, so the looser ones are
    its snapshots (``em_covariance(snapshot_tols=...)``), bit for bit what
    separate runs return.
    """

    default = em_settings(X.shape[0], X.shape[1], float(np.isfinite(X).mean()), config=config, context="cv")
    used = [float(default["tol"] if t is None else t) for t in tols]
    tight = min(used)
    looser = sorted({t for t in used if t != tight})
    opts = {"snapshot_tols": looser} if looser and default["accelerate"] is None else None
    est = estimate_correlation(X, config=config, context="cv", std_floor="relative", tol=tight, em_options=opts)
    em = getattr(est, "em", None)
    fits: dict[float, tuple[np.ndarray, int]] = {tight: (est.corr, int(em.n_iter) if em is not None else 0)}
    if em is not None:
        for t, _, cov, n_iter, _ in em.snapshots:
            fits[t] = (cov_to_corr(cov), int(n_iter))
    out = []
    for t in used:
        if t not in fits:  # no EM (complete data) or an accelerated run: fit this tolerance on its own
            e = estimate_correlation(X, config=config, context="cv", std_floor="relative", tol=t)
            fits[t] = (e.corr, int(e.em.n_iter) if getattr(e, "em", None) is not None else 0)
        corr, n_iter = fits[t]
        sel = select((corr + corr.T) / 2.0, k, objective=method, tie_break=tie_break)
        out.append((t, tuple(int(j) for j in sel.order), n_iter))
    return out


def selections_by_tolerance(
    matrix: Any,
    *,
    tols: Sequence[float | None] = (None, 1e-6),
    method: str = "mi",
    k: int = 1,
    holdout: float = 0.1,
    n_folds: int = 10,
    seed: int = 0,
    scheme: str = "nested",
    config: str = "released",
    tie_break: str = "auto",
    n_jobs: int = 1,
) -> pd.DataFrame:
    """The greedy selection of every CV training split under several EM tolerances.

    Appendix G names EM's convergence test (relative Frobenius change of
    ``Sigma``) but not its threshold. On a sparse matrix the threshold decides
    where EM stops along flat directions of the likelihood, and with it the
    correlations of thinly observed columns and the benchmarks greedy
    selection picks. This re-runs steps 1-4 of the protocol of
    :func:`benchsel_lib.protocol.cv.cross_validate` (the same splits,
    standardization and candidate columns) with the EM tolerance replaced, and
    reports the first ``k`` picks per fold.

    Parameters
    ----------
    matrix : ScoreMatrix
        Models x benchmarks, as for :func:`benchsel_lib.cross_validate`.
    tols : sequence of float or None
        EM tolerances; None is the protocol's own (``em_settings(...,
        context="cv")``, ``5e-4``), so that row reproduces ``cross_validate``.
    method : {"entropy", "mi"}
    k : int
        Number of picks reported per fold.
    holdout, n_folds, seed, scheme, config, tie_break, n_jobs
        As in :func:`benchsel_lib.cross_validate` (``n_jobs`` worker
        processes over the (fold, tolerance) fits; the result does not depend
        on it).

    Returns
    -------
    pandas.DataFrame
        One row per (tolerance, fold): ``tol`` (the value used), ``fold``,
        ``selected`` (tuple of benchmark names), ``em_iterations``.

    Notes
    -----
    One EM fit per fold, at the tightest tolerance: the looser tolerances'
    results are iterates of the same run (:func:`_tolerance_fits`), so
    ``O(K T M N^2)`` for ``T`` EM iterations (up to 1000 at a tight tolerance
    in the heavy regime).
    """

    if method not in ("entropy", "mi"):
        raise ValueError(f"method must be 'entropy' or 'mi', got {method!r}")
    if not tols:
        raise ValueError("tols must name at least one tolerance")
    for t in tols:
        if t is not None and not (np.isfinite(t) and t > 0):
            raise ValueError(f"every tolerance must be positive (or None), got {t!r}")
    scores = np.asarray(matrix.scores, dtype=float)
    names = list(matrix.benchmarks)
    check_int(k, "k")

    n_jobs = check_n_jobs(n_jobs)
    tasks = []
    for fold, train, _ in cv_splits(scores.shape[0], n_folds=n_folds, holdout=holdout, seed=seed, scheme=scheme):
        X = scores[train]
        cols = np.flatnonzero(np.isfinite(X).sum(axis=0) >= 1)
        if k > cols.size:
            raise ValueError(f"k = {k} exceeds the {cols.size} benchmarks observed in fold {fold}'s training split")
        tasks.append((int(fold), X[:, cols], cols))
    args = dict(config=config, method=method, k=int(k), tie_break=tie_break)
    fits = run_sweep([Cell(label=f"tolerances {list(tols)} fold {fold}", fn=_tolerance_fits, args=(X, list(tols)),
                           kwargs=args, cost=float(X.size))
                      for fold, X, _ in tasks], n_jobs=n_jobs)
    rows = []
    for (fold, _, cols), per_tol in zip(tasks, fits):
        for tol, order, n_iter in per_tol:
            rows.append({"tol": tol, "fold": fold, "selected": tuple(names[cols[j]] for j in order),
                         "em_iterations": n_iter})
    return pd.DataFrame(rows)
