"""Per-target ridge regression from the revealed benchmarks, with the strength chosen by exact leave-one-out error.

Two predictors: :class:`RidgePredictor` fits each target on the training
models that observed it and every revealed benchmark;
:class:`ImputedRidgePredictor` (BenchPred's released predictor) fills the
missing revealed scores of the training models with their benchmark's mean
and fits each target on every training model that observed it.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._checks import check_int
from .._memo import LRUMemo, array_key
from .base import BasePredictor, pass_through
from .covariance import observed_mean
from .gaussian import pattern_groups

__all__ = [
    "DEFAULT_ALPHAS",
    "RIDGECV_ALPHAS",
    "ridge_loo_batch",
    "RidgePredictor",
    "ImputedRidgePredictor",
    "mean_imputed",
]


#: default ridge strengths searched by :func:`ridge_loo_batch` (standardized features, so ``A^T A ~ n``)
DEFAULT_ALPHAS = tuple(float(a) for a in np.logspace(-2, 4, 13))
#: scikit-learn's ``RidgeCV`` default strengths, those of BenchPred's released predictor
RIDGECV_ALPHAS = (0.1, 1.0, 10.0)


def _check_alphas(alphas: Sequence[float]) -> tuple[float, ...]:
    """``alphas`` as a tuple of floats; ValueError unless it is a non-empty sequence of positive finite numbers."""
    al = tuple(float(a) for a in alphas)
    if not al or not all(np.isfinite(a) and a > 0 for a in al):
        raise ValueError(f"alphas must be positive finite numbers, got {alphas!r}")
    return al


def mean_imputed(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``X`` with every missing (NaN) entry replaced by its column's mean, the means, and the observed mask.

    A column that no row observes has mean 0.  O(m N).
    """
    obs = ~np.isnan(X)
    mean = observed_mean(X, empty=0.0)
    return np.where(obs, X, mean[None, :]), mean, obs


def ridge_loo_batch(
    train: np.ndarray, cols: Sequence[int], targets: Sequence[int], *, alphas: Sequence[float] = DEFAULT_ALPHAS,
    observed: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Ridge with an unpenalized intercept and the strength chosen by exact leave-one-out error, for many targets.

    Target ``j`` is fit on the rows that observe ``j`` and every column of
    ``cols``; every strength is scored from one batched ``eigh`` of the
    centred Gram matrices by Allen's PRESS identity (leave-one-out residual
    ``e_i / (1 - H_ii)``), as scikit-learn's ``RidgeCV`` target by target.
    These are ``RidgeCV``'s numbers (first strength on ties) to rounding, as
    the tests check; one ``RidgeCV`` cannot serve all targets, as each target
    has its own rows (the models that observed it), and one per target is
    much slower.

    Returns
    -------
    dict with ``n`` (rows per target), ``beta`` (T, p), ``intercept`` (T,),
    ``alpha`` (T,), ``mse`` (T,) (NaN where ``n < 3``).  Cost O(m T p^2 + T p^3 + |alphas| m T p).
    """
    tr = np.asarray(train, dtype=float)
    tm = ~np.isnan(tr) if observed is None else observed
    F = np.asarray(cols, dtype=int)
    J = np.asarray(targets, dtype=int)
    al = np.asarray(alphas, dtype=float)
    rows_all = np.flatnonzero(tm[:, F].all(axis=1))  # only these rows can enter any fit
    W = tm[np.ix_(rows_all, J)].astype(float)  # (r, T)
    n = W.sum(axis=0)
    Af = tr[np.ix_(rows_all, F)]  # (r, p), fully observed
    Y = np.where(W > 0, np.nan_to_num(tr[np.ix_(rows_all, J)], copy=False), 0.0)  # (r, T); the gather is a copy
    nn = np.maximum(n, 1.0)
    mu_a = (W.T @ Af) / nn[:, None]  # (T, p)
    mu_y = Y.sum(axis=0) / nn
    G = np.einsum("ij,ip,iq->jpq", W, Af, Af, optimize=True) - nn[:, None, None] * mu_a[:, :, None] * mu_a[:, None, :]
    lam, V = np.linalg.eigh(G)
    lam = np.clip(lam, 0.0, None)
    # P[j] = (Af - mu_a[j]) V[j]: (T, r, k)
    P = np.matmul(Af[None, :, :], V)
    P -= np.matmul(mu_a[:, None, :], V)
    yc = (W * (Y - mu_y[None, :])).T  # (T, r)
    b = np.matmul(yc[:, None, :], P)[:, 0, :]  # (T, k)
    d = 1.0 / (lam[:, :, None] + al[None, None, :])  # (T, k, A)
    # the (T, r, A) arrays are updated in place: loo = W (yc - fitted) / max(1 - h, 1e-12)
    loo = np.matmul(P, d * b[:, :, None])  # fitted values (T, r, A)
    np.subtract(yc[:, :, None], loo, out=loo)
    np.multiply(loo, W.T[:, :, None], out=loo)
    h = np.matmul(np.square(P, out=P), d)  # hat diagonals less 1/n (T, r, A); P is not needed after this
    np.add(h, 1.0 / nn[:, None, None], out=h)
    np.subtract(1.0, h, out=h)
    np.divide(loo, np.maximum(h, 1e-12, out=h), out=loo)
    mse = np.square(loo, out=loo).sum(axis=1) / nn[:, None]  # (T, A)
    best = np.argmin(mse, axis=1)
    idx = np.arange(J.size)
    db = d[idx, :, best] * b  # (T, k)
    beta = np.matmul(V, db[:, :, None])[:, :, 0]
    return dict(n=n.astype(int), beta=beta, intercept=mu_y - np.einsum("jp,jp->j", mu_a, beta),
                alpha=al[best], mse=np.where(n >= 3, mse[idx, best], np.nan))


_RIDGE_STATES = LRUMemo(16)  # RidgePredictor's per-training-matrix fits


class RidgePredictor(BasePredictor):
    """Per-target ridge regression from the revealed benchmarks (LOO-tuned strength).

    The features are the revealed benchmarks, most observed first; a target
    is fit on the models that observed it and every feature, dropping the
    last feature while fewer than ``max(min_rows, features + 2)`` rows
    qualify (none left: prediction 0). Strengths by exact leave-one-out
    error (:func:`ridge_loo_batch`); fits are memoized.

    Parameters
    ----------
    alphas : sequence of float
        Candidate ridge strengths (default ``logspace(-2, 4, 13)``).
    min_rows : int, default 8
        Fewest training rows for a fit.

    Notes
    -----
    Cost per distinct feature set: O(m N p^2 + N p^3 + |alphas| m N p).  Deterministic.
    """

    name = "ridge"
    rowwise = True  # each query row is predicted from its own revealed set and the training rows

    def __init__(self, *, alphas: Sequence[float] = DEFAULT_ALPHAS, min_rows: int = 8) -> None:
        self.alphas = _check_alphas(alphas)
        self.min_rows = check_int(min_rows, "min_rows", minimum=3)

    def __repr__(self) -> str:
        return f"RidgePredictor(min_rows={self.min_rows}, alphas={len(self.alphas)} values)"

    def _state(self, tr: np.ndarray) -> dict:
        key = array_key(tr, self.alphas, self.min_rows)
        st = _RIDGE_STATES.get(key)
        if st is None:
            tm = ~np.isnan(tr)
            st = _RIDGE_STATES.put(key, {"tm": tm, "count": tm.sum(axis=0), "fits": {}})
        return st

    def _fits(self, tr: np.ndarray, st: dict, F: tuple[int, ...]) -> dict[str, np.ndarray]:
        fit = st["fits"].get(F)
        if fit is None:
            fit = ridge_loo_batch(tr, F, np.arange(tr.shape[1]), alphas=self.alphas, observed=st["tm"])
            fit["ok"] = self.enough_rows(fit["n"], len(F))
            fit["ok"][list(F)] = False
            st["fits"][F] = fit
        return fit

    def enough_rows(self, n_rows: np.ndarray, n_features: int) -> np.ndarray:
        """Which fits have enough training rows: ``max(min_rows, n_features + 2)`` or more. O(len(n_rows))."""
        return np.asarray(n_rows) >= max(self.min_rows, n_features + 2)

    def feature_order(self, obs: Sequence[int], counts: np.ndarray) -> list[int]:
        """Revealed columns by decreasing training count, then increasing column. O(p log p) for ``p`` columns."""
        o = np.asarray(sorted(int(i) for i in obs), dtype=int)
        return o[np.argsort(-counts[o], kind="stable")].tolist()

    def _predict(self, train: np.ndarray, query: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        """Predict every entry of ``query`` (v, N) in standardized space; ``cov`` is ignored."""
        st = self._state(train)
        qm = ~np.isnan(query)
        pred = np.zeros_like(query)
        patterns, inverse = pattern_groups(qm)
        for p, pat in enumerate(patterns):
            rows = np.flatnonzero(inverse == p)
            order = self.feature_order(np.flatnonzero(pat), st["count"])  # none revealed: nothing to fit
            todo = ~pat
            for L in range(len(order), 0, -1):
                if not todo.any():
                    break
                F = tuple(order[:L])
                fit = self._fits(train, st, F)
                use = todo & fit["ok"]
                if not use.any():
                    continue
                J = np.flatnonzero(use)
                pred[np.ix_(rows, J)] = fit["intercept"][J][None, :] + query[np.ix_(rows, list(F))] @ fit["beta"][J].T
                todo &= ~use
        return pass_through(pred, query)


_IMPUTED_STATES = LRUMemo(16)  # ImputedRidgePredictor's per-training-matrix fits


class ImputedRidgePredictor(BasePredictor):
    """Per-target ridge on mean-imputed revealed benchmarks (BenchPred's released predictor).

    Missing scores are replaced by their benchmark's training mean (0 where
    none is observed), in training and query rows alike. The features are
    the benchmarks that any query row reveals (so ``rowwise`` is False); each
    target is fit on every training model that observed it, strength by
    exact leave-one-out error (:func:`ridge_loo_batch`); a target observed by
    fewer than three models is predicted by its mean. Fits are memoized.

    Parameters
    ----------
    alphas : sequence of float
        Candidate ridge strengths (default :data:`RIDGECV_ALPHAS`, ``RidgeCV``'s).

    Notes
    -----
    Cost of one call with ``p`` features: ``O(m N p^2 + N p^3 + |alphas| m N p)``
    for the fits (once per training matrix and features), ``O(v N p)`` for
    the predictions.  Deterministic.
    """

    name = "imputed-ridge"
    rowwise = False  # the features are what any query row of the call reveals

    def __init__(self, *, alphas: Sequence[float] = RIDGECV_ALPHAS) -> None:
        self.alphas = _check_alphas(alphas)

    def __repr__(self) -> str:
        return f"ImputedRidgePredictor(alphas={self.alphas})"

    def _state(self, tr: np.ndarray) -> dict:
        key = array_key(tr, self.alphas)
        st = _IMPUTED_STATES.get(key)
        if st is None:
            filled, mean, tm = mean_imputed(tr)
            st = _IMPUTED_STATES.put(key, {"tm": tm, "mean": mean, "filled": filled, "fits": {}})
        return st

    def _predict(self, train: np.ndarray, query: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        """Predict every entry of ``query`` (v, N) in standardized space; ``cov`` is ignored."""
        st = self._state(train)
        pred = np.repeat(st["mean"][None, :], query.shape[0], axis=0)
        F = tuple(int(j) for j in np.flatnonzero((~np.isnan(query)).any(axis=0)))
        if not F:
            return pass_through(pred, query)
        fit = st["fits"].get(F)
        if fit is None:
            tm = st["tm"].copy()
            tm[:, list(F)] = True  # the imputed features are complete
            fit = ridge_loo_batch(st["filled"], F, np.arange(train.shape[1]), alphas=self.alphas, observed=tm)
            fit["ok"] = fit["n"] >= 3
            fit["ok"][list(F)] = False
            st["fits"][F] = fit
        feats = query[:, list(F)]
        feats = np.where(np.isnan(feats), st["mean"][None, list(F)], feats)
        J = np.flatnonzero(fit["ok"])
        pred[:, J] = fit["intercept"][J][None, :] + feats @ fit["beta"][J].T
        return pass_through(pred, query)
