"""Score transforms: the logit-space pipeline of Appendix K.

Benchmark scores are often bounded (accuracies in [0, 1], percentages in
[0, 100]) while the Gaussian model of Eq. (model) has unbounded support.
Appendix K of the paper normalizes each benchmark by its maximum observed
*training* score, clips to ``[eps, 1 - eps]`` and applies the logit; all of
covariance estimation, selection and imputation then run on the transformed
scores, and predictions are mapped back with the logistic function.
"""
from __future__ import annotations

import numpy as np

__all__ = ["logit_transform", "inverse_logit_transform"]


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
