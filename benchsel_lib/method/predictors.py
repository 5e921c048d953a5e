"""The predictors by name, their stack, and the inner cross-validation both use.

Every predictor follows the protocol of :mod:`benchsel_lib.method.base`
(``fit(train, *, cov)``, ``predict(query)``) in standardized space, so the CV
protocol scores all of them with the paper's R^2 (Section 5.1):

* ``"gaussian"`` -- the Gaussian conditional mean (:class:`~benchsel_lib.method.gaussian.GaussianPredictor`);
* ``"ridge"`` -- per-target ridge from the revealed benchmarks (:class:`~benchsel_lib.method.regression.RidgePredictor`);
* ``"imputed-ridge"`` -- per-target ridge from the mean-imputed revealed
  benchmarks, BenchPred's predictor (:class:`~benchsel_lib.method.regression.ImputedRidgePredictor`);
* ``"lowrank"``, ``"knn"``, ``"blend"`` -- soft-impute, k-nearest neighbours and
  the BenchPress blend (:mod:`benchsel_lib.method.completion`);
* ``"stack"`` -- :class:`StackedPredictor`, a non-negative combination of base
  predictors whose weights are fit on inner folds of the training models.

:func:`inner_cv_predictions` is the inner cross-validation of the stack: it
never sees the query rows.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.optimize import nnls

from .._checks import check_int
from .._random import balanced_folds, check_seed, rng
from .base import BasePredictor, Predictor, pass_through
from .completion import BenchPressBlend, KNNImputer, SoftImpute
from .correlation import inner_correlation
from .gaussian import GaussianPredictor
from .regression import ImputedRidgePredictor, RidgePredictor
from .scaling import Scaling

__all__ = [
    "StackedPredictor",
    "inner_cv_predictions",
    "inner_folds",
    "make_predictor",
    "check_predictor_name",
    "PREDICTORS",
    "nnls_weights",
    "reveal_and_predict",
    "scored_entries",
    "r2_from_sums",
    "UNCONDITIONED",
    "check_unconditioned",
]


def inner_folds(m: int, n_folds: int, seed: int, *, repeat: int = 0) -> list[np.ndarray]:
    """The inner folds of ``m`` training rows (sorted indices). O(m).

    From the stream ``(seed, 11)``; a repeated cross-validation's further
    draws (``repeat`` = 1, 2, ...) come from the streams ``(seed, 11, repeat)``.
    """
    key = (11,) if repeat == 0 else (11, int(repeat))
    return [np.sort(c) for c in balanced_folds(rng(int(seed), *key).permutation(m), n_folds)]


def inner_cv_predictions(
    train: np.ndarray,
    revealed: Sequence[int],
    predictors: dict[str, Any],
    *,
    n_folds: int = 5,
    seed: int = 0,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Out-of-fold predictions of several predictors on the training rows, for one revealed set.

    The training rows are split into ``n_folds`` seeded folds; each fold's rows
    become queries that reveal only their observed entries among ``revealed``
    and are predicted from the other folds, re-standardized on those rows
    (:class:`~benchsel_lib.method.scaling.Scaling`; predictions are mapped
    back to the units of ``train``), and when a Gaussian predictor is
    among them every predictor is fit with
    :func:`~benchsel_lib.method.correlation.inner_correlation` of those rows
    as ``cov``.  Scored entries
    (``mask``): observed, not revealed, in rows that observe at least one
    revealed benchmark (the CV protocol's rule).

    Returns
    -------
    preds : dict name -> (m, N) array (0 outside ``mask``)
    mask : (m, N) bool
        Cost: ``n_folds`` predictions per predictor.
    """
    tr = np.asarray(train, dtype=float)
    m, N = tr.shape
    rev = np.zeros(N, dtype=bool)
    rev[np.asarray(list(revealed), dtype=int)] = True
    obs = ~np.isnan(tr)
    mask = obs & ~rev[None, :] & (obs & rev[None, :]).any(axis=1)[:, None]
    preds = {name: np.zeros((m, N)) for name in predictors}
    for rows in inner_folds(m, n_folds, seed):
        others = np.setdiff1d(np.arange(m), rows)
        fold_scaling = Scaling().fit(tr[others], empty="identity")  # the fold's own standardization, clipped as the protocol clips
        itr = fold_scaling.transform(tr[others])
        q = np.where(obs[rows] & rev[None, :], fold_scaling.transform(tr[rows]), np.nan)
        cov = inner_correlation(itr) if any(getattr(p, "name", "") == "gaussian" for p in predictors.values()) else None
        for name, p in predictors.items():
            out = np.asarray(p.fit(itr, cov=cov).predict(q), dtype=float)
            out = fold_scaling.inverse(np.where(np.isfinite(out), out, 0.0))
            preds[name][rows] = np.where(mask[rows], out, 0.0)
    return preds, mask


def nnls_weights(columns: Sequence[np.ndarray], target: np.ndarray) -> np.ndarray:
    """Non-negative least-squares weights ``w >= 0`` minimizing ``||sum_b w_b c_b - target||^2``.

    ``columns`` are equally shaped prediction vectors, ``target`` the truth
    (both already restricted to scored entries).  Uses
    :func:`scipy.optimize.nnls` (Lawson-Hanson), O(n B^2).
    """
    C = np.column_stack([np.asarray(c, dtype=float).ravel() for c in columns])
    t = np.asarray(target, dtype=float).ravel()
    if C.shape[0] == 0:
        return np.full(C.shape[1], 1.0 / C.shape[1])
    w, _ = nnls(C, t)
    return w


class StackedPredictor(BasePredictor):
    """Non-negative combination of base predictors, weights fit on inner folds of the training models.

    For a query, the revealed set is the union of the query's observed
    columns; :func:`inner_cv_predictions` gives every base predictor's
    out-of-fold predictions on the training rows for that set, and
    :func:`nnls_weights` fits ``w >= 0`` (no intercept, not forced to sum to
    one) on the scored entries.  The prediction is ``sum_b w_b base_b(train,
    query)``.  Only training rows enter the weights.  The fitted weights of
    the last prediction are in ``weights_``.

    Parameters
    ----------
    base : dict name -> predictor, optional
        Default: Gaussian conditional mean, ridge, rank-3 soft-impute.
    n_folds : int, default 5
    seed : int, default 0
        Seed of the inner folds.

    Notes
    -----
    Cost per prediction: ``n_folds`` fits of every base predictor on the
    training rows (for the query's revealed set), then one fit of each.
    """

    name = "stack"

    def __init__(self, base: dict[str, Any] | None = None, *, n_folds: int = 5, seed: int = 0) -> None:
        if base is None:
            base = {"gaussian": GaussianPredictor(ridge=1e-2), "ridge": RidgePredictor(), "lowrank": _lowrank()}
        if not isinstance(base, dict) or not base:
            raise ValueError("StackedPredictor needs a dict of at least one base predictor, name -> predictor")
        for key, b in base.items():
            if isinstance(b, type) or not isinstance(b, Predictor):
                raise ValueError(f"base predictor {key!r} is not a predictor (an object with fit and predict), "
                                 f"got {b!r}")
        self.base = dict(base)
        self.n_folds = check_int(n_folds, "n_folds", minimum=2)
        self.seed = check_seed(seed)
        self.weights_: dict[str, float] | None = None

    def _predict(self, train: np.ndarray, query: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        tr, qu = train, query
        revealed = np.flatnonzero((~np.isnan(qu)).any(axis=0))
        names = list(self.base)
        if revealed.size == 0 or tr.shape[0] < 2 * self.n_folds:
            w = np.full(len(names), 1.0 / len(names))
        else:
            oof, mask = inner_cv_predictions(tr, revealed, self.base, n_folds=self.n_folds, seed=self.seed)
            w = nnls_weights([oof[n][mask] for n in names], tr[mask])
        self.weights_ = dict(zip(names, w.tolist()))
        out = np.zeros_like(qu)
        for n, wb in zip(names, w):
            if wb > 0:
                out += wb * np.asarray(self.base[n].fit(tr, cov=cov).predict(qu), dtype=float)
        return pass_through(out, qu)


def _lowrank() -> SoftImpute:
    return SoftImpute(rank=3, shrinkage=1.0, tol=1e-4)


#: predictor name -> factory of a fresh, unfitted predictor
PREDICTORS: dict[str, Callable[[], Any]] = {
    "gaussian": lambda: GaussianPredictor(ridge=1e-2),
    "ridge": RidgePredictor,
    "imputed-ridge": ImputedRidgePredictor,
    "lowrank": _lowrank,
    "blend": lambda: BenchPressBlend(tol=1e-4),
    "knn": KNNImputer,
    "stack": StackedPredictor,
}


def check_predictor_name(name: Any, *, where: str = "") -> str:
    """``name`` if it names one of :data:`PREDICTORS`; ``ValueError`` naming them otherwise.

    ``where`` (e.g. ``" in 'mi+oracle'"``) is put after the name in the message.  O(1).
    """
    if not isinstance(name, str) or name not in PREDICTORS:
        raise ValueError(f"unknown predictor {name!r}{where}: use one of {sorted(PREDICTORS)}")
    return name


def make_predictor(name: str) -> Any:
    """A fresh predictor by name: one of :data:`PREDICTORS` (``gaussian, ridge, imputed-ridge, lowrank, blend, knn, stack``).

    The returned object's ``name`` is set to ``name`` so tables use the registry names.

    Parameters
    ----------
    name : str
        A key of :data:`PREDICTORS`. The factories fix a few settings:
        ``"gaussian"`` is ``GaussianPredictor(ridge=1e-2)`` (Section 5.1's
        ridge), ``"lowrank"`` ``SoftImpute(rank=3, shrinkage=1.0, tol=1e-4)``,
        ``"blend"`` ``BenchPressBlend(tol=1e-4)``; the others take their
        classes' defaults.

    Returns
    -------
    predictor
        A new, unfitted predictor following the protocol of
        :class:`~benchsel_lib.method.base.Predictor` (``fit``/``predict``);
        each call returns a distinct object.

    Raises
    ------
    ValueError
        ``name`` is not a string naming one of :data:`PREDICTORS` (the
        message lists them).

    Notes
    -----
    Complexity O(1): only the constructor runs; fitting and predicting cost
    what the predictor's own documentation says.
    """
    p = PREDICTORS[check_predictor_name(name)]()
    p.name = name
    return p


def reveal_and_predict(
    fitted: Any, values: np.ndarray, observed: np.ndarray, sel: np.ndarray, targets: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """Predictions (and variances, or None) of ``targets`` for rows that reveal their observed entries of ``sel``.

    The protocol's step 6 (Section 5.1): each row is conditioned only on the
    selected benchmarks it has observed. A fitted
    :class:`~benchsel_lib.method.gaussian.GaussianPredictor` takes the batched
    path (:func:`~benchsel_lib.method.gaussian.conditional_moments`, rows
    grouped by revealed pattern); any other predictor gets query rows that hold
    only the revealed entries. O(one prediction of ``len(values)`` rows).
    """
    query = np.where(observed, values, np.nan)
    if isinstance(fitted, GaussianPredictor):
        return fitted.moments(query, sel, targets)
    q = np.full_like(values, np.nan)
    q[:, sel] = query[:, sel]
    if hasattr(fitted, "predict_distribution"):
        mean, var = fitted.predict_distribution(q)
        mean, var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
    else:
        mean, var = np.asarray(fitted.predict(q), dtype=float), None
    if mean.shape != values.shape:
        raise ValueError(f"predictor {getattr(fitted, 'name', fitted)!r} returned shape {mean.shape}, expected {values.shape}")
    return mean[:, targets], (None if var is None else np.maximum(var[:, targets], 1e-12))


#: what happens to a model that observes none of the selected benchmarks: not scored, or scored at the mean
UNCONDITIONED = ("skip", "mean")


def check_unconditioned(rule: str) -> str:
    """``rule`` if it is one of :data:`UNCONDITIONED`, else ``ValueError`` naming it. O(1)."""
    if rule not in UNCONDITIONED:
        raise ValueError(f"unknown unconditioned rule {rule!r}: use one of {UNCONDITIONED}")
    return rule


def r2_from_sums(ss_res: float, ss_tot: float) -> float:
    """The protocol's R^2 of a set of scored entries from its sums (Section 5.1). O(1).

    ``1 - ss_res / ss_tot``: ``ss_res`` sums the squared residuals and
    ``ss_tot`` the squared standardized truths, i.e. their squared
    deviations from the training mean (which is 0 after standardization).
    NaN when ``ss_tot`` is 0, as when nothing is scored.
    """
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else np.nan


def scored_entries(observed: np.ndarray, sel: np.ndarray, targets: np.ndarray, unconditioned: str) -> np.ndarray:
    """Which (row, target) entries are scored (protocol step 6).

    Observed unselected entries are scored. Under ``unconditioned="skip"``
    (the paper's numbers) a row that observes none of the selected
    benchmarks ``sel`` is not scored at all; under ``"mean"`` it is scored
    with its prediction, the training mean. O(v |T|).
    """
    E = observed[:, targets]
    if unconditioned == "skip":
        E = E & observed[:, sel].any(axis=1)[:, None]
    return E
