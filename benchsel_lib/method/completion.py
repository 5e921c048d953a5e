"""Offline predictors beyond the Gaussian model: soft-impute, k-nearest neighbours, the BenchPress blend (Appendix I).

All follow the predictor protocol of :mod:`benchsel_lib.method.base` in
standardized space (predicting 0 is predicting the training mean), are
deterministic and need no weights:

* :class:`SoftImpute` -- iterative (soft-thresholded) SVD completion of the
  stacked ``[train; query]`` matrix (Mazumder, Hastie & Tibshirani 2010).
* :class:`KNNImputer` -- nan-aware k-nearest-neighbour imputation among the
  training models.
* :class:`BenchPressBlend` -- the BenchPress recipe of Appendix I: ridge
  regression on the most correlated observed benchmarks, blended 50/50 with a
  rank-2 SVD completion.
"""
from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
from scipy.linalg.lapack import dsyevr

from .._checks import check_int, check_nonnegative
from .._memo import LRUMemo, array_key
from .base import BasePredictor, pass_through
from .covariance import pairwise_pearson

__all__ = ["SoftImpute", "KNNImputer", "BenchPressBlend"]


def _top_eigh(G: np.ndarray, rank: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs of the symmetric ``G``, largest first: the top ``rank`` only when ``rank < len(G)``, else all."""
    n = G.shape[0]
    if rank is not None and rank < n:
        lam, vec, found, _, info = dsyevr(G, compute_v=1, range="I", il=n - rank + 1, iu=n)
        if info == 0 and found == rank:  # else a LAPACK failure: the full solver below
            return lam[:found][::-1], vec[:, :found][:, ::-1]
    lam, vec = np.linalg.eigh(G)
    return lam[::-1][:rank], vec[:, ::-1][:, :rank]


def _fit_factors(G: np.ndarray, rank: int | None, shrinkage: float) -> tuple[np.ndarray, np.ndarray]:
    """Right singular vectors and soft-threshold factors of the rank-``rank`` fit from ``G = Y^T Y``."""
    lam, vec = _top_eigh(G, rank)
    sigma = np.sqrt(np.clip(lam, 0.0, None))
    keep = sigma > 1e-12 * max(float(sigma[0]), 1e-300)  # _top_eigh gave at most ``rank`` pairs
    sigma, vec = sigma[keep], vec[:, keep]
    factor = np.maximum(sigma - shrinkage, 0.0) / sigma if shrinkage > 0.0 else np.ones_like(sigma)
    return vec, factor


def _svd_complete(
    Z: np.ndarray,
    *,
    rank: int | None,
    shrinkage: float,
    max_iter: int,
    tol: float,
    init: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Iterative SVD completion of ``Z`` (NaN = missing); returns (low-rank fit, iterations).

    Missing entries start at ``init`` (default 0) and are replaced by the
    soft-thresholded rank-``rank`` fit until ``||Y_new - Y||_F^2 / ||Y||_F^2 < tol``.
    """
    if Z.shape[0] < Z.shape[1]:  # work on the tall orientation: the Gram matrix is the smaller one
        fit, n_iter = _svd_complete(Z.T, rank=rank, shrinkage=shrinkage, max_iter=max_iter, tol=tol,
                                    init=None if init is None else np.asarray(init).T)
        return fit.T, n_iter
    mask = ~np.isnan(Z)
    filled = np.where(mask, Z, 0.0 if init is None else init)
    var = np.flatnonzero(~mask.all(axis=1))  # rows with a missing entry: the only ones that change
    fixed = np.flatnonzero(mask.all(axis=1))
    Yf = filled[fixed]
    G_fixed = Yf.T @ Yf
    denom_fixed = float(np.sum(Yf**2))
    m_var, z_var = mask[var], Z[var]
    Y = filled[var]  # the changing rows of the current filled matrix
    Y_prev, vec, factor = Y, None, None
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        vec, factor = _fit_factors(G_fixed + Y.T @ Y, rank, shrinkage)
        Y_new = np.where(m_var, z_var, ((Y @ vec) * factor) @ vec.T)
        delta = float(np.sum((Y_new - Y) ** 2))
        denom = max(denom_fixed + float(np.sum(Y**2)), 1e-300)
        Y_prev, Y = Y, Y_new
        if delta / denom < tol:
            break
    filled[var] = Y_prev
    return ((filled @ vec) * factor) @ vec.T, n_iter


_TRAIN_FITS = LRUMemo(8)  # SoftImpute completions of training matrices


class SoftImpute(BasePredictor):
    """Rank-r iterative SVD / soft-impute completion (an offline imputer).

    The training and query rows are stacked into one (m + v, N) matrix; missing
    entries start at 0 (the training mean in standardized space) and are
    replaced, until convergence, by the rank-``rank`` SVD fit of the current
    filled matrix whose singular values are soft-thresholded by ``shrinkage``
    (Mazumder, Hastie & Tibshirani 2010).  ``shrinkage=0`` is hard-impute
    (iterative rank-r SVD); ``rank=None`` is pure nuclear-norm soft-impute.

    Parameters
    ----------
    rank : int or None, default 3
        Maximal rank of the fit.
    shrinkage : float, default 1.0
        Soft-threshold ``lambda`` subtracted from every singular value (some
        shrinkage keeps a rank-r fit with r >= k from extrapolating wildly).
        The defaults come from a small probe on MMLU (random 5-subsets, 3
        splits: hard-impute at rank 3 gave R^2 ~ 0.2, rank 3 with shrinkage 1
        gave 0.86-0.93), not from a tuned search.
    max_iter : int, default 200
        Maximal number of SVD iterations.
    tol : float, default 1e-6
        Stop when ``||Y_new - Y||_F^2 / ||Y||_F^2 < tol`` for the filled matrix.

    Notes
    -----
    Deterministic. Complexity per iteration O((m + v) N min(m + v, N)) at most.
    """

    _repr_params = ("rank", "shrinkage", "max_iter", "tol")

    def __init__(self, *, rank: int | None = 3, shrinkage: float = 1.0, max_iter: int = 200, tol: float = 1e-6):
        if rank is not None:
            rank = check_int(rank, "rank")
        shrinkage = check_nonnegative(shrinkage, "shrinkage")
        if rank is None and shrinkage == 0.0:
            raise ValueError("SoftImpute needs a rank or a positive shrinkage (otherwise it returns the data)")
        self.rank = rank
        self.shrinkage = shrinkage
        self.max_iter = check_int(max_iter, "max_iter")
        tol = float(tol)
        if not tol > 0:
            raise ValueError(f"tol must be positive, got {tol!r}")
        self.tol = tol
        self.name = f"softimpute(rank={rank}" + (f", shrinkage={shrinkage:g})" if shrinkage else ")")
        self.n_iter_: int | None = None

    def _train_fit(self, tr: np.ndarray) -> np.ndarray:
        """Completion of the training rows alone (memoized on the exact training bytes)."""
        key = array_key(tr, self.rank, self.shrinkage, self.max_iter, self.tol)
        hit = _TRAIN_FITS.get(key)
        if hit is not None:
            return hit
        fit, _ = _svd_complete(tr, rank=self.rank, shrinkage=self.shrinkage, max_iter=self.max_iter, tol=self.tol)
        fit.setflags(write=False)
        return _TRAIN_FITS.put(key, fit)

    def _predict(self, train: np.ndarray, query: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        """Complete ``[train; query]`` starting from the (memoized) completion of the training rows."""
        init = np.vstack([self._train_fit(train), np.zeros_like(query)])
        fit, self.n_iter_ = _svd_complete(np.vstack([train, query]), rank=self.rank, shrinkage=self.shrinkage,
                                          max_iter=self.max_iter, tol=self.tol, init=init)
        return pass_through(fit[train.shape[0]:], query)


#: most (query row, training row) distance pairs :class:`KNNImputer` holds at once
KNN_BATCH = 1 << 24


class KNNImputer(BasePredictor):
    """Nan-aware k-nearest-neighbour imputation among the training models.

    For a query row with observed columns ``O``, the distance to a training row
    uses the columns both have observed (nan-Euclidean distance, as in
    scikit-learn): ``d = sqrt(|O| / c * sum_{common} (q_j - t_j)^2)`` with
    ``c`` the number of common columns; rows with no common column are never
    neighbours.  Each missing entry ``j`` is the (weighted) mean of column
    ``j`` over the ``n_neighbors`` nearest training rows that observed ``j``.
    When no neighbour exists (a query with nothing observed, or no donor), the
    prediction is 0, i.e. the training mean.

    Parameters
    ----------
    n_neighbors : int, default 10
        Number of donors per entry.
    weights : {"distance", "uniform"}, default "distance"
        Weight donors by ``1 / max(d, 1e-6)`` or equally.

    Notes
    -----
    Deterministic: ties in distance go to the lower training-row index.
    Complexity O(v m N + v m log m); memory O(min(v m, KNN_BATCH) + (v + m) N).

    scikit-learn's :class:`sklearn.impute.KNNImputer` gives the same numbers
    to rounding except where it breaks ties at the ``k``-th donor in no set
    order, gives donors at distance 0 all the weight, or fills an entry
    without donor with the column mean; on BenchPress folds that changed 2 to
    7% of the predicted entries, and it was 8 to 13 times slower.
    """

    rowwise = True  # a query row's neighbours are training rows only
    _repr_params = ("n_neighbors", "weights")

    def __init__(self, *, n_neighbors: int = 10, weights: str = "distance"):
        self.n_neighbors = check_int(n_neighbors, "n_neighbors")
        if weights not in ("distance", "uniform"):
            raise ValueError(f"unknown weights {weights!r}: use 'distance' or 'uniform'")
        self.weights = weights
        self.name = f"knn(k={self.n_neighbors})"

    def _predict(self, train: np.ndarray, query: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        """Predict every entry of ``query`` in blocks of at most :data:`KNN_BATCH` distance pairs."""
        tm = ~np.isnan(train)
        tf = np.where(tm, train, 0.0)
        m, N = train.shape
        pred = np.zeros_like(query)
        step = max(1, 4_000_000 // max(1, m * N))
        v_all = query.shape[0]
        block = v_all if v_all * m <= KNN_BATCH else max(step, (KNN_BATCH // max(1, m)) // step * step)
        for b in range(0, v_all, block):
            pred[b : b + block] = self._predict_block(tm, tf, query[b : b + block], step)
        return pass_through(pred, query)

    def _predict_block(self, tm: np.ndarray, tf: np.ndarray, qu: np.ndarray, step: int) -> np.ndarray:
        """Predictions of the query rows ``qu`` from the training mask ``tm`` and zero-filled values ``tf``."""
        qm = ~np.isnan(qu)
        qf = np.where(qm, qu, 0.0)
        sq = (qf**2) @ tm.T + qm.astype(float) @ (tf**2).T - 2.0 * qf @ tf.T
        common = qm.astype(float) @ tm.T.astype(float)
        n_obs = qm.sum(axis=1, keepdims=True).astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            dist = np.sqrt(np.clip(sq, 0.0, None) * n_obs / common)
        dist[common == 0] = np.inf
        pred = np.zeros_like(qu)
        k = min(self.n_neighbors, tf.shape[0])
        donors = _nearest_donors if tm.all() else _observing_donors
        for a in range(0, qu.shape[0], step):
            dk, vals = donors(dist[a : a + step], tm, tf, k)
            valid = np.isfinite(dk)
            w = valid.astype(float) if self.weights == "uniform" else np.where(valid, 1.0 / np.maximum(dk, 1e-6), 0.0)
            wsum = w.sum(axis=2)
            with np.errstate(invalid="ignore", divide="ignore"):
                pred[a : a + step] = np.where(wsum > 0, (w * vals).sum(axis=2) / wsum, 0.0)
        return pred


def _nearest_donors(d: np.ndarray, tm: np.ndarray, tf: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_observing_donors` where every training row observed every column: the ``k`` nearest rows
    serve every column. O(v m log m + v N k)."""
    v, N = d.shape[0], tf.shape[1]
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    dk = np.ascontiguousarray(np.broadcast_to(np.take_along_axis(d, order, axis=1)[:, None, :], (v, N, k)))
    return dk, np.ascontiguousarray(tf[order].transpose(0, 2, 1))


def _observing_donors(d: np.ndarray, tm: np.ndarray, tf: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Distances and values (v, N, k) of each query row's donors for column ``j``: the first ``k`` training
    rows in stable order of the distances ``d`` (v, m) that observed ``j`` (distance inf: no donor).
    O(v m log m + v w N) for the ``w`` nearest rows that hold ``k`` donors of every column."""
    (v, m), N = d.shape, tf.shape[1]
    order = np.argsort(d, axis=1, kind="stable")
    ds = np.take_along_axis(d, order, axis=1)
    width = min(m, 4 * k)
    while True:
        ob = tm[order[:, :width]]  # (v, width, N)
        rank = ob.astype(np.int32)
        for l in range(1, width):  # running count along axis 1 (np.cumsum is slow on a middle axis)
            rank[:, l] += rank[:, l - 1]
        if width == m or (rank[:, -1, :] >= k).all():
            break
        width = min(m, 4 * width)
    flat = np.flatnonzero(ob & (rank <= k))  # np.nonzero's order, without its slow n-d path
    slot = rank.ravel()[flat] - 1
    # flat = (vi * width + mi) * N + ni: the donors' places in (v, m) and in the (v, N, k) results
    vm, ni = np.divmod(flat, N)
    vi, mi = np.divmod(vm, width)
    src, dst = vi * m + mi, (vi * N + ni) * k + slot
    dk, vals = np.full(v * N * k, np.inf), np.zeros(v * N * k)
    dk[dst] = ds.ravel()[src]
    vals[dst] = tf.ravel()[order.ravel()[src] * N + ni]
    return dk.reshape(v, N, k), vals.reshape(v, N, k)


_BLEND_STATES = LRUMemo(8)  # BenchPressBlend's per-training-matrix state

#: most elements (training rows x fits x predictors) of one batch of the blend's ridge fits
FIT_BATCH = 1 << 22

#: most elements (observation patterns x targets x observed benchmarks) the blend ranks at once
RANK_BATCH = 1 << 22

#: most (query row, target) entries whose ridge predictions the blend computes at once
ENTRY_BATCH = 1 << 18


def _batches(n: int, per_item: int) -> list[slice]:
    """Slices cutting ``n`` items into near-equal batches of at most :data:`FIT_BATCH` / ``per_item`` items (at least two each)."""
    if n * per_item <= FIT_BATCH or n < 4:
        return [slice(0, n)]
    parts = min(-(-n * per_item // FIT_BATCH), n // 2)
    bounds = np.linspace(0, n, parts + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in pairwise(bounds)]


class _FitStore:
    """The blend's ridge fits on one training matrix, as arrays by the number ``p`` of predictors kept.

    ``code[(j, columns)]`` is ``p << 32 | row``, the fit's row in ``arrays[p]`` (columns, coefficients,
    predictor means, target means), or -1 where no fit is possible.
    """

    def __init__(self) -> None:
        self.code: dict[tuple[int, tuple[int, ...]], int] = {}
        self.arrays: dict[int, list[np.ndarray]] = {}

    def missing(self, keys: list[tuple[int, tuple[int, ...]]]) -> list[tuple[int, tuple[int, ...]]]:
        """The keys not kept yet, once each, in order of first occurrence. O(len(keys))."""
        return [key for key in dict.fromkeys(keys) if key not in self.code]

    def add(self, todo: list[tuple[int, tuple[int, ...]]], use: np.ndarray,
            parts: dict[int, tuple[np.ndarray, ...]]) -> None:
        """Keep the fits of ``todo`` as :meth:`BenchPressBlend._ridge_fits` returns them. O(the fits kept)."""
        self.code.update((key, -1) for key, p in zip(todo, use.tolist()) if not p)
        for p, (idx, *arrays) in parts.items():
            held = self.arrays.get(p)
            n = 0 if held is None else held[0].shape[0]
            self.arrays[p] = arrays if held is None else [np.concatenate(pair) for pair in zip(held, arrays)]
            self.code.update(zip([todo[i] for i in idx.tolist()], range((p << 32) | n, (p << 32) | (n + idx.size))))


class BenchPressBlend(BasePredictor):
    """BenchPress-style blend: ridge on the most correlated observed benchmarks + rank-2 SVD (Appendix I).

    For each query row and each target benchmark ``j`` it is missing:

    1. rank the query's observed benchmarks by ``|corr(j, .)|`` (the training
       correlation ``cov`` when the CV protocol passes it, else pairwise
       correlations over co-observed training models) and keep the top
       ``n_predictors``;
    2. fit a ridge regression (intercept, penalty ``ridge``) of column ``j``
       on those predictors over the training models that observed all of them
       and ``j``; while fewer than ``min_rows`` such models exist, drop the
       weakest predictor;
    3. predict 50/50 (``blend``) between the ridge prediction and a rank-2
       iterative SVD completion (:class:`SoftImpute`) of ``[train; query]``;
       where no ridge fit is possible, the SVD prediction alone is used.

    The ridge is fitted in standardized space; for BenchPress's logit step
    run the CV with the Appendix K transform (``transform="logit"``).

    Parameters
    ----------
    n_predictors : int, default 5
        Most correlated observed benchmarks used per target.
    ridge : float, default 1.0
        Ridge penalty on the (standardized) coefficients (0: least squares,
        the minimum-norm solution where the predictors are collinear).
    rank : int, default 2
        Rank of the SVD completion.
    blend : float, default 0.5
        Weight of the ridge prediction (1 - blend for the SVD).
    min_rows : int, default 5
        Least number of training models for a ridge fit.
    min_overlap : int, default 5
        Least number of co-observed training models for a pairwise correlation.

    Notes
    -----
    Deterministic; ridge fits are memoized per training matrix and
    (target, predictor set). Complexity O(SVD completion + P N K log K + F m p^2) for P distinct
    observation patterns, each observing at most K benchmarks, and F distinct
    fits with p <= n_predictors.
    """

    _repr_params = ("n_predictors", "ridge", "rank", "blend", "min_rows", "min_overlap")

    def __init__(
        self,
        *,
        n_predictors: int = 5,
        ridge: float = 1.0,
        rank: int = 2,
        blend: float = 0.5,
        min_rows: int = 5,
        min_overlap: int = 5,
        max_iter: int = 200,
        tol: float = 1e-6,
    ):
        self.n_predictors = check_int(n_predictors, "n_predictors")
        self.ridge = check_nonnegative(ridge, "ridge")
        blend = float(blend)
        if not 0.0 <= blend <= 1.0:
            raise ValueError(f"blend={blend} is out of range: it must be in [0, 1]")
        self.blend = blend
        self.min_rows = check_int(min_rows, "min_rows")
        self.min_overlap = check_int(min_overlap, "min_overlap")
        self._svd = SoftImpute(rank=rank, shrinkage=0.0, max_iter=max_iter, tol=tol)
        self.rank = self._svd.rank
        self.name = "benchpress-blend"

    def _train_state(self, tr: np.ndarray) -> dict[str, Any]:
        """Per-training-matrix state: mask, correlations, ridge fits (memoized on the exact training bytes)."""
        key = array_key(tr, self.ridge, self.min_rows, self.min_overlap)
        state = _BLEND_STATES.get(key)
        if state is not None:
            return state
        tm = ~np.isnan(tr)
        tm.setflags(write=False)
        return _BLEND_STATES.put(key, {"tm": tm, "fits": _FitStore()})

    def _correlations(self, tr: np.ndarray, cov: Any, state: dict[str, Any]) -> np.ndarray:
        if cov is not None:  # checked by fit: finite, symmetric, one row per benchmark
            c = np.asarray(cov, dtype=float)
            d = np.sqrt(np.clip(np.diag(c), 1e-300, None))
            if "cnt" not in state:  # rows observing both columns (pairwise_pearson's counts)
                M = state["tm"].astype(float)
                state["cnt"] = M.T @ M
            return np.where(state["cnt"] >= self.min_overlap, c / d[:, None] / d[None, :], np.nan)
        if "corr" not in state:
            state["corr"], state["cnt"] = pairwise_pearson(tr, min_overlap=self.min_overlap)
        return state["corr"]

    def _ridge_fits(self, tr: np.ndarray, tm: np.ndarray,
                    keys: list[tuple[int, tuple[int, ...]]]) -> tuple[np.ndarray, dict[int, tuple[np.ndarray, ...]]]:
        """Ridge fits for many ``(target j, predictor columns)`` keys at once. O(F m p^2).

        Returns the number of predictors each key's fit keeps (0: none left) and, for every such number
        ``p``, ``(positions in keys, columns, coefficients, predictor means, target means)``: one row per fit.
        """
        if not keys:
            return np.zeros(0, dtype=np.int64), {}
        m = tr.shape[0]
        width = max(len(c) for _, c in keys)
        tf = np.where(tm, tr, 0.0)
        js = np.array([j for j, _ in keys])
        cols = np.array([c + (c[-1],) * (width - len(c)) for _, c in keys])  # (F, width), padded
        lens = np.array([len(c) for _, c in keys])
        # rows observing j and the first l predictors, counted for every prefix length l
        counts = np.empty((len(keys), width), dtype=np.int64)
        for b in _batches(len(keys), m * width):
            acc = tm[:, js[b]]
            for l in range(width):
                acc &= tm[:, cols[b, l]]
                counts[b, l] = acc.sum(axis=0)
        enough = (counts >= self.min_rows) & (np.arange(1, width + 1)[None, :] <= lens[:, None])
        use = np.where(enough.any(axis=1), width - np.argmax(enough[:, ::-1], axis=1), 0)
        out = {}
        for p in np.unique(use[use > 0]).tolist():
            idx = np.flatnonzero(use == p)
            moments = []  # (a_mean, y_mean, G, rhs) of each batch: the m-sized arrays live one batch at a time
            for b in _batches(idx.size, m * p):
                sub = idx[b]
                rows = tm[:, js[sub]]
                for l in range(p):
                    rows &= tm[:, cols[sub, l]]
                W = rows.astype(float)  # (m, f) row masks
                A = tf[:, cols[sub, :p]]  # (m, f, p)
                y = tf[:, js[sub]]  # (m, f)
                n = W.sum(axis=0)
                a_mean = np.einsum("mf,mfp->fp", W, A) / n[:, None]
                y_mean = np.einsum("mf,mf->f", W, y) / n
                Ac = np.multiply(np.subtract(A, a_mean[None], out=A), W[:, :, None], out=A)  # A centred, in place
                G = np.einsum("mfp,mfq->fpq", Ac, Ac) + self.ridge * np.eye(p)[None]
                rhs = np.einsum("mfp,mf->fp", Ac, np.multiply(np.subtract(y, y_mean[None], out=y), W, out=y))
                moments.append((a_mean, y_mean, G, rhs))
            a_mean, y_mean, G, rhs = (np.concatenate(part) for part in zip(*moments))
            try:
                beta = np.linalg.solve(G, rhs[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:  # ridge = 0 with collinear predictors: minimum-norm solutions
                beta = np.stack([np.linalg.lstsq(G[t], rhs[t], rcond=None)[0] for t in range(len(idx))])
            out[p] = (idx, cols[idx, :p], beta, a_mean, y_mean)
        return use, out

    def _plan(self, qm: np.ndarray, corr: np.ndarray) -> tuple[list[np.ndarray], list[int], list[tuple]]:
        """The ridge fits a query needs: the rows of each observation pattern, and per (pattern, target) the
        pattern's index and the fit's key ``(target j, predictor columns)``."""
        N = qm.shape[1]
        rows_of: dict[bytes, list[int]] = {}
        for i, row in enumerate(qm):
            rows_of.setdefault(row.tobytes(), []).append(i)
        groups: list[np.ndarray] = []
        item_group: list[int] = []
        keys: list[tuple[int, tuple[int, ...]]] = []
        pats = [np.frombuffer(b, dtype=bool) for b in sorted(rows_of)]  # np.unique(qm, axis=0)'s order
        obs = [np.flatnonzero(pat) for pat in pats]
        K = max((o.size for o in obs), default=0)
        if K == 0:
            return groups, item_group, keys
        strength = np.abs(corr)
        ok = np.isfinite(strength)
        # rank key of column c for target j: -|corr| where defined, after those the undefined ones, then padding
        key = np.append(np.where(ok, -strength, np.finfo(float).max), np.full((N, 1), np.inf), axis=1)
        pad = np.full((len(pats), K), N)  # column N: the padding
        for p, o in enumerate(obs):
            pad[p, : o.size] = o
        ok = np.append(ok, np.zeros((N, 1), dtype=bool), axis=1)
        n = self.n_predictors
        step = max(1, RANK_BATCH // (N * K))  # patterns ranked at once
        for a in range(0, len(pats), step):
            at = pad[a : a + step]
            order = np.argsort(key[:, at].transpose(1, 0, 2), axis=2, kind="stable")[:, :, :n]  # (P, N, <= n)
            n_ok = np.minimum(ok[:, at].sum(axis=2).T, n)  # defined correlations among the top n
            # the (pattern, target) pairs to fit, pattern by pattern: a missing target with a defined
            # correlation, in a pattern that observes something and misses something
            chunk = np.array(pats[a : a + step])
            used = np.array([0 < o.size < N for o in obs[a : a + step]])
            pi, js = np.nonzero(~chunk & (n_ok > 0) & used[:, None])
            top = at[pi[:, None], order[pi, js]].tolist()  # the ranked observed columns of each pair
            keys += [(j, tuple(t[:c])) for j, t, c in zip(js.tolist(), top, n_ok[pi, js].tolist())]
            item_group += (len(groups) + np.cumsum(used)[pi] - 1).tolist()  # the pattern's place in groups
            groups += [np.array(rows_of[pat.tobytes()]) for pat, u in zip(pats[a : a + step], used) if u]
        return groups, item_group, keys

    def _predict(self, train: np.ndarray, query: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        """Predict every entry of ``query``; ``cov`` (optional) ranks the predictors."""
        tr, qu = train, query
        svd = self._svd.fit(tr).predict(qu)
        if self.blend == 0.0:
            return svd
        state = self._train_state(tr)
        corr = self._correlations(tr, cov, state)
        pred = svd.copy()
        groups, item_group, keys = self._plan(~np.isnan(qu), corr)
        if not keys:
            return pass_through(pred, qu)
        store: _FitStore = state["fits"]
        todo = store.missing(keys)
        if todo:
            store.add(todo, *self._ridge_fits(tr, state["tm"], todo))
        # one entry per (query row, missing target): its row, target and fit's code (-1: no fit left)
        code = np.fromiter(map(store.code.__getitem__, keys), dtype=np.int64, count=len(keys))
        item = np.repeat(np.arange(len(keys)), np.array([g.size for g in groups])[item_group])
        R = np.concatenate([groups[g] for g in item_group])
        J, code = np.array([j for j, _ in keys])[item], code[item]
        width = code >> 32
        for p in np.unique(width[width > 0]).tolist():
            cols, beta, a_mean, y_mean = store.arrays[p]
            at = np.flatnonzero(width == p)
            for b in range(0, at.size, ENTRY_BATCH):  # bounded work arrays
                e = at[b : b + ENTRY_BATCH]
                r, j, f = R[e], J[e], code[e] & 0xFFFFFFFF  # the fits' rows
                # stacked (1, p) @ (p, 1) products: the rounding of predicting each entry alone
                centred = np.ascontiguousarray(qu[r[:, None], cols[f]] - a_mean[f])  # (entries, p)
                ridge_pred = y_mean[f] + (centred[:, None, :] @ beta[f][:, :, None])[:, 0, 0]
                pred[r, j] = self.blend * ridge_pred + (1.0 - self.blend) * svd[r, j]
        return pass_through(pred, qu)
