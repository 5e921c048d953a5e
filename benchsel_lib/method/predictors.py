"""Regression predictors for "I ran k benchmarks, predict the rest" (extensions beyond the paper).

Every predictor follows the ``Imputer`` protocol of :mod:`benchsel_lib.imputation`
(``name`` and ``predict(train, query, *, cov=None) -> (v, N)``) in standardized
space: ``train`` (m, N) holds the training models' standardized scores (NaN for
missing), ``query`` (v, N) the models to predict with only their revealed
benchmarks; revealed entries are passed through and predicting 0 is predicting
the training mean.  So :func:`benchsel_lib.cross_validate` scores them with the
paper's R^2 (Section 5.1) exactly like the Gaussian conditional mean.

* :class:`~benchsel_lib.method.regression.RidgePredictor` -- one ridge regression per (target, revealed set),
  trained on the training models that observed the target and the revealed
  benchmarks, with the ridge strength chosen per target by exact closed-form
  leave-one-out error from one SVD (:func:`ridge_loo`).
* :class:`StackedPredictor` -- a non-negative least-squares combination of base
  predictors whose weights are fit on inner folds of the *training* models.

:func:`inner_cv_predictions` is the inner cross-validation both the stack and
:func:`benchsel_lib.recommend.recommend` use: it never sees the query rows.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.optimize import nnls

from .._checks import check_int
from .base import check_train_query, pass_through
from .completion import BenchPressBlend, KNNImputer, SoftImpute
from .correlation import inner_correlation
from .gaussian import GaussianImputer
from .regression import RidgePredictor
from .scaling import fold_standardizer, in_fold

__all__ = [
    "StackedPredictor",
    "inner_cv_predictions",
    "inner_folds",
    "make_predictor",
    "PREDICTORS",
    "nnls_weights",
]


def inner_folds(m: int, n_folds: int, seed: int) -> list[np.ndarray]:
    perm = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(11,))).permutation(m)
    return [np.sort(c) for c in np.array_split(perm, n_folds)]


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
    (:func:`fold_standardizer`; predictions are mapped back to the units of
    ``train``), and the Gaussian predictor gets :func:`inner_correlation` of
    those rows as ``cov``.  Scored entries
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
        mu, sd = fold_standardizer(tr[others])
        itr = in_fold(tr[others], mu, sd)
        q = np.where(obs[rows] & rev[None, :], in_fold(tr[rows], mu, sd), np.nan)
        cov = inner_correlation(itr) if any(getattr(p, "name", "") == "gaussian" for p in predictors.values()) else None
        for name, p in predictors.items():
            out = np.asarray(p.predict(itr, q, cov=cov), dtype=float)
            out = np.where(np.isfinite(out), out, 0.0) * sd + mu
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


class StackedPredictor:
    """Non-negative combination of base predictors, weights fit on inner folds of the training models.

    For a query, the revealed set is the union of the query's observed
    columns; :func:`inner_cv_predictions` gives every base predictor's
    out-of-fold predictions on the training rows for that set, and
    :func:`nnls_weights` fits ``w >= 0`` (no intercept, not forced to sum to
    one) on the scored entries.  The prediction is ``sum_b w_b base_b(train,
    query)``.  Only training rows enter the weights.  The fitted weights of
    the last call are in ``weights_``.

    Parameters
    ----------
    base : dict name -> predictor, optional
        Default: Gaussian conditional mean, ridge, rank-3 soft-impute.
    n_folds : int, default 5
    seed : int, default 0
        Seed of the inner folds.
    """

    name = "stack"

    def __init__(self, base: dict[str, Any] | None = None, *, n_folds: int = 5, seed: int = 0) -> None:
        if base is None:
            base = {n: make_predictor(n) for n in ("gaussian", "ridge", "lowrank")}
        if not base:
            raise ValueError("StackedPredictor needs at least one base predictor")
        self.base = dict(base)
        self.n_folds = check_int(n_folds, "n_folds", minimum=2)
        self.seed = int(seed)
        self.weights_: dict[str, float] | None = None

    def predict(self, train: Any, query: Any, *, cov: Any = None) -> np.ndarray:
        """Predict every entry of ``query``; ``cov`` goes to the base predictors."""
        tr, qu = check_train_query(train, query)
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
                out += wb * np.asarray(self.base[n].predict(tr, qu, cov=cov), dtype=float)
        return pass_through(out, qu)


PREDICTORS: dict[str, Callable[[], Any]] = {}


def _gaussian() -> Any:

    return GaussianImputer(ridge=1e-2)


PREDICTORS.update(
    gaussian=_gaussian,
    ridge=RidgePredictor,
    lowrank=lambda: SoftImpute(rank=3, shrinkage=1.0, tol=1e-4),
    blend=lambda: BenchPressBlend(tol=1e-4),
    knn=KNNImputer,
    stack=StackedPredictor,
)


def make_predictor(name: str) -> Any:
    """A fresh predictor by name: one of :data:`PREDICTORS` (``gaussian, ridge, lowrank, blend, knn, stack``).

    The returned object's ``name`` is set to ``name`` so tables use the registry names.
    """
    if not isinstance(name, str) or name not in PREDICTORS:
        raise ValueError(f"unknown predictor {name!r}: use one of {sorted(PREDICTORS)}")
    p = PREDICTORS[name]()
    try:
        p.name = name
    except AttributeError:  # pragma: no cover - class attribute only
        pass
    return p
