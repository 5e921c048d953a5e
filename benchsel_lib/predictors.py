"""Regression predictors for "I ran k benchmarks, predict the rest" (extensions beyond the paper).

Every predictor follows the ``Imputer`` protocol of :mod:`benchsel_lib.imputation`
(``name`` and ``predict(train, query, *, cov=None) -> (v, N)``) in standardized
space: ``train`` (m, N) holds the training models' standardized scores (NaN for
missing), ``query`` (v, N) the models to predict with only their revealed
benchmarks; revealed entries are passed through and predicting 0 is predicting
the training mean.  So :func:`benchsel_lib.cross_validate` scores them with the
paper's R^2 (Section 5.1) exactly like the Gaussian conditional mean.

* :class:`RidgePredictor` -- one ridge regression per (target, revealed set),
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

from ._memo import LRUMemo, array_key
from ._validation import check_int
from .imputers import BenchPressBlend, KNNImputer, SoftImpute, _check_train_query, _pass_through

__all__ = [
    "ridge_loo",
    "ridge_loo_batch",
    "RidgePredictor",
    "StackedPredictor",
    "inner_cv_predictions",
    "inner_correlation",
    "fold_standardizer",
    "make_predictor",
    "PREDICTORS",
    "nnls_weights",
]

#: default ridge strengths searched by :func:`ridge_loo` (standardized features, so ``A^T A ~ n``)
DEFAULT_ALPHAS = tuple(float(a) for a in np.logspace(-2, 4, 13))


# --------------------------------------------------------------------------- closed-form LOO ridge
def ridge_loo(
    A: np.ndarray, y: np.ndarray, alphas: Sequence[float] = DEFAULT_ALPHAS
) -> tuple[np.ndarray, float, float, float]:
    """Ridge regression with an unpenalized intercept, strength chosen by exact leave-one-out error.

    For centred features ``Ac = U S V^T`` (thin SVD) and centred ``yc``, the fit
    with strength ``a`` is the linear smoother
    ``H_a = 11^T / n + U diag(s^2 / (s^2 + a)) U^T``; ridge with a quadratic
    penalty is stable under replacing ``y_i`` by its leave-one-out prediction,
    so the leave-one-out residual is exactly ``e_i / (1 - H_ii)`` (Allen's PRESS
    identity).  All strengths are scored from the one SVD.

    Parameters
    ----------
    A : ndarray (n, p)
        Features (no NaN), ``n >= 3``.
    y : ndarray (n,)
        Target.
    alphas : sequence of float
        Candidate strengths (positive); the smallest mean LOO error wins (first on ties).

    Returns
    -------
    beta, intercept, alpha, loo_mse
        Coefficients (p,), intercept, the chosen strength and its mean squared
        leave-one-out residual.  Cost O(n p min(n, p) + |alphas| n min(n, p)).
    """
    A = np.asarray(A, dtype=float)
    y = np.asarray(y, dtype=float)
    n = A.shape[0]
    if n < 3 or y.shape != (n,):
        raise ValueError(f"ridge_loo needs at least 3 rows and a matching target, got A {A.shape}, y {y.shape}")
    al = np.asarray(alphas, dtype=float)
    if al.size == 0 or not (al > 0).all():
        raise ValueError("alphas must be a non-empty sequence of positive numbers")
    a_mean, y_mean = A.mean(axis=0), y.mean()
    Ac, yc = A - a_mean, y - y_mean
    U, s, Vt = np.linalg.svd(Ac, full_matrices=False)
    Uty = U.T @ yc  # (r,)
    s2 = s**2
    shrink = s2[None, :] / (s2[None, :] + al[:, None])  # (n_alpha, r)
    fitted = (shrink * Uty[None, :]) @ U.T  # (n_alpha, n), centred fitted values
    h = 1.0 / n + (shrink @ (U**2).T)  # (n_alpha, n) hat diagonals
    loo = (yc[None, :] - fitted) / np.maximum(1.0 - h, 1e-12)
    mse = np.mean(loo**2, axis=1)
    best = int(np.argmin(mse))
    with np.errstate(divide="ignore", invalid="ignore"):
        coef_s = np.where(s > 0, s / (s2 + al[best]), 0.0)
    beta = Vt.T @ (coef_s * Uty)
    return beta, float(y_mean - a_mean @ beta), float(al[best]), float(mse[best])


def ridge_loo_batch(
    train: np.ndarray, cols: Sequence[int], targets: Sequence[int], alphas: Sequence[float] = DEFAULT_ALPHAS,
    *, observed: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """:func:`ridge_loo` for many targets sharing one feature set, vectorized over the targets.

    Target ``j`` is fit on the rows that observe ``j`` and every column of
    ``cols``.  Per target the centred Gram matrix ``G_j = A_j^T A_j`` is
    eigendecomposed (batched ``eigh`` of ``p x p`` matrices); with
    ``G_j = V diag(l) V^T`` the fitted values and hat diagonals for strength
    ``a`` are ``P diag(1/(l + a)) V^T A_j^T y_j`` and ``1/n_j + sum_k P_ik^2 / (l_k + a)``
    with ``P = A_j V`` -- the same numbers as one SVD per target.

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
    Y = np.where(W > 0, np.nan_to_num(tr[np.ix_(rows_all, J)]), 0.0)  # (r, T)
    nn = np.maximum(n, 1.0)
    mu_a = (W.T @ Af) / nn[:, None]  # (T, p)
    mu_y = Y.sum(axis=0) / nn
    G = np.einsum("ij,ip,iq->jpq", W, Af, Af, optimize=True) - nn[:, None, None] * mu_a[:, :, None] * mu_a[:, None, :]
    lam, V = np.linalg.eigh(G)
    lam = np.clip(lam, 0.0, None)
    # P[j] = (Af - mu_a[j]) V[j]: (T, r, k)
    P = np.matmul(Af[None, :, :], V) - np.matmul(mu_a[:, None, :], V)
    yc = (W * (Y - mu_y[None, :])).T  # (T, r)
    b = np.matmul(yc[:, None, :], P)[:, 0, :]  # (T, k)
    d = 1.0 / (lam[:, :, None] + al[None, None, :])  # (T, k, A)
    fitted = np.matmul(P, d * b[:, :, None])  # (T, r, A)
    h = 1.0 / nn[:, None, None] + np.matmul(P**2, d)  # (T, r, A)
    loo = W.T[:, :, None] * (yc[:, :, None] - fitted) / np.maximum(1.0 - h, 1e-12)
    mse = (loo**2).sum(axis=1) / nn[:, None]  # (T, A)
    best = np.argmin(mse, axis=1)
    idx = np.arange(J.size)
    db = d[idx, :, best] * b  # (T, k)
    beta = np.matmul(V, db[:, :, None])[:, :, 0]
    out_mse = np.where(n >= 3, mse[idx, best], np.nan)
    return dict(n=n.astype(int), beta=beta, intercept=mu_y - np.einsum("jp,jp->j", mu_a, beta),
                alpha=al[best], mse=out_mse)


_RIDGE_STATES = LRUMemo(16)  # RidgePredictor's per-training-matrix fits


class RidgePredictor:
    """Per-target ridge regression from the revealed benchmarks (LOO-tuned strength).

    For a query model with revealed set ``O``, the features are the revealed
    benchmarks ordered by how many training models observed them (most
    first, then lower column).  For a target ``j`` outside ``O`` the training
    rows are the models that observed ``j`` and every feature; while fewer
    than ``max(min_rows, features + 2)`` rows qualify, the last feature is
    dropped, and with no feature left the prediction is 0 (the training
    mean).  The ridge strength of each fit is chosen from ``alphas`` by exact
    leave-one-out error (:func:`ridge_loo`, vectorized over targets by
    :func:`ridge_loo_batch`).  Query rows with the same revealed set share
    fits; fits are memoized per (training matrix, feature set).

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
        al = tuple(float(a) for a in alphas)
        if not al or not all(np.isfinite(a) and a > 0 for a in al):
            raise ValueError(f"alphas must be positive finite numbers, got {alphas!r}")
        self.alphas = al
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
            fit = ridge_loo_batch(tr, F, np.arange(tr.shape[1]), self.alphas, observed=st["tm"])
            fit["ok"] = fit["n"] >= max(self.min_rows, len(F) + 2)
            fit["ok"][list(F)] = False
            st["fits"][F] = fit
        return fit

    def feature_order(self, obs: Sequence[int], counts: np.ndarray) -> list[int]:
        """Revealed columns by decreasing training count, then increasing column."""
        o = np.asarray(sorted(int(i) for i in obs), dtype=int)
        return o[np.argsort(-counts[o], kind="stable")].tolist()

    def predict(self, train: Any, query: Any, *, cov: Any = None) -> np.ndarray:
        """Predict every entry of ``query`` (v, N) in standardized space; ``cov`` is ignored."""
        tr, qu = _check_train_query(train, query)
        st = self._state(tr)
        qm = ~np.isnan(qu)
        pred = np.zeros_like(qu)
        patterns, inverse = np.unique(qm, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        for p, pat in enumerate(patterns):
            obs = np.flatnonzero(pat)
            if obs.size == 0:
                continue
            rows = np.flatnonzero(inverse == p)
            order = self.feature_order(obs, st["count"])
            todo = ~pat.copy()
            for L in range(len(order), 0, -1):
                if not todo.any():
                    break
                F = tuple(order[:L])
                fit = self._fits(tr, st, F)
                use = todo & fit["ok"]
                if not use.any():
                    continue
                J = np.flatnonzero(use)
                pred[np.ix_(rows, J)] = fit["intercept"][J][None, :] + qu[np.ix_(rows, list(F))] @ fit["beta"][J].T
                todo &= ~use
        return _pass_through(pred, qu)


# --------------------------------------------------------------------------- inner cross-validation
#: up to this missing fraction the inner correlation is the EM estimate, above it the pairwise one
EM_MAX_MISSING = 0.5


def inner_correlation(train: np.ndarray) -> np.ndarray:
    """Correlation of (standardized) training rows used inside inner folds and by the recommended pipeline.

    With at most :data:`EM_MAX_MISSING` of the entries missing: the paper's
    estimator (``estimate_correlation(method="auto", context="cv")``: pairwise
    on complete data, EM otherwise), cheap there and better conditioned than
    pairwise correlations.  On sparser matrices (EM per inner fold would cost
    seconds): the pairwise-complete covariance (Appendix G) as a correlation,
    eigenvalues floored at ``1e-4`` and rescaled to a unit diagonal,
    O(m N^2 + N^3).
    """
    from .estimation import cov_to_corr, estimate_correlation, pairwise_covariance

    tr = np.asarray(train, dtype=float)
    obs_cols = (~np.isnan(tr)).sum(axis=0) >= 2
    if np.isnan(tr).mean() <= EM_MAX_MISSING and obs_cols.all() and tr.shape[0] >= 3:
        try:
            R = np.asarray(estimate_correlation(tr, method="auto", context="cv", std_floor="relative").corr, dtype=float)
            if np.isfinite(R).all():
                return (R + R.T) / 2.0
        except ValueError:
            pass
    ok = (~np.isnan(tr)).sum(axis=0) >= 1
    C = np.eye(tr.shape[1])
    if ok.any():
        sub = tr[:, ok]
        keep = (~np.isnan(sub)).any(axis=1)
        if keep.sum() >= 1:
            C[np.ix_(ok, ok)] = cov_to_corr(pairwise_covariance(sub[keep]))
    w, V = np.linalg.eigh((C + C.T) / 2.0)
    C = (V * np.maximum(w, 1e-4)) @ V.T
    d = np.sqrt(np.diag(C))
    return C / d[:, None] / d[None, :]


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
        Use ``clip((x - mean) / std, -INNER_CLIP, INNER_CLIP)`` (:func:`_in_fold`)
        on the fold's training and query rows and ``pred * std + mean`` to map
        predictions back.
    """
    from .estimation import fit_standardizer

    x = np.asarray(rows, dtype=float)
    mu, sd = np.zeros(x.shape[1]), np.ones(x.shape[1])
    seen = (~np.isnan(x)).any(axis=0)
    if seen.any():
        st = fit_standardizer(x[:, seen], std_floor="relative")
        mu[seen], sd[seen] = st.mean, st.std
    return mu, sd


def _in_fold(x: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """``x`` in a fold's standardization (:func:`fold_standardizer`), clipped as the protocol clips."""
    return np.clip((x - mu) / sd, -INNER_CLIP, INNER_CLIP)


def _inner_folds(m: int, n_folds: int, seed: int) -> list[np.ndarray]:
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
    for rows in _inner_folds(m, n_folds, seed):
        others = np.setdiff1d(np.arange(m), rows)
        mu, sd = fold_standardizer(tr[others])
        itr = _in_fold(tr[others], mu, sd)
        q = np.where(obs[rows] & rev[None, :], _in_fold(tr[rows], mu, sd), np.nan)
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


# --------------------------------------------------------------------------- stacking
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
        tr, qu = _check_train_query(train, query)
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
        return _pass_through(out, qu)


# --------------------------------------------------------------------------- registry
PREDICTORS: dict[str, Callable[[], Any]] = {}


def _gaussian() -> Any:
    from .imputation import GaussianImputer

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
