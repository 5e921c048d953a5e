"""The search: a pipeline whose selection and predictor are chosen by inner cross-validation.

:class:`PipelineSearch` is to :class:`~benchsel_lib.method.pipeline.Pipeline`
what scikit-learn's ``GridSearchCV`` is to an estimator: its candidates are
data (a :class:`~benchsel_lib.method.candidates.CandidateSpace` of grids of
selectors x predictors), its inner folds a splitter
(:class:`~benchsel_lib.method.folds.InnerFolds`), its choice rule a small object
(:mod:`benchsel_lib.method.choice`), and once the choice is made it is refit
on every training model.  :attr:`PipelineSearch.cv_results_` is the table of
candidate scores.  The recommended pipeline, :meth:`Pipeline.auto
<benchsel_lib.method.pipeline.Pipeline.auto>`, is one.

The work is done by :func:`~benchsel_lib.method.inner_search.pipeline_path`
(the inner cross-validation along the subset sizes) on the out-of-fold engine
of :mod:`benchsel_lib.method.oof`, within the budget planned by
:mod:`benchsel_lib.method.plan`.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._checks import check_blocks, check_int
from .calibration import Conformal
from .candidates import CandidateSpace, Grid, auto_space
from .choice import DEFAULT_RULE, choice_rule
from .correlation import Correlation
from .fitting import BasePipeline, FittedPath, PathStep
from .inner_search import AUTO_BLOCKS
from .scaling import Scaling

__all__ = ["PipelineSearch", "SCORED"]

#: how a search scores a candidate on its inner folds: on every held-out model, one that ran none of the
#: candidate's benchmarks predicted by the training mean and counted ("mean"), so that a selection few models
#: ran is not scored on those few alone
SCORED = "mean"

_PARAMS = ("k", "candidates", "scaling", "correlation", "calibrator", "choice", "search_folds", "blocks", "seed",
           "name")


class PipelineSearch(BasePipeline):
    """A pipeline whose (selection, predictor) pair is chosen at each size by inner cross-validation.

    Parameters
    ----------
    k : int
        How many benchmarks to select.  Cross-validation scores every size up
        to its own ``k_max``.
    candidates : CandidateSpace, Grid or None
        What is searched (:mod:`benchsel_lib.method.candidates`); None: the
        recommended pipeline's space (:func:`~benchsel_lib.method.candidates.auto_space`).
    scaling : Scaling or {"standard", "logit"}
    correlation : Correlation or {"auto", "pairwise", "em", "fast"}
        The training correlation of the final selection and fits (the inner
        folds use their own pairwise estimate).
    calibrator : {"conformal"}, Conformal or None
        Split-conformal intervals from the inner-CV residuals of the chosen
        pair, or none.
    choice : {"monotone", "best", "nested"} or a rule of :mod:`~benchsel_lib.method.choice`
        How the choice is made at each size.
    search_folds : int
        Inner folds (the :class:`~benchsel_lib.method.folds.InnerFolds` of the search).
    blocks : sequence of int
        Sizes at which the path is fixed when the choice there is not nested
        (:func:`~benchsel_lib.method.inner_search.pipeline_path`).
    seed : int
        Seed of the inner folds and of the random selection.
    name : str, optional
        Label in cross-validation tables (default ``"search"``).

    Attributes
    ----------
    cv_results_ : DataFrame
        The inner-CV R^2 of every candidate scored by the fit, with its rank
        at its size and whether it is the choice (:attr:`cv_results_`).
    choice_ : Recommendation
        The choice at ``k``.
    Others as :class:`~benchsel_lib.method.pipeline.Pipeline`: ``scaling_``,
    ``correlation_``, ``benchmarks_``, ``notes_``, ``sparse_``, ``selected``.

    Notes
    -----
    Every inner-held-out model counts: a candidate is scored on every one
    (:data:`SCORED`), a model that ran none of its benchmarks predicted by
    the training mean, so a selection that few models ran scores what it
    predicts for all of them.  Cost: the inner search (:func:`~benchsel_lib.method.plan.search_cost`
    estimates it before any work; above its budget it runs on subsamples),
    then one selection and fit on every training model.  :meth:`predict`
    never searches: it predicts from the selected benchmarks; scores of other
    benchmarks need a fit for them, ``fit(matrix, revealed=[...])``, which
    chooses the predictor for those benchmarks.
    """

    _params = _PARAMS

    def __init__(
        self,
        k: int = 5,
        *,
        candidates: CandidateSpace | Grid | None = None,
        scaling: Scaling | str = "standard",
        correlation: Correlation | str = "fast",
        calibrator: Conformal | str | None = "conformal",
        choice: Any = DEFAULT_RULE,
        search_folds: int = 5,
        blocks: Sequence[int] = AUTO_BLOCKS,
        seed: int = 0,
        name: str | None = None,
    ) -> None:
        self.k = k
        self.candidates = candidates
        self.scaling = scaling
        self.correlation = correlation
        self.calibrator = calibrator
        self.choice = choice
        self.search_folds = search_folds
        self.blocks = blocks
        self.seed = seed
        self.name = name

    def component(self, which: str) -> Any:
        """The parameter ``which`` resolved to its component; raises ValueError naming a bad value. O(G)."""
        if which == "candidates":
            v = self.candidates
            if v is None:
                return auto_space()
            if isinstance(v, CandidateSpace):
                return v
            return CandidateSpace(v)
        if which in ("selector", "predictor"):  # the first grid's (a matrix may take a later one when fit)
            grid = self.component("candidates")[0]
            return list(grid.selectors) if which == "selector" else list(grid.predictors)
        return super().component(which)

    def _steps(self) -> dict[str, Any]:
        """The candidate space (its first grid until a matrix picks one), the rule, the folds, the blocks. O(G)."""
        space = self.component("candidates")
        choice_rule(self.choice)
        check_int(self.search_folds, "search_folds", minimum=2)
        blocks = check_blocks(self.blocks)
        if self.k is None:
            raise ValueError("a search needs k, the number of benchmarks to select")
        grid = space[0]
        return {"selector": list(grid.selectors), "predictor": list(grid.predictors),
                "stack": grid.stack, "search": True, "blocks": blocks, "rule": self.choice,
                "folds": self.search_folds, "scored": SCORED, "space": space}

    @property
    def label(self) -> str:
        """The search's name in tables (``name``, else ``"search"``). O(1)."""
        return str(self.name) if self.name else "search"

    @property
    def cv_results_(self) -> pd.DataFrame:
        """Every candidate the fit scored: ``strategy, predictor, k, r2, n_eval, rank, chosen``.

        ``r2`` is the inner-CV R^2 (the paper's, Section 5.1, on the inner
        folds of the training models), ``n_eval`` the entries it pools,
        ``rank`` its rank among the candidates at its size (1: best), and
        ``chosen`` marks the choice at ``k``.  O(C log C) for C rows.
        """
        self._check_fitted()
        rec = self.choice_
        out = rec.scores.copy()
        out["rank"] = out.groupby("k")["r2"].rank(ascending=False, method="min").astype("Int64")
        out["chosen"] = (out["k"] == rec.k) & (out["strategy"] == rec.strategy) & (out["predictor"] == rec.predictor)
        return out.sort_values(["k", "rank"], kind="stable").reset_index(drop=True)

    def _for_revealed(self, cols: list[int]) -> tuple[FittedPath, PathStep]:
        """The fitted path and step for the given columns: only the selection; another set is refused."""
        key = tuple(sorted(cols))
        hit = self._revealed_fits.get(key)
        if hit is not None:
            return hit
        chosen = [self.benchmarks_[j] for j in self.step_.selected]
        other = [self.benchmarks_[j] for j in cols if self.benchmarks_[j] not in chosen]
        missing = [b for b in chosen if self.benchmarks_.index(b) not in cols]
        what = (f"{', '.join(map(repr, other[:5]))}{' ...' if len(other) > 5 else ''} "
                f"{'is' if len(other) == 1 else 'are'} not selected" if other else
                f"{', '.join(map(repr, missing[:5]))} {'is' if len(missing) == 1 else 'are'} missing")
        raise ValueError(f"the search chose its predictor for the selected benchmarks {chosen}; {what}: predict "
                         f"from other benchmarks with a fit for them, fit(matrix, revealed=[...]) (the command line's "
                         f"benchsel predict does this), which chooses the predictor for those benchmarks")
