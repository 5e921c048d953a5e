"""The paper's cross-validation protocol (Section 5.1, with the settings of its code release), for any pipeline.

1. The ``M`` models are split into ``K`` balanced folds of a random permutation;
   each fold is the validation set once (~M/K models).
2. From the other folds a training set of ``round((1 - p) M)`` models (at most
   all of them) is drawn, nested across holdouts (:func:`~benchsel_lib.protocol.splits.cv_splits`).
3. Benchmarks with fewer than ``min_train_observed`` (default 1) observed
   training scores are left out of that split (neither selectable nor
   evaluated) and counted in ``n_dropped``.
4. Each pipeline is fit on the training rows only
   (:meth:`~benchsel_lib.method.pipeline.Pipeline.fit_path`): scaled with the
   training means and standard deviations (``n - 1`` denominator, std floored
   at ``0.01 (|mean| + 1)``, clipped to [-10, 10]), its correlation estimated
   (EM stops when the relative change of Sigma falls below ``5e-4``; one
   estimate per split and estimator, through :mod:`benchsel_lib.protocol.cache`),
   and one selection made up to ``k_max`` (greedy prefixes give every ``k``;
   anchor points select once per size scored).
5. Each validation model reveals the selected benchmarks it observes (clipped
   standardized scores); the pipeline predicts the rest. A model that observes
   none is not scored at that ``k`` (``unreached="skip"``, as in the paper;
   ``"mean"`` scores the training mean instead).
6. ``r2 = 1 - SS_res / SS_tot`` over the observed unselected entries of the
   fold, with validation scores standardized by the raw training statistics
   and clipped to ``[-clip, clip]`` (``SS_tot = sum z^2``; a logit pipeline's
   predictions are mapped back to raw units first, Appendix K);
   ``rmse = sqrt(SS_res / n_eval)``. ``r2_common`` is the same R^2 over the
   entries that every scored size of the (pipeline, split) scores, so its
   change with ``k`` is what the extra benchmarks do to the same entries.
7. ``reach`` is the share of the fold's held-out models that observe a
   selected benchmark, and ``r2_all`` the R^2 of the same predictions over
   every held-out model's observed unselected entries (as under ``"mean"``).

The splits (:class:`~benchsel_lib.protocol.splits.CVSplits`) run through the
out-of-fold engine (:mod:`benchsel_lib.method.folds`) with the sweep of
:mod:`benchsel_lib.protocol.sweep` as its runner; steps 5-7 use
:class:`~benchsel_lib.method.oof.HeldOut`. Every random stream derives from
``seed`` (:mod:`~benchsel_lib.protocol.splits`), so a seed always gives the
same DataFrame.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import numbers
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._checks import check_bool, check_int, check_ks, check_matrix
from .._random import check_seed
from ..data import ScoreMatrix, ScoreWarning
from ..method.correlation import Correlation
from ..method.pipeline import FitSeeds, FittedPath, Pipeline, PipelineSearch
from ..method.folds import Fold, run_folds
from ..method.oof import HeldOut
from ..method.predictors import UNREACHED, check_unreached, r2_from_sums
from ..method.scaling import PROTOCOL_CLIP, check_clip, fit_standardizer
from . import cache
from .splits import SCHEMES, CVSplits, split_seeds
from .summaries import Records, ScoredEntries, SharedMap, coverage_column, top_residuals
from .sweep import Cell, check_n_jobs, run_sweep

__all__ = ["cross_validate", "cv_grid", "CVProtocol", "check_pipelines", "kept_columns", "split_rows",
           "UNREACHED"]

_N_TOP = 3  # largest squared residuals kept per (pipeline, holdout, fold, k)
#: the paper's largest subset size (Section 5.1)
DEFAULT_K_MAX = 15


def kept_columns(train_scores: np.ndarray, min_train_observed: int) -> np.ndarray:
    """The benchmark columns that at least ``max(min_train_observed, 1)`` training models observe (step 3). O(m N)."""
    return np.flatnonzero((~np.isnan(train_scores)).sum(axis=0) >= max(int(min_train_observed), 1))


def check_pipelines(pipelines: Any) -> list[Pipeline | PipelineSearch]:
    """``pipelines`` (names for :meth:`Pipeline.from_name`) as validated pipelines with distinct labels. O(P).

    Raises
    ------
    ValueError
        Empty, an unknown name, an invalid pipeline, or two pipelines with the same label.
    """
    if isinstance(pipelines, (str, Pipeline, PipelineSearch)):
        items = [pipelines]
    elif isinstance(pipelines, Iterable):
        items = list(pipelines)
    else:
        raise ValueError(f"pipelines must be a Pipeline, a name or a sequence of them, got {pipelines!r}")
    if not items:
        raise ValueError("pipelines is empty: give at least one pipeline or name")
    out = []
    for p in items:
        if isinstance(p, str):
            p = Pipeline.from_name(p)
        elif not isinstance(p, (Pipeline, PipelineSearch)):
            raise ValueError(f"pipelines must be Pipeline or PipelineSearch objects or names, got {type(p).__name__}")
        p.validate()
        out.append(p)
    dup = sorted(label for label, n in Counter(p.label for p in out).items() if n > 1)
    if dup:
        raise ValueError(f"two pipelines are labelled {dup[0]!r}: give them distinct names (Pipeline(..., name=...))")
    return out


def split_rows(X: np.ndarray, models: Sequence[str], benchmarks: Sequence[str], train: np.ndarray, val: np.ndarray, *,
               pipelines: Sequence[Pipeline], protocol: CVProtocol, seeds: FitSeeds, fold: int, meta: dict[str, Any],
               timings: dict[str, float] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Fit every pipeline on one (train, validation) split and score it (protocol steps 3-7).

    ``protocol`` (its ``k_max`` resolved, :meth:`CVProtocol.for_matrix`) gives
    every option but the split and its ``seeds``. Returns the result rows (one
    per pipeline and ``k``) and the top-residual records. Cost: per pipeline
    one :meth:`~benchsel_lib.method.pipeline.Pipeline.fit_path` on the
    training rows (correlations from the protocol's cache) and one prediction
    of the validation rows per ``k``; scoring is O(v N) per ``k``.
    """
    tm = timings if timings is not None else {}
    t0 = time.perf_counter()
    Xtr_full = X[train]
    cols = kept_columns(Xtr_full, protocol.min_train_observed)
    Xtr = Xtr_full[:, cols]
    Xtr = Xtr[(~np.isnan(Xtr)).any(axis=1)]
    Xva = X[np.ix_(val, cols)]
    names = [benchmarks[j] for j in cols]
    evaluation = fit_standardizer(Xtr, std_floor="relative")
    validation = _Validation(Xva, ~np.isnan(Xva), np.clip(evaluation.transform(Xva), -protocol.clip, protocol.clip),
                             evaluation, names, [models[i] for i in val])

    def correlate(correlation: Correlation, values: np.ndarray, standardized: np.ndarray) -> np.ndarray:
        t = time.perf_counter()
        try:
            return cache.cached_correlation(correlation, values, standardized=standardized)
        finally:
            tm["correlation"] += time.perf_counter() - t  # set by the loop below before any call

    tm["standardize"] = tm.get("standardize", 0.0) + (time.perf_counter() - t0)
    base = dict(n_train=int(Xtr.shape[0]), n_val=int(len(val)), n_dropped=int(X.shape[1] - cols.size))
    scored: list[tuple[list[dict], list[dict]]] = []  # the rows and top residuals of every pipeline
    where = (np.asarray(val, dtype=np.int64), cols.astype(np.int64), X.shape[1]) if protocol.keep_entries else None
    for pipe in pipelines:
        t1 = time.perf_counter()
        before = tm.setdefault("correlation", 0.0)
        path = pipe.fit_path(Xtr, names=names, k_max=min(int(protocol.k_max), cols.size), ks=protocol.ks, seeds=seeds,
                             correlate=correlate, intervals=bool(protocol.levels), unreached=protocol.unreached)
        t2 = time.perf_counter()
        tm["selection"] = tm.get("selection", 0.0) + (t2 - t1) - (tm["correlation"] - before)
        scored.append(_score_path(pipe.label, path, validation, protocol=protocol, fold=fold, meta=meta, base=base,
                                  where=where))
        tm["imputation+metrics"] = tm.get("imputation+metrics", 0.0) + (time.perf_counter() - t2)
    return [row for rows, _ in scored for row in rows], [top for _, tops in scored for top in tops]


@dataclass
class _StepScores:
    """One size's scored entries ``E`` (of the targets ``T``) and squared residuals ``res2`` on the validation rows.

    ``E_all``, ``res2_all``: every held-out model's observed targets; ``reached``: rows that observe a revealed one.
    """

    T: np.ndarray
    truth: np.ndarray
    E: np.ndarray
    res2: np.ndarray
    E_all: np.ndarray
    res2_all: np.ndarray
    reached: np.ndarray

    @classmethod
    def of(cls, held: HeldOut, truth_all: np.ndarray, sel: np.ndarray, T: np.ndarray, pred: np.ndarray) -> _StepScores:
        """Score the predictions ``pred`` (evaluation space, validation rows x ``T``) by ``held.unreached``. O(v |T|)."""
        truth = truth_all[:, T]
        sq = (truth - pred) ** 2
        E, E_all = held.scored(sel, targets=T), held.observed[:, T]
        res2 = np.where(E, sq, 0.0)
        res2_all = res2 if held.unreached == "mean" else np.where(E_all, sq, 0.0)
        return cls(T, truth, E, res2, E_all, res2_all, held.reached(sel))

    def metrics(self) -> dict[str, Any]:
        """The row's R^2 columns: the protocol's (``r2, rmse, n_eval, ss_res, ss_tot``) and every model's. O(v |T|)."""
        ss_res, ss_res_all = float(self.res2.sum()), float(self.res2_all.sum())
        ss_tot = float(np.where(self.E, self.truth**2, 0.0).sum())
        ss_tot_all = float(np.where(self.E_all, self.truth**2, 0.0).sum())
        n_eval, n_reached = int(self.E.sum()), int(self.reached.sum())
        return dict(r2=r2_from_sums(ss_res, ss_tot), rmse=float(np.sqrt(ss_res / n_eval)) if n_eval else np.nan,
                    n_eval=n_eval, ss_res=ss_res, ss_tot=ss_tot,
                    reach=n_reached / self.reached.size if self.reached.size else np.nan, n_reached=n_reached,
                    r2_all=r2_from_sums(ss_res_all, ss_tot_all), n_eval_all=int(self.E_all.sum()),
                    ss_res_all=ss_res_all, ss_tot_all=ss_tot_all)

    def entries(self, where: tuple[np.ndarray, np.ndarray, int]) -> ScoredEntries:
        """The scored entries in the matrix's coordinates, with those the rule leaves out as ``unreached``."""
        val, cols, n_benchmarks = where

        def pick(E: np.ndarray, res2: np.ndarray) -> ScoredEntries:
            i, j = np.nonzero(E)
            index = val[i] * n_benchmarks + cols[self.T[j]]
            order = np.argsort(index, kind="stable")
            return ScoredEntries(index=index[order], sq_residual=res2[i, j][order],
                                 sq_truth=(self.truth[i, j] ** 2)[order])

        return dataclasses.replace(pick(self.E, self.res2), unreached=pick(self.E_all & ~self.E, self.res2_all))


@dataclass(frozen=True)
class _Validation:
    """A split's validation rows in its columns; ``truth``: standardized by ``evaluation`` and clipped."""

    X: np.ndarray
    observed: np.ndarray
    truth: np.ndarray
    evaluation: Any
    names: Sequence[str]
    models: Sequence[str]


def _score_path(label: str, path: FittedPath, val: _Validation, *, protocol: CVProtocol, fold: int,
                meta: dict[str, Any], base: dict[str, Any],
                where: tuple[np.ndarray, np.ndarray, int] | None = None) -> tuple[list[dict], list[dict]]:
    """Rows and top residuals of one fitted path on the validation rows (steps 5-7). O(v N) per size.

    ``where``: the validation rows, split columns and number of columns of the matrix, to keep ``entries`` (None: not).
    """
    if not path.steps:
        return [], []
    fs, levels, names, ev = path.scaling, protocol.levels, val.names, val.evaluation
    z_val = fs.transform(val.X)
    held = HeldOut(z_val, val.observed, protocol.unreached)
    to_eval = ((lambda v, cols: v) if fs.smax is None  # the pipeline's space is the evaluation space
               else lambda v, cols: (fs.inverse(v, cols) - ev.mean[cols]) / ev.std[cols])
    rows, tops = [], []
    # the entries scored at every size of the path (in the split's columns), for the same-entries R^2
    scored_sq: list[tuple[np.ndarray, np.ndarray]] = []
    for step, sp in zip(path.steps, path.predict(z_val)):
        T, sel = sp.targets, step.selected
        s = _StepScores.of(held, val.truth, sel, T, to_eval(sp.mean, T))
        full_E, full_res2 = np.zeros(val.observed.shape, dtype=bool), np.zeros(val.observed.shape)
        full_E[:, T], full_res2[:, T] = s.E, s.res2
        scored_sq.append((full_E, full_res2))
        row: dict[str, Any] = dict(meta)
        row.update(pipeline=label, fold=fold, k=step.k, **s.metrics(), **step.diagnostics,
                   selected=tuple(names[j] for j in sel), **base)
        if path.n_forced is not None:
            row["n_forced"] = path.n_forced
        if where is not None:
            row["entries"] = s.entries(where)
        if step.choice is not None:
            row.update(choice=step.choice.name, inner_r2=step.choice.inner_r2)
        if levels:
            _coverage(row, sp, s.E, s.truth, z_val, T, to_eval, levels, search=step.choice is not None)
        rows.append(row)
        tops.extend(dict(meta, pipeline=label, fold=fold, k=step.k, **t)
                    for t in _top_records(s.res2, T, row["ss_res"], row["n_eval"], names, val.models))
    common = np.logical_and.reduce([e for e, _ in scored_sq])
    tot_c = float((val.truth[common] ** 2).sum())
    for row, (_, res2) in zip(rows, scored_sq):
        res_c = float(res2[common].sum())
        row.update(r2_common=r2_from_sums(res_c, tot_c), n_common=int(common.sum()), ss_res_common=res_c,
                   ss_tot_common=tot_c)
    return rows, tops


def _top_records(res2: np.ndarray, T: np.ndarray, ss_res: float, n_eval: int, names: Sequence[str],
                 vnames: Sequence[str]) -> list[dict[str, Any]]:
    """The (at most :data:`_N_TOP`) largest squared residuals of one size, largest first. O(v |T|)."""
    out: list[dict[str, Any]] = []
    if not n_eval:
        return out
    flat = res2.ravel()
    nt = min(_N_TOP, flat.size)
    top = np.argpartition(flat, flat.size - nt)[flat.size - nt:]
    top = top[np.argsort(flat[top])[::-1]]
    for rank, t in enumerate(top):
        if flat[t] <= 0 and rank > 0:
            break
        i, jj = divmod(int(t), T.size)
        out.append(dict(rank=rank + 1, model=vnames[i], benchmark=names[int(T[jj])], sq_residual=float(flat[t]),
                        share=float(flat[t] / ss_res) if ss_res > 0 else np.nan))
    return out


def _coverage(row: dict[str, Any], sp: Any, E: np.ndarray, truth: np.ndarray, z_val: np.ndarray, T: np.ndarray,
              to_eval: Any, levels: Sequence[float], *, search: bool) -> None:
    """Add one row's coverage columns (``cov_50`` ..., and for Gaussian intervals ``mean_sq_z``, ``inflation``,
    ``cov_50_cal`` ...; see :func:`cross_validate`'s ``levels``)."""
    n_eval = int(E.sum())

    def hits(bounds: Any) -> float:
        if bounds is None or not n_eval:
            return np.nan
        lo, hi = to_eval(bounds[0], T), to_eval(bounds[1], T)
        return float(((truth >= lo) & (truth <= hi))[E].mean())

    for lev in levels:
        row[coverage_column(lev)] = hits(sp.interval(lev))
    if search:
        return
    if sp.var is None or not sp.has_intervals:
        row["mean_sq_z"] = np.nan
        return
    zres = (z_val[:, T] - sp.mean) / np.sqrt(sp.var)
    row["mean_sq_z"] = float(np.mean(zres[E] ** 2)) if n_eval else np.nan
    if sp.inflation is not None:
        row["inflation"] = float(sp.inflation)
        for lev in levels:
            row[coverage_column(lev) + "_cal"] = hits(sp.interval(lev, inflated=True))


@dataclass
class _CVPlan:
    """A validated :func:`cross_validate` call: its splits (``folds``) and per-split options (``kw``).

    It is the protocol's unit of the out-of-fold engine: called on a split, :func:`split_rows` with its timings.
    """

    X: np.ndarray
    models: Sequence[str]
    benchmarks: Sequence[str]
    kw: dict[str, Any]  # pipelines, protocol and label
    folds: list[Fold] = dataclasses.field(default_factory=list)  # holdout by holdout (``meta["holdout"]``), by fold
    attrs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __call__(self, fold: Fold) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, float]]:
        tm: dict[str, float] = {}
        pr, h, f = self.kw["protocol"], fold.meta["holdout"], fold.index
        rows, tops = split_rows(self.X, self.models, self.benchmarks, fold.train, fold.held, protocol=pr, fold=f,
                                pipelines=self.kw["pipelines"], seeds=split_seeds(pr.seed, f, h, pr.scheme),
                                meta={"holdout": h}, timings=tm)
        return rows, tops, tm


def _run_split_group(X: np.ndarray, models: Sequence[str], benchmarks: Sequence[str],
                     members: Sequence[tuple[Fold, dict[str, Any]]], cache_root: str | None = None) -> list[tuple]:
    """One sweep cell: every run (fold and options) on one split, sharing its correlation estimate.

    ``cache_root``: the disk-cache folder of the process that laid out the sweep, whatever this worker's environment.
    """
    with cache.cache_root(cache_root), cache.correlation_cache():
        return list(run_folds([(fold, _CVPlan(X, models, benchmarks, kw)) for fold, kw in members]))


def _sweep(jobs: Sequence[tuple[Fold, _CVPlan]], *, n_jobs: int | None, progress: bool | None) -> list[Any]:
    """The protocol's runner of the out-of-fold engine: jobs on the same matrix and split share one sweep cell.

    The cost (training rows x N^2, ten times more with missing entries, times the runs) orders the submission.
    """
    groups: dict[tuple, list[int]] = {}
    digests: dict[int, str] = {}
    for j, (fold, unit) in enumerate(jobs):
        key = id(unit.X)
        if key not in digests:
            digests[key] = hashlib.sha256(repr(unit.X.shape).encode() + unit.X.tobytes()).hexdigest()
        groups.setdefault((digests[key], fold.train.tobytes(), fold.held.tobytes()), []).append(j)
    cells, root = [], cache.active_root()
    for members in groups.values():
        fold, unit = jobs[members[0]]
        cost = (float(fold.train.size) * unit.X.shape[1] ** 2 * (10.0 if np.isnan(unit.X[fold.train]).any() else 1.0)
                * (1.0 + 0.2 * (len(members) - 1)))
        label = (f"{unit.kw['label']} holdout={fold.meta['holdout']:g} fold={fold.index}"
                 + (f" ({len(members)} runs)" if len(members) > 1 else ""))
        runs = [(jobs[j][0], jobs[j][1].kw) for j in members]
        cells.append(Cell(label, _run_split_group, (unit.X, unit.models, unit.benchmarks, runs, root), cost=cost))
    results = run_sweep(cells, n_jobs=n_jobs, progress=progress, desc="cv")
    by_job = {j: r for members, res in zip(groups.values(), results) for j, r in zip(members, res)}
    return [by_job[j] for j in range(len(jobs))]


_ORDER = ("pipeline", "holdout", "fold", "k")
_METRICS = ("r2", "rmse", "residual_fraction", "logdet", "mi", "selected", "n_eval", "n_train", "n_val",
            "n_dropped", "ss_res", "ss_tot", "r2_common", "n_common", "ss_res_common", "ss_tot_common", "reach",
            "n_reached", "r2_all", "n_eval_all", "ss_res_all", "ss_tot_all", "n_forced", "choice", "inner_r2",
            "entries")


def _cv_frame(plan: _CVPlan, collected: Sequence[tuple[list, list, dict]]) -> pd.DataFrame:
    """The frame of one plan from its per-split results: keys, other split keys, :data:`_METRICS`, coverage."""
    timings: Counter[str] = Counter()
    for *_, tm in collected:
        timings.update(tm)
    df = pd.DataFrame([row for r, _, _ in collected for row in r])
    scored = set(df["pipeline"]) if len(df) else set()
    for label in plan.attrs["pipelines"]:
        if label not in scored:  # otherwise an empty frame, or a missing pipeline, says nothing of why
            warnings.warn(f"pipeline {label!r} selected no benchmark in any split of {plan.kw['label']}: its candidate "
                          "filters (min_observed) or exclusions leave none, so it has no rows", UserWarning,
                          stacklevel=5)
    if len(df):
        cover = [c for c in df.columns if c.startswith("cov_") or c in ("mean_sq_z", "inflation")]
        meta = [c for c in df.columns if c not in _ORDER and c not in _METRICS and c not in cover]
        cols = list(_ORDER) + meta + [c for c in _METRICS if c in df.columns] + cover
        df = df[cols].sort_values(list(_ORDER), kind="stable").reset_index(drop=True)
    df.attrs.update(plan.attrs)
    df.attrs["timings"] = dict(timings)
    df.attrs["top_residuals"] = Records(t for _, ts, _ in collected for t in ts)
    return df


def _run_plans(plans: Sequence[_CVPlan], *, n_jobs: int | None, progress: bool | None) -> list[pd.DataFrame]:
    """Run the splits of every plan through the out-of-fold engine as one sweep (:func:`_sweep`); a frame per plan."""
    jobs = [(fold, plan) for plan in plans for fold in plan.folds]
    results = run_folds(jobs, run=functools.partial(_sweep, n_jobs=n_jobs, progress=progress))
    return [_cv_frame(plan, [next(results) for _ in plan.folds]) for plan in plans]


def cv_grid(runs: Sequence[dict[str, Any]], *, n_jobs: int | None = None,
            progress: bool | None = None) -> list[pd.DataFrame]:
    """Run several :func:`cross_validate` calls as one sweep.

    Every (run, holdout, fold) split is a cell of one
    :func:`~benchsel_lib.protocol.sweep.run_sweep`, interleaved over the
    workers, largest first. Runs on the same matrix with the same training
    and validation rows share one cell and each correlation estimate.

    Parameters
    ----------
    runs : sequence of dict
        Each ``dict(matrix=..., pipelines=..., **options)`` with the options
        of :func:`cross_validate` but ``n_jobs``, ``progress`` and ``return_details``.
    n_jobs : int or None
        Workers, as in :func:`~benchsel_lib.protocol.sweep.run_sweep`.
    progress : bool or None
        One progress bar over all cells.

    Returns
    -------
    list of DataFrame
        ``[cross_validate(**run) for run in runs]``, bit for bit.

    Raises
    ------
    ValueError
        A run lacks ``matrix``, has an option :func:`cross_validate` does not
        take, or an option it rejects; bad ``n_jobs``.
    benchsel_lib.protocol.sweep.SweepError
        A cell failed (named in the message).

    Notes
    -----
    Complexity: the sum of the runs' :func:`cross_validate` costs, less one
    correlation estimate per estimator for each run that shares a cell, plus
    O(M N) per distinct matrix to hash it; the wall time is divided over the workers.
    """
    check_n_jobs(n_jobs)
    plans = []
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or "matrix" not in run:
            raise ValueError(f"run {i} must be a dict with a 'matrix' and cross_validate options")
        protocol = _with_options(None, {k: v for k, v in run.items() if k not in ("matrix", "pipelines")}, run=i)
        plans.append(_cv_plan(run["matrix"], run.get("pipelines", ("entropy", "random")), protocol))
    return _run_plans(plans, n_jobs=n_jobs, progress=progress)


@dataclass(frozen=True)
class CVProtocol:
    """The options of the cross-validation protocol, validated once.

    Its fields are the options of :func:`cross_validate` (its "Other
    Parameters"); ``k_max=None`` is resolved for a matrix by :meth:`for_matrix`.
    """

    holdouts: tuple[float, ...] = (0.1,)
    k_max: int | None = None
    ks: tuple[int, ...] | None = None
    n_folds: int = 10
    seed: int = 0
    scheme: str = "nested"
    levels: tuple[float, ...] = ()
    clip: float = PROTOCOL_CLIP
    unreached: str = "skip"
    min_train_observed: int = 1
    keep_entries: bool = False

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        set_("seed", check_seed(self.seed))
        set_("n_folds", check_int(self.n_folds, "n_folds", minimum=2))
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown scheme {self.scheme!r}: use one of {SCHEMES}")
        check_unreached(self.unreached)
        set_("clip", check_clip(self.clip))
        set_("holdouts", _check_fractions(self.holdouts, "holdouts", closed_low=True))
        levels = () if self.levels is None else self.levels  # None: no interval levels, as ()
        set_("levels", _check_fractions(levels, "levels", closed_low=False) if len(np.atleast_1d(levels)) else ())
        set_("min_train_observed", check_int(self.min_train_observed, "min_train_observed"))
        set_("keep_entries", check_bool(self.keep_entries, "keep_entries"))
        if self.k_max is not None:
            set_("k_max", check_int(self.k_max, "k_max"))
            set_("ks", check_ks(self.ks, self.k_max))

    def for_matrix(self, n_benchmarks: int) -> CVProtocol:
        """This protocol with ``k_max`` resolved for a matrix of ``n_benchmarks`` benchmarks. O(1).

        Raises
        ------
        ValueError
            ``k_max`` of ``n_benchmarks`` or more, or fewer than 2 benchmarks.
        """
        if n_benchmarks < 2:
            raise ValueError(f"cross-validation needs at least 2 benchmarks, the matrix has {n_benchmarks}")
        if self.k_max is None:
            return dataclasses.replace(self, k_max=min(DEFAULT_K_MAX, n_benchmarks - 1))
        if self.k_max > n_benchmarks - 1:
            raise ValueError(f"k_max={self.k_max} is out of range: the matrix has {n_benchmarks} benchmarks, choose "
                             f"1..{n_benchmarks - 1} (selecting every benchmark leaves nothing to predict)")
        return self


#: the options of :func:`cross_validate`: the fields of :class:`CVProtocol`, in their order
_FIELDS = tuple(f.name for f in dataclasses.fields(CVProtocol))


def _check_fractions(values: Any, what: str, *, closed_low: bool) -> tuple[float, ...]:
    items = [values] if np.ndim(values) == 0 else list(values)  # a scalar, or a sequence (array) of numbers
    if any(isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) for v in items):
        raise ValueError(f"{what} must be a number or a sequence of numbers, got {values!r}")
    out = tuple(float(v) for v in items)
    if not out:
        raise ValueError(f"{what} is empty")
    for v in out:
        if not ((0.0 <= v if closed_low else 0.0 < v) and v < 1.0):
            raise ValueError(f"{what} must be in {'[0, 1)' if closed_low else '(0, 1)'}, got {v!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"{what} lists a value twice: {out}")
    return out


def _check_plan_pipelines(pipes: Sequence[Pipeline], protocol: CVProtocol, benchmarks: Sequence[str]) -> None:
    """Warn of a pipeline seed or ``k`` the protocol does not use; refuse unknown names, or more forced than k_max."""
    for p in pipes:
        if p.seed != 0:
            warnings.warn(f"pipeline {p.label!r} has seed={p.seed}, which cross-validation does not use: every random "
                          f"stream of the protocol (folds, random selections, inner folds) derives from its own seed "
                          f"({protocol.seed}), so that the pipelines see the same draws; vary that seed instead",
                          UserWarning, stacklevel=4)
        if p.k != type(p)().k:  # set by the user, not the class's default
            sizes = f"ks={list(protocol.ks)}" if protocol.ks is not None else f"every size 1..k_max={protocol.k_max}"
            warnings.warn(f"pipeline {p.label!r} has k={p.k}, which cross-validation does not use: it scores "
                          f"{sizes} for every pipeline; pass ks=[{p.k}] to score that size", UserWarning,
                          stacklevel=4)
        for sel in p.component("selector"):
            if len(sel.initial) > protocol.k_max:
                raise ValueError(f"pipeline {p.label!r} forces {len(sel.initial)} benchmarks, "
                                 f"more than k_max={protocol.k_max}")
            sel.check_names(benchmarks)  # an unknown mandatory or excluded benchmark is an error


def _plan_folds(X: np.ndarray, protocol: CVProtocol) -> list[Fold]:
    """The checked (holdout, fold) splits of ``protocol`` on ``X``: warn of holdouts with the same training sets,
    refuse a split where ``min_train_observed`` drops every benchmark. O(H K M N)."""
    folds = CVSplits(protocol.n_folds, protocol.holdouts, protocol.seed, protocol.scheme).folds(X.shape[0])
    by_h = {h: [fold for fold in folds if fold.meta["holdout"] == h] for h in protocol.holdouts}
    for a, b in zip(protocol.holdouts, protocol.holdouts[1:]):
        if all(np.array_equal(x.train, y.train) for x, y in zip(by_h[a], by_h[b])):
            warnings.warn(f"holdouts {a:g} and {b:g} give the same training sets: with {protocol.n_folds} folds of "
                          f"{X.shape[0]} models a training set holds at most the {max(len(x.train) for x in by_h[a])} "
                          "models outside its validation fold", UserWarning, stacklevel=4)
    for fold in folds:
        if kept_columns(X[fold.train], protocol.min_train_observed).size == 0:
            raise ValueError(f"min_train_observed={protocol.min_train_observed} drops every benchmark in fold "
                             f"{fold.index} (holdout {fold.meta['holdout']:g}): its {len(fold.train)} training models "
                             f"observe a benchmark at most {int((~np.isnan(X[fold.train])).sum(axis=0).max())} times")
    return folds


def _cv_plan(matrix: ScoreMatrix, pipelines: Any, protocol: CVProtocol) -> _CVPlan:
    """Check the matrix and pipelines against ``protocol`` and lay out its splits. O(H K M N).

    A constant or mixed-scale column is reported as a :class:`~benchsel_lib.data.matrix.ScoreWarning`, and kept.
    """
    check_matrix(matrix)
    protocol = protocol.for_matrix(len(matrix.benchmarks))
    pipes = check_pipelines(pipelines)
    _check_plan_pipelines(pipes, protocol, matrix.benchmarks)
    X = np.asarray(matrix.scores, dtype=float)
    folds = _plan_folds(X, protocol)
    for problem in matrix.column_problems():
        tail = (": cross-validation keeps it among the candidates, as the paper's protocol does"
                if problem.kind == "constant" else "")
        warnings.warn(problem.message + tail, ScoreWarning, stacklevel=3)
    attrs = dict(source=matrix.source, shape=matrix.shape, **dataclasses.asdict(protocol),
                 pipelines=SharedMap((p.label, p) for p in pipes))
    return _CVPlan(X=X, models=list(matrix.models), benchmarks=list(matrix.benchmarks), folds=folds,
                   kw=dict(pipelines=pipes, protocol=protocol, label=str(matrix.source or "matrix")), attrs=attrs)


def _with_options(protocol: CVProtocol | None, options: dict[str, Any], *, run: int | None = None) -> CVProtocol:
    """``protocol`` (default ``CVProtocol()``) with the fields in ``options`` replaced, the older ``unconditioned``
    read as ``unreached`` (a FutureWarning; both at once: TypeError). Unknown ones are a TypeError, or for run
    ``run`` of :func:`cv_grid` a ValueError naming the run."""
    options = dict(options)
    if "unconditioned" in options:
        if "unreached" in options:
            raise TypeError("got both unreached= and unconditioned=: pass unreached= only")
        warnings.warn("unconditioned= is deprecated and will be removed: use unreached= (it takes the same values)",
                      FutureWarning, stacklevel=3)
        options["unreached"] = options.pop("unconditioned")
    if protocol is not None and not isinstance(protocol, CVProtocol):
        raise ValueError(f"protocol must be a CVProtocol, got {type(protocol).__name__}")
    bad = [key for key in options if key not in _FIELDS]
    if bad and run is not None:
        own = sorted(set(bad) & {"n_jobs", "progress", "return_details"})
        raise ValueError(f"run {run}: {own[0]!r} is set by cv_grid itself" if own else
                         f"run {run}: {sorted(bad)[0]!r} is not an option of cross_validate "
                         f"(options: {', '.join(sorted(_FIELDS))})")
    if bad:
        raise TypeError(f"cross_validate() got an unexpected keyword argument {bad[0]!r} (its options are the "
                        f"fields of CVProtocol: {', '.join(_FIELDS)})")
    return dataclasses.replace(protocol or CVProtocol(), **options)


def cross_validate(matrix: ScoreMatrix, pipelines: Any = ("entropy", "random"), *, protocol: CVProtocol | None = None,
                   n_jobs: int | None = None, progress: bool | None = None, return_details: bool = False,
                   **options: Any) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """K-fold cross-validation of pipelines, as Section 5.1 (the module docstring's steps).

    The options are the fields of :class:`CVProtocol`: pass a ``protocol``,
    its fields as keywords (``holdouts=(0.1,), k_max=15, seed=42,
    scheme="paper"``), or both (the keywords replace its fields).

    Parameters
    ----------
    matrix : ScoreMatrix
        Models x benchmarks; every row and column needs an observation. For
        the model-selection dual pass ``matrix.transpose()``.
    pipelines : Pipeline, name, or a sequence of them
        What is evaluated (:class:`~benchsel_lib.method.pipeline.Pipeline`);
        names as :meth:`~benchsel_lib.method.pipeline.Pipeline.from_name` takes
        them (``"entropy"``, ``"mi"``, ``"random"``, ``"auto"``, ``"SELECTOR+PREDICTOR"``).
        A pipeline's own options live in it: ``Pipeline.paper(objective="mi", config="early")``.
    protocol : CVProtocol, optional
        The protocol (default ``CVProtocol()``).
    n_jobs : int or None
        Workers over the (holdout, fold) splits, as in :func:`~benchsel_lib.protocol.sweep.run_sweep`
        (the results are bit for bit the same); a failing split raises its
        :class:`~benchsel_lib.protocol.sweep.SweepError`, named.
    progress : bool or None
        Progress bar (None: only in a terminal or notebook; False: silent).
    return_details : bool
        Also return the top-residual frame.

    Other Parameters
    ----------------
    holdouts : sequence of float
        Holdout fractions ``p`` in ``[0, 1)`` (default ``(0.1,)``).
    k_max : int, optional
        Largest subset size, at most the number of benchmarks minus one
        (default: the paper's 15, capped there). A split or selector with
        fewer usable benchmarks stops there.
    ks : sequence of int, optional
        Report only these sizes (each in ``1..k_max``; default all).
        Selections still run to ``k_max``; predictions and a search's inner
        cross-validation are skipped at the other sizes.
    n_folds : int
        ``K`` (default 10, as in the paper).
    seed : int
        Non-negative (default 0); every random stream derives from it, the
        same for every pipeline (a pipeline's own ``seed`` is not used: a
        ``UserWarning`` says so when it is not 0).
    scheme : {"nested", "paper"}
        Random layout of folds and training sets (default ``"nested"``;
        :func:`~benchsel_lib.protocol.splits.cv_splits`); ``"paper"`` gives the
        paper's own folds for its seed 42.
    levels : sequence of float
        Nominal levels for interval coverage (default none), e.g. ``(0.5,
        0.9)``: column ``cov_50`` etc. holds the share of evaluated entries
        inside the pipeline's central interval (NaN without variances).
        Gaussian intervals add ``mean_sq_z`` (mean of ``r^2 / var``, 1 when
        calibrated) and, with a fitted variance inflation, ``inflation`` and
        ``cov_50_cal`` ...
    clip : float
        Evaluated validation scores are clipped to ``[-clip, clip]`` (default 10).
    unreached : {"skip", "mean"}
        Step 5's rule for a validation model that observes no selected
        benchmark (default ``"skip"``, as the paper's code).
    min_train_observed : int
        Benchmarks with fewer observed training scores leave a split (default 1).
    keep_entries : bool
        Add the column ``entries`` (each row's :class:`~benchsel_lib.protocol.summaries.ScoredEntries`).
        Off by default (O(n_eval_all) per row).

    Returns
    -------
    pandas.DataFrame
        One row per (pipeline, holdout, fold, k): ``pipeline, holdout, fold,
        k, r2, rmse, residual_fraction, logdet, mi`` (of the selection on the
        training correlation; NaN for a search), ``selected, n_eval, n_train,
        n_val, n_dropped, ss_res, ss_tot``, ``r2_common, n_common,
        ss_res_common, ss_tot_common`` (step 6; NaN where no entry is common),
        ``reach, n_reached, r2_all, n_eval_all, ss_res_all, ss_tot_all``
        (step 7), and ``n_forced`` with mandatory benchmarks, ``choice,
        inner_r2`` for a search, ``entries``, coverage columns.
        ``df.attrs["top_residuals"]``: read-only records of the (up to 3)
        largest squared residuals per row (:func:`~benchsel_lib.protocol.summaries.top_residuals`);
        ``df.attrs["timings"]``: seconds per stage; ``df.attrs["pipelines"]``:
        label -> pipeline. With ``return_details=True`` a tuple ``(df, top_residuals_frame)``.

    Notes
    -----
    Cost per (holdout, fold): one correlation estimate per estimator (EM:
    O(iter M N^3) worst case), one selection per pipeline (O(k N^2) entropy),
    and per ``k`` one solve per distinct observed-selected pattern
    (O(k^3 + k^2 N)) plus O(v N) evaluation; a search adds its inner
    cross-validation.
    """
    check_n_jobs(n_jobs)
    check_bool(return_details, "return_details")
    if progress is not None:
        check_bool(progress, "progress")
    plan = _cv_plan(matrix, pipelines, _with_options(protocol, options))
    df = _run_plans([plan], n_jobs=n_jobs, progress=progress)[0]
    return (df, top_residuals(df)) if return_details else df
