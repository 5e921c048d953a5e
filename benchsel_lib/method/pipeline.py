"""The one contract of the method: a :class:`Pipeline` from scores to selected benchmarks and predictions.

A pipeline is five fixed steps: scaling (:class:`~benchsel_lib.method.scaling.Scaling`), correlation
(:class:`~benchsel_lib.method.correlation.Correlation`, pairwise or EM, Section 3 and Appendix G), selection
(:class:`~benchsel_lib.method.selectors.Selector`, Algorithms 1-2, Appendices B-C), prediction
(:mod:`benchsel_lib.method.predictors`) and calibration
(:class:`~benchsel_lib.method.calibration.GaussianIntervals`, Eq. cond-var, or
:class:`~benchsel_lib.method.calibration.Conformal`).  The paper's pipeline is :meth:`Pipeline.paper`.

A choice among several selections and predictors is a :class:`PipelineSearch` (what :meth:`Pipeline.auto`
returns), to :class:`Pipeline` what scikit-learn's ``GridSearchCV`` is to an estimator: candidates as data
(:class:`~benchsel_lib.method.candidates.CandidateSpace`), inner folds as a splitter, ``cv_results_``,
``best_params_`` and ``best_estimator_``; the work is :func:`~benchsel_lib.method.inner_search.pipeline_path`.
:func:`clone` is ``sklearn.base.clone``; nested step parameters are set as ``selector__tie_break``.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from sklearn.base import clone

from .._checks import check_int, check_nonnegative
from .calibration import Conformal, GaussianIntervals
from .candidates import DEFAULT_MIN_OBSERVED, CandidateSpace, Grid, auto_space, with_options
from .choice import DEFAULT_RULE
from .correlation import Correlation
from .fitting import BasePipeline, FitSeeds, FittedPath, PathStep
from .gaussian import GaussianPredictor
from .given import ScaleWarning, check_given
from .inner_search import AUTO_BLOCKS, ChosenPredictor, SearchSettings
from .oof import use_default_estimator
from .predictors import PREDICTORS, check_predictor_name
from .scaling import Scaling
from .selection import check_tie_break
from .selectors import SELECTORS, Selector, selector_named

__all__ = [
    "Pipeline",
    "PipelineSearch",
    "SEARCH_UNREACHED",
    "clone",
    "parse_pipeline",
    "PAPER_OBJECTIVES",
    "FitSeeds",
    "FittedPath",
    "check_given",
    "ScaleWarning",
]

#: the paper's pipelines by objective (Gaussian conditional mean, Gaussian intervals)
PAPER_OBJECTIVES = ("entropy", "mi", "random")


def parse_pipeline(name: str) -> tuple[str, str] | None:
    """``"auto"`` -> None; ``"selector+predictor"`` -> the pair; anything else raises ValueError. O(1)."""
    if name == "auto":
        return None
    if not isinstance(name, str) or name.count("+") != 1:
        raise ValueError(f"unknown pipeline {name!r}: use {', '.join(PAPER_OBJECTIVES)}, 'auto' or "
                         f"'SELECTOR+PREDICTOR' with a selector in {tuple(SELECTORS)} and a predictor in "
                         f"{sorted(PREDICTORS)}")
    s, p = name.split("+")
    if s not in SELECTORS:
        raise ValueError(f"unknown selector {s!r} in {name!r}: use one of {tuple(SELECTORS)}")
    check_predictor_name(p, where=f" in {name!r}")
    return s, p


@dataclasses.dataclass(eq=False, repr=False)
class Pipeline(BasePipeline):
    """One fixed pipeline: scaling -> correlation -> selection -> prediction -> calibration.

    Parameters
    ----------
    k : int or None
        How many benchmarks to select (None: as many as the selector's budget
        allows). Cross-validation scores every size up to its own ``k_max``.
    scaling : Scaling or {"standard", "logit"}
    correlation : Correlation or {"auto", "pairwise", "em", "fast"}
    selector : Selector or preset name
        Presets: :data:`~benchsel_lib.method.selectors.SELECTORS`.
    predictor : predictor or name
        Names: :data:`~benchsel_lib.method.predictors.PREDICTORS`.
    calibrator : GaussianIntervals, Conformal, {"gaussian", "inflation", "conformal"} or None
        Conformal intervals are read off an inner cross-validation of the
        training models (of this one pair: nothing is chosen).
    seed : int
        Seed of the random selection, the inner folds and the fitted inflation.
    name : str, optional
        Label in cross-validation tables (default: the objective for the
        paper's pipelines, ``"SELECTOR+PREDICTOR"`` for a named pair).

    Attributes are those of :class:`BasePipeline`.

    Examples
    --------
    >>> from benchsel_lib import Pipeline, load_matrix          # doctest: +SKIP
    >>> p = Pipeline.paper(k=5).fit(load_matrix("mteb"))        # doctest: +SKIP
    >>> p.selected                                              # doctest: +SKIP
    >>> p.predict({b: 0.6 for b in p.selected})                 # doctest: +SKIP
    """

    k: int | None = 5
    _: dataclasses.KW_ONLY
    scaling: Scaling | str = "standard"
    correlation: Correlation | str = "auto"
    selector: Selector | str = "mi"
    predictor: Any = "gaussian"
    calibrator: GaussianIntervals | Conformal | str | None = "gaussian"
    seed: int = 0
    name: str | None = None

    def component(self, which: str) -> Any:
        """The parameter ``which`` resolved to its component object; raises ValueError naming a bad value. O(1)."""
        v = getattr(self, which)
        if which == "selector":
            if not isinstance(v, (str, Selector)):
                raise ValueError(f"selector must be a Selector or a preset name, got {v!r}: a choice among several "
                                 "is a PipelineSearch (Pipeline.auto)")
            return [selector_named(v)]
        if which == "predictor":
            if not isinstance(v, str) and isinstance(v, Sequence):
                raise ValueError(f"predictor must be one name or object, got {v!r}: a choice among several is a "
                                 "PipelineSearch (Pipeline.auto)")
            if isinstance(v, str):
                check_predictor_name(v)
            elif not (hasattr(v, "fit") and hasattr(v, "predict")):
                raise ValueError(f"predictor must be a name or implement fit/predict, got {type(v).__name__}")
            return [v]
        return super().component(which)

    def _candidate(self) -> Pipeline:
        return clone(self).set_params(calibrator=None)

    @classmethod
    def paper(
        cls,
        k: int | None = 5,
        *,
        objective: str = "mi",
        estimator: str = "auto",
        config: str = "released",
        logit: bool = False,
        tie_break: str = "auto",
        min_observed: int | float | None = None,
        initial: Sequence[str] = (),
        costs: Mapping[str, float] | None = None,
        budget: float | None = None,
        lazy: bool = False,
        ridge: float = 1e-2,
        predictor: Any = None,
        inflation: float | str = 1.0,
        inner_folds: int = 3,
        seed: int = 0,
        name: str | None = None,
    ) -> Pipeline:
        """The paper's pipeline: greedy ``objective`` on the training correlation, Gaussian conditional mean.

        Parameters
        ----------
        objective : {"entropy", "mi", "random"}
            Algorithm 1, Algorithm 2 or the random baseline (also "lasso",
            "greedy", "anchors", "sparse", "mean-lasso", "imputed-lasso", "trace", "imputed-trace").
        estimator, config
            The correlation estimate (Section 5.1, Appendix G; ``"auto"``: the paper's rule, the floored
            pairwise correlation where EM would take too long, ``notes_`` says so).
        logit : bool
            Work in logit space (Appendix K).
        tie_break, min_observed, initial, costs, budget, lazy
            Options of the :class:`~benchsel_lib.method.selectors.Selector`.
        ridge : float
            Ridge of the conditional mean (1e-2 in Section 5.1).
        predictor : predictor, optional
            Another predictor in place of the Gaussian conditional mean.
        inflation : float or "inner"
            Variance factor of the Gaussian intervals, or fit it on ``inner_folds`` inner folds.

        O(1): nothing is fit.
        """
        return cls(
            k,
            scaling=Scaling(logit=logit),
            correlation=Correlation(estimator, config),
            selector=Selector(objective, min_observed=min_observed, initial=initial, costs=costs,
                              budget=budget, tie_break=tie_break, lazy=lazy),
            predictor=GaussianPredictor(ridge=ridge) if predictor is None else predictor,
            calibrator=GaussianIntervals(inflation=inflation, inner_folds=inner_folds),
            seed=seed,
            name=name or objective,
        )

    @classmethod
    def auto(
        cls,
        k: int = 5,
        *,
        seed: int = 0,
        selectors: Sequence[str | Selector] | None = None,
        predictors: Sequence[str] | None = None,
        stack: bool = True,
        min_observed: int | float | None = DEFAULT_MIN_OBSERVED,
        initial: Sequence[str] = (),
        logit: bool = False,
        search_folds: int = 5,
        choice: str = DEFAULT_RULE,
        blocks: Sequence[int] = AUTO_BLOCKS,
        name: str = "auto",
    ) -> PipelineSearch:
        """The recommended pipeline: a :class:`~benchsel_lib.method.pipeline.PipelineSearch` of (selection, predictor) pairs.

        Candidates: the selectors (default ``mi``, ``entropy-obs``, ``lasso``, ``random``) with the predictors
        (default Gaussian, ridge, kNN, blend) and their NNLS stack; correlation ``"fast"``; split-conformal
        intervals.  Where the training matrix misses more than
        :data:`~benchsel_lib.method.candidates.SPARSE_MISSING` of its entries the defaults are
        :data:`~benchsel_lib.method.candidates.SPARSE_SELECTORS` with
        :data:`~benchsel_lib.method.candidates.SPARSE_PREDICTORS` (``sparse_`` says so).  Passing
        ``selectors`` or ``predictors`` fixes the candidates on every matrix.

        At each ``k`` the pair with the highest inner R^2 is chosen, unless that score falls below the one of
        the choice at ``k - 1``, which is then kept with one more benchmark (``choice="nested"``: one
        selector for every size).  With ``blocks=(5,)`` a choice at five benchmarks whose selector is not
        nested stays in every larger selection.  ``initial`` applies to every candidate selector,
        ``min_observed`` (default :data:`~benchsel_lib.method.candidates.DEFAULT_MIN_OBSERVED`, scaled to each
        inner fold) to every one without a filter of its own; ``None`` or 0 keeps every benchmark a candidate.

        Cost: the inner search of :func:`~benchsel_lib.method.inner_search.pipeline_path`, estimated before it
        starts (:func:`~benchsel_lib.method.plan.search_cost`); beyond
        :data:`~benchsel_lib.method.plan.SEARCH_BUDGET` it runs on seeded subsamples (``notes_`` says so).
        """
        space = auto_space(selectors=selectors, predictors=predictors, stack=stack, min_observed=min_observed,
                           initial=initial)
        return PipelineSearch(k, candidates=None if space == auto_space() else space, scaling=Scaling(logit=logit), correlation=Correlation("fast"),
                              calibrator="conformal", choice=choice, search_folds=search_folds, blocks=blocks,
                              seed=seed, name=name)

    @classmethod
    def from_name(
        cls,
        name: str,
        *,
        k: int | None = 5,
        estimator: str = "auto",
        config: str = "released",
        logit: bool = False,
        tie_break: str = "auto",
        min_observed: int | float | None = None,
        initial: Sequence[str] = (),
        ridge: float = 1e-2,
        predictor: Any = None,
        inflation: float | str = 1.0,
        inner_folds: int = 3,
        seed: int = 0,
    ) -> Pipeline | PipelineSearch:
        """A pipeline from its short name, with shared options.

        ``"entropy"``, ``"mi"``, ``"random"`` -> :meth:`paper` (every option); ``"auto"`` -> :meth:`auto`
        (``logit``, ``min_observed``, ``initial``, ``seed``); ``"SELECTOR+PREDICTOR"`` -> that pair with
        conformal intervals (``estimator``, ``config``, ``logit``, ``min_observed``, ``initial``, ``seed``).
        ``min_observed=None`` is each pipeline's default; 0 is none.  Every option is checked, whichever
        pipeline uses it; ``predictor`` with another name than the paper's raises ``ValueError``.
        O(1): nothing is fit.
        """
        Correlation(estimator, config)  # the shared options: a bad value is named even where it is not used
        GaussianIntervals(inflation=inflation, inner_folds=inner_folds)
        check_tie_break(tie_break)
        check_nonnegative(ridge, "ridge")
        if predictor is not None and name not in PAPER_OBJECTIVES:
            raise ValueError(f"predictor= applies to the paper's pipelines {PAPER_OBJECTIVES}; {name!r} "
                             f"{'searches its predictor' if name == 'auto' else 'names its own predictor'}")
        if name in PAPER_OBJECTIVES:
            return cls.paper(k, objective=name, estimator=estimator, config=config, logit=logit, tie_break=tie_break,
                             min_observed=min_observed or None, initial=initial, ridge=ridge, predictor=predictor,
                             inflation=inflation, inner_folds=inner_folds, seed=seed)
        pair = parse_pipeline(name)
        if pair is None:
            return cls.auto(k if k is not None else 5, seed=seed,
                            min_observed=DEFAULT_MIN_OBSERVED if min_observed is None else min_observed,
                            initial=initial, logit=logit)
        return cls(k, scaling=Scaling(logit=logit), correlation=Correlation(estimator, config),
                   selector=with_options(pair[0], min_observed=min_observed, initial=initial),
                   predictor=pair[1], calibrator="conformal",
                   seed=seed, name=name)


#: the ``unreached`` rule of a search's inner folds: a held-out model that ran none of the candidate's benchmarks
#: is scored with the training mean, so that a selection few models ran is not scored on those few alone
SEARCH_UNREACHED = "mean"


@dataclasses.dataclass(eq=False, repr=False)
class PipelineSearch(BasePipeline):
    """A pipeline whose (selection, predictor) pair is chosen at each size by inner cross-validation.

    Parameters
    ----------
    k : int
        How many benchmarks to select.  Cross-validation scores every size up to its own ``k_max``.
    candidates : CandidateSpace, Grid or None
        What is searched (:mod:`benchsel_lib.method.candidates`); None: the recommended pipeline's space.
    scaling : Scaling or {"standard", "logit"}
    correlation : Correlation or {"auto", "pairwise", "em", "fast"}
        The training correlation of the final selection and fits (the inner folds use their own pairwise one).
    calibrator : {"conformal"}, Conformal or None
        Split-conformal intervals from the inner-CV residuals of the chosen pair, or none.
    choice : {"monotone", "best", "nested"} or a rule of :mod:`~benchsel_lib.method.choice`
        How the choice is made at each size.
    search_folds : int
        Inner folds (the :class:`~benchsel_lib.method.folds.InnerFolds` of the search).
    blocks : sequence of int
        Sizes at which the path is fixed when the choice there is not nested
        (:class:`~benchsel_lib.method.inner_search.SearchSettings`).
    seed : int
        Seed of the inner folds and of the random selection.
    name : str, optional
        Label in cross-validation tables (default ``"search"``).

    Attributes
    ----------
    cv_results_ : DataFrame
        Every candidate's inner-CV R^2, its rank at its size and whether it is the choice.
    Others as :class:`BasePipeline`.

    Notes
    -----
    A candidate is scored on every inner-held-out model (:data:`SEARCH_UNREACHED`).  Cost: the inner search
    (:func:`~benchsel_lib.method.plan.search_cost`), then one selection and fit on every training model.
    :meth:`predict` never searches: other benchmarks need ``fit(matrix, revealed=[...])``.
    """

    k: int = 5
    _: dataclasses.KW_ONLY
    candidates: CandidateSpace | Grid | None = None
    scaling: Scaling | str = "standard"
    correlation: Correlation | str = "fast"
    calibrator: Conformal | str | None = "conformal"
    choice: Any = DEFAULT_RULE
    search_folds: int = 5
    blocks: Sequence[int] = AUTO_BLOCKS
    seed: int = 0
    name: str | None = None

    def component(self, which: str) -> Any:
        """The parameter ``which`` resolved to its component; raises ValueError naming a bad value. O(G)."""
        if which == "candidates":
            return auto_space() if self.candidates is None else CandidateSpace(self.candidates)
        if which in ("selector", "predictor"):  # the first grid's (a matrix may take a later one when fit)
            grid = self.component("candidates")[0]
            return list(grid.selectors) if which == "selector" else list(grid.predictors)
        return super().component(which)

    def _steps(self) -> dict[str, Any]:
        space = self.component("candidates")
        check_int(self.search_folds, "search_folds", minimum=2)  # named as this pipeline's parameter
        settings = SearchSettings(stack=space[0].stack, n_folds=self.search_folds, choice=self.choice,
                                  blocks=self.blocks, unreached=SEARCH_UNREACHED)
        return {"search": settings, "space": space}

    def _candidate(self) -> Pipeline:
        return Pipeline(scaling=self.scaling, calibrator=None, seed=self.seed)

    @property
    def label(self) -> str:
        """The search's name in tables (``name``, else ``"search"``). O(1)."""
        return str(self.name) if self.name else "search"

    @property
    def cv_results_(self) -> pd.DataFrame:
        """Every candidate the fit scored: ``selector, predictor, k, r2, n_eval, rank, chosen``.

        ``r2`` is the inner-CV R^2 (Section 5.1), ``n_eval`` the entries it pools, ``rank`` its rank at its
        size (1: best), ``chosen`` the choice at ``k``.  O(C log C) for C rows.
        """
        self._check_fitted()
        rec = self.choice_
        out = rec.scores.copy()
        out["rank"] = out.groupby("k")["r2"].rank(ascending=False, method="min").astype("Int64")
        out["chosen"] = (out["k"] == rec.k) & (out["selector"] == rec.selector) & (out["predictor"] == rec.predictor)
        return out.sort_values(["k", "rank"], kind="stable").reset_index(drop=True)

    @property
    def best_params_(self) -> dict[str, Any]:
        """The choice at ``k`` as parameters of a :class:`~benchsel_lib.method.pipeline.Pipeline`.

        ``{"k", "selector", "predictor"}``: the chosen selector with the selected benchmarks mandatory, and
        the chosen predictor (a :class:`~benchsel_lib.method.inner_search.ChosenPredictor`).  O(k).
        """
        self._check_fitted()
        rec = self.choice_
        chosen = tuple(self.selected)
        base = {s.label: s for s in self._candidates_for(self.validate(), self.matrix_.scores).selector}
        selector = base.get(rec.selector) or selector_named(rec.selector)
        return {"k": len(chosen), "selector": dataclasses.replace(selector, initial=chosen, exclude=()),
                "predictor": ChosenPredictor(rec.predictor, rec.weights)}

    @property
    def best_estimator_(self) -> Any:
        """The choice at ``k`` as a fitted :class:`~benchsel_lib.method.pipeline.Pipeline`.

        As scikit-learn's ``GridSearchCV.best_estimator_``: the search's scaling, correlation and seed with
        :attr:`best_params_`, fit on the search's matrix, without intervals; built on first access and kept
        until the next ``fit`` or ``set_params``.  Cost: one correlation estimate and one fit of the predictor.
        """
        self._check_fitted()
        if getattr(self, "refit_", None) is None:
            self.refit_ = Pipeline(scaling=self.scaling, correlation=self.correlation, calibrator=None,
                                   seed=self.seed, name=self.label, **self.best_params_).fit(self.matrix_)
        return self.refit_

    def _fit_revealed(self, cols: list[int]) -> tuple[FittedPath, PathStep]:  # refused: a search predicts from its own
        chosen = self.selected
        other = [self.benchmarks_[j] for j in cols if self.benchmarks_[j] not in chosen]
        missing = [b for b in chosen if self.benchmarks_.index(b) not in cols]
        what = (f"{', '.join(map(repr, other[:5]))}{' ...' if len(other) > 5 else ''} "
                f"{'is' if len(other) == 1 else 'are'} not selected" if other else
                f"{', '.join(map(repr, missing[:5]))} {'is' if len(missing) == 1 else 'are'} missing")
        raise ValueError(f"the search chose its predictor for the selected benchmarks {chosen}; {what}: predict "
                         f"from other benchmarks with a fit for them, fit(matrix, revealed=[...]) (the command line's "
                         f"benchsel predict does this), which chooses the predictor for those benchmarks")


use_default_estimator(lambda: Pipeline(calibrator=None))  # the estimator of a search that names none
