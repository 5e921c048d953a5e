"""The paper's cross-validation protocol (Section 5.1) and prediction diagnostics.

Protocol (Section 5.1, with the settings of the paper's code release), implemented by
:func:`cross_validate`:

1. The ``M`` models are randomly permuted and split into ``K`` balanced folds
   (sizes differ by at most one; :func:`fold_assignments`). Each fold is the
   validation set once, so the validation set is always ~M/K models; the
   holdout fraction only shrinks the training set.
2. From the pool (the other folds) a training set of ``round((1 - p) M)``
   models is drawn by a second permutation (capped at the pool size, so at
   ``p = 10%`` with ``K = 10`` it *is* the pool). One permutation of the pool
   per fold is used for every holdout, so training sets are nested across
   holdouts (less noise when comparing holdouts).
3. Scores are standardized with the training means and standard deviations
   (``fit_standardizer(std_floor="relative")``: ``n - 1`` denominator, std
   floored at ``0.01 (|mean| + 1)``). Benchmarks with fewer than ``min_train_observed``
   (default 1) observed training scores cannot be standardized; they are left
   out of that split (neither selectable nor evaluated) and counted in
   ``n_dropped``.
4. The correlation is estimated from the training rows only
   (:func:`~benchsel_lib.estimation.estimate_correlation` with ``method=estimator``,
   ``config=config`` and ``context="cv"``: EM stops when the relative change
   of Sigma falls below ``5e-4``); one estimate per (holdout, fold) is shared
   by all selection methods.
5. Each method selects on the training correlation (one greedy run of length
   ``k_max``; greedy selections are nested, so its prefixes give every
   ``k``). The random baseline draws a fresh permutation per fold.
   ``residual_fraction``, ``logdet`` and ``mi`` are those of the selection on
   the training correlation.
6. Standardized validation scores are clipped to ``[-clip, clip]``. Each
   validation model is conditioned only on the selected benchmarks it has
   observed (Eq. cond-mean with mean 0, ridge ``1e-2`` on the observed block),
   and only its observed unselected entries are evaluated. A model that
   observes none of the selected benchmarks is not scored at that ``k``
   (``unconditioned="skip"``, as in the paper's numbers; ``"mean"`` scores
   it with the training mean instead).
7. ``r2 = 1 - SS_res / SS_tot`` over all evaluated entries of the fold, with
   ``SS_tot = sum z^2`` (predicting 0 = predicting the training mean);
   ``rmse = sqrt(SS_res / n_eval)``.

With ``transform="logit"`` (Appendix K) the correlation, selection and
imputation run on logit scores (``smax`` fitted on the training rows), the
predictions are mapped back to raw units and ``r2`` is computed in raw-score
space standardized with the training statistics.

Random streams are derived from ``seed`` with :class:`numpy.random.SeedSequence`
and fixed spawn keys: ``(0,)`` fold permutation, ``(1, fold)`` training
subsample, ``(2, fold)`` random selection, ``(3, fold)`` inner folds of the
variance inflation. ``scheme="paper"`` replaces the first three by the
streams of the paper's code release (:func:`cv_splits`), so seed 42 gives
the paper's own folds. The same seed always gives the same DataFrame.
"""
from __future__ import annotations

import hashlib
import inspect
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri

from .._checks import check_int, resolve_indices
from .._random import check_seed, int_seed, rng
from ..data import ScoreMatrix
from ..method.base import Imputer
from ..method.correlation import inner_correlation
from ..method.gaussian import GaussianImputer, batched_conditional
from ..method.predictors import make_predictor
from ..method.scaling import ModelSpace, model_space
from ..method.search import block_predictions, parse_pipeline, pipeline_path
from ..method.selection import select
from . import cache
from .splits import SCHEMES, cv_splits, selection_stream
from .summaries import Records, coverage_column, top_residuals
from .sweep import Cell, check_n_jobs, run_sweep

__all__ = [
    "cross_validate",
    "cv_grid",
    "UNCONDITIONED",
    "inflation_factors",
    "split_rows",
]


_METHODS = ("entropy", "mi", "random")


_N_TOP = 3


def _run_task(X, models, benchmarks, h, f, train, val, kw):
    tm: dict[str, float] = {}
    r, t = split_rows(X, models, benchmarks, train, val, fold=f, meta={"holdout": h}, timings=tm, **kw)
    return r, t, tm


def _imputer_predict(
    imputer: Any, R: np.ndarray, Ztr: np.ndarray, Zv: np.ndarray, Ov: np.ndarray, sel: np.ndarray, T: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    query = np.full_like(Zv, np.nan)
    query[:, sel] = np.where(Ov[:, sel], Zv[:, sel], np.nan)
    if hasattr(imputer, "predict_distribution"):
        mean, var = imputer.predict_distribution(Ztr, query, cov=R)
        mean, var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
    else:
        mean, var = np.asarray(imputer.predict(Ztr, query, cov=R), dtype=float), None
    if mean.shape != Zv.shape:
        raise ValueError(f"imputer {getattr(imputer, 'name', imputer)!r} returned shape {mean.shape}, expected {Zv.shape}")
    return mean[:, T], (None if var is None else np.maximum(var[:, T], 1e-12))


def _predict(
    imputer: Any, gaussian: bool, R: np.ndarray, Ztr: np.ndarray, Zv: np.ndarray, Ov: np.ndarray,
    sel: np.ndarray, T: np.ndarray, ridge: float,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Predictions (and variances, None if the imputer gives none) of targets ``T`` from ``sel``."""
    if gaussian:
        return batched_conditional(R, Zv, Ov, sel, T, ridge)
    return _imputer_predict(imputer, R, Ztr, Zv, Ov, sel, T)


def _prefixes(sels: dict[str, Any], k_eff: int, N: int) -> Iterator[tuple[str, Any, int, np.ndarray, np.ndarray]]:
    """``(method, selection, k, selected, targets)`` for every greedy prefix ``k = 1..k_eff``.

    Greedy selections are nested, so the first ``k`` of one run of length
    ``k_eff`` is the selection of size ``k``; the targets are the rest.
    """
    for m, S in sels.items():
        order = np.asarray(S.order, dtype=int)
        for k in range(1, min(k_eff, order.size) + 1):
            sel = order[:k]
            mask = np.ones(N, dtype=bool)
            mask[sel] = False
            yield m, S, k, sel, np.flatnonzero(mask)


UNCONDITIONED = ("skip", "mean")


def _evaluated(Ov: np.ndarray, sel: np.ndarray, T: np.ndarray, unconditioned: str) -> np.ndarray:
    """Which (validation row, target) entries are scored (protocol step 6).

    Observed unselected entries are scored. Under ``unconditioned="skip"``
    (the paper's numbers) a row that observes none of the selected
    benchmarks ``sel`` is not scored at all; under ``"mean"`` it is scored
    with its prediction, the training mean. O(v |T|).
    """
    E = Ov[:, T]
    if unconditioned == "skip":
        E = E & Ov[:, sel].any(axis=1)[:, None]
    return E


def _interval_hits(
    space: ModelSpace, pred: np.ndarray, sd: np.ndarray, T: np.ndarray, truth: np.ndarray, levels: Sequence[float]
) -> list[np.ndarray]:
    """For each level, a bool array: is the truth inside the central Gaussian interval?

    The interval ``pred +- q sd`` is built in the model's standardized space
    and mapped to the evaluation space (monotone per column, so for the logit
    transform this is the interval mapped through the inverse transform).
    """
    out = []
    for lev in levels:
        q = float(ndtri(0.5 + lev / 2.0))
        lo = space.to_eval(pred - q * sd, T)
        hi = space.to_eval(pred + q * sd, T)
        out.append((truth >= lo) & (truth <= hi))
    return out


def _select(R: np.ndarray, k: int, method: str, *, seed: int, names: list[str], tie_break: Any,
            min_observed: int | None, counts: np.ndarray, initial: Sequence[int] = ()) -> Any:

    kwargs: dict[str, Any] = dict(method=method, names=names, observed_counts=counts, initial=list(initial))
    if method == "random":
        kwargs["seed"] = seed
    if tie_break is not None:
        kwargs["tie_break"] = tie_break
    if min_observed is not None:
        kwargs["min_observed"] = min_observed
    return select(R, k, **kwargs)


def split_rows(
    X: np.ndarray,
    models: Sequence[str],
    benchmarks: Sequence[str],
    train: np.ndarray,
    val: np.ndarray,
    *,
    methods: Sequence[str],
    k_max: int,
    estimator: str,
    config: str,
    transform: str | None,
    imputer: Any,
    tie_break: Any,
    min_observed: int | None,
    ridge: float,
    clip: float,
    levels: Sequence[float],
    variance_inflation: str | None,
    inner_folds: int,
    seed: int,
    fold: int,
    meta: dict[str, Any],
    min_train_observed: int = 1,
    timings: dict[str, float] | None = None,
    initial: Sequence[str] = (),
    scheme: str = "nested",
    unconditioned: str = "skip",
    ks: Sequence[int] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run every method on one (train, validation) split; return result rows and top-residual records.

    ``initial`` (benchmark names) are forced first picks; those left out of
    this split (too few training scores) are skipped, and rows then carry
    ``n_forced`` = how many were applied. ``unconditioned`` is the rule for
    validation models that observe none of the selected benchmarks (see
    :func:`cross_validate`).
    """
    tm = timings if timings is not None else {}
    t0 = time.perf_counter()
    Xtr_full = X[train]
    cnt_full = (~np.isnan(Xtr_full)).sum(axis=0)
    cols = np.flatnonzero(cnt_full >= max(min_train_observed, 1))
    n_dropped = X.shape[1] - cols.size
    Xtr = Xtr_full[:, cols]
    keep_tr = (~np.isnan(Xtr)).any(axis=1)
    Xtr = Xtr[keep_tr]
    Xva = X[np.ix_(val, cols)]
    names = [benchmarks[j] for j in cols]
    vnames = [models[i] for i in val]
    N = cols.size
    counts = (~np.isnan(Xtr)).sum(axis=0)
    space = model_space(Xtr, Xva, transform, clip)
    t1 = time.perf_counter()
    R = cache.cached_correlation(space.fit_train, estimator, config)
    t2 = time.perf_counter()
    tm["standardize"] = tm.get("standardize", 0.0) + (t1 - t0)
    tm["correlation"] = tm.get("correlation", 0.0) + (t2 - t1)
    Ov = ~np.isnan(Xva)
    Zv = space.z_val
    gaussian = isinstance(imputer, GaussianImputer)
    g_ridge = imputer.ridge if gaussian else ridge

    col_of = {b: i for i, b in enumerate(names)}
    init = [col_of[b] for b in initial if b in col_of]  # forced picks present in this split
    forced = np.zeros(N, dtype=bool)
    forced[init] = True
    n_cand = N if min_observed is None else int(((counts >= min_observed) | forced).sum())
    k_eff = min(k_max, N, max(n_cand, 0))
    rows: list[dict[str, Any]] = []
    tops: list[dict[str, Any]] = []
    if k_eff < 1:
        return rows, tops
    pipes = [m for m in methods if m not in _METHODS]  # "auto" and "strategy+predictor" pipelines
    methods = [m for m in methods if m in _METHODS]
    sels = {
        m: _select(R, k_eff, m, seed=selection_stream(seed, fold, meta["holdout"], scheme), names=names,
                   tie_break=tie_break,
                   min_observed=min_observed, counts=counts, initial=init)
        for m in methods
    }
    t3 = time.perf_counter()
    tm["selection"] = tm.get("selection", 0.0) + (t3 - t2)
    infl: dict[str, np.ndarray] = {}
    if levels and variance_inflation:
        infl = inflation_factors(space, R, sels, k_eff, estimator=estimator, config=config, ridge=g_ridge,
                          imputer=imputer, gaussian=gaussian, inner_folds=inner_folds,
                          rng=rng(seed, 3, fold), unconditioned=unconditioned)
    t4 = time.perf_counter()
    tm["inflation"] = tm.get("inflation", 0.0) + (t4 - t3)
    for m, S, k, sel, T in _prefixes(sels, k_eff, N):
        if ks is not None and k not in ks:
            continue
        mi_arr = getattr(S, "mi", None)
        pred, var = _predict(imputer, gaussian, R, space.z_train, Zv, Ov, sel, T, g_ridge)
        E = _evaluated(Ov, sel, T, unconditioned)
        truth = space.truth[:, T]
        pe = space.to_eval(pred, T)
        res2 = np.where(E, (truth - pe) ** 2, 0.0)
        ss_res = float(res2.sum())
        ss_tot = float(np.where(E, truth**2, 0.0).sum())
        n_eval = int(E.sum())
        row: dict[str, Any] = dict(meta)
        row.update(
            method=m,
            fold=fold,
            k=k,
            r2=(1.0 - ss_res / ss_tot) if n_eval and ss_tot > 0 else np.nan,
            rmse=float(np.sqrt(ss_res / n_eval)) if n_eval else np.nan,
            residual_fraction=float(S.residual_fraction[k - 1]),
            logdet=float(S.logdet[k - 1]),
            mi=float(mi_arr[k - 1]) if mi_arr is not None and len(mi_arr) >= k else np.nan,
            selected=tuple(names[j] for j in sel),
            n_eval=n_eval,
            n_train=int(Xtr.shape[0]),
            n_val=int(len(val)),
            n_dropped=int(n_dropped),
            ss_res=ss_res,
            ss_tot=ss_tot,
        )
        if len(initial):
            row["n_forced"] = len(init)
        if levels:
            if var is None:
                for lev in levels:
                    row[coverage_column(lev)] = np.nan
                row["mean_sq_z"] = np.nan
            else:
                sd = np.sqrt(var)
                hits = _interval_hits(space, pred, sd, T, truth, levels)
                for lev, h in zip(levels, hits):
                    row[coverage_column(lev)] = float(h[E].mean()) if n_eval else np.nan
                # standardized residual in the model's space (logit space for transform="logit")
                zres = (space.z_val[:, T] - pred) / sd
                row["mean_sq_z"] = float(np.mean(zres[E] ** 2)) if n_eval else np.nan
                if m in infl:
                    s = float(infl[m][k - 1])
                    row["inflation"] = s
                    hits = _interval_hits(space, pred, sd * np.sqrt(s), T, truth, levels)
                    for lev, h in zip(levels, hits):
                        row[coverage_column(lev) + "_cal"] = float(h[E].mean()) if n_eval else np.nan
        rows.append(row)
        if n_eval:
            flat = res2.ravel()
            nt = min(_N_TOP, flat.size)
            top = np.argpartition(flat, flat.size - nt)[flat.size - nt:]
            top = top[np.argsort(flat[top])[::-1]]
            for rank, t in enumerate(top):
                if flat[t] <= 0 and rank > 0:
                    break
                i, jj = divmod(int(t), T.size)
                tops.append(dict(meta, method=m, fold=fold, k=k, rank=rank + 1, model=vnames[i],
                                 benchmark=names[int(T[jj])], sq_residual=float(flat[t]),
                                 share=float(flat[t] / ss_res) if ss_res > 0 else np.nan))
    if pipes:

        base = dict(meta, fold=fold, n_train=int(Xtr.shape[0]), n_val=int(len(val)), n_dropped=int(n_dropped))
        if len(initial):
            base["n_forced"] = len(init)
        for m in pipes:
            rows.extend(_pipeline_rows(
                m, z_train=space.z_train, z_val=Zv, truth=space.truth, to_eval=space.to_eval, R=R, k_max=k_eff,
                seed=int_seed(seed, 6, fold), initial=init, min_observed=min_observed, levels=levels,
                unconditioned=unconditioned, names=names, base=base, ks=ks))
    tm["imputation+metrics"] = tm.get("imputation+metrics", 0.0) + (time.perf_counter() - t4)
    return rows, tops


def inflation_factors(
    space: ModelSpace, R_outer: np.ndarray, sels: dict[str, Any], k_eff: int, *, estimator: str, config: str,
    ridge: float, imputer: Any, gaussian: bool, inner_folds: int, rng: np.random.Generator,
    unconditioned: str = "skip",
) -> dict[str, np.ndarray]:
    """Variance-inflation factors fitted on the training rows only (inner cross-validation).

    The training rows are split into ``inner_folds`` folds; for each, the
    correlation is re-estimated on the other inner folds (same estimator;
    benchmarks with < 2 inner-training scores get an identity row/column),
    and, for the *outer* selection prefix of each ``k``, the squared
    standardized residuals ``r^2 / var`` of the inner validation rows are
    collected. The factor is their mean, so that after scaling the
    conditional variances by it the mean squared standardized residual is 1.
    Cost: ``inner_folds`` extra correlation estimates per split.
    """
    m_tr = space.fit_train.shape[0]
    labels = np.empty(m_tr, dtype=int)
    for f, chunk in enumerate(np.array_split(rng.permutation(m_tr), inner_folds)):
        labels[chunk] = f
    N = R_outer.shape[0]
    sums = {m: np.zeros(k_eff) for m in sels}
    cnts = {m: np.zeros(k_eff) for m in sels}
    for f in range(inner_folds):
        tr = labels != f
        va = labels == f
        Xin = space.fit_train[tr]
        c = (~np.isnan(Xin)).sum(axis=0)
        ok = np.flatnonzero(c >= 2)
        Xin = Xin[:, ok]
        Xin = Xin[(~np.isnan(Xin)).any(axis=1)]
        if Xin.shape[0] < 2 or ok.size == 0:
            continue
        Rin = np.eye(N)
        Rin[np.ix_(ok, ok)] = cache.cached_correlation(Xin, estimator, config)
        Zv = space.z_train[va]
        Ov = ~np.isnan(Zv)
        for m, _, k, sel, T in _prefixes(sels, k_eff, N):
            pred, var = _predict(imputer, gaussian, Rin, space.z_train[tr], Zv, Ov, sel, T, ridge)
            if var is None:
                continue
            E = _evaluated(Ov, sel, T, unconditioned)
            z2 = ((Zv[:, T] - pred) ** 2 / var)[E]
            sums[m][k - 1] += z2.sum()
            cnts[m][k - 1] += z2.size
    return {m: np.where(cnts[m] > 0, sums[m] / np.maximum(cnts[m], 1), 1.0) for m in sels}


def check_common(
    matrix: object, methods: Sequence[str], k_max: int, ridge: float, clip: float, transform: str | None,
    levels: Sequence[float], imputer: Any, min_observed: int | None, variance_inflation: str | None,
) -> tuple[ScoreMatrix, tuple[str, ...], tuple[float, ...], Any]:
    if not isinstance(matrix, ScoreMatrix):
        raise ValueError(f"matrix must be a ScoreMatrix, got {type(matrix).__name__}")
    matrix.require_observed()
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(methods)
    if not methods:
        raise ValueError("methods is empty")
    for m in methods:
        if m not in _METHODS:
            try:

                parse_pipeline(m)
            except ValueError as exc:
                raise ValueError(f"unknown selection method {m!r}; expected one of {_METHODS}, 'auto' or "
                                 f"'STRATEGY+PREDICTOR' ({exc})") from None
    if len(set(methods)) != len(methods):
        raise ValueError(f"methods lists a method twice: {methods}")
    check_int(k_max, "k_max")
    if not np.isfinite(ridge) or ridge < 0:
        raise ValueError(f"ridge must be a non-negative number, got {ridge!r}")
    if not np.isfinite(clip) or clip <= 0:
        raise ValueError(f"clip must be a positive number, got {clip!r}")
    if transform not in (None, "logit"):
        raise ValueError(f"unknown transform {transform!r}; expected None or 'logit'")
    levels = tuple(float(lv) for lv in levels)
    for lv in levels:
        if not 0.0 < lv < 1.0:
            raise ValueError(f"coverage levels must be in (0, 1), got {lv!r}")
    if imputer is None:
        imputer = GaussianImputer(ridge=ridge)
    elif not isinstance(imputer, Imputer):
        raise ValueError(f"imputer must implement the Imputer protocol (name, predict), got {type(imputer).__name__}")
    if min_observed is not None and (
        isinstance(min_observed, bool) or not isinstance(min_observed, (int, np.integer)) or min_observed < 0
    ):
        raise ValueError(f"min_observed must be a non-negative integer or None, got {min_observed!r}")
    if variance_inflation not in (None, False, "inner"):
        raise ValueError(f"unknown variance_inflation {variance_inflation!r}; expected None or 'inner'")
    return matrix, methods, levels, imputer


@dataclass
class _CVPlan:
    """A validated :func:`cross_validate` call: its splits (``tasks``) and per-split options (``kw``)."""

    X: np.ndarray
    models: list[str]
    benchmarks: list[str]
    tasks: list[tuple[float, int, np.ndarray, np.ndarray]]  # (holdout, fold, train, val)
    kw: dict[str, Any]
    attrs: dict[str, Any]
    label: str


def _run_split_group(
    X: np.ndarray, models: Sequence[str], benchmarks: Sequence[str],
    members: Sequence[tuple[float, int, np.ndarray, np.ndarray, dict[str, Any]]], cache_root: str | None = None,
) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, float]]]:
    """One sweep cell: every run on one (train, validation) split, sharing its correlation estimate.

    ``cache_root`` is the disk-cache folder of the process that laid out the
    sweep (None: no disk cache), used here whatever this worker's environment.
    """
    with cache.cache_root(cache_root), cache.correlation_cache():
        return [_run_task(X, models, benchmarks, h, f, tr, va, kw) for h, f, tr, va, kw in members]


def _split_cells(plans: Sequence[_CVPlan]) -> tuple[list[Any], list[list[tuple[int, int]]]]:
    """Sweep cells for the splits of ``plans``; runs on the same matrix and rows share one cell.

    Returns the cells and, per cell, the ``(plan, task)`` index of each of its
    members. The cost estimate (training rows x N^2, ten times more where EM
    runs on missing entries, times the runs in the cell) only orders the
    submission.
    """

    groups: dict[tuple, list[tuple[int, int]]] = {}
    digests: dict[int, str] = {}
    for p, plan in enumerate(plans):
        key = id(plan.X)
        if key not in digests:
            digests[key] = hashlib.sha256(repr(plan.X.shape).encode() + plan.X.tobytes()).hexdigest()
        for t, (h, f, tr, va) in enumerate(plan.tasks):
            g = (digests[key], tr.tobytes(), va.tobytes())
            groups.setdefault(g, []).append((p, t))
    cells, index = [], []
    root = cache.active_root()
    for members in groups.values():
        p0, t0 = members[0]
        plan = plans[p0]
        h, f, tr, va = plan.tasks[t0]
        sparse = bool(np.isnan(plan.X[tr]).any())
        cost = float(tr.size) * plan.X.shape[1] ** 2 * (10.0 if sparse else 1.0) * (1.0 + 0.2 * (len(members) - 1))
        runs = [(plans[p].tasks[t][0], plans[p].tasks[t][1], plans[p].tasks[t][2], plans[p].tasks[t][3],
                 plans[p].kw) for p, t in members]
        label = f"{plan.label} holdout={h:g} fold={f}" + (f" ({len(members)} runs)" if len(members) > 1 else "")
        cells.append(Cell(label, _run_split_group, (plan.X, plan.models, plan.benchmarks, runs, root), cost=cost))
        index.append(members)
    return cells, index


def _cv_frame(plan: _CVPlan, collected: Sequence[tuple[list, list, dict]]) -> pd.DataFrame:
    """The :func:`cross_validate` frame of one plan from its per-split results (in task order)."""
    rows: list[dict[str, Any]] = []
    tops: list[dict[str, Any]] = []
    timings: dict[str, float] = {}
    for r, t, tm in collected:
        rows.extend(r)
        tops.extend(t)
        for key, val_ in tm.items():
            timings[key] = timings.get(key, 0.0) + val_
    df = pd.DataFrame(rows)
    if len(df):
        order = ["method", "holdout", "fold", "k"]
        df = df[order + [c for c in df.columns if c not in order]]
        df = df.sort_values(["method", "holdout", "fold", "k"], kind="stable").reset_index(drop=True)
    df.attrs.update(plan.attrs)
    df.attrs["timings"] = timings
    df.attrs["top_residuals"] = Records(tops)
    return df


def _run_plans(plans: Sequence[_CVPlan], *, n_jobs: int | None, progress: bool | None) -> list[pd.DataFrame]:
    """Run the splits of every plan as one sweep (:func:`~benchsel_lib.sweep.run_sweep`); one frame per plan."""

    cells, index = _split_cells(plans)
    results = run_sweep(cells, n_jobs=n_jobs, progress=progress, desc="cv")
    per_plan: list[list[Any]] = [[None] * len(p.tasks) for p in plans]
    for members, res in zip(index, results):
        for (p, t), r in zip(members, res):
            per_plan[p][t] = r
    return [_cv_frame(plan, coll) for plan, coll in zip(plans, per_plan)]


_GRID_EXCLUDED = ("n_jobs", "progress", "return_details")


def cv_grid(
    runs: Sequence[dict[str, Any]], *, n_jobs: int | None = None, progress: bool | None = None
) -> list[pd.DataFrame]:
    """Run several :func:`cross_validate` calls as one sweep: the grid entry point.

    Every (run, holdout, fold) split becomes a cell of one
    :func:`~benchsel_lib.sweep.run_sweep`, so the splits of several matrices,
    holdouts, methods and settings are interleaved over the workers, largest
    first. Runs on the same matrix with the same training and validation rows
    (e.g. other methods or tie-break rules with the same seed) share one cell
    and pay for the correlation estimate once.

    Parameters
    ----------
    runs : sequence of dict
        Each ``dict(matrix=..., **options)`` with the keyword options of
        :func:`cross_validate` (all but ``n_jobs``, ``progress`` and
        ``return_details``).
    n_jobs : int or None
        Workers, as in :func:`~benchsel_lib.sweep.run_sweep` (None: as
        ``joblib.parallel_config`` says; 1 = serially in this process).
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
    benchsel_lib.sweep.SweepError
        A cell failed (named in the message).
    """

    check_n_jobs(n_jobs)
    allowed = set(inspect.signature(_cv_plan).parameters) - {"matrix"}
    plans = []
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or "matrix" not in run:
            raise ValueError(f"run {i} must be a dict with a 'matrix' and cross_validate options")
        opts = {k: v for k, v in run.items() if k != "matrix"}
        bad = sorted(set(opts) - allowed)
        if bad:
            where = "is set by cv_grid itself" if set(bad) & set(_GRID_EXCLUDED) else "is not an option of cross_validate"
            raise ValueError(f"run {i}: {bad[0]!r} {where}")
        plans.append(_cv_plan(run["matrix"], **opts))
    return _run_plans(plans, n_jobs=n_jobs, progress=progress)


def _cv_plan(
    matrix: ScoreMatrix,
    *,
    methods: Sequence[str] = ("entropy", "random"),
    holdouts: Sequence[float] = (0.1,),
    k_max: int = 15,
    n_folds: int = 10,
    seed: int = 0,
    estimator: str = "auto",
    config: str = "released",
    transform: str | None = None,
    imputer: Imputer | None = None,
    tie_break: Any = "auto",
    min_observed: int | None = None,
    initial: Sequence[int | str] = (),
    ridge: float = 1e-2,
    clip: float = 10.0,
    levels: Sequence[float] = (),
    variance_inflation: str | None = None,
    inner_folds: int = 3,
    min_train_observed: int = 1,
    scheme: str = "nested",
    unconditioned: str = "skip",
    ks: Sequence[int] | None = None,
) -> _CVPlan:
    """Validate the options of :func:`cross_validate` and lay out its (holdout, fold) splits."""
    matrix, methods, levels, imputer = check_common(
        matrix, methods, k_max, ridge, clip, transform, levels, imputer, min_observed, variance_inflation
    )
    seed = check_seed(seed)
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}: use one of {SCHEMES}")
    if unconditioned not in UNCONDITIONED:
        raise ValueError(f"unknown unconditioned rule {unconditioned!r}: use one of {UNCONDITIONED}")
    hs = tuple(float(h) for h in ([holdouts] if np.isscalar(holdouts) else holdouts))
    if not hs:
        raise ValueError("holdouts is empty")
    for h in hs:
        if not 0.0 <= h < 1.0:
            raise ValueError(f"holdout fractions must be in [0, 1), got {h!r}")
    if len(set(hs)) != len(hs):
        raise ValueError(f"holdouts lists a fraction twice: {hs}")
    check_int(inner_folds, "inner_folds", minimum=2)

    init_names = tuple(matrix.benchmarks[j] for j in
                       resolve_indices(initial, len(matrix.benchmarks), matrix.benchmarks, what="initial benchmark"))
    if len(init_names) > k_max:
        raise ValueError(f"initial lists {len(init_names)} benchmarks, more than k_max={k_max}")
    if ks is not None:
        ks_in = list(ks) if not np.isscalar(ks) else [ks]
        if not ks_in or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 1 <= k <= k_max
                                for k in ks_in):
            raise ValueError(f"ks={ks!r} is out of range: give subset sizes in 1..k_max={k_max}")
        ks = tuple(sorted({int(k) for k in ks_in}))
    X = np.asarray(matrix.scores, dtype=float)
    M = X.shape[0]
    splits = {h: cv_splits(M, n_folds=n_folds, holdout=h, seed=seed, scheme=scheme) for h in hs}
    tasks = [(h, f, tr, va) for h in hs for (f, tr, va) in splits[h]]
    kw = dict(methods=methods, k_max=int(k_max), estimator=estimator, config=config, transform=transform,
              imputer=imputer, tie_break=tie_break, min_observed=min_observed, ridge=ridge, clip=clip,
              levels=levels, variance_inflation=variance_inflation or None, inner_folds=int(inner_folds),
              seed=seed, min_train_observed=int(min_train_observed), initial=init_names, scheme=scheme,
              unconditioned=unconditioned, ks=ks)
    attrs = dict(source=matrix.source, shape=matrix.shape, seed=seed, n_folds=int(n_folds), estimator=estimator,
                 config=config, transform=transform, imputer=getattr(imputer, "name", type(imputer).__name__),
                 ridge=ridge, clip=clip, levels=levels, min_observed=min_observed, initial=init_names,
                 scheme=scheme, unconditioned=unconditioned)
    return _CVPlan(X=X, models=list(matrix.models), benchmarks=list(matrix.benchmarks), tasks=tasks, kw=kw,
                   attrs=attrs, label=str(matrix.source or "matrix"))


def cross_validate(
    matrix: ScoreMatrix,
    *,
    methods: Sequence[str] = ("entropy", "random"),
    holdouts: Sequence[float] = (0.1,),
    k_max: int = 15,
    n_folds: int = 10,
    seed: int = 0,
    estimator: str = "auto",
    config: str = "released",
    transform: str | None = None,
    imputer: Imputer | None = None,
    tie_break: Any = "auto",
    min_observed: int | None = None,
    initial: Sequence[int | str] = (),
    ridge: float = 1e-2,
    clip: float = 10.0,
    levels: Sequence[float] = (),
    variance_inflation: str | None = None,
    inner_folds: int = 3,
    min_train_observed: int = 1,
    scheme: str = "nested",
    unconditioned: str = "skip",
    ks: Sequence[int] | None = None,
    n_jobs: int | None = None,
    progress: bool | None = None,
    return_details: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """K-fold cross-validation of selection + imputation, exactly as Section 5.1.

    See the module docstring for the protocol rules. One correlation estimate
    per (holdout, fold) is shared by all methods, and one selection run of
    length ``k_max`` per method and fold serves every ``k`` (greedy
    selections are nested; the random baseline is a permutation prefix).

    Parameters
    ----------
    matrix : ScoreMatrix
        Models x benchmarks; every row and column needs an observation. For
        the model-selection dual pass ``matrix.transpose()``.
    methods : sequence of {"entropy", "mi", "random"}
    holdouts : sequence of float
        Holdout fractions ``p`` in ``[0, 1)``; training size ``round((1-p) M)``
        capped at the pool size.
    k_max : int
        Largest subset size; capped at the number of usable benchmarks (and of
        candidates when ``min_observed`` filters).
    ks : sequence of int, optional
        Report only these subset sizes (each in ``1..k_max``; default every
        ``k = 1..k_max``).  Selections still run to ``k_max`` (the greedy
        prefixes are the same); the imputation and, for pipelines, the inner
        cross-validation are skipped at the other sizes.
    n_folds : int
        ``K`` (10 in the paper).
    seed : int
        Non-negative; all random streams derive from it (module docstring).
    estimator : {"auto", "pairwise", "em"}
        Passed to ``estimate_correlation(method=...)``.
    config : {"released", "early"}
        EM settings passed to ``estimate_correlation``.
    transform : None or "logit"
        Appendix K pipeline (r2 in raw-score standardized space).
    imputer : Imputer, optional
        Default :class:`~benchsel_lib.imputation.GaussianImputer` with
        ``ridge`` (vectorized fast path). Any object with ``name`` and
        ``predict(train, query, *, cov)`` is accepted.
    tie_break, min_observed
        Passed to :func:`~benchsel_lib.selection.select`; ``min_observed``
        counts training models with the benchmark observed (None = no
        filter, the paper).
    initial : sequence of str or int
        Mandatory benchmarks (names or column indices of ``matrix``), forced
        as the first picks of every method in the given order (passed to
        ``select(initial=...)``, paper Section 6; :func:`first_pick_band`
        forces one first pick per run). A forced benchmark
        that a split leaves out (fewer than ``min_train_observed`` training
        scores, so it cannot be standardized or correlated) is skipped in
        that split and greedy runs without it; the rows then get a column
        ``n_forced`` (forced picks applied in that split). Forced picks are
        never removed by ``min_observed``. At most ``k_max`` entries.
    ridge : float
        Ridge on the conditioning block (``1e-2``).
    clip : float
        Standardized validation scores are clipped to ``[-clip, clip]``
        (both the conditioning inputs and the evaluated truth).
    levels : sequence of float
        Nominal levels for interval coverage, e.g. ``(0.5, 0.8, 0.9, 0.95)``.
        For each, column ``cov_50`` etc. holds the fraction of evaluated
        entries inside the central Gaussian interval
        ``pred +- z_{(1+L)/2} sqrt(var)`` with ``var`` the conditional
        variance (Eq. cond-var, ridge included) in standardized space (for
        ``transform="logit"`` the interval is built in logit space and mapped
        back). ``mean_sq_z`` is the mean of ``r^2 / var`` (1 when calibrated).
        Imputers without ``predict_distribution`` give NaN coverage.
    variance_inflation : None or "inner"
        A documented calibration fix: ``"inner"`` fits, per split and using
        training rows only, a factor ``s`` (``inner_folds``-fold inner CV,
        mean of ``r^2 / var`` = 1 after scaling) per method and ``k``;
        adds ``inflation`` and ``cov_50_cal`` etc. columns.
    inner_folds : int
        Inner folds for ``variance_inflation="inner"``.
    min_train_observed : int
        Benchmarks with fewer observed training scores are left out of a
        split (default 1: only benchmarks no training model has; the paper
        states no such rule).
    scheme : {"nested", "paper"}
        Random layout of folds and training sets, see :func:`cv_splits`.
        ``"paper"`` gives the paper's own folds for its seed (42) and draws
        the random baseline from ``default_rng((seed + 7, fold,
        int(holdout * 10000)))`` as its code does.
    unconditioned : {"skip", "mean"}
        What happens to a validation model that observes none of the
        selected benchmarks. Section 5.1 says each model is conditioned "only
        on selected benchmarks observed for that validation model"; for a
        model with none there is nothing to condition on, and the text admits
        two readings. ``"skip"`` (default): the model is not scored at that
        ``k``, which is how the paper's numbers are computed (its code skips
        such models). ``"mean"``: it is predicted by the training mean (0 in
        standardized space) and scored, which lowers R^2 on sparse matrices
        (Merged, BenchPress), where small selections often miss a model.
    n_jobs : int or None
        Workers over the (holdout, fold) splits, through
        :func:`~benchsel_lib.sweep.run_sweep` (joblib): ``1`` runs serially in
        this process, ``N > 1`` in ``N`` loky processes with one BLAS thread
        each, ``None`` (default) as the active ``joblib.parallel_config``
        says (serial when none is set; inside
        ``joblib.parallel_config(backend="dask")`` or
        :func:`~benchsel_lib.sweep.dask_backend` on every worker of the Dask
        cluster). Results do not depend on the backend or the number of
        workers, bit for bit: every random stream is keyed by seed, holdout
        and fold. A failing split raises
        :class:`~benchsel_lib.sweep.SweepError` naming it.
    progress : bool or None
        Progress bar (None: only in a terminal or notebook; False: silent).
    return_details : bool
        Also return the top-residual frame (see below).

    Returns
    -------
    pandas.DataFrame
        One row per (method, holdout, fold, k): ``method, holdout, fold, k,
        r2, rmse, residual_fraction, logdet, mi, selected, n_eval, n_train,
        n_val, n_dropped, ss_res, ss_tot`` (+ coverage columns).
        ``df.attrs["top_residuals"]`` is a read-only sequence of records (one per
        (method, holdout, fold, k, rank), rank 1..3) with ``model,
        benchmark, sq_residual, share`` -- the largest squared standardized
        residual contributors, so a collapsing fold is visible; see
        :func:`top_residuals`. ``df.attrs["timings"]`` holds the seconds
        spent per stage (standardize, correlation, selection, inflation,
        imputation+metrics; summed over splits and workers). With
        ``return_details=True`` a tuple ``(df, top_residuals_frame)``.

    Notes
    -----
    Cost per (holdout, fold): one correlation estimate (EM: O(iter M N^3)
    worst case), one selection per method (O(k N^2) entropy), and per ``k``
    one Cholesky + solve per distinct observed-selected pattern
    (O(k^3 + k^2 N)) plus O(v N) evaluation.
    """
    check_n_jobs(n_jobs)
    plan = _cv_plan(
        matrix, methods=methods, holdouts=holdouts, k_max=k_max, n_folds=n_folds, seed=seed, estimator=estimator,
        config=config, transform=transform, imputer=imputer, tie_break=tie_break, min_observed=min_observed,
        initial=initial, ridge=ridge, clip=clip, levels=levels, variance_inflation=variance_inflation,
        inner_folds=inner_folds, min_train_observed=min_train_observed, scheme=scheme, unconditioned=unconditioned,
        ks=ks,
    )
    df = _run_plans([plan], n_jobs=n_jobs, progress=progress)[0]
    if return_details:
        return df, top_residuals(df)
    return df


def _pipeline_rows(
    name: str, *, z_train: np.ndarray, z_val: np.ndarray, truth: np.ndarray, to_eval: Any, R: np.ndarray,
    k_max: int, seed: int, initial: Sequence[int], min_observed: int | None, levels: Sequence[float],
    unconditioned: str, names: Sequence[str], base: dict[str, Any], ks: Sequence[int] | None = None,
) -> list[dict[str, Any]]:
    """Cross-validation rows of one pipeline on one split (used by :func:`benchsel_lib.cross_validate`).

    ``name`` is ``"auto"`` or ``"strategy+predictor"``.  The pipeline sees
    the standardized training rows ``z_train`` and correlation ``R`` only;
    validation rows ``z_val`` reveal their observed selected benchmarks and
    are scored on their observed unselected ones against ``truth`` (the
    protocol's steps 6-7; ``to_eval`` maps predictions to the evaluation
    space).  Coverage columns use the conformal intervals.  Rows carry
    ``choice`` (the pipeline used at that ``k``) and ``inner_r2``.
    """
    pair = parse_pipeline(name)
    # A fixed pair uses the protocol's correlation ``R`` (so "mi+gaussian" is the paper's pipeline); "auto"
    # is refit the way its inner cross-validation scored it (pairwise correlation of the training rows).
    cov = R if pair is not None else inner_correlation(z_train)
    kw: dict[str, Any] = dict(cov=cov, seed=seed, initial=initial, min_observed=min_observed, levels=levels)
    if pair is not None:
        kw.update(strategies=(pair[0],), predictors=(pair[1],), stack=False)
        if not levels and pair[1] != "stack":
            kw["n_folds"] = 2  # no search and no intervals: the inner CV is skipped
    if ks is not None:
        ks = [k for k in ks if k <= k_max]
        if not ks:
            return []
    recs = [rec for rec in pipeline_path(z_train, k_max, ks=ks, **kw) if len(rec.selection) >= rec.k]
    Ov = ~np.isnan(z_val)
    queries = []
    for rec in recs:
        sel = np.asarray(rec.selection, dtype=int)
        query = np.full_like(z_val, np.nan)
        query[:, sel] = np.where(Ov[:, sel], z_val[:, sel], np.nan)
        queries.append(query)
    if len({rec.predictor for rec in recs}) == 1 and recs[0].predictor != "stack":  # one plain predictor
        preds = block_predictions(make_predictor(recs[0].predictor), z_train,
                                   [(None, rec.k, q, None) for rec, q in zip(recs, queries)], cov)
    else:
        preds = [rec.predict(z_train, q, cov=cov) for rec, q in zip(recs, queries)]
    rows = []
    for rec, pred_all in zip(recs, preds):
        sel = np.asarray(rec.selection, dtype=int)
        N = z_val.shape[1]
        T = np.setdiff1d(np.arange(N), sel)
        pred = pred_all[:, T]
        E = Ov[:, T]
        if unconditioned == "skip":
            E = E & Ov[:, sel].any(axis=1)[:, None]
        tr_ = truth[:, T]
        pe = to_eval(pred, T)
        ss_res = float(np.where(E, (tr_ - pe) ** 2, 0.0).sum())
        ss_tot = float(np.where(E, tr_**2, 0.0).sum())
        n_eval = int(E.sum())
        row: dict[str, Any] = dict(base)
        row.update(method=name, k=rec.k, r2=(1.0 - ss_res / ss_tot) if n_eval and ss_tot > 0 else np.nan,
                   rmse=float(np.sqrt(ss_res / n_eval)) if n_eval else np.nan, residual_fraction=np.nan,
                   logdet=np.nan, mi=np.nan, selected=tuple(names[j] for j in sel), n_eval=n_eval,
                   ss_res=ss_res, ss_tot=ss_tot, choice=rec.name, inner_r2=rec.inner_r2)
        for lev in levels:
            col = coverage_column(lev)
            if n_eval and rec.scale is not None and np.isfinite(rec.quantiles.get(float(lev), np.nan)):
                lo, hi = rec.interval(pred_all, float(lev))
                lo_e, hi_e = to_eval(lo[:, T], T), to_eval(hi[:, T], T)
                row[col] = float(((tr_ >= lo_e) & (tr_ <= hi_e))[E].mean())
            else:
                row[col] = np.nan
        rows.append(row)
    return rows
