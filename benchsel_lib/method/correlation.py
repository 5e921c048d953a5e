"""The correlation estimate a pipeline selects and predicts with (Section 5.1, Appendix G).

:func:`estimate_correlation` standardizes, estimates the covariance (pairwise
or EM, the paper's "auto" rule) and converts it to a correlation matrix;
:func:`inner_correlation` is the cheaper estimate used inside inner folds;
:class:`Correlation` is a pipeline's estimation step, naming one of them.

Costs: pairwise O(M N^2); EM O(M N^2 + N^3 + sum_p s_p^3) per iteration.
Where EM would take too long (:func:`em_too_costly`) the floored pairwise
correlation (:func:`floored_pairwise_correlation`) replaces it, held in
low-rank form on a wide matrix (:func:`~benchsel_lib.method.lowrank.wide_route`);
the thresholds lie far above the paper's matrices. Dense estimates whose
N x N arrays would exceed :data:`DENSE_MEMORY_LIMIT` are refused before any
work (:func:`check_dense_memory`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .._checks import check_data_matrix
from .base import Component
from .covariance import cov_to_corr, floor_eigenvalues, pairwise_covariance, symmetrize_in_place
from .em import EMResult, em_covariance, em_settings
from .lowrank import LowRankCorrelation, floored_factor, low_rank_floored_correlation, wide_route
from .scaling import fit_standardizer

__all__ = [
    "Correlation",
    "CorrelationEstimate",
    "ESTIMATORS",
    "estimate_correlation",
    "inner_correlation",
    "floored_pairwise_correlation",
    "em_too_costly",
    "costly_em_note",
    "EM_MAX_MISSING",
    "EM_WIDE_BENCHMARKS",
    "EM_MAX_BENCHMARKS",
    "EIGEN_FLOOR",
    "DENSE_MEMORY_LIMIT",
    "dense_memory",
    "check_dense_memory",
    "dense_route",
]

#: names of the correlation estimators of a pipeline
ESTIMATORS = ("auto", "pairwise", "em", "fast")
#: EM configurations (:func:`~benchsel_lib.method.em.em_settings`)
CONFIGS = ("released", "early")
#: with fewer models than benchmarks, EM on more than this many benchmarks takes too long
EM_WIDE_BENCHMARKS = 500
#: EM on more than this many benchmarks takes too long whatever the number of models
EM_MAX_BENCHMARKS = 2000
#: eigenvalue floor of the pairwise correlation (:func:`floored_pairwise_correlation`)
EIGEN_FLOOR = 1e-4
#: the most memory, in bytes, of the N x N arrays of an estimate and its fit (read at call time)
DENSE_MEMORY_LIMIT = 1_000_000_000
#: N x N float arrays held at once by a pipeline's fit on each dense route (measured peaks)
_DENSE_ARRAYS = {"pairwise": 7, "em": 16, "pairwise-floored": 6}


def em_too_costly(n_models: int, n_benchmarks: int) -> bool:
    """Whether EM would take too long: ``M < N`` and ``N >`` :data:`EM_WIDE_BENCHMARKS`, or ``N >`` :data:`EM_MAX_BENCHMARKS`. O(1)."""
    M, N = int(n_models), int(n_benchmarks)
    return (M < N and N > EM_WIDE_BENCHMARKS) or N > EM_MAX_BENCHMARKS


def costly_em_note(n_models: int, n_benchmarks: int) -> str:
    """The one line that says EM was replaced by the floored pairwise correlation on this shape. O(1)."""
    why = "fewer models than benchmarks" if n_models < n_benchmarks else "that many benchmarks"
    wide = (", held as a diagonal plus a low-rank part (any missing score set to its benchmark's mean)"
            if wide_route(n_models, n_benchmarks) else "")
    return (f"EM on {n_models:,} models x {n_benchmarks:,} benchmarks would take too long ({why}: "
            f"O(N^3) work per iteration, up to 1000 iterations); using the pairwise correlation with "
            f"eigenvalues floored at {EIGEN_FLOOR:g} instead{wide}")


def dense_memory(n_benchmarks: int, method: str | None) -> int:
    """Bytes of the N x N arrays that a fit on the dense route ``method`` holds at once (0 for another). O(1)."""
    return _DENSE_ARRAYS.get(method, 0) * 8 * int(n_benchmarks) ** 2


def _bytes(n: float) -> str:
    """``n`` bytes as ``"3.2 GB"`` / ``"450 MB"`` / ``"0.0896 MB"`` (decimal units). O(1)."""
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.3g} MB"


def check_dense_memory(n_models: int, n_benchmarks: int, method: str | None, *,
                       estimator: str | None = None) -> None:
    """Refuse an estimate whose N x N arrays would take more than :data:`DENSE_MEMORY_LIMIT`, before any work.

    Parameters
    ----------
    n_models, n_benchmarks : int
        The shape of the training rows.
    method : str or None
        The route that would run (:func:`dense_route`); None, a low-rank or
        an unknown one needs no N x N array and passes.
    estimator : str, optional
        The estimator as the caller named it (for the message; default ``method``).

    Raises
    ------
    ValueError
        One line: the estimator, the shape, the memory needed, the limit,
        and what to use instead.

    Notes
    -----
    O(1).
    """
    need = dense_memory(n_benchmarks, method)
    if need <= DENSE_MEMORY_LIMIT:
        return
    M, N = int(n_models), int(n_benchmarks)
    name = estimator or str(method)
    if wide_route(M, N):
        instead = ("use estimator 'auto' (--estimator auto) or 'fast' instead: on a matrix with fewer models than "
                   "benchmarks they hold the floored correlation as a diagonal plus a low-rank part, in memory "
                   "proportional to models x benchmarks")
    else:
        instead = ("select among fewer benchmarks (drop the rarely observed ones, or split the matrix), or raise "
                   "benchsel_lib.method.correlation.DENSE_MEMORY_LIMIT on a machine with that memory")
    raise ValueError(f"the {name!r} correlation estimate on {M:,} models x {N:,} benchmarks would need about "
                     f"{_bytes(need)} ({_DENSE_ARRAYS[method]} arrays of {N:,} x {N:,} floats), above the limit of "
                     f"{_bytes(DENSE_MEMORY_LIMIT)}; {instead}")


def dense_route(estimator: str, values: np.ndarray, *, standardized: np.ndarray | None = None) -> str | None:
    """The dense route that ``estimator`` takes on ``values``, or None where it holds no N x N array. O(M N).

    ``"fast"`` reads ``standardized`` (default ``values``).
    """
    A = np.asarray(values if estimator != "fast" or standardized is None else standardized, dtype=float)
    if A.ndim != 2:
        return None
    M, N = A.shape
    if estimator in ("pairwise", "em"):
        return estimator
    if estimator == "auto":
        method = _auto_method(A)
    elif estimator == "fast":
        method = _auto_method(A) if _inner_route(A) == "paper" else "pairwise-floored"
    else:
        return None
    if method == "pairwise-floored" and (M >= 2 and wide_route(M, N) or
                                         M < N and N > EM_WIDE_BENCHMARKS and M >= 2 and not np.isnan(A).any()):
        return None  # low-rank (or one N x N array through the m x m Gram matrix)
    return method


def _auto_method(A: np.ndarray) -> str:
    """The estimator of the "auto" rule on ``A``: "pairwise", "em" or "pairwise-floored" (EM too costly)."""
    M, N = A.shape
    if not np.isnan(A).any() and M >= N:
        return "pairwise"
    return "pairwise-floored" if em_too_costly(M, N) else "em"


@dataclass(frozen=True)
class CorrelationEstimate:
    """Result of :func:`estimate_correlation`.

    Attributes
    ----------
    corr : np.ndarray (N, N) or LowRankCorrelation
        Correlation matrix (finite, unit diagonal); for ``"pairwise-floored"``
        on a wide matrix (:func:`~benchsel_lib.method.lowrank.wide_route`)
        held as a diagonal plus a low-rank part.
    mean, std : np.ndarray (N,)
        Training means and (floored) standard deviations used to standardize.
    cov : np.ndarray (N, N)
        Covariance of the standardized data.
    method : str
        ``"pairwise"``, ``"em"`` or ``"pairwise-floored"``, the estimator actually used.
    em : EMResult or None
        The EM result when EM was used.

    Notes
    -----
    Complexity: O(N^2) memory (O(N r) for a low-rank one).
    """

    corr: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    cov: np.ndarray
    method: str
    em: EMResult | None = None


def estimate_correlation(
    X: np.ndarray,
    *,
    method: Literal["auto", "pairwise", "em"] = "auto",
    config: Literal["released", "early"] = "released",
    context: Literal["full", "cv"] = "full",
    std_floor: Literal["relative", "variance"] = "relative",
    tol: float | None = None,
    em_options: dict | None = None,
) -> CorrelationEstimate:
    """Standardize, estimate the covariance, and convert it to a correlation matrix.

    Parameters
    ----------
    X : array_like or ScoreMatrix of shape (M, N)
        Training scores with NaN for missing entries.
    method : {"auto", "pairwise", "em"}
        ``"auto"`` follows the paper (Section 5.1): the pairwise estimate
        (Eq. pairwise-cov, here the ``1/(M-1)`` sample covariance) when no
        entry is missing and ``M >= N``; otherwise EM (Appendix G) with the
        settings of :func:`em_settings` for ``config`` -- unless EM would
        take too long (:func:`em_too_costly`), where it is the floored
        pairwise correlation (:func:`floored_pairwise_correlation`, method
        ``"pairwise-floored"``).
    config : {"released", "early"}
        EM configuration, see :func:`em_settings`.
    context : {"full", "cv"}
        Whole matrix or cross-validation training split; selects the EM
        tolerance, see :func:`em_settings`.
    std_floor : {"relative", "variance"}
        Standard-deviation floor of :func:`fit_standardizer` ("relative" is
        the CV rule, "variance" the eigenspectrum rule).
    tol : float, optional
        EM convergence tolerance (relative Frobenius change); default: the
        tolerance of :func:`em_settings` for ``config`` and ``context``.
    em_options : dict, optional
        Overrides passed to :func:`em_covariance` (for example ``max_iter``).

    Returns
    -------
    CorrelationEstimate
        ``corr = cov_to_corr(cov)``; always finite, also for constant or
        duplicated columns and for ``M < N``. For ``"pairwise-floored"``
        ``cov`` is the floored correlation itself.

    Notes
    -----
    Cost: O(M N^2) for pairwise; EM as in :func:`em_covariance`;
    pairwise-floored as :func:`floored_pairwise_correlation`.

    Raises
    ------
    ValueError
        An unknown method; N x N arrays that would exceed
        :data:`DENSE_MEMORY_LIMIT` (:func:`check_dense_memory`, before any work).
    """
    A = check_data_matrix(X, min_rows=2)
    if method not in ("auto", "pairwise", "em"):
        raise ValueError(f"unknown method {method!r}: use 'auto', 'pairwise' or 'em'")
    M, N = A.shape
    st = fit_standardizer(A, std_floor=std_floor)
    Z = st.transform(A)
    check_dense_memory(M, N, dense_route(method, A), estimator=method)  # before any N x N array
    if method == "auto":
        method = _auto_method(A)
    em = None
    if method == "pairwise-floored":  # already a correlation: cleaned in place (N x N copies are big here)
        cov = floored_pairwise_correlation(Z)
        if not isinstance(cov, LowRankCorrelation):  # the factored one is exactly symmetric with a unit diagonal
            cov = _clean_correlation(cov)
        return CorrelationEstimate(corr=cov, mean=st.mean, std=st.std, cov=cov, method=method)
    if method == "pairwise":
        cov = pairwise_covariance(Z)
    else:
        opts = em_settings(M, N, float((~np.isnan(A)).mean()), config=config, context=context)
        if tol is not None:
            opts["tol"] = tol
        if em_options:
            opts.update(em_options)
        em = em_covariance(Z, **opts)
        cov = em.cov
    return CorrelationEstimate(corr=cov_to_corr(cov), mean=st.mean, std=st.std, cov=cov, method=method, em=em)


#: up to this missing fraction the inner correlation is the EM estimate, above it the pairwise one
EM_MAX_MISSING = 0.5


def inner_correlation(train: np.ndarray) -> np.ndarray:
    """Correlation of (standardized) training rows used inside inner folds and by the recommended pipeline.

    With at most :data:`EM_MAX_MISSING` of the entries missing: the paper's
    estimator (``estimate_correlation(method="auto", context="cv")``). On
    sparser matrices and where EM would take too long:
    :func:`floored_pairwise_correlation`, O(m N^2 + N^3) (O(m^2 N) low-rank
    on a wide matrix).
    """
    tr = np.asarray(train, dtype=float)
    if _inner_route(tr) == "paper":
        try:
            R = np.asarray(estimate_correlation(tr, context="cv").corr, dtype=float)
            if np.isfinite(R).all():
                return symmetrize_in_place(R)
        except ValueError:
            pass
    return floored_pairwise_correlation(tr)


def _inner_route(tr: np.ndarray) -> str:
    """The route of :func:`inner_correlation`: "paper" (the "auto" estimate), "floored", or "costly" (floored: EM too costly). O(m N)."""
    if np.isnan(tr).mean() <= EM_MAX_MISSING and ((~np.isnan(tr)).sum(axis=0) >= 2).all() and tr.shape[0] >= 3:
        return "costly" if _auto_method(tr) == "pairwise-floored" else "paper"
    return "floored"


def floored_pairwise_correlation(train: np.ndarray, *, floor: float = EIGEN_FLOOR,
                                 low_rank: bool | None = None) -> np.ndarray | LowRankCorrelation:
    """The pairwise-complete correlation with its eigenvalues floored at ``floor``, rescaled to a unit diagonal.

    Built from the pairwise-complete covariance (Appendix G); columns never
    observed: identity.

    Parameters
    ----------
    train : ndarray (m, N)
        Scores (standardized or not), NaN missing.
    floor : float
        Smallest eigenvalue before the rescaling.
    low_rank : bool, optional
        Hold the result as a diagonal plus a low-rank part
        (:func:`~benchsel_lib.method.lowrank.low_rank_floored_correlation`);
        default: on a wide matrix
        (:func:`~benchsel_lib.method.lowrank.wide_route`), far above the
        paper's sizes.

    Returns
    -------
    ndarray (N, N) or LowRankCorrelation

    Notes
    -----
    Cost O(m N^2 + N^3). A complete matrix with ``m < N`` and more than
    :data:`EM_WIDE_BENCHMARKS` columns goes through the m x m Gram matrix,
    O(m^2 N + m N^2). The low-rank form costs O(m^2 N + m^3) and O(m N)
    memory (from the mean-imputed matrix).
    """
    tr = np.asarray(train, dtype=float)
    m, N = tr.shape
    if m >= 2 and (wide_route(m, N) if low_rank is None else low_rank):
        return low_rank_floored_correlation(tr, floor=floor)
    if m < N and N > EM_WIDE_BENCHMARKS and m >= 2 and not np.isnan(tr).any():
        return _floored_low_rank(tr, floor)
    ok = ~np.isnan(tr).all(axis=0)
    C = np.eye(N)
    if ok.any():
        sub = tr[:, ok]
        C[np.ix_(ok, ok)] = cov_to_corr(pairwise_covariance(sub[~np.isnan(sub).all(axis=1)]))
    return floor_eigenvalues(C, floor)


def _floored_low_rank(tr: np.ndarray, floor: float) -> np.ndarray:
    """:func:`floored_pairwise_correlation` of a complete ``m x N`` matrix (``m < N``) via its Gram matrix."""
    W, const = floored_factor(tr - tr.mean(axis=0), floor)
    C = W @ W.T
    C[np.diag_indices(C.shape[0])] += floor + (1.0 - floor) * const
    d = np.sqrt(np.diag(C))
    C /= d[:, None]
    C /= d[None, :]
    return _clean_correlation(C)


def _clean_correlation(C: np.ndarray) -> np.ndarray:
    """``C`` made exactly symmetric (blockwise, no N x N copy), clipped to [-1, 1], unit diagonal; in place. O(N^2)."""
    symmetrize_in_place(C)
    np.clip(C, -1.0, 1.0, out=C)
    np.fill_diagonal(C, 1.0)
    return C


@dataclass(frozen=True)
class Correlation(Component):
    """A pipeline's correlation step: which estimator, which EM configuration.

    Parameters
    ----------
    estimator : {"auto", "pairwise", "em", "fast"}
        ``"auto"``, ``"pairwise"``, ``"em"``: :func:`estimate_correlation`
        with that method (Section 5.1's rule for "auto") on the training
        scores in the pipeline's space, standardized with the protocol's
        floor. ``"fast"``: :func:`inner_correlation` of the pipeline's
        standardized rows, the estimate of the recommended pipeline.
    config : {"released", "early"}
        EM configuration (Appendix G; :func:`~benchsel_lib.method.em.em_settings`).

    Notes
    -----
    Complexity: constructing it is O(1); :meth:`estimate` costs O(M N^2)
    pairwise, O(M N^2 + N^3) floored pairwise, and O(M N^2 + N^3 + sum_p s_p^3)
    per EM iteration (module docstring), :meth:`note` O(M N).
    """

    estimator: Literal["auto", "pairwise", "em", "fast"] = "auto"
    config: Literal["released", "early"] = "released"

    def __post_init__(self) -> None:
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"unknown correlation estimator {self.estimator!r}: use one of {ESTIMATORS}")
        if self.config not in CONFIGS:
            raise ValueError(f"unknown EM configuration {self.config!r}: use one of {CONFIGS}")

    def resolved(self, values: np.ndarray) -> str:
        """The estimator that runs on ``values``: ``"pairwise"``, ``"em"`` or ``"pairwise-floored"`` (the rule for ``"auto"``), or ``"fast"``.

        O(1), or O(M N) for ``"auto"`` (a scan of ``values`` for missing entries).
        """
        return self.estimator if self.estimator != "auto" else _auto_method(np.asarray(values, dtype=float))

    def note(self, values: np.ndarray, *, standardized: np.ndarray | None = None) -> str | None:
        """One line when EM would take too long here and the floored pairwise correlation replaces it, else None.

        ``values`` as for :meth:`estimate`; ``"fast"`` reads ``standardized``
        (default ``values``). O(M N).
        """
        if self.estimator not in ("auto", "fast"):
            return None
        A = np.asarray(values if self.estimator == "auto" or standardized is None else standardized, dtype=float)
        costly = _auto_method(A) == "pairwise-floored" if self.estimator == "auto" else _inner_route(A) == "costly"
        return costly_em_note(*A.shape) if costly else None

    def estimate(self, values: np.ndarray, standardized: np.ndarray, *, context: Literal["full", "cv"] = "cv") -> np.ndarray:
        """The (symmetric) correlation of the training rows.

        Parameters
        ----------
        values : ndarray (M, N)
            Training scores in the pipeline's space, not standardized (NaN missing).
        standardized : ndarray (M, N)
            The same rows as the pipeline standardized them (``"fast"`` reads these).
        context : {"full", "cv"}
            A whole matrix or a cross-validation training split (the EM tolerance, Appendix G).

        Notes
        -----
        Cost as the class's Notes; memory a few N x N arrays, or O(M N) on a
        wide matrix, whose floored correlation is returned as a
        :class:`~benchsel_lib.method.lowrank.LowRankCorrelation`.

        Raises
        ------
        ValueError
            N x N arrays that would exceed :data:`DENSE_MEMORY_LIMIT`
            (:meth:`check_memory`, before any work).
        """
        self.check_memory(values, standardized=standardized)
        if self.estimator == "fast":
            return inner_correlation(standardized)  # type: ignore[return-value]
        est = estimate_correlation(values, method=self.estimator, config=self.config, context=context)
        if est.method == "pairwise-floored":  # symmetric already (a wide matrix's: low-rank, kept so)
            return est.corr
        return symmetrize_in_place(np.asarray(est.corr, dtype=float))  # a fresh array: no N x N copy

    def check_memory(self, values: np.ndarray, *, standardized: np.ndarray | None = None) -> None:
        """Refuse, before any work, an estimate on ``values`` whose N x N arrays exceed :data:`DENSE_MEMORY_LIMIT`.

        ``values`` (and ``standardized``) as for :meth:`estimate`; the
        ``ValueError`` of :func:`check_dense_memory` says the memory the
        estimate would need and what to use instead. O(M N).
        """
        A = np.asarray(values, dtype=float)
        if A.ndim == 2:
            check_dense_memory(*A.shape, dense_route(self.estimator, A, standardized=standardized),
                               estimator=self.estimator)
