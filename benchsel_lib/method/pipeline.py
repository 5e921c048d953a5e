"""The one contract of the method: a :class:`Pipeline` from scores to selected benchmarks and predictions.

A pipeline is five steps, each a small object of its own module:

1. scaling -- :class:`~benchsel_lib.method.scaling.Scaling` (optional logit,
   standardization with the training means and spreads, clip);
2. correlation -- :class:`~benchsel_lib.method.correlation.Correlation`
   (pairwise or EM, Section 3 and Appendix G);
3. selection -- one :class:`~benchsel_lib.method.selectors.Selector`, or
   several candidates (Algorithms 1-2, Appendices B-C, prediction-aimed orders);
4. prediction -- a predictor (:mod:`benchsel_lib.method.predictors`), or
   several candidates and their stack;
5. calibration -- :class:`~benchsel_lib.method.calibration.GaussianIntervals`
   (Eq. cond-var, optionally inflated) or
   :class:`~benchsel_lib.method.calibration.Conformal`.

With one selector, one predictor and Gaussian intervals the pipeline fits
directly: the paper's pipeline (:meth:`Pipeline.paper`). With several
candidates, a stack or conformal intervals it fits by inner cross-validation
of the training models (:func:`~benchsel_lib.method.search.pipeline_path`):
the recommended pipeline (:meth:`Pipeline.auto`) is such a search.

The conventions are scikit-learn's: the constructor only stores its
parameters, :meth:`Pipeline.fit` validates them and returns the pipeline,
fitted attributes end in ``_``, and :meth:`Pipeline.get_params`,
:meth:`Pipeline.set_params` and :func:`clone` work as there (nested
component parameters as ``selector__tie_break``).

Input rules for given scores (``ValueError`` otherwise): every name must be a
benchmark of the matrix (close matches are suggested); each benchmark at most
once; every value finite and inside the plausible range
``[min_j - 10 s_j, max_j + 10 s_j]`` where ``min_j, max_j`` are the smallest /
largest observed training score of benchmark ``j`` and
``s_j = max(std_j, 0.01 (|mean_j| + 1))`` its (floored) standard deviation in
the original units. The range rule catches unit mistakes (a percentage given
for a [0, 1] benchmark) without rejecting genuinely strong new models. A value
inside that range can still be 100 times off: on a benchmark with non-negative
scores, a positive score below the lowest 1 % (:data:`SCALE_QUANTILE`) of its
observed scores whose value x 100 lies in the observed range (or ten times,
:data:`SCALE_GAP`, above the largest whose value / 100 does) draws a
:class:`ScaleWarning`, one line that names the benchmark, its
observed range and the likely slip (a fraction given for a percentage, or the
reverse); ``strict=True`` makes it a ``ValueError``.
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit, ndtri
from threadpoolctl import threadpool_limits

from .._checks import (
    check_blocks,
    check_bool,
    check_int,
    check_level,
    check_matrix,
    check_nonnegative,
)
from .._names import name_positions
from ..data import ScoreMatrix, ScoreWarning, column_problems
from .calibration import (
    Conformal,
    GaussianIntervals,
    calibrator_named,
    inflation_factors,
)
from .correlation import Correlation
from .gaussian import GaussianPredictor
from .predictors import (
    PREDICTORS,
    check_predictor_name,
    check_unconditioned,
    make_predictor,
    reveal_and_predict,
)
from .scaling import FittedScaling, Scaling
from .search import (
    AUTO_BLOCKS,
    DEFAULT_MIN_OBSERVED,
    DEFAULT_PREDICTORS,
    DEFAULT_RULE,
    DEFAULT_STRATEGIES,
    SPARSE_MISSING,
    SPARSE_PREDICTORS,
    SPARSE_STRATEGIES,
    Recommendation,
    block_predictions,
    check_choice_rule,
    check_keep_blocks,
    pipeline_path,
)
from .selection import Selection, check_tie_break
from .selectors import SELECTORS, Selector, selector_named

__all__ = [
    "Pipeline",
    "FitSeeds",
    "FittedPath",
    "PathStep",
    "clone",
    "check_given",
    "column_ranges",
    "parse_pipeline",
    "RANGE_SDS",
    "MIN_INTERVAL_MODELS",
    "SCALE_QUANTILE",
    "SCALE_GAP",
    "ScaleWarning",
    "scale_slip",
    "PAPER_OBJECTIVES",
]

#: Given scores must lie within this many (floored) standard deviations of the
#: observed training range of their benchmark.
RANGE_SDS: float = 10.0
#: A positive given score below this quantile of its benchmark's (non-negative) observed scores is reported
#: as 100 times too small when x 100 it lies in the observed range (:func:`scale_slip`) ...
SCALE_QUANTILE: float = 0.01
#: ... and one at least this factor above the largest as 100 times too large when / 100 it lies there.
SCALE_GAP: float = 10.0
#: the paper's pipelines by objective (Gaussian conditional mean, Gaussian intervals)
PAPER_OBJECTIVES = ("entropy", "mi", "random")
#: Gaussian intervals need at least this many training models (from two, every correlation is +-1)
MIN_INTERVAL_MODELS = 3
#: interval levels whose conformal multipliers a search keeps (any other level is read off the residuals)
DEFAULT_LEVELS = (0.5, 0.8, 0.9)
#: the notes of a fit (``Pipeline.notes_``) are also logged here (level INFO) when the choice is made
_LOG = logging.getLogger(__name__)


# --------------------------------------------------------------------------- given scores
class ScaleWarning(ScoreWarning):
    """A given score whose size suggests the wrong scale (a fraction given for a percentage, or the reverse).

    Said in one line naming the benchmark, its observed range and the likely
    slip; ``strict=True`` (:func:`check_given`, :meth:`Pipeline.predict`,
    ``benchsel predict --strict``) makes it an error, and so does
    ``warnings.simplefilter("error", ScaleWarning)``.
    """


def column_ranges(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Allowed [low, high] per column: observed range widened by :data:`RANGE_SDS` floored stds. O(M N)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column observed once has no spread: floored below
        mean = np.nanmean(X, axis=0)
        n = (~np.isnan(X)).sum(axis=0)
        std = np.where(n > 1, np.nanstd(X, axis=0, ddof=1) if X.shape[0] > 1 else 0.0, 0.0)
    std = np.maximum(np.nan_to_num(std), 0.01 * (np.abs(mean) + 1.0))
    return np.nanmin(X, axis=0) - RANGE_SDS * std, np.nanmax(X, axis=0) + RANGE_SDS * std


def scale_slip(value: float, column: np.ndarray) -> str | None:
    """The likely unit slip behind a given score, or None when its size is plausible. O(M).

    Parameters
    ----------
    value : float
        The given score (original units).
    column : ndarray, shape (M,)
        The benchmark's training scores (NaN = missing).

    Returns
    -------
    str or None
        On a benchmark whose observed scores are non-negative (a fraction or
        a percentage): for a positive value below the lowest
        :data:`SCALE_QUANTILE` of them whose value x 100 lies in the observed
        range, or :data:`SCALE_GAP` times above the largest whose value / 100
        does, what it looks like,
        e.g. ``"0.71 x 100 = 71 lies in the observed range: a fraction given
        for a percentage?"``.  None otherwise (and for fewer than 2 observed scores).
    """
    seen = column[np.isfinite(column)]
    if not (math.isfinite(value) and value > 0) or seen.size < 2:  # no factor of 100 explains zero or less
        return None
    lo, hi = float(seen.min()), float(seen.max())
    if lo < 0:  # not a fraction or a percentage
        return None
    if value < np.quantile(seen, SCALE_QUANTILE) and lo <= 100 * value <= hi:
        kind = "a fraction given for a percentage" if hi > 1 else "100 times too small"
        return f"{value:g} x 100 = {100 * value:g} lies in the observed range: {kind}?"
    if value >= SCALE_GAP * hi and lo <= value / 100 <= hi:
        kind = "a percentage given for a fraction" if hi <= 1 else "100 times too large"
        return f"{value:g} / 100 = {value / 100:g} lies in the observed range: {kind}?"
    return None


def _check_size(value: float, name: str, what: str, column: np.ndarray, *, allowed: tuple[float, float],
                strict: bool) -> None:
    """Refuse a value outside ``allowed``; warn (or refuse, ``strict``) about a scale slip (:func:`scale_slip`)."""
    slip = scale_slip(value, column)
    observed = f"observed range {np.nanmin(column):.4g}..{np.nanmax(column):.4g}"
    if not allowed[0] <= value <= allowed[1]:
        raise ValueError(
            f"value {value:g} for {what} {name!r} is out of range: allowed [{allowed[0]:.4g}, {allowed[1]:.4g}] "
            f"(the {observed} +- {RANGE_SDS:g} sd); "
            + (slip or "wrong units?")
        )
    if slip is not None:
        lo, hi = np.nanmin(column), np.nanmax(column)
        where = (f"{'below' if value < lo else 'above'} its {observed}" if not lo <= value <= hi else
                 f"among the {'lowest' if value < np.nanmedian(column) else 'highest'} {100 * SCALE_QUANTILE:g} % "
                 f"of its training scores ({observed})")
        text = f"value {value:g} for {what} {name!r} is {where}; {slip}"
        if strict:
            raise ValueError(text)
        warnings.warn(text, ScaleWarning, stacklevel=4)


def check_given(
    given: Mapping[str, float] | Iterable[tuple[str, float]],
    matrix: ScoreMatrix,
    *,
    skip_missing: bool = False,
    ranges: tuple[np.ndarray, np.ndarray] | None = None,
    what: str = "benchmark",
    strict: bool = False,
) -> dict[str, float]:
    """Validate given scores against ``matrix`` and return them as an ordered dict.

    Parameters
    ----------
    given : mapping or iterable of (name, value)
        The new model's scores, in original units. Pairs allow the duplicate
        check (a mapping cannot hold duplicates).
    matrix : ScoreMatrix
        The training matrix the scores refer to.
    skip_missing : bool
        Drop NaN values (an empty cell in a scores file means "not run")
        instead of rejecting them.
    ranges : (low, high), optional
        Precomputed allowed ranges per benchmark (saves the O(M N) pass).
    what : str
        What the matrix's columns are, for messages: ``"benchmark"``, or
        ``"model"`` for the model-selection dual (a transposed matrix).
    strict : bool
        Refuse a value of implausible size (:func:`scale_slip`) instead of
        warning about it (:class:`ScaleWarning`).

    Raises
    ------
    ValueError
        Unknown benchmark (with close matches), a benchmark given twice, a
        non-finite value, a value outside the plausible range (module
        docstring), or with ``strict`` one of implausible size
        (:func:`scale_slip`). O(|given| (N + M)).
    """
    check_matrix(matrix)
    check_bool(strict, "strict")
    if isinstance(given, Mapping):
        items = list(given.items())
    elif isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise ValueError(f"give the scores as a mapping {what} -> score or as ({what}, score) pairs, got {given!r}")
    else:
        items = list(given)
        for it in items:
            if isinstance(it, (str, bytes)) or not isinstance(it, Sequence) or len(it) != 2:
                raise ValueError(f"given scores must be ({what}, score) pairs, got {it!r}")
    pairs = [(str(n), v) for n, v in items]
    names = matrix.benchmarks
    # names first: unknown and duplicate names before any value problem
    cols = name_positions([name for name, _ in pairs], names, what=what)
    low, high = ranges if ranges is not None else column_ranges(np.asarray(matrix.scores, dtype=float))
    out: dict[str, float] = {}
    for (name, value), j in zip(pairs, cols):
        if isinstance(value, (bool, np.bool_)):
            raise ValueError(f"value {value!r} for {what} {name!r} is not a number")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"value {value!r} for {what} {name!r} is not a number") from None
        if math.isnan(value) and skip_missing:
            continue
        if not math.isfinite(value):
            raise ValueError(f"value {value!r} for {what} {name!r} is not finite")
        _check_size(value, name, what, np.asarray(matrix.scores[:, j], dtype=float), allowed=(low[j], high[j]),
                    strict=strict)
        out[name] = value
    return out


def parse_pipeline(name: str) -> tuple[str, str] | None:
    """``"auto"`` -> None; ``"strategy+predictor"`` -> the pair; anything else raises ValueError. O(1)."""
    if name == "auto":
        return None
    if not isinstance(name, str) or name.count("+") != 1:
        raise ValueError(f"unknown pipeline {name!r}: use {', '.join(PAPER_OBJECTIVES)}, 'auto' or "
                         f"'STRATEGY+PREDICTOR' with a strategy in {tuple(SELECTORS)} and a predictor in "
                         f"{sorted(PREDICTORS)}")
    s, p = name.split("+")
    if s not in SELECTORS:
        raise ValueError(f"unknown selection strategy {s!r} in {name!r}: use one of {tuple(SELECTORS)}")
    check_predictor_name(p, where=f" in {name!r}")
    return s, p


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
        ``residual_fraction``, ``logdet``, ``mi`` of the selection on the
        training correlation (NaN where the selection has none).
    choice : Recommendation or None
        The search's choice at ``k`` (None for a directly fit pipeline).
    inflation : float or None
        The fitted variance factor at ``k`` (None unless the calibration fits one).
    """

    k: int
    selected: np.ndarray
    diagnostics: dict[str, float]
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
        Conditional variances of the predictor (Gaussian intervals), before any inflation.
    factor : float
        The given variance factor of the Gaussian intervals (1 unless given).
    inflation : float or None
        A variance factor fitted on inner folds (None unless the calibration fits one).
    """

    targets: np.ndarray
    mean: np.ndarray
    var: np.ndarray | None = None
    _interval: Callable[[float], tuple[np.ndarray, np.ndarray] | None] | None = field(default=None, repr=False)
    factor: float = 1.0
    inflation: float | None = None

    @property
    def has_intervals(self) -> bool:
        """Whether the step's predictor gives intervals (Gaussian variances or conformal residuals). O(1)."""
        return self._interval is not None

    def interval(self, level: float, *, inflated: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
        """Bounds (v, T) of the central ``level`` interval, or None where none can be given.

        ``inflated`` applies the fitted variance factor to the Gaussian interval.
        O(v T) (one normal or conformal quantile, then elementwise bounds).
        """
        if self._interval is None:
            return None
        if inflated and self.var is not None and self.inflation is not None:
            return _GaussianInterval(self.mean, self.var * self.inflation)(level)
        return self._interval(level)


@dataclass
class FittedPath:
    """A pipeline fit on training rows for several subset sizes (the cross-validation's unit of work).

    Attributes
    ----------
    scaling : FittedScaling
        Maps scores to the pipeline's standardized space and back.
    steps : list of PathStep
        One per subset size that the selection reached.
    n_forced : int or None
        Mandatory benchmarks present in these training rows (None when the
        selector has none).
    notes : list of str
        One line per choice the fit made because of the matrix's size (the
        correlation estimator where EM would take too long, a search cut
        down to its budget); empty on the paper's matrices.
    sparse : bool
        Whether the training rows missed enough entries for the pipeline's
        ``sparse_candidates`` to be searched.
    """

    scaling: FittedScaling
    steps: list[PathStep]
    n_forced: int | None
    _predict: Callable[[np.ndarray, list[PathStep]], list[StepPrediction]] = field(repr=False)
    correlation: np.ndarray | None = field(default=None, repr=False)
    selection: Selection | None = None
    notes: list[str] = field(default_factory=list)
    sparse: bool = False

    def predict(self, z: np.ndarray, *, steps: list[PathStep] | None = None) -> list[StepPrediction]:
        """Predictions for query rows ``z`` (standardized, NaN missing) at every step (or at ``steps``).

        Each row reveals its observed entries among the step's selected benchmarks.
        Cost: one ``predict`` of each step's predictor on the ``v`` rows (for
        the Gaussian mean O(G k^3 + v k N) with G distinct reveal patterns,
        Eq. cond-mean), plus O(v N) per step to hide the unrevealed entries.
        """
        return self._predict(z, self.steps if steps is None else steps)


@dataclass(frozen=True)
class _Training:
    """The training rows as both kinds of fit read them (direct, or through an inner search)."""

    scaling: FittedScaling
    #: the rows in the scaling's units (logit or raw) and standardized, NaN missing
    values: np.ndarray
    z: np.ndarray
    #: the training correlation
    R: np.ndarray
    names: list[str]
    #: models observing each benchmark
    counts: np.ndarray
    #: mandatory benchmarks present in these rows (None when no selector has any)
    n_forced: int | None


# --------------------------------------------------------------------------- the pipeline
_PARAMS = ("k", "scaling", "correlation", "selector", "predictor", "calibrator", "stack", "search_folds",
           "search_repeats", "choice", "blocks", "keep_blocks", "sparse_candidates", "seed", "name")


def _selectors(v: Any, what: str) -> list[Selector]:
    """The selector parameter ``v`` (a name, a Selector or a sequence of them) as a list of Selectors. O(len(v))."""
    if isinstance(v, (str, Selector)):
        items = [v]
    elif isinstance(v, Sequence):
        items = list(v)
    else:
        raise ValueError(f"{what} must be a name, a Selector or a sequence of them, got {v!r}")
    if not items:
        raise ValueError(f"{what} is empty: give a selector or a sequence of candidates")
    return [selector_named(s) for s in items]


def _predictors(v: Any, what: str) -> list[Any]:
    """The predictor parameter ``v`` (a name, an object or a sequence of them) as a checked list. O(len(v))."""
    items = [v] if isinstance(v, str) or not isinstance(v, Sequence) else list(v)
    if not items:
        raise ValueError(f"{what} is empty: give a predictor or a sequence of candidate names")
    for p in items:
        if isinstance(p, str):
            check_predictor_name(p)
        elif not (hasattr(p, "fit") and hasattr(p, "predict")):
            raise ValueError(f"{what} must be a name or implement fit/predict, got {type(p).__name__}")
    return items


def _with_options(strategy: str | Selector, *, min_observed: int | float | None,
                  initial: Sequence[str]) -> Selector:
    """``strategy``'s selector with the shared options of :meth:`Pipeline.auto` and the named pairs. O(1).

    ``initial`` (mandatory benchmarks) replaces the selector's own;
    ``min_observed`` is set only where the selector has no filter of its
    own, so that a preset keeps the filter its label names (``entropy-obs``:
    30 % of the training models); None and 0 set none.  The label stays the
    preset's.
    """
    sel = selector_named(strategy)
    changes: dict[str, Any] = {"name": sel.label}
    if min_observed and sel.min_observed is None:
        changes["min_observed"] = min_observed
    if initial:
        changes["initial"] = initial  # the Selector takes one name or several
    return dataclasses.replace(sel, **changes)


def _selector_reach(selectors: Sequence[Selector], counts: np.ndarray, n_models: int,
                    names: Sequence[str]) -> list[tuple[str, int]]:
    """Each selector's label and the benchmarks its filter and exclusions leave, mandatory ones counted. O(S N)."""
    out = []
    for sel in selectors:
        forced = np.zeros(len(names), dtype=bool)
        forced[sel.resolve_initial(names, missing="skip")] = True
        out.append((sel.label, sel.n_candidates(counts, forced, n_models, names=names)))
    return out


def clone(pipeline: Pipeline) -> Pipeline:
    """An unfitted pipeline with the same parameters.

    As scikit-learn's ``clone``: the constructor is called again with
    ``pipeline.get_params(deep=False)``, so no fitted attribute (``scaling_``,
    ``selection_``, ...) is carried over.

    Parameters
    ----------
    pipeline : Pipeline
        A fitted or unfitted pipeline (or an instance of a subclass whose
        constructor takes the same parameters).

    Returns
    -------
    Pipeline
        A new instance of ``type(pipeline)``. The parameter values are shared,
        not copied: the components (``Scaling``, ``Correlation``, selectors,
        calibrators) are frozen dataclasses, while a list of candidates or a
        predictor *object* is the same object in both pipelines.

    Notes
    -----
    Complexity O(1): a dozen attributes are read and stored; nothing is
    validated until :meth:`Pipeline.fit`.
    """
    return type(pipeline)(**pipeline.get_params(deep=False))


class Pipeline:
    """Scaling -> correlation -> selection -> prediction -> calibration (see the module docstring).

    Parameters
    ----------
    k : int or None
        How many benchmarks to select (None: as many as the selector's budget
        allows). Cross-validation scores every size up to its own ``k_max``.
    scaling : Scaling or {"standard", "logit"}
    correlation : Correlation or {"auto", "pairwise", "em", "fast"}
    selector : Selector, preset name, or a sequence of them (candidates)
        Presets: :data:`~benchsel_lib.method.selectors.SELECTORS`.
    predictor : predictor, name, or a sequence of names (candidates)
        Names: :data:`~benchsel_lib.method.predictors.PREDICTORS`; ``"stack"``
        alone is the NNLS stack of the default predictors.
    calibrator : GaussianIntervals, Conformal, {"gaussian", "inflation", "conformal"} or None
    stack : bool
        With several predictors, also score their NNLS stack as a candidate.
    search_folds : int
        Inner folds of a search (candidates or conformal intervals).
    search_repeats : int
        How many seeded draws of the inner folds a search pools (1: one
        draw; ``r`` draws cost ``r`` times the inner search, see
        :func:`~benchsel_lib.method.search.pipeline_path`).
    choice : {"monotone", "best", "nested", "additive", "shrunk"}
        How a search with candidates chooses at each size
        (:data:`~benchsel_lib.method.search.CHOICE_RULES`, see
        :func:`~benchsel_lib.method.search.pipeline_path`): ``"monotone"``
        (default) the best inner R^2 unless it falls below the choice one
        benchmark smaller, which is then kept; ``"best"`` the best inner R^2;
        ``"nested"`` one selection strategy for every size, so that the
        benchmarks of a smaller size are the first of a larger one's;
        ``"additive"`` as ``"monotone"``, but the candidate is the strategy
        with the best mean inner R^2 over the predictors, with the predictor
        best over the strategies
        (:func:`~benchsel_lib.method.search.additive_scores`); ``"shrunk"``
        between the two: each candidate's inner R^2 pulled toward that
        main-effects score by as much as the inner folds disagree on the
        difference (:func:`~benchsel_lib.method.search.shrunk_scores`).
    blocks : sequence of int
        Sizes at which a search's path is fixed (default none): above a
        block size ``b``, every candidate keeps the benchmarks chosen at
        ``b`` as mandatory ones, so a larger selection adds to the smaller
        one's (see :func:`~benchsel_lib.method.search.pipeline_path`; one
        more inner search per block; a search only).
    keep_blocks : {"always", "unnested", "hold"}
        Which choices at a block size are kept: every one (default), or
        only one whose strategy is not nested (anchor points, BenchPred's
        imputed Lasso), the sizes above any other coming from the path
        without blocks, or (``"hold"``) every one, with one more candidate
        above the block: the block's strategy predicting from the block's
        benchmarks only, chosen where the benchmarks added past the block
        do not help on the inner folds
        (:data:`~benchsel_lib.method.search.KEEP_BLOCKS`).
    sparse_candidates : (selectors, predictor names) or None
        Candidates of a search that replace ``selector`` and ``predictor``
        where the training matrix misses more than
        :data:`~benchsel_lib.method.search.SPARSE_MISSING` of its entries
        (default None: the same candidates on every matrix;
        :meth:`auto` sets its sparse ones).
    seed : int
        Seed of the random selection, the inner folds and the fitted inflation.
    name : str, optional
        Label in cross-validation tables (default: the objective for the
        paper's pipelines, ``"STRATEGY+PREDICTOR"`` for a pair, else ``"pipeline"``).

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
        One line per column that looks wrong (constant: never selected;
        mixing 0-1 and 0-100 scales; each also a :class:`ScoreWarning`), and
        one per choice made because of the matrix's size, before the work
        started: the floored pairwise correlation where EM would take too
        long (:func:`~benchsel_lib.method.correlation.em_too_costly`), a search
        run on subsamples of the models or benchmarks
        (:func:`~benchsel_lib.method.search.plan_search`; these are logged,
        level INFO, loggers under ``benchsel_lib``, when made). Empty on the
        paper's matrices and on small clean ones, whose results these rules
        never change.
    sparse_ : bool
        Whether the matrix missed enough entries for ``sparse_candidates``
        to be searched.
    selected : list of str
        The selected benchmarks, in order.

    Examples
    --------
    >>> from benchsel_lib import Pipeline, load_matrix          # doctest: +SKIP
    >>> p = Pipeline.auto(k=5).fit(load_matrix("mteb"))         # doctest: +SKIP
    >>> p.selected                                              # doctest: +SKIP
    >>> p.predict({b: 0.6 for b in p.selected})                 # doctest: +SKIP
    """

    def __init__(
        self,
        k: int | None = 5,
        *,
        scaling: Scaling | str = "standard",
        correlation: Correlation | str = "auto",
        selector: Selector | str | Sequence[Selector | str] = "mi",
        predictor: Any = "gaussian",
        calibrator: GaussianIntervals | Conformal | str | None = "gaussian",
        stack: bool = False,
        search_folds: int = 5,
        search_repeats: int = 1,
        choice: str = DEFAULT_RULE,
        blocks: Sequence[int] = (),
        keep_blocks: str = "always",
        sparse_candidates: tuple[Sequence[Selector | str], Sequence[str]] | None = None,
        seed: int = 0,
        name: str | None = None,
    ) -> None:
        self.k = k
        self.scaling = scaling
        self.correlation = correlation
        self.selector = selector
        self.predictor = predictor
        self.calibrator = calibrator
        self.stack = stack
        self.search_folds = search_folds
        self.search_repeats = search_repeats
        self.choice = choice
        self.blocks = blocks
        self.keep_blocks = keep_blocks
        self.sparse_candidates = sparse_candidates
        self.seed = seed
        self.name = name

    # ------------------------------------------------------------------ constructors
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
            The correlation estimate (Section 5.1, Appendix G).
        logit : bool
            Work in logit space (Appendix K).
        tie_break, min_observed, initial, costs, budget, lazy
            Options of the :class:`~benchsel_lib.method.selectors.Selector`.
        ridge : float
            Ridge of the conditional mean (1e-2 in Section 5.1).
        predictor : predictor, optional
            Another predictor in place of the Gaussian conditional mean
            (for instance :class:`~benchsel_lib.method.completion.SoftImpute`).
        inflation : float or "inner"
            Variance factor of the Gaussian intervals, or fit it on inner folds.
        inner_folds : int
            Inner folds of the fitted inflation.

        With ``estimator="auto"`` the correlation is the paper's rule, except
        where EM would take too long (fewer models than benchmarks and more
        than :data:`~benchsel_lib.method.correlation.EM_WIDE_BENCHMARKS`
        benchmarks, or more than
        :data:`~benchsel_lib.method.correlation.EM_MAX_BENCHMARKS`:
        :func:`~benchsel_lib.method.correlation.em_too_costly`), where it is
        the pairwise correlation with floored eigenvalues (``notes_`` says so).
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
        search_repeats: int = 1,
        choice: str = DEFAULT_RULE,
        blocks: Sequence[int] = AUTO_BLOCKS,
        keep_blocks: str = "unnested",
        name: str = "auto",
    ) -> Pipeline:
        """The recommended pipeline: the (selection, predictor) pair chosen by inner CV on the training models.

        Candidates: the selectors (default ``mi``, ``entropy-obs``, ``lasso``,
        ``random``) with the predictors (default Gaussian, ridge, kNN, blend)
        and their NNLS stack; correlation ``"fast"``; split-conformal intervals.
        Where the training matrix misses more than half its entries
        (:data:`~benchsel_lib.method.search.SPARSE_MISSING`) the default
        candidates are :data:`~benchsel_lib.method.search.SPARSE_STRATEGIES`
        (``entropy-obs``, ``lasso``, the greedy on the total residual variance
        of the mean-imputed matrix, BenchPred's imputed Lasso) with
        :data:`~benchsel_lib.method.search.SPARSE_PREDICTORS` (kNN, blend,
        the per-target ridge on the mean-imputed scores) and their stack:
        the imputed selections reveal benchmarks that many models ran, which
        on such a matrix pays more than MI's picks (``sparse_`` says which
        set was searched).  Passing ``selectors`` or ``predictors`` fixes the
        candidates on every matrix (the other one defaults to the first set).
        At each ``k`` the pair with the highest inner R^2 is chosen, unless
        that score falls below the one of the choice at ``k - 1``, which is
        then kept with one more benchmark
        (:func:`~benchsel_lib.method.search.choose_candidate`);
        ``choice="nested"`` keeps one selection strategy for every size
        instead (see the class's ``choice``); ``search_repeats=2`` scores the
        candidates on two seeded draws of the ``search_folds`` inner folds,
        pooled, at twice the search's cost.  By default
        (``blocks=(5,)``, ``keep_blocks="unnested"``,
        :data:`~benchsel_lib.method.search.AUTO_BLOCKS`) a choice at five
        benchmarks whose strategy's selections are not nested (BenchPred's
        imputed Lasso, anchor points) stays in every larger selection, so
        that a model that ran it runs only what a larger one adds and
        revealing more does not take back what it revealed; the first
        candidate set is all nested, and its path is the one search without
        blocks.  ``keep_blocks="always"`` keeps every choice at a block,
        ``"hold"`` every one with the choice there predicting from its own
        benchmarks alone one more candidate above it; ``blocks=()`` none.
        ``initial`` applies to every candidate selector, ``min_observed``
        to every one without a filter of its own (``entropy-obs`` keeps its
        30 %; pass a :class:`Selector` to set another).  By default
        (:data:`~benchsel_lib.method.search.DEFAULT_MIN_OBSERVED`, 5) no
        candidate reveals a benchmark that fewer than five training models
        observe (scaled to each inner fold's share of them): the
        correlations behind its predictions would rest on two or three
        models.  ``None`` or 0 keeps every benchmark a candidate.

        Cost: the inner search of :func:`~benchsel_lib.method.search.pipeline_path`,
        estimated before it starts (:func:`~benchsel_lib.method.search.search_cost`);
        beyond :data:`~benchsel_lib.method.search.SEARCH_BUDGET` (tens of
        thousands of models, thousands of benchmarks) it runs on seeded
        subsamples and leaves out candidates whose selection would take too
        long, while the final selection and fit use every model and
        benchmark (``notes_`` says so).
        """
        sparse = None
        if selectors is None and predictors is None:  # the default candidates, by the matrix's missing share
            sparse = (tuple(_with_options(s, min_observed=min_observed, initial=initial) for s in SPARSE_STRATEGIES),
                      SPARSE_PREDICTORS)
        selectors = DEFAULT_STRATEGIES if selectors is None else selectors
        predictors = DEFAULT_PREDICTORS if predictors is None else predictors
        if isinstance(selectors, (str, Selector)):  # one candidate, not the letters of its name
            selectors = (selectors,)
        if isinstance(predictors, str):
            predictors = (predictors,)
        sels = [_with_options(s, min_observed=min_observed, initial=initial) for s in selectors]
        return cls(k, scaling=Scaling(logit=logit), correlation=Correlation("fast"), selector=tuple(sels),
                   predictor=tuple(predictors), calibrator="conformal", stack=stack, search_folds=search_folds,
                   search_repeats=search_repeats, choice=choice, blocks=blocks, keep_blocks=keep_blocks,
                   sparse_candidates=sparse, seed=seed, name=name)

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
    ) -> Pipeline:
        """A pipeline from its short name, with shared options.

        ``"entropy"``, ``"mi"``, ``"random"`` -> :meth:`paper` (every option);
        ``"auto"`` -> :meth:`auto` (``logit``, ``min_observed``, ``initial``,
        ``seed``); ``"STRATEGY+PREDICTOR"`` (e.g. ``"lasso+ridge"``) -> that
        pair with conformal intervals (``estimator``, ``config``, ``logit``,
        ``min_observed``, ``initial``, ``seed``).  As in :meth:`auto`,
        ``min_observed`` leaves a strategy's own filter (``entropy-obs``) as it is.
        ``min_observed=None`` is each pipeline's default (none, but auto's
        :data:`~benchsel_lib.method.search.DEFAULT_MIN_OBSERVED`); 0 is none,
        auto's included.  Every option is checked, whichever pipeline uses
        it; ``predictor`` applies to the paper's pipelines only (a pair names
        its own, auto searches), so with another name it raises ``ValueError``.
        O(1): the options are checked and the pipeline built; nothing is fit.
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
                   selector=_with_options(pair[0], min_observed=min_observed, initial=initial),
                   predictor=pair[1], calibrator="conformal",
                   seed=seed, name=name)

    # ------------------------------------------------------------------ scikit-learn conventions
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters; with ``deep``, also ``component__field`` of the dataclass components.

        O(number of parameters and component fields).
        """
        out = {p: getattr(self, p) for p in _PARAMS}
        if deep:
            for p in ("scaling", "correlation", "selector", "calibrator"):
                v = out[p]
                if dataclasses.is_dataclass(v) and not isinstance(v, type):
                    for f in dataclasses.fields(v):
                        out[f"{p}__{f.name}"] = getattr(v, f.name)
        return out

    def set_params(self, **params: Any) -> Pipeline:
        """Set parameters (``selector__tie_break="argmax"`` replaces one field of a component); return self.

        A fitted pipeline forgets its fit (``predict`` then asks for ``fit``):
        its selection and predictors were made under the old parameters.
        O(number of parameters given); the new values are checked at the next ``fit`` (:meth:`validate`).
        """
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            if "__" in key:
                comp, fld = key.split("__", 1)
                nested.setdefault(comp, {})[fld] = value
            elif key in _PARAMS:
                setattr(self, key, value)
            else:
                raise ValueError(f"invalid parameter {key!r} for Pipeline: use one of {_PARAMS}")
        for comp, changes in nested.items():
            if comp not in _PARAMS:
                raise ValueError(f"invalid parameter {comp!r} for Pipeline: use one of {_PARAMS}")
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

    def __repr__(self) -> str:
        defaults = Pipeline().get_params(deep=False)
        shown = [f"{p}={getattr(self, p)!r}" for p in _PARAMS if p == "k" or getattr(self, p) != defaults[p]]
        return f"Pipeline({', '.join(shown)})"

    # ------------------------------------------------------------------ components, validated once
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
        if which == "selector":
            return _selectors(v, "selector")
        if which == "predictor":
            return _predictors(v, "predictor")
        if which == "sparse_candidates":
            if v is None:
                return None
            if isinstance(v, (str, Selector)) or not isinstance(v, Sequence) or len(v) != 2:
                raise ValueError(f"sparse_candidates must be None or a pair (selectors, predictor names), got {v!r}")
            return _selectors(v[0], "sparse_candidates[0]"), _predictors(v[1], "sparse_candidates[1]")
        if which == "calibrator":
            return calibrator_named(v)
        return v

    def validate(self) -> dict[str, Any]:
        """Check every parameter once; return the resolved components and whether the pipeline is a search.

        Raises
        ------
        ValueError
            A parameter that names nothing known, or a combination that cannot
            work (object predictors in a search, Gaussian intervals from a
            search, ``k=None`` without a budget).

        Notes
        -----
        O(number of candidates); nothing is fit, so a bad parameter is reported
        before any work (scikit-learn's convention of validating in ``fit``).
        """
        spec = {c: self.component(c) for c in ("scaling", "correlation", "selector", "predictor", "calibrator")}
        spec["sparse"] = self.component("sparse_candidates")
        if self.k is not None:
            check_int(self.k, "k")
        elif len(spec["selector"]) != 1 or spec["selector"][0].budget is None:
            raise ValueError("k=None (as many as the budget allows) needs one selector with a budget")
        check_int(self.search_folds, "search_folds", minimum=2)
        check_int(self.search_repeats, "search_repeats")
        check_choice_rule(self.choice)
        blocks = check_blocks(self.blocks)
        check_keep_blocks(self.keep_blocks)
        check_int(self.seed, "seed", minimum=0)
        check_bool(self.stack, "stack")
        preds = spec["predictor"]
        spec["search"] = (len(spec["selector"]) > 1 or len(preds) > 1 or bool(self.stack)
                          or preds == ["stack"] or isinstance(spec["calibrator"], Conformal))
        if spec["search"] and not all(isinstance(p, str) for p in preds):
            raise ValueError("a pipeline with candidates or conformal intervals takes predictor names "
                             f"({sorted(PREDICTORS)}), not objects")
        if isinstance(spec["calibrator"], Conformal) and not spec["search"]:  # pragma: no cover - covered by search
            raise ValueError("conformal intervals come from a search")
        if spec["search"] and isinstance(spec["calibrator"], GaussianIntervals):
            raise ValueError("a search makes conformal intervals: use calibrator='conformal' (or None)")
        if spec["sparse"] is not None and not (spec["search"] and all(isinstance(p, str) for p in spec["sparse"][1])):
            raise ValueError("sparse_candidates replace the candidates of a search (several candidates, a stack or "
                             "conformal intervals) and take predictor names")
        if blocks and not spec["search"]:
            raise ValueError("blocks fix the path of a search (candidates or conformal intervals); a direct "
                             "pipeline's nested selection already keeps each smaller one")
        spec["blocks"] = blocks
        return spec

    @property
    def label(self) -> str:
        """The pipeline's name in tables (``name``, else ``STRATEGY+PREDICTOR`` or ``"pipeline"``). O(1)."""
        if self.name:
            return str(self.name)
        spec = self.validate()
        sels, preds = spec["selector"], spec["predictor"]
        if len(sels) == 1 and len(preds) == 1 and isinstance(preds[0], str):
            return f"{sels[0].label}+{preds[0]}"
        return "pipeline"

    @property
    def is_search(self) -> bool:
        """Whether the pipeline fits by inner cross-validation (candidates, a stack, conformal intervals). O(1)."""
        return bool(self.validate()["search"])

    # ------------------------------------------------------------------ fitting
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
        unconditioned: str = "skip",
        context: str = "cv",
        revealed: Sequence[int] | None = None,
        correlation: np.ndarray | None = None,
        exclude: Sequence[str] = (),
    ) -> FittedPath:
        """Fit on training rows for every subset size up to ``k_max`` (the unit of work of cross-validation).

        Parameters
        ----------
        X : ndarray (M, N)
            Training scores in original units, NaN missing (every column observed).
        names : sequence of str
            Benchmark names of the columns.
        k_max : int
            Largest subset size (capped at what the selector can reach).
        ks : sequence of int, optional
            Only these subset sizes are needed (the selection still runs to ``k_max``).
        seeds : FitSeeds, optional
            Random streams (default: all from ``self.seed``).
        correlate : callable, optional
            ``correlate(correlation, values, standardized) -> R``; the CV
            protocol passes its cache (default: ``correlation.estimate``).
        intervals : bool
            Fit what the intervals need (a fitted inflation, conformal residuals).
        unconditioned : {"skip", "mean"}
            The protocol's rule for rows that reveal nothing (used by a fitted
            inflation, and by a search, which scores its candidates under it:
            :func:`~benchsel_lib.method.search.pipeline_path`).
        context : {"cv", "full"}
            A cross-validation split or a whole matrix (the EM tolerance).
        revealed : sequence of int, optional
            A given revealed set instead of a selection (a search then only
            chooses the predictor).
        correlation : ndarray (N, N), optional
            The training correlation when it is already known (not estimated again).
        exclude : sequence of str
            Benchmarks no selector may pick here, on top of each selector's
            own ``exclude`` (:meth:`fit` passes the matrix's constant
            columns; mandatory benchmarks are never excluded).

        Returns
        -------
        FittedPath

        Notes
        -----
        Cost: that of :meth:`fit` with the selection run to ``k_max``: one
        correlation estimate (skipped when ``correlation`` is given), one
        selection per selector, and per size the predictor's fit; a search
        runs :func:`~benchsel_lib.method.search.pipeline_path` instead
        (:func:`~benchsel_lib.method.search.search_cost` estimates it).
        """
        X = np.asarray(X, dtype=float)
        spec = self._candidates_for(self.validate(), X)
        if exclude:
            spec["selector"] = [
                dataclasses.replace(s, exclude=s.exclude + tuple(
                    b for b in map(str, exclude) if b not in s.exclude and b not in s.initial))
                for s in spec["selector"]]
        check_unconditioned(unconditioned)
        seeds = seeds or FitSeeds.from_seed(int(self.seed))
        names = [str(b) for b in names]
        fs = spec["scaling"].fit(X)
        values, z = fs.values(X), fs.transform(X)
        corr: Correlation = spec["correlation"]
        notes: list[str] = []
        if correlation is not None:
            R = np.asarray(correlation, dtype=float)
        else:
            # EM replaced where it would take too long: said before the estimate
            cnote = corr.note(values, standardized=z)
            if cnote:
                _LOG.info(cnote)
                notes.append(cnote)
            R = correlate(corr, values, z) if correlate is not None else corr.estimate(values, z, context=context)
        # inner folds of a fitted inflation are cross-validation splits
        inner = correlate or (lambda c, v, s: c.estimate(v, s, context="cv"))
        counts = (~np.isnan(X)).sum(axis=0)
        sels: list[Selector] = spec["selector"]
        initial = set().union(*(s.initial for s in sels))
        n_forced = sum(1 for b in initial if b in names) if initial else None
        data = _Training(fs, values, z, R, names, counts, n_forced)
        if spec["search"]:
            path = self._fit_search(spec, data, k_max=k_max, ks=ks, seeds=seeds, intervals=intervals,
                                    revealed=revealed, unconditioned=unconditioned)
        else:
            path = self._fit_direct(spec, data, k_max=k_max, ks=ks, seeds=seeds, inner=inner, intervals=intervals,
                                    unconditioned=unconditioned, revealed=revealed)
        path.notes[:0] = notes
        path.sparse = spec["sparse_searched"]
        return path

    @staticmethod
    def _candidates_for(spec: dict[str, Any], X: np.ndarray) -> dict[str, Any]:
        """``spec`` with its sparse candidates in place of the others where ``X`` misses enough entries.

        More than :data:`~benchsel_lib.method.search.SPARSE_MISSING` of the
        entries of ``X`` (the training rows) missing: the selectors and
        predictors of ``spec["sparse"]`` are searched (``spec["sparse_searched"]``
        says whether).  O(M N).
        """
        sparse = spec["sparse"] is not None and X.size > 0 and float(np.isnan(X).mean()) > SPARSE_MISSING
        spec = {**spec, "sparse_searched": sparse}
        if sparse:
            spec["selector"], spec["predictor"] = spec["sparse"]
        return spec

    def _fit_direct(self, spec: dict[str, Any], data: _Training, *, k_max: int | None, ks: Sequence[int] | None,
                    seeds: FitSeeds, inner: Callable, intervals: bool, unconditioned: str,
                    revealed: Sequence[int] | None) -> FittedPath:
        """One selector and one predictor: select (or take ``revealed``), fit the predictor, the inflation."""
        fs, values, z, R, names, counts, n_forced = (data.scaling, data.values, data.z, data.R, data.names,
                                                     data.counts, data.n_forced)
        sel: Selector = spec["selector"][0]
        N = len(names)
        pred = spec["predictor"][0]
        if revealed is not None:
            order = np.asarray(list(revealed), dtype=int)
            steps = [PathStep(order.size, order, _nan_diagnostics())]
            selection = None
        else:
            init = sel.resolve_initial(names, missing="skip")
            forced = np.zeros(N, dtype=bool)
            forced[init] = True
            if k_max is None:
                k_eff = None
            else:
                k_eff = min(int(k_max), N, sel.n_candidates(counts, forced, z.shape[0], names=names))
                if k_eff < 1:
                    return FittedPath(fs, [], n_forced, _NoPredictions(), R)
            kw = dict(names=names, counts=counts, n_models=z.shape[0], train=z, seed=seeds.selection,
                      missing_initial="skip")
            selection = sel.select(R, k_eff, **kw)
            order = np.asarray(selection.order, dtype=int)
            sizes = [k for k in range(1, order.size + 1) if ks is None or k in ks]
            # a nested objective's smaller selections are prefixes of this one; anchor points select per size
            per_size = {k: selection if sel.nested or k == order.size else sel.select(R, k, **kw) for k in sizes}
            steps = [PathStep(k, np.asarray(s.order[:k], dtype=int),
                              {"residual_fraction": float(s.residual_fraction[k - 1]), "logdet": float(s.logdet[k - 1]),
                               "mi": float(s.mi[k - 1]) if len(s.mi) >= k else np.nan})
                     for k, s in per_size.items()]
        # fit after the selection: the predictor's copy of the N x N correlation and the selection's work
        # arrays are then never held together
        fitted = (make_predictor(pred) if isinstance(pred, str) else copy.deepcopy(pred)).fit(z, cov=R)  # own copy
        cal = spec["calibrator"]
        gaussian = isinstance(cal, GaussianIntervals)
        fixed = float(cal.inflation) if gaussian and cal.inflation != "inner" else 1.0
        if intervals and gaussian and cal.inflation == "inner" and steps:
            fresh = (make_predictor(pred) if isinstance(pred, str) else copy.deepcopy(pred))
            # one order, or (anchor points) each size's own, its prefix of length k scored at that k
            orders = {0: order} if sel.nested or revealed is not None else {st.k: st.selected for st in steps}
            factors = inflation_factors(values, z, orders, order.size, correlation=spec["correlation"],
                                        predictor=fresh, inner_folds=cal.inner_folds,
                                        rng=np.random.default_rng(seeds.inflation), unconditioned=unconditioned,
                                        correlate=inner)
            for st in steps:
                st.inflation = float(factors[0 if 0 in orders else st.k][st.k - 1])

        return FittedPath(fs, steps, n_forced, _DirectPredictions(fitted, N, gaussian, fixed), R, selection)

    def _fit_search(self, spec: dict[str, Any], data: _Training, *, k_max: int | None, ks: Sequence[int] | None,
                    seeds: FitSeeds, intervals: bool, revealed: Sequence[int] | None,
                    unconditioned: str) -> FittedPath:
        """A search (candidates, a stack or conformal intervals): the inner CV chooses at each size.

        :func:`~benchsel_lib.method.search.pipeline_path` does the work.
        """
        fs, z, R, names, n_forced = data.scaling, data.z, data.R, data.names, data.n_forced
        preds = spec["predictor"]
        single = len(spec["selector"]) == 1 and len(preds) == 1 and not self.stack
        levels = DEFAULT_LEVELS if intervals and spec["calibrator"] is not None else ()
        bare = single and not levels and preds != ["stack"]  # one pair, nothing to score: the smallest inner CV
        kw: dict[str, Any] = dict(cov=R, strategies=spec["selector"], predictors=tuple(preds), stack=bool(self.stack),
                                  seed=int(seeds.search), names=names, levels=levels, rule=self.choice,
                                  n_folds=2 if bare else int(self.search_folds),
                                  repeats=1 if bare else int(self.search_repeats), unconditioned=unconditioned,
                                  blocks=spec["blocks"], keep_blocks=self.keep_blocks)
        if revealed is not None:
            recs = pipeline_path(z, len(revealed), fixed=list(revealed), **kw)
        else:
            reach = _selector_reach(spec["selector"], (~np.isnan(z)).sum(axis=0), z.shape[0], names)
            k_max = min(int(k_max), max(n for _, n in reach))  # the largest size some candidate selector can reach
            if k_max < 1:
                return FittedPath(fs, [], n_forced, _NoPredictions(), R)
            if ks is not None:
                ks = [k for k in ks if k <= k_max]
                if not ks:
                    return FittedPath(fs, [], n_forced, _NoPredictions(), R)
            recs = [r for r in pipeline_path(z, k_max, ks=ks, **kw) if len(r.selection) >= r.k]
        steps = [PathStep(r.k, np.asarray(r.selection, dtype=int), _nan_diagnostics(), choice=r) for r in recs]
        notes = [recs[0].plan] if recs and recs[0].plan else []
        return FittedPath(fs, steps, n_forced, _SearchPredictions(z, R, spec["calibrator"] is not None), R,
                          notes=notes)

    def fit(self, matrix: ScoreMatrix, *, revealed: Sequence[str] | None = None) -> Pipeline:
        """Fit on a whole score matrix: scale, estimate, select ``k`` benchmarks, fit the predictor; return self.

        Parameters
        ----------
        matrix : ScoreMatrix
            Training scores in original units (every benchmark observed at least once).
        revealed : sequence of str, optional
            The benchmarks a new model ran, in place of a selection (a search
            then chooses only the predictor, for these benchmarks).

        Notes
        -----
        Cost: the correlation estimate (pairwise O(M N^2); EM O(M N^2 + N^3)
        per iteration, replaced by the floored pairwise correlation where it
        would take too long), the selection (O(k^2 N) greedy entropy, O(k N^3)
        greedy MI, plus one O(N^3) factorization for its diagnostics) and,
        for a search, the inner cross-validation planned within
        :data:`~benchsel_lib.method.search.SEARCH_BUDGET`. Memory: a few
        N x N arrays and O(M N). Choices made for the matrix's size are in
        ``notes_``.

        Raises
        ------
        ValueError
            Fewer than 2 models (checked before any column) or benchmarks;
            unknown revealed or mandatory benchmarks; ``k`` above the number
            of benchmarks, or equal to it for a search (nothing would be left
            to predict, and a search scores its choices by predicting);
            no selection of ``k`` possible under the candidates' filters.
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
        cols = self._check_reveal(names, spec, revealed)
        k = len(cols) if cols is not None else self.k
        notes, constant, flat = self._column_notes(X, names, spec, select=cols is None)
        with threadpool_limits(limits=1, user_api="blas"):  # EM and the inner CV: many small solves, one thread is fastest
            path = self.fit_path(X, names=names, k_max=k, ks=None if k is None else [k], context="full", revealed=cols,
                                 exclude=constant)
        if not path.steps:
            why = (f" ({len(constant)} constant benchmark(s) are never selected: "
                   f"{', '.join(map(repr, constant[:5]))}{' ...' if len(constant) > 5 else ''})" if constant else "")
            if cols is None and k is not None:
                reach = _selector_reach(spec["selector"], np.isfinite(X).sum(axis=0), X.shape[0], names)
                if max(n for _, n in reach) < k:
                    floors = ", ".join(f"{lab}: {n}" for lab, n in reach)
                    sels = spec["selector"]
                    causes = [c for c, on in (("min_observed filters", any(s.min_observed for s in sels)),
                                              ("exclude lists", any(s.exclude for s in sels))) if on]
                    fixes = [f for f, on in (("pass min_observed=0 to keep every observed benchmark a candidate",
                                              "min_observed filters" in causes),
                                             ("exclude fewer benchmarks", "exclude lists" in causes)) if on]
                    why += (f" (the candidates' {' and '.join(causes) or 'filters'} leave too few benchmarks: "
                            f"{floors}; lower k{''.join(', or ' + f for f in fixes)})")
            raise ValueError(f"no selection of k={k} benchmarks is possible on this matrix{why}")
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

    def _check_reveal(self, names: list[str], spec: dict[str, Any], revealed: Sequence[str] | None) -> list[int] | None:
        """The columns of ``revealed`` (None: the pipeline selects), checked against ``names`` and ``k``."""
        if revealed is not None:
            cols = name_positions(revealed if isinstance(revealed, str) else [str(b) for b in revealed], names,
                                  role="revealed")
            if not cols:
                raise ValueError("revealed lists no benchmark: give at least one, or None to select")
            if len(cols) >= len(names):
                raise ValueError("nothing to predict: every benchmark of the matrix is revealed")
            return cols
        for s in spec["selector"]:
            s.check_names(names)  # unknown mandatory or excluded benchmarks are an error here
        if self.k is not None and self.k > len(names):
            raise ValueError(f"k={self.k} is out of range: the matrix has {len(names)} benchmarks")
        if self.k is not None and self.k == len(names) and spec["search"]:  # its choice scores predictions
            raise ValueError(f"k={self.k} leaves nothing to predict: the matrix has {len(names)} benchmarks and the "
                             f"pipeline chooses its selection by how well it predicts the rest; choose k <= "
                             f"{len(names) - 1}")
        return None

    @staticmethod
    def _column_notes(X: np.ndarray, names: list[str], spec: dict[str, Any], *,
                      select: bool) -> tuple[list[str], list[str], list[int]]:
        """Warn about problem columns; return the notes, the constant columns to exclude and every constant column.

        The problems: constant and mixed-scale columns, and in logit space
        scores <= 0 (clipped to one floor).

        A constant column carries no information about the others, yet its
        variance stays 1 in the correlation, so greedy entropy would pick it
        early: a whole-matrix fit never selects it (unless it is mandatory).
        Predicted, it is its constant, without an interval (the spread it would
        be given is the floor of the standardization, not a fitted one).
        Cross-validation keeps the paper's protocol and does not apply this.
        """
        mandatory = set().union(*(s.initial for s in spec["selector"]))
        notes: list[str] = []
        constant: list[str] = []
        flat: list[int] = []
        for problem in column_problems(X, names):
            text = problem.message
            if problem.kind == "constant":
                flat.append(names.index(problem.benchmark))
            if problem.kind == "constant" and select:
                if problem.benchmark in mandatory:
                    text += ": it carries no information, but is selected because it is mandatory"
                else:
                    text += ": it carries no information and is never selected"
                    constant.append(problem.benchmark)
            if problem.kind == "constant" and problem.benchmark not in mandatory:
                text += "; its prediction is that value, without an interval"
            warnings.warn(text, ScoreWarning, stacklevel=3)
            notes.append(text)
        if spec["scaling"].logit:
            with np.errstate(invalid="ignore"):
                low = (X <= 0).sum(axis=0)
            for j in np.flatnonzero(low):
                text = (f"benchmark {names[j]!r}: {low[j]} of {int((~np.isnan(X[:, j])).sum())} observed scores are "
                        f"<= 0; logit scaling (Appendix K) clips them all to the same floor (eps times the column's "
                        f"maximum): standard scaling suits scores that can be negative")
                warnings.warn(text, ScoreWarning, stacklevel=3)
                notes.append(text)
        return notes, constant, flat

    def _interval_gaps(self, X: np.ndarray, flat: list[int], spec: dict[str, Any]) -> np.ndarray | None:
        """The columns whose Gaussian intervals the fit cannot support (None: every column's are fine).

        A constant column (``flat``) gets none; with fewer than
        :data:`MIN_INTERVAL_MODELS` training models no column does, and the
        fit says so in a warning (the search's own fallback says it already).
        """
        gaps = np.zeros(X.shape[1], dtype=bool)
        gaps[flat] = True
        if X.shape[0] < MIN_INTERVAL_MODELS and not spec["search"] and isinstance(spec["calibrator"],
                                                                                 GaussianIntervals):
            text = (f"only {X.shape[0]} training models: every correlation from two points is +-1, too few for "
                    "Gaussian intervals; predictions come without intervals")
            warnings.warn(f"{self.label}: {text}", UserWarning, stacklevel=3)
            self.notes_.append(text)
            gaps[:] = True
        return gaps if gaps.any() else None

    def _check_fitted(self) -> None:
        if not hasattr(self, "path_"):
            raise ValueError("this Pipeline is not fitted: call fit(matrix) first")

    @property
    def selected(self) -> list[str]:
        """The selected benchmarks, in selection order. O(k)."""
        self._check_fitted()
        return [self.benchmarks_[j] for j in self.step_.selected]

    def _for_revealed(self, cols: list[int]) -> tuple[FittedPath, PathStep]:
        """The fitted path and step to use when ``cols`` are revealed (fit once per revealed set)."""
        key = tuple(sorted(cols))
        hit = self._revealed_fits.get(key)
        if hit is not None:
            return hit
        spec = self.validate()
        if spec["search"] or isinstance(spec["calibrator"], GaussianIntervals) and spec["calibrator"].inflation == "inner":
            X = np.asarray(self.matrix_.scores, dtype=float)
            path = self.fit_path(X, names=self.benchmarks_, k_max=len(cols), context="full", revealed=cols,
                                 correlation=self.correlation_, seeds=FitSeeds.from_seed(int(self.seed)))
            self.notes_.extend(n for n in path.notes if n not in self.notes_)
            out = (path, path.steps[-1])
        else:
            order = np.asarray(cols, dtype=int)
            out = (self.path_, PathStep(order.size, order, _nan_diagnostics(), inflation=self.step_.inflation))
        self._revealed_fits[key] = out
        return out

    def predict(self, scores: Mapping[str, float] | Iterable[tuple[str, float]] | pd.DataFrame | ScoreMatrix,
                *, level: float = 0.9, skip_missing: bool = False, strict: bool = False) -> pd.DataFrame:
        """Predict the benchmarks not given, with central ``level`` intervals, in the matrix's original units.

        Parameters
        ----------
        scores : mapping, Series or pairs (one model), or DataFrame / ScoreMatrix (one row per model, NaN = not run)
            Scores in original units (checked by :func:`check_given`). The
            pipeline conditions on whatever is given; a search chooses its
            predictor again (once) when the given benchmarks are not the
            selected ones.
        level : float in (0, 1)
            Nominal coverage of the intervals.
        skip_missing : bool
            Ignore NaN values of a single model's scores.
        strict : bool
            Refuse a given score of implausible size (100 times off: a
            fraction given for a percentage, or the reverse) instead of
            warning about it (:class:`ScaleWarning`).

        Returns
        -------
        pandas.DataFrame
            Indexed by the benchmarks not given (``benchmark``; for several
            models by ``model, benchmark``), with columns ``mean, lower,
            upper`` (original units; ``lower <= mean <= upper``; NaN bounds
            where the fit supports no interval, as it said when fitted: a
            constant benchmark, or fewer than :data:`MIN_INTERVAL_MODELS`
            training models for Gaussian intervals), ``sd`` where
            the intervals are Gaussian, and ``n_observed`` (training models
            that ran the benchmark). ``attrs``: ``used`` (the scores
            conditioned on), ``level``, ``pipeline`` (the label), ``choice``
            (a search's pair) and ``inflation`` (the variance factor used).

        Notes
        -----
        Cost: the chosen predictor on one row per model (the Gaussian mean,
        Eq. cond-mean, O(|A|^3 + |A| N) for |A| given scores) and O(N) per
        model for the bounds.  A search, or a pipeline whose variance factor
        is fit on inner folds, is fit again once per distinct set of given
        benchmarks (as :meth:`fit` with ``revealed=``: the search's inner
        cross-validation for that one size) and kept for later calls.
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
        if not used:
            raise ValueError("no scores given (every entry is empty)")
        out = self._predict_one(used, level)
        given = scores.keys() if isinstance(scores, Mapping) else [n for n, _ in scores]
        out.attrs["ignored"] = [str(n) for n in given if str(n) not in used]
        return out

    def _predict_one(self, used: dict[str, float], level: float) -> pd.DataFrame:
        names = self.benchmarks_
        cols = [names.index(b) for b in used]
        if len(cols) >= len(names):
            raise ValueError("nothing to predict: every benchmark of the matrix was given")
        path, step = self._for_revealed(cols)
        fs = path.scaling
        row = np.full((1, len(names)), np.nan)
        row[0, cols] = list(used.values())
        z = np.full_like(row, np.nan)
        z[0, cols] = fs.transform(row[:, cols], np.asarray(cols))
        st = PathStep(len(cols), np.asarray(cols, dtype=int), step.diagnostics, step.choice, step.inflation)
        sp = path.predict(z, steps=[st])[0]
        T = sp.targets
        mean = fs.inverse(sp.mean[0], T)
        lower = upper = np.full(T.size, np.nan)
        bounds = sp.interval(level, inflated=True)
        if bounds is not None:
            lower, upper = fs.inverse(bounds[0][0], T), fs.inverse(bounds[1][0], T)
        gaps = None if self._no_interval is None else self._no_interval[T]
        if gaps is not None:  # constant columns, too few models: no interval (said when fitted)
            lower, upper = np.where(gaps, np.nan, lower), np.where(gaps, np.nan, upper)
        out = pd.DataFrame({"mean": mean, "lower": lower, "upper": upper},
                           index=pd.Index([names[j] for j in T], name="benchmark"))
        factor = sp.inflation if sp.inflation is not None else sp.factor
        if sp.var is not None and sp.has_intervals:
            sd_z = np.sqrt(sp.var[0] * factor)
            st_ = fs.standardizer
            if fs.smax is None:
                out["sd"] = st_.std[T] * sd_z
            else:  # delta method through the inverse logit
                p = expit(st_.mean[T] + st_.std[T] * sp.mean[0])
                out["sd"] = fs.smax[T] * p * (1.0 - p) * st_.std[T] * sd_z
            if gaps is not None:
                out["sd"] = np.where(gaps, np.nan, out["sd"].to_numpy())
        out["n_observed"] = self.matrix_.observed.sum(axis=0)[T].astype(int)
        out.attrs.update(used=dict(used), level=level, pipeline=self.label,
                         choice=None if st.choice is None else st.choice.name,
                         inflation=factor if sp.var is not None and sp.has_intervals else None)
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
                if not used:
                    raise ValueError("no scores given (every entry is empty)")
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


def _nan_diagnostics() -> dict[str, float]:
    return {"residual_fraction": np.nan, "logdet": np.nan, "mi": np.nan}


class _GaussianInterval:
    """``mean +- z sqrt(var)`` at a level (z = Phi^{-1}((1 + level) / 2))."""

    def __init__(self, mean: np.ndarray, var: np.ndarray) -> None:
        self.mean, self.var = mean, var

    def __call__(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        q = float(ndtri(0.5 + level / 2.0))
        sd = np.sqrt(self.var)
        return self.mean - q * sd, self.mean + q * sd


class _ConformalInterval:
    """The chosen pair's conformal interval of the targets ``T`` (None at a level without residuals)."""

    def __init__(self, choice: Recommendation, full: np.ndarray, T: np.ndarray) -> None:
        self.choice, self.full, self.T = choice, full, T

    def __call__(self, level: float) -> tuple[np.ndarray, np.ndarray] | None:
        if not np.isfinite(self.choice.quantile(level)):
            return None
        lo, hi = self.choice.interval(self.full, float(level))
        return lo[:, self.T], hi[:, self.T]


class _NoPredictions:
    """The predictions of a path without steps."""

    def __call__(self, zq: np.ndarray, steps: list[PathStep]) -> list[StepPrediction]:
        return []


class _DirectPredictions:
    """Predictions of a directly fit path: one fitted predictor, each step reveals its selection."""

    def __init__(self, fitted: Any, n_benchmarks: int, gaussian: bool, factor: float) -> None:
        self.fitted, self.n, self.gaussian, self.factor = fitted, n_benchmarks, gaussian, factor

    def __call__(self, zq: np.ndarray, steps: list[PathStep]) -> list[StepPrediction]:
        obs = ~np.isnan(zq)
        out = []
        for st in steps:
            T = np.setdiff1d(np.arange(self.n), st.selected)
            mean, var = reveal_and_predict(self.fitted, zq, obs, st.selected, T)
            interval = _GaussianInterval(mean, var * self.factor) if var is not None and self.gaussian else None
            out.append(StepPrediction(T, mean, var, interval, self.factor, st.inflation))
        return out


class _SearchPredictions:
    """Predictions of a search's path: each step's chosen predictor, fit on the training rows ``z``."""

    def __init__(self, z: np.ndarray, cov: np.ndarray, intervals: bool) -> None:
        self.z, self.cov, self.intervals = z, cov, intervals

    def __call__(self, zq: np.ndarray, steps: list[PathStep]) -> list[StepPrediction]:
        obs = ~np.isnan(zq)
        queries = []
        for st in steps:
            # a held choice conditions on the block's benchmarks only (Recommendation.conditioned)
            cols = st.selected if st.choice is None or st.choice.conditioned is None else st.choice.conditioned
            q = np.full_like(zq, np.nan)
            q[:, cols] = np.where(obs[:, cols], zq[:, cols], np.nan)
            queries.append(q)
        choices = [st.choice for st in steps]
        if choices and len({c.predictor for c in choices}) == 1 and choices[0].predictor != "stack":
            outs = block_predictions(make_predictor(choices[0].predictor), self.z,
                                     [(None, c.k, q, None) for c, q in zip(choices, queries)], self.cov)
        else:
            outs = [c.predict(self.z, q, cov=self.cov) for c, q in zip(choices, queries)]
        res = []
        for st, c, full in zip(steps, choices, outs):
            T = np.setdiff1d(np.arange(self.z.shape[1]), st.selected)
            interval = _ConformalInterval(c, full, T) if self.intervals and c.scale is not None else None
            res.append(StepPrediction(T, full[:, T], None, interval))
        return res
