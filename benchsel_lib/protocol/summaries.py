"""Summaries of cross-validation frames: means over folds, interval coverage, the largest residuals."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "Records",
    "ScoredEntries",
    "coverage_column",
    "summarize_cv",
    "calibration_table",
    "top_residuals",
]


class Records(tuple):
    """Read-only sequence of records (dicts) kept in ``DataFrame.attrs``.

    pandas deep-copies ``attrs`` in nearly every operation on a frame
    (indexing, sorting, groupby, merge, concat); a deep copy of thousands of
    small dicts made pandas calls on CV frames take milliseconds each, and
    :func:`first_pick_band` spent most of its time there. Deep-copying this
    sequence returns the sequence itself, so the records are shared, not
    copied: treat them as read-only. ``a + b`` concatenates.
    """

    __slots__ = ()

    def __deepcopy__(self, memo: dict) -> Records:
        return self

    def __add__(self, other: Sequence[dict]) -> Records:  # type: ignore[override]
        return Records(tuple(self) + tuple(other))


@dataclass(frozen=True, eq=False)
class ScoredEntries:
    """The held-out entries that one (pipeline, split, k) row of a cross-validation scored.

    Kept in the ``entries`` column of :func:`~benchsel_lib.protocol.cv.cross_validate`
    with ``keep_entries=True``, so that two methods can be compared on the
    entries both score (on a sparse matrix each scores the entries its own
    selection leaves and reaches; see
    :func:`~benchsel_lib.studies.pipelines.shared_differences`).

    Attributes
    ----------
    index : ndarray of int64 (n,)
        The entries, increasing: ``model * n_benchmarks + benchmark`` in the
        matrix's row and column order.
    sq_residual, sq_truth : ndarray of float (n,)
        Squared residual and squared truth of each entry in the evaluation
        space (their sums are the row's ``ss_res`` and ``ss_tot``).
    """

    index: np.ndarray
    sq_residual: np.ndarray
    sq_truth: np.ndarray

    def __repr__(self) -> str:
        return f"ScoredEntries({self.index.size} entries)"

    def shared(self, other: ScoredEntries) -> tuple[float, float, float, int]:
        """``(ss_res, other_ss_res, ss_tot, n)`` over the ``n`` entries both score. O(n log n).

        Raises
        ------
        ValueError
            The two disagree on the truth of an entry they share: they were not
            scored on the same split.
        """
        _, a, b = np.intersect1d(self.index, other.index, assume_unique=True, return_indices=True)
        if not np.allclose(self.sq_truth[a], other.sq_truth[b], rtol=1e-12, atol=1e-12):
            raise ValueError("the two rows give different truths for the same entries: they come from different splits")
        return (float(self.sq_residual[a].sum()), float(other.sq_residual[b].sum()), float(self.sq_truth[a].sum()),
                int(a.size))


def coverage_column(level: float) -> str:
    """The result column of the interval coverage at ``level``: ``cov_90`` for 0.9, ``cov_97_5`` for 0.975. O(1)."""
    pct = 100.0 * level
    return f"cov_{int(round(pct))}" if abs(pct - round(pct)) < 1e-9 else f"cov_{pct:g}".replace(".", "_")


def top_residuals(df: pd.DataFrame, *, n: int | None = None) -> pd.DataFrame:
    """The per-fold largest squared-residual contributors of a :func:`cross_validate` result.

    Parameters
    ----------
    df : DataFrame
        A result of :func:`cross_validate` (reads ``df.attrs["top_residuals"]``).
    n : int, optional
        Keep only ranks ``1..n``.

    Returns
    -------
    DataFrame with columns ``method, holdout, fold, k, rank, model, benchmark,
    sq_residual, share`` (``share`` = fraction of the fold's ``SS_res``).

    Notes
    -----
    Complexity O(R + F) for ``R`` stored records (at most three per row of
    the run) and the ``F`` rows of ``df`` (one hash merge on ``method,
    holdout, fold, k``).
    """
    recs = df.attrs.get("top_residuals")
    if recs is None:
        raise ValueError("df has no 'top_residuals' attribute (was it produced by cross_validate?)")
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
        raise ValueError(f"n must be a positive integer (ranks 1..n), got {n!r}")
    out = pd.DataFrame(list(recs))
    keys = ["method", "holdout", "fold", "k"]
    if len(out) and set(keys) <= set(df.columns) and set(keys) <= set(out.columns):
        # the records are the whole run's: keep those of the rows df still has (a filtered frame keeps its attrs)
        out = out.merge(df[keys].drop_duplicates(), on=keys, how="inner")
    if n is not None and len(out):
        out = out[out["rank"] <= n].reset_index(drop=True)
    return out


def summarize_cv(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation across folds per (method, holdout, k).

    Parameters
    ----------
    df : DataFrame
        Output of :func:`cross_validate`.

    Returns
    -------
    DataFrame with one row per (method, holdout, k) and columns
    ``r2_mean, r2_sd, rmse_mean, rmse_sd, residual_fraction_mean, ...``
    for every numeric metric present, plus ``n_folds`` (sd uses ``ddof=1``,
    as the paper's bands) and, with ``r2``, ``n_scored``: the folds whose R^2
    is defined, which the means are taken over (a fold that scores no entry,
    as on a sparse matrix, has R^2 NaN). Cost O(rows).
    """
    if not isinstance(df, pd.DataFrame) or not {"method", "holdout", "fold", "k"} <= set(df.columns):
        raise ValueError("summarize_cv needs a cross_validate DataFrame (columns method, holdout, fold, k)")
    # rows of several seeds (compare_pipelines) or of the extrapolation check's splits are summarized apart
    keys = ["method", *(c for c in ("seed",) if c in df.columns), "holdout",
            *(c for c in ("split",) if c in df.columns), "k"]
    twice = df.duplicated([*keys, "fold"])
    if twice.any():
        row = df.loc[twice].iloc[0]
        raise ValueError("summarize_cv: the frame has more than one row at "
                         + ", ".join(f"{c}={row[c]!r}" for c in [*keys, "fold"])
                         + ": rows of several runs would be counted as folds; summarize each run")
    metrics = [c for c in ("r2", "rmse", "residual_fraction", "logdet", "mi", "n_eval", "mean_sq_z", "inflation")
               if c in df.columns]
    metrics += [c for c in df.columns if c.startswith("cov_")]
    g = df.groupby(keys, sort=True, dropna=False)  # the extrapolation check's rows have no holdout
    parts = {}
    for c in metrics:
        parts[f"{c}_mean"] = g[c].mean()
        parts[f"{c}_sd"] = g[c].std(ddof=1)
    out = pd.DataFrame(parts)
    out["n_folds"] = g.size()
    if "r2" in metrics:
        out["n_scored"] = g["r2"].count()
    out = out.reset_index()
    out.attrs = {k: v for k, v in df.attrs.items() if k != "top_residuals"}
    return out


def calibration_table(df: pd.DataFrame, *, ks: Sequence[int] | None = None) -> pd.DataFrame:
    """Empirical vs nominal interval coverage from a :func:`cross_validate` result with ``levels``.

    Parameters
    ----------
    df : DataFrame
        Output of ``cross_validate(..., levels=(...))``.
    ks : sequence of int, optional
        Keep only these subset sizes (e.g. ``(5, 10)``).

    Returns
    -------
    DataFrame in long form: ``method, holdout, k, nominal, coverage,
    coverage_sd, gap`` (= coverage - nominal), and when the result was run
    with ``variance_inflation`` also ``coverage_cal, gap_cal``. Coverage is
    the mean over folds of the per-fold fraction of evaluated entries inside
    the interval.

    Notes
    -----
    Complexity O(F log F + G L) for the ``F`` rows of ``df`` (one sorted
    group-by), ``G`` groups (method, holdout, k) and ``L`` levels.
    """
    if not isinstance(df, pd.DataFrame) or not {"method", "holdout", "k"} <= set(df.columns):
        raise ValueError("calibration_table needs a cross_validate DataFrame (columns method, holdout, k)")
    cols = [c for c in df.columns if c.startswith("cov_") and not c.endswith("_cal")]
    if not cols:
        raise ValueError("df has no coverage columns: run cross_validate with levels=(0.5, 0.8, 0.9, 0.95)")
    if ks is not None:
        have = sorted({int(k) for k in df["k"]})
        if isinstance(ks, (str, bytes)) or not isinstance(ks, Sequence) or not ks or any(k not in have for k in ks):
            raise ValueError(f"ks must list subset sizes of the frame, k = {have}; got {ks!r}")
    d = df if ks is None else df[df["k"].isin(list(ks))]
    out = []
    for (m, h, k), g in d.groupby(["method", "holdout", "k"], sort=True, dropna=False):
        for c in cols:
            nominal = float(c[4:].replace("_", ".")) / 100.0
            rec = dict(method=m, holdout=h, k=k, nominal=nominal, coverage=g[c].mean(), coverage_sd=g[c].std(ddof=1))
            rec["gap"] = rec["coverage"] - nominal
            if c + "_cal" in g.columns:
                rec["coverage_cal"] = g[c + "_cal"].mean()
                rec["gap_cal"] = rec["coverage_cal"] - nominal
            out.append(rec)
    return pd.DataFrame(out)
