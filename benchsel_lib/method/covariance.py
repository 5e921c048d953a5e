"""Covariance helpers: the pairwise-complete estimate (Eq. pairwise-cov), per-pair Pearson correlations, and the
correlation of a covariance."""
from __future__ import annotations

import numpy as np

from .._checks import check_data_matrix

__all__ = [
    "observed_mean",
    "pairwise_covariance",
    "pairwise_pearson",
    "cov_to_corr",
    "floor_eigenvalues",
    "symmetrize_in_place",
]

#: rows and columns of the blocks that the in-place helpers work on (one block x block temporary at a time)
_BLOCK = 1024


def symmetrize_in_place(C: np.ndarray, *, block: int = _BLOCK) -> np.ndarray:
    """``C`` replaced by ``(C + C^T) / 2``, blockwise, and returned: the values of that expression, no N x N copy.

    Parameters
    ----------
    C : ndarray (N, N), float
        Overwritten.
    block : int
        Side of the blocks (memory: two ``block x block`` temporaries).

    Returns
    -------
    ndarray (N, N)
        ``C`` itself, exactly symmetric. O(N^2).
    """
    n = C.shape[0]
    for i in range(0, n, block):
        for j in range(i, n, block):
            avg = (C[i:i + block, j:j + block] + C[j:j + block, i:i + block].T) / 2.0
            C[i:i + block, j:j + block] = avg
            C[j:j + block, i:i + block] = avg.T
    return C


def observed_mean(X: np.ndarray, *, empty: float = np.nan) -> np.ndarray:
    """Each column's mean over the rows that observe it, Eq. (mean-missing) of Appendix G.

    ``mu_j = sum_i O_ij B_ij / sum_i O_ij`` (``O`` the observed mask);
    ``empty`` for a column no row observes.  O(M N).
    """
    obs = ~np.isnan(X)
    n = obs.sum(axis=0)
    return np.divide(np.where(obs, X, 0.0).sum(axis=0), n, out=np.full(X.shape[1], float(empty)), where=n > 0)


def pairwise_covariance(X: np.ndarray, *, mean: np.ndarray | None = None) -> np.ndarray:
    """Pairwise-complete covariance, Eq. (pairwise-cov) of Appendix G.

    ``Sigma_pw = Bbar^T Bbar / max(O^T O - 1, 1)`` (elementwise) with
    ``Bbar_ij = O_ij (B_ij - mu_j)``; symmetric and finite, not necessarily PSD.

    Parameters
    ----------
    X : array_like of shape (M, N)
        Scores, NaN for missing.
    mean : array_like of shape (N,), optional
        Column means to center with (default: observed-entry means).

    Returns
    -------
    np.ndarray of shape (N, N)

    Notes
    -----
    Two matrix products, O(M N^2); memory two N x N arrays.
    """
    A = check_data_matrix(X, min_rows=1)
    obs = ~np.isnan(A)
    O = obs.astype(float)
    if mean is None:
        mu = observed_mean(A)
    else:
        mu = np.asarray(mean, dtype=float)
        if mu.shape != (A.shape[1],) or not np.isfinite(mu).all():
            raise ValueError(f"mean must be a finite vector of length {A.shape[1]}")
    Bbar = np.where(obs, A - mu, 0.0)
    cov = Bbar.T @ Bbar
    del Bbar
    den = O.T @ O
    del O
    den -= 1.0
    np.maximum(den, 1.0, out=den)
    cov /= den
    del den
    return symmetrize_in_place(cov)


def pairwise_pearson(X: np.ndarray, *, min_overlap: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Pearson correlation of every pair of columns over the rows observing both, and those rows' counts.

    Each pair is centred and scaled on its own co-observed rows; NaN where
    fewer than ``max(min_overlap, 3)`` rows observe both or either column is
    constant over them. Clipped to [-1, 1].

    Parameters
    ----------
    X : ndarray (M, N)
        Scores, NaN for missing.
    min_overlap : int, keyword-only
        Fewest co-observed rows for a defined pair (at least 3 are used).

    Returns
    -------
    corr : ndarray (N, N)
        The correlations, NaN where undefined (the diagonal of a column with
        enough rows is 1 up to rounding).
    counts : ndarray (N, N)
        Rows observing both columns (float).

    Notes
    -----
    Four matrix products of the masked data, O(M N^2).
    """
    mask = ~np.isnan(X)
    Xf = np.where(mask, X, 0.0)
    M = mask.astype(float)
    cnt = M.T @ M
    sx = Xf.T @ M  # sx[i, j]: sum of column i over the rows observing i and j
    sxx = (Xf**2).T @ M
    sxy = Xf.T @ Xf
    with np.errstate(divide="ignore", invalid="ignore"):
        mx = sx / cnt  # the mean of column j over those rows is mx.T[i, j]
        cov = sxy / cnt - mx * mx.T
        vx = sxx / cnt - mx**2
        corr = cov / np.sqrt(vx * vx.T)
        flat = (vx <= 1e-12 * sxx / cnt) | (vx.T <= 1e-12 * sxx.T / cnt)
    corr[(cnt < max(int(min_overlap), 3)) | flat | ~np.isfinite(corr)] = np.nan
    return np.clip(corr, -1.0, 1.0), cnt


def cov_to_corr(cov: np.ndarray) -> np.ndarray:
    """Correlation matrix ``R = D^{-1/2} Sigma D^{-1/2}``, ``D = diag(Sigma)``.

    A benchmark with non-positive or non-finite variance gets row/column 0;
    entries are clipped to [-1, 1], the diagonal set to 1. O(N^2).

    Parameters
    ----------
    cov : array_like (N, N)
        A covariance (e.g. Eq. pairwise-cov or the EM estimate of Appendix
        G); it is symmetrized as ``(cov + cov^T) / 2`` first. Non-finite
        entries are allowed.

    Returns
    -------
    ndarray (N, N)
        The correlation matrix, a new array; non-finite ratios become 0.

    Raises
    ------
    ValueError
        ``cov`` is not a square 2-D array.

    Notes
    -----
    Memory: the result and ``block x block`` temporaries.
    """
    R = np.array(cov, dtype=float)  # the copy that is returned, worked on in place
    if R.ndim != 2 or R.shape[0] != R.shape[1]:
        raise ValueError(f"cov must be a square (N, N) matrix, got shape {R.shape}")
    symmetrize_in_place(R)
    d = np.diag(R).copy()
    good = np.isfinite(d) & (d > 0)
    inv_sd = np.where(good, 1.0 / np.sqrt(np.where(good, d, 1.0)), 0.0)
    for i in range(0, R.shape[0], _BLOCK):
        rows = R[i:i + _BLOCK]
        rows *= np.outer(inv_sd[i:i + _BLOCK], inv_sd)  # the values of C * outer(inv_sd, inv_sd)
        rows[~np.isfinite(rows)] = 0.0
    np.clip(R, -1.0, 1.0, out=R)
    np.fill_diagonal(R, 1.0)
    return R


def floor_eigenvalues(C: np.ndarray, floor: float) -> np.ndarray:
    """A correlation with its eigenvalues raised to ``floor`` (``V max(w, floor) V^T``), rescaled to a unit diagonal.

    Positive definite whatever ``C`` was (a pairwise estimate can be
    indefinite). O(N^3): one eigendecomposition.
    """
    w, V = np.linalg.eigh((C + C.T) / 2.0)
    C = (V * np.maximum(w, floor)) @ V.T
    d = np.sqrt(np.diag(C))
    return C / d[:, None] / d[None, :]
