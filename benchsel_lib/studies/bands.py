"""Bands around greedy entropy's curve: every tie-break rule, every forced first pick (Sections 4 and 5).

On a correlation matrix every first entropy gain is the same, so the first
pick -- and the sequence that follows -- is decided by how the tie is broken.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._checks import check_matrix, resolve_indices
from .._random import check_seed, rng
from ..data import ScoreMatrix
from ..method.pipeline import Pipeline, clone
from ..protocol.cv import cv_grid
from ..protocol.summaries import summarize_cv

__all__ = [
    "tie_break_band",
    "first_pick_band",
    "variant_range",
]


def _single_selector(pipeline: Pipeline | None) -> Pipeline:
    """The band's base pipeline (default: the paper's entropy pipeline); it must have one selector."""
    base = Pipeline.paper(objective="entropy") if pipeline is None else pipeline
    if not isinstance(base, Pipeline):
        raise ValueError(f"pipeline must be a Pipeline, got {type(base).__name__}")
    sel = base.component("selector")
    if len(sel) != 1:
        raise ValueError("a band varies one selector: give a pipeline with a single selector")
    return clone(base).set_params(selector=sel[0])


def tie_break_band(
    matrix: ScoreMatrix,
    *,
    tie_breaks: Sequence[str] = ("auto", "argmax", "index", "mi"),
    pipeline: Pipeline | None = None,
    n_jobs: int | None = None,
    **cv_kwargs: Any,
) -> pd.DataFrame:
    """Greedy CV under several tie-break rules: the band drawn around entropy's R^2.

    On a correlation matrix every first entropy gain equals ``0.5 log(2 pi e)``,
    so the first pick (and with it the sequence) is decided by the tie rule.
    This runs :func:`~benchsel_lib.protocol.cv.cross_validate` once per rule
    in ``tie_breaks``, all in one sweep
    (:func:`~benchsel_lib.protocol.cv.cv_grid`: the rules of one split share a
    cell and its training correlation), and returns the per-rule summary.

    Parameters
    ----------
    matrix : ScoreMatrix
    tie_breaks : sequence of {"auto", "argmax", "index", "mi"}
    pipeline : Pipeline, optional
        The pipeline whose selector's tie rule varies (default
        ``Pipeline.paper(objective="entropy")``; the EM configuration and
        other options are its own).
    n_jobs : int or None
        Workers over the splits, as in :func:`~benchsel_lib.protocol.cv.cross_validate`.
    **cv_kwargs
        Protocol options of :func:`~benchsel_lib.protocol.cv.cross_validate`
        (``holdouts, k_max, n_folds, seed, ...``).

    Returns
    -------
    DataFrame
        :func:`summarize_cv` rows with an extra ``variant`` column (the rule),
        usable as ``variants=`` of :func:`benchsel_lib.book.plotting.plot_cv_curves`.
        Cost: one CV run per rule, with EM paid once per split.
    """
    if not tie_breaks:
        raise ValueError("tie_breaks is empty")
    for bad in ("pipelines", "return_details"):
        if bad in cv_kwargs:
            raise ValueError(f"tie_break_band sets {bad!r} itself; do not pass it")
    base = _single_selector(pipeline)
    progress = cv_kwargs.pop("progress", None)
    frames = cv_grid([dict(matrix=matrix, pipelines=[clone(base).set_params(selector__tie_break=rule)], **cv_kwargs)
                      for rule in tie_breaks], n_jobs=n_jobs, progress=progress)
    parts = []
    for rule, df in zip(tie_breaks, frames):
        s = summarize_cv(df)
        s.insert(0, "variant", rule)
        parts.append(s)
    return pd.concat(parts, ignore_index=True)


_FIRST_PICK_STREAM = 5  # spawn key of the seeded sample of first picks (keys 0-4 belong to the CV protocol)


def first_pick_band(
    matrix: ScoreMatrix,
    *,
    picks: Sequence[int | str] | None = None,
    n_picks: int | None = None,
    seed: int = 0,
    pipeline: Pipeline | None = None,
    return_folds: bool = False,
    n_jobs: int | None = None,
    **cv_kwargs: Any,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Greedy CV with each candidate benchmark forced as the first pick.

    On a correlation matrix every first entropy gain equals ``0.5 log(2 pi e)``
    (Algorithm 1, Section 4), so the first pick is a tie and the greedy
    sequence that follows depends on how it is broken. Rather than a handful
    of tie-break rules (:func:`tie_break_band`), this runs the Section 5.1
    protocol once per candidate first benchmark ``b``, with ``b`` mandatory
    (the pipeline's ``Selector(initial=(b,))``, paper Section 6) and greedy
    continuing from it. All runs form one sweep
    (:func:`~benchsel_lib.protocol.cv.cv_grid`): the candidates of one split
    share a cell, so the training correlation is estimated once per split.

    Parameters
    ----------
    matrix : ScoreMatrix
    picks : sequence of str or int, optional
        Candidate first benchmarks (names or column indices). Default: every
        benchmark of ``matrix``.
    n_picks : int, optional
        Use a seeded sample of this many candidates (without replacement,
        kept in matrix order), drawn from ``picks`` (or all benchmarks) with
        the stream ``SeedSequence(seed, spawn_key=(5,))``. Default: all.
    seed : int
        Seed of the sample and of the CV protocol (passed to
        :func:`~benchsel_lib.protocol.cv.cross_validate`, so the folds match a
        default run with the same seed).
    pipeline : Pipeline, optional
        The pipeline whose selector is forced to start with each candidate
        (default ``Pipeline.paper(objective="entropy")``; greedy continues
        after the forced pick).
    return_folds : bool
        Also return the per-fold rows (the concatenated cross-validation
        frames with a ``variant`` column), e.g. for the per-fold R^2 range with
        :func:`variant_range`.
    n_jobs : int or None
        Workers over the splits, as in :func:`~benchsel_lib.protocol.cv.cross_validate`.
    **cv_kwargs
        Protocol options of :func:`~benchsel_lib.protocol.cv.cross_validate`
        (``holdouts, k_max, n_folds, ...``); ``progress`` shows one bar over
        the splits. The EM configuration, tie rule and candidate filter are
        the ``pipeline``'s.

    Returns
    -------
    DataFrame or (DataFrame, DataFrame)
        :func:`summarize_cv` rows with two extra columns: ``variant`` (the
        forced benchmark's name) and ``n_forced_folds`` (folds in which it was
        applied; a forced benchmark without training scores in a split is
        skipped there). Usable as ``variants=`` of
        :func:`benchsel_lib.book.plotting.plot_cv_curves` and by
        :func:`benchsel_lib.book.plotting.add_variant_band`. With
        ``return_folds=True`` also the per-fold frame.

    Raises
    ------
    ValueError
        ``matrix`` is not a ScoreMatrix; ``picks`` is empty, names an unknown
        benchmark, an index out of range or a benchmark twice; ``n_picks`` is
        not an integer in ``1..len(picks)``; ``cv_kwargs`` sets ``pipelines``;
        the pipeline has several selectors; or the protocol rejects an option.

    Notes
    -----
    Cost: one CV run per candidate, with the correlation estimate (EM) paid
    once per split: ``P`` candidates on ``N`` benchmarks add ``P`` selections
    (O(k N^2) for entropy) and ``P k_max`` conditional predictions per split.
    """
    check_matrix(matrix)
    for bad in ("pipelines", "return_details"):
        if bad in cv_kwargs:
            raise ValueError(f"first_pick_band sets {bad!r} itself; do not pass it")
    seed = check_seed(seed)

    names = list(matrix.benchmarks)
    if picks is None:
        pool = list(range(len(names)))
    else:
        if isinstance(picks, (str, int, np.integer)):
            picks = [picks]
        pool = resolve_indices(list(picks), len(names), names, role="first-pick")
        if not pool:
            raise ValueError("picks is empty: give at least one benchmark name or index (or None for all)")
    if n_picks is not None:
        if isinstance(n_picks, bool) or not isinstance(n_picks, (int, np.integer)) or not 1 <= n_picks <= len(pool):
            raise ValueError(f"n_picks must be an integer between 1 and {len(pool)} (the candidates), got {n_picks!r}")
        chosen = rng(seed, _FIRST_PICK_STREAM).choice(len(pool), size=int(n_picks), replace=False)
        pool = [pool[i] for i in sorted(chosen.tolist())]
    show = cv_kwargs.pop("progress", None)
    summaries, folds = [], []
    base = _single_selector(pipeline)
    frames = cv_grid([dict(matrix=matrix, pipelines=[clone(base).set_params(selector__initial=(names[j],))], seed=seed,
                           **cv_kwargs) for j in pool], n_jobs=n_jobs, progress=show)
    for j, df in zip(pool, frames):
        s = summarize_cv(df)
        if len(df):
            applied = df.groupby(["pipeline", "holdout", "k"])["n_forced"].sum().rename("n_forced_folds")
            s = s.merge(applied.reset_index(), on=["pipeline", "holdout", "k"], how="left")
        else:
            s["n_forced_folds"] = pd.Series(dtype=int)
        s.insert(0, "variant", names[j])
        summaries.append(s)
        if return_folds:
            folds.append(df.assign(variant=names[j])[["variant"] + list(df.columns)])
    out = pd.concat(summaries, ignore_index=True)
    out.attrs = dict(summaries[0].attrs, initial=None, picks=tuple(names[j] for j in pool))
    if not return_folds:
        return out
    fold_df = pd.concat(folds, ignore_index=True)
    fold_df.attrs = dict(out.attrs)
    return out, fold_df


def _range_metric(band: pd.DataFrame, metric: str | None) -> str:
    """The column :func:`variant_range` ranges over (default ``r2_mean``, else ``r2``), checked numeric.

    Raises
    ------
    ValueError
        ``band`` is not a DataFrame, lacks ``variant``, ``k`` or the metric,
        or the metric is not numeric (booleans are not).
    """
    if not isinstance(band, pd.DataFrame):
        raise ValueError(f"band must be a DataFrame, got {type(band).__name__}")
    if metric is None:
        metric = "r2_mean" if "r2_mean" in band.columns else "r2"
    missing = [c for c in ("variant", "k", metric) if c not in band.columns]
    if missing:
        raise ValueError(f"band lacks column(s) {missing} (pass first_pick_band or tie_break_band output)")
    if not pd.api.types.is_numeric_dtype(band[metric]) or pd.api.types.is_bool_dtype(band[metric]):
        raise ValueError(f"metric {metric!r} is not a numeric column of the band")
    return metric


def _rows_at(band: pd.DataFrame, k: int) -> pd.DataFrame:
    """The band's rows at subset size ``k``; a ``k`` that is not an integer, or has no rows, is an error."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"k must be an integer, got {k!r}")
    at = band[band["k"] == int(k)]
    if at.empty:
        ks = sorted(band["k"].unique().tolist())
        raise ValueError(f"band has no rows at k={k}; it has k in {ks[0]}..{ks[-1]}" if ks else "band is empty")
    return at


def _extremes(g: pd.DataFrame, vals: pd.Series) -> tuple[pd.Series | None, pd.Series | None]:
    """The rows of ``g`` with the lowest and the highest non-NaN ``vals`` (the first of ties); None when all are NaN."""
    ok = vals.notna()
    if not ok.any():
        return None, None
    return g.loc[vals[ok].idxmin()], g.loc[vals[ok].idxmax()]


def _spread(g: pd.DataFrame, metric: str) -> dict[str, Any]:
    """Range of ``metric`` over one group of rows, the variants (and folds) at its ends, and the number of variants.

    Parameters
    ----------
    g : DataFrame
        The rows of one (pipeline, holdout) at one ``k``.
    metric : str

    Returns
    -------
    dict
        ``min, max, spread, lo_variant, hi_variant``, ``lo_fold, hi_fold``
        when ``g`` has a ``fold`` column, and ``n_variants``. NaN values are
        ignored; with none left the ends are None.
    """
    vals = g[metric].astype(float)
    rec: dict[str, Any] = dict(min=float(vals.min()), max=float(vals.max()))
    rec["spread"] = rec["max"] - rec["min"]
    lo, hi = _extremes(g, vals)
    rec["lo_variant"] = None if lo is None else lo["variant"]
    rec["hi_variant"] = None if hi is None else hi["variant"]
    if "fold" in g.columns:
        rec["lo_fold"] = None if lo is None else int(lo["fold"])
        rec["hi_fold"] = None if hi is None else int(hi["fold"])
    rec["n_variants"] = int(g["variant"].nunique())
    return rec


def variant_range(band: pd.DataFrame, *, k: int, metric: str | None = None) -> pd.DataFrame:
    """Spread of a metric across the variants of a band at one subset size ``k``.

    Parameters
    ----------
    band : DataFrame
        Rows with ``variant`` and ``k``: the summary of :func:`first_pick_band`
        or :func:`tie_break_band` (range of the per-variant mean R^2), or the
        per-fold frame of ``first_pick_band(..., return_folds=True)`` (range of
        the per-fold R^2 over every variant and fold).
    k : int
        Subset size.
    metric : str, optional
        Column to range over; default ``"r2_mean"`` when present, else ``"r2"``.

    Returns
    -------
    DataFrame
        One row per (pipeline, holdout) (those present): ``k, metric, min, max,
        spread`` (= max - min), ``lo_variant``, ``hi_variant`` (the variants
        at the extremes; ``lo_fold``/``hi_fold`` too for per-fold input),
        ``n_variants``. NaN values are ignored. Cost O(rows).

    Raises
    ------
    ValueError
        Missing columns, unknown ``metric`` or no rows at ``k``.
    """
    metric = _range_metric(band, metric)
    at = _rows_at(band, k)
    keys = [c for c in ("pipeline", "holdout") if c in at.columns]
    groups = at.groupby(keys, sort=True) if keys else [((), at)]
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        rec: dict[str, Any] = dict(zip(keys, key))
        rec.update(k=int(k), metric=metric)
        rec.update(_spread(g, metric))
        rows.append(rec)
    return pd.DataFrame(rows)
