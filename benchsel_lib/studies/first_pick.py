"""Which first pick reproduces the paper's greedy-entropy curve (Algorithm 1, Section 5.1, Appendix I).

Greedy entropy (Algorithm 1) starts with the benchmark of largest variance.
On a correlation matrix every variance is 1, so the first step is a tie and
the rest of the sequence follows from how it is broken. The library breaks
it by an explicit rule (``tie_break`` of
:func:`~benchsel_lib.method.selection.select`); the paper's code takes
``numpy.argmax`` over the diagonal of ``Sigma * outer(d, d)``,
``d = 1 / sqrt(diag(Sigma))``, computed from the EM covariance. That diagonal
is 1 only up to rounding (``1 - 2^-53``, ``1``, ``1 + 2^-52``, ...), so its
argmax is the lowest-index benchmark whose entry happens to round highest:
a choice made by the last bits of the EM estimate.

:func:`first_pick_study` puts the candidates side by side on the same
cross-validation splits:

* the library's tie rules (``"auto"``, ``"argmax"``, ``"index"``, ``"mi"``),
  each a real cross-validation run;
* the paper's numeric path on this library's EM estimate (``"rounded"``),
  and the largest *covariance* diagonal (``"covariance"``), each rebuilt from
  a forced-first-pick band (every benchmark forced first in every split,
  greedy continuing by plain argmax as the paper's code does);
* a noise model of the paper's path: the rounding of each diagonal entry
  drawn at random (the covariance diagonal perturbed far below any
  statistical scale and far above the unit roundoff), giving the
  distribution of curves that implementations agreeing to ~1e-9 would
  produce.

:func:`describe_first_pick` turns the result into two plain sentences.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._checks import check_int, check_matrix
from .._random import check_seed, rng
from ..data import ScoreMatrix
from ..method.correlation import estimate_correlation
from ..method.covariance import cov_to_corr
from ..method.pipeline import Pipeline, clone
from ..method.selection import TIE_BREAKS, select
from ..protocol.cv import cross_validate
from ..protocol.splits import cv_splits

__all__ = [
    "PAPER_BENCHPRESS_ENTROPY",
    "PATH_RULES",
    "TIE_RULES",
    "FirstPickStudy",
    "describe_first_pick",
    "first_pick_study",
    "first_picks",
    "rounded_diagonal",
]

#: the paper's greedy-entropy R^2 on BenchPress at 10% holdout: k = 5 (Appendix I text and the table of
#: Appendix J) and k = 15 (Appendix I text); the appendix quotes no other subset size
PAPER_BENCHPRESS_ENTROPY: dict[int, float] = {5: 0.21, 15: 0.25}

#: the library's tie rules (``tie_break`` of :func:`~benchsel_lib.method.selection.select`)
TIE_RULES: tuple[str, ...] = TIE_BREAKS

#: first picks computed from the covariance: the paper's code path, and the largest covariance diagonal
PATH_RULES: tuple[str, ...] = ("rounded", "covariance")

_NOISE_STREAM = 7  # spawn key of the noise model's draws (keys 0-6 and 11-13 are in use elsewhere)
_VAR_FLOOR = 1e-12  # the floor under the variances before 1 / sqrt, as in the paper's code path


def rounded_diagonal(cov: np.ndarray) -> np.ndarray:
    """Diagonal of the correlation computed as ``Sigma * outer(d, d)``, ``d = 1 / sqrt(max(diag, 1e-12))``.

    Entry ``i`` is ``Sigma_ii * (d_i * d_i)`` in floating point: 1 up to a few
    units in the last place. Its ``numpy.argmax`` is the paper's first entropy
    pick (Algorithm 1 run on that matrix). O(N).

    Parameters
    ----------
    cov : array_like (N, N) or (N,)
        A covariance matrix, or its diagonal.

    Returns
    -------
    ndarray (N,)
    """
    c = np.asarray(cov, dtype=float)
    return _rounded(np.diagonal(c).copy() if c.ndim == 2 else c)


def _rounded(variances: np.ndarray) -> np.ndarray:
    """``v * (d * d)`` with ``d = 1 / sqrt(max(v, 1e-12))``, elementwise (any shape)."""
    d = 1.0 / np.sqrt(np.maximum(variances, _VAR_FLOOR))
    return variances * (d * d)


def first_picks(cov: np.ndarray, *, rules: Sequence[str] = TIE_RULES + PATH_RULES) -> dict[str, int]:
    """The first greedy-entropy pick (column index) of ``cov`` under each rule.

    Parameters
    ----------
    cov : array_like (N, N)
        A covariance matrix (for instance an EM estimate of standardized scores).
    rules : sequence of str
        Any of :data:`TIE_RULES` (Algorithm 1 on the unit-diagonal correlation
        ``cov_to_corr(cov)`` with that ``tie_break``) and :data:`PATH_RULES`:
        ``"rounded"`` -- ``numpy.argmax`` of :func:`rounded_diagonal`, the
        paper's code path; ``"covariance"`` -- the largest variance, i.e.
        Algorithm 1 on the covariance rather than the correlation.

    Returns
    -------
    dict
        rule -> column index.

    Raises
    ------
    ValueError
        An unknown rule, or ``cov`` not a finite square matrix.

    Notes
    -----
    Cost O(N^2) per tie rule (one greedy step), O(N^3) for ``"mi"`` (the
    complement precision diagonal of Algorithm 2), O(N) for the path rules.
    """
    c = np.asarray(cov, dtype=float)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or not np.isfinite(c).all():
        raise ValueError(f"cov must be a finite square matrix, got shape {c.shape}")
    bad = [r for r in rules if r not in TIE_RULES + PATH_RULES]
    if bad:
        raise ValueError(f"unknown rule(s) {bad}: use {TIE_RULES + PATH_RULES}")
    out: dict[str, int] = {}
    R = None
    for rule in rules:
        if rule == "rounded":
            out[rule] = int(np.argmax(rounded_diagonal(c)))
        elif rule == "covariance":
            out[rule] = int(np.argmax(np.diagonal(c)))
        else:
            R = cov_to_corr(c) if R is None else R
            out[rule] = int(select(R, 1, objective="entropy", tie_break=rule).order[0])
    return out


@dataclass(frozen=True)
class FirstPickStudy:
    """Result of :func:`first_pick_study`.

    Attributes
    ----------
    picks : DataFrame
        One row per fold: the first pick (benchmark name) under each rule, and
        ``n_top``, the number of benchmarks sharing the largest rounded
        diagonal value (``"rounded"`` takes the lowest-index one of them).
    curves : DataFrame
        Indexed by ``k``: ``paper`` (the reported values, NaN elsewhere), the
        mean R^2 over folds under each rule, and the noise model's ``noise_q05``,
        ``noise_median``, ``noise_q95``.
    sources : dict
        rule -> ``"cv"`` (its own cross-validation run) or ``"band"`` (rebuilt
        from the forced-first-pick band).
    matches : Series
        rule -> whether its curve equals the paper's value at every reported
        ``k`` to within ``tol`` (the paper reports two decimals).
    paper_percentile : Series
        Reported ``k`` -> share of noise-model curves at or below the paper's value.
    match_share : float
        Share of noise-model curves that match the paper at every reported ``k``.
    pick_share : Series
        Benchmark -> share of the noise model's first picks (over folds and draws).
    draws : ndarray (n_draws, n_k)
        The noise model's curves.
    band_gap : float
        Largest absolute difference between the ``"argmax"`` run and its
        rebuild from the band (0 when the first pick alone decides the curve).
    meta : dict
        Protocol and noise settings (``holdout, n_folds, seed, scheme, k_max,
        n_draws, jitter, tol, pipeline``).
    """

    picks: pd.DataFrame
    curves: pd.DataFrame
    sources: dict[str, str]
    matches: pd.Series
    paper_percentile: pd.Series
    match_share: float
    pick_share: pd.Series
    draws: np.ndarray
    band_gap: float
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def paper(self) -> dict[int, float]:
        """The reported values, ``k -> R^2``. O(number of subset sizes)."""
        p = self.curves["paper"].dropna()
        return {int(k): float(v) for k, v in p.items()}


def _base_pipeline(pipeline: Pipeline | None) -> Pipeline:
    base = Pipeline.paper(objective="entropy") if pipeline is None else pipeline
    if not isinstance(base, Pipeline):
        raise ValueError(f"pipeline must be a Pipeline, got {type(base).__name__}")
    sels = base.component("selector")
    if len(sels) != 1 or sels[0].objective != "entropy":
        raise ValueError("the first-pick study needs a pipeline with one entropy selector")
    if sels[0].initial:
        raise ValueError("the pipeline already forces its first pick (initial=...); give one without")
    if base.component("correlation").estimator == "fast":
        raise ValueError("the study needs the covariance estimate: use a correlation estimator other than 'fast'")
    return clone(base).set_params(selector=sels[0])


def _split_covariances(matrix: ScoreMatrix, base: Pipeline, *, holdout: float, n_folds: int, seed: int,
                       scheme: str) -> list[tuple[list[str], np.ndarray]]:
    """Per split: the training benchmarks and the covariance the pipeline's correlation comes from.

    The training rows are prepared as the protocol prepares them (benchmarks
    observed at least once, models observing something) and scaled by the
    pipeline's scaling.
    """
    X = matrix.scores
    names = list(matrix.benchmarks)
    corr = base.component("correlation")
    scaling = base.component("scaling")
    out = []
    for _, tr, _ in cv_splits(X.shape[0], n_folds=n_folds, holdout=holdout, seed=seed, scheme=scheme):
        Xtr = X[tr]
        cols = np.flatnonzero((~np.isnan(Xtr)).sum(axis=0) >= 1)
        Xtr = Xtr[:, cols]
        Xtr = Xtr[(~np.isnan(Xtr)).any(axis=1)]
        values = scaling.fit(Xtr).values(Xtr)
        est = estimate_correlation(values, method=corr.estimator, config=corr.config, context="cv",
                                   std_floor="relative")
        out.append(([names[j] for j in cols], np.asarray(est.cov, dtype=float)))
    return out


def first_pick_study(
    matrix: ScoreMatrix,
    *,
    pipeline: Pipeline | None = None,
    paper: Mapping[int, float] | None = None,
    rules: Sequence[str] = TIE_RULES,
    holdout: float = 0.1,
    k_max: int = 15,
    n_folds: int = 10,
    seed: int = 42,
    scheme: str = "paper",
    n_draws: int = 2000,
    jitter: float = 1e-9,
    noise_seed: int = 0,
    tol: float = 0.005,
    n_jobs: int | None = None,
) -> FirstPickStudy:
    """Per-fold first entropy picks under every tie rule and numeric path, their CV curves, and the paper's.

    Runs the Section 5.1 protocol (``scheme="paper"``, seed 42: the paper's
    own folds) once, with, per split, one correlation estimate shared by

    * the pipeline under each tie rule in ``rules``;
    * the pipeline with each benchmark forced first (``Selector(initial=...)``)
      and greedy continuing by plain argmax, as in the paper's code
      (Algorithm 1 after its first step).

    From the band of forced runs, the curves of the path rules are rebuilt
    (per fold, the forced run of that fold's pick): ``"rounded"`` takes
    ``numpy.argmax`` of :func:`rounded_diagonal` of the split's covariance,
    the paper's code path applied to this library's EM estimate;
    ``"covariance"`` takes the largest variance. The noise model draws the
    rounding of the paper's path at random: each draw multiplies the
    covariance diagonal by ``1 + jitter * z`` (``z`` standard normal; any
    ``jitter`` far above the unit roundoff 2.2e-16 and far below the spread of
    the variances gives the same distribution) and takes the rounded argmax
    in every fold.

    Parameters
    ----------
    matrix : ScoreMatrix
    pipeline : Pipeline, optional
        One greedy-entropy selector without forced picks (default
        ``Pipeline.paper(objective="entropy")``; for BenchPress the paper's
        numbers come from ``config="early"``).
    paper : mapping int -> float, optional
        The paper's reported R^2 by ``k`` (e.g. :data:`PAPER_BENCHPRESS_ENTROPY`).
    rules : sequence of str
        Tie rules run as their own CV (subset of :data:`TIE_RULES`).
    holdout, k_max, n_folds, seed, scheme
        Protocol options of :func:`~benchsel_lib.protocol.cv.cross_validate`.
    n_draws : int
        Noise-model draws (0 skips the model).
    jitter : float
        Relative perturbation of the diagonal in the noise model.
    noise_seed : int
        Seed of the draws (stream ``SeedSequence(noise_seed, spawn_key=(7,))``).
    tol : float
        A curve matches a reported value when within ``tol`` of it.
    n_jobs : int or None
        Workers over the splits.

    Returns
    -------
    FirstPickStudy

    Raises
    ------
    ValueError
        Not a ScoreMatrix; a pipeline that is not one entropy selector, forces
        a pick, or estimates its correlation with ``"fast"``; an unknown rule;
        a reported ``k`` outside ``1..k_max``; bad numbers.

    Notes
    -----
    Cost: one cross-validation with ``len(rules) + N`` pipelines, the EM (or
    pairwise) estimate paid once per split plus once more for the
    covariance; per split ``O(k_max^2 N)`` per entropy selection
    (``O(N^3)`` for the ``"mi"`` tie rule) and ``k_max`` conditional
    predictions per pipeline; the noise model ``O(n_draws * K * (N + k_max))``.
    """
    check_matrix(matrix)
    base = _base_pipeline(pipeline)
    rules = list(rules)
    bad = [r for r in rules if r not in TIE_RULES]
    if bad:
        raise ValueError(f"unknown tie rule(s) {bad}: use a subset of {TIE_RULES}")
    k_max = check_int(k_max, "k_max")
    n_folds = check_int(n_folds, "n_folds", minimum=2)
    seed = check_seed(seed)
    n_draws = check_int(n_draws, "n_draws", minimum=0)
    noise_seed = check_seed(noise_seed)
    jitter, tol = float(jitter), float(tol)
    if not (np.isfinite(jitter) and jitter > 0):
        raise ValueError(f"jitter must be a positive number, got {jitter!r}")
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a non-negative number, got {tol!r}")
    ref = {int(k): float(v) for k, v in (paper or {}).items()}
    out_of_range = [k for k in ref if not 1 <= k <= k_max]
    if out_of_range:
        raise ValueError(f"paper values at k={out_of_range} lie outside 1..k_max={k_max}")
    names = list(matrix.benchmarks)

    # ---------------------------------------------------------------- one CV: the rules and the band
    tie_pipes = [clone(base).set_params(selector__tie_break=r, name=f"tie:{r}") for r in rules]
    forced = [clone(base).set_params(selector__initial=(b,), selector__tie_break="argmax", name=f"first:{b}")
              for b in names]
    df = cross_validate(matrix, tie_pipes + forced, holdouts=(holdout,), k_max=k_max, n_folds=n_folds, seed=seed,
                        scheme=scheme, n_jobs=n_jobs, progress=False)
    ks = np.arange(1, int(df["k"].max()) + 1)
    folds = np.arange(n_folds)
    band = np.full((n_folds, len(names), ks.size), np.nan)  # fold x forced benchmark x k
    fdf = df[df["method"].str.startswith("first:")]
    if "n_forced" in fdf.columns:
        fdf = fdf[fdf["n_forced"].fillna(0) > 0]
    col = {b: j for j, b in enumerate(names)}
    band[fdf["fold"].to_numpy(int), fdf["method"].str[len("first:"):].map(col).to_numpy(int),
         fdf["k"].to_numpy(int) - 1] = fdf["r2"].to_numpy(float)

    def rebuilt(pick_idx: np.ndarray) -> np.ndarray:  # (..., n_folds) indices -> (..., n_k) mean curve
        with warnings.catch_warnings():  # a (draw, k) with no scored fold stays NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(band[folds, pick_idx], axis=-2)

    # ---------------------------------------------------------------- the picks, fold by fold
    covs = _split_covariances(matrix, base, holdout=holdout, n_folds=n_folds, seed=seed, scheme=scheme)
    rows = []
    path_idx = {r: np.zeros(n_folds, dtype=int) for r in PATH_RULES}
    for f, (cols, S) in enumerate(covs):
        row: dict[str, Any] = {"fold": f}
        for r in rules:
            sel = df[(df["method"] == f"tie:{r}") & (df["fold"] == f) & (df["k"] == 1)]["selected"]
            row[r] = sel.iloc[0][0] if len(sel) else None
        p = first_picks(S, rules=PATH_RULES)
        for r in PATH_RULES:
            row[r] = cols[p[r]]
            path_idx[r][f] = col[cols[p[r]]]
        rd = rounded_diagonal(S)
        row["n_top"] = int((rd == rd.max()).sum())
        rows.append(row)
    picks = pd.DataFrame(rows).set_index("fold")

    # ---------------------------------------------------------------- curves
    curves = pd.DataFrame(index=pd.Index(ks, name="k"))
    curves["paper"] = [ref.get(int(k), np.nan) for k in ks]
    sources: dict[str, str] = {}
    for r in rules:
        curves[r] = df[df["method"] == f"tie:{r}"].groupby("k")["r2"].mean().reindex(ks).to_numpy()
        sources[r] = "cv"
    for r in PATH_RULES:
        curves[r] = rebuilt(path_idx[r])
        sources[r] = "band"
    band_gap = float("nan")
    if "argmax" in rules:
        idx = np.array([col[picks.loc[f, "argmax"]] for f in folds])
        band_gap = float(np.nanmax(np.abs(rebuilt(idx) - curves["argmax"].to_numpy())))

    # ---------------------------------------------------------------- noise model of the paper's path
    draws = np.empty((0, ks.size))
    pick_share = pd.Series(dtype=float, name="share")
    if n_draws:
        g = rng(noise_seed, _NOISE_STREAM)
        idx = np.empty((n_draws, n_folds), dtype=int)
        for f, (cols, S) in enumerate(covs):
            dg = np.diagonal(S)[None, :] * (1.0 + jitter * g.standard_normal((n_draws, len(cols))))
            local = np.argmax(_rounded(dg), axis=1)
            idx[:, f] = np.array([col[c] for c in cols])[local]
        draws = rebuilt(idx)
        counts = pd.Series(np.bincount(idx.ravel(), minlength=len(names)), index=names)
        pick_share = (counts[counts > 0] / idx.size).sort_values(ascending=False).rename("share")
    for name, q in (("noise_q05", 0.05), ("noise_median", 0.5), ("noise_q95", 0.95)):
        curves[name] = np.nanquantile(draws, q, axis=0) if len(draws) else np.nan

    # ---------------------------------------------------------------- against the paper
    rep = sorted(ref)
    all_rules = rules + list(PATH_RULES)
    matches = pd.Series({r: bool(rep) and all(abs(curves.loc[k, r] - ref[k]) <= tol for k in rep)
                         for r in all_rules}, name="matches")
    if len(draws) and rep:
        at = draws[:, [k - 1 for k in rep]]
        want = np.array([ref[k] for k in rep])
        pct = pd.Series((at <= want).mean(axis=0), index=pd.Index(rep, name="k"), name="paper_percentile")
        match_share = float((np.abs(at - want) <= tol).all(axis=1).mean())
    else:
        pct, match_share = pd.Series(dtype=float, name="paper_percentile"), float("nan")
    meta = {"holdout": float(holdout), "n_folds": n_folds, "seed": seed, "scheme": scheme, "k_max": int(ks[-1]),
            "n_draws": n_draws, "jitter": jitter, "tol": tol, "pipeline": repr(base)}
    return FirstPickStudy(picks=picks, curves=curves, sources=sources, matches=matches, paper_percentile=pct,
                          match_share=match_share, pick_share=pick_share, draws=draws, band_gap=band_gap, meta=meta)


def describe_first_pick(study: FirstPickStudy, *, k: int | None = None) -> str:
    """One or two plain sentences stating what :func:`first_pick_study` found, every number taken from it.

    O(number of subset sizes and rules of the study); nothing is computed again.

    Parameters
    ----------
    study : FirstPickStudy
    k : int, optional
        Subset size quoted (default: the smallest reported ``k``, else 5 or ``k_max``).

    Returns
    -------
    str
        Which rules reproduce the reported values (or that none does) with
        each rule's R^2 at ``k``, then the noise model's median and 90% range
        at ``k`` and the paper's percentile in it.

    Raises
    ------
    ValueError
        ``study`` is not a FirstPickStudy, or ``k`` is outside its subset sizes.
    """
    if not isinstance(study, FirstPickStudy):
        raise ValueError(f"study must be a FirstPickStudy, got {type(study).__name__}")
    c = study.curves
    ref = study.paper
    if k is None:
        k = min(ref) if ref else int(min(5, c.index.max()))
    check_int(k, "k")
    if k not in c.index:
        raise ValueError(f"k={k} is not in the study's 1..{int(c.index.max())}")
    rules = [r for r in study.sources if r in c.columns]
    label = {"rounded": "argmax of the rounded diagonal", "covariance": "largest covariance diagonal"}
    vals = ", ".join(f"{c.loc[k, r]:.2f} ({label.get(r, r)})" for r in rules)
    n_folds = len(study.picks)
    n_distinct = int(study.picks[[r for r in rules if r in study.picks.columns]].nunique(axis=1).gt(1).sum())
    first = (f"On these {n_folds} folds the first entropy pick is a tie that the rules break differently in "
             f"{n_distinct} folds, and at k = {k} they give R² = {vals}")
    if ref:
        reported = ", ".join(f"{v:.2f} at k = {kk}" for kk, v in sorted(ref.items()))
        won = [r for r in rules if bool(study.matches.get(r, False))]
        verdict = (f"; {' and '.join(label.get(r, r) for r in won)} reproduce{'s' if len(won) == 1 else ''} "
                   f"every value the paper reports ({reported})." if won else
                   f", against the paper's {reported}: no fixed rule reproduces the paper.")
        first += verdict
    else:
        first += "."
    if not len(study.draws):
        return first
    q = c.loc[k]
    second = (f" With the rounding of each diagonal entry drawn at random ({len(study.draws)} draws), the paper's "
              f"code path gives a median R² of {q['noise_median']:.2f} at k = {k} (90% of draws within "
              f"{q['noise_q05']:.2f} to {q['noise_q95']:.2f})")
    if ref and k in study.paper_percentile.index:
        tol = study.meta.get("tol", 0.005)
        second += (f"; the paper's {ref[k]:.2f} lies at the {100 * study.paper_percentile[k]:.0f}th percentile and "
                   f"{100 * study.match_share:.1f}% of draws come within {tol:g} of every reported value: the paper's "
                   "curve is consistent with one draw of a first pick set by floating-point rounding.")
    else:
        second += "."
    return first + second
