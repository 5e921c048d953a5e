"""Calibration of predictive intervals: :class:`GaussianIntervals` (Eq. cond-var, the variance optionally
inflated by a factor given or fitted on inner folds) and split-conformal :class:`Conformal`; a fitted pipeline
hands out its bounds by :func:`gaussian_interval` and :func:`conformal_interval`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.special import ndtri

from .._checks import check_int
from .base import Component
from .correlation import Correlation
from .folds import Fold, InnerFolds, cross_fit
from .oof import HeldOut

__all__ = [
    "GaussianIntervals",
    "Conformal",
    "CALIBRATORS",
    "calibrator_named",
    "inflation_factors",
    "conformal_scores",
    "conformal_quantile",
    "CONFORMAL_SHRINK",
    "gaussian_interval",
    "conformal_interval",
]

#: pseudo-count of the pooled residual variance in each benchmark's conformal scale
CONFORMAL_SHRINK = 10.0


@dataclass(frozen=True)
class GaussianIntervals(Component):
    """Intervals ``mean +- z sd sqrt(s)`` from the predictor's conditional variance.

    Parameters
    ----------
    inflation : float > 0 or "inner"
        The variance factor ``s``, or ``"inner"`` to fit it by ``inner_folds``-fold cross-validation of the
        training models (:func:`inflation_factors`). 1 is the plain Gaussian interval of the paper's model.
    inner_folds : int
        At least 2.

    Raises
    ------
    ValueError
        ``inflation`` neither ``"inner"`` nor a finite number > 0, or ``inner_folds`` not an integer >= 2.

    Notes
    -----
    Complexity: an interval costs O(v T) for ``v`` query rows and ``T`` targets, given the predictor's
    conditional variances (Eq. cond-var); ``"inner"`` adds the fit of :func:`inflation_factors`.
    """

    inflation: float | Literal["inner"] = 1.0
    inner_folds: int = 3

    def __post_init__(self) -> None:
        f = self.inflation
        if isinstance(f, str):
            if f != "inner":
                raise ValueError(f"unknown inflation {f!r}; expected 'inner' or a number > 0")
        elif isinstance(f, bool) or not isinstance(f, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(float(f)) and float(f) > 0):
            raise ValueError(f"inflation must be 'inner' or a finite number > 0 (a variance factor), got {f!r}")
        check_int(self.inner_folds, "inner_folds", minimum=2)

    @property
    def name(self) -> str:
        """The calibrator's name in tables: ``"inflation"`` for the fitted factor, else ``"gaussian"``. O(1)."""
        return "inflation" if self.inflation == "inner" else "gaussian"


@dataclass(frozen=True)
class Conformal(Component):
    """Split-conformal intervals from the inner cross-validation residuals of the pipeline's search.

    A pipeline with this calibrator fits by its search
    (:func:`~benchsel_lib.method.inner_search.pipeline_path`, so its predictors must be names), and the
    interval at level ``L`` for benchmark ``j`` is ``pred +- q_L s_j`` (an addition to the paper). The
    residuals are the out-of-fold ones of the inner cross-validation, in the style of CV+ (Barber, Candes,
    Ramdas and Tibshirani 2021, "Predictive inference with the jackknife+", Ann. Statist.); ``q_L`` is the
    split-conformal quantile (Vovk, Gammerman and Shafer 2005; Lei et al. 2018, JASA) of the scaled absolute
    residuals ``|r| / s_j`` (:func:`conformal_quantile`), ``s_j`` benchmark ``j``'s RMS residual shrunk toward
    the pooled RMS (:func:`conformal_scores`).  A level without residuals gives no interval.

    Notes
    -----
    Complexity: at each ``k``, O(m N + n log n) for the scales and the sorted scores of the ``m x N`` inner-CV
    residuals with ``n`` scored entries (:func:`conformal_scores`), then O(1) per level for its quantile; the
    inner cross-validation that produces the residuals is the search's own cost.
    """

    @property
    def name(self) -> str:
        """The calibrator's name in tables, ``"conformal"``. O(1)."""
        return "conformal"


#: the named calibrators
CALIBRATORS: dict[str, Any] = {
    "gaussian": GaussianIntervals(),
    "inflation": GaussianIntervals(inflation="inner"),
    "conformal": Conformal(),
}


def calibrator_named(spec: Any) -> GaussianIntervals | Conformal | None:
    """A calibrator by name (:data:`CALIBRATORS`), a calibrator itself, or None (no intervals). O(1)."""
    if spec is None or isinstance(spec, (GaussianIntervals, Conformal)):
        return spec
    if isinstance(spec, str) and spec in CALIBRATORS:
        return CALIBRATORS[spec]
    raise ValueError(f"unknown calibrator {spec!r}: use one of {tuple(CALIBRATORS)}, a calibrator object or None")


def inflation_factors(
    values: np.ndarray,
    standardized: np.ndarray,
    orders: Mapping[Any, Sequence[int]],
    k_max: int,
    *,
    correlation: Correlation,
    predictor: Any,
    folds: InnerFolds,
    unreached: str = "skip",
    correlate: Callable[[Correlation, np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> dict[Any, np.ndarray]:
    """Variance-inflation factors fitted on the training rows only (inner cross-validation).

    For each fold the correlation is re-estimated on the other folds (benchmarks with fewer than 2 scores
    there get an identity row and column), and for every prefix ``k`` of each order the squared standardized
    residuals ``r^2 / var`` of the held-out rows are collected where the protocol scores.  The factor is their
    mean, so that the inflated mean squared standardized residual is 1.

    Parameters
    ----------
    values, standardized : ndarray (m, N)
        Training rows in the pipeline's space, before and after standardization.
    orders : mapping key -> sequence of int
        Selection orders (a prefix of length ``k`` is the revealed set at ``k``), up to ``k_max``.
    k_max : int
    correlation : Correlation
    predictor : predictor
        The pipeline's predictor (without variances every factor is 1).
    folds : InnerFolds
    unreached : {"skip", "mean"}
        As in the CV protocol.
    correlate : callable, optional
        ``correlate(correlation, values, standardized)``; default ``correlation.estimate``.

    Returns
    -------
    dict key -> ndarray (k_max,)
        The factor at each prefix length (1 where nothing could be scored).

    Raises
    ------
    ValueError
        More folds than training rows.

    Notes
    -----
    Cost: one correlation estimate per fold plus, per fold and prefix, one conditional solve per distinct
    revealed pattern.
    """
    m_tr, N = values.shape
    if folds.n_folds > m_tr:
        raise ValueError(f"inner_folds={folds.n_folds} is out of range: choose 2..{m_tr} (the training models)")
    estimate = correlate or (lambda c, v, z: c.estimate(v, z, context="cv"))
    arrays = {key: np.asarray(o, dtype=int) for key, o in orders.items()}

    def fold_sums(fold: Fold) -> dict[Any, np.ndarray] | None:
        """Per order, the sums (row 0) and counts (row 1) of ``r^2 / var`` by prefix on the fold's rows (None: too
        few rows)."""
        tr = fold.train
        Xin = values[tr]
        ok = np.flatnonzero((~np.isnan(Xin)).sum(axis=0) >= 2)
        rows = (~np.isnan(Xin[:, ok])).any(axis=1)
        if rows.sum() < 2 or ok.size == 0:
            return None
        Rin = np.eye(N)
        Rin[np.ix_(ok, ok)] = estimate(correlation, Xin[:, ok][rows], standardized[tr][:, ok][rows])
        held = HeldOut.of(standardized[fold.held], unreached=unreached)
        fitted = predictor.fit(standardized[tr], cov=Rin)
        out = {}
        for key, order in arrays.items():
            acc = np.zeros((2, int(k_max)))
            for k in range(1, min(int(k_max), order.size) + 1):
                sel = order[:k]
                T = np.setdiff1d(np.arange(N), sel)
                pred, var = held.predict(fitted, sel, T)
                if var is None:
                    continue
                z2 = ((held.values[:, T] - pred) ** 2 / var)[held.scored(sel, targets=T)]
                acc[:, k - 1] = z2.sum(), z2.size
            out[key] = acc
        return out

    tot = {key: np.zeros((2, k_max)) for key in orders}
    for _, found in cross_fit(folds.folds(m_tr), fold_sums):
        for key, acc in (found or {}).items():
            tot[key] += acc
    return {key: np.where(c > 0, s / np.maximum(c, 1), 1.0) for key, (s, c) in tot.items()}


def conformal_scores(res: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-benchmark scales (RMS residual shrunk toward the pooled RMS, pseudo-count :data:`CONFORMAL_SHRINK`)
    and the sorted scaled absolute residuals of ``res`` where ``mask``. O(m N + n log n) for n scored entries."""
    r2 = np.where(mask, res, 0.0) ** 2
    n_j = mask.sum(axis=0)
    pooled = float(r2.sum() / mask.sum()) if r2.sum() > 0 else 1.0  # 1 where no scored residual is nonzero
    scale = np.sqrt((r2.sum(axis=0) + CONFORMAL_SHRINK * pooled) / (n_j + CONFORMAL_SHRINK))
    return scale, np.sort((np.abs(res) / scale[None, :])[mask])


def conformal_quantile(scores: np.ndarray, level: float) -> float:
    """The conformal multiplier ``q_L``: the ``ceil((n + 1) L)``-th smallest score (the largest past ``n``; inf for none).

    ``scores`` sorted, as :func:`conformal_scores` returns them. O(1).
    """
    n = scores.size
    if n == 0:
        return float("inf")
    rank = int(math.ceil((n + 1) * float(level)))
    return float(scores[min(rank, n) - 1])


def gaussian_interval(mean: np.ndarray, var: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` of ``mean +- z sqrt(var)`` with ``z = Phi^{-1}((1 + level) / 2)`` (``var`` inflated
    already); O(v N)."""
    q = float(ndtri(0.5 + level / 2.0))
    sd = np.sqrt(var)
    return mean - q * sd, mean + q * sd


def conformal_interval(choice: Any, mean: np.ndarray, T: np.ndarray,
                       level: float) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lower, upper)`` of ``mean +- q_level * scale[T]`` of a search's ``choice`` (a Recommendation), or None
    at a level without residuals; O(v |T|)."""
    q = choice.quantile(float(level))
    if choice.scale is None or not np.isfinite(q):
        return None
    half = (q * choice.scale)[T]
    return mean - half, mean + half
