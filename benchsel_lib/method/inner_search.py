"""One inner-cross-validated search along the subset sizes: :func:`pipeline_path`.

At every subset size ``k`` each candidate -- a selector with a predictor, or the stack of the predictors --
is scored with the paper's R^2 (Section 5.1) by cross-validation *of the training models*
(:mod:`benchsel_lib.method.oof`); a rule (:mod:`benchsel_lib.method.choice`) chooses, and the choice is refit
on all training models.  Intervals are split-conformal (CV+ style) from the same inner-CV residuals of the
chosen pair: ``pred +- q_L s_j``.  Above the budget of :func:`~benchsel_lib.method.plan.plan_search` the inner
cross-validation runs on seeded subsamples (``Recommendation.plan`` says so, also logged at level INFO).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from .._checks import check_blocks, check_int, check_ks
from .base import BasePredictor, check_train, pass_through
from .calibration import conformal_interval, conformal_quantile, conformal_scores
from .candidates import DEFAULT_PREDICTORS, DEFAULT_SELECTORS, Grid
from .choice import DEFAULT_RULE, Nested, choice_rule
from .correlation import inner_correlation
from .lowrank import as_correlation_matrix
from .folds import InnerFolds
from .oof import STACK, OutOfFold, out_of_fold, score_candidates, stack_prediction
from .plan import SearchPlan, plan_search
from .predictors import check_unreached, make_predictor
from .selectors import Selector, selector_named

__all__ = ["Recommendation", "ChosenPredictor", "SearchSettings", "pipeline_path", "FALLBACK", "AUTO_BLOCKS",
           "DEFAULT_LEVELS"]

#: the named default used when there are too few training models for the inner CV
FALLBACK = ("mi", "gaussian")

#: the block sizes of the recommended pipeline: a choice at five benchmarks whose selector is not nested
#: stays in every larger selection
AUTO_BLOCKS = (5,)

#: interval levels whose conformal multipliers a search keeps (any other level is read off the residuals)
DEFAULT_LEVELS = (0.5, 0.8, 0.9)

_LOG = logging.getLogger(__name__)


@dataclass
class Recommendation:
    """A chosen pipeline for one ``k`` and how it was chosen.

    Attributes
    ----------
    selector, predictor : str
        The choice (``predictor == "stack"``: NNLS combination with ``weights``).
    selection : list of int
        Columns selected on all training models.
    scores : DataFrame
        Inner-CV R^2 of every candidate: ``selector, predictor, k, r2, n_eval`` (residuals pooled).
    scale, quantiles
        Per-benchmark residual scale of the intervals; conformal multipliers ``q_L`` by level.
    note : str or None
        Set when the named default :data:`FALLBACK` was used (too few training models) or a candidate could
        not select.
    inner_r2 : float
        Inner-CV R^2 of the choice (NaN when not scored).
    conformal : ndarray or None
        The sorted scaled absolute inner-CV residuals (:meth:`quantile`).
    plan : str or None
        How the search was cut down to fit its budget, one line (None: the full search).
    """

    k: int
    selector: str
    predictor: str
    selection: list[int]
    scores: pd.DataFrame
    weights: dict[str, float] = field(default_factory=dict)
    scale: np.ndarray | None = None
    quantiles: dict[float, float] = field(default_factory=dict)
    note: str | None = None
    seed: int = 0
    inner_r2: float = float("nan")
    conformal: np.ndarray | None = field(default=None, repr=False)
    plan: str | None = None

    @property
    def name(self) -> str:
        """The choice as ``SELECTOR+PREDICTOR``. O(1)."""
        return f"{self.selector}+{self.predictor}"

    def predict(self, train: np.ndarray, query: np.ndarray, *, cov: np.ndarray | None = None) -> np.ndarray:
        """Predictions (standardized) of every entry of ``query`` by the chosen predictor, fit on ``train``.

        ``cov`` defaults to :func:`~benchsel_lib.method.correlation.inner_correlation`.  Cost: one fit and
        predict of the chosen predictor (of each of positive weight for a stack).
        """
        return ChosenPredictor(self.predictor, self.weights).fit(train, cov=cov).predict(query)

    def quantile(self, level: float) -> float:
        """The conformal multiplier ``q_level`` (NaN when no inner-CV residual was kept). O(1)."""
        if float(level) in self.quantiles:
            return self.quantiles[float(level)]
        if self.conformal is None:
            return float("nan")
        return conformal_quantile(self.conformal, level)

    def interval(self, pred: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
        """Conformal interval ``pred +- q_level * scale`` (columns of ``pred`` are benchmarks). O(v N)."""
        bounds = conformal_interval(self, pred, slice(None), level)
        if bounds is None:
            raise ValueError(f"no interval at level {level!r}: the inner cross-validation kept no residuals")
        return bounds


class ChosenPredictor(BasePredictor):
    """A search's chosen predictor as one predictor object: a named one, or the stack of several.

    The named predictor fit on the training rows, or for ``"stack"`` the sum of the predictors of positive
    weight, each fit on the training rows; revealed entries passed through, non-finite predictions set to 0
    (the training mean).  What a :class:`~benchsel_lib.method.pipeline.Pipeline` carries as a search's choice.

    Parameters
    ----------
    predictor : str
        A name of :data:`~benchsel_lib.method.predictors.PREDICTORS`, or ``"stack"``.
    weights : mapping, optional
        The stack's weights by predictor name.

    Notes
    -----
    Cost: one fit and prediction of the predictor, or of each predictor of positive weight for a stack.
    """

    def __init__(self, predictor: str, weights: dict[str, float] | None = None) -> None:
        self.predictor = predictor
        self.weights = dict(weights or {})
        self.name = predictor

    def _predict(self, train: np.ndarray, query: np.ndarray, cov: np.ndarray | None) -> np.ndarray:
        cov = inner_correlation(train) if cov is None else cov

        def fitted(name: str) -> np.ndarray:
            return np.asarray(make_predictor(name).fit(train, cov=cov).predict(query), dtype=float)

        if self.predictor != STACK:
            out = fitted(self.predictor)
        else:
            out = pass_through(np.zeros(query.shape) + stack_prediction(self.weights, fitted), query)
        return np.where(np.isfinite(out), out, 0.0)

    def __repr__(self) -> str:
        shown = f", weights={self.weights!r}" if self.weights else ""
        return f"ChosenPredictor({self.predictor!r}{shown})"


def _check_train(train: Any) -> np.ndarray:
    tr = check_train(train)
    if tr.shape[1] < 2:
        raise ValueError(f"train needs at least two benchmarks, one to reveal and one to predict, got shape {tr.shape}")
    empty = np.flatnonzero(np.isnan(tr).all(axis=0))
    if empty.size:
        raise ValueError(f"no training model observed benchmark column(s) {empty.tolist()[:10]}: nothing to learn a "
                         "prediction from; drop them")
    return tr


@dataclass(frozen=True)
class SearchSettings:
    """What one inner search scores and how it chooses, checked once when made (before any work).

    The one record of a search's settings: :meth:`~benchsel_lib.method.fitting.BasePipeline.validate` makes it
    from a pipeline's parameters, a fit sets the candidates, seed, levels and estimator, and
    :func:`pipeline_path` reads it as it is.

    Parameters
    ----------
    selectors : sequence of str or Selector
        The candidate selections (preset names or selectors, labelled by ``Selector.label``).
    predictors : sequence of str
        The candidate predictors.
    stack : bool
        Also score the NNLS stack of ``predictors`` per selector.
    n_folds : int
        Inner folds; with fewer than ``2 n_folds`` training models :data:`FALLBACK` is used (``note`` says so).
    seed : int
        Seed of the inner folds and of the random selector.
    levels : sequence of float
        Interval levels (kept as a tuple of floats).
    budget : float, "auto" or None
        Estimated operations the inner search may take (:func:`~benchsel_lib.method.plan.plan_search`;
        ``"auto"``: its default budget).  None: always the full search.
    choice : {"monotone", "best", "nested"} or a rule object
        How the candidate is chosen at each ``k`` (:mod:`benchsel_lib.method.choice`).  A rule that looks back
        has every size up to the largest of ``ks`` scored (a search cut down to its budget scores only the
        sizes asked for, each choosing its best candidate).  Kept as the rule object.
    unreached : {"skip", "mean"}
        ``"skip"`` (the paper's protocol) leaves out an inner-held-out row that observes none of the revealed
        benchmarks; ``"mean"`` scores it with the training mean.
    blocks : sequence of int
        Sizes at which the path is fixed when the choice there is not nested: above a block size ``b`` whose
        choice's selector is not nested, every candidate keeps the benchmarks chosen at ``b`` as mandatory
        ones and the search runs anew from ``b`` (a selector that cannot keep them is left out, ``note``
        says so).  Ignored with ``fixed``.
    estimator : Pipeline, optional
        The fixed pipeline without intervals whose clones score the candidates in the inner folds (None:
        :func:`~benchsel_lib.method.oof.default_estimator`).
    """

    selectors: Sequence[str | Selector] = DEFAULT_SELECTORS
    predictors: Sequence[str] = DEFAULT_PREDICTORS
    stack: bool = True
    n_folds: int = 5
    seed: int = 0
    levels: Sequence[float] = DEFAULT_LEVELS
    budget: float | str | None = "auto"
    choice: Any = DEFAULT_RULE
    unreached: str = "skip"
    blocks: Sequence[int] = ()
    estimator: Any = None

    def __post_init__(self) -> None:  # every check of a search's settings, made once
        grid = Grid(self.selectors, self.predictors, stack=self.stack)  # the candidates' own checks
        check_int(self.n_folds, "n_folds", minimum=2)
        for name, value in (("selectors", grid.selectors), ("predictors", grid.predictors),
                            ("choice", choice_rule(self.choice)), ("unreached", check_unreached(self.unreached)),
                            ("seed", int(self.seed)), ("levels", tuple(float(lv) for lv in self.levels)),
                            ("blocks", check_blocks(self.blocks))):
            object.__setattr__(self, name, value)


class _Problem:
    """One search, its arguments validated (every check before any work). O(M N) plus the correlation."""

    note: str | None = None
    too_few: bool = False

    def __init__(self, train: Any, k_max: int, settings: SearchSettings, *, cov: np.ndarray | None,
                 names: Sequence[str] | None, fixed: Sequence[int] | None) -> None:
        self.settings = settings
        self.tr = _check_train(train)
        N = self.tr.shape[1]
        self.names = [str(j) for j in range(N)] if names is None else [str(b) for b in names]
        if len(self.names) != N:
            raise ValueError(f"names has {len(self.names)} entries for {N} benchmark columns")
        self.selector_of = {sel.label: sel for sel in settings.selectors}
        self.predictors, self.stack = settings.predictors, settings.stack
        self.fixed = None if fixed is None else [int(j) for j in fixed]
        if self.fixed is not None:
            if not self.fixed or len(set(self.fixed)) != len(self.fixed) or not all(0 <= j < N for j in self.fixed):
                raise ValueError(f"fixed must list distinct columns in 0..{N - 1}, got {self.fixed!r}")
        self.k_max = k_max if self.fixed is None else len(self.fixed)  # k_max checked by pipeline_path
        self.folds = InnerFolds(settings.n_folds, settings.seed)
        self.R = inner_correlation(self.tr) if cov is None else as_correlation_matrix(cov)  # wide: stays low-rank

    @property
    def selectors(self) -> tuple[str, ...]:  # ("given",) for a given revealed set
        return ("given",) if self.fixed is not None else tuple(self.selector_of)

    @property
    def search(self) -> bool:  # several candidates, or a stack, to choose among
        return len(self.selectors) * len(self.predictors) > 1 or self.stack


def _fall_back(pb: _Problem) -> None:
    """With too few training models for the inner folds: the named default :data:`FALLBACK` (said in ``note``)."""
    m, n_folds = pb.tr.shape[0], pb.folds.n_folds
    if pb.folds.fits(m):
        return
    pb.too_few = True
    note = f"only {m} training models: too few for {n_folds}-fold inner cross-validation (need {2 * n_folds})"
    without = ", without intervals" if pb.settings.levels else ""
    if pb.search and pb.fixed is not None:  # the given benchmarks stay; only the predictor falls back
        note += f"; using the default predictor {FALLBACK[1]}" + without
        pb.predictors, pb.stack = (FALLBACK[1],), False
    elif pb.search:
        note += f"; using the default {FALLBACK[0]}+{FALLBACK[1]}" + without
        head = next(iter(pb.selector_of.values()))
        fallback = replace(selector_named(FALLBACK[0]), initial=head.initial, min_observed=head.min_observed)
        pb.selector_of, pb.predictors, pb.stack = {fallback.label: fallback}, (FALLBACK[1],), False
    else:
        note += "; no intervals"
    pb.note = note


def _plan(pb: _Problem, *, ks: Sequence[int], first: int, plan_for: Sequence[int] | None,
          lookback: bool) -> tuple[SearchPlan | None, bool]:
    """The budget plan (None: the full search) and whether the choice still looks back (not when cut down)."""
    budget = pb.settings.budget
    if budget is None or pb.too_few or not (pb.search or pb.settings.levels):
        return None, lookback
    keep = list(pb.fixed or [])
    for sel in pb.selector_of.values():
        keep += sel.resolve_initial(pb.names, missing="skip")
    asked = len(set(ks if plan_for is None else plan_for))
    n_ks = pb.k_max - (first if plan_for is None else 1) + 1 if lookback else asked
    m, N = pb.tr.shape

    def planned(n: int) -> SearchPlan:
        return plan_search(m, N, k=pb.k_max, selectors=list(pb.selectors) if pb.fixed is not None else
                           list(pb.selector_of.values()), predictors=pb.predictors, n_ks=n, n_folds=pb.folds.n_folds,
                           observed=float((~np.isnan(pb.tr)).mean()), keep=keep, seed=pb.settings.seed,
                           budget=None if budget == "auto" else float(budget))

    plan = planned(n_ks)
    if not plan.full and n_ks != asked:
        lookback, plan = False, planned(asked)
    if plan.full:
        return None, lookback
    _LOG.info(plan.note())
    if plan.left_out:
        pb.selector_of = {s: sel for s, sel in pb.selector_of.items() if s not in plan.left_out}
    return plan, lookback


class _Orders:
    """The selections of each selector by size: on a fold's rows, the inner matrix's, or every row and column."""

    def __init__(self, pb: _Problem, sizes: Sequence[int], plan: SearchPlan | None) -> None:
        self.pb, self.sizes = pb, sorted(set(sizes) | {pb.k_max})
        self.cols = None if plan is None else plan.columns
        names, fixed = pb.names, pb.fixed
        self.cv = pb.tr if plan is None or plan.rows is None else pb.tr[plan.rows]
        if self.cols is None:
            self.given, self.names_s = fixed, names
        else:
            pos = {int(j): i for i, j in enumerate(self.cols)}
            self.given = None if fixed is None else [pos[j] for j in fixed]
            self.names_s = [names[j] for j in self.cols]
            self.cv = self.cv[:, self.cols]
        self.finals: dict[str, dict[int, list[int]] | None] = {}
        self.fallback: dict[str, dict[int, list[int]]] = {}

    def choose(self, x: np.ndarray, s: str, c: np.ndarray, sel: Selector | None, given: Sequence[int] | None,
               labels: Sequence[str]) -> dict[int, list[int]]:
        """The selections of ``s`` at every size on rows ``x`` with correlation ``c``."""
        if s == "given":
            return {k: list(given)[:k] for k in self.sizes if k <= len(given)}  # type: ignore[arg-type]
        counts = (~np.isnan(x)).sum(axis=0)
        return sel.select_sizes(c, self.sizes, names=labels, counts=counts, n_models=x.shape[0],  # type: ignore[union-attr]
                                train=x, seed=self.pb.settings.seed, missing_initial="skip")

    def prepare(self) -> list[str]:
        """Each selector's selections on the inner matrix (every row and column unless subsampled); the errors."""
        pb, errors = self.pb, []
        full = self.cols is None
        R = pb.R if full else pb.R[np.ix_(self.cols, self.cols)]
        x = pb.tr if full else self.cv
        for s in pb.selectors:
            try:
                got = self.choose(x, s, R, pb.selector_of.get(s), self.given, self.names_s)
            except ValueError as exc:  # e.g. k larger than what this selector's filter leaves
                if len(pb.selectors) == 1:
                    raise
                errors.append(f"{s} left out: {exc}")
                continue
            self.fallback[s] = got
            if full:
                self.finals[s] = got
        if not self.fallback:
            raise ValueError("no candidate selector can select k benchmarks here: " + "; ".join(errors))
        return errors

    def in_fold(self, s: str, itr: np.ndarray, Ri: np.ndarray, n_rows: int) -> dict[int, list[int]]:
        """The selections of ``s`` on an inner fold's rows (its selections on the inner matrix where it cannot)."""
        sel = self.pb.selector_of.get(s)
        try:
            return self.choose(itr, s, Ri, None if sel is None else sel.scaled(n_rows, self.cv.shape[0]), self.given,
                               self.names_s)
        except ValueError:
            return self.fallback[s]

    def final(self, s: str) -> dict[int, list[int]] | None:
        """The selections of ``s`` on every row and column by size (None when its filter leaves too few)."""
        if s not in self.finals:
            try:
                self.finals[s] = self.choose(self.pb.tr, s, self.pb.R, self.pb.selector_of.get(s), self.pb.fixed,
                                             self.pb.names)
            except ValueError:
                self.finals[s] = None
        return self.finals[s]


def _selectable(pool: list[dict[str, Any]], pick: Callable[[list[dict[str, Any]]], Any], orders: _Orders) -> Any:
    """``pick(pool)`` (a row or a selector), on a subsample picked again without the rows of a selector that
    cannot select on every benchmark; None when nothing is left."""
    while pool:
        got = pick(pool)
        s = got if isinstance(got, str) else got["selector"]
        if orders.cols is None or orders.final(s) is not None:
            return got
        pool = [r for r in pool if r["selector"] != s]
    return None


def _choose_path(pb: _Problem, rows: list[dict[str, Any]], scored: Sequence[int], orders: _Orders,
                 previous: dict[str, Any] | None) -> dict[int, tuple[str, str, float]]:
    """``k -> (selector, predictor, inner R^2)`` at every scored size (on a subsample, of a selector that can
    select on every benchmark; where nothing was scored, the first that can, its first predictor, NaN)."""
    selectors = pb.selectors
    rank_s = {s: i for i, s in enumerate(selectors)}
    rank_p = {p: i for i, p in enumerate(pb.predictors + (STACK,))}
    usable = [r for r in rows if not np.isnan(r["r2"])]
    only = _selectable(usable if isinstance(pb.settings.choice, Nested) else [],  # the nested rule's one selector
                       lambda pool: Nested.selector(pool, scored, order=rank_s.get), orders)
    out = {}
    for k in scored:
        at = [r for r in usable if r["k"] == k and (only is None or r["selector"] == only)]
        prev = previous if previous is not None and previous["k"] == k - 1 else None
        previous = _selectable(at, partial(pb.settings.choice.choose, previous=prev,
                                           order=lambda r: (rank_s[r["selector"]], rank_p[r["predictor"]])), orders)
        if previous is not None:
            out[k] = (previous["selector"], previous["predictor"], float(previous["r2"]))
            continue
        s = next((t for t in selectors if orders.final(t) is not None), selectors[0])
        if orders.final(s) is None:
            raise ValueError(f"no candidate selector can select k={pb.k_max} benchmarks here")
        out[k] = (s, pb.predictors[0], float("nan"))
    return out


def _conformal(pb: _Problem, oof: OutOfFold, orders: _Orders, s: str, p: str,
               k: int) -> tuple[np.ndarray, np.ndarray | None, dict[float, float]]:
    """The conformal scale, sorted scores and multipliers of the choice ``(s, p)`` at ``k``."""
    N = pb.tr.shape[1]
    mk = oof.masks.get((s, k))
    if mk is None or not mk.any():
        return np.ones(N), None, {lv: float("nan") for lv in pb.settings.levels}
    res = oof.preds[(s, p, k)] - oof.truth
    if orders.cols is not None:  # benchmarks outside the subsample get the pooled scale
        res_all, mk_all = np.zeros((res.shape[0], N)), np.zeros((res.shape[0], N), dtype=bool)
        res_all[:, orders.cols], mk_all[:, orders.cols] = res, mk
        res, mk = res_all, mk_all
    scale, scores = conformal_scores(res, mk)
    return scale, scores, {lv: conformal_quantile(scores, lv) for lv in pb.settings.levels}


def _search_path(train: Any, k_max: int, settings: SearchSettings, data: dict[str, Any], *, ks: Sequence[int] | None,
                 first: int = 1, previous: dict[str, Any] | None = None,
                 plan_for: Sequence[int] | None = None) -> list[Recommendation]:
    """:func:`pipeline_path` without blocks, or one segment of it from ``first`` (looking back at ``previous``,
    planned for the sizes ``plan_for`` of the whole path); ``data``: its ``cov``, ``names`` and ``fixed``
    (``ks``, checked by :func:`pipeline_path`, is ignored with ``fixed``)."""
    pb = _Problem(train, k_max, settings, **data)
    _fall_back(pb)
    ks = [pb.k_max] if pb.fixed is not None else ks
    plan, lookback = _plan(pb, ks=ks, first=first, plan_for=plan_for,
                           lookback=settings.choice.lookback and pb.search and pb.fixed is None)
    scored = list(range(min(first, min(ks)), max(ks) + 1)) if lookback else list(ks)
    orders = _Orders(pb, scored, plan)
    errors = orders.prepare()
    if errors:
        pb.selector_of = {s: sel for s, sel in pb.selector_of.items() if s in orders.fallback}
        pb.note = "; ".join(([pb.note] if pb.note else []) + errors)
    folds = pb.folds.folds(orders.cv.shape[0]) if (pb.search or settings.levels) and not pb.too_few else []
    oof = out_of_fold(orders.cv, folds, select=orders.in_fold, selectors=pb.selectors, predictors=pb.predictors,
                      sizes=scored, unreached=settings.unreached, names=orders.names_s, estimator=settings.estimator)
    rows, weights = score_candidates(oof, pb.predictors, stack=pb.stack)
    scores = pd.DataFrame(rows, columns=["selector", "predictor", "k", "r2", "n_eval"])
    plan_note = None if plan is None else plan.note()
    recs = []
    for k, (s, p, inner) in _choose_path(pb, rows, scored, orders, previous).items():
        if k not in ks:
            continue
        scale, conf, qs = _conformal(pb, oof, orders, s, p, k)
        recs.append(Recommendation(k=k, selector=s, predictor=p, selection=list(orders.final(s).get(k, [])),
                                   scores=scores, weights=weights.get((s, k), {}) if p == STACK else {}, scale=scale,
                                   quantiles=qs, note=pb.note, seed=settings.seed, inner_r2=inner, conformal=conf,
                                   plan=plan_note))
    return recs


def _as_previous(rec: Recommendation) -> dict[str, Any] | None:
    """The choice of ``rec`` as a look-back row for the choice rule (None where nothing was chosen)."""
    if not np.isfinite(rec.inner_r2):
        return None
    return dict(selector=rec.selector, predictor=rec.predictor, k=rec.k, r2=rec.inner_r2)


def pipeline_path(
    train: Any,
    k_max: int,
    *,
    settings: SearchSettings = SearchSettings(),
    cov: np.ndarray | None = None,
    names: Sequence[str] | None = None,
    fixed: Sequence[int] | None = None,
    ks: Sequence[int] | None = None,
) -> list[Recommendation]:
    """The recommended pipeline for every ``k = 1..k_max`` from one inner cross-validation.

    Parameters
    ----------
    train : ndarray (m, N)
        Standardized training scores (NaN missing).
    k_max : int
    settings : SearchSettings
    cov : ndarray (N, N), optional
        Training correlation for the final selection and Gaussian predictor
        (default :func:`~benchsel_lib.method.correlation.inner_correlation`).
    names : sequence of str, optional
        Benchmark names of the columns (default ``"0", "1", ...``), for mandatory benchmarks.
    fixed : sequence of int, optional
        A given revealed set: only the predictor is chosen (selector ``"given"``), one Recommendation with
        ``k = len(fixed)``.
    ks : sequence of int, optional
        Score and recommend only these subset sizes (the selections still run to ``k_max``).

    Returns
    -------
    list of Recommendation, one per ``k`` in increasing order (one item with ``fixed``).

    Notes
    -----
    Cost: ``n_folds`` x (one correlation + one selection per selector +
    one fit and the predictions of each predictor), then one final
    selection per selector chosen (:func:`~benchsel_lib.method.plan.search_cost`
    estimates it); one more inner search per block whose choice is kept.
    Memory O(S K P m N) for the out-of-fold predictions.
    """
    data: dict[str, Any] = dict(cov=cov, names=names, fixed=fixed)
    if fixed is None:  # with fixed, its size is the one k
        k_max = check_int(k_max, "k")
        ks = list(range(1, k_max + 1)) if ks is None else list(check_ks(ks, k_max))
        # a block at or above the largest size asked fixes nothing
        cuts = tuple(b for b in settings.blocks if b < ks[-1])
        if cuts and not all(sel.nested for sel in settings.selectors):  # else no block can be kept
            return _Blocks(train, k_max, settings, ks, cuts, data).run()
    return _search_path(train, k_max, settings, data, ks=ks)  # the one search without blocks


class _Blocks:
    """:func:`pipeline_path` with blocks: the path without blocks, fixed at a block whose choice is not nested."""

    def __init__(self, train: Any, k_max: int, settings: SearchSettings, ks: list[int], cuts: tuple[int, ...],
                 data: dict[str, Any]) -> None:
        self.train, self.k_max, self.ks, self.cuts = train, k_max, ks, cuts
        self.settings, self.data = settings, data
        self.nested = {sel.label: sel.nested for sel in settings.selectors}
        # the path without blocks, searched only as far as used (up to free_at, its choice there to look back at)
        self.free: dict[int, Recommendation] = {}
        self.free_at, self.free_prev = 0, None
        self.whole = sorted(set(ks) | set(cuts))  # the sizes one search without blocks is asked for (its plan)

    def _unblocked(self, lo: int, hi: int) -> list[Recommendation]:
        """The path without blocks at the sizes in ``(lo, hi]``, searched on as far as needed."""
        if self.free_at < hi:  # to its end for the nested rule: its one selector sees every size
            upto = self.k_max if isinstance(self.settings.choice, Nested) else hi
            part = _search_path(self.train, self.k_max, self.settings, self.data, first=self.free_at + 1,
                                ks=[k for k in self.whole if self.free_at < k <= upto], previous=self.free_prev,
                                plan_for=self.whole)
            self.free.update((r.k, r) for r in part)
            self.free_at, self.free_prev = upto, _as_previous(part[-1])
        return [self.free[k] for k in sorted(self.free) if lo < k <= hi]

    def _kept(self, lo: int, hi: int, chosen: list[int], asked: list[int]) -> list[Recommendation]:
        """The search from ``lo`` to ``hi`` with every candidate keeping the benchmarks ``chosen`` at ``lo``."""
        names = self.data["names"]  # checked by the search without blocks, which ran first
        kept = tuple(str(j if names is None else names[j]) for j in chosen)
        cands, errors = [], []
        for sel in self.settings.selectors:
            try:
                cands.append(replace(sel, initial=kept + tuple(b for b in sel.initial if b not in kept)))
            except ValueError as exc:  # a mandatory benchmark it excludes
                errors.append(f"{sel.label} left out above k={lo}: {exc}")
        if not cands:
            raise ValueError(f"no candidate selector can keep the choice at k={lo}: " + "; ".join(errors))
        last = hi == self.k_max  # the last search selects up to k_max, as the path without blocks does
        out = _search_path(self.train, hi, replace(self.settings, selectors=cands),
                           self.data, ks=asked if last else sorted(set(asked) | {hi}), first=max(lo, 1))
        for r in out if errors else []:
            r.note = "; ".join(([r.note] if r.note else []) + errors)
        return out

    def run(self) -> list[Recommendation]:
        """The recommendations at every size asked for, block by block."""
        recs: list[Recommendation] = []
        lo, chosen = 0, None  # the sizes above lo are searched from the choice at lo (None: the free path)
        for hi in [*self.cuts, self.k_max]:
            asked = [k for k in self.ks if lo < k <= hi]  # a block with no size asked still fixes the choice at hi
            out = self._unblocked(lo, hi) if chosen is None else self._kept(lo, hi, chosen, asked)
            recs += [r for r in out if r.k in asked]
            at = out[-1] if out else None  # the choice at hi (below the last block: at the block size)
            keep = at is not None and not self.nested.get(at.selector, True)
            lo, chosen = hi, list(at.selection) if keep else None
        return recs
