"""Which selection and which predictor: pipelines compared under the CV protocol (the book's chapter 12)."""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._checks import check_int, check_nonnegative
from ..data import load_source
from ..data.mmlu import MMLU_SUBJECTS
from ..method.pipeline import Pipeline, clone, parse_pipeline
from ..method.predictors import check_unreached, scored_entries
from ..protocol.cache import correlation_cache
from ..protocol.cv import CVProtocol, cv_grid, kept_columns
from ..protocol.splits import cv_splits
from ..protocol.summaries import ScoredEntries, block_r2, coverage_column

__all__ = [
    "PEERS",
    "HELD_ASIDE",
    "COMPARISON",
    "GRID_SELECTORS",
    "GRID_PREDICTORS",
    "aside_ks",
    "AsideRun",
    "compare_aside",
    "aside_tables",
    "peer_pairs",
    "fixed_pairs",
    "compare_pipelines",
    "paired_summary",
    "pooled_coverage",
    "inner_optimism",
    "choice_counts",
    "peer_differences",
    "shared_differences",
    "k_gain",
    "seed_gains",
    "newly_scored",
    "entries_scored",
    "every_model_r2",
    "mmlu_block",
    "block_sizes",
    "block_split",
]


#: published methods, re-implemented with the library's selections and predictors: pipeline name -> what it
#: stands for.  ``"mi"`` is the paper's own pipeline (Gaussian conditional mean on the greedy MI selection).
PEERS: dict[str, str] = {
    "anchors+ridge": "anchor points (k-medoids of the benchmarks on 1 - R^2) + ridge",
    "sparse+ridge": "per-target Lasso selection, strength cross-validated (largest summed coefficients) + ridge",
    "mean-lasso+ridge": "BenchPred's released selection (the Lasso of the mean score, entry order) + ridge",
    "imputed-lasso+imputed-ridge": "BenchPred's released code: its Lasso selection and RidgeCV, on the mean-imputed matrix",
    "lasso+ridge": "group-lasso path order + ridge",
    "mi+knn": "kNN on the MI selection",
    "random+knn": "kNN on a random selection",
    "mi": "the paper's Gaussian + MI",
}


#: per-leaderboard sources (:func:`~benchsel_lib.data.load_source`) kept aside from the paper's four
#: matrices, with their display names: no default of the recommended pipeline was chosen on them, so a
#: comparison there tests whether its rules hold beyond the matrices they were measured on (each has at
#: least 50 models and 11 benchmarks)
HELD_ASIDE: dict[str, str] = {"bigbench": "BIG-bench", "bigcode": "BigCode", "wildbench": "WildBench"}


def aside_ks(n_benchmarks: int, *, ks: Sequence[int] = (5, 10), min_targets: int = 4) -> tuple[int, ...]:
    """The subset sizes compared on a held-aside matrix: ``ks`` capped so that ``min_targets`` benchmarks stay
    hidden (``(5, 10)`` on 24 benchmarks, ``(5, 7)`` on 11), distinct and at least 1. O(len(ks))."""
    top = int(n_benchmarks) - int(min_targets)
    if top < 1:
        raise ValueError(f"{n_benchmarks} benchmarks leave fewer than {min_targets} to predict at k = 1")
    return tuple(sorted({max(1, min(int(k), top)) for k in ks}))


def peer_pairs(peers: Sequence[str]) -> list[str]:
    """The fixed pairs among ``peers`` (every name but the paper's ``"mi"``, which every comparison runs), checked.

    O(len(peers)).
    """
    out = []
    for name in peers:
        if name == "mi":
            continue
        if parse_pipeline(name) is None:
            raise ValueError(f"peer {name!r} is not a \"selector+predictor\" pipeline name")
        out.append(str(name))
    return out


#: the selectors and predictors of the grid of fixed pairs that the full comparison runs (:func:`fixed_pairs`)
GRID_SELECTORS: tuple[str, ...] = ("mi", "entropy", "random", "mi-obs", "entropy-obs", "lasso")
GRID_PREDICTORS: tuple[str, ...] = ("gaussian", "ridge", "lowrank", "knn", "blend")


def fixed_pairs(*, selectors: Sequence[str] = GRID_SELECTORS,
                predictors: Sequence[str] = GRID_PREDICTORS) -> list[str]:
    """Every ``"selector+predictor"`` name of the given selectors and predictors. O(selectors x predictors)."""
    names = [f"{s}+{p}" for s in selectors for p in predictors]
    for n in names:
        parse_pipeline(n)
    return names


#: the protocol of :func:`compare_pipelines` unless one is given: 10 folds, 10 % holdout, every k up to 10,
#: intervals at 50 / 80 / 90 % (the seeds and the paper's fold layout are the comparison's own)
COMPARISON = CVProtocol(holdouts=(0.1,), k_max=10, n_folds=10, levels=(0.5, 0.8, 0.9))


def compare_pipelines(
    matrix: Any,
    *,
    fixed: Sequence[str],
    seeds: Sequence[int] = (0, 42),
    protocol: CVProtocol = COMPARISON,
    config: str = "released",
    estimator: str = "auto",
    n_jobs: int = 1,
    auto: Pipeline | None = None,
) -> pd.DataFrame:
    """Per-fold R^2 of ``auto``, the paper's Gaussian + MI (``"mi"``) and the ``fixed`` pipelines.

    Runs :func:`~benchsel_lib.protocol.cv.cross_validate` under ``protocol``
    with the paper's fold layout (``scheme="paper"``) for each seed: once
    for ``auto`` and ``mi`` with the protocol's interval ``levels``, once
    for the fixed pairs (:meth:`~benchsel_lib.method.pipeline.Pipeline.from_name`,
    with ``estimator`` and ``config``) without intervals, all as one
    :func:`~benchsel_lib.protocol.cv.cv_grid` sweep (the runs on one split
    share a cell and its training correlation).  All methods see the same
    folds.  The protocol's ``ks`` (default every ``k = 1..k_max``) limits
    the subset sizes scored; its ``unreached`` is the rule for a held-out
    model that observes none of the revealed benchmarks (``"skip"``, the
    paper's, leaves it out; ``"mean"`` scores it with the training mean, so
    that every method is scored on every held-out model); its
    ``keep_entries`` keeps each row's scored entries (for
    :func:`shared_differences`).  Returns the concatenated rows with a
    ``seed`` column.  Cost: ``len(seeds) x n_folds`` splits, each running
    the inner search of ``auto`` once per split plus one selection and
    ``len(ks)`` predictions per fixed pair.

    Parameters
    ----------
    matrix : ScoreMatrix
        The score matrix to cross-validate.
    fixed : sequence of str
        Short names of the fixed pipelines for
        :meth:`~benchsel_lib.method.pipeline.Pipeline.from_name`, usually
        ``"SELECTOR+PREDICTOR"`` pairs such as ``"lasso+ridge"``; may be empty.
    seeds : sequence of int
        Seeds of the folds (default ``(0, 42)``; 42 is the paper's); the
        protocol's own ``seed`` and ``scheme`` are not used.
    protocol : CVProtocol
        Folds, holdout, subset sizes, interval levels, the rule for unreached
        models and whether entries are kept (default :data:`COMPARISON`).
    config : {"released", "early"}
        EM configuration of ``"mi"`` and the fixed pipelines (not of ``auto``,
        which keeps its own settings).
    estimator : {"auto", "pairwise", "em", "fast"}
        Correlation estimator of ``"mi"`` and the fixed pipelines.
    n_jobs : int
        Workers of the sweep (default 1: serially in this process).
    auto : Pipeline, optional
        The recommended pipeline to compare (default ``Pipeline.auto()``);
        its rows are labelled ``"auto"`` whatever its name.

    Returns
    -------
    pandas.DataFrame
        The :func:`~benchsel_lib.protocol.cv.cross_validate` rows of every run,
        concatenated in seed order (for each seed the ``auto`` and ``mi`` rows,
        then the fixed pairs'), with a ``seed`` column and a fresh index.

    Raises
    ------
    ValueError
        An unknown pipeline name in ``fixed``, an unknown ``estimator`` or
        ``config``, or an option that :func:`~benchsel_lib.protocol.cv.cv_grid`
        rejects.
    """
    if not isinstance(protocol, CVProtocol):
        raise ValueError(f"protocol must be a CVProtocol, got {type(protocol).__name__}")
    kw = {f.name: getattr(protocol, f.name) for f in dataclasses.fields(CVProtocol)
          if f.name not in ("seed", "scheme", "levels")}
    kw.update(matrix=matrix, scheme="paper")
    ref = Pipeline.auto() if auto is None else clone(auto).set_params(name="auto")
    reference = [ref, Pipeline.paper(objective="mi", estimator=estimator, config=config)]
    pairs = [Pipeline.from_name(n, estimator=estimator, config=config) for n in fixed]
    runs, tags = [], []
    for seed in seeds:
        runs.append(dict(kw, pipelines=reference, seed=seed, levels=tuple(protocol.levels)))
        tags.append(seed)
        if fixed:
            runs.append(dict(kw, pipelines=pairs, seed=seed, levels=()))
            tags.append(seed)
    with correlation_cache():  # one sweep: a split's runs share one cell and its correlation estimate
        frames = cv_grid(runs, n_jobs=n_jobs, progress=False)
    return pd.concat([df.assign(seed=seed) for df, seed in zip(frames, tags)], ignore_index=True)


@dataclass
class AsideRun:
    """The comparison on one leaderboard kept aside (:func:`compare_aside`).

    Attributes
    ----------
    name, label : str
        Source name and display name.
    shape : (int, int)
        Models x benchmarks of the source.
    ks : tuple of int
        The subset sizes compared (:func:`aside_ks`).
    results : DataFrame
        :func:`compare_pipelines` rows.
    """

    name: str
    label: str
    shape: tuple[int, int]
    ks: tuple[int, ...]
    results: pd.DataFrame


def compare_aside(
    name: str,
    *,
    peers: Sequence[str] = tuple(PEERS),
    ks: Sequence[int] = (5, 10),
    seeds: Sequence[int] = (42,),
    protocol: CVProtocol = COMPARISON,
    data_dir: Any = None,
    **kwargs: Any,
) -> AsideRun:
    """The recommended pipeline against the ``peers`` on one per-leaderboard source (:data:`HELD_ASIDE`).

    Loads the source (:func:`~benchsel_lib.data.load_source`, so any source
    name is accepted), caps ``ks`` to leave four benchmarks hidden
    (:func:`aside_ks`) and runs :func:`compare_pipelines` with the peers'
    fixed pairs under ``protocol``, its ``k_max`` the largest capped size,
    scoring the capped sizes only; ``kwargs`` go to :func:`compare_pipelines`
    (``estimator``, ``config``, ``n_jobs``, ``auto``).  Cost: that of
    :func:`compare_pipelines` on the source.
    """
    matrix = load_source(name, data_dir=data_dir)
    sizes = aside_ks(matrix.shape[1], ks=ks)
    df = compare_pipelines(matrix, fixed=peer_pairs(peers), seeds=seeds,
                           protocol=dataclasses.replace(protocol, k_max=max(sizes), ks=sizes), **kwargs)
    return AsideRun(str(name), HELD_ASIDE.get(name, str(name)), tuple(matrix.shape), sizes, df)


def aside_tables(runs: Sequence[AsideRun], peers: Sequence[str], *,
                 levels: Sequence[float] = (0.5, 0.8, 0.9)) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The peers table, the gain from the smallest to the largest compared ``k`` and the pooled coverage of
    the recommended pipeline, over the leaderboards kept aside; each with a ``matrix`` column (display name).

    Returns ``(peers, gains, coverage)``: :func:`peer_differences`, :func:`k_gain` (one row per run, with
    its own ``k0, k1``; none for a run with a single ``k``) and :func:`pooled_coverage` rows. O(rows).
    """
    tabs = [peer_differences(r.results, peers, ks=r.ks).assign(matrix=r.label) for r in runs]
    gains = [dict(matrix=r.label, **k_gain(r.results, k0=min(r.ks), k1=max(r.ks))) for r in runs if len(r.ks) > 1]
    covs = [pooled_coverage(r.results, levels=levels).assign(matrix=r.label) for r in runs]
    empty = pd.DataFrame(columns=["matrix"])
    return (pd.concat(tabs, ignore_index=True) if tabs else empty, pd.DataFrame(gains) if gains else empty,
            pd.concat(covs, ignore_index=True) if covs else empty)


def _cell_keys(df: pd.DataFrame) -> list[str]:
    """The columns of ``df`` that name one (seed, holdout, fold) cell, after checking those pairing needs.

    Rows of :func:`compare_pipelines` carry ``seed``; rows of one
    :func:`~benchsel_lib.protocol.cv.cross_validate` run have one seed and
    carry ``holdout`` and ``fold``.  Methods compared in the same cell saw
    the same training and validation models, so their differences pair.

    Raises
    ------
    ValueError
        ``df`` lacks ``pipeline``, ``fold``, ``k`` or ``r2``.
    """
    _require_columns(df, ("pipeline", "fold", "k", "r2"))
    keys = [c for c in ("seed", "holdout", "fold") if c in df.columns]
    twice = df.duplicated([*keys, "pipeline", "k"])
    if twice.any():
        row = df.loc[twice].iloc[0]
        cell = ", ".join(f"{c}={row[c]}" for c in [*keys, "k"])
        raise ValueError(f"the frame has more than one row of {row['pipeline']!r} at {cell}: rows of several runs "
                         "would be averaged and paired wrongly; pass one run's rows (compare_pipelines keys its "
                         "runs by seed)")
    return keys


def _check_sizes(ks: Any, what: str = "ks") -> tuple[int, ...]:
    """``ks`` as a tuple of distinct subset sizes (positive integers), at least one; else ValueError naming it."""
    if isinstance(ks, (str, bytes)) or not isinstance(ks, Sequence):
        raise ValueError(f"{what} must be a list of subset sizes, got {ks!r}")
    bad = [k for k in ks if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1]
    if bad or not ks:
        raise ValueError(f"{what} must list one or more subset sizes (positive integers), got {list(ks)!r}")
    if len(set(ks)) != len(ks):
        raise ValueError(f"{what} lists a size twice: {list(ks)!r}")
    return tuple(int(k) for k in ks)


def _require_pipeline_sizes(df: pd.DataFrame, pipeline: str, ks: Sequence[int]) -> None:
    """Raise ``ValueError`` unless ``pipeline`` has rows in ``df`` at every size of ``ks``."""
    _require_pipelines(df, (pipeline,))
    have = sorted({int(k) for k in df.loc[df["pipeline"] == pipeline, "k"]})
    absent = [k for k in ks if k not in have]
    if absent:
        raise ValueError(f"k = {absent} is not in the rows of {pipeline!r}: it has k = {have}")


def _check_peers(peers: Any, reference: str) -> list[str]:
    """``peers`` as a list of pipeline names other than ``reference``; a string or the reference raise ValueError."""
    if isinstance(peers, (str, bytes)) or not isinstance(peers, Sequence):
        raise ValueError(f"peers must be a list of pipeline names, got {peers!r}")
    if reference in peers:
        raise ValueError(f"peers lists the reference {reference!r}: it would be compared with itself")
    return list(peers)


def _require_columns(df: pd.DataFrame, columns: Sequence[str], *,
                     hint: str = "pass the rows of cross_validate or compare_pipelines") -> None:
    """Raise ``ValueError`` naming the ``columns`` that ``df`` lacks, with ``hint``."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"the frame has no {', '.join(map(repr, missing))} column{'s' * (len(missing) > 1)}: {hint}")


def _require_pipelines(df: pd.DataFrame, pipelines: Sequence[str]) -> None:
    """Raise ``ValueError`` naming the first of ``pipelines`` that has no row in ``df``, with the pipelines it has."""
    have = list(pd.unique(df["pipeline"]))
    for pipeline in pipelines:
        if pipeline not in have:
            raise ValueError(f"pipeline {pipeline!r} is not in the frame: it has {have}")


def _require_scored(df: pd.DataFrame, ks: Sequence[int], pipelines: Sequence[str]) -> list[str]:
    """The cell keys of ``df`` (:func:`_cell_keys`), after checking that ``ks`` and ``pipelines`` were scored."""
    keys = _cell_keys(df)
    scored = sorted(set(df.loc[df["r2"].notna(), "k"]))
    absent = [int(k) for k in ks if k not in scored]
    if absent:
        raise ValueError(f"k = {absent} is not scored: the frame has k = {[int(k) for k in scored]}")
    _require_pipelines(df, pipelines)
    return keys


def _wide_r2(df: pd.DataFrame, ks: Sequence[int], pipelines: Sequence[str]) -> pd.DataFrame:
    """R^2 per cell and ``k`` (rows) and pipeline (columns), after checking that ``ks`` and ``pipelines`` were scored."""
    keys = _require_scored(df, ks, pipelines)
    return df.pivot_table(index=[*keys, "k"], columns="pipeline", values="r2")


def _mean_se(d: pd.Series) -> tuple[float, float]:
    """Mean and standard error (``sd / sqrt(n)``; NaN below two values) of paired differences."""
    return float(d.mean()), (float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan"))


def paired_summary(df: pd.DataFrame, *, ks: Sequence[int] = (5, 10), reference: str = "auto",
                   baseline: str = "mi", n_se: float = 2.0) -> pd.DataFrame:
    """Mean R^2 of ``reference``, ``baseline`` and the best other method per ``k``, with paired differences.

    The difference ``reference - best`` is taken per (seed, holdout, fold)
    cell (same folds), and its mean and standard error (``sd / sqrt(cells)``)
    are reported.  ``best`` is the method (other than ``reference`` and
    ``baseline``) with the highest mean R^2 at that ``k``.  ``vs_baseline``
    reads the difference to ``baseline``: ``"better"`` / ``"worse"`` when it
    exceeds ``n_se`` standard errors either way, ``"n/a"`` when no cell
    scores both, else ``"level"``.  ``df``
    holds the rows of :func:`compare_pipelines` or of one
    :func:`~benchsel_lib.protocol.cv.cross_validate` run.  O(rows).

    Raises
    ------
    ValueError
        ``df`` lacks a column pairing needs, a size of ``ks`` is not scored,
        or ``reference`` or ``baseline`` is not in ``df``.
    """
    ks = _check_sizes(ks)
    n_se = check_nonnegative(n_se, "n_se")
    if reference == baseline:
        raise ValueError(f"reference and baseline are both {reference!r}: a method compared with itself")
    wide = _wide_r2(df, ks, (reference, baseline))
    rows = []
    for k in ks:
        w = wide.xs(k, level="k")
        means = w.mean()
        others = means.drop([c for c in (reference, baseline) if c in means.index])
        best = str(others.idxmax()) if len(others) else baseline
        d = (w[reference] - w[best]).dropna()
        diff, diff_se = _mean_se(d)
        diff_b, diff_b_se = _mean_se((w[reference] - w[baseline]).dropna())
        n_b = int((w[reference] - w[baseline]).notna().sum())
        verdict = ("n/a" if n_b == 0 else "better" if diff_b > n_se * diff_b_se
                   else "worse" if diff_b < -n_se * diff_b_se else "level")
        rows.append(dict(k=int(k), reference=float(means[reference]), baseline=float(means[baseline]),
                         best_fixed=best, best_fixed_r2=float(means[best]), diff=diff, diff_se=diff_se,
                         diff_baseline=diff_b, diff_baseline_se=diff_b_se, n_cells=int(len(d)), vs_baseline=verdict))
    return pd.DataFrame(rows)


def choice_counts(df: pd.DataFrame, *, pipeline: str = "auto", ks: Sequence[int] = (5, 10),
                  top: int = 3) -> dict[int, dict[str, int]]:
    """How often each pipeline was ``pipeline``'s choice over the (seed, fold) cells, per ``k``: the ``top`` most frequent.

    ``df`` needs ``pipeline``, ``k`` and ``choice`` (the recommended pipeline's
    rows of :func:`~benchsel_lib.protocol.cv.cross_validate` carry it);
    ``ValueError`` names a missing one.  O(len(df)).
    """
    _require_columns(df, ("pipeline", "k", "choice"),
                     hint="the recommended pipeline's rows of cross_validate carry its choice")
    ks = _check_sizes(ks)
    _require_pipeline_sizes(df, pipeline, ks)
    check_int(top, "top")
    d = df[(df["pipeline"] == pipeline) & df["k"].isin(list(ks))]
    return {int(k): {str(c): int(n) for c, n in g["choice"].value_counts().head(top).items()}
            for k, g in d.groupby("k")}


def pooled_coverage(df: pd.DataFrame, *, pipeline: str = "auto", levels: Sequence[float] = (0.5, 0.8, 0.9)) -> pd.DataFrame:
    """Interval coverage of ``pipeline`` pooled over folds and ``k`` (weighted by evaluated entries), per level.

    ``ValueError`` names a level whose coverage column ``df`` lacks (run
    :func:`~benchsel_lib.protocol.cv.cross_validate` with that level in
    ``levels``).  O(len(df) x len(levels)).
    """
    _require_columns(df, ("pipeline", "n_eval", *(coverage_column(lev) for lev in levels)),
                     hint=f"cross_validate gives interval coverage with levels={tuple(float(v) for v in levels)}")
    _require_pipelines(df, (pipeline,))
    d = df[df["pipeline"] == pipeline]
    out = []
    for lev in levels:
        c = coverage_column(lev)
        ok = d[c].notna() & (d["n_eval"] > 0)
        cov = float(np.average(d.loc[ok, c], weights=d.loc[ok, "n_eval"])) if ok.any() else float("nan")
        out.append(dict(nominal=float(lev), coverage=cov, gap=cov - float(lev)))
    return pd.DataFrame(out)


def inner_optimism(df: pd.DataFrame, *, pipeline: str = "auto", ks: Sequence[int] = (5, 10)) -> pd.DataFrame:
    """How far the inner-CV R^2 of ``pipeline``'s choice exceeds its R^2 on the held-out models, per ``k``.

    ``df`` holds :func:`benchsel_lib.cross_validate` rows (``inner_r2`` and
    ``r2``, e.g. from :func:`compare_pipelines`).  A search scores its
    candidates on every inner-held-out model, so where the rows carry the
    R^2 over every held-out model (``r2_all``) the inner score is set
    against that one, the same scoring; otherwise against ``r2``.  Returns
    per ``k`` the mean of each over the (seed, fold) cells (the held-out one
    as ``r2``) and their mean difference with its standard error: the
    optimism of the inner score that a user of ``benchsel predict`` is
    shown.  ``ValueError`` names a missing column.  O(len(df)).
    """
    _require_columns(df, ("pipeline", "k", "inner_r2", "r2"),
                     hint="the recommended pipeline's rows of cross_validate carry its inner_r2")
    ks = _check_sizes(ks)
    _require_pipeline_sizes(df, pipeline, ks)
    held = "r2_all" if "r2_all" in df.columns else "r2"
    d = df[(df["pipeline"] == pipeline) & df["k"].isin(list(ks))].dropna(subset=["inner_r2", held])
    rows = []
    for k, g in d.groupby("k"):
        optimism, optimism_se = _mean_se(g["inner_r2"] - g[held])
        rows.append(dict(k=int(k), inner_r2=float(g["inner_r2"].mean()), r2=float(g[held].mean()),
                         optimism=optimism, optimism_se=optimism_se, n_cells=int(len(g))))
    return pd.DataFrame(rows, columns=["k", "inner_r2", "r2", "optimism", "optimism_se", "n_cells"])


def peer_differences(df: pd.DataFrame, peers: Sequence[str], *, ks: Sequence[int] = (5, 10),
                     reference: str = "auto") -> pd.DataFrame:
    """Mean R^2 of ``reference`` and of each peer per ``k``, with the paired difference ``reference - peer``.

    The difference is taken per (seed, holdout, fold) cell (the same folds),
    its mean and standard error (``sd / sqrt(cells)``) over the cells where
    both were scored.  Rows ``k, peer, reference_r2, peer_r2, diff, diff_se,
    n_cells``, in the order of ``ks`` then ``peers``; a peer absent from
    ``df`` is skipped.  O(rows).

    Raises
    ------
    ValueError
        ``df`` lacks a column pairing needs, a size of ``ks`` is not scored,
        or ``reference`` is not in ``df``.
    """
    ks = _check_sizes(ks)
    peers = _check_peers(peers, reference)
    wide = _wide_r2(df, ks, (reference,))
    rows = []
    for k in ks:
        w = wide.xs(k, level="k")
        for peer in peers:
            if peer not in w.columns:
                continue
            both = w[[reference, peer]].dropna()
            diff, diff_se = _mean_se(both[reference] - both[peer])
            rows.append(dict(k=int(k), peer=str(peer), reference_r2=float(w[reference].mean()),
                             peer_r2=float(w[peer].mean()), diff=diff, diff_se=diff_se, n_cells=int(len(both))))
    return pd.DataFrame(rows, columns=["k", "peer", "reference_r2", "peer_r2", "diff", "diff_se", "n_cells"])


def shared_differences(df: pd.DataFrame, peers: Sequence[str], *, ks: Sequence[int] = (5, 10),
                       reference: str = "auto") -> pd.DataFrame:
    """:func:`peer_differences` on the held-out entries that both ``reference`` and the peer score.

    Under the protocol (Section 5.1) a method is scored on the observed
    held-out entries its selection does not reveal, of the models that
    observe a revealed benchmark (``unreached="skip"``), so two methods
    are scored on different entries (on any matrix, each leaves out what it
    reveals; on a sparse one, each also reaches other models), and a
    difference of their R^2 mixes how well they predict with what they are
    scored on.
    Here each (seed, holdout, fold) cell and ``k`` scores both on the entries
    both score: ``R^2 = 1 - SS_res / SS_tot`` over those entries, for each,
    then the paired difference ``reference - peer``, its mean and standard
    error over the cells that share an entry (``n_cells``; NaN where no
    held-out entry is scored by both, e.g. where the two selections together
    reveal every benchmark).  ``df`` holds rows with scored entries
    (:func:`compare_pipelines` or
    :func:`~benchsel_lib.protocol.cv.cross_validate` with
    ``keep_entries=True``).  Rows ``k, peer, reference_r2, peer_r2, diff,
    diff_se, n_cells, n_shared, n_own`` (``n_shared``: the shared entries,
    summed over the cells; ``n_own``: the entries ``reference`` scores in
    every cell both were run in), in the order of ``ks`` then ``peers``; a
    peer absent from ``df`` is skipped.  O(E log E) for E scored entries.

    Raises
    ------
    ValueError
        ``df`` lacks a column (``entries`` when the run did not keep them), a
        size of ``ks`` is not scored, ``reference`` is not in ``df``, or two
        rows of a cell disagree on an entry's truth (rows of different runs).
    """
    _require_columns(df, ("entries",), hint="run cross_validate or compare_pipelines with keep_entries=True")
    ks = _check_sizes(ks)
    peers = _check_peers(peers, reference)
    keys = _require_scored(df, ks, (reference,))
    d = df[df["k"].isin(list(ks))].set_index([*keys, "k", "pipeline"])["entries"]
    if not d.index.is_unique:
        raise ValueError("the frame has two rows of one pipeline in one cell: pass the rows of one run per seed")
    rows = []
    for k in ks:
        at = d.xs(k, level="k")
        ref = at.xs(reference, level="pipeline")
        for peer in peers:
            if peer not in at.index.get_level_values("pipeline"):
                continue
            other = at.xs(peer, level="pipeline")
            cells, own = [], 0
            for cell in ref.index.intersection(other.index):
                a, b = ref.loc[cell], other.loc[cell]
                for name, e in ((reference, a), (peer, b)):
                    if not isinstance(e, ScoredEntries):
                        raise ValueError(f"{name!r} has no scored entries at k = {k} in cell {cell}: "
                                         "run it with keep_entries=True")
                ss_a, ss_b, ss_tot, n = a.shared(b)
                own += a.index.size
                if n and ss_tot > 0:
                    cells.append((1.0 - ss_a / ss_tot, 1.0 - ss_b / ss_tot, n))
            r_ref, r_peer, n = np.array(cells, dtype=float).reshape(-1, 3).T
            diff, diff_se = _mean_se(pd.Series(r_ref - r_peer))
            rows.append(dict(k=int(k), peer=str(peer), reference_r2=float(np.mean(r_ref)) if cells else np.nan,
                             peer_r2=float(np.mean(r_peer)) if cells else np.nan, diff=diff, diff_se=diff_se,
                             n_cells=len(cells), n_shared=int(n.sum()), n_own=int(own)))
    return pd.DataFrame(rows, columns=["k", "peer", "reference_r2", "peer_r2", "diff", "diff_se", "n_cells",
                                       "n_shared", "n_own"])


def k_gain(df: pd.DataFrame, *, pipeline: str = "auto", k0: int = 5, k1: int = 10) -> dict[str, float]:
    """How much ``pipeline`` gains from ``k0`` to ``k1`` benchmarks, paired by (seed, holdout, fold) cell.

    ``r2_k0``, ``r2_k1``: each size's mean R^2 over the cells scored at both.
    ``gain``: the mean of R^2(k1) - R^2(k0) over the cells, with its standard
    error ``gain_se`` -- the protocol's R^2 (Section 5.1), each size scored
    on the entries it scores, so a size that reveals a benchmark more models
    observe is scored on more models.  ``gain_common``, ``gain_common_se``:
    the same with ``r2_common``, the R^2 over the entries every scored size
    of the fold scores (:func:`~benchsel_lib.protocol.cv.cross_validate`):
    what the extra benchmarks do to the predictions of the same entries
    (NaN when ``df`` has no ``r2_common``).

    Where the two differ, the sums ``ss_res_common, ss_tot_common`` say why,
    pooled over the paired cells: ``common_r2_k0`` and ``common_r2_k1`` are
    each size's R^2 on the entries every scored size scores, ``only_r2_k0``
    the R^2 of ``k0`` on the entries it scores beyond those (among them the
    benchmarks larger selections reveal, no longer targets there) and
    ``only_r2_k1`` that of ``k1`` on the entries it scores beyond them
    (among them the models that observe only a newly revealed benchmark);
    NaN without those columns or without such entries.  ``nested_cells``:
    in how many of the paired cells the ``k1`` selection contains the ``k0``
    one (a selection that is not a superset can lose on the shared
    entries what the smaller one got right); -1 without a ``selected``
    column.  ``worst_fold``, ``worst_seed``, ``worst_gain``: the fold and
    seed (-1 without a ``seed`` column) of the cell where R^2 falls most
    (or gains least), and that cell's difference; ``others_gain``: the mean
    difference of the other cells (NaN for one cell).  A mean over ten
    folds can hang on one of them (:func:`newly_scored` says which models that
    fold scores at ``k1`` only).  O(rows).

    Raises
    ------
    ValueError
        ``df`` lacks a column pairing needs, ``pipeline`` is not in it, or it
        is not scored at both sizes in any cell.
    """
    keys = _cell_keys(df)
    _require_pipelines(df, (pipeline,))
    if not check_int(k0, "k0") < check_int(k1, "k1"):
        raise ValueError(f"k0={k0} must be smaller than k1={k1}: the gain is from k0 to k1 benchmarks")
    d = df[df["pipeline"] == pipeline]
    pairs, wide = {}, {}
    for col in ("r2", "r2_common"):
        if col in d.columns:
            wide[col] = w = d.pivot_table(index=keys, columns="k", values=col)
            pairs[col] = (w[k1] - w[k0]).dropna() if k0 in w.columns and k1 in w.columns else pd.Series(dtype=float)
    if "r2" not in pairs or not len(pairs["r2"]):
        raise ValueError(f"{pipeline!r} is not scored at both k = {k0} and k = {k1} in any (seed, holdout, fold) cell")
    gain, gain_se = _mean_se(pairs["r2"])
    common, common_se = _mean_se(pairs["r2_common"]) if len(pairs.get("r2_common", ())) else (np.nan, np.nan)
    both = pairs["r2"].index
    out = dict(k0=int(k0), k1=int(k1), r2_k0=float(wide["r2"].loc[both, k0].mean()),
               r2_k1=float(wide["r2"].loc[both, k1].mean()), gain=gain, gain_se=gain_se, gain_common=common,
               gain_common_se=common_se, n_cells=int(len(both)))
    worst = pairs["r2"].idxmin()
    cell = dict(zip(keys, worst if isinstance(worst, tuple) else (worst,)))
    n = len(pairs["r2"])
    out.update(worst_fold=int(cell["fold"]), worst_seed=int(cell.get("seed", -1)),
               worst_gain=float(pairs["r2"].min()),
               others_gain=float((pairs["r2"].sum() - pairs["r2"].min()) / (n - 1)) if n > 1 else float("nan"))
    sums = ["ss_res", "ss_tot", "ss_res_common", "ss_tot_common"]
    cells = d.set_index(keys)
    out["nested_cells"] = -1
    if "selected" in d.columns:
        chosen = d.groupby([*keys, "k"])["selected"].first()
        cell = [c if isinstance(c, tuple) else (c,) for c in both]
        out["nested_cells"] = int(sum(set(chosen[(*c, k0)]) <= set(chosen[(*c, k1)]) for c in cell))
    for k, tag in ((k0, "k0"), (k1, "k1")):
        out[f"common_r2_{tag}"] = out[f"only_r2_{tag}"] = np.nan
        if set(sums) <= set(d.columns):
            at = cells[cells["k"] == k].loc[lambda x: x.index.isin(both), sums].sum()
            out[f"common_r2_{tag}"] = _pooled_r2(at["ss_res_common"], at["ss_tot_common"], at["ss_tot"])
            out[f"only_r2_{tag}"] = _pooled_r2(at["ss_res"] - at["ss_res_common"], at["ss_tot"] - at["ss_tot_common"],
                                               at["ss_tot"])
    return out


def seed_gains(df: pd.DataFrame, *, pipelines: Sequence[str] | None = None, k0: int = 5,
               k1: int = 10) -> pd.DataFrame:
    """:func:`k_gain` of each pipeline at each seed: does the gain from ``k0`` to ``k1`` hold beyond one seed?

    One seed draws one set of folds, so a gain measured at one seed may be
    that draw's.  Each (pipeline, seed) row has ``pipeline, seed``, the mean R^2
    ``r2_k0, r2_k1`` over the folds scored at both sizes, and ``k_gain``'s
    ``gain, gain_se, gain_common, gain_common_se, nested_cells, n_cells``.
    ``pipelines``: the pipelines of ``df`` in their order of first appearance
    when omitted.  Rows are ordered by pipeline, then seed.  O(rows).

    Raises
    ------
    ValueError
        ``df`` has no ``seed`` column or lacks another column pairing needs,
        a pipeline of ``pipelines`` is not in ``df``, or it is not scored at both
        sizes at one of its seeds.
    """
    _require_columns(df, ("seed", "pipeline", "fold", "k", "r2"),
                     hint="seed_gains compares the seeds of compare_pipelines rows "
                          "(k_gain reads one cross_validate run)")
    names = list(pd.unique(df["pipeline"])) if pipelines is None else list(pipelines)
    _require_pipelines(df, names)
    rows = []
    for pipeline in names:
        d = df[df["pipeline"] == pipeline]
        for seed, ds in d.groupby("seed", sort=True):
            g = k_gain(ds, pipeline=pipeline, k0=k0, k1=k1)
            rows.append(dict(pipeline=pipeline, seed=int(seed), **{c: g[c] for c in (
                "r2_k0", "r2_k1", "gain", "gain_se", "gain_common", "gain_common_se", "nested_cells", "n_cells")}))
    return pd.DataFrame(rows)


def _run_rows(df: pd.DataFrame, *, pipeline: str, fold: int, holdout: float, seed: int) -> pd.DataFrame:
    """The run's rows of ``pipeline`` in ``fold``, at ``holdout`` and ``seed`` where the frame has those columns."""
    d = df[(df["pipeline"] == pipeline) & (df["fold"] == fold)]
    if "holdout" in d.columns:
        d = d[np.isclose(d["holdout"], holdout)]
    if "seed" in d.columns:
        d = d[d["seed"] == seed]
    return d


def _run_selection(d: pd.DataFrame, k: int, *, pipeline: str, fold: int, holdout: float,
                   seed: int) -> tuple[list[str], int | None]:
    """The run's selection at ``k`` and the entries it scored there (None without ``n_eval``); no row is an error."""
    at = d[d["k"] == k]
    if at.empty:
        raise ValueError(f"{pipeline!r} has no row at fold {fold}, k = {k} (holdout {holdout}, seed {seed})")
    return list(at["selected"].iloc[0]), (int(at["n_eval"].iloc[0]) if "n_eval" in at.columns else None)


def _fold_split(n_models: int, fold: int, *, n_folds: int, holdout: float, seed: int,
                scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """The training and held-out models of ``fold``, drawn again as the run drew them; an unknown fold is an error."""
    splits = {f: (tr, va) for f, tr, va in cv_splits(n_models, n_folds=n_folds, holdout=holdout, seed=seed,
                                                      scheme=scheme)}
    if fold not in splits:
        raise ValueError(f"fold {fold} is not one of the {n_folds} folds")
    return splits[fold]


def _scored_by(Ov: np.ndarray, sel_names: Sequence[str], where: Mapping[str, int], *, k: int, n_eval: int | None,
               unreached: str) -> tuple[np.ndarray, np.ndarray]:
    """The held-out entries this split scores with the run's selection at ``k``.

    Parameters
    ----------
    Ov : ndarray of bool (v, n)
        Which held-out entries are observed, over the split's kept benchmarks.
    sel_names : sequence of str
        The run's selection at ``k``.
    where : mapping
        Benchmark name -> its column in ``Ov``.
    k : int
    n_eval : int or None
        The entries the run scored at ``k``, checked when given.
    unreached : str
        The run's rule for models that observe no revealed benchmark.

    Returns
    -------
    sel : ndarray of int
        The selection's columns in ``Ov``.
    scored : ndarray of bool (v, n)

    Raises
    ------
    ValueError
        The selection names a benchmark the split does not keep, or the split
        does not score ``n_eval`` entries: the run's settings were not given.
    """
    unknown = [b for b in sel_names if b not in where]
    if unknown:
        raise ValueError(f"the run's k = {k} selection names {unknown[0]!r}, which this split does not keep: "
                         "give the run's seed, holdout, scheme and n_folds")
    sel = np.array([where[b] for b in sel_names], dtype=int)
    targets = np.setdiff1d(np.arange(Ov.shape[1]), sel)
    scored = scored_entries(Ov, sel, targets, unreached)
    if n_eval is not None and n_eval != int(scored.sum()):
        raise ValueError(f"this split scores {int(scored.sum())} entries at k = {k} where the run scored {n_eval}: "
                         "give the run's seed, holdout, scheme, n_folds, min_train_observed and unreached")
    return sel, scored


def _newly_scored_rows(matrix: Any, val: np.ndarray, cols: np.ndarray, Ov: np.ndarray, counts: np.ndarray,
                       after: tuple[np.ndarray, np.ndarray], *, before: np.ndarray) -> list[dict[str, Any]]:
    """One row per held-out model scored with the larger selection and not with the smaller one.

    Parameters
    ----------
    matrix : ScoreMatrix
    val : ndarray of int
        The fold's held-out models (rows of ``matrix``).
    cols : ndarray of int
        The split's kept benchmarks (columns of ``matrix``).
    Ov : ndarray of bool (v, n)
        Which held-out entries are observed, over ``cols``.
    counts : ndarray of int
        Training models observing each benchmark of ``matrix``.
    after : (ndarray, ndarray)
        :func:`_scored_by` of the larger selection.
    before : ndarray of bool (v, n)
        The entries the smaller selection scores.

    Returns
    -------
    list of dict
        ``model, targets, revealed, train_observed``, ordered by the fewest
        training models observing one of the model's revealed benchmarks,
        then by model.
    """
    sel, scored = after
    names = [matrix.benchmarks[j] for j in cols]
    rows = []
    for i in np.flatnonzero(scored.any(axis=1) & ~before.any(axis=1)):
        seen = [int(j) for j in sel if Ov[i, j]]
        rows.append(dict(model=matrix.models[val[i]], targets=int(scored[i].sum()),
                         revealed=tuple(names[j] for j in seen),
                         train_observed=tuple(int(counts[cols[j]]) for j in seen)))
    rows.sort(key=lambda r: (min(r["train_observed"], default=np.inf), r["model"]))
    return rows


def newly_scored(matrix: Any, df: pd.DataFrame, *, fold: int, seed: int, pipeline: str = "auto", k0: int = 5,
                 k1: int = 10, holdout: float = 0.1, n_folds: int = 10, scheme: str = "paper",
                 min_train_observed: int = 1, unreached: str = "skip") -> pd.DataFrame:
    """The held-out models of one fold that ``pipeline`` scores at ``k1`` benchmarks and not at ``k0``.

    Under the protocol (Section 5.1, ``unreached="skip"``) a held-out
    model is scored at a size when it observes at least one revealed
    benchmark and one other; on a sparse matrix a larger selection can reveal
    a benchmark that a model observes alone among the revealed, and bring the
    model into the score.  The fold's splits are drawn again from ``seed``
    (:func:`~benchsel_lib.protocol.splits.cv_splits`, as the run drew them)
    and the selections are the run's ``selected`` column; ``holdout``,
    ``n_folds``, ``scheme``, ``min_train_observed`` and ``unreached``
    are the run's (those of
    :func:`~benchsel_lib.protocol.cv.cross_validate`).  One row per such
    model: ``model``, ``targets`` (its entries scored at ``k1``),
    ``revealed`` (the revealed benchmarks it observes, in selection order)
    and ``train_observed`` (how many training models of the fold observe
    each of them: a correlation with a benchmark that two models observe is
    noise).  Rows are ordered by the fewest training models that observe
    one of a model's revealed benchmarks, then by model.  O(v N) for v
    held-out models and N benchmarks.

    Raises
    ------
    ValueError
        ``df`` lacks a column, ``pipeline``, or a row of ``fold`` at ``k0``
        or ``k1`` (at ``holdout``, and at ``seed`` when ``df`` has seeds),
        or the split drawn again does not score what the run scored (its
        ``n_eval``): a seed or scheme other than the run's; or
        ``unreached`` is unknown.
    """
    check_unreached(unreached)
    _require_columns(df, ("pipeline", "fold", "k", "selected"))
    _require_pipelines(df, (pipeline,))
    X = np.asarray(matrix.scores, dtype=float)
    d = _run_rows(df, pipeline=pipeline, fold=fold, holdout=holdout, seed=seed)
    chosen, n_eval = {}, {}
    for k in (k0, k1):
        chosen[k], n_eval[k] = _run_selection(d, k, pipeline=pipeline, fold=fold, holdout=holdout, seed=seed)
    train, val = _fold_split(X.shape[0], fold, n_folds=n_folds, holdout=holdout, seed=seed, scheme=scheme)
    counts = (~np.isnan(X[train])).sum(axis=0)
    cols = kept_columns(X[train], min_train_observed)
    where = {matrix.benchmarks[j]: i for i, j in enumerate(cols)}
    Ov = ~np.isnan(X[np.ix_(val, cols)])
    scored = {k: _scored_by(Ov, sel_names, where, k=k, n_eval=n_eval[k], unreached=unreached)
              for k, sel_names in chosen.items()}
    rows = _newly_scored_rows(matrix, val, cols, Ov, counts, scored[k1], before=scored[k0][1])
    return pd.DataFrame(rows, columns=["model", "targets", "revealed", "train_observed"])


def entries_scored(df: pd.DataFrame, *, pipelines: Sequence[str] | None = None,
                   ks: Sequence[int] = (5, 10)) -> pd.DataFrame:
    """How many held-out entries the protocol scores for each pipeline at each ``k``, summed over the cells.

    Under the paper's rule (``unreached="skip"``) a held-out model is
    scored only where it observes a revealed benchmark, so on a sparse
    matrix methods whose selections reach different models are scored on
    different entries, and their R^2 are not on the same footing.  One row
    per pipeline (``pipelines``, default every pipeline of ``df`` in order of
    appearance), one column per ``k``.  O(rows).

    Raises
    ------
    ValueError
        ``df`` lacks ``n_eval`` or another column, or a pipeline is not in it.
    """
    _require_columns(df, ("pipeline", "k", "n_eval"))
    names = list(pd.unique(df["pipeline"])) if pipelines is None else list(pipelines)
    _require_pipelines(df, names)
    ks = _check_sizes(ks)
    have = sorted({int(k) for k in df["k"]})
    if any(k not in have for k in ks):
        raise ValueError(f"k = {[k for k in ks if k not in have]} is not in the frame: it has k = {have}")
    n = df[df["k"].isin(ks)].groupby(["pipeline", "k"])["n_eval"].sum()
    return pd.DataFrame({int(k): [int(n.get((m, k), 0)) for m in names] for k in ks},
                        index=pd.Index(names, name="pipeline"))


def _pooled_r2(ss_res: float, ss_tot: float, scale: float) -> float:
    """``1 - ss_res / ss_tot``; NaN when nothing is scored (``ss_tot`` within rounding of 0 beside ``scale``)."""
    return float(1.0 - ss_res / ss_tot) if ss_tot > 1e-9 * max(scale, 1.0) else float("nan")


def every_model_r2(df: pd.DataFrame, *, ks: Sequence[int] = (5, 10),
                   pipelines: Sequence[str] | None = None) -> pd.DataFrame:
    """The protocol's R^2 beside the R^2 over every held-out model and the reach, per pipeline and ``k``.

    Under the paper's rule (``unreached="skip"``) a held-out model that
    ran none of the revealed benchmarks is not scored, so on a sparse matrix
    a selection that few models ran is scored on those few.  ``r2_all`` scores
    the same predictions over every held-out model (one that ran none of
    them predicted by the training mean) and ``reach`` is the share of
    held-out models that ran at least one revealed benchmark (columns of
    :func:`~benchsel_lib.protocol.cv.cross_validate`).

    Parameters
    ----------
    df : DataFrame
        Rows of :func:`compare_pipelines` or
        :func:`~benchsel_lib.protocol.cv.cross_validate`.
    ks : sequence of int
        The subset sizes, each scored in ``df``.
    pipelines : sequence of str, optional
        The pipelines, in this order (default: every pipeline of ``df``, in
        order of appearance).

    Returns
    -------
    DataFrame
        One row per ``k`` (in the order of ``ks``) and pipeline: ``k, pipeline,
        r2, r2_all, reach`` (means over the (seed, holdout, fold) cells,
        ``r2`` over those where it is defined) and ``n_cells``.

    Raises
    ------
    ValueError
        ``df`` lacks a column (``r2_all`` and ``reach`` come with every
        :func:`~benchsel_lib.protocol.cv.cross_validate` row), a pipeline is not
        in it, or a size of ``ks`` is not scored.

    Notes
    -----
    O(rows).
    """
    _require_columns(df, ("pipeline", "k", "r2", "r2_all", "reach"))
    ks = _check_sizes(ks)
    names = list(pd.unique(df["pipeline"])) if pipelines is None else list(pipelines)
    _require_scored(df, ks, names)
    means = df[df["k"].isin(ks)].groupby(["k", "pipeline"])[["r2", "r2_all", "reach"]].mean()
    cells = df[df["k"].isin(ks)].groupby(["k", "pipeline"]).size()
    rows = [dict(k=int(k), pipeline=str(m), **means.loc[(k, m)].to_dict(), n_cells=int(cells.loc[(k, m)]))
            for k in ks for m in names if (k, m) in means.index]
    return pd.DataFrame(rows, columns=["k", "pipeline", "r2", "r2_all", "reach", "n_cells"])


def mmlu_block(benchmarks: Sequence[str]) -> np.ndarray:
    """Which benchmarks are MMLU subjects: Merged's ``"mmlu/<subject>"`` columns, or a bare subject name.

    The subjects are :data:`~benchsel_lib.data.mmlu.MMLU_SUBJECTS` (57);
    other MMLU-like columns (``"helm/MMLU"``, ``"open_llm/MMLU-PRO"``) are
    not in the block.  O(N).
    """
    subjects = set(MMLU_SUBJECTS)
    out = []
    for name in map(str, benchmarks):
        source, _, subject = name.rpartition("/")
        out.append(subject in subjects and source in ("", "mmlu"))
    return np.array(out, dtype=bool)


def block_sizes(matrix: Any, inside: Sequence[bool] | np.ndarray) -> tuple[int, int, int]:
    """The benchmarks of the block ``inside``, the models of ``matrix`` that ran one of them, and all its models.

    ``matrix`` is a :class:`~benchsel_lib.data.ScoreMatrix`; ``inside`` has
    one value per benchmark (else ``ValueError``).  O(M N).
    """
    mask = np.asarray(inside, dtype=bool)
    X = np.asarray(matrix.scores, dtype=float)
    if mask.shape != (X.shape[1],):
        raise ValueError(f"inside has {mask.size} values for a matrix of {X.shape[1]} benchmarks")
    return int(mask.sum()), int((~np.isnan(X[:, mask])).any(axis=1).sum()), int(X.shape[0])


def block_split(df: pd.DataFrame, inside: Sequence[bool] | np.ndarray, *, ks: Sequence[int] = (5, 10),
                pipelines: Sequence[str] | None = None) -> pd.DataFrame:
    """R^2 inside and outside a block of benchmarks, in the protocol's scoring and over every held-out model.

    Each scored entry is inside the block when its benchmark is; the sums of
    squares of every (seed, holdout, fold) cell are pooled
    (:func:`~benchsel_lib.protocol.summaries.block_r2`), so that the inside
    and outside parts add up to the whole, which is weighted toward the part
    with the larger share of ``SS_tot``.

    Parameters
    ----------
    df : DataFrame
        Rows with scored entries (:func:`compare_pipelines` or
        :func:`~benchsel_lib.protocol.cv.cross_validate` with ``keep_entries=True``).
    inside : sequence of bool
        Per benchmark of the matrix, whether it is in the block (e.g. :func:`mmlu_block`).
    ks : sequence of int
        The subset sizes, each in ``df``.
    pipelines : sequence of str, optional
        The pipelines, in this order (default: every pipeline of ``df``).

    Returns
    -------
    DataFrame
        One row per ``k`` (in the order of ``ks``) and pipeline: ``k, pipeline``;
        for the protocol's entries ``r2, r2_inside, r2_outside,
        share_inside`` (the block's share of ``SS_tot``), ``n_inside,
        n_outside`` (entries); and the same over every held-out model with
        the suffix ``_all`` (``r2_all, r2_all_inside, ...``).  R^2 pooled
        over the cells; NaN where a part has no entry.

    Raises
    ------
    ValueError
        ``df`` has no ``entries``, a pipeline or a size is not in it, or
        ``inside`` does not fit the matrix (:func:`~benchsel_lib.protocol.summaries.block_r2`).

    Notes
    -----
    O(E) for the E entries kept, besides a group-by over the rows.
    """
    _require_columns(df, ("pipeline", "k", "entries"), hint="run compare_pipelines with keep_entries=True")
    ks = _check_sizes(ks)
    names = list(pd.unique(df["pipeline"])) if pipelines is None else list(pipelines)
    for m in names:
        _require_pipeline_sizes(df, m, ks)
    d = df[df["k"].isin(ks) & df["pipeline"].isin(names)]
    d = d.drop(columns=[c for c in ("seed", "holdout", "split") if c in d.columns])  # pooled over every cell
    parts = []
    for every, tag in ((False, ""), (True, "_all")):
        b = block_r2(d, inside, every=every).set_index(["pipeline", "k"])
        parts.append(pd.DataFrame({f"r2{tag}": b["r2"], f"r2{tag}_inside": b["r2_inside"],
                                   f"r2{tag}_outside": b["r2_outside"], f"share{tag}_inside": b["tot_share_inside"],
                                   f"n{tag}_inside": b["n_inside"], f"n{tag}_outside": b["n_outside"]}))
    both = pd.concat(parts, axis=1)
    rows = [dict(k=int(k), pipeline=str(m), **both.loc[(m, k)].to_dict()) for k in ks for m in names
            if (m, k) in both.index]
    out = pd.DataFrame(rows, columns=["k", "pipeline", *both.columns])
    counts = ["n_inside", "n_outside", "n_all_inside", "n_all_outside"]
    out[counts] = out[counts].astype(int)
    return out
