"""The correlation estimate a pipeline selects and predicts with (Section 5.1, Appendix G).

:func:`estimate_correlation` standardizes, estimates the covariance (pairwise
or EM, the paper's "auto" rule) and converts it to a correlation matrix;
:func:`inner_correlation` is the cheaper estimate used inside inner folds;
:class:`Correlation` is a pipeline's estimation step, naming one of them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .._checks import check_data_matrix
from .covariance import cov_to_corr, pairwise_covariance
from .em import EMResult, em_covariance, em_settings
from .scaling import Standardizer, fit_standardizer

__all__ = [
    "Correlation",
    "CorrelationEstimate",
    "ESTIMATORS",
    "estimate_correlation",
    "inner_correlation",
    "EM_MAX_MISSING",
]

#: names of the correlation estimators of a pipeline
ESTIMATORS = ("auto", "pairwise", "em", "fast")
#: EM configurations (:func:`~benchsel_lib.method.em.em_settings`)
CONFIGS = ("released", "early")


@dataclass(frozen=True)
class CorrelationEstimate:
    """Result of :func:`estimate_correlation`.

    Attributes
    ----------
    corr : np.ndarray (N, N)
        Correlation matrix (finite, unit diagonal).
    mean, std : np.ndarray (N,)
        Training means and (floored) standard deviations used to standardize.
    cov : np.ndarray (N, N)
        Covariance of the standardized data.
    method : str
        ``"pairwise"`` or ``"em"``, the estimator actually used.
    em : EMResult or None
        The EM result when EM was used.
    """

    corr: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    cov: np.ndarray
    method: str
    em: EMResult | None = None

    @property
    def standardizer(self) -> Standardizer:
        """The :class:`Standardizer` built from ``mean`` and ``std``."""
        return Standardizer(self.mean, self.std)


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
        settings of :func:`em_settings` for ``config``.
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
        duplicated columns and for ``M < N``.

    Notes
    -----
    Cost: O(M N^2) for pairwise; EM as in :func:`em_covariance`.
    """
    A = check_data_matrix(X, min_rows=2)
    if method not in ("auto", "pairwise", "em"):
        raise ValueError(f"unknown method {method!r}: use 'auto', 'pairwise' or 'em'")
    M, N = A.shape
    st = fit_standardizer(A, std_floor=std_floor)
    Z = st.transform(A)
    obs = ~np.isnan(A)
    if method == "auto":
        method = "pairwise" if obs.all() and M >= N else "em"
    em = None
    if method == "pairwise":
        cov = pairwise_covariance(Z)
    else:
        opts = em_settings(M, N, float(obs.mean()), config=config, context=context)
        if tol is not None:
            opts["tol"] = tol
        if em_options:
            opts.update(em_options)
        em = em_covariance(Z, **opts)
        cov = em.cov
    return CorrelationEstimate(
        corr=cov_to_corr(cov), mean=st.mean, std=st.std, cov=cov, method=method, em=em
    )


#: up to this missing fraction the inner correlation is the EM estimate, above it the pairwise one
EM_MAX_MISSING = 0.5


def inner_correlation(train: np.ndarray) -> np.ndarray:
    """Correlation of (standardized) training rows used inside inner folds and by the recommended pipeline.

    With at most :data:`EM_MAX_MISSING` of the entries missing: the paper's
    estimator (``estimate_correlation(method="auto", context="cv")``: pairwise
    on complete data, EM otherwise), cheap there and better conditioned than
    pairwise correlations.  On sparser matrices (EM per inner fold would cost
    seconds): the pairwise-complete covariance (Appendix G) as a correlation,
    eigenvalues floored at ``1e-4`` and rescaled to a unit diagonal,
    O(m N^2 + N^3).
    """

    tr = np.asarray(train, dtype=float)
    obs_cols = (~np.isnan(tr)).sum(axis=0) >= 2
    if np.isnan(tr).mean() <= EM_MAX_MISSING and obs_cols.all() and tr.shape[0] >= 3:
        try:
            R = np.asarray(estimate_correlation(tr, method="auto", context="cv", std_floor="relative").corr, dtype=float)
            if np.isfinite(R).all():
                return (R + R.T) / 2.0
        except ValueError:
            pass
    ok = (~np.isnan(tr)).sum(axis=0) >= 1
    C = np.eye(tr.shape[1])
    if ok.any():
        sub = tr[:, ok]
        keep = (~np.isnan(sub)).any(axis=1)
        if keep.sum() >= 1:
            C[np.ix_(ok, ok)] = cov_to_corr(pairwise_covariance(sub[keep]))
    w, V = np.linalg.eigh((C + C.T) / 2.0)
    C = (V * np.maximum(w, 1e-4)) @ V.T
    d = np.sqrt(np.diag(C))
    return C / d[:, None] / d[None, :]


@dataclass(frozen=True)
class Correlation:
    """A pipeline's correlation step: which estimator, which EM configuration.

    Parameters
    ----------
    estimator : {"auto", "pairwise", "em", "fast"}
        ``"auto"``, ``"pairwise"``, ``"em"``: :func:`estimate_correlation`
        with that method (Section 5.1's rule for "auto": pairwise on complete
        data with at least as many models as benchmarks, EM otherwise) on the
        training scores in the pipeline's space, standardized with the
        protocol's floor. ``"fast"``: :func:`inner_correlation` of the
        pipeline's standardized rows (EM up to half the entries missing,
        floored pairwise beyond), the estimate of the recommended pipeline.
    config : {"released", "early"}
        EM configuration (Appendix G; :func:`~benchsel_lib.method.em.em_settings`).
    """

    estimator: Literal["auto", "pairwise", "em", "fast"] = "auto"
    config: Literal["released", "early"] = "released"

    def __post_init__(self) -> None:
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"unknown correlation estimator {self.estimator!r}: use one of {ESTIMATORS}")
        if self.config not in CONFIGS:
            raise ValueError(f"unknown EM configuration {self.config!r}: use one of {CONFIGS}")

    def resolved(self, values: np.ndarray) -> str:
        """The estimator that runs on ``values``: ``"pairwise"`` or ``"em"`` (the paper's rule for ``"auto"``), or ``"fast"``."""
        if self.estimator != "auto":
            return self.estimator
        A = np.asarray(values, dtype=float)
        return "pairwise" if not np.isnan(A).any() and A.shape[0] >= A.shape[1] else "em"

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
        Cost: pairwise O(M N^2); EM as :func:`~benchsel_lib.method.em.em_covariance`.
        """
        if self.estimator == "fast":
            return inner_correlation(standardized)
        est = estimate_correlation(values, method=self.estimator, config=self.config, context=context,
                                   std_floor="relative")
        R = np.asarray(est.corr, dtype=float)
        return (R + R.T) / 2.0
