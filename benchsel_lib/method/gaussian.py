"""Gaussian conditional imputation (Section 3, Eqs. cond-mean and cond-var).

Given a mean vector :math:`\\mu` and covariance :math:`\\Sigma`, the scores of a
model on the unobserved benchmarks :math:`T` given its scores on the observed
benchmarks :math:`A` are Gaussian with

.. math::
    \\mathbb E[B_T \\mid B_A] = \\mu_T + \\Sigma_{TA} (\\Sigma_{AA} + \\lambda I)^{-1} (B_A - \\mu_A),
    \\qquad
    \\mathrm{Cov}(B_T \\mid B_A) = \\Sigma_{TT} - \\Sigma_{TA} (\\Sigma_{AA} + \\lambda I)^{-1} \\Sigma_{AT},

where the ridge :math:`\\lambda` (``1e-2`` in the paper's protocol, Section 5.1)
keeps the solve stable. Rows that share an observation pattern share one
Cholesky factorization and one multi-right-hand-side solve.

The module also defines the default predictor :class:`GaussianImputer` and
:func:`batched_conditional`, the cross-validation's batched form.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla

from .._checks import check_covariance
from .correlation import estimate_correlation

__all__ = [
    "ConditionalResult",
    "conditional_impute",
    "impute_missing",
    "GaussianImputer",
    "pattern_groups",
    "batched_conditional",
]


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
        """Conditional variances, the diagonal of :attr:`cov` (floored at 0)."""
        return np.maximum(np.diag(self.cov), 0.0)

    @property
    def std(self) -> np.ndarray:
        """Conditional standard deviations."""
        return np.sqrt(self.var)


def _as_index(idx: object, n: int, what: str) -> np.ndarray:
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


def _regression_weights(cov: np.ndarray, obs: np.ndarray, tgt: np.ndarray, ridge: float) -> np.ndarray:
    """Return ``W^T = (Sigma_AA + ridge I)^{-1} Sigma_AT`` of shape (|A|, |T|).

    One Cholesky factorization, one multi-RHS triangular solve; falls back to an
    LU solve (least squares if singular) when the regularized block is not
    numerically positive definite. Cost O(|A|^3 + |A|^2 |T|).
    """
    saa = cov[np.ix_(obs, obs)].copy()
    saa[np.diag_indices_from(saa)] += ridge
    sat = cov[np.ix_(obs, tgt)]
    try:
        c, low = sla.cho_factor(saa, lower=True, check_finite=False)
        return sla.cho_solve((c, low), sat, check_finite=False)
    except (np.linalg.LinAlgError, sla.LinAlgError):
        # not positive definite (e.g. an indefinite pairwise estimate): plain LU
        # solve, which gives the same formula; least squares if singular.
        try:
            return np.linalg.solve(saa, sat)
        except np.linalg.LinAlgError:
            return np.linalg.lstsq(saa, sat, rcond=None)[0]


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

    Implements Eqs. (cond-mean) and (cond-var) of Section 3 with a ridge
    ``ridge * I`` added to :math:`\\Sigma_{AA}` (Section 5.1 uses ``1e-2``).
    All ``n`` rows of ``x_observed`` share the observation pattern
    ``observed_idx``, so one Cholesky factorization and one solve with
    :math:`|T|` right-hand sides serve them all.

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
        observations, out-of-range or repeated indices, or a negative ridge.

    Notes
    -----
    Cost O(|A|^3 + |A|^2 |T| + n |A| |T| + |A| |T|^2).
    """
    C = check_covariance(cov)
    N = C.shape[0]
    mu = _check_mean(mean, N)
    if not np.isfinite(ridge) or ridge < 0:
        raise ValueError(f"ridge must be a non-negative number, got {ridge!r}")
    obs = _as_index(observed_idx, N, "observed_idx")
    if target_idx is None:
        mask = np.ones(N, dtype=bool)
        mask[obs] = False
        tgt = np.flatnonzero(mask)
    else:
        tgt = _as_index(target_idx, N, "target_idx")
    x = np.asarray(x_observed, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2:
        raise ValueError(f"x_observed must be 1-D or 2-D, got shape {x.shape}")
    if x.shape[1] != obs.size:
        raise ValueError(
            f"x_observed has {x.shape[1]} columns but observed_idx lists {obs.size} benchmarks"
        )
    if not np.isfinite(x).all():
        raise ValueError("x_observed contains NaN or infinite values (pass only observed entries)")
    n = x.shape[0]
    if obs.size == 0:
        return ConditionalResult(np.tile(mu[tgt], (n, 1)), C[np.ix_(tgt, tgt)].copy(), tgt)
    Wt = _regression_weights(C, obs, tgt, float(ridge))
    cmean = mu[tgt][None, :] + (x - mu[obs][None, :]) @ Wt
    ccov = C[np.ix_(tgt, tgt)] - C[np.ix_(tgt, obs)] @ Wt
    ccov = (ccov + ccov.T) / 2.0
    return ConditionalResult(cmean, ccov, tgt)


def impute_missing(
    cov: object, mean: object, X: object, *, ridge: float = 1e-2
) -> tuple[np.ndarray, np.ndarray]:
    """Fill every ``NaN`` in ``X`` with its Gaussian conditional mean.

    Rows are grouped by their missingness pattern; each group is handled by
    one :func:`conditional_impute` call (Eqs. cond-mean, cond-var). Rows with
    no observation get the mean and the marginal variance; fully observed
    rows are returned unchanged with variance 0.

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
    try:
        arr = np.array(X, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("X must be a numeric array") from None
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"X must be 2-D (models x benchmarks), got shape {arr.shape}")
    if arr.shape[1] != N:
        raise ValueError(f"X has {arr.shape[1]} columns but cov is {N} x {N}")
    if np.isinf(arr).any():
        raise ValueError("X contains infinite values")
    mu = _check_mean(mean, N)
    filled = arr.copy()
    var = np.zeros_like(arr)
    if arr.shape[0] == 0:
        return filled, var
    miss = np.isnan(arr)
    patterns, inverse = np.unique(miss, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for p, pat in enumerate(patterns):
        if not pat.any():
            continue
        rows = np.flatnonzero(inverse == p)
        obs = np.flatnonzero(~pat)
        tgt = np.flatnonzero(pat)
        res = conditional_impute(C, mu, arr[np.ix_(rows, obs)], obs, ridge=ridge, target_idx=tgt)
        filled[np.ix_(rows, tgt)] = res.mean
        var[np.ix_(rows, tgt)] = res.var[None, :]
    return filled, var


class GaussianImputer:
    """Gaussian conditional mean imputation, the paper's default (Eq. cond-mean).

    Parameters
    ----------
    ridge : float, keyword-only
        Ridge on the observed block (Section 5.1: ``1e-2``).

    Notes
    -----
    Works in standardized space with mean 0, i.e. predicting 0 means
    predicting the training mean. When ``cov`` is not given, the training
    correlation is estimated from ``train`` with
    :func:`benchsel_lib.estimation.estimate_correlation` (``method="auto"``).
    :func:`~benchsel_lib.evaluation.cross_validate` recognizes this class
    and uses a vectorized path that groups validation rows by pattern.
    """

    name = "gaussian"
    rowwise = True

    def __init__(self, ridge: float = 1e-2) -> None:
        if not np.isfinite(ridge) or ridge < 0:
            raise ValueError(f"ridge must be a non-negative number, got {ridge!r}")
        self.ridge = float(ridge)

    def __repr__(self) -> str:
        return f"GaussianImputer(ridge={self.ridge!r})"

    def _cov(self, train: np.ndarray, query: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        q = np.asarray(query, dtype=float)
        if q.ndim != 2:
            raise ValueError(f"query must be 2-D (models x benchmarks), got shape {q.shape}")
        if cov is None:

            cov = estimate_correlation(np.asarray(train, dtype=float)).corr
        C = check_covariance(cov)
        if C.shape[0] != q.shape[1]:
            raise ValueError(f"query has {q.shape[1]} columns but cov is {C.shape[0]} x {C.shape[0]}")
        if train is not None:
            t = np.asarray(train)
            if t.ndim != 2 or t.shape[1] != q.shape[1]:
                raise ValueError(f"train has shape {t.shape} but query has {q.shape[1]} columns")
        return C

    def predict_distribution(
        self, train: np.ndarray, query: np.ndarray, *, cov: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Conditional means and variances for every entry of ``query`` (0 variance where revealed)."""
        C = self._cov(train, query, cov)
        return impute_missing(C, 0.0, query, ridge=self.ridge)

    def predict(self, train: np.ndarray, query: np.ndarray, *, cov: np.ndarray | None = None) -> np.ndarray:
        """Conditional means for every entry of ``query`` (revealed entries returned as given)."""
        return self.predict_distribution(train, query, cov=cov)[0]


def pattern_groups(pat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique rows of a boolean (v, k) pattern matrix and the inverse map (bit-packed when k <= 62)."""
    v, k = pat.shape
    if k <= 62:
        codes = pat.astype(np.int64) @ (np.int64(1) << np.arange(k, dtype=np.int64))
        uc, first, inv = np.unique(codes, return_index=True, return_inverse=True)
        return pat[first], inv.reshape(-1)
    keys, inv = np.unique(pat, axis=0, return_inverse=True)
    return keys, inv.reshape(-1)


def batched_conditional(
    R: np.ndarray, Zv: np.ndarray, Ov: np.ndarray, sel: np.ndarray, T: np.ndarray, ridge: float
) -> tuple[np.ndarray, np.ndarray]:
    """Conditional means/variances of columns ``T`` for every validation row.

    Rows are grouped by which selected benchmarks they observe (pattern
    ``A_g``); each group needs ``(R_{A_g A_g} + ridge I)^{-1} R_{A_g T}`` (Eqs.
    cond-mean, cond-var, mean 0). All groups are solved in one batched call:
    for group ``g`` the system is embedded in ``|sel| x |sel|`` by putting the
    identity on the unobserved selected positions and zero right-hand sides
    there, which leaves the weights of the observed positions unchanged and
    makes the others exactly 0. Cost O(G k^3 + G k^2 |T| + v k |T|) for ``G``
    distinct patterns.
    """
    v = Zv.shape[0]
    k = sel.size
    dR = np.diag(R)[T]
    if v == 0:
        return np.zeros((0, T.size)), np.zeros((0, T.size))
    pat = Ov[:, sel]
    keys, inv = pattern_groups(pat)
    Rss = R[np.ix_(sel, sel)] + ridge * np.eye(k)
    RsT = R[np.ix_(sel, T)]
    km = keys.astype(float)  # (G, k)
    S = Rss[None, :, :] * km[:, :, None] * km[:, None, :]
    S += np.eye(k)[None, :, :] * (1.0 - km)[:, :, None]
    B = RsT[None, :, :] * km[:, :, None]  # (G, k, T)
    W = np.linalg.solve(S, B)
    xs = np.where(pat, Zv[:, sel], 0.0)  # (v, k)
    pred = np.einsum("rk,rkt->rt", xs, W[inv])
    red = np.einsum("gkt,gkt->gt", B, W)  # explained variance per group
    var = dR[None, :] - red[inv]
    return pred, np.maximum(var, 1e-12)
