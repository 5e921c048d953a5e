"""Summaries of cross-validation frames: means over folds, interval coverage, largest residuals, R^2 by block."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Records", "SharedMap", "ScoredEntries", "coverage_column", "summarize_cv", "calibration_table",
           "top_residuals", "block_r2"]


class Records(tuple):
    """Read-only sequence of records (dicts) kept in ``DataFrame.attrs``; ``a + b`` concatenates.

    pandas deep-copies ``attrs`` in nearly every operation on a frame; a deep
    copy of this sequence is the sequence itself (shared, not copied).
    """

    __slots__ = ()

    def __deepcopy__(self, memo: dict) -> Records:
        return self

    def __add__(self, other: Sequence[dict]) -> Records:  # type: ignore[override]
        return Records(tuple(self) + tuple(other))


class SharedMap(dict):
    """A read-only mapping kept in ``DataFrame.attrs`` (a frame's ``pipelines``) that deep copies share, as :class:`Records`."""

    def __deepcopy__(self, memo: dict) -> SharedMap:
        return self


@dataclass(frozen=True, eq=False)
class ScoredEntries:
    """The held-out entries that one (pipeline, split, k) row of a cross-validation scored.

    The ``entries`` column of :func:`~benchsel_lib.protocol.cv.cross_validate`
    with ``keep_entries=True``, to compare two methods on the entries both
    score (:func:`~benchsel_lib.studies.pipelines.shared_differences`).

    Attributes
    ----------
    index : ndarray of int64 (n,)
        The entries, increasing: ``model * n_benchmarks + benchmark`` in the
        matrix's row and column order.
    sq_residual, sq_truth : ndarray of float (n,)
        Squared residual and squared truth of each entry in the evaluation
        space (their sums are the row's ``ss_res`` and ``ss_tot``).
    unreached : ScoredEntries or None
        The observed held-out entries that the rule ``"skip"`` does not score
        (models that observe no revealed benchmark), with their residuals from
        the training mean; empty under ``"mean"``, None where not kept. With
        them the sums are the row's ``ss_res_all`` and ``ss_tot_all`` (:meth:`every`).
    """

    index: np.ndarray
    sq_residual: np.ndarray
    sq_truth: np.ndarray
    unreached: ScoredEntries | None = None

    def __repr__(self) -> str:
        return f"ScoredEntries({self.index.size} entries)"

    def every(self) -> ScoredEntries:
        """These entries and the :attr:`unreached` ones: every held-out model's, in increasing ``index``. O(n log n).

        Raises
        ------
        ValueError
            The unreached entries were not kept.
        """
        if self.unreached is None:
            raise ValueError("these scored entries do not keep the unreached models' entries")
        index, sq_residual, sq_truth = (np.concatenate([getattr(self, f), getattr(self.unreached, f)])
                                        for f in ("index", "sq_residual", "sq_truth"))
        order = np.argsort(index, kind="stable")
        return ScoredEntries(index=index[order], sq_residual=sq_residual[order], sq_truth=sq_truth[order])

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
    DataFrame with columns ``pipeline, holdout, fold, k, rank, model, benchmark,
    sq_residual, share`` (``share`` = fraction of the fold's ``SS_res``).

    Notes
    -----
    Complexity O(R + F) for ``R`` stored records and the ``F`` rows of ``df`` (one hash merge).
    """
    recs = df.attrs.get("top_residuals")
    if recs is None:
        raise ValueError("df has no 'top_residuals' attribute (was it produced by cross_validate?)")
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
        raise ValueError(f"n must be a positive integer (ranks 1..n), got {n!r}")
    out = pd.DataFrame(list(recs))
    keys = ["pipeline", "holdout", "fold", "k"]
    if len(out) and set(keys) <= set(df.columns) and set(keys) <= set(out.columns):
        # the records are the whole run's: keep those of the rows df still has (a filtered frame keeps its attrs)
        out = out.merge(df[keys].drop_duplicates(), on=keys, how="inner")
    if n is not None and len(out):
        out = out[out["rank"] <= n].reset_index(drop=True)
    return out


def summarize_cv(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation across folds per (pipeline, holdout, k).

    Parameters
    ----------
    df : DataFrame
        Output of :func:`cross_validate`.

    Returns
    -------
    DataFrame with one row per (pipeline, holdout, k) and ``<metric>_mean,
    <metric>_sd`` (``ddof=1``, as the paper's bands) for ``r2, rmse,
    residual_fraction, logdet, mi, n_eval, mean_sq_z, inflation, r2_all,
    reach`` and the coverage columns present, then ``n_folds`` and, with
    ``r2``, ``n_scored``: the folds whose R^2 is defined (a fold that scores
    no entry has R^2 NaN). Cost O(rows).
    """
    if not isinstance(df, pd.DataFrame) or not {"pipeline", "holdout", "fold", "k"} <= set(df.columns):
        raise ValueError("summarize_cv needs a cross_validate DataFrame (columns pipeline, holdout, fold, k)")
    # rows of several seeds (compare_pipelines) or of the extrapolation check's splits are summarized apart
    keys = [c for c in ("pipeline", "seed", "holdout", "split", "k") if c in df.columns]
    twice = df.duplicated([*keys, "fold"])
    if twice.any():
        row = df.loc[twice].iloc[0]
        raise ValueError("summarize_cv: the frame has more than one row at "
                         + ", ".join(f"{c}={row[c]!r}" for c in [*keys, "fold"])
                         + ": rows of several runs would be counted as folds; summarize each run")
    metrics = [c for c in ("r2", "rmse", "residual_fraction", "logdet", "mi", "n_eval", "mean_sq_z", "inflation",
                           "r2_all", "reach") if c in df.columns]
    metrics += [c for c in df.columns if c.startswith("cov_")]
    g = df.groupby(keys, sort=True, dropna=False)  # the extrapolation check's rows have no holdout
    out = g[metrics].agg(["mean", "std"])  # std: ddof=1
    out.columns = [f"{c}_{'sd' if stat == 'std' else stat}" for c, stat in out.columns]
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
    DataFrame in long form: ``pipeline, holdout, k, nominal, coverage,
    coverage_sd, gap`` (= coverage - nominal), and with a fitted variance
    inflation also ``coverage_cal, gap_cal``; coverage is the mean over folds.

    Notes
    -----
    Complexity O(F log F + G L) for the ``F`` rows of ``df``, ``G`` groups (pipeline, holdout, k) and ``L`` levels.
    """
    if not isinstance(df, pd.DataFrame) or not {"pipeline", "holdout", "k"} <= set(df.columns):
        raise ValueError("calibration_table needs a cross_validate DataFrame (columns pipeline, holdout, k)")
    cols = [c for c in df.columns if c.startswith("cov_") and not c.endswith("_cal")]
    if not cols:
        raise ValueError("df has no coverage columns: run cross_validate with levels=(0.5, 0.8, 0.9, 0.95)")
    if ks is not None:
        have = sorted({int(k) for k in df["k"]})
        if isinstance(ks, (str, bytes)) or not isinstance(ks, Sequence) or not ks or any(k not in have for k in ks):
            raise ValueError(f"ks must list subset sizes of the frame, k = {have}; got {ks!r}")
    d = df if ks is None else df[df["k"].isin(list(ks))]
    out = []
    for (m, h, k), g in d.groupby(["pipeline", "holdout", "k"], sort=True, dropna=False):
        for c in cols:
            nominal = float(c[4:].replace("_", ".")) / 100.0
            rec = dict(pipeline=m, holdout=h, k=k, nominal=nominal, coverage=g[c].mean(), coverage_sd=g[c].std(ddof=1))
            rec["gap"] = rec["coverage"] - nominal
            if c + "_cal" in g.columns:
                rec["coverage_cal"] = g[c + "_cal"].mean()
                rec["gap_cal"] = rec["coverage_cal"] - nominal
            out.append(rec)
    return pd.DataFrame(out)


def block_r2(df: pd.DataFrame, inside: Sequence[bool] | np.ndarray, *, every: bool = False) -> pd.DataFrame:
    """The R^2 of a cross-validation inside and outside a block of benchmarks, pooled over the folds.

    An entry is inside when its benchmark is. Inside and outside, squared
    residuals and truths are summed over the folds of each (pipeline,
    [seed], holdout, k), and ``R^2 = 1 - SS_res / SS_tot``; the two parts add
    up to the whole (``ss_res``, ``ss_tot``, ``n``). Pooled, a fold weighs by
    its ``SS_tot`` (unlike the means of :func:`summarize_cv`).

    Parameters
    ----------
    df : DataFrame
        Rows of :func:`~benchsel_lib.protocol.cv.cross_validate` run with
        ``keep_entries=True`` (column ``entries``), of one run per seed.
    inside : sequence of bool
        Per benchmark of the matrix, in its column order: whether it is in the block.
    every : bool
        False: the protocol's scored entries (its ``r2``); True: every
        held-out model's observed entries (its ``r2_all``).

    Returns
    -------
    DataFrame
        One row per (pipeline, [seed], holdout, k), sorted: ``n, n_inside,
        n_outside, r2, r2_inside, r2_outside`` (NaN where nothing is scored),
        their sums ``ss_res, ss_tot, ss_res_inside, ...`` and
        ``tot_share_inside`` (``ss_tot_inside / ss_tot``).

    Raises
    ------
    ValueError
        ``df`` keeps no ``entries``, the mask's length is not the matrix's
        number of benchmarks, or ``every`` without the unreached models' entries.

    Notes
    -----
    O(E) for the E entries kept, plus a group-by over the rows.
    """
    mask = np.asarray(inside)
    if mask.ndim != 1 or mask.dtype != bool or not mask.size:
        raise ValueError(f"inside must be a non-empty sequence of True/False per benchmark, got {inside!r}")
    if not isinstance(df, pd.DataFrame) or "entries" not in df.columns:
        raise ValueError("block_r2 needs the scored entries: run cross_validate with keep_entries=True")
    shape = df.attrs.get("shape")
    if shape is not None and int(shape[1]) != mask.size:
        raise ValueError(f"inside has {mask.size} values for a matrix of {int(shape[1])} benchmarks")
    sums = pd.DataFrame([_block_sums(e, mask, every=every) for e in df["entries"]], index=df.index)
    keys = [c for c in ("pipeline", "seed", "holdout", "split", "k") if c in df.columns]
    out = sums.groupby([df[c] for c in keys], sort=True, dropna=False).sum()
    for part in ("", "_inside", "_outside"):
        res, tot = out[f"ss_res{part}"], out[f"ss_tot{part}"]
        out[f"r2{part}"] = np.where(tot > 0, 1.0 - res / tot.where(tot > 0, 1.0), np.nan)
    out["tot_share_inside"] = np.where(out["ss_tot"] > 0, out["ss_tot_inside"] / out["ss_tot"].where(
        out["ss_tot"] > 0, 1.0), np.nan)
    cols = ["n", "n_inside", "n_outside", "r2", "r2_inside", "r2_outside", "ss_res", "ss_tot", "ss_res_inside",
            "ss_tot_inside", "ss_res_outside", "ss_tot_outside", "tot_share_inside"]
    return out[cols].reset_index()


def _block_sums(entries: ScoredEntries, mask: np.ndarray, *, every: bool) -> dict[str, float]:
    """The sums of one row's entries inside and outside the block ``mask`` (and in all). O(entries)."""
    if not isinstance(entries, ScoredEntries):
        raise ValueError("a row keeps no scored entries: run cross_validate with keep_entries=True")
    e = entries.every() if every else entries
    ins = mask[e.index % mask.size]
    out: dict[str, float] = {}
    for part, m in (("", slice(None)), ("_inside", ins), ("_outside", ~ins)):
        out[f"n{part}"] = int(e.index[m].size)
        out[f"ss_res{part}"] = float(e.sq_residual[m].sum())
        out[f"ss_tot{part}"] = float(e.sq_truth[m].sum())
    return out
