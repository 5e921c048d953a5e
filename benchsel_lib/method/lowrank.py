"""A correlation held as a diagonal plus a low-rank part, for wide matrices (few models, very many benchmarks).

With ``m << N`` training models, the floored correlation of the pipelines is
``R = D + W W^T`` (``W`` of shape ``(N, r)``, ``r < m``).  Dense it is
``N^2`` floats (800 MB at ``N = 10,000``) and ``O(N^3)`` to factorize;
:class:`LowRankCorrelation` keeps the factors (``O(N r)``) and answers what
the method asks: columns for the entropy greedy (``O(N r)`` each), the
complement's precision diagonal for MI (Woodbury, ``O(|C| r^2)``),
complement log-determinants for the MI diagnostic (determinant lemma) and
blocks for the conditional mean.  ``np.asarray`` gives the dense matrix.
:func:`wide_route` says when an estimate takes this form (far above the
paper's matrices, which keep the dense path).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy import linalg

from .._memo import array_key
from .covariance import observed_mean

__all__ = ["LowRankCorrelation", "LOW_RANK_BENCHMARKS", "wide_route", "as_correlation_matrix", "floored_factor",
           "low_rank_floored_correlation"]

#: with fewer models than benchmarks, a correlation estimate on more than this many benchmarks is held as
#: :class:`LowRankCorrelation` (:func:`wide_route`): one dense N x N float64 array is 128 MB here and grows as N^2
LOW_RANK_BENCHMARKS = 4000


def wide_route(n_models: int, n_benchmarks: int) -> bool:
    """Whether an ``n_models x n_benchmarks`` matrix's correlation is held in low-rank form. O(1).

    True with fewer models than benchmarks and more than
    :data:`LOW_RANK_BENCHMARKS` benchmarks (read at call time, so tests may
    lower it).
    """
    return int(n_models) < int(n_benchmarks) and int(n_benchmarks) > LOW_RANK_BENCHMARKS


def as_correlation_matrix(cov: Any) -> Any:
    """``cov`` unchanged when it is a :class:`LowRankCorrelation`, else ``np.asarray(cov, dtype=float)``. O(1)."""
    return cov if isinstance(cov, LowRankCorrelation) else np.asarray(cov, dtype=float)


def _as_index(index: Any, n: int) -> tuple[np.ndarray, bool]:
    """One axis of an index as a 1-D integer array and whether it was a scalar. O(len)."""
    if isinstance(index, slice):
        return np.arange(n)[index], False
    arr = np.asarray(index)
    if arr.dtype == bool:
        return np.flatnonzero(arr.ravel()), False
    return arr.ravel().astype(np.intp) % n, arr.ndim == 0  # a scalar as one index


class LowRankCorrelation:
    """A symmetric positive definite matrix ``R = diag(d) + W W^T`` held by its factors.

    Parameters
    ----------
    d : ndarray (N,)
        Positive diagonal part.
    W : ndarray (N, r)
        Low-rank factor.

    Notes
    -----
    Memory O(N r).  Indexing returns dense blocks: ``R[:, j]`` (a column,
    O(N r)), ``R[i, j]`` (a float), ``R[np.ix_(rows, cols)]`` (O(|rows| |cols| r)).
    ``np.asarray(R)`` forms the dense matrix (O(N^2 r)).  The object and its
    arrays are read-only, so :meth:`copy` returns itself.
    """

    ndim = 2
    dtype = np.dtype(float)

    def __init__(self, d: np.ndarray, W: np.ndarray) -> None:
        d = np.array(d, dtype=float).reshape(-1)
        W = np.array(W, dtype=float).reshape(d.size, -1)
        if not (np.isfinite(d).all() and np.isfinite(W).all()):
            raise ValueError("a low-rank correlation needs finite factors")
        if (d <= 0).any():
            raise ValueError("a low-rank correlation needs a positive diagonal part")
        d.setflags(write=False)
        W.setflags(write=False)
        self.d, self.W = d, W
        diag = d + np.einsum("ij,ij->i", W, W)
        diag.setflags(write=False)
        self._diag = diag

    @property
    def shape(self) -> tuple[int, int]:
        """``(N, N)``. O(1)."""
        return (self.d.size, self.d.size)

    @property
    def rank(self) -> int:
        """Columns of ``W``. O(1)."""
        return int(self.W.shape[1])

    @property
    def T(self) -> LowRankCorrelation:
        """The transpose: the matrix itself (symmetric). O(1)."""
        return self

    def __len__(self) -> int:
        return self.d.size

    def __repr__(self) -> str:
        return f"LowRankCorrelation(N={self.d.size}, rank={self.rank})"

    def copy(self) -> LowRankCorrelation:
        """The object itself (read-only). O(1)."""
        return self

    def diagonal(self) -> np.ndarray:
        """``diag(R) = d + rowsum(W * W)`` (read-only, computed once). O(1)."""
        return self._diag

    def trace(self) -> float:
        """Sum of the diagonal. O(N)."""
        return float(self._diag.sum())

    def key(self) -> tuple:
        """A hashable key of the exact factors (for memos). O(N r)."""
        return ("low-rank",) + array_key(self.d) + array_key(self.W)

    def block(self, rows: Any, cols: Any) -> np.ndarray:
        """The dense block ``R[rows][:, cols]``. O(|rows| |cols| r)."""
        n = self.d.size
        r, _ = _as_index(rows, n)
        c, _ = _as_index(cols, n)
        out = self.W[r] @ self.W[c].T
        i, j = np.nonzero(np.equal.outer(r, c))  # the diagonal entries of the block
        out[i, j] += self.d[r[i]]
        return out

    def column(self, j: int) -> np.ndarray:
        """Column ``j`` of ``R``. O(N r)."""
        out = self.W @ self.W[int(j)]
        out[int(j)] += self.d[int(j)]
        return out

    def __getitem__(self, index: Any) -> Any:
        if not isinstance(index, tuple) or len(index) != 2:
            raise IndexError("index a LowRankCorrelation by two axes: R[rows, cols]")
        n = self.d.size
        r, r_scalar = _as_index(index[0], n)
        c, c_scalar = _as_index(index[1], n)
        if c_scalar and isinstance(index[0], slice) and index[0] == slice(None):
            return self.column(int(c[0]))
        out = self.block(r, c)[0 if r_scalar else slice(None), 0 if c_scalar else slice(None)]  # a scalar axis dropped
        return float(out) if r_scalar and c_scalar else out

    def to_dense(self) -> np.ndarray:
        """The dense ``N x N`` matrix. O(N^2 r) time, O(N^2) memory."""
        out = self.W @ self.W.T
        out[np.diag_indices(self.d.size)] += self.d
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.to_dense()
        return out if dtype is None else out.astype(dtype, copy=False)

    # ------------------------------------------------------------------ what the selection asks
    def complement_precision_diag(self, comp: np.ndarray) -> np.ndarray:
        """Diagonal of ``(R_{CC})^{-1}`` for the indices ``comp`` (Woodbury). O(|C| r^2 + r^3).

        ``(D + W W^T)^{-1} = D^{-1} - D^{-1} W K^{-1} W^T D^{-1}`` with
        ``K = I + W^T D^{-1} W`` (``r x r``, positive definite), so the
        diagonal is ``1/d_v - ||L^{-1} W_v^T / d_v||^2`` for ``K = L L^T``.
        """
        comp = np.asarray(comp, dtype=np.intp)
        d = self.d[comp]
        V = self.W[comp] / d[:, None]
        K = np.eye(self.rank) + self.W[comp].T @ V
        L = linalg.cholesky(K, lower=True)
        X = linalg.solve_triangular(L, V.T, lower=True)
        return 1.0 / d - np.einsum("ij,ij->j", X, X)

    def logdets_removing(self, order: Any) -> np.ndarray:
        """``log det R`` with the first ``t`` benchmarks of ``order`` removed, for ``t = 0..len(order)``.

        By the matrix determinant lemma, ``log det(D_C + W_C W_C^T) = sum log d_C
        + log det(I + W_C^T D_C^{-1} W_C)``; removing benchmark ``j`` takes
        ``w_j w_j^T / d_j`` from the ``r x r`` matrix.  O(N r^2 + k r^3).
        """
        order = [int(j) for j in order]
        M = np.eye(self.rank) + self.W.T @ (self.W / self.d[:, None])
        logd = float(np.log(self.d).sum())
        out = np.empty(len(order) + 1)
        for t in range(len(order) + 1):
            if t:
                j = order[t - 1]
                M -= np.outer(self.W[j], self.W[j]) / self.d[j]
                logd -= float(np.log(self.d[j]))
            out[t] = logd + float(np.linalg.slogdet(M)[1]) if self.rank else logd
        return out

    def centrality(self, tied: np.ndarray, selected: np.ndarray, floor: float) -> np.ndarray:
        """Per tied benchmark ``i``, ``sum_{j unselected, j != i} R_ij^2 / (dg_i dg_j)``, ``dg = max(diag, floor)``.

        Off the diagonal ``R_ij = w_i . w_j``, so the sum is
        ``w_i^T G w_i / dg_i`` with ``G = sum_{j unselected} w_j w_j^T / dg_j``,
        less the ``j = i`` term.  O(N r^2).
        """
        tied = np.asarray(tied, dtype=np.intp)
        dg = np.maximum(self._diag, floor)
        U = np.flatnonzero(~np.asarray(selected, dtype=bool))
        G = self.W[U].T @ (self.W[U] / dg[U, None])
        Wt = self.W[tied]
        quad = np.einsum("ij,jk,ik->i", Wt, G, Wt)
        own = np.einsum("ij,ij->i", Wt, Wt) ** 2 / dg[tied]
        return (quad - np.where(selected[tied], 0.0, own)) / dg[tied]


def floored_factor(Yc: np.ndarray, floor: float, *, few: Any = False) -> tuple[np.ndarray, np.ndarray]:
    """``V`` with ``Y^T Y`` floored at ``floor`` equal to ``floor I + V V^T``, and which columns are constant.

    ``Y`` is the centred ``Yc`` (m, N) with unit column norms; a column of zero
    or non-finite norm, or marked in ``few``, is constant (zero in ``Y``).  From
    the ``m x m`` Gram matrix ``Y Y^T = U diag(lam) U^T``, ``V = Y^T U
    diag(sqrt(max(lam - floor, 0) / lam))``.  O(m^2 N + m^3).
    """
    norm = np.sqrt((Yc * Yc).sum(axis=0))
    const = ~(norm > 0) | ~np.isfinite(norm) | few
    Y = np.where(const, 0.0, Yc / np.where(const, 1.0, norm))
    lam, U = np.linalg.eigh(Y @ Y.T)
    big = lam > floor
    return (Y.T @ U[:, big]) * np.sqrt((lam[big] - floor) / lam[big]), const


def low_rank_floored_correlation(train: np.ndarray, *, floor: float) -> LowRankCorrelation:
    """The floored correlation of a wide matrix as :class:`LowRankCorrelation` (no N x N array).

    The columns of ``train`` (m, N; NaN missing) are centred on their observed
    mean, missing entries set to 0 and scaled to unit norm (``Y``; columns
    observed at most once or constant: 0).  ``C = Y^T Y`` (1 on the diagonal of
    the zero columns) is the pairwise correlation when nothing is missing, and
    positive semi-definite (correlations shrunk toward 0) otherwise.  From the
    ``m x m`` Gram matrix ``Y Y^T = U diag(lam) U^T``, raising every eigenvalue
    to ``floor`` gives ``floor I + V V^T`` with ``V = Y^T U diag(sqrt(max(lam -
    floor, 0) / lam))``, rescaled to a unit diagonal.  Rank at most ``m``; O(m^2
    N + m^3) time, O(m N) memory.
    """
    tr = np.asarray(train, dtype=float)
    obs = ~np.isnan(tr)
    V, const = floored_factor(np.where(obs, tr - observed_mean(tr, empty=0.0), 0.0), floor, few=obs.sum(axis=0) < 2)
    base = floor + (1.0 - floor) * const
    s2 = 1.0 / (base + np.einsum("ij,ij->i", V, V))
    return LowRankCorrelation(s2 * base, V * np.sqrt(s2)[:, None])
