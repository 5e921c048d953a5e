"""Fitting a pipeline and predicting with it: what :class:`~benchsel_lib.method.pipeline.Pipeline` and
:class:`~benchsel_lib.method.pipeline.PipelineSearch` share (scikit-learn's conventions; :meth:`BasePipeline.fit_path`
fits one split for every subset size, the cross-validation's unit of work).
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from .._checks import check_bool, check_int, check_level, check_matrix
from .._names import name_positions
from ..data import ScoreMatrix, ScoreWarning, column_problems
from .calibration import (Conformal, GaussianIntervals, calibrator_named, conformal_interval, gaussian_interval,
                          inflation_factors)
from .correlation import Correlation
from .predictors import PREDICTORS, check_unreached, make_predictor, reveal_and_predict
from .scaling import FittedScaling, Scaling
from .lowrank import as_correlation_matrix
from .inner_search import DEFAULT_LEVELS, ChosenPredictor, Recommendation, SearchSettings, pipeline_path
from .oof import Prepared
from .folds import InnerFolds
from .selection import Selection
from .selectors import Selector
from .given import check_given, column_ranges

#: a pipeline class (a fixed Pipeline or a PipelineSearch)
P = TypeVar("P", bound="BasePipeline")

__all__ = ["BasePipeline", "Spec", "FitSeeds", "FittedPath", "PathStep", "StepPrediction", "MIN_INTERVAL_MODELS",
           "DEFAULT_LEVELS"]

#: Gaussian intervals need at least this many training models (from two, every correlation is +-1)
MIN_INTERVAL_MODELS = 3
_LOG = logging.getLogger(__name__)


# --------------------------------------------------------------------------- fitting in a split
@dataclass(frozen=True)
class FitSeeds:
    """The random streams a pipeline draws from when it is fit (anything ``numpy.random.default_rng`` takes).

    Attributes
    ----------
    selection : int, tuple or SeedSequence
        The random selection of a directly fit pipeline.
    inflation : int, tuple or SeedSequence
        The inner folds of a fitted variance inflation.
    search : int
        The inner folds and random candidates of a search.
    """

    selection: Any = 0
    inflation: Any = 0
    search: int = 0

    @classmethod
    def from_seed(cls, seed: int) -> FitSeeds:
        """Every stream from one seed (a pipeline fit on its own). O(1)."""
        return cls(selection=int(seed), inflation=int(seed), search=int(seed))


@dataclass
class PathStep:
    """One subset size of a fitted path: what is revealed and how it was chosen.

    Attributes
    ----------
    k : int
    selected : ndarray of int
        Revealed columns, in selection order.
    diagnostics : dict
        ``residual_fraction``, ``logdet``, ``mi`` of the selection (NaN where it has none: the default).
    choice : Recommendation or None
        The search's choice at ``k``.
    inflation : float or None
        The fitted variance factor at ``k``.
    """

    k: int
    selected: np.ndarray
    diagnostics: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(["residual_fraction", "logdet", "mi"], np.nan))
    choice: Recommendation | None = None
    inflation: float | None = None


@dataclass
class StepPrediction:
    """Predictions of one :class:`PathStep` for a set of query rows, in the pipeline's standardized space.

    Attributes
    ----------
    targets : ndarray of int
        The predicted (unrevealed) columns.
    mean : ndarray (v, T)
    var : ndarray (v, T) or None
        Conditional variances (Gaussian intervals), before any inflation.
    factor : float
        The given variance factor of the Gaussian intervals.
    inflation : float or None
        A variance factor fitted on inner folds.
    gaussian : bool
        The intervals are Gaussian (where ``var`` is given).
    conformal : Recommendation or None
        The search's choice whose residuals give conformal intervals.
    """

    targets: np.ndarray
    mean: np.ndarray
    var: np.ndarray | None = None
    factor: float = 1.0
    inflation: float | None = None
    gaussian: bool = False
    conformal: Recommendation | None = field(default=None, repr=False)

    @property
    def has_intervals(self) -> bool:
        """Whether the step's predictor gives intervals (Gaussian variances or conformal residuals). O(1)."""
        return self.conformal is not None or self.gaussian and self.var is not None

    def variance_factor(self, *, inflated: bool = False) -> float:
        """The factor of the Gaussian variances: the fitted one where ``inflated`` and fitted, else ``factor``. O(1)."""
        return self.inflation if inflated and self.inflation is not None else self.factor

    def interval(self, level: float, *, inflated: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
        """Bounds (v, T) of the central ``level`` interval, or None where none can be given.

        ``inflated`` applies the fitted variance factor to the Gaussian interval.
        O(v T) (one normal or conformal quantile, then elementwise bounds).
        """
        if self.conformal is not None:
            return conformal_interval(self.conformal, self.mean, self.targets, level)
        if not self.has_intervals:
            return None
        return gaussian_interval(self.mean, self.var * self.variance_factor(inflated=inflated), level)


@dataclass
class FittedPath:
    """A pipeline fit on training rows for several subset sizes (the cross-validation's unit of work).

    Attributes
    ----------
    scaling : FittedScaling
    steps : list of PathStep
        One per subset size that the selection reached.
    n_forced : int or None
        Mandatory benchmarks present in these training rows (None when the selector has none).
    notes, sparse
        As ``BasePipeline.notes_`` and ``sparse_``.
    fitted, gaussian, factor
        A direct fit's one fitted predictor and its Gaussian intervals (variances times ``factor``).
    train, conformal
        A search's training rows, on which (with ``correlation``) each step's choice is fit once, and whether
        it gives conformal intervals.
    """

    scaling: FittedScaling
    steps: list[PathStep]
    n_forced: int | None
    correlation: np.ndarray | None = field(default=None, repr=False)
    selection: Selection | None = None
    notes: list[str] = field(default_factory=list)
    sparse: bool = False
    fitted: Any = field(default=None, repr=False)
    gaussian: bool = False
    factor: float = 1.0
    train: np.ndarray | None = field(default=None, repr=False)
    conformal: bool = False
    _chosen: dict[tuple, Any] = field(default_factory=dict, repr=False)

    def predict(self, z: np.ndarray, *, steps: list[PathStep] | None = None) -> list[StepPrediction]:
        """Predictions for query rows ``z`` (standardized, NaN missing) at every step (or at ``steps``).

        Each row reveals its observed entries among the step's selected benchmarks.  Cost: one ``predict`` of
        each step's predictor on the ``v`` rows (for the Gaussian mean O(G k^3 + v k N) with G distinct reveal
        patterns, Eq. cond-mean), plus O(v N) per step to hide the unrevealed entries.
        """
        obs = ~np.isnan(z)
        out = []
        for st in self.steps if steps is None else steps:
            T = np.setdiff1d(np.arange(z.shape[1]), st.selected)
            mean, var = reveal_and_predict(self._predictor(st), z, obs, st.selected, T)
            conformal = self.conformal and st.choice is not None and st.choice.scale is not None
            out.append(StepPrediction(T, mean, var, self.factor, st.inflation, self.gaussian,
                                      st.choice if conformal else None))
        return out

    def _predictor(self, st: PathStep) -> Any:
        """The direct fit's predictor, or the step's choice fit on ``train`` (once per choice)."""
        if self.fitted is not None:
            return self.fitted
        c = st.choice
        key = (c.predictor, tuple(c.weights.items()))
        if key not in self._chosen:
            self._chosen[key] = ChosenPredictor(c.predictor, c.weights).fit(self.train, cov=self.correlation)
        return self._chosen[key]


@dataclass(frozen=True)
class _Training:
    """The training rows as both kinds of fit read them: in the scaling's units and standardized, their
    correlation, the models observing each benchmark, the mandatory benchmarks present (None: no selector has any)."""

    scaling: FittedScaling
    values: np.ndarray
    z: np.ndarray
    R: np.ndarray
    names: list[str]
    counts: np.ndarray
    n_forced: int | None


def _selector_reach(selectors: Sequence[Selector], counts: np.ndarray, n_models: int,
                    names: Sequence[str]) -> list[tuple[str, int]]:
    """Each selector's label and the benchmarks its filter and exclusions leave, mandatory ones counted. O(S N)."""
    out = []
    for sel in selectors:
        forced = np.zeros(len(names), dtype=bool)
        forced[sel.resolve_initial(names, missing="skip")] = True
        out.append((sel.label, sel.n_candidates(counts, forced, n_models, names=names)))
    return out


def _no_selection(k: int | None, X: np.ndarray, names: list[str], sels: list[Selector], constant: list[str], *,
                  select: bool) -> str:
    """Why no selection of ``k`` benchmarks is possible: constant columns, the candidates' filters. O(S N)."""
    why = (f" ({len(constant)} constant benchmark(s) are never selected: "
           f"{', '.join(map(repr, constant[:5]))}{' ...' if len(constant) > 5 else ''})" if constant else "")
    if select and k is not None:
        reach = _selector_reach(sels, np.isfinite(X).sum(axis=0), X.shape[0], names)
        if max(n for _, n in reach) < k:
            floors = ", ".join(f"{lab}: {n}" for lab, n in reach)
            filtered, excluded = any(s.min_observed for s in sels), any(s.exclude for s in sels)
            causes = [c for c, on in (("min_observed filters", filtered), ("exclude lists", excluded)) if on]
            fixes = [f for f, on in (("pass min_observed=0 to keep every observed benchmark a candidate", filtered),
                                     ("exclude fewer benchmarks", excluded)) if on]
            why += (f" (the candidates' {' and '.join(causes) or 'filters'} leave too few benchmarks: "
                    f"{floors}; lower k{''.join(', or ' + f for f in fixes)})")
    return f"no selection of k={k} benchmarks is possible on this matrix{why}"


@dataclass(frozen=True)
class Spec:
    """A pipeline's parameters resolved and checked once (:meth:`BasePipeline.validate`), what a fit reads.

    Attributes
    ----------
    scaling, correlation, calibrator
        The resolved components.
    selector, predictor : list
        The candidates (a search's first grid until a matrix picks one).
    search : SearchSettings or None
        The settings of the inner cross-validation a fit goes through (a search, or conformal intervals of one
        pair), the candidates, seed, levels and estimator set when fit; None: a direct fit.
    space
        A search's candidate space (None: the candidates of a fixed pipeline, whose inner held-out models follow
        the ``unreached`` rule of ``fit_path``).
    sparse_searched : bool
        A later grid of the space than the first was taken.
    """

    scaling: Scaling
    correlation: Correlation
    calibrator: Any
    selector: list
    predictor: list
    search: SearchSettings | None = None
    space: Any = None
    sparse_searched: bool = False


class BasePipeline(BaseEstimator):
    """What a fixed :class:`Pipeline` and a :class:`~benchsel_lib.method.pipeline.PipelineSearch` share.

    A subclass declares its parameters in its constructor and resolves them (``component``, a search's ``_steps``).

    Attributes
    ----------
    scaling_ : FittedScaling
    correlation_ : ndarray (N, N)
        The training correlation (standardized space).
    selection_ : Selection or None
        The selection of a directly fit pipeline (gains, residual variance, MI).
    choice_ : Recommendation or None
        A search's choice (selector, predictor, inner-CV R^2 of every candidate).
    benchmarks_ : list of str
    notes_ : list of str
        One line per column that looks wrong (constant: never selected; mixing 0-1 and 0-100 scales; each also
        a :class:`ScoreWarning`), and one per choice made for the matrix's size before the work: the floored
        pairwise correlation where EM would take too long (:func:`~benchsel_lib.method.correlation.em_too_costly`),
        a search on subsamples (:func:`~benchsel_lib.method.plan.plan_search`; logged at level INFO).  Empty on
        the paper's matrices and on small clean ones.
    sparse_ : bool
        Whether a search took a later grid of its candidate space than the first (a matrix missing more entries).
    selected : list of str
        The selected benchmarks, in order.
    """

    k: int | None
    seed: int
    name: str | None

    def set_params(self: P, **params: Any) -> P:
        """Set parameters (``selector__tie_break="argmax"`` replaces one field of a step); return self.

        A step's field replaces the (frozen) step; a fitted pipeline forgets its fit.
        O(number of parameters given); the new values are checked at the next ``fit`` (:meth:`validate`).
        """
        names = self._get_param_names()
        nested: dict[str, dict[str, Any]] = {}
        for key in params:
            comp, _, fld = key.partition("__")
            if comp not in names:
                raise ValueError(f"invalid parameter {comp!r} for {type(self).__name__}: use one of {tuple(names)}")
            if fld:
                nested.setdefault(comp, {})[fld] = params[key]
        super().set_params(**{key: v for key, v in params.items() if "__" not in key})
        for comp, changes in nested.items():
            current = self.component(comp)
            if isinstance(current, list) and len(current) == 1:
                current = current[0]
            if not dataclasses.is_dataclass(current) or isinstance(current, type):
                raise ValueError(f"{comp} is {current!r}, which has no fields to set")
            fields = [f.name for f in dataclasses.fields(current) if f.init]
            for fld in changes:
                if fld not in fields:
                    raise ValueError(f"invalid parameter {comp}__{fld}: {type(current).__name__} has the fields "
                                     f"{tuple(fields)}")
            setattr(self, comp, dataclasses.replace(current, **changes))
        for attr in [a for a in vars(self) if a.endswith("_") and not a.startswith("__")] + ["_revealed_fits"]:
            self.__dict__.pop(attr, None)  # the fitted state (scikit-learn's trailing underscore)
        return self

    def component(self, which: str) -> Any:
        """The parameter ``which`` resolved to its component object(s); raises ValueError naming a bad value.

        O(number of candidates): names are looked up in the registries, nothing is fit.
        """
        v = getattr(self, which)
        if which == "scaling":
            if isinstance(v, Scaling):
                return v
            if v in ("standard", "logit"):
                return Scaling(logit=v == "logit")
            raise ValueError(f"unknown scaling {v!r}: use 'standard', 'logit' or a Scaling")
        if which == "correlation":
            return v if isinstance(v, Correlation) else Correlation(v)
        if which == "calibrator":
            return calibrator_named(v)
        return v

    def _steps(self) -> dict[str, Any]:  # a search's own fields of Spec: its SearchSettings and space
        return {}

    def _candidate(self) -> BasePipeline:  # the pipeline without intervals whose clones the inner CV fits
        raise NotImplementedError

    def validate(self) -> Spec:
        """Check every parameter once; return the resolved components and whether the pipeline is a search.

        ``ValueError`` for a parameter that names nothing known, or a combination that cannot work (object
        predictors in a search, Gaussian intervals from a search, ``k=None`` without a budget).
        O(number of candidates); nothing is fit.
        """
        steps = {**self._steps(), "selector": self.component("selector"), "predictor": self.component("predictor")}
        calibrator = self.component("calibrator")
        if isinstance(calibrator, Conformal):  # its residuals come from an inner search of this one pair
            steps.setdefault("search", SearchSettings(stack=False))
        spec = Spec(scaling=self.component("scaling"), correlation=self.component("correlation"),
                    calibrator=calibrator, **steps)
        if self.k is not None:
            check_int(self.k, "k")
        elif spec.search:
            raise ValueError("a search needs k, the number of benchmarks to select")
        elif len(spec.selector) != 1 or spec.selector[0].budget is None:
            raise ValueError("k=None (as many as the budget allows) needs one selector with a budget")
        check_int(self.seed, "seed", minimum=0)
        if spec.search and not all(isinstance(p, str) for p in spec.predictor):
            raise ValueError("a pipeline with candidates or conformal intervals takes predictor names "
                             f"({sorted(PREDICTORS)}), not objects")
        if spec.search and isinstance(spec.calibrator, GaussianIntervals):
            raise ValueError("a search makes conformal intervals: use calibrator='conformal' (or None)")
        return spec

    @property
    def label(self) -> str:
        """The pipeline's name in tables (``name``, else ``SELECTOR+PREDICTOR`` or ``"pipeline"``). O(1)."""
        if self.name:
            return str(self.name)
        spec = self.validate()
        sels, preds = spec.selector, spec.predictor
        if len(sels) == 1 and len(preds) == 1 and isinstance(preds[0], str):
            return f"{sels[0].label}+{preds[0]}"
        return "pipeline"

    def fit_path(
        self,
        X: np.ndarray,
        *,
        names: Sequence[str],
        k_max: int,
        ks: Sequence[int] | None = None,
        seeds: FitSeeds | None = None,
        correlate: Callable[[Correlation, np.ndarray, np.ndarray], np.ndarray] | None = None,
        intervals: bool = True,
        unreached: str = "skip",
        context: str = "cv",
        revealed: Sequence[int] | None = None,
        prepared: Prepared | None = None,
        exclude: Sequence[str] = (),
    ) -> FittedPath:
        """Fit on training rows for every subset size up to ``k_max`` (the unit of work of cross-validation).

        Parameters
        ----------
        X : ndarray (M, N)
            Training scores in original units, NaN missing (every column observed).
        names : sequence of str
        k_max : int
            Largest subset size (capped at what the selector can reach).
        ks : sequence of int, optional
            Only these subset sizes are needed (the selection still runs to ``k_max``).
        seeds : FitSeeds, optional
            Random streams (default: all from ``self.seed``).
        correlate : callable, optional
            ``correlate(correlation, values, standardized) -> R`` (default: ``correlation.estimate``).
        intervals : bool
            Fit what the intervals need (a fitted inflation, conformal residuals).
        unreached : {"skip", "mean"}
            The protocol's rule for rows that reveal nothing (a search's is
            :data:`~benchsel_lib.method.pipeline.SEARCH_UNREACHED`).
        context : {"cv", "full"}
            A cross-validation split or a whole matrix (the EM tolerance).
        revealed : sequence of int, optional
            A given revealed set instead of a selection.
        prepared : Prepared, optional
            What is not computed again (:class:`~benchsel_lib.method.oof.Prepared`).
        exclude : sequence of str
            Benchmarks no selector may pick here, beside each selector's own (mandatory ones never excluded).

        Returns
        -------
        FittedPath

        Notes
        -----
        Cost: that of :meth:`fit` with the selection run to ``k_max`` (no correlation estimate when
        ``prepared`` has one); a search runs :func:`~benchsel_lib.method.inner_search.pipeline_path`
        (:func:`~benchsel_lib.method.plan.search_cost` estimates it).
        """
        X = np.asarray(X, dtype=float)
        spec = self._candidates_for(self.validate(), X)
        if exclude:
            spec = dataclasses.replace(spec, selector=[
                dataclasses.replace(s, exclude=s.exclude + tuple(
                    b for b in map(str, exclude) if b not in s.exclude and b not in s.initial))
                for s in spec.selector])
        check_unreached(unreached)
        seeds = seeds or FitSeeds.from_seed(int(self.seed))
        names = [str(b) for b in names]
        prepared = prepared or Prepared()
        fs = prepared.scaling if prepared.scaling is not None else spec.scaling.fit(X)
        values, z = fs.values(X), fs.transform(X)
        corr = spec.correlation
        notes: list[str] = []
        if prepared.correlation is not None:
            R = as_correlation_matrix(prepared.correlation)  # a wide matrix's stays low-rank
        else:
            # EM replaced where it would take too long: said before the estimate
            cnote = corr.note(values, standardized=z)
            if cnote:
                _LOG.info(cnote)
                notes.append(cnote)
            R = correlate(corr, values, z) if correlate is not None else corr.estimate(values, z, context=context)
        counts = (~np.isnan(X)).sum(axis=0)
        initial = set().union(*(s.initial for s in spec.selector))
        n_forced = sum(1 for b in initial if b in names) if initial else None
        data = _Training(fs, values, z, R, names, counts, n_forced)
        kw = dict(k_max=k_max, ks=ks, seeds=seeds, intervals=intervals, unreached=unreached, revealed=revealed)
        path = (self._fit_search(spec, data, **kw) if spec.search else
                self._fit_direct(spec, data, correlate=correlate, selections=prepared.selections, **kw))
        path.notes[:0] = notes
        path.sparse = spec.sparse_searched
        return path

    @staticmethod
    def _candidates_for(spec: Spec, X: np.ndarray) -> Spec:
        """``spec`` with the grid that a search's space picks for the training rows ``X`` (by missing share). O(M N)."""
        space = spec.space
        if space is None:
            return spec
        grid = space.for_matrix(X)
        return dataclasses.replace(spec, selector=list(grid.selectors), predictor=list(grid.predictors),
                                   search=dataclasses.replace(spec.search, stack=grid.stack),
                                   sparse_searched=grid is not space[0])

    @staticmethod
    def _direct_steps(sel: Selector, data: _Training, *, k_max: int | None, ks: Sequence[int] | None, seed: Any,
                      revealed: Sequence[int] | None,
                      selections: Mapping[int, Sequence[int]] | None) -> tuple[list[PathStep], Selection | None]:
        """A direct fit's steps by size (those in ``ks``) and its selection: ``revealed`` or ``selections`` when
        given, else the selector's (no step when no benchmark can be selected)."""
        if revealed is not None:  # one step, at the given set's size
            selections, ks = {len(revealed): list(revealed)}, None
        if selections is not None:
            return [PathStep(k, np.asarray(selections[k], dtype=int))
                    for k in sorted(selections) if ks is None or k in ks], None
        z, R, names, counts = data.z, data.R, data.names, data.counts
        k_eff = None if k_max is None else min(int(k_max), len(names),
                                               _selector_reach([sel], counts, z.shape[0], names)[0][1])
        if k_eff is not None and k_eff < 1:
            return [], None
        kw = dict(names=names, counts=counts, n_models=z.shape[0], train=z, seed=seed, missing_initial="skip")
        selection = sel.select(R, k_eff, **kw)
        order = np.asarray(selection.order, dtype=int)
        sizes = [k for k in range(1, order.size + 1) if ks is None or k in ks]
        # a nested objective's smaller selections are prefixes of this one; anchor points select per size
        per_size = {k: selection if sel.nested or k == order.size else sel.select(R, k, **kw) for k in sizes}
        steps = [PathStep(k, np.asarray(s.order[:k], dtype=int),
                          {"residual_fraction": float(s.residual_fraction[k - 1]), "logdet": float(s.logdet[k - 1]),
                           "mi": float(s.mi[k - 1]) if len(s.mi) >= k else np.nan})
                 for k, s in per_size.items()]
        return steps, selection

    def _fit_direct(self, spec: Spec, data: _Training, *, k_max: int | None, ks: Sequence[int] | None,
                    seeds: FitSeeds, correlate: Callable | None, intervals: bool, unreached: str,
                    revealed: Sequence[int] | None, selections: Mapping[int, Sequence[int]] | None) -> FittedPath:
        """One selector and one predictor: select (or take ``revealed`` or ``selections``), fit it and the inflation."""
        fs, values, z, R, n_forced = data.scaling, data.values, data.z, data.R, data.n_forced
        sel: Selector = spec.selector[0]
        pred = spec.predictor[0]
        steps, selection = self._direct_steps(sel, data, k_max=k_max, ks=ks, seed=seeds.selection, revealed=revealed,
                                              selections=selections)
        if not steps and selection is None:
            return FittedPath(fs, [], n_forced, R)
        order = steps[-1].selected if selection is None else np.asarray(selection.order, dtype=int)
        # fit after the selection: the predictor's copy of the N x N correlation and the selection's work
        # arrays are then never held together
        fitted = (make_predictor(pred) if isinstance(pred, str) else copy.deepcopy(pred)).fit(z, cov=R)  # own copy
        cal = spec.calibrator
        gaussian = isinstance(cal, GaussianIntervals)
        fixed = float(cal.inflation) if gaussian and cal.inflation != "inner" else 1.0
        if intervals and gaussian and cal.inflation == "inner" and steps:
            fresh = (make_predictor(pred) if isinstance(pred, str) else copy.deepcopy(pred))
            # one order, or (anchor points) each size's own, its prefix of length k scored at that k
            orders = {0: order} if sel.nested or revealed is not None else {st.k: st.selected for st in steps}
            folds = InnerFolds(cal.inner_folds, seeds.inflation, stream=None)  # the inflation's own stream
            factors = inflation_factors(values, z, orders, order.size, correlation=spec.correlation,
                                        predictor=fresh, folds=folds, unreached=unreached, correlate=correlate)
            for st in steps:
                st.inflation = float(factors[0 if 0 in orders else st.k][st.k - 1])
        return FittedPath(fs, steps, n_forced, R, selection, fitted=fitted, gaussian=gaussian, factor=fixed)

    def _fit_search(self, spec: Spec, data: _Training, *, k_max: int | None, ks: Sequence[int] | None,
                    seeds: FitSeeds, intervals: bool, revealed: Sequence[int] | None,
                    unreached: str) -> FittedPath:
        """A search (candidates, a stack or conformal intervals): :func:`pipeline_path` chooses at each size."""
        fs, z, R, names, n_forced = data.scaling, data.z, data.R, data.names, data.n_forced
        levels = DEFAULT_LEVELS if intervals and spec.calibrator is not None else ()
        # one pair, nothing to score: the smallest inner CV
        bare = len(spec.selector) == 1 and len(spec.predictor) == 1 and not spec.search.stack and not levels
        settings = dataclasses.replace(spec.search, selectors=spec.selector, predictors=spec.predictor,
                                       seed=seeds.search, levels=levels, n_folds=2 if bare else spec.search.n_folds,
                                       unreached=unreached if spec.space is None else spec.search.unreached,
                                       estimator=self._candidate())
        search = partial(pipeline_path, z, cov=R, names=names, settings=settings)
        if revealed is not None:
            recs = search(len(revealed), fixed=list(revealed))
        else:
            reach = _selector_reach(spec.selector, (~np.isnan(z)).sum(axis=0), z.shape[0], names)
            k_max = min(int(k_max), max(n for _, n in reach))  # the largest size some candidate selector can reach
            ks = None if ks is None else [k for k in ks if k <= k_max]
            if k_max < 1 or ks == []:
                return FittedPath(fs, [], n_forced, R)
            recs = [r for r in search(k_max, ks=ks) if len(r.selection) >= r.k]
        steps = [PathStep(r.k, np.asarray(r.selection, dtype=int), choice=r) for r in recs]
        notes = [recs[0].plan] if recs and recs[0].plan else []
        return FittedPath(fs, steps, n_forced, R, notes=notes, train=z, conformal=spec.calibrator is not None)

    def fit(self: P, matrix: ScoreMatrix, *, revealed: Sequence[str] | None = None) -> P:
        """Fit on a whole score matrix: scale, estimate, select ``k`` benchmarks, fit the predictor; return self.

        Parameters
        ----------
        matrix : ScoreMatrix
            Training scores in original units (every benchmark observed at least once).
        revealed : sequence of str, optional
            The benchmarks a new model ran, in place of a selection (a search then chooses only the predictor).

        Notes
        -----
        Cost: the correlation estimate (pairwise O(M N^2); EM O(M N^2 + N^3) per iteration, replaced by the
        floored pairwise correlation where it would take too long), the selection (O(k^2 N) greedy entropy,
        O(k N^3) greedy MI, plus one O(N^3) factorization for its diagnostics) and, for a search, the inner
        cross-validation planned within :data:`~benchsel_lib.method.plan.SEARCH_BUDGET`. Memory: a few N x N
        arrays and O(M N).

        Raises
        ------
        ValueError
            Fewer than 2 models or benchmarks; unknown revealed or mandatory benchmarks; ``k`` above the number
            of benchmarks, or equal to it for a search; no selection of ``k`` possible under the candidates'
            filters; a correlation estimate whose N x N arrays would exceed
            :data:`~benchsel_lib.method.correlation.DENSE_MEMORY_LIMIT`.
        """
        check_matrix(matrix)
        names = list(matrix.benchmarks)
        if matrix.shape[0] < 2:  # before the column checks: with one model every column is constant
            raise ValueError(f"the matrix has {matrix.shape[0]} model: a pipeline needs at least 2 models (rows), "
                             "to see how the benchmarks vary together")
        if len(names) < 2:
            raise ValueError(f"the matrix has {len(names)} benchmark: a pipeline needs at least two, one to run and "
                             f"one to predict")
        X = np.asarray(matrix.scores, dtype=float)
        spec = self._candidates_for(self.validate(), X)
        spec.correlation.check_memory(X)  # an estimate too large for memory is refused before any work
        cols = self._check_reveal(names, spec, revealed)
        k = len(cols) if cols is not None else self.k
        notes, constant, flat = self._column_notes(X, names, spec, select=cols is None)
        with threadpool_limits(limits=1, user_api="blas"):  # EM and the inner CV: many small solves, one thread is fastest
            path = self.fit_path(X, names=names, k_max=k, ks=None if k is None else [k], context="full", revealed=cols,
                                 exclude=constant)
        if not path.steps:
            raise ValueError(_no_selection(k, X, names, spec.selector, constant, select=cols is None))
        self.__dict__.pop("refit_", None)  # a search's best estimator of an earlier fit
        self.benchmarks_ = names
        self.matrix_ = matrix
        self.scaling_ = path.scaling
        self.correlation_ = path.correlation
        self.path_ = path
        self.step_ = path.steps[-1]
        self.selection_: Selection | None = path.selection
        self.choice_: Recommendation | None = self.step_.choice
        self.notes_: list[str] = notes + list(path.notes)
        self.sparse_ = path.sparse
        for text in dict.fromkeys(st.choice.note for st in path.steps if st.choice is not None and st.choice.note):
            # the search fell back (too few models) or left a candidate out: said, not only recorded
            warnings.warn(f"{self.label}: {text}", UserWarning, stacklevel=2)
            self.notes_.append(text)
        self.ranges_ = column_ranges(X)
        self._no_interval = self._interval_gaps(X, flat, spec)
        self._revealed_fits: dict[tuple[int, ...], tuple[FittedPath, PathStep]] = {
            tuple(sorted(int(j) for j in self.step_.selected)): (path, self.step_)}
        return self

    def _check_reveal(self, names: list[str], spec: Spec, revealed: Sequence[str] | None) -> list[int] | None:
        """The columns of ``revealed`` (None: the pipeline selects), checked against ``names`` and ``k``."""
        if revealed is not None:
            cols = name_positions(revealed if isinstance(revealed, str) else [str(b) for b in revealed], names,
                                  role="revealed")
            if not cols:
                raise ValueError("revealed lists no benchmark: give at least one, or None to select")
            if len(cols) >= len(names):
                raise ValueError("nothing to predict: every benchmark of the matrix is revealed")
            return cols
        for s in spec.selector:
            s.check_names(names)  # unknown mandatory or excluded benchmarks are an error here
        if self.k is not None and self.k > len(names):
            raise ValueError(f"k={self.k} is out of range: the matrix has {len(names)} benchmarks")
        if self.k is not None and self.k == len(names) and spec.search:  # its choice scores predictions
            raise ValueError(f"k={self.k} leaves nothing to predict: the matrix has {len(names)} benchmarks and the "
                             f"pipeline chooses its selection by how well it predicts the rest; choose k <= "
                             f"{len(names) - 1}")
        return None

    @staticmethod
    def _column_notes(X: np.ndarray, names: list[str], spec: Spec, *,
                      select: bool) -> tuple[list[str], list[str], list[int]]:
        """Warn about constant, mixed-scale and (logit) non-positive columns; return the notes, the constant
        columns to exclude (a constant column keeps variance 1, so greedy entropy would pick it) and all of them."""
        mandatory = set().union(*(s.initial for s in spec.selector))
        notes: list[str] = []
        constant: list[str] = []
        flat: list[int] = []
        for problem in column_problems(X, names):
            text = problem.message
            if problem.kind == "constant":
                flat.append(names.index(problem.benchmark))
                forced = problem.benchmark in mandatory
                if select and forced:
                    text += ": it carries no information, but is selected because it is mandatory"
                elif select:
                    text += ": it carries no information and is never selected"
                    constant.append(problem.benchmark)
                if not forced:
                    text += "; its prediction is that value, without an interval"
            warnings.warn(text, ScoreWarning, stacklevel=3)
            notes.append(text)
        if spec.scaling.logit:
            with np.errstate(invalid="ignore"):
                low = (X <= 0).sum(axis=0)
            for j in np.flatnonzero(low):
                text = (f"benchmark {names[j]!r}: {low[j]} of {int((~np.isnan(X[:, j])).sum())} observed scores are "
                        f"<= 0; logit scaling (Appendix K) clips them all to the same floor (eps times the column's "
                        f"maximum): standard scaling suits scores that can be negative")
                warnings.warn(text, ScoreWarning, stacklevel=3)
                notes.append(text)
        return notes, constant, flat

    def _interval_gaps(self, X: np.ndarray, flat: list[int], spec: Spec) -> np.ndarray:
        """The columns without intervals: constant ones, or all below :data:`MIN_INTERVAL_MODELS` models (warned)."""
        gaps = np.zeros(X.shape[1], dtype=bool)
        gaps[flat] = True
        if X.shape[0] < MIN_INTERVAL_MODELS and isinstance(spec.calibrator, GaussianIntervals):
            text = (f"only {X.shape[0]} training models: every correlation from two points is +-1, too few for "
                    "Gaussian intervals; predictions come without intervals")
            warnings.warn(f"{self.label}: {text}", UserWarning, stacklevel=3)
            self.notes_.append(text)
            gaps[:] = True
        return gaps

    def _check_fitted(self) -> None:
        if not hasattr(self, "path_"):
            raise ValueError("this Pipeline is not fitted: call fit(matrix) first")

    @property
    def selected(self) -> list[str]:
        """The selected benchmarks, in selection order. O(k)."""
        self._check_fitted()
        return [self.benchmarks_[j] for j in self.step_.selected]

    def _fit_revealed(self, cols: list[int]) -> tuple[FittedPath, PathStep]:
        """The fitted path and step for a revealed set not fitted yet."""
        spec = self.validate()
        if spec.search or isinstance(spec.calibrator, GaussianIntervals) and spec.calibrator.inflation == "inner":
            X = np.asarray(self.matrix_.scores, dtype=float)
            path = self.fit_path(X, names=self.benchmarks_, k_max=len(cols), context="full", revealed=cols,
                                 prepared=Prepared(correlation=self.correlation_))  # seeds: fit_path's, from seed
            self.notes_.extend(n for n in path.notes if n not in self.notes_)
            return path, path.steps[-1]
        return self.path_, self.step_  # the same fitted predictor, conditioned on the given set

    def predict(self, scores: Mapping[str, float] | Iterable[tuple[str, float]] | pd.DataFrame | ScoreMatrix,
                *, level: float = 0.9, skip_missing: bool = False, strict: bool = False) -> pd.DataFrame:
        """Predict the benchmarks not given, with central ``level`` intervals, in the matrix's original units.

        Parameters
        ----------
        scores : mapping, Series or pairs (one model), or DataFrame / ScoreMatrix (one row per model, NaN = not run)
            Scores in original units (checked by :func:`check_given`).
        level : float in (0, 1)
            Nominal coverage of the intervals.
        skip_missing : bool
            Ignore NaN values of a single model's scores.
        strict : bool
            Refuse a given score of implausible size instead of warning (:class:`ScaleWarning`).

        Returns
        -------
        pandas.DataFrame
            Indexed by the benchmarks not given (``benchmark``; for several models ``model, benchmark``), with
            columns ``mean, lower, upper`` (original units; NaN bounds where the fit supports no interval: a
            constant benchmark, or fewer than :data:`MIN_INTERVAL_MODELS` training models for Gaussian
            intervals), ``sd`` where the intervals are Gaussian, and ``n_observed`` (training models that ran
            the benchmark). ``attrs``: ``used``, ``level``, ``pipeline``, ``choice`` (a search's pair) and
            ``inflation`` (the variance factor used).

        Notes
        -----
        Cost: the chosen predictor on one row per model (the Gaussian mean, Eq. cond-mean, O(|A|^3 + |A| N)
        for |A| given scores) and O(N) per model for the bounds.

        Which fit predicts, per set of given benchmarks (order ignored):

        * the set the pipeline selected: the fit of :meth:`fit`;
        * another set, for a fixed pipeline with Gaussian intervals of a given variance factor (or none): the
          same fitted predictor, conditioned on that set;
        * another set, for a pipeline with conformal intervals or a variance factor fitted on inner folds
          (``inflation="inner"``): a fit for exactly that set, as :meth:`fit` with ``revealed=`` (with the
          pipeline's seed, on the training correlation of the first fit), made once per set and kept;
        * another set, for a :class:`~benchsel_lib.method.pipeline.PipelineSearch`: refused (``ValueError``);
          ``fit(matrix, revealed=[...])`` chooses the predictor for those benchmarks.
        """
        self._check_fitted()
        level = check_level(level)
        check_bool(skip_missing, "skip_missing")
        check_bool(strict, "strict")
        if isinstance(scores, (pd.DataFrame, ScoreMatrix)):
            frame = scores.to_frame() if isinstance(scores, ScoreMatrix) else scores
            return self._predict_many(frame, level, strict=strict)
        if isinstance(scores, pd.Series):  # one model's row, read as benchmark -> score pairs
            scores = list(scores.items())
        elif not isinstance(scores, (Mapping, str, bytes)) and isinstance(scores, Iterable):
            scores = list(scores)  # an iterator of pairs is read once, here
        used = check_given(scores, self.matrix_, skip_missing=skip_missing, ranges=self.ranges_, strict=strict)
        out = self._predict_one(used, level)
        given = scores.keys() if isinstance(scores, Mapping) else [n for n, _ in scores]
        out.attrs["ignored"] = [str(n) for n in given if str(n) not in used]
        return out

    def _predict_one(self, used: dict[str, float], level: float) -> pd.DataFrame:
        if not used:
            raise ValueError("no scores given (every entry is empty)")
        names = self.benchmarks_
        cols = [names.index(b) for b in used]
        if len(cols) >= len(names):
            raise ValueError("nothing to predict: every benchmark of the matrix was given")
        key = tuple(sorted(cols))
        if key not in self._revealed_fits:  # fit once per revealed set
            self._revealed_fits[key] = self._fit_revealed(cols)
        path, step = self._revealed_fits[key]
        fs = path.scaling
        row = np.full((1, len(names)), np.nan)
        row[0, cols] = list(used.values())
        z = np.full_like(row, np.nan)
        z[0, cols] = fs.transform(row[:, cols], np.asarray(cols))
        sp = path.predict(z, steps=[dataclasses.replace(step, k=len(cols), selected=np.asarray(cols, dtype=int))])[0]
        T = sp.targets
        lower = upper = np.full(T.size, np.nan)
        bounds = sp.interval(level, inflated=True)
        if bounds is not None:
            lower, upper = fs.inverse(bounds[0][0], T), fs.inverse(bounds[1][0], T)
        out = pd.DataFrame({"mean": fs.inverse(sp.mean[0], T), "lower": lower, "upper": upper},
                           index=pd.Index([names[j] for j in T], name="benchmark"))
        factor = sp.variance_factor(inflated=True) if sp.var is not None and sp.has_intervals else None
        if factor is not None:
            sd_z = np.sqrt(sp.var[0] * factor)
            st_ = fs.standardizer
            if fs.smax is None:
                out["sd"] = st_.std[T] * sd_z
            else:  # delta method through the inverse logit
                p = expit(st_.mean[T] + st_.std[T] * sp.mean[0])
                out["sd"] = fs.smax[T] * p * (1.0 - p) * st_.std[T] * sd_z
        out.loc[self._no_interval[T], out.columns[1:]] = np.nan  # constant columns, too few models (said when fitted)
        out["n_observed"] = self.matrix_.observed.sum(axis=0)[T].astype(int)
        out.attrs.update(used=dict(used), level=level, pipeline=self.label,
                         choice=None if step.choice is None else step.choice.name, inflation=factor)
        return out

    def _predict_many(self, frame: pd.DataFrame, level: float, *, strict: bool) -> pd.DataFrame:
        if frame.shape[0] == 0:
            raise ValueError("scores has no rows (models)")
        cols = [str(c) for c in frame.columns]
        for dup in sorted({c for c in cols if cols.count(c) > 1}):
            raise ValueError(f"benchmark {dup!r} is given more than once")
        rows = [str(i) for i in frame.index]
        for dup in sorted({r for r in rows if rows.count(r) > 1}):
            raise ValueError(f"model {dup!r} is given more than once (one row per new model)")
        values = frame.apply(pd.to_numeric, errors="coerce")
        flags = frame.map(lambda v: isinstance(v, (bool, np.bool_)))  # True is not a score of 1
        bad = (values.isna() & frame.notna()) | flags
        if bad.to_numpy().any():
            i, j = np.argwhere(bad.to_numpy())[0]
            v = frame.iat[i, j]
            v = v.item() if isinstance(v, np.generic) else v  # True, not numpy's np.True_
            raise ValueError(f"value {v!r} for benchmark {cols[j]!r} (model {frame.index[i]!r}) is not a number")
        parts, used_all, infl = [], {}, {}
        for i, model in enumerate(frame.index):
            row = list(zip(cols, values.iloc[i].to_numpy(dtype=float)))
            try:
                used = check_given(row, self.matrix_, skip_missing=True, ranges=self.ranges_, strict=strict)
                part = self._predict_one(used, level)
            except ValueError as exc:
                raise ValueError(f"model {str(model)!r}: {exc}") from None
            used_all[str(model)] = used
            infl[str(model)] = part.attrs["inflation"]
            parts.append(part.assign(model=str(model)).set_index("model", append=True).reorder_levels(
                ["model", "benchmark"]))
        out = pd.concat(parts)
        out.attrs.update(used=used_all, level=level, pipeline=self.label, inflation=infl)
        return out

