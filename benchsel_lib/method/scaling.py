"""Scaling of score matrices: the one standardizer, the logit transform, the model space of a split.

* :func:`fit_standardizer` / :class:`Standardizer` -- per-benchmark means and
  floored standard deviations from the observed entries (Section 5.1,
  Appendix G "Score normalization");
* :func:`logit_transform` / :func:`inverse_logit_transform` -- the logit space
  of Appendix K;
* :func:`fold_standardizer` -- the standardization of an inner fold's rows;
* :func:`model_space` -- a split's training and validation rows in the space
  a pipeline works in, with the map back to the evaluation space.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .._checks import check_data_matrix

__all__ = [
    "Standardizer",
    "fit_standardizer",
    "logit_transform",
    "inverse_logit_transform",
    "fold_standardizer",
    "in_fold",
    "INNER_CLIP",
    "ModelSpace",
    "standardize",
    "model_space",
]


@dataclass(frozen=True)
class Standardizer:
    """Per-benchmark location and scale used to standardize a score matrix.

    Parameters
    ----------
    mean : np.ndarray of shape (N,)
        Column means of the observed entries.
    std : np.ndarray of shape (N,)
        Column standard deviations (already floored, strictly positive).
    """

    mean: np.ndarray
    std: np.ndarray

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Return ``(X - mean) / std`` (NaN stays NaN). O(M N)."""
        return (np.asarray(X, dtype=float) - self.mean) / self.std

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        """Return ``Z * std + mean``, mapping standardized values back. O(M N)."""
        return np.asarray(Z, dtype=float) * self.std + self.mean

    def scale_cov(self, cov: np.ndarray, idx: np.ndarray | list[int] | None = None) -> np.ndarray:
        """Map a covariance of standardized scores to original units.

        Returns ``D cov D`` with ``D = diag(std[idx])`` (all benchmarks when
        ``idx`` is None). Works for a square block or a vector of variances
        (then ``var * std**2``). O(N^2).
        """
        s = self.std if idx is None else self.std[np.asarray(idx, dtype=int)]
        c = np.asarray(cov, dtype=float)
        if c.ndim == 1:
            return c * s**2
        return c * np.outer(s, s)


def fit_standardizer(
    X: np.ndarray,
    *,
    std_floor: Literal["relative", "variance"] = "relative",
    ddof: int = 1,
) -> Standardizer:
    """Column means and floored standard deviations from the observed entries.

    Parameters
    ----------
    X : array_like of shape (M, N)
        Scores with NaN for missing entries (every column needs at least one
        observation).
    std_floor : {"relative", "variance"}
        How a (near-)zero standard deviation is floored:

        * ``"relative"`` -- the cross-validation rule of the released
          configuration (Section 5.1): ``std_j >= 0.01 * (|mean_j| +
          1)``. It is active for columns whose spread is tiny relative to
          their level (for example MTEB's SummEval).
        * ``"variance"`` -- the eigenspectrum rule (Section 5.2): the variance
          is floored at ``1e-12``, i.e. ``std_j >= 1e-6``; it only guards
          constant columns.
    ddof : int
        Delta degrees of freedom of the standard deviation. The default 1
        divides the sum of squares by ``n_j - 1`` (the paper's standardization,
        Section 5.1 and Appendix G "Score normalization": its code divides by
        ``max(n_j - 1, 1)``); 0 divides by ``n_j`` as ``numpy.nanstd``. The
        choice matters on sparse matrices: a column observed by 3 models is
        scaled by ``sqrt(3/2)`` differently, which moves where EM's PSD floor
        and shrinkage bind. A column with fewer than ``ddof + 1`` observations
        gets spread 0 before flooring, never NaN.

    Returns
    -------
    Standardizer
        ``mean`` from Eq. (mean-missing) and the floored ``std``.

    Notes
    -----
    Complexity O(M N).
    """
    A = check_data_matrix(X, min_rows=1)
    if std_floor not in ("relative", "variance"):
        raise ValueError(f"unknown std_floor {std_floor!r}: use 'relative' or 'variance'")
    if ddof < 0:
        raise ValueError(f"ddof must be >= 0, got {ddof}")
    obs = ~np.isnan(A)
    n = obs.sum(axis=0).astype(float)
    Z = np.where(obs, A, 0.0)
    mean = Z.sum(axis=0) / n
    ss = (np.where(obs, A - mean, 0.0) ** 2).sum(axis=0)
    var = np.where(n > ddof, ss / np.maximum(n - ddof, 1.0), 0.0)
    if std_floor == "relative":
        std = np.maximum(np.sqrt(var), 0.01 * (np.abs(mean) + 1.0))
    else:
        std = np.sqrt(np.maximum(var, 1e-12))
    return Standardizer(mean=mean, std=std)


def _as_2d(X: object, name: str) -> np.ndarray:
    try:
        arr = np.array(X, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric array") from None
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D (models x benchmarks), got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains infinite values")
    return arr


def logit_transform(
    X: object, *, smax: object | None = None, eps: float = 1e-3
) -> tuple[np.ndarray, np.ndarray]:
    r"""Normalize by the per-benchmark maximum, clip and take the logit (Appendix K).

    .. math::
        \tilde s_{ij} = \mathrm{clip}(s_{ij} / s_{\max,j}, \varepsilon, 1-\varepsilon),\qquad
        f_{ij} = \log\frac{\tilde s_{ij}}{1 - \tilde s_{ij}}.

    Parameters
    ----------
    X : array_like of shape (M, N) or (N,)
        Raw scores, ``NaN`` for missing entries (kept as ``NaN``).
    smax : array_like of shape (N,), optional
        Per-benchmark normalizer. ``None`` fits it as the column maximum of
        ``X`` over observed entries -- in cross-validation fit it on the
        *training* rows and pass it when transforming validation rows.
    eps : float
        Clipping margin, ``0 < eps < 0.5`` (the paper uses ``1e-3``).

    Returns
    -------
    F : ndarray of shape (M, N)
        Logit scores (``NaN`` where ``X`` is missing).
    smax : ndarray of shape (N,)
        The normalizer used.

    Raises
    ------
    ValueError
        If a column maximum is not positive (the 0-max normalization needs
        non-negative scores with a positive maximum), a column has no
        observed value when ``smax`` is fitted, ``smax`` has the wrong
        length, or ``eps`` is outside ``(0, 0.5)``.

    Notes
    -----
    Cost O(MN). Validation scores above the training maximum are clipped
    to ``1 - eps``; the inverse therefore caps predictions at ``smax``
    (the extrapolation limit discussed in Appendix K).
    """
    arr = _as_2d(X, "X")
    if not (0.0 < float(eps) < 0.5):
        raise ValueError(f"eps must be in (0, 0.5), got {eps!r}")
    if smax is None:
        obs = ~np.isnan(arr)
        empty = np.flatnonzero(~obs.any(axis=0))
        if empty.size:
            raise ValueError(f"cannot fit smax: column(s) {empty[:10].tolist()} have no observed score")
        s = np.nanmax(arr, axis=0)
    else:
        s = np.asarray(smax, dtype=float).reshape(-1)
        if s.shape[0] != arr.shape[1]:
            raise ValueError(f"smax has length {s.shape[0]} but X has {arr.shape[1]} columns")
    if not np.isfinite(s).all() or (s <= 0).any():
        bad = np.flatnonzero(~(np.isfinite(s) & (s > 0)))
        raise ValueError(
            f"logit transform needs a positive maximum per benchmark; column(s) {bad[:10].tolist()} "
            f"have maximum {s[bad[:3]].tolist()}"
        )
    with np.errstate(invalid="ignore"):
        p = np.clip(arr / s, eps, 1.0 - eps)
        F = np.log(p) - np.log1p(-p)
    F[np.isnan(arr)] = np.nan
    return F, s.copy()


def inverse_logit_transform(F: object, smax: object) -> np.ndarray:
    r"""Map logit scores back to raw units: :math:`\hat s_{ij} = \sigma(f_{ij})\, s_{\max,j}` (Appendix K).

    Parameters
    ----------
    F : array_like of shape (M, N) or (N,)
        Logit-space values (``NaN`` preserved).
    smax : array_like of shape (N,)
        The normalizer returned by :func:`logit_transform`.

    Returns
    -------
    ndarray of shape (M, N)
        Raw-unit scores in ``(0, smax)``. Cost O(MN).
    """
    arr = _as_2d(F, "F")
    s = np.asarray(smax, dtype=float).reshape(-1)
    if s.shape[0] != arr.shape[1]:
        raise ValueError(f"smax has length {s.shape[0]} but F has {arr.shape[1]} columns")
    if not np.isfinite(s).all() or (s <= 0).any():
        raise ValueError("smax must be positive and finite")
    # numerically stable logistic
    out = np.empty_like(arr)
    pos = arr >= 0
    with np.errstate(invalid="ignore", over="ignore"):
        out[pos] = 1.0 / (1.0 + np.exp(-arr[pos]))
        e = np.exp(arr[~pos])
        out[~pos] = e / (1.0 + e)
    out[np.isnan(arr)] = np.nan
    return out * s


#: clip of re-standardized scores in an inner fold (the CV protocol's clip, Section 5.1)
INNER_CLIP = 10.0


def fold_standardizer(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and spreads of one inner fold's training rows, for the protocol's standardization.

    An inner fold re-standardizes its training rows with their own means and
    spreads (the rule of :func:`~benchsel_lib.estimation.fit_standardizer`,
    ``ddof=1``, relative floor) exactly as the outer protocol standardizes
    on its training models (Section 5.1, step 2).  Without this, the caller's
    standardization -- computed with the inner-validation rows included --
    leaks those rows' held-out scores into the fold: in a column observed by
    ten models, one row is a tenth of the mean.  That flatters, on sparse
    matrices, the predictors that take a standardized zero as the training
    mean (the Gaussian conditional mean, the BenchPress-style blend), so the
    inner scores would overstate them against the others.  Columns with no
    observation get mean 0 and spread 1.  O(m N).

    Returns
    -------
    mean, std : ndarray (N,)
        Use ``clip((x - mean) / std, -INNER_CLIP, INNER_CLIP)`` (:func:`in_fold`)
        on the fold's training and query rows and ``pred * std + mean`` to map
        predictions back.
    """

    x = np.asarray(rows, dtype=float)
    mu, sd = np.zeros(x.shape[1]), np.ones(x.shape[1])
    seen = (~np.isnan(x)).any(axis=0)
    if seen.any():
        st = fit_standardizer(x[:, seen], std_floor="relative")
        mu[seen], sd[seen] = st.mean, st.std
    return mu, sd


def in_fold(x: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """``x`` in a fold's standardization (:func:`fold_standardizer`), clipped as the protocol clips."""
    return np.clip((x - mu) / sd, -INNER_CLIP, INNER_CLIP)


@dataclass
class ModelSpace:
    """Model-space data of one split and the map back to the evaluation space."""

    fit_train: np.ndarray  # training rows in model space (raw or logit), NaN missing
    z_train: np.ndarray  # training rows standardized in model space (clipped)
    z_val: np.ndarray  # validation rows standardized in model space (clipped), conditioning inputs
    truth: np.ndarray  # validation truth standardized in evaluation space (clipped)
    to_eval: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (values, cols) model-std -> eval-std


def standardize(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:

    st = fit_standardizer(X, std_floor="relative")
    return np.asarray(st.mean, dtype=float), np.asarray(st.std, dtype=float)


def model_space(Xtr: np.ndarray, Xva: np.ndarray, transform: str | None, clip: float) -> ModelSpace:
    m_raw, s_raw = standardize(Xtr)
    truth = np.clip((Xva - m_raw) / s_raw, -clip, clip)
    if transform is None:
        ztr = np.clip((Xtr - m_raw) / s_raw, -clip, clip)
        return ModelSpace(Xtr, ztr, truth, truth, lambda v, cols: v)
    Ftr, smax = logit_transform(Xtr)
    Fva, _ = logit_transform(Xva, smax=smax)
    m_f, s_f = standardize(Ftr)

    def to_eval(v: np.ndarray, cols: np.ndarray) -> np.ndarray:
        raw = inverse_logit_transform(v * s_f[cols] + m_f[cols], smax[cols])
        return (raw - m_raw[cols]) / s_raw[cols]

    return ModelSpace(
        Ftr,
        np.clip((Ftr - m_f) / s_f, -clip, clip),
        np.clip((Fva - m_f) / s_f, -clip, clip),
        truth,
        to_eval,
    )
