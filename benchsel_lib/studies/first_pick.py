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
from ..protocol.cv import CVProtocol, cross_validate
from ..protocol.splits import cv_splits

__all__ = [
    "PAPER_BENCHPRESS_ENTROPY",
    "PAPER_FOLDS",
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


def _check_rules(rules: Sequence[str]) -> list[str]:
    """The tie rules run as their own cross-validation, as a list; a rule outside :data:`TIE_RULES` is an error."""
    rules = list(rules)
    bad = [r for r in rules if r not in TIE_RULES]
    if bad:
        raise ValueError(f"unknown tie rule(s) {bad}: use a subset of {TIE_RULES}")
    return rules


def _check_noise(jitter: float, tol: float) -> tuple[float, float]:
    """``jitter`` (positive) and ``tol`` (non-negative) as floats; anything else, NaN included, is an error."""
    jitter, tol = float(jitter), float(tol)
    if not (np.isfinite(jitter) and jitter > 0):
        raise ValueError(f"jitter must be a positive number, got {jitter!r}")
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a non-negative number, got {tol!r}")
    return jitter, tol


def _check_paper(paper: Mapping[int, float] | None, k_max: int) -> dict[int, float]:
    """The reported values as ``{int k: float}``; a ``k`` outside ``1..k_max`` is an error."""
    ref = {int(k): float(v) for k, v in (paper or {}).items()}
    out_of_range = [k for k in ref if not 1 <= k <= k_max]
    if out_of_range:
        raise ValueError(f"paper values at k={out_of_range} lie outside 1..k_max={k_max}")
    return ref


def _rules_and_band_cv(matrix: ScoreMatrix, base: Pipeline, rules: Sequence[str], names: Sequence[str], *,
                       holdout: float, k_max: int, n_folds: int, seed: int, scheme: str,
                       n_jobs: int | None) -> pd.DataFrame:
    """One cross-validation of the pipeline under each tie rule (``tie:<rule>``) and with each benchmark forced first.

    The forced runs (``first:<benchmark>``) continue by plain argmax, as
    the paper's code does after its first step; all share each split's
    correlation estimate.
    """
    tie_pipes = [clone(base).set_params(selector__tie_break=r, name=f"tie:{r}") for r in rules]
    forced = [clone(base).set_params(selector__initial=(b,), selector__tie_break="argmax", name=f"first:{b}")
              for b in names]
    return cross_validate(matrix, tie_pipes + forced, holdouts=(holdout,), k_max=k_max, n_folds=n_folds, seed=seed,
                          scheme=scheme, n_jobs=n_jobs, progress=False)


def _forced_band(df: pd.DataFrame, col: Mapping[str, int], *, n_folds: int, n_k: int) -> np.ndarray:
    """R^2 of the forced runs, fold x forced benchmark x k; NaN where the forced pick was not applied or not scored.

    Parameters
    ----------
    df : DataFrame
        :func:`_rules_and_band_cv` rows.
    col : mapping
        Benchmark name -> its column.
    n_folds, n_k : int
        Folds and subset sizes ``1..n_k``.
    """
    band = np.full((n_folds, len(col), n_k), np.nan)
    fdf = df[df["pipeline"].str.startswith("first:")]
    if "n_forced" in fdf.columns:
        fdf = fdf[fdf["n_forced"].fillna(0) > 0]
    band[fdf["fold"].to_numpy(int), fdf["pipeline"].str[len("first:"):].map(col).to_numpy(int),
         fdf["k"].to_numpy(int) - 1] = fdf["r2"].to_numpy(float)
    return band


def _rebuilt(band: np.ndarray, pick_idx: np.ndarray) -> np.ndarray:
    """Mean curve over folds of the forced runs picked in each fold: ``(..., n_folds)`` indices -> ``(..., n_k)``.

    A curve point with no scored fold stays NaN (without a warning).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(band[np.arange(band.shape[0]), pick_idx], axis=-2)


def _tie_rule_pick(df: pd.DataFrame, rule: str, fold: int) -> str | None:
    """The first benchmark the run of tie rule ``rule`` selects in ``fold`` (None when it has no row at k = 1)."""
    sel = df[(df["pipeline"] == f"tie:{rule}") & (df["fold"] == fold) & (df["k"] == 1)]["selected"]
    return sel.iloc[0][0] if len(sel) else None


def _fold_picks(df: pd.DataFrame, covs: Sequence[tuple[list[str], np.ndarray]], rules: Sequence[str],
                col: Mapping[str, int], *, n_folds: int) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """The first pick of each fold under each rule, and the column each path rule picks per fold.

    Parameters
    ----------
    df : DataFrame
        :func:`_rules_and_band_cv` rows (the tie rules' picks).
    covs : sequence
        :func:`_split_covariances` (the path rules' picks).
    rules : sequence of str
        The tie rules run.
    col : mapping
        Benchmark name -> its column.
    n_folds : int

    Returns
    -------
    picks : DataFrame
        Indexed by fold: each rule's pick (a name) and ``n_top``, the
        benchmarks sharing the largest rounded diagonal value.
    path_idx : dict
        Path rule -> ``(n_folds,)`` columns of its picks.
    """
    rows = []
    path_idx = {r: np.zeros(n_folds, dtype=int) for r in PATH_RULES}
    for f, (cols, S) in enumerate(covs):
        row: dict[str, Any] = {"fold": f}
        for r in rules:
            row[r] = _tie_rule_pick(df, r, f)
        p = first_picks(S, rules=PATH_RULES)
        for r in PATH_RULES:
            row[r] = cols[p[r]]
            path_idx[r][f] = col[cols[p[r]]]
        rd = rounded_diagonal(S)
        row["n_top"] = int((rd == rd.max()).sum())
        rows.append(row)
    return pd.DataFrame(rows).set_index("fold"), path_idx


def _rule_curves(df: pd.DataFrame, ks: np.ndarray, ref: Mapping[int, float], rules: Sequence[str], band: np.ndarray,
                 path_idx: Mapping[str, np.ndarray]) -> tuple[pd.DataFrame, dict[str, str]]:
    """The paper's values and each rule's mean R^2 by ``k``, and where each curve comes from.

    A tie rule's curve is its own cross-validation (``"cv"``); a path
    rule's is rebuilt from the forced runs of its picks (``"band"``).
    """
    curves = pd.DataFrame(index=pd.Index(ks, name="k"))
    curves["paper"] = [ref.get(int(k), np.nan) for k in ks]
    sources: dict[str, str] = {}
    for r in rules:
        curves[r] = df[df["pipeline"] == f"tie:{r}"].groupby("k")["r2"].mean().reindex(ks).to_numpy()
        sources[r] = "cv"
    for r in PATH_RULES:
        curves[r] = _rebuilt(band, path_idx[r])
        sources[r] = "band"
    return curves, sources


def _band_gap(band: np.ndarray, picks: pd.DataFrame, curves: pd.DataFrame, col: Mapping[str, int]) -> float:
    """Largest absolute difference between the ``"argmax"`` run's curve and its rebuild from the forced runs."""
    idx = np.array([col[picks.loc[f, "argmax"]] for f in np.arange(band.shape[0])])
    return float(np.nanmax(np.abs(_rebuilt(band, idx) - curves["argmax"].to_numpy())))


def _noise_model(covs: Sequence[tuple[list[str], np.ndarray]], band: np.ndarray, names: Sequence[str],
                 col: Mapping[str, int], *, n_draws: int, jitter: float,
                 noise_seed: int) -> tuple[np.ndarray, pd.Series]:
    """Curves of the paper's path with the rounding of each split's diagonal drawn at random, and the picks' shares.

    Each draw multiplies every split's covariance diagonal by ``1 + jitter * z``
    (``z`` standard normal, stream ``SeedSequence(noise_seed, spawn_key=(7,))``)
    and takes the rounded argmax in every fold.

    Returns
    -------
    draws : ndarray (n_draws, n_k)
        The rebuilt curves (no rows when ``n_draws`` is 0).
    pick_share : Series
        Benchmark -> share of the first picks over folds and draws, largest first (empty when ``n_draws`` is 0).
    """
    if not n_draws:
        return np.empty((0, band.shape[2])), pd.Series(dtype=float, name="share")
    g = rng(noise_seed, _NOISE_STREAM)
    idx = np.empty((n_draws, band.shape[0]), dtype=int)
    for f, (cols, S) in enumerate(covs):
        dg = np.diagonal(S)[None, :] * (1.0 + jitter * g.standard_normal((n_draws, len(cols))))
        local = np.argmax(_rounded(dg), axis=1)
        idx[:, f] = np.array([col[c] for c in cols])[local]
    counts = pd.Series(np.bincount(idx.ravel(), minlength=len(names)), index=names)
    return _rebuilt(band, idx), (counts[counts > 0] / idx.size).sort_values(ascending=False).rename("share")


def _paper_matches(curves: pd.DataFrame, ref: Mapping[int, float], rules: Sequence[str], tol: float) -> pd.Series:
    """Rule -> whether its curve is within ``tol`` of every reported value (False when none is reported)."""
    rep = sorted(ref)
    return pd.Series({r: bool(rep) and all(abs(curves.loc[k, r] - ref[k]) <= tol for k in rep) for r in rules},
                     name="matches")


def _noise_against_paper(draws: np.ndarray, ref: Mapping[int, float], tol: float) -> tuple[pd.Series, float]:
    """Per reported ``k``, the share of noise-model curves at or below the paper's value; the share matching every one.

    Empty and NaN without draws or reported values.
    """
    rep = sorted(ref)
    if not (len(draws) and rep):
        return pd.Series(dtype=float, name="paper_percentile"), float("nan")
    at = draws[:, [k - 1 for k in rep]]
    want = np.array([ref[k] for k in rep])
    pct = pd.Series((at <= want).mean(axis=0), index=pd.Index(rep, name="k"), name="paper_percentile")
    return pct, float((np.abs(at - want) <= tol).all(axis=1).mean())


#: the protocol of :func:`first_pick_study` unless one is given: the paper's folds (seed 42, its fold layout),
#: 10 % holdout, 10 folds, k up to 15
PAPER_FOLDS = CVProtocol(holdouts=(0.1,), k_max=15, n_folds=10, seed=42, scheme="paper")


def _protocol_options(protocol: CVProtocol) -> tuple[float, int, int, int, str]:
    """``(holdout, k_max, n_folds, seed, scheme)`` of a protocol with one holdout and a ``k_max``; else ValueError."""
    if not isinstance(protocol, CVProtocol):
        raise ValueError(f"protocol must be a CVProtocol, got {type(protocol).__name__}")
    if len(protocol.holdouts) != 1 or protocol.k_max is None:
        raise ValueError(f"the first-pick study runs one holdout up to a given k_max, got holdouts="
                         f"{protocol.holdouts} and k_max={protocol.k_max}")
    k_max = check_int(protocol.k_max, "k_max")
    n_folds = check_int(protocol.n_folds, "n_folds", minimum=2)
    return float(protocol.holdouts[0]), k_max, n_folds, check_seed(protocol.seed), protocol.scheme


def first_pick_study(
    matrix: ScoreMatrix,
    *,
    pipeline: Pipeline | None = None,
    paper: Mapping[int, float] | None = None,
    rules: Sequence[str] = TIE_RULES,
    protocol: CVProtocol = PAPER_FOLDS,
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
    protocol : CVProtocol
        One holdout, ``k_max``, ``n_folds``, ``seed`` and ``scheme`` of
        :func:`~benchsel_lib.protocol.cv.cross_validate` (default
        :data:`PAPER_FOLDS`: the paper's folds, 10 % holdout, k up to 15).
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
    rules = _check_rules(rules)
    holdout, k_max, n_folds, seed, scheme = _protocol_options(protocol)
    n_draws = check_int(n_draws, "n_draws", minimum=0)
    noise_seed = check_seed(noise_seed)
    jitter, tol = _check_noise(jitter, tol)
    ref = _check_paper(paper, k_max)
    names = list(matrix.benchmarks)
    col = {b: j for j, b in enumerate(names)}

    df = _rules_and_band_cv(matrix, base, rules, names, holdout=holdout, k_max=k_max, n_folds=n_folds, seed=seed,
                            scheme=scheme, n_jobs=n_jobs)
    ks = np.arange(1, int(df["k"].max()) + 1)
    band = _forced_band(df, col, n_folds=n_folds, n_k=ks.size)
    covs = _split_covariances(matrix, base, holdout=holdout, n_folds=n_folds, seed=seed, scheme=scheme)
    picks, path_idx = _fold_picks(df, covs, rules, col, n_folds=n_folds)
    curves, sources = _rule_curves(df, ks, ref, rules, band, path_idx)
    band_gap = _band_gap(band, picks, curves, col) if "argmax" in rules else float("nan")
    draws, pick_share = _noise_model(covs, band, names, col, n_draws=n_draws, jitter=jitter, noise_seed=noise_seed)
    for name, q in (("noise_q05", 0.05), ("noise_median", 0.5), ("noise_q95", 0.95)):
        curves[name] = np.nanquantile(draws, q, axis=0) if len(draws) else np.nan
    matches = _paper_matches(curves, ref, rules + list(PATH_RULES), tol)
    pct, match_share = _noise_against_paper(draws, ref, tol)
    meta = {"holdout": float(holdout), "n_folds": n_folds, "seed": seed, "scheme": scheme, "k_max": int(ks[-1]),
            "n_draws": n_draws, "jitter": jitter, "tol": tol, "pipeline": repr(base)}
    return FirstPickStudy(picks=picks, curves=curves, sources=sources, matches=matches, paper_percentile=pct,
                          match_share=match_share, pick_share=pick_share, draws=draws, band_gap=band_gap, meta=meta)


#: How :func:`describe_first_pick` names the path rules.
_PATH_LABELS = {"rounded": "argmax of the rounded diagonal", "covariance": "largest covariance diagonal"}


def _rules_sentence(study: FirstPickStudy, k: int) -> str:
    """The folds where the rules pick differently, each rule's R^2 at ``k``, and which rules reproduce the paper.

    Parameters
    ----------
    study : FirstPickStudy
    k : int
        A subset size of the study.

    Returns
    -------
    str
        One sentence; against the reported values when the study has any.
    """
    c, ref = study.curves, study.paper
    rules = [r for r in study.sources if r in c.columns]
    vals = ", ".join(f"{c.loc[k, r]:.2f} ({_PATH_LABELS.get(r, r)})" for r in rules)
    n_distinct = int(study.picks[[r for r in rules if r in study.picks.columns]].nunique(axis=1).gt(1).sum())
    first = (f"On these {len(study.picks)} folds the first entropy pick is a tie that the rules break differently in "
             f"{n_distinct} folds, and at k = {k} they give R² = {vals}")
    if not ref:
        return first + "."
    reported = ", ".join(f"{v:.2f} at k = {kk}" for kk, v in sorted(ref.items()))
    won = [r for r in rules if bool(study.matches.get(r, False))]
    if not won:
        return first + f", against the paper's {reported}: no fixed rule reproduces the paper."
    return (first + f"; {' and '.join(_PATH_LABELS.get(r, r) for r in won)} reproduce{'s' if len(won) == 1 else ''} "
            f"every value the paper reports ({reported}).")


def _noise_sentence(study: FirstPickStudy, k: int) -> str:
    """The noise model's median and 90% range at ``k``, and where the paper's value lies in it (when reported).

    Parameters
    ----------
    study : FirstPickStudy
        A study whose noise model ran (``draws`` not empty).
    k : int
        A subset size of the study.

    Returns
    -------
    str
        One sentence, starting with a space.
    """
    q, ref = study.curves.loc[k], study.paper
    second = (f" With the rounding of each diagonal entry drawn at random ({len(study.draws)} draws), the paper's "
              f"code path gives a median R² of {q['noise_median']:.2f} at k = {k} (90% of draws within "
              f"{q['noise_q05']:.2f} to {q['noise_q95']:.2f})")
    if not (ref and k in study.paper_percentile.index):
        return second + "."
    tol = study.meta.get("tol", 0.005)
    return second + (f"; the paper's {ref[k]:.2f} lies at the {100 * study.paper_percentile[k]:.0f}th percentile and "
                     f"{100 * study.match_share:.1f}% of draws come within {tol:g} of every reported value: the "
                     "paper's curve is consistent with one draw of a first pick set by floating-point rounding.")


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
    first = _rules_sentence(study, k)
    if not len(study.draws):
        return first
    return first + _noise_sentence(study, k)
