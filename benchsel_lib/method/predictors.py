"""The predictors by name (:data:`PREDICTORS`), and the helpers of the inner cross-validation that scores them.

``"gaussian"`` is the Gaussian conditional mean, ``"ridge"`` the per-target ridge from the revealed
benchmarks, ``"imputed-ridge"`` BenchPred's ridge on the mean-imputed ones, ``"lowrank"``, ``"knn"`` and
``"blend"`` soft-impute, k-nearest neighbours and the BenchPress blend (:mod:`benchsel_lib.method.completion`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import nnls

from .completion import BenchPressBlend, KNNImputer, SoftImpute
from .gaussian import GaussianPredictor
from .regression import ImputedRidgePredictor, RidgePredictor

__all__ = [
    "make_predictor",
    "check_predictor_name",
    "PREDICTORS",
    "PredictorSpec",
    "predictor_cost",
    "nnls_weights",
    "reveal_and_predict",
    "scored_entries",
    "r2_from_sums",
    "UNREACHED",
    "check_unreached",
]


def nnls_weights(columns: Sequence[np.ndarray], target: np.ndarray) -> np.ndarray:
    """Non-negative least-squares weights ``w >= 0`` minimizing ``||sum_b w_b c_b - target||^2``
    (:func:`scipy.optimize.nnls`, Lawson-Hanson), O(n B^2)."""
    C = np.column_stack([np.asarray(c, dtype=float).ravel() for c in columns])
    t = np.asarray(target, dtype=float).ravel()
    if C.shape[0] == 0:
        return np.full(C.shape[1], 1.0 / C.shape[1])
    return nnls(C, t)[0]


def _patterns(k: float, v: float) -> float:  # distinct reveal patterns among v query rows
    return min(2.0 ** min(k, 60.0), v)


def _svd(m: float, v: float, N: float) -> float:  # one iteration of an SVD completion
    return (m + v) * N * min(m + v, N)


@dataclass(frozen=True)
class PredictorSpec:
    """A predictor's factory and its facts.

    Attributes
    ----------
    factory : callable
        Makes a fresh, unfitted predictor (calling the spec does the same).
    cost : callable (m, v, N, k) -> float
        Estimated operations of one fit on ``m`` rows and the predictions of ``v`` query rows that reveal
        ``k`` of ``N`` benchmarks (about 2e9 a second on one core).
    """

    factory: Callable[[], Any]
    cost: Callable[[float, float, float, float], float]

    def __call__(self) -> Any:
        """A fresh predictor. O(1)."""
        return self.factory()


#: predictor name -> its factory and cost: the Gaussian mean ``G k^3 + v k N``, ridge on observed pairs
#: ``4 G m N k^2``, the per-target ridge on the mean-imputed scores ``m N + G N (m k^2 + k^3)``, k-nearest
#: neighbours ``6 v m N`` (the distances), the blend ``10 G m N p^2`` plus 5 SVD iterations, soft-impute 20 SVD
#: iterations (``G = min(2^k, v)`` reveal patterns, ``p = min(k, 5)``, one SVD iteration
#: ``(m + v) N min(m + v, N)``)
PREDICTORS: dict[str, PredictorSpec] = {
    "gaussian": PredictorSpec(lambda: GaussianPredictor(ridge=1e-2),
                              lambda m, v, N, k: _patterns(k, v) * k**3 + v * k * N),
    "ridge": PredictorSpec(RidgePredictor, lambda m, v, N, k: 4.0 * _patterns(k, v) * m * N * k * k),
    "imputed-ridge": PredictorSpec(ImputedRidgePredictor,
                                   lambda m, v, N, k: m * N + _patterns(k, v) * N * (m * k * k + k**3)),
    "lowrank": PredictorSpec(lambda: SoftImpute(rank=3, shrinkage=1.0, tol=1e-4),
                             lambda m, v, N, k: 20.0 * _svd(m, v, N)),
    "blend": PredictorSpec(lambda: BenchPressBlend(tol=1e-4), lambda m, v, N, k: 10.0 * _patterns(k, v) * m * N
                           * min(k, 5.0) * min(k, 5.0) + 5.0 * _svd(m, v, N)),
    "knn": PredictorSpec(KNNImputer, lambda m, v, N, k: 6.0 * v * m * N),
}


def predictor_cost(name: str, m: float, v: float, N: float, k: float) -> float:
    """Estimated operations of the predictor ``name`` (its spec's ``cost``; 0 for a factory without one). O(1)."""
    spec = PREDICTORS[check_predictor_name(name)]
    cost = getattr(spec, "cost", None)
    return 0.0 if cost is None else float(cost(m, v, N, k))


def check_predictor_name(name: Any, *, where: str = "") -> str:
    """``name`` if it names one of :data:`PREDICTORS`; ``ValueError`` naming them otherwise.

    ``where`` (e.g. ``" in 'mi+oracle'"``) is put after the name in the message.  O(1).
    """
    if not isinstance(name, str) or name not in PREDICTORS:
        raise ValueError(f"unknown predictor {name!r}{where}: use one of {sorted(PREDICTORS)}")
    return name


def make_predictor(name: str) -> Any:
    """A fresh, unfitted predictor by name (a key of :data:`PREDICTORS`), its ``name`` set to ``name``.

    ``"gaussian"`` is ``GaussianPredictor(ridge=1e-2)`` (Section 5.1's ridge), ``"lowrank"``
    ``SoftImpute(rank=3, shrinkage=1.0, tol=1e-4)``, ``"blend"`` ``BenchPressBlend(tol=1e-4)``; the others
    take their classes' defaults.

    Parameters
    ----------
    name : str

    Returns
    -------
    predictor
        A new, unfitted :class:`~benchsel_lib.method.base.Predictor`.

    Raises
    ------
    ValueError
        ``name`` is not one of :data:`PREDICTORS` (the message lists them).

    Notes
    -----
    O(1): only the constructor runs.
    """
    p = PREDICTORS[check_predictor_name(name)]()
    p.name = name
    return p


def reveal_and_predict(
    fitted: Any, values: np.ndarray, observed: np.ndarray, sel: np.ndarray, targets: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """Predictions (and variances, or None) of ``targets`` for rows that reveal their observed entries of ``sel``
    (Section 5.1, step 6; a Gaussian predictor batched by reveal pattern). O(one prediction of the rows)."""
    query = np.where(observed, values, np.nan)
    if isinstance(fitted, GaussianPredictor):
        return fitted.moments(query, sel, targets)
    q = np.full_like(values, np.nan)
    q[:, sel] = query[:, sel]
    mean, var = fitted.predict_distribution(q) if hasattr(fitted, "predict_distribution") else (fitted.predict(q), None)
    mean = np.asarray(mean, dtype=float)
    if mean.shape != values.shape:
        raise ValueError(f"predictor {getattr(fitted, 'name', fitted)!r} returned shape {mean.shape}, expected {values.shape}")
    return mean[:, targets], (None if var is None else np.maximum(np.asarray(var, dtype=float)[:, targets], 1e-12))


#: what happens to a model that observes none of the selected benchmarks: not scored, or scored at the mean
UNREACHED = ("skip", "mean")


def check_unreached(unreached: str) -> str:
    """``unreached`` if it is one of :data:`UNREACHED`, else ``ValueError`` naming it. O(1)."""
    if unreached not in UNREACHED:
        raise ValueError(f"unknown unreached rule {unreached!r}: use one of {UNREACHED}")
    return unreached


def r2_from_sums(ss_res: float, ss_tot: float) -> float:
    """The protocol's R^2 ``1 - ss_res / ss_tot`` (Section 5.1; ``ss_tot`` sums the squared standardized truths),
    NaN when ``ss_tot`` is 0. O(1)."""
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else np.nan


def scored_entries(observed: np.ndarray, sel: np.ndarray, targets: np.ndarray, unreached: str) -> np.ndarray:
    """Which observed (row, target) entries are scored (protocol step 6): under ``unreached="skip"`` (the
    paper's) not those of a row that observes none of ``sel``; under ``"mean"`` all. O(v |T|)."""
    E = observed[:, targets]
    if unreached == "skip":
        E = E & observed[:, sel].any(axis=1)[:, None]
    return E
