"""Scaling of score matrices: the one standardizer, the logit transform, a pipeline's scaling step.

* :func:`fit_standardizer` / :class:`Standardizer` -- per-benchmark means and
  floored standard deviations (Section 5.1, Appendix G "Score normalization");
* :func:`logit_transform` / :func:`inverse_logit_transform` -- Appendix K;
* :class:`Scaling` -- a pipeline's first step (logit, standardization, clip).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._checks import as_float_array, check_bool, check_data_matrix
from .base import Component, check_rows
from .covariance import observed_mean

__all__ = [
    "Standardizer",
    "fit_standardizer",
    "logit_transform",
    "inverse_logit_transform",
    "Scaling",
    "FittedScaling",
    "PROTOCOL_CLIP",
    "check_clip",
]

#: the clip of standardized scores in the CV protocol (Section 5.1: [-10, 10])
PROTOCOL_CLIP = 10.0


def check_clip(clip: Any) -> float:
    """``clip`` (the bound of the standardized scores' clip) as a float; ``ValueError`` unless positive and finite. O(1)."""
    if isinstance(clip, bool) or not (isinstance(clip, (int, float)) and np.isfinite(clip) and clip > 0):
        raise ValueError(f"clip must be a positive number, got {clip!r}")
    return float(clip)


@dataclass(frozen=True)
class Standardizer:
    """Per-benchmark location and scale used to standardize a score matrix.

    Parameters
    ----------
    mean : np.ndarray of shape (N,)
        Column means of the observed entries.
    std : np.ndarray of shape (N,)
        Column standard deviations (already floored, strictly positive).

    Notes
    -----
    Complexity: :meth:`transform` and :meth:`inverse_transform` O(M N).
    """

    mean: np.ndarray
    std: np.ndarray

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Return ``(X - mean) / std`` (NaN stays NaN). O(M N)."""
        return (self._as_rows(X, "X") - self.mean) / self.std

    def inverse_transform(self, Z: np.ndarray) -> np.ndarray:
        """Return ``Z * std + mean``, mapping standardized values back. O(M N)."""
        return self._as_rows(Z, "Z") * self.std + self.mean

    def _as_rows(self, X: Any, name: str) -> np.ndarray:
        """``X`` as floats with one column per fitted benchmark; anything else raises ValueError naming it."""
        A = np.asarray(X, dtype=float)
        if A.ndim not in (1, 2) or A.shape[-1] != self.mean.shape[0]:
            raise ValueError(f"{name} must have {self.mean.shape[0]} columns, one per benchmark the standardizer "
                             f"was fitted on, got shape {A.shape}")
        return A


def fit_standardizer(
    X: np.ndarray,
    *,
    std_floor: Literal["relative", "variance"] = "relative",
    ddof: int = 1,
    empty: Literal["error", "identity"] = "error",
) -> Standardizer:
    """Column means and floored standard deviations from the observed entries.

    Parameters
    ----------
    X : array_like of shape (M, N)
        Scores with NaN for missing entries.
    std_floor : {"relative", "variance"}
        How a (near-)zero standard deviation is floored:

        * ``"relative"`` -- the cross-validation rule (Section 5.1):
          ``std_j >= 0.01 * (|mean_j| + 1)``.
        * ``"variance"`` -- the eigenspectrum rule (Section 5.2): variance
          floored at ``1e-12``.
    ddof : int
        Delta degrees of freedom: 1 divides by ``n_j - 1`` (the paper's,
        Section 5.1 and Appendix G), 0 by ``n_j``. A column with fewer than
        ``ddof + 1`` observations gets spread 0 before flooring.
    empty : {"error", "identity"}
        A column (or row) with no observation raises ValueError (``"error"``),
        or the column gets mean 0 and spread 1 (``"identity"``).

    Returns
    -------
    Standardizer
        ``mean`` from Eq. (mean-missing) and the floored ``std``.

    Notes
    -----
    Complexity O(M N).
    """
    if empty not in ("error", "identity"):
        raise ValueError(f"unknown empty rule {empty!r}: use 'error' or 'identity'")
    A = check_data_matrix(X, min_rows=1, allow_empty=empty == "identity")
    if std_floor not in ("relative", "variance"):
        raise ValueError(f"unknown std_floor {std_floor!r}: use 'relative' or 'variance'")
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise ValueError(f"ddof must be an integer >= 0, got {ddof!r}")
    if empty == "error":
        mean, std = _column_stats(A, std_floor, ddof)
        return Standardizer(mean=mean, std=std)
    seen = (~np.isnan(A)).any(axis=0)
    mean, std = np.zeros(A.shape[1]), np.ones(A.shape[1])
    if seen.any():  # the statistics of the observed columns, taken on their own
        mean[seen], std[seen] = _column_stats(A[:, seen], std_floor, ddof)
    return Standardizer(mean=mean, std=std)


def _column_stats(A: np.ndarray, std_floor: str, ddof: int) -> tuple[np.ndarray, np.ndarray]:
    """Means and floored spreads of columns that each hold an observation. O(M N)."""
    obs = ~np.isnan(A)
    n = obs.sum(axis=0).astype(float)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused below, by column
        mean = observed_mean(A)
        ss = (np.where(obs, A - mean, 0.0) ** 2).sum(axis=0)
    var = np.where(n > ddof, ss / np.maximum(n - ddof, 1.0), 0.0)
    if std_floor == "relative":
        std = np.maximum(np.sqrt(var), 0.01 * (np.abs(mean) + 1.0))
    else:
        std = np.sqrt(np.maximum(var, 1e-12))
    huge = np.flatnonzero(~(np.isfinite(mean) & np.isfinite(std)))
    if huge.size:
        raise ValueError(f"the scores of column(s) {huge[:10].tolist()} are too large for floating-point "
                         f"arithmetic (their squares overflow): rescale them")
    return mean, std


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
        A column maximum that is not positive, a column with no observed
        value when ``smax`` is fitted, ``smax`` of the wrong length, or
        ``eps`` outside ``(0, 0.5)``.

    Notes
    -----
    Cost O(MN). Scores are clipped to ``[eps, 1 - eps]`` of ``smax``, so the
    inverse stays within ``[eps * smax, smax]`` (Appendix K).
    """
    arr = check_rows(X, "X")
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, numbers.Real) or not 0.0 < float(eps) < 0.5:
        raise ValueError(f"eps must be a number in (0, 0.5), got {eps!r}")
    if smax is None:
        empty = np.flatnonzero(np.isnan(arr).all(axis=0))
        if empty.size:
            raise ValueError(f"cannot fit smax: column(s) {empty[:10].tolist()} have no observed score")
        smax = np.nanmax(arr, axis=0)
    s = _check_smax(smax, arr.shape[1], "X")
    with np.errstate(invalid="ignore"):
        p = np.clip(arr / s, eps, 1.0 - eps)
        F = np.log(p) - np.log1p(-p)
    F[np.isnan(arr)] = np.nan
    return F, s.copy()


def _check_smax(smax: object, n: int, against: str) -> np.ndarray:
    """``smax`` as positive finite floats, one per column of ``against`` (``n``); ``ValueError`` otherwise."""
    s = as_float_array(smax, "smax must be a numeric vector, one maximum per benchmark")
    if s.ndim != 1 or s.shape[0] != n:
        raise ValueError(f"smax must be a vector of length {n} (one per column of {against}), got shape {s.shape}")
    bad = np.flatnonzero(~(np.isfinite(s) & (s > 0)))
    if bad.size:
        raise ValueError(f"logit transform needs a positive maximum per benchmark (smax); column(s) "
                         f"{bad[:10].tolist()} have maximum {s[bad[:3]].tolist()}")
    return s


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
    arr = check_rows(F, "F")
    s = _check_smax(smax, arr.shape[1], "F")
    out = np.empty_like(arr)
    pos = arr >= 0
    with np.errstate(invalid="ignore", over="ignore"):
        out[pos] = 1.0 / (1.0 + np.exp(-arr[pos]))
        e = np.exp(arr[~pos])
        out[~pos] = e / (1.0 + e)
    out[np.isnan(arr)] = np.nan
    return out * s


@dataclass(frozen=True)
class Scaling(Component):
    """A pipeline's scaling: optional logit (Appendix K), standardization, clip (Section 5.1).

    Parameters
    ----------
    logit : bool
        Work in logit space: each benchmark is divided by its largest training
        score, clipped to ``[1e-3, 1 - 1e-3]`` and logit-transformed
        (:func:`logit_transform`) before standardization.
    clip : float
        Standardized scores are clipped to ``[-clip, clip]`` (the protocol's 10).

    Notes
    -----
    Complexity: :meth:`fit` and the fitted maps O(M N).
    """

    logit: bool = False
    clip: float = PROTOCOL_CLIP

    def __post_init__(self) -> None:
        check_bool(self.logit, "logit")
        check_clip(self.clip)

    @property
    def name(self) -> str:
        """The scaling's name in tables: ``"logit"`` or ``"standard"``. O(1)."""
        return "logit" if self.logit else "standard"

    def fit(self, X: Any, *, empty: Literal["error", "identity"] = "error") -> FittedScaling:
        """Fit on training rows (M, N; NaN missing): the logit normalizer and the standardizer. O(M N).

        ``empty="identity"`` gives a column with no observation mean 0 and spread 1 (default: an error).
        """
        A = np.asarray(X, dtype=float)
        smax = None
        if self.logit:
            A, smax = logit_transform(A)
        return FittedScaling(self, fit_standardizer(A, std_floor="relative", empty=empty), smax)


@dataclass(frozen=True)
class FittedScaling:
    """A :class:`Scaling` fitted on training rows; maps scores to the pipeline's standardized space and back.

    Attributes
    ----------
    scaling : Scaling
    standardizer : Standardizer
        Means and spreads of the (logit) training scores.
    smax : ndarray (N,) or None
        Per-benchmark normalizer of the logit transform.
    """

    scaling: Scaling
    standardizer: Standardizer
    smax: np.ndarray | None = None

    def values(self, X: Any) -> np.ndarray:
        """Scores in the pipeline's space before standardization: the logit scores, or the scores themselves. O(M N)."""
        A = np.asarray(X, dtype=float)
        if self.smax is None:
            return A
        return logit_transform(A, smax=self.smax)[0]

    def transform(self, X: Any, cols: Any = None) -> np.ndarray:
        """Scores (original units) -> clipped standardized scores; ``cols`` selects the benchmarks of ``X``'s columns.

        O(M N) for ``M`` rows of ``N`` benchmarks (``len(cols)`` with ``cols``).
        """
        if cols is None:
            A = self.values(X)
        else:
            A = np.asarray(X, dtype=float)
            if self.smax is not None:
                A = logit_transform(A.reshape(-1, len(cols)), smax=self.smax[cols])[0].reshape(A.shape)
        st = self.standardizer
        m, s = (st.mean, st.std) if cols is None else (st.mean[cols], st.std[cols])
        c = self.scaling.clip
        return np.clip((A - m) / s, -c, c)

    def inverse(self, Z: Any, cols: Any = None) -> np.ndarray:
        """Standardized scores -> original units (through the inverse logit for the logit scaling); monotone per column.

        O(M N) for ``M`` rows of ``N`` benchmarks (``len(cols)`` with ``cols``).
        """
        st = self.standardizer
        m, s = (st.mean, st.std) if cols is None else (st.mean[cols], st.std[cols])
        F = np.asarray(Z, dtype=float) * s + m
        if self.smax is None:
            return F
        smax = self.smax if cols is None else self.smax[cols]
        return inverse_logit_transform(F.reshape(-1, np.size(smax)), smax).reshape(F.shape)
