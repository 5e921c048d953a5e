"""Diagnostics: eigenspectrum, pivoted-Cholesky residual, normality tests, selection stability.

This module implements the paper's diagnostics:

* Section 4.3 "Spectral Diagnostic" and Lemma 1 (lem:greedy-spectral): the
  eigenvalue tail ``sum_{j>k} lambda_j`` is a lower bound on the residual trace
  ``tr(Sigma_{rest|A})`` of *any* k-subset ``A``; the pivoted-Cholesky residual
  ``tr(Sigma - L_k L_k^T)`` equals the residual variance left by the greedy
  entropy selection (Lemma 1(b)).  Section 5.2 / Figure 1 plot ``1 - rho(k)``.
* Appendix H (app:normality): per-benchmark Shapiro-Wilk tests with a
  Benjamini-Hochberg or Bonferroni correction (Figure 12) and Mardia's
  multivariate skewness and kurtosis.
* Appendix F (app:selection-order): selection position of each benchmark
  across CV folds (Figures 9-11).

Rule applied here: Shapiro-Wilk on a column with very few observed
models is meaningless, so columns with fewer than ``min_observed`` observations
are reported but not tested and excluded from the multiple-testing correction.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._checks import as_float_array, check_covariance, check_int
from ..data import ScoreMatrix
from ..method.covariance import cov_to_corr
from ..method.objectives import residual_traces
from ..method.selection import select

__all__ = [
    "Eigenspectrum",
    "eigenspectrum",
    "cholesky_residual_trace",
    "spectral_comparison",
    "adjust_pvalues",
    "shapiro_wilk_table",
    "MardiaResult",
    "mardia_test",
    "selection_positions",
    "selection_summary",
    "positions_from_cv",
]


DEFAULT_LEVELS: tuple[float, ...] = (0.90, 0.95, 0.99)


@dataclass(frozen=True)
class Eigenspectrum:
    """Eigenvalue decay of a covariance or correlation matrix (Section 5.2, Figure 1).

    Attributes
    ----------
    eigenvalues : np.ndarray
        ``lambda_1 >= ... >= lambda_N`` (descending).  Negative round-off
        eigenvalues of a numerically PSD input are clipped to zero; see
        ``n_clipped`` and ``min_raw_eigenvalue``.
    explained : np.ndarray
        ``lambda_j / sum_i lambda_i`` for j = 1..N.
    cumulative : np.ndarray
        ``rho(k) = sum_{j<=k} lambda_j / tr`` for k = 1..N (entry ``k-1``).
    residual : np.ndarray
        ``1 - rho(k) = sum_{j>k} lambda_j / tr`` for k = 1..N, computed as a
        tail sum (not as ``1 - rho``) so that it stays accurate on a log scale.
    total : float
        ``sum_j lambda_j`` (the trace, after clipping).
    n_clipped : int
        Number of negative eigenvalues that were clipped to zero.
    min_raw_eigenvalue : float
        The smallest eigenvalue before clipping.
    """

    eigenvalues: np.ndarray
    explained: np.ndarray
    cumulative: np.ndarray
    residual: np.ndarray
    total: float
    n_clipped: int = 0
    min_raw_eigenvalue: float = 0.0

    @property
    def n(self) -> int:
        """Dimension ``N``. O(1)."""
        return int(self.eigenvalues.size)

    @property
    def tail(self) -> np.ndarray:
        """Absolute eigenvalue tails ``sum_{j>k} lambda_j`` for k = 1..N (Lemma 1 lower bound). O(N)."""
        return self.residual * self.total

    def n_components(self, level: float) -> int:
        """Smallest ``k`` with ``rho(k) >= level``.

        Parameters
        ----------
        level : float
            Explained-variance level in ``(0, 1]``, e.g. 0.9.

        Returns
        -------
        int
            Number of leading components needed (1..N).  A relative tolerance
            of 1e-12 absorbs round-off (so ``level=1`` gives the numerical rank).

        Notes
        -----
        O(N).
        """
        level = float(level)
        if not 0.0 < level <= 1.0:
            raise ValueError(f"level={level} is out of range: it must be in (0, 1]")
        hit = np.flatnonzero(self.cumulative >= level - 1e-12)
        return int(hit[0] + 1) if hit.size else self.n

    @property
    def components(self) -> dict[float, int]:
        """``{0.90: k90, 0.95: k95, 0.99: k99}`` (the paper's dashed lines in Figure 1). O(N)."""
        return {lvl: self.n_components(lvl) for lvl in DEFAULT_LEVELS}

    def to_frame(self) -> pd.DataFrame:
        """One row per k = 1..N: eigenvalue, explained, cumulative (rho), residual (1 - rho). O(N)."""
        return pd.DataFrame(
            {
                "k": np.arange(1, self.n + 1),
                "eigenvalue": self.eigenvalues,
                "explained": self.explained,
                "cumulative": self.cumulative,
                "residual": self.residual,
            }
        )


def eigenspectrum(cov: Any, *, as_correlation: bool = False) -> Eigenspectrum:
    """Eigenvalue decay of ``cov`` and the explained-variance curve ``rho(k)`` (Figure 1).

    Parameters
    ----------
    cov : array_like, shape (N, N)
        Symmetric PSD covariance or correlation matrix.
    as_correlation : bool, default False
        Convert to ``R = D^{-1/2} Sigma D^{-1/2}`` first
        (:func:`~benchsel_lib.method.covariance.cov_to_corr`), as Section 5.2
        does before plotting (pass False when ``cov`` already is a correlation).

    Returns
    -------
    Eigenspectrum
        Eigenvalues (descending), explained fractions, ``rho(k)``, ``1 - rho(k)``
        and component counts via ``.n_components(level)`` / ``.components``.

    Notes
    -----
    ``rho(k) = sum_{j<=k} lambda_j / tr(R)`` (Section 5.2).  Eigenvalues below
    zero (round-off on a PSD estimate) are clipped to zero and counted in
    ``n_clipped``.  Complexity: one symmetric eigendecomposition, O(N^3).
    """
    arr = check_covariance(cov)
    if as_correlation:
        arr = cov_to_corr(arr)
    raw = np.linalg.eigvalsh(arr)[::-1]
    min_raw = float(raw[-1])
    lam = np.clip(raw, 0.0, None)
    total = float(lam.sum())
    if total <= 0.0:
        raise ValueError("cov has zero trace after clipping negative eigenvalues (no variance)")
    explained = lam / total
    cumulative = np.minimum(np.cumsum(lam) / total, 1.0)
    tail = np.concatenate([np.cumsum(lam[::-1])[::-1][1:], [0.0]])
    residual = tail / total
    return Eigenspectrum(
        eigenvalues=lam,
        explained=explained,
        cumulative=cumulative,
        residual=residual,
        total=total,
        n_clipped=int((raw < 0).sum()),
        min_raw_eigenvalue=min_raw,
    )


def cholesky_residual_trace(
    cov: Any, k: int | None = None, *, order: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Residual trace ``tr(Sigma - L_j L_j^T)`` after each pivot j = 1..k (Lemma 1(b)).

    Parameters
    ----------
    cov : array_like, shape (N, N)
        Symmetric PSD covariance.
    k : int, optional
        Number of pivots (default: ``N``, or ``len(order)`` when ``order`` is given).
    order : sequence of int, optional
        Pivot sequence to use (e.g. an MI selection's ``order``).  Default:
        the greedy entropy selection (Algorithm 1, :func:`~benchsel_lib.method.selection.select`
        with ``tie_break="argmax"``): the largest residual variance at each
        step, exact ties to the lowest index.

    Returns
    -------
    traces : np.ndarray, shape (k,)
        ``traces[j-1] = tr(Sigma_{rest|A_j})``, the total residual variance left
        after conditioning on the first ``j`` pivots (Schur complement trace;
        :func:`~benchsel_lib.method.objectives.residual_traces`).
    pivots : np.ndarray of int, shape (k,)
        The pivots used.

    Notes
    -----
    Partial pivoted Cholesky: each step updates the residual diagonal with a
    rank-one downdate, O(N j) for step j, O(k^2 N) in total along a given
    ``order``.  Without one, the greedy order is a call of ``select``, which
    also computes its own diagnostics (one O(N^3) factorization for the
    mutual information); the traces are then read along that order.  A
    numerically zero pivot (residual variance at most ``1e-12`` of the
    largest variance) updates nothing: past the numerical rank the trace is
    rounding noise about 0.
    """
    arr = check_covariance(cov)
    n = arr.shape[0]
    if order is not None:
        pivots_in = [int(i) for i in order]
        if len(set(pivots_in)) != len(pivots_in) or any(not 0 <= i < n for i in pivots_in):
            raise ValueError(f"order must list distinct indices in 0..{n - 1}")
        if k is None:
            k = len(pivots_in)
        if k > len(pivots_in):
            raise ValueError(f"k={k} exceeds the length of order ({len(pivots_in)})")
    if k is None:
        k = n
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= n:
        raise ValueError(f"k={k!r} is out of range: it must be an integer between 1 and {n}")
    k = int(k)
    if order is None:
        pivots_in = select(arr, k, objective="entropy", tie_break="argmax").order
    pivots = np.asarray(pivots_in[:k], dtype=int)
    return residual_traces(arr, pivots), pivots


def spectral_comparison(
    cov: Any,
    *,
    k_max: int | None = None,
    as_correlation: bool = False,
    names: Sequence[str] | None = None,
    order: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Pivoted-Cholesky residual trace beside the eigenvalue tail (Lemma 1, notebook 3).

    Parameters
    ----------
    cov : array_like, shape (N, N)
        Covariance or correlation matrix.
    k_max : int, optional
        Largest subset size (default ``N``).
    as_correlation : bool, default False
        Convert to a correlation matrix first (Section 5.2;
        :func:`~benchsel_lib.method.covariance.cov_to_corr`).
    names : sequence of str, optional
        Benchmark names for the ``pivot_name`` column.
    order : sequence of int, optional
        Pivot order to evaluate instead of greedy entropy (e.g. MI's order).

    Returns
    -------
    pandas.DataFrame
        Columns ``k, pivot, pivot_name, eigen_tail, cholesky_residual,
        eigen_tail_fraction, cholesky_residual_fraction, ratio`` where
        ``ratio = cholesky_residual / eigen_tail`` (>= 1 by Lemma 1; NaN when
        the tail is numerically zero).

    Notes
    -----
    Complexity O(N^3 + k_max^2 N).
    """
    arr = check_covariance(cov)
    if as_correlation:
        arr = cov_to_corr(arr)
    n = arr.shape[0]
    if names is not None and len(names) != n:
        raise ValueError(f"names has {len(names)} entries but cov is {n} x {n}")
    spec = eigenspectrum(arr)
    traces, pivots = cholesky_residual_trace(arr, k_max, order=order)
    k = traces.size
    tail = spec.tail[:k]
    total = float(np.trace(arr))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(tail > 1e-12 * total, traces / tail, np.nan)
    return pd.DataFrame(
        {
            "k": np.arange(1, k + 1),
            "pivot": pivots,
            "pivot_name": [names[p] for p in pivots] if names is not None else [None] * k,
            "eigen_tail": tail,
            "cholesky_residual": traces,
            "eigen_tail_fraction": tail / total,
            "cholesky_residual_fraction": traces / total,
            "ratio": ratio,
        }
    )


def adjust_pvalues(pvalues: Any, *, method: str = "bh") -> np.ndarray:
    """Multiple-testing adjusted p-values (Appendix H).

    Parameters
    ----------
    pvalues : array_like, shape (m,)
        Raw p-values in [0, 1] (no NaN).
    method : {"bh", "bonferroni"}
        ``"bh"``: Benjamini-Hochberg step-up, ``q_(i) = min_{j>=i} m p_(j) / j``
        capped at 1 (rejecting ``q <= alpha`` is the BH procedure at FDR
        ``alpha``); ``"bonferroni"``: ``min(1, m p)``.

    Returns
    -------
    np.ndarray, shape (m,)
        Adjusted p-values in the input order.

    Notes
    -----
    Complexity O(m log m).
    """
    p = np.asarray(pvalues, dtype=float).ravel()
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError("pvalues must lie in [0, 1] with no NaN")
    m = p.size
    if m == 0:
        return p.copy()
    if method == "bonferroni":
        return np.minimum(1.0, p * m)
    if method != "bh":
        raise ValueError(f"unknown correction {method!r}: use 'bh' or 'bonferroni'")
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    q_sorted = np.minimum.accumulate(ranked[::-1])[::-1]
    q = np.empty(m)
    q[order] = np.minimum(q_sorted, 1.0)
    return q


def _columns_and_names(X: Any, names: Sequence[str] | None) -> tuple[np.ndarray, list[str]]:

    if isinstance(X, ScoreMatrix):
        arr = np.asarray(X.scores, dtype=float)
        default = list(X.benchmarks)
    elif isinstance(X, pd.DataFrame):
        try:
            arr = X.to_numpy(dtype=float, na_value=np.nan)
        except (TypeError, ValueError):
            raise ValueError("X must hold numeric scores") from None
        default = [str(c) for c in X.columns]
    else:
        arr = as_float_array(X, "X must be a numeric (models x benchmarks) array", copy=True)
        if arr.ndim != 2:
            raise ValueError(f"X must be 2-D (models x benchmarks), got shape {arr.shape}")
        default = [f"b{j}" for j in range(arr.shape[1])]
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise ValueError(f"X must be a non-empty 2-D matrix, got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValueError("X contains infinite values")
    if names is None:
        names = default
    names = [str(s) for s in names]
    if len(names) != arr.shape[1]:
        raise ValueError(f"names has {len(names)} entries but X has {arr.shape[1]} columns")
    if len(set(names)) != len(names):
        raise ValueError("names contains duplicate benchmark names")
    return arr, names


def shapiro_wilk_table(
    X: Any,
    *,
    names: Sequence[str] | None = None,
    correction: str = "bh",
    alpha: float = 0.05,
    min_observed: int = 8,
) -> pd.DataFrame:
    """Per-benchmark Shapiro-Wilk normality tests with a multiple-testing correction.

    Implements Appendix H, Eq. (shapiro-wilk) and Figure 12: each column's
    observed entries are tested with :func:`scipy.stats.shapiro`; p-values of
    the tested columns are adjusted with Benjamini-Hochberg (the paper's choice)
    or Bonferroni, and a column is rejected when its adjusted p-value is
    ``<= alpha``.

    Parameters
    ----------
    X : ScoreMatrix, DataFrame or array_like, shape (M, N)
        Scores (or residuals) with NaN for missing entries.
    names : sequence of str, optional
        Benchmark names (default: from ``X``, or ``b0, b1, ...``).
    correction : {"bh", "bonferroni"}
        Multiple-testing correction over the *tested* columns.
    alpha : float, default 0.05
        Level for ``reject``.
    min_observed : int, default 8
        A column with fewer observed models is *not tested* (W, p and
        reject are left missing, ``tested`` is False, ``reason`` says why) and
        does not enter the correction.  Constant columns are also not tested.
        Values below 3 are raised to 3 (Shapiro-Wilk's minimum).

    Returns
    -------
    pandas.DataFrame
        Indexed by benchmark with columns ``n, W, p, p_adjusted, reject
        (nullable boolean), tested, reason``.  ``df.attrs`` holds
        ``correction, alpha, min_observed, n_tested, n_excluded, n_rejected``.

    Notes
    -----
    SciPy warns that p-values for n > 5000 may be inaccurate; the warning is
    suppressed here and the column's ``reason`` notes it.  Complexity: O(M log M)
    per column.
    """
    if correction not in ("bh", "bonferroni"):
        raise ValueError(f"unknown correction {correction!r}: use 'bh' or 'bonferroni'")
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha={alpha} is out of range: it must be in (0, 1)")
    if isinstance(min_observed, bool) or not isinstance(min_observed, (int, np.integer)):
        raise ValueError(f"min_observed must be an integer, got {min_observed!r}")
    threshold = max(int(min_observed), 3)
    arr, names = _columns_and_names(X, names)
    n_cols = arr.shape[1]
    n_obs = np.zeros(n_cols, dtype=int)
    W = np.full(n_cols, np.nan)
    p = np.full(n_cols, np.nan)
    tested = np.zeros(n_cols, dtype=bool)
    reason = [""] * n_cols
    for j in range(n_cols):
        x = arr[:, j]
        x = x[~np.isnan(x)]
        n_obs[j] = x.size
        if x.size < threshold:
            reason[j] = f"fewer than {threshold} observations (n={x.size})"
            continue
        if np.ptp(x) <= 1e-12 * max(1.0, float(np.abs(x).max())):
            reason[j] = "constant column"
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            res = stats.shapiro(x)
        W[j], p[j] = float(res.statistic), float(res.pvalue)
        tested[j] = True
        if x.size > 5000:
            reason[j] = "n > 5000: SciPy's p-value is approximate"
    p_adj = np.full(n_cols, np.nan)
    if tested.any():
        p_adj[tested] = adjust_pvalues(p[tested], method=correction)
    reject = pd.array([bool(q <= alpha) if t else pd.NA for q, t in zip(p_adj, tested)], dtype="boolean")
    df = pd.DataFrame(
        {"n": n_obs, "W": W, "p": p, "p_adjusted": p_adj, "reject": reject, "tested": tested, "reason": reason},
        index=pd.Index(names, name="benchmark"),
    )
    df.attrs.update(
        correction=correction,
        alpha=alpha,
        min_observed=threshold,
        n_tested=int(tested.sum()),
        n_excluded=int((~tested).sum()),
        n_rejected=int(np.nansum(np.where(tested, p_adj <= alpha, False))),
    )
    return df


@dataclass(frozen=True)
class MardiaResult:
    """Mardia's multivariate normality test (Appendix H).

    Attributes
    ----------
    n_rows : int
        ``M``: complete rows used.  n_dropped : rows dropped for missing values.
    dim : int
        ``N``: number of variables.  rank : effective dimension used (``rank <
        dim`` when the sample covariance is singular; see ``pseudo_inverse``).
    b1, b2 : float
        Skewness ``beta_1 = M^-2 sum_ij d_ij^3`` and kurtosis ``beta_2 = M^-1 sum_i d_ii^2``.
    skew_statistic, skew_df, skew_p : float
        ``M b1 / 6 ~ chi^2`` with ``df = p(p+1)(p+2)/6`` (p = rank), upper-tail p-value.
    kurt_statistic, kurt_p : float
        ``z = (b2 - p(p+2)) / sqrt(8 p(p+2) / M) ~ N(0,1)``, two-sided p-value.
    kurt_expected : float
        Null expectation ``p(p+2)``.
    pseudo_inverse : bool
        True when the sample covariance was singular and its Moore-Penrose
        pseudo-inverse (eigenvalues above tolerance) was used.
    """

    n_rows: int
    dim: int
    rank: int
    b1: float
    b2: float
    skew_statistic: float
    skew_df: float
    skew_p: float
    kurt_statistic: float
    kurt_expected: float
    kurt_p: float
    pseudo_inverse: bool
    n_dropped: int = 0
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)

    @property
    def skew_reject(self) -> bool:
        """Skewness test rejects normality at ``alpha``. O(1)."""
        return bool(self.skew_p <= self.alpha)

    @property
    def kurt_reject(self) -> bool:
        """Kurtosis test rejects normality at ``alpha``. O(1)."""
        return bool(self.kurt_p <= self.alpha)

    def to_frame(self) -> pd.DataFrame:
        """Two-row table (skewness, kurtosis) for display. O(1)."""
        return pd.DataFrame(
            {
                "value": [self.b1, self.b2],
                "statistic": [self.skew_statistic, self.kurt_statistic],
                "null": [f"chi2(df={self.skew_df:g})", f"N(0,1), E[b2]={self.kurt_expected:g}"],
                "p": [self.skew_p, self.kurt_p],
                "reject": [self.skew_reject, self.kurt_reject],
            },
            index=pd.Index(["skewness b1", "kurtosis b2"], name="Mardia"),
        )


def mardia_test(X: Any, *, alpha: float = 0.05, min_rows: int | None = None) -> MardiaResult:
    """Mardia's multivariate skewness and kurtosis tests (Appendix H).

    Parameters
    ----------
    X : ScoreMatrix, DataFrame or array_like, shape (M, N)
        Data with NaN for missing entries.  **Rule for missing data:** only
        complete rows (every column observed) are used; the number dropped is
        reported.  For a sparse matrix pass a subset of densely observed columns
        (or an EM-completed matrix, knowing imputed values look more Gaussian).
    alpha : float, default 0.05
        Level for ``skew_reject`` / ``kurt_reject``.
    min_rows : int, optional
        Minimum number of complete rows (default ``N + 1``, the least for a
        full-rank sample covariance).  Fewer raises ``ValueError``.

    Returns
    -------
    MardiaResult

    Notes
    -----
    ``Sigma`` is the maximum-likelihood covariance (divisor ``M``), as in
    Mardia (1970).  ``d_ij = (x_i - xbar)^T Sigma^{-1} (x_j - xbar)``.  When
    ``Sigma`` is singular (eigenvalues <= ``max(M, N) * eps * lambda_max``) the
    pseudo-inverse is used, the statistics live in the ``rank``-dimensional
    span of the data, and ``rank`` replaces ``N`` in the degrees of freedom and
    in the kurtosis null moments; ``pseudo_inverse`` is set and a note added.
    Complexity O(M N^2 + N^3 + M^2 r).
    """
    arr, _ = _columns_and_names(X, None)
    alpha = float(alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha={alpha} is out of range: it must be in (0, 1)")
    complete = ~np.isnan(arr).any(axis=1)
    Z = arr[complete]
    m, n = Z.shape
    need = n + 1 if min_rows is None else int(min_rows)
    need = max(need, 3)
    if m < need:
        raise ValueError(
            f"mardia_test needs at least {need} complete rows (no missing value) for {n} columns, "
            f"got {m} of {arr.shape[0]}; pass fewer, densely observed columns"
        )
    Zc = Z - Z.mean(axis=0)
    sigma = Zc.T @ Zc / m
    lam, vec = np.linalg.eigh(sigma)
    tol = max(m, n) * np.finfo(float).eps * max(float(lam.max()), 0.0)
    keep = lam > tol
    rank = int(keep.sum())
    if rank == 0:
        raise ValueError("mardia_test: every column is constant among the complete rows")
    notes: list[str] = []
    pinv = rank < n
    if pinv:
        notes.append(
            f"sample covariance is singular (rank {rank} < {n}); used the pseudo-inverse and rank {rank} "
            "as the dimension"
        )
    W = (Zc @ vec[:, keep]) / np.sqrt(lam[keep])
    D = W @ W.T
    b1 = float((D**3).sum() / m**2)
    b2 = float((np.diag(D) ** 2).sum() / m)
    p = rank
    skew_stat = m * b1 / 6.0
    skew_df = p * (p + 1) * (p + 2) / 6.0
    skew_p = float(stats.chi2.sf(skew_stat, skew_df))
    expected = p * (p + 2.0)
    z = (b2 - expected) / np.sqrt(8.0 * p * (p + 2.0) / m)
    kurt_p = float(2.0 * stats.norm.sf(abs(z)))
    return MardiaResult(
        n_rows=m,
        dim=n,
        rank=rank,
        b1=b1,
        b2=b2,
        skew_statistic=float(skew_stat),
        skew_df=float(skew_df),
        skew_p=skew_p,
        kurt_statistic=float(z),
        kurt_expected=float(expected),
        kurt_p=kurt_p,
        pseudo_inverse=pinv,
        n_dropped=int((~complete).sum()),
        alpha=alpha,
        notes=notes,
    )


def selection_positions(
    selected_lists: Sequence[Sequence[int | str]] | Mapping[Any, Sequence[int | str]],
    *,
    names: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Long table of selection positions across folds (Figures 9-11).

    Parameters
    ----------
    selected_lists : sequence of sequences, or mapping fold -> sequence
        Per fold, the ordered selection (benchmark names or integer indices).
        A sequence is numbered as folds 0, 1, ...
    names : sequence of str, optional
        All benchmark names; needed to translate integer indices, and used to
        validate names.  Stored in ``df.attrs["names"]`` so that
        :func:`selection_summary` can list never-selected benchmarks.

    Returns
    -------
    pandas.DataFrame
        Columns ``benchmark, fold, position`` (1-based position in that fold's
        order); ``df.attrs`` holds ``n_folds`` and ``names``.

    Notes
    -----
    Complexity O(total length of the lists).
    """
    if isinstance(selected_lists, Mapping):
        items = list(selected_lists.items())
    else:
        if isinstance(selected_lists, (str, bytes)):
            raise ValueError("selected_lists must be a sequence of per-fold selections")
        items = list(enumerate(selected_lists))
    lookup = {s: i for i, s in enumerate(names)} if names is not None else None
    rows: list[tuple[str, Any, int]] = []
    for fold, order in items:
        if isinstance(order, (str, bytes)):
            raise ValueError(f"fold {fold!r}: a selection must be a sequence of benchmarks, not a string")
        seen: set[str] = set()
        for pos, item in enumerate(order, start=1):
            if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                if names is None:
                    raise ValueError("selections hold integer indices; pass names to translate them")
                if not 0 <= int(item) < len(names):
                    raise ValueError(f"fold {fold!r}: index {item} is out of range 0..{len(names) - 1}")
                name = str(names[int(item)])
            elif isinstance(item, str):
                if lookup is not None and item not in lookup:
                    raise ValueError(f"fold {fold!r}: {item!r} is not a benchmark name")
                name = item
            else:
                raise ValueError(f"fold {fold!r}: selection entries must be names or indices, got {item!r}")
            if name in seen:
                raise ValueError(f"fold {fold!r} selects {name!r} twice")
            seen.add(name)
            rows.append((name, fold, pos))
    df = pd.DataFrame(rows, columns=["benchmark", "fold", "position"])
    df["position"] = df["position"].astype(int)
    df.attrs["n_folds"] = len(items)
    df.attrs["names"] = list(names) if names is not None else None
    return df


def selection_summary(positions: pd.DataFrame, *, top: int = 15, n_folds: int | None = None) -> pd.DataFrame:
    """Per-benchmark stability summary for Figures 9-11.

    Parameters
    ----------
    positions : pandas.DataFrame
        Output of :func:`selection_positions`.
    top : int, default 15
        Count folds in which a benchmark is among the first ``top`` picks.
    n_folds : int, optional
        Number of folds (default ``positions.attrs["n_folds"]`` or the number
        of distinct folds).

    Returns
    -------
    pandas.DataFrame
        Indexed by benchmark, sorted by mean position: ``mean_position,
        sd_position, min_position, max_position, n_folds_selected,
        folds_in_top`` (the right margin of Figures 9-11).  Benchmarks in
        ``attrs["names"]`` that were never selected are appended with NaN
        positions and zero counts.

    Raises
    ------
    ValueError
        ``positions`` lacks a column, ``top`` is not a positive integer, or
        ``n_folds`` is fewer than the folds the positions come from.

    Notes
    -----
    Complexity O(P + B log B) for ``P`` position rows and ``B`` benchmarks
    (one group-by, then the sort by mean position).
    """
    for col in ("benchmark", "fold", "position"):
        if col not in positions.columns:
            raise ValueError(f"positions lacks the column {col!r} (use selection_positions)")
    check_int(top, "top")
    seen = int(positions["fold"].nunique())
    if n_folds is None:
        n_folds = positions.attrs.get("n_folds") or seen
    elif check_int(n_folds, "n_folds") < seen:
        raise ValueError(f"n_folds={n_folds} is smaller than the {seen} folds the positions come from")
    g = positions.groupby("benchmark", sort=False)["position"]
    out = pd.DataFrame(
        {
            "mean_position": g.mean(),
            "sd_position": g.std(ddof=0),
            "min_position": g.min(),
            "max_position": g.max(),
            "n_folds_selected": g.size(),
            "folds_in_top": g.apply(lambda s: int((s <= top).sum())),
        }
    )
    names = positions.attrs.get("names")
    if names:
        missing = [s for s in names if s not in out.index]
        if missing:
            extra = pd.DataFrame(
                {
                    "mean_position": np.nan,
                    "sd_position": np.nan,
                    "min_position": np.nan,
                    "max_position": np.nan,
                    "n_folds_selected": 0,
                    "folds_in_top": 0,
                },
                index=pd.Index(missing),
            )
            out = pd.concat([out, extra])
    out.index.name = "benchmark"
    out = out.sort_values(["mean_position", "folds_in_top"], ascending=[True, False], kind="stable")
    out["n_folds_selected"] = out["n_folds_selected"].astype(int)
    out["folds_in_top"] = out["folds_in_top"].astype(int)
    out.attrs.update(top=int(top), n_folds=int(n_folds))
    return out


def positions_from_cv(cv: pd.DataFrame, *, pipeline: str, holdout: float = 0.1) -> pd.DataFrame:
    """Selection positions from a :func:`benchsel_lib.cross_validate` table.

    Takes, for each fold, the ``selected`` tuple of the row with the largest
    ``k`` for the given ``pipeline`` and ``holdout`` (the full greedy order) and
    passes the per-fold orders to :func:`selection_positions`.

    Parameters
    ----------
    cv : pandas.DataFrame
        CV output with columns ``pipeline, holdout, fold, k, selected``.
    pipeline : str
        The pipeline's label, e.g. ``"entropy"`` or ``"mi"``.
    holdout : float, default 0.1
        Holdout fraction (the paper uses 10% for Figures 9-11).

    Raises
    ------
    ValueError
        A missing column, a holdout that is not a number, no row of
        ``pipeline`` at ``holdout``, rows of several seeds or runs (one fold
        would take one run's selection), or selections stored as text.

    Returns
    -------
    pandas.DataFrame
        As :func:`selection_positions`: columns ``benchmark, fold, position``
        and ``attrs`` with ``n_folds`` and ``names`` (None here, so
        :func:`selection_summary` lists only benchmarks selected in some fold).

    Notes
    -----
    Complexity O(R log R + S) for the ``R`` rows of ``cv`` (filter, duplicate
    check, sorted group-by on ``fold``) and ``S`` selected benchmarks over
    the folds.
    """
    for col in ("pipeline", "holdout", "fold", "k", "selected"):
        if col not in cv.columns:
            raise ValueError(f"cv table lacks the column {col!r}")
    if isinstance(holdout, bool) or not isinstance(holdout, (int, float, np.floating)):
        raise ValueError(f"holdout must be a fraction in (0, 1), got {holdout!r}")
    sub = cv[(cv["pipeline"] == pipeline) & np.isclose(cv["holdout"].astype(float), float(holdout))]
    if sub.empty:
        raise ValueError(f"cv table has no rows for pipeline={pipeline!r}, holdout={holdout}")
    if "seed" in sub.columns and sub["seed"].nunique() > 1:
        raise ValueError(f"cv table holds {sub['seed'].nunique()} seeds of {pipeline!r}: pass one run's rows "
                         "(cv[cv['seed'] == s]), each fold's selection is that run's")
    if sub.duplicated(["fold", "k"]).any():
        raise ValueError(f"cv table has more than one row of {pipeline!r} per fold and k: rows of several runs; "
                         "pass one run's rows")
    orders: dict[Any, list[str]] = {}
    for fold, grp in sub.groupby("fold", sort=True):
        row = grp.loc[grp["k"].idxmax()]
        if isinstance(row["selected"], str):
            raise ValueError(f"the selected column holds text ({row['selected'][:40]!r}), not the tuples of names "
                             "cross_validate gives (a CSV round trip?)")
        orders[fold] = list(row["selected"])
    return selection_positions(orders)
