"""The Gaussian conditional mean and variance (Section 3, Eqs. cond-mean and cond-var): the paper's predictor.

Given a mean vector :math:`\\mu` and covariance :math:`\\Sigma`, the scores of a
model on the unobserved benchmarks :math:`T` given its scores on the observed
benchmarks :math:`A` are Gaussian with

.. math::
    \\mathbb E[B_T \\mid B_A] = \\mu_T + \\Sigma_{TA} (\\Sigma_{AA} + \\lambda I)^{-1} (B_A - \\mu_A),
    \\qquad
    \\mathrm{Cov}(B_T \\mid B_A) = \\Sigma_{TT} - \\Sigma_{TA} (\\Sigma_{AA} + \\lambda I)^{-1} \\Sigma_{AT},

where the ridge :math:`\\lambda` (``1e-2`` in the paper's protocol, Section 5.1)
keeps the solve stable. :func:`conditional_moments` (one batched solve per
reveal pattern) serves :func:`conditional_impute`, :func:`impute_missing` and
:class:`GaussianPredictor`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_covariance, check_nonnegative
from .base import BasePredictor, check_rows, check_train_query
from .correlation import estimate_correlation
from .lowrank import LowRankCorrelation, as_correlation_matrix

__all__ = [
    "ConditionalResult",
    "conditional_moments",
    "conditional_impute",
    "impute_missing",
    "GaussianPredictor",
    "pattern_groups",
]

#: smallest conditional variance reported (a target the conditioning set explains fully)
VAR_FLOOR = 1e-12
#: a conditional variance below -NEGATIVE_RTOL x the largest variance means the covariance is not PSD
NEGATIVE_RTOL = 1e-8


@dataclass(frozen=True)
class ConditionalResult:
    """Gaussian conditional distribution of target benchmarks given observed ones.

    Attributes
    ----------
    mean : ndarray of shape (n, T)
        Conditional means, one row per conditioning row (Eq. cond-mean).
    cov : ndarray of shape (T, T)
        Conditional covariance (Eq. cond-var), shared by all rows since it
        does not depend on the observed values.
    target_idx : ndarray of shape (T,)
        Benchmark indices of the columns of ``mean``.
    """

    mean: np.ndarray
    cov: np.ndarray
    target_idx: np.ndarray

    @property
    def var(self) -> np.ndarray:
        """Conditional variances, the diagonal of :attr:`cov` (floored at 0). O(T)."""
        return np.maximum(np.diag(self.cov), 0.0)

    @property
    def std(self) -> np.ndarray:
        """Conditional standard deviations. O(T)."""
        return np.sqrt(self.var)


def _as_index(idx: object, n: int, what: str) -> np.ndarray:
    """``idx`` as distinct integer indices in ``0..n-1``; ``ValueError`` naming ``what`` otherwise."""
    arr = np.asarray(idx if idx is not None else [], dtype=object).reshape(-1)
    out = []
    for it in arr:
        if isinstance(it, (bool, np.bool_)) or not isinstance(it, (int, np.integer)):
            raise ValueError(f"{what} must be integer benchmark indices, got {it!r}")
        i = int(it)
        if not 0 <= i < n:
            raise ValueError(f"{what} index {i} is out of range 0..{n - 1}")
        out.append(i)
    res = np.asarray(out, dtype=np.intp)
    if np.unique(res).size != res.size:
        raise ValueError(f"{what} contains repeated indices")
    return res


def _check_mean(mean: Any, N: int) -> np.ndarray:
    """``mean`` as a finite length-``N`` vector (a scalar is broadcast)."""
    mu = np.asarray(mean, dtype=float)
    if mu.ndim == 0:
        mu = np.full(N, float(mu))
    mu = mu.reshape(-1)
    if mu.shape[0] != N:
        raise ValueError(f"mean has length {mu.shape[0]} but cov is {N} x {N}")
    if not np.isfinite(mu).all():
        raise ValueError("mean contains NaN or infinite entries")
    return mu


def pattern_groups(pat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique rows of a boolean (v, k) pattern matrix and the inverse map (bit-packed when k <= 62). O(v k)."""
    v, k = pat.shape
    if k <= 62:
        codes = pat.astype(np.int64) @ (np.int64(1) << np.arange(k, dtype=np.int64))
        _, first, inv = np.unique(codes, return_index=True, return_inverse=True)
        return pat[first], inv.reshape(-1)
    keys, inv = np.unique(pat, axis=0, return_inverse=True)
    return keys, inv.reshape(-1)


def _pattern_weights(
    cov: np.ndarray, columns: np.ndarray, patterns: np.ndarray, targets: np.ndarray, ridge: float
) -> tuple[np.ndarray, np.ndarray]:
    """Weights ``(Sigma_AA + ridge I)^{-1} Sigma_AT`` (G, k, T) of every pattern and ``Sigma_AT``, one batched solve."""
    k = columns.size
    Rss = cov[np.ix_(columns, columns)] + ridge * np.eye(k)
    RsT = cov[np.ix_(columns, targets)]
    km = patterns.astype(float)  # (G, k)
    S = Rss[None, :, :] * km[:, :, None] * km[:, None, :]
    S += np.eye(k)[None, :, :] * (1.0 - km)[:, :, None]
    B = RsT[None, :, :] * km[:, :, None]  # (G, k, T)
    try:
        W = np.linalg.solve(S, B)
    except np.linalg.LinAlgError:
        W = np.stack([np.linalg.lstsq(S[g], B[g], rcond=None)[0] for g in range(S.shape[0])])
    return W, B


def conditional_moments(
    cov: np.ndarray, query: np.ndarray, columns: Sequence[int], targets: Sequence[int], *, ridge: float = 1e-2
) -> tuple[np.ndarray, np.ndarray]:
    """Conditional means and variances of ``targets`` for every query row (Eqs. cond-mean, cond-var; mean 0).

    Parameters
    ----------
    cov : ndarray (N, N) or LowRankCorrelation
        Covariance or correlation of the standardized scores (a wide
        matrix's low-rank correlation: only the blocks ``R[A, A]`` and
        ``R[A, T]`` are formed, O(k (k + T) r)).
    query : ndarray (v, N)
        Standardized scores, NaN where hidden.
    columns : sequence of int
        The benchmarks a row may be conditioned on (a selection, in its
        order); each row is conditioned on those of them it reveals.
    targets : sequence of int
        Benchmarks to predict.
    ridge : float
        Added to the diagonal of the conditioning block (1e-2 in the protocol).

    Returns
    -------
    mean, var : ndarray (v, T)
        Conditional means and variances (variances floored at ``VAR_FLOOR``).

    Notes
    -----
    Rows are grouped by the subset of ``columns`` they reveal (``G``
    patterns). Cost O(G k^3 + G k^2 T + v k T); ``cov`` is not checked.

    Raises
    ------
    ValueError
        A covariance that is not a square array, a query that is not (v, N) or holds infinite values,
        or column and target indices that are not distinct integers in
        0..N-1.
    """
    cov = as_correlation_matrix(cov)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValueError(f"cov must be a square (N, N) matrix, got shape {cov.shape}")
    N = cov.shape[0]
    q = check_rows(query, "query")
    if q.shape[1] != N:
        raise ValueError(f"query must be (models x {N} benchmarks) like cov, got shape {q.shape}")
    sel = _as_index(columns, N, "columns")
    T = _as_index(targets, N, "targets")
    pat = ~np.isnan(q[:, sel])
    keys, inv = pattern_groups(pat)
    W, B = _pattern_weights(cov, sel, keys, T, float(ridge))
    xs = np.where(pat, q[:, sel], 0.0)  # (v, k)
    pred = np.einsum("rk,rkt->rt", xs, W[inv])
    red = np.einsum("gkt,gkt->gt", B, W)  # explained variance per group
    var = cov.diagonal()[T][None, :] - red[inv]
    return pred, np.maximum(var, VAR_FLOOR)


def _fill(cov: np.ndarray, query: np.ndarray, *, ridge: float) -> tuple[np.ndarray, np.ndarray]:
    """Every entry of ``query`` (v, N): revealed ones as given (variance 0), hidden ones conditioned on the revealed."""
    revealed = ~np.isnan(query)
    columns = np.flatnonzero(revealed.any(axis=0))
    mean, var = conditional_moments(cov, query, columns, np.arange(query.shape[1]), ridge=ridge)
    return np.where(revealed, query, mean), np.where(revealed, 0.0, var)


def conditional_impute(
    cov: object,
    mean: object,
    x_observed: object,
    observed_idx: Sequence[int],
    *,
    ridge: float = 1e-2,
    target_idx: Sequence[int] | None = None,
) -> ConditionalResult:
    """Gaussian conditional mean and covariance of targets given observed benchmarks.

    Eqs. (cond-mean) and (cond-var) of Section 3 with a ridge ``ridge * I``
    added to :math:`\\Sigma_{AA}` (Section 5.1 uses ``1e-2``); all rows share
    the pattern ``observed_idx``.

    Parameters
    ----------
    cov : array_like of shape (N, N)
        Covariance (or correlation) matrix.
    mean : array_like of shape (N,) or scalar
        Mean vector (a scalar is broadcast; the CV protocol uses 0 in
        standardized space).
    x_observed : array_like of shape (n, |A|) or (|A|,)
        Observed values, columns ordered as ``observed_idx``; must be finite.
    observed_idx : sequence of int
        Indices ``A`` of the observed benchmarks (may be empty: then the
        result is the marginal mean and covariance).
    ridge : float, keyword-only
        Non-negative ridge added to the diagonal of :math:`\\Sigma_{AA}`.
    target_idx : sequence of int, optional
        Indices ``T`` to predict; default all benchmarks not in ``A``.

    Returns
    -------
    ConditionalResult
        ``mean`` (n, |T|), ``cov`` (|T|, |T|), ``target_idx``.

    Raises
    ------
    ValueError
        On a malformed covariance, a mean of the wrong length, a shape
        mismatch between ``x_observed`` and ``observed_idx``, non-finite
        observations, out-of-range or repeated indices, a negative ridge, or
        a covariance that gives a negative conditional variance (not positive
        semi-definite).

    Notes
    -----
    Cost O(|A|^3 + |A|^2 |T| + n |A| |T| + |A| |T|^2).
    """
    C = check_covariance(cov)
    N = C.shape[0]
    mu = _check_mean(mean, N)
    ridge = check_nonnegative(ridge, "ridge")
    obs = _as_index(observed_idx, N, "observed_idx")
    tgt = np.setdiff1d(np.arange(N), obs) if target_idx is None else _as_index(target_idx, N, "target_idx")
    x = check_rows(x_observed, "x_observed")
    if x.shape[1] != obs.size:
        raise ValueError(f"x_observed has {x.shape[1]} columns but observed_idx lists {obs.size} benchmarks")
    if not np.isfinite(x).all():
        raise ValueError("x_observed contains NaN or infinite values (pass only observed entries)")
    W, B = _pattern_weights(C, obs, np.ones((1, obs.size), dtype=bool), tgt, float(ridge))
    cmean = mu[tgt][None, :] + (x - mu[obs][None, :]) @ W[0]
    ccov = C[np.ix_(tgt, tgt)] - B[0].T @ W[0]
    ccov = (ccov + ccov.T) / 2.0
    var = np.diag(ccov)
    if tgt.size and float(var.min()) < -NEGATIVE_RTOL * float(np.diag(C).max()):
        j = int(tgt[np.argmin(var)])
        raise ValueError(f"cov is not positive semi-definite: the conditional variance of benchmark {j} given the "
                         f"observed ones is {float(var.min()):.3g} < 0")
    return ConditionalResult(cmean, ccov, tgt)


def impute_missing(
    cov: object, mean: object, X: object, *, ridge: float = 1e-2
) -> tuple[np.ndarray, np.ndarray]:
    """Fill every ``NaN`` in ``X`` with its Gaussian conditional mean.

    Through :func:`conditional_moments` (Eqs. cond-mean, cond-var); rows with
    no observation get the mean and the marginal variance.

    Parameters
    ----------
    cov : array_like of shape (N, N)
    mean : array_like of shape (N,) or scalar
    X : array_like of shape (M, N)
        Scores with ``NaN`` for missing entries.
    ridge : float, keyword-only
        Ridge added to the observed block (default ``1e-2``).

    Returns
    -------
    filled : ndarray of shape (M, N)
        ``X`` with missing entries replaced by conditional means.
    cond_var : ndarray of shape (M, N)
        Conditional variances of the filled entries (0 at observed entries).

    Notes
    -----
    Cost O(sum over patterns of |A|^3 + |A|^2 |T| + n_p |A| |T|), plus
    O(MN log M) to find the patterns.
    """
    C = check_covariance(cov)
    N = C.shape[0]
    arr = check_rows(X, "X")
    if arr.shape[1] != N:
        raise ValueError(f"X has {arr.shape[1]} columns but cov is {N} x {N}")
    mu = _check_mean(mean, N)
    mean_, var = _fill(C, arr - mu[None, :], ridge=float(ridge))
    return np.where(np.isnan(arr), mean_ + mu[None, :], arr), var


class GaussianPredictor(BasePredictor):
    """The paper's predictor: the Gaussian conditional mean (Eq. cond-mean) and variance (Eq. cond-var).

    Parameters
    ----------
    ridge : float, keyword-only
        Ridge on the conditioning block (Section 5.1: ``1e-2``).

    Notes
    -----
    Works in standardized space with mean 0. Complexity: ``fit`` O(m N + N^2)
    given a covariance, else plus the estimate; ``predict``
    O(G k^3 + G k^2 N + v k N) for ``v`` rows in ``G`` reveal patterns of ``k`` columns.
    """

    name = "gaussian"
    rowwise = True
    _repr_params = ("ridge",)

    def __init__(self, *, ridge: float = 1e-2) -> None:
        self.ridge = check_nonnegative(ridge, "ridge")

    def fit(self, train: Any, *, cov: Any = None) -> GaussianPredictor:
        """Keep the training correlation ``cov`` (estimated from ``train`` when not given); return self.

        O(m N + N^2) given ``cov``, else plus the cost of the estimate.
        """
        super().fit(train, cov=cov)
        if self.cov_ is None:
            self.cov_ = estimate_correlation(self.train_).corr
        if not isinstance(self.cov_, LowRankCorrelation):  # symmetrized; super().fit checked its shape
            self.cov_ = check_covariance(self.cov_)
        return self

    def moments(self, query: Any, columns: Sequence[int], targets: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Conditional means and variances of ``targets`` given the revealed ``columns``; O(G k^3 + G k^2 T + v k T)."""
        self._fitted()  # NotFittedError before fit
        return conditional_moments(self.cov_, query, columns, targets, ridge=self.ridge)

    def predict_distribution(self, query: Any) -> tuple[np.ndarray, np.ndarray]:
        """Conditional means and variances for every entry of ``query`` (revealed: as given, variance 0).

        O((m + v) N + G k^3 + G k^2 N + v k N).
        """
        _, qu = check_train_query(self._fitted(), query)
        return _fill(self.cov_, qu, ridge=self.ridge)

    def predict(self, query: Any) -> np.ndarray:
        """Conditional means for every entry of ``query`` (revealed entries as given); cost of :meth:`predict_distribution`."""
        return self.predict_distribution(query)[0]
