"""The search of the recommended pipeline: (selection, predictor) pairs scored by inner CV on training models.

:func:`pipeline_path` answers "which benchmarks should a new model run, and
how should the rest be predicted" for a standardized training matrix at every
subset size ``k``.  Every candidate -- a selector of
:mod:`benchsel_lib.method.selectors` with a predictor of
:mod:`benchsel_lib.method.predictors`, or the stack of the predictors -- is
scored by ``n_folds``-fold cross-validation *of the training models* (each
inner fold's standardization, selection and fits use only the other inner
folds, with :func:`~benchsel_lib.method.correlation.inner_correlation` of
those rows, as the outer protocol does with its training models), with the
paper's R^2 (Section 5.1).  The chosen one -- the best, unless its inner
R^2 falls below that of the choice at ``k - 1``, which is then kept
(:func:`choose_candidate`) -- is refit on all training models.
Held-out models are never seen.

Intervals are split-conformal (CV+ style) from the same inner-CV residuals of
the chosen pair (:func:`~benchsel_lib.method.calibration.conformal_scales`):
the interval at level ``L`` is ``pred +- q_L s_j``.  A
:class:`~benchsel_lib.method.pipeline.Pipeline` with several candidates or
conformal intervals fits through this function.

Cost and big matrices: before any work, :func:`plan_search` estimates the
operations of the search (:func:`search_cost`: per inner fold a correlation,
one selection per strategy and every predictor per (strategy, k); the
k-nearest-neighbour distances grow with the square of the number of models,
the selections with the cube of the number of benchmarks).  Within
:data:`SEARCH_BUDGET` the search runs on every model and benchmark.  Above
it, the inner cross-validation runs on a seeded subsample of the models (at
least :data:`SEARCH_MIN_MODELS`, so a matrix with no more models keeps them
all) and/or of the benchmarks (at least :data:`SEARCH_MIN_BENCHMARKS`;
mandatory and given benchmarks always kept), and a candidate strategy whose
selection on all benchmarks would cost more than :data:`SELECTION_BUDGET`
(MI on several thousand benchmarks) is left out; the final selection and the
fits use every model and benchmark.  The paper's matrices (at most 263
models and 114 benchmarks) lie far below the floors: their searches, and
every number computed from them, are those of the full search.  ``Recommendation.plan`` says so in one line,
which is also logged (level INFO, logger ``benchsel_lib.method.search``)
when the plan is made, before the work; the ``benchsel`` command prints it.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .._checks import check_blocks, check_data_matrix, check_int, check_ks
from .._random import rng
from .base import pass_through, size_runs
from .calibration import conformal_quantile, conformal_scores
from .correlation import EM_MAX_MISSING, em_too_costly, inner_correlation
from .lowrank import as_correlation_matrix
from .predictors import (
    check_predictor_name,
    check_unconditioned,
    inner_folds,
    make_predictor,
    nnls_weights,
    r2_from_sums,
)
from .scaling import Scaling
from .selectors import Selector, selector_named

__all__ = [
    "Recommendation",
    "pipeline_path",
    "choose_candidate",
    "additive_scores",
    "interaction_share",
    "shrunk_scores",
    "nested_strategy",
    "CHOICE_RULES",
    "DEFAULT_RULE",
    "check_choice_rule",
    "KEEP_BLOCKS",
    "AUTO_BLOCKS",
    "check_keep_blocks",
    "held_query",
    "block_predictions",
    "DEFAULT_STRATEGIES",
    "DEFAULT_PREDICTORS",
    "DEFAULT_MIN_OBSERVED",
    "SPARSE_STRATEGIES",
    "SPARSE_PREDICTORS",
    "SPARSE_MISSING",
    "FALLBACK",
    "SearchPlan",
    "plan_search",
    "search_cost",
    "selection_cost",
    "SEARCH_BUDGET",
    "SEARCH_MIN_MODELS",
    "SEARCH_MIN_BENCHMARKS",
    "SELECTION_BUDGET",
]


#: candidates of the recommended pipeline (predictive greedy, soft-impute and the stack's
#: other members are left out of the default search for speed; name them to include them)
DEFAULT_STRATEGIES = ("mi", "entropy-obs", "lasso", "random")


DEFAULT_PREDICTORS = ("gaussian", "ridge", "knn", "blend")

#: the recommended pipeline's candidates on a matrix that misses more than :data:`SPARSE_MISSING` of its
#: entries: the greedy on the total residual variance of the mean-imputed matrix and BenchPred's imputed
#: Lasso (both favour benchmarks that many models ran, so that a revealed benchmark is more often one a
#: held-out model has a score for) in place of MI and the random selection, and the per-target ridge on
#: the mean-imputed scores in place of the Gaussian mean and the ridge on observed pairs
SPARSE_STRATEGIES = ("entropy-obs", "lasso", "imputed-trace", "imputed-lasso")

SPARSE_PREDICTORS = ("knn", "blend", "imputed-ridge")

#: the share of missing entries of the training matrix above which the recommended pipeline searches
#: :data:`SPARSE_STRATEGIES` and :data:`SPARSE_PREDICTORS` (Merged and BenchPress miss about two thirds
#: of theirs, MTEB a quarter, MMLU none)
SPARSE_MISSING = 0.5

#: the recommended pipeline's candidates (those without a filter of their own) never reveal a
#: benchmark that fewer training models observe: its correlations would rest on two or three models
DEFAULT_MIN_OBSERVED = 5


#: the named default used when there are too few training models for the inner CV
FALLBACK = ("mi", "gaussian")

#: a search cut down to its budget is also logged (level INFO) here when it is planned, before the work
_LOG = logging.getLogger(__name__)

#: estimated operations (:func:`search_cost`) above which the inner search runs on subsamples (about
#: ten seconds on one core); a matrix within both subsample floors below is never subsampled
SEARCH_BUDGET = 3e10
#: a subsample of the models keeps at least this many (a matrix with no more models is never subsampled)
SEARCH_MIN_MODELS = 2000
#: a subsample of the benchmarks keeps at least this many (a matrix with no more is never subsampled)
SEARCH_MIN_BENCHMARKS = 1000
#: a candidate strategy whose selection on every benchmark is estimated above this many operations
#: (:func:`selection_cost`) is left out of a search that has other candidates
SELECTION_BUDGET = 1e12


@dataclass
class Recommendation:
    """A chosen pipeline for one ``k`` and how it was chosen.

    Attributes
    ----------
    k : int
    strategy, predictor : str
        The choice (``predictor == "stack"``: NNLS combination with ``weights``).
    selection : list of int
        Columns selected on all training models.
    scores : DataFrame
        Inner-CV R^2 of every candidate: ``strategy, predictor, k, r2, n_eval``
        (``n_eval``: the inner residuals it pools, over every draw of the folds).
    weights : dict
        Stack weights (empty unless ``predictor == "stack"``).
    scale : ndarray (N,)
        Per-benchmark residual scale of the intervals.
    quantiles : dict level -> float
        Conformal multipliers ``q_L``.
    note : str or None
        Set when the inner CV could not run (too few training models) and the
        named default :data:`FALLBACK` was used, or a candidate could not select.
    inner_r2 : float
        Inner-CV R^2 of the chosen pipeline at ``k`` (NaN when it was not scored).
    conformal : ndarray or None
        The sorted scaled absolute inner-CV residuals, from which the
        multiplier of any level is read (:meth:`quantile`).
    plan : str or None
        How the search was cut down to fit :data:`SEARCH_BUDGET` (subsamples,
        strategies left out), one line; None when it ran on every model and
        benchmark with every candidate.
    conditioned : list of int or None
        The columns the predictor conditions on when they are not the whole
        ``selection``: a held choice (``keep_blocks="hold"`` of
        :func:`pipeline_path`, strategy ``"S@b"``) predicts from the ``b``
        benchmarks chosen at the block size only.  None: from every
        selected benchmark.
    """

    k: int
    strategy: str
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
    conditioned: list[int] | None = None

    @property
    def name(self) -> str:
        """The choice as ``STRATEGY+PREDICTOR``. O(1)."""
        return f"{self.strategy}+{self.predictor}"

    def predict(self, train: np.ndarray, query: np.ndarray, *, cov: np.ndarray | None = None) -> np.ndarray:
        """Predictions (standardized) of every entry of ``query`` by the chosen predictor, fit on ``train``.

        ``cov`` defaults to the training correlation (:func:`~benchsel_lib.method.correlation.inner_correlation`).
        Cost: one fit and predict of the chosen predictor (each predictor of
        positive weight for a stack; :func:`search_cost` gives their orders).
        A held choice (``conditioned``) sees only those columns of ``query``;
        the other revealed entries are passed through.
        """
        if self.conditioned is None:
            return _fit_predict(self.predictor, self.weights, train, query, cov)
        query = np.asarray(query, dtype=float)
        out = _fit_predict(self.predictor, self.weights, train, held_query(query, self.conditioned), cov)
        return np.where(np.isnan(query), out, query)

    @property
    def candidates(self) -> pd.DataFrame:
        """Inner-CV R^2 of every candidate at this ``k``, best first. O(C log C) for C scored rows."""
        at = self.scores[self.scores["k"] == self.k]
        return at.sort_values("r2", ascending=False, kind="stable").reset_index(drop=True)

    def quantile(self, level: float) -> float:
        """The conformal multiplier ``q_level`` (NaN when no inner-CV residual was kept). O(1)."""
        if float(level) in self.quantiles:
            return self.quantiles[float(level)]
        if self.conformal is None:
            return float("nan")
        return conformal_quantile(self.conformal, level)

    def interval(self, pred: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
        """Conformal interval ``pred +- q_level * scale`` (columns of ``pred`` are benchmarks). O(v N)."""
        q = self.quantile(level)
        if self.scale is None or not np.isfinite(q):
            raise ValueError(f"no interval at level {level!r}: the inner cross-validation kept no residuals")
        half = q * self.scale
        return pred - half, pred + half


#: how :func:`pipeline_path` chooses among the scored candidates at each ``k`` (see :func:`choose_candidate`;
#: ``"nested"``: one strategy for every size, see :func:`nested_strategy`; ``"additive"``: the best strategy
#: and the best predictor by their mean inner R^2, see :func:`additive_scores`; ``"shrunk"``: the additive
#: score plus the part of each candidate's own departure from it that the inner folds agree on, see
#: :func:`shrunk_scores`)
CHOICE_RULES = ("best", "monotone", "nested", "additive", "shrunk")
#: the rules that keep the previous size's pipeline when the choice at ``k`` scores below it
LOOKBACK_RULES = ("monotone", "additive", "shrunk")
#: the rule of the recommended pipeline
DEFAULT_RULE = "monotone"


def check_choice_rule(rule: Any) -> str:
    """``rule`` if it is one of :data:`CHOICE_RULES`; ``ValueError`` naming them otherwise. O(1)."""
    if not isinstance(rule, str) or rule not in CHOICE_RULES:
        raise ValueError(f"unknown choice rule {rule!r}: use one of {CHOICE_RULES}")
    return rule


#: the block sizes of the recommended pipeline (``Pipeline.auto``), with ``keep_blocks="unnested"``: a choice at five
#: benchmarks whose strategy is not nested stays in every larger selection
AUTO_BLOCKS = (5,)

#: when :func:`pipeline_path` keeps the choice at a block size for the larger sizes: ``"always"``, or only when that
#: choice's strategy is not nested (``"unnested"``: anchor points, BenchPred's imputed Lasso); ``"hold"``: always,
#: and above the block one more candidate, the block's strategy predicting from the block's benchmarks only
KEEP_BLOCKS = ("always", "unnested", "hold")


def held_query(query: np.ndarray, columns: Sequence[int]) -> np.ndarray:
    """``query`` with every column but ``columns`` hidden (NaN): what a held choice conditions on. O(v N)."""
    keep = np.zeros(query.shape[1], dtype=bool)
    keep[np.asarray(list(columns), dtype=int)] = True
    return np.where(keep[None, :], query, np.nan)


def check_keep_blocks(keep: Any) -> str:
    """``keep`` if it is one of :data:`KEEP_BLOCKS`; ``ValueError`` naming them otherwise. O(1)."""
    if not isinstance(keep, str) or keep not in KEEP_BLOCKS:
        raise ValueError(f"unknown keep_blocks {keep!r}: use one of {KEEP_BLOCKS}")
    return keep


def additive_scores(rows: Sequence[dict[str, Any]]) -> list[float]:
    """Each candidate's main-effects score: its strategy's mean inner R^2 plus its predictor's, less the grand mean.

    ``rows``: scored candidates at one ``k`` (dicts with ``strategy, predictor,
    r2``).  The inner R^2 of the (strategy, predictor) table is fit by the
    two-way additive model ``r2 ~ a_strategy + b_predictor`` (for a full
    table its least-squares fit is row mean + column mean - grand mean), and
    each row gets its fitted value: a candidate is judged by how its
    strategy does across the predictors and how its predictor does across
    the strategies, not by its one cell, whose luck on the inner folds is
    what a choice among some twenty candidates would otherwise chase.  The
    highest score is the best strategy with the best predictor.  Rows with a
    non-finite R^2 get ``-inf`` and count in no mean.  O(len(rows)).
    """
    fin = [r for r in rows if np.isfinite(r["r2"])]
    if not fin:
        return [-np.inf] * len(rows)
    grand = float(np.mean([r["r2"] for r in fin]))
    by_s: dict[str, list[float]] = {}
    by_p: dict[str, list[float]] = {}
    for r in fin:
        by_s.setdefault(r["strategy"], []).append(float(r["r2"]))
        by_p.setdefault(r["predictor"], []).append(float(r["r2"]))
    mean_s = {s: float(np.mean(v)) for s, v in by_s.items()}
    mean_p = {p: float(np.mean(v)) for p, v in by_p.items()}
    return [mean_s[r["strategy"]] + mean_p[r["predictor"]] - grand if np.isfinite(r["r2"]) else -np.inf
            for r in rows]


def interaction_share(rows: Sequence[dict[str, Any]]) -> float:
    """How much of the candidates' departures from the main-effects model the inner folds agree on. O(F S P).

    ``rows``: scored candidates at one ``k`` (dicts with ``strategy,
    predictor, r2`` and ``fold_r2``, the inner R^2 on each inner fold; rows
    without a finite ``r2`` are left out).  On the complete (strategy x
    predictor) table of the others, each inner fold's R^2 is
    split into main effects and an interaction (the two-way decomposition
    ``y_sp - ybar_s. - ybar_.p + ybar_..``); over the F inner folds every
    cell's interaction has a mean ``e_sp`` and a squared standard error
    ``v_sp`` (its variance over the folds / F).  The share is the
    positive-part empirical-Bayes factor (of James-Stein type)
    ``max(0, 1 - mean(v) / mean(e^2))``: 0 when the
    departures are no larger than their fold-to-fold noise (the folds do
    not agree on them), near 1 when they are large and consistent.  NaN
    when it cannot be estimated: an incomplete table, a single strategy or
    predictor, or fewer than three inner folds with every cell scored.
    """
    fin = [r for r in rows if np.isfinite(r["r2"]) and r.get("fold_r2") is not None]
    strategies = sorted({r["strategy"] for r in fin})
    predictors = sorted({r["predictor"] for r in fin})
    cells = {(r["strategy"], r["predictor"]) for r in fin}
    if len(strategies) < 2 or len(predictors) < 2 or len(cells) != len(fin) or \
            len(fin) != len(strategies) * len(predictors):
        return float("nan")
    n_folds = len(fin[0]["fold_r2"])
    if any(len(r["fold_r2"]) != n_folds for r in fin):
        return float("nan")
    y = np.empty((n_folds, len(strategies), len(predictors)))
    for r in fin:
        y[:, strategies.index(r["strategy"]), predictors.index(r["predictor"])] = r["fold_r2"]
    y = y[np.isfinite(y).all(axis=(1, 2))]
    if y.shape[0] < 3:
        return float("nan")
    e = y - y.mean(axis=2, keepdims=True) - y.mean(axis=1, keepdims=True) + y.mean(axis=(1, 2), keepdims=True)
    signal = float(np.mean(e.mean(axis=0) ** 2))
    noise = float(np.mean(e.var(axis=0, ddof=1) / y.shape[0]))
    return max(0.0, 1.0 - noise / signal) if signal > 0.0 else 0.0


def shrunk_scores(rows: Sequence[dict[str, Any]]) -> list[float]:
    """Each candidate's main-effects score plus the share of its own departure from it that the folds agree on.

    ``score = a + lam (r2 - a)``, with ``a`` the candidate's
    :func:`additive_scores` value and ``lam`` the :func:`interaction_share`
    of the table: the partial pooling of each cell toward the additive
    model, by as much as its departures are noise.  ``lam = 0`` is the
    ``"additive"`` choice (a matrix whose inner folds are small and noisy:
    a candidate is judged by its strategy across the predictors and its
    predictor across the strategies), ``lam = 1`` the ``"best"`` one (the
    folds agree on which pairs do better than their parts).  Where the
    share cannot be estimated (see there) it is 0.  O(F S P) for F inner
    folds, S strategies and P predictors.
    """
    fitted = additive_scores(rows)
    lam = interaction_share(rows)
    if not np.isfinite(lam):
        return fitted
    return [a + lam * (float(r["r2"]) - a) if np.isfinite(a) else a for a, r in zip(fitted, rows)]


def choose_candidate(rows: Sequence[dict[str, Any]], *, previous: dict[str, Any] | None = None,
                     rule: str = DEFAULT_RULE, order: Any = None) -> dict[str, Any]:
    """The candidate chosen at one ``k`` among the scored ``rows`` (dicts with ``strategy, predictor, r2``).

    ``"best"`` (and ``"nested"``, whose rows are those of its one strategy,
    :func:`nested_strategy`): the highest inner R^2, ties to the smaller
    ``order(row)`` key.  ``"monotone"``: the same, unless that R^2 is below
    the inner R^2 that the choice at ``k - 1`` (``previous``: its row at
    ``k - 1``) had; then the previous pipeline is kept -- its row here, the
    same strategy with one more benchmark and the same predictor -- so that
    no larger subset is chosen by a score that a smaller one already beat:
    the best inner R^2 at ``k`` falling below the previous choice's is the
    mark of a winner chosen for its luck on the inner folds.  Falls back to
    the best when the previous pipeline was not scored at ``k``.
    ``"additive"``: as ``"monotone"``, but the candidate is the one with the
    highest main-effects score (:func:`additive_scores`: the best strategy
    across predictors with the best predictor across strategies), and it is
    its own inner R^2 that is compared with the previous choice's.
    ``"shrunk"``: as ``"additive"`` with the score of :func:`shrunk_scores`
    (rows need ``fold_r2``).  O(len(rows)).
    """
    check_choice_rule(rule)
    if not rows:
        raise ValueError("no scored candidate to choose from")
    key = order or (lambda r: 0)
    if rule in ("additive", "shrunk"):
        fitted = additive_scores(rows) if rule == "additive" else shrunk_scores(rows)
        best = min(zip(fitted, rows), key=lambda t: (-t[0], key(t[1])))[1]
    else:
        best = min(rows, key=lambda r: (-r["r2"], key(r)))
    if rule not in LOOKBACK_RULES or previous is None or best["r2"] >= previous["r2"]:
        return best
    same = (previous["strategy"], previous["predictor"])
    return next((r for r in rows if (r["strategy"], r["predictor"]) == same), best)


def nested_strategy(rows: Sequence[dict[str, Any]], sizes: Sequence[int], *, order: Any = None) -> str:
    """The one strategy of the ``"nested"`` rule: the best mean over ``sizes`` of its best inner R^2 at each size.

    ``rows``: scored candidates (dicts with ``strategy, predictor, k, r2``).
    Each strategy is scored by the mean, over the sizes at which it was
    scored, of the highest inner R^2 among its predictors there; ties go to
    the smaller ``order(strategy)`` key.  Choosing the strategy once for the
    whole path makes every size's selection the first ``k`` of the largest
    (for a nested objective), so a model that ran the smaller selection
    runs only the benchmarks that the larger one adds.  O(len(rows)).

    Raises
    ------
    ValueError
        No row with a finite R^2 at any of ``sizes``.
    """
    key = order or (lambda s: 0)
    wanted = set(int(k) for k in sizes)
    best: dict[tuple[str, int], float] = {}
    for r in rows:
        if int(r["k"]) in wanted and np.isfinite(r["r2"]):
            at = (r["strategy"], int(r["k"]))
            best[at] = max(best.get(at, -np.inf), float(r["r2"]))
    if not best:
        raise ValueError("no scored candidate to choose from")
    means: dict[str, list[float]] = {}
    for (strategy, _), r2 in best.items():
        means.setdefault(strategy, []).append(r2)
    return min(means, key=lambda s: (-float(np.mean(means[s])), key(s)))


def _fit_predict(predictor: str, weights: dict[str, float], train: np.ndarray, query: np.ndarray,
                 cov: np.ndarray | None) -> np.ndarray:
    if cov is None:
        cov = inner_correlation(train)
    if predictor != "stack":
        out = np.asarray(make_predictor(predictor).fit(train, cov=cov).predict(query), dtype=float)
    else:
        out = np.zeros(np.shape(query))
        for n, w in weights.items():
            if w > 0:
                out += w * np.asarray(make_predictor(n).fit(train, cov=cov).predict(query), dtype=float)
        out = pass_through(out, np.asarray(query, dtype=float))
    return np.where(np.isfinite(out), out, 0.0)


def _check_train(train: Any) -> np.ndarray:
    tr = check_data_matrix(train, name="train", min_rows=1, allow_empty=True)
    if tr.shape[1] < 2:
        raise ValueError(f"train needs at least two benchmarks, one to reveal and one to predict, got shape {tr.shape}")
    empty = np.flatnonzero(np.isnan(tr).all(axis=0))
    if empty.size:
        raise ValueError(f"no training model observed benchmark column(s) {empty.tolist()[:10]}: nothing to learn a "
                         "prediction from; drop them")
    return tr


_STACK_ROWS = 2048  # most query rows handed to a row-wise predictor in one call


def block_predictions(pred: Any, train: np.ndarray, blocks: list, cov: np.ndarray | None) -> list[np.ndarray]:
    """Predictions of ``pred``, fit once on ``train``, for every query block (``blocks[i][2]``), in order.

    A row-wise predictor (``rowwise = True``: a row's prediction depends only
    on that row and ``train``) gets the blocks stacked, up to
    :data:`_STACK_ROWS` rows per call, which gives each row the prediction it
    gets alone at a fraction of the per-call cost; any other predictor (an
    SVD completion of ``[train; query]`` is transductive) gets one call per
    block, as if the blocks were separate queries.
    """
    pred = pred.fit(train, cov=cov)
    if not getattr(pred, "rowwise", False):
        return [np.asarray(pred.predict(q), dtype=float) for _, _, q, _ in blocks]
    out: list[np.ndarray] = []
    for run in size_runs([len(b[2]) for b in blocks], _STACK_ROWS):
        part = blocks[run]
        stacked = np.asarray(pred.predict(np.vstack([b[2] for b in part])), dtype=float)
        out.extend(np.split(stacked, np.cumsum([len(b[2]) for b in part])[:-1]))
    return out


def selection_cost(objective: str, n_benchmarks: int, k: int, *, n_models: int = 0) -> float:
    """Estimated operations of one selection of ``k`` among ``n_benchmarks`` (:meth:`Selector.select`). O(1).

    Every selection ends with one factorization of the N x N correlation for
    its diagnostics (``N^3 / 3``); on top: entropy and random ``k^2 N``, MI a
    fresh factorization and triangular inverse of the complement per step
    (``(k + 1) 2 N^3 / 3``), the lasso path ``k (200 k^2 N + 2 k N^2)``, the
    predictive greedy ``20 k`` ridge fits on ``n_models`` rows
    (``20 k^3 m N``), anchor points (PAM k-medoids) BUILD plus about ``k``
    SWAP sweeps of ``k N^2`` each (``(k + 1) k N^2``), the cross-validated
    per-target sparse Lasso six multi-target paths of 20 strengths at about
    60 FISTA iterations of ``2 N^3`` each plus five folds of two pairwise
    correlations and their eigendecompositions
    (``6 * 20 * 60 * 2 N^3 + 5 (2 m N^2 + 18 N^3)``), and the Lasso path of
    the mean score an eigenvalue floor and 400 strengths of a few sweeps
    (``9 N^3 + 400 * 3 N^2``); on the mean-imputed matrix the second moments
    and about 600 strengths of a few sweeps over ``k`` active coefficients
    and a check (``2 m N^2 + 600 * 3 (k^2 + k N)``), and the greedy on the
    residual trace a score and a rank-one update per step (``3 k N^2``).
    """
    N, k, m = float(n_benchmarks), float(k), float(n_models)
    base = N**3 / 3.0
    if objective == "mi":
        return base + (k + 1.0) * 2.0 * N**3 / 3.0
    if objective == "lasso":
        return base + k * (200.0 * k * k * N + 2.0 * k * N * N)
    if objective == "greedy":
        return base + 20.0 * k**3 * m * N
    if objective == "anchors":
        return base + (k + 1.0) * k * N * N
    if objective == "sparse":
        return base + 6.0 * 20.0 * 60.0 * 2.0 * N**3 + 5.0 * (2.0 * m * N * N + 18.0 * N**3)
    if objective == "mean-lasso":
        return base + 9.0 * N**3 + 400.0 * 3.0 * N * N
    if objective == "imputed-lasso":
        return base + 2.0 * m * N * N + 600.0 * 3.0 * (k * k + k * N)
    if objective == "trace":
        return base + 3.0 * k * N * N
    if objective == "imputed-trace":
        return base + 2.0 * m * N * N + 3.0 * k * N * N
    return base + k * k * N


def _correlation_cost(m: float, N: float, observed: float) -> float:
    """Estimated operations of :func:`~benchsel_lib.method.correlation.inner_correlation` of ``m`` rows."""
    if observed < 1.0 - EM_MAX_MISSING or em_too_costly(int(m), int(N)) or (observed >= 1.0 and m >= N):
        if observed >= 1.0 and m < N:  # complete and wide: the low-rank route
            return 2.0 * m * m * N + 2.0 * m * N * N
        return 2.0 * m * N * N + 9.0 * N**3  # two products and one eigendecomposition
    s = observed * N  # EM: about 30 iterations of block factorizations, products and the N x N updates
    return 30.0 * (m * min(s, N - s) ** 3 / 3.0 + 2.0 * m * N * N + 10.0 * N**3)


def _predictor_cost(name: str, m: float, v: float, N: float, k: float) -> float:
    """Estimated operations of one predictor for ``v`` query rows revealing ``k`` benchmarks, fit on ``m`` rows."""
    G = min(2.0 ** min(k, 60.0), v)  # distinct reveal patterns among the query rows
    p = min(k, 5.0)  # predictors per ridge fit of the blend
    svd = (m + v) * N * min(m + v, N)  # one iteration of the SVD completion
    if name == "gaussian":
        return G * k**3 + v * k * N
    if name == "ridge":
        return 4.0 * G * m * N * k * k
    if name == "knn":
        return 6.0 * v * m * N
    if name == "blend":
        return 10.0 * G * m * N * p * p + 5.0 * svd
    if name == "lowrank":
        return 20.0 * svd
    return 0.0


def search_cost(
    n_models: int,
    n_benchmarks: int,
    *,
    k: int,
    strategies: Sequence[str | Selector] = DEFAULT_STRATEGIES,
    predictors: Sequence[str] = DEFAULT_PREDICTORS,
    n_ks: int = 1,
    n_folds: int = 5,
    observed: float = 1.0,
    repeats: int = 1,
) -> float:
    """Estimated operations of :func:`pipeline_path` on an ``n_models x n_benchmarks`` training matrix. O(1).

    Per inner fold (``m_t = m - m / F`` training rows, ``v = m / F`` query
    rows): the fold's correlation (two products and an N x N
    eigendecomposition, the low-rank route for a complete wide matrix, or
    about 30 EM iterations where the inner correlation is EM), one selection
    per strategy (:func:`selection_cost`) and, for each of the ``n_ks``
    subset sizes of each strategy, every predictor: the Gaussian mean
    ``G k^3 + v k N``, ridge ``4 G m_t N k^2``, k-nearest neighbours
    ``6 v m_t N`` (the distances: quadratic in the models), the blend
    ``10 G m_t N p^2`` plus 5 SVD iterations, soft-impute 20 SVD iterations
    (``G = min(2^k, v)`` reveal patterns, ``p = min(k, 5)``; one SVD
    iteration ``(m_t + v) N min(m_t + v, N)``).  The weights were read off
    timings of the search on one core, where about 2e9 of these operations
    take a second; the estimate orders the work, it does not promise seconds.

    Parameters
    ----------
    n_models, n_benchmarks : int
    k : int
        The largest subset size.
    strategies, predictors : sequences
        The candidates (names or selectors; ``"given"``: a given revealed
        set, no selection; the predictor ``"stack"`` costs nothing more).
    n_ks : int
        Subset sizes scored per strategy.
    n_folds : int
    observed : float
        Observed fraction of the entries.
    repeats : int
        Draws of the inner folds (each costs as much as the first).

    Returns
    -------
    float
    """
    m, N, k = float(n_models), float(n_benchmarks), float(max(1, int(k)))
    F = float(max(2, int(n_folds)))
    m_t, v = m - m / F, m / F
    sels = [None if s == "given" else selector_named(s) for s in strategies]
    fold = _correlation_cost(m_t, N, float(observed))
    fold += sum(selection_cost(sel.objective, int(N), int(k), n_models=int(m_t)) for sel in sels if sel is not None)
    fold += len(sels) * n_ks * sum(_predictor_cost(p, m_t, v, N, k) for p in set(predictors) if p != "stack")
    return float(max(1, int(repeats))) * F * fold


@dataclass(frozen=True)
class SearchPlan:
    """How :func:`pipeline_path` runs its inner cross-validation (see :func:`plan_search`).

    Attributes
    ----------
    rows : ndarray of int or None
        The models the inner cross-validation uses (sorted; None: every model).
    columns : ndarray of int or None
        The benchmarks it uses (sorted; None: every benchmark).
    left_out : tuple of str
        Candidate strategies left out (their selection on every benchmark
        would cost more than :data:`SELECTION_BUDGET`).
    cost : float
        Estimated operations of the search on every model and benchmark (:func:`search_cost`).
    planned : float
        Estimated operations of the planned search.
    shape : (int, int)
        The training matrix's shape.
    seed : int
        Seed of the subsamples.
    budget : float
        The budget the plan was made for.
    given : bool
        The search only chooses a predictor for a given revealed set (no selection).
    """

    rows: np.ndarray | None
    columns: np.ndarray | None
    left_out: tuple[str, ...]
    cost: float
    planned: float
    shape: tuple[int, int]
    seed: int = 0
    budget: float = SEARCH_BUDGET
    given: bool = False

    @property
    def full(self) -> bool:
        """Whether the search runs on every model and benchmark with every candidate. O(1)."""
        return self.rows is None and self.columns is None and not self.left_out

    def note(self) -> str | None:
        """The plan in one line (None for the full search). O(1)."""
        if self.full:
            return None
        m, N = self.shape
        sub = []
        if self.rows is not None:
            sub.append(f"{self.rows.size:,} of the {m:,} models")
        if self.columns is not None:
            sub.append(f"{self.columns.size:,} of the {N:,} benchmarks")
        parts = []
        if sub:
            parts.append(f"its inner cross-validation runs on a seeded subsample of {' and '.join(sub)} "
                         f"(seed {self.seed})")
        if self.left_out:
            parts.append(f"{', '.join(self.left_out)} left out of the candidates (its selection on {N:,} benchmarks "
                         f"is estimated over {SELECTION_BUDGET:.0e} operations)")
        tail = "fit uses" if self.given else "selection and fit use"
        return (f"the inner search on {m:,} models x {N:,} benchmarks is estimated at {self.cost:.1e} operations, "
                f"over the budget of {self.budget:.0e}: {'; '.join(parts)}, estimated at {self.planned:.1e}; "
                f"the final {tail} every model and benchmark")


def plan_search(
    n_models: int,
    n_benchmarks: int,
    *,
    k: int,
    strategies: Sequence[str | Selector] = DEFAULT_STRATEGIES,
    predictors: Sequence[str] = DEFAULT_PREDICTORS,
    n_ks: int = 1,
    n_folds: int = 5,
    observed: float = 1.0,
    repeats: int = 1,
    keep: Sequence[int] = (),
    seed: int = 0,
    budget: float | None = None,
) -> SearchPlan:
    """Choose, before any work, how the inner search of :func:`pipeline_path` runs.

    Within ``budget`` (default :data:`SEARCH_BUDGET`) estimated operations
    (:func:`search_cost`) the search runs on everything.  Otherwise, in this
    order: a strategy whose selection on every benchmark costs more than
    :data:`SELECTION_BUDGET` is left out (when another candidate remains);
    with more than :data:`SEARCH_MIN_BENCHMARKS` benchmarks, the inner
    cross-validation uses the largest seeded subsample of them (at least
    that many, the ``keep`` columns always in) whose selections and
    correlations fit half the budget; with more than
    :data:`SEARCH_MIN_MODELS` models, the largest seeded subsample of the
    models (at least that many) whose whole search fits the budget.  The
    subsamples are uniform without replacement from the streams
    ``(seed, 12)`` (models) and ``(seed, 13)`` (benchmarks), sorted.
    Deterministic; O(log(M) + log(N)) cost evaluations plus the draws.

    Parameters
    ----------
    n_models, n_benchmarks : int
        The training matrix's shape.
    k, strategies, predictors, n_ks, n_folds, observed, repeats
        As for :func:`search_cost`.
    keep : sequence of int
        Columns every subsample of the benchmarks keeps (mandatory and given ones).
    seed : int
    budget : float, optional

    Returns
    -------
    SearchPlan
    """
    m, N = int(n_models), int(n_benchmarks)
    budget = SEARCH_BUDGET if budget is None else float(budget)
    given = list(strategies) == ["given"]
    kw = {"k": k, "predictors": predictors, "n_ks": n_ks, "n_folds": n_folds, "observed": observed,
          "repeats": repeats}
    cost = search_cost(m, N, strategies=strategies, **kw)
    if cost <= budget:
        return SearchPlan(None, None, (), cost, cost, (m, N), int(seed), budget, given)
    sels = [None if s == "given" else selector_named(s) for s in strategies]
    costly = [sel.label for sel in sels
              if sel is not None and selection_cost(sel.objective, N, k, n_models=m) > SELECTION_BUDGET]
    if len(costly) == len(sels):
        costly = []
    kept = [s for s, sel in zip(strategies, sels) if sel is None or sel.label not in costly]

    def largest(lo: int, hi: int, fits) -> int:
        """The largest n in [lo, hi] with fits(n) (lo when none)."""
        if fits(hi):
            return hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo

    n_cols = N
    if N > SEARCH_MIN_BENCHMARKS:
        def columns_fit(n: int) -> bool:
            cost_n = search_cost(max(m, 2), n, strategies=kept, **{**kw, "predictors": ()})
            return cost_n <= budget / 2.0
        n_cols = largest(SEARCH_MIN_BENCHMARKS, N, columns_fit)
    n_rows = m
    if m > SEARCH_MIN_MODELS:
        n_rows = largest(SEARCH_MIN_MODELS, m, lambda r: search_cost(r, n_cols, strategies=kept, **kw) <= budget)
    rows = columns = None
    if n_rows < m:
        rows = np.sort(rng(int(seed), 12).choice(m, n_rows, replace=False))
    if n_cols < N:
        forced = np.unique(np.asarray(list(keep), dtype=int))
        rest = np.setdiff1d(np.arange(N), forced)
        extra = rng(int(seed), 13).choice(rest.size, max(0, n_cols - forced.size), replace=False)
        columns = np.sort(np.concatenate([forced, rest[extra]]))
    planned = search_cost(n_rows, n_cols, strategies=kept, **kw)
    return SearchPlan(rows, columns, tuple(costly), cost, planned, (m, N), int(seed), budget, given)


def pipeline_path(
    train: Any,
    k_max: int,
    *,
    cov: np.ndarray | None = None,
    strategies: Sequence[str | Selector] = DEFAULT_STRATEGIES,
    predictors: Sequence[str] = DEFAULT_PREDICTORS,
    stack: bool = True,
    n_folds: int = 5,
    seed: int = 0,
    names: Sequence[str] | None = None,
    levels: Sequence[float] = (0.5, 0.8, 0.9),
    fixed: Sequence[int] | None = None,
    ks: Sequence[int] | None = None,
    budget: float | str | None = "auto",
    rule: str = DEFAULT_RULE,
    repeats: int = 1,
    unconditioned: str = "skip",
    blocks: Sequence[int] = (),
    keep_blocks: str = "always",
) -> list[Recommendation]:
    """The recommended pipeline for every ``k = 1..k_max`` from one inner cross-validation.

    Parameters
    ----------
    train : ndarray (m, N)
        Standardized training scores (NaN missing).
    k_max : int
    cov : ndarray (N, N), optional
        Training correlation for the final selection and Gaussian predictor
        (default :func:`~benchsel_lib.method.correlation.inner_correlation`; the CV
        protocol passes its EM estimate).
    strategies : sequence of str or Selector
        The candidate selections (:data:`~benchsel_lib.method.selectors.SELECTORS`
        names or :class:`~benchsel_lib.method.selectors.Selector` objects,
        labelled by ``Selector.label``); mandatory benchmarks and candidate
        filters are theirs.
    predictors : sequence of str
        The candidate predictors (:data:`~benchsel_lib.method.predictors.PREDICTORS`
        names; one selector and one predictor = a fixed pipeline, no search).  The
        predictor ``"stack"`` stands for the NNLS stack of the other named
        predictors; named alone (the fixed pipeline ``"mi+stack"``) it is the
        stack of :data:`DEFAULT_PREDICTORS`, fit by the inner CV, and the only
        choice.
    stack : bool
        Also score the NNLS stack of ``predictors`` per strategy (weights
        cross-fitted over the inner folds for its score, refit on all inner
        predictions for use).
    n_folds : int
        Inner folds; with fewer than ``2 n_folds`` training models the search
        is skipped and :data:`FALLBACK` is used (``note`` says so).
    seed : int
        Seed of the inner folds and of the random strategy.
    names : sequence of str, optional
        Benchmark names of the columns (default ``"0", "1", ...``), for the
        selectors' mandatory benchmarks (names absent from them are skipped).
    levels : sequence of float
        Interval levels.
    fixed : sequence of int, optional
        A given revealed set (what a practitioner ran): no selection, only
        the predictor is chosen (strategy ``"given"``); ``k_max`` is ignored
        and one Recommendation with ``k = len(fixed)`` is returned.
    ks : sequence of int, optional
        Score and recommend only these subset sizes (default ``1..k_max``);
        the selections still run to ``k_max``.
    budget : float, "auto" or None
        Estimated operations the inner search may take (:func:`plan_search`;
        ``"auto"``: :data:`SEARCH_BUDGET`): above it the inner cross-validation
        runs on seeded subsamples of the models and/or benchmarks and costly
        strategies are left out (``Recommendation.plan`` says so), while the
        final selections use every row and column.  None: always the full
        search.
    rule : {"monotone", "best", "nested", "additive", "shrunk"}
        How the candidate is chosen at each ``k`` (:func:`choose_candidate`):
        the highest inner R^2, or (``"monotone"``, the default) the same
        unless it falls below the inner R^2 of the choice at ``k - 1``, in
        which case that pipeline is kept with one more benchmark;
        ``"additive"`` as ``"monotone"`` with the candidate of the highest
        main-effects score (:func:`additive_scores`); ``"shrunk"`` as
        ``"additive"`` with each candidate's own score pooled toward its
        main-effects one by as much as the inner folds disagree on the
        difference (:func:`shrunk_scores`).  With
        ``"monotone"``, ``"additive"`` or ``"shrunk"`` every size up to the largest of ``ks`` is scored, so
        that a choice does not depend on which sizes were asked for; a
        search cut down to its ``budget`` (big matrices) scores only the
        sizes asked for, each choosing its best candidate.  ``"nested"``:
        one strategy for every size, the best in the mean over the scored
        sizes (:func:`nested_strategy`), and at each size its best
        predictor, so that each size's selection is the first ``k`` of the
        largest (unless the objective selects per size, as anchor points
        do); its choice at a size depends on the largest size scored.

    repeats : int
        How many times the inner cross-validation is run, each on its own
        seeded draw of the ``n_folds`` folds: a candidate's inner R^2 pools the
        residuals of every repeat (the stack's weights are cross-fitted fold
        by fold within each draw), and the conformal scores pool every
        repeat's residuals.  More
        repeats make the choice less dependent on one draw of the folds, at
        ``repeats`` times the cost of the inner search.  1 (default): one draw.
    unconditioned : {"skip", "mean"}
        Which inner-held-out rows score a candidate, the rule of the protocol
        the pipeline is judged by (Section 5.1): ``"skip"`` (default, the
        paper's) leaves out a row that observes none of the candidate's
        revealed benchmarks, so a selection that few models observe is
        scored on fewer rows; ``"mean"`` scores every row, the training mean
        for those, so every candidate is scored on the same rows.
    blocks : sequence of int
        Sizes at which the path is fixed (default none: one search for every
        size).  Above a block size ``b`` (up to the next one), every
        candidate strategy keeps the benchmarks of the choice at ``b`` as
        mandatory ones and the search there runs anew from size ``b``: the
        larger selection adds to the smaller one's benchmarks, so a model
        that ran the choice at ``b`` runs only what the larger one adds, and
        revealing more cannot take away what the smaller choice revealed.  A
        strategy that cannot keep them (one that excludes one of them) is
        left out above the block (``note`` says so).  Each block past the
        first is one more inner search, scoring the sizes from its block
        size up; the sizes up to the first block are those of the path
        without blocks, and a block size at or above the largest size asked
        for changes nothing.  Ignored with ``fixed``.
    keep_blocks : {"always", "unnested", "hold"}
        Which choices at a block size are kept (:data:`KEEP_BLOCKS`):
        ``"always"`` (default) every one; ``"hold"`` every one, and above
        the block one more candidate strategy, ``"S@b"``: the block's
        strategy ``S`` (keeping the block's benchmarks, so its scored
        entries are those of ``S``) predicting from the ``b`` benchmarks
        chosen at the block only (``Recommendation.conditioned``), so that
        where the inner folds find that the benchmarks added past the block
        do not help, the choice can ignore them (a predictor that can
        ignore an unhelpful benchmark); ``"unnested"`` only a choice
        whose strategy is not nested (``Selector.nested``: anchor points,
        BenchPred's imputed Lasso), whose own larger selections need not
        contain it; after any other choice the sizes up to the next block
        are those of the path without blocks (with no such strategy among
        the candidates, the path is the one search without blocks).  That
        path is searched only as far as it is used, up to one block at a
        time, each part looking back at the choice that ends the part
        before and planned for the whole path, so that its choices are
        those of one search of every size; a block costs one more search, from its size up, only where
        its choice is kept.  (With ``rule="nested"``, whose one strategy
        is chosen over every size, the path without blocks is one search.)

    Returns
    -------
    list of Recommendation, one per ``k`` in increasing order: index ``k - 1``
    by default, one item with ``fixed``.

    Notes
    -----
    Cost: ``repeats`` x ``n_folds`` x (one pairwise correlation + one selection per
    strategy + ``k_max`` predictions per (strategy, predictor)), then one
    final selection and fit per ``k`` (:func:`search_cost` estimates it);
    within ``budget`` on every model and benchmark.  Memory O(m N) for the
    out-of-fold predictions plus the predictors' own (bounded) work arrays.
    With a plan that subsamples the benchmarks, the conformal scale of a
    benchmark outside the subsample is the pooled one.
    """
    kw: dict[str, Any] = dict(cov=cov, predictors=predictors, stack=stack, n_folds=n_folds, seed=seed, names=names,
                              levels=levels, fixed=fixed, budget=budget, rule=rule, repeats=repeats,
                              unconditioned=unconditioned)
    cuts = check_blocks(blocks)
    keep_blocks = check_keep_blocks(keep_blocks)
    if cuts and fixed is None:
        k_max = check_int(k_max, "k")
        sizes = list(range(1, k_max + 1)) if ks is None else list(check_ks(ks, k_max))
        cuts = tuple(b for b in cuts if b < sizes[-1])  # a block at or above the largest size asked fixes nothing
    if not cuts or fixed is not None:
        return _search_path(train, k_max, strategies=strategies, ks=ks, **kw)
    listed = [selector_named(s) for s in strategies]
    nested = {sel.label: sel.nested for sel in listed}
    if keep_blocks == "unnested" and all(nested.values()):  # no block can be kept: the one search without blocks
        return _search_path(train, k_max, strategies=strategies, ks=ks, **kw)
    N = _check_train(train).shape[1]
    labels = [str(j) for j in range(N)] if names is None else [str(b) for b in names]
    recs: list[Recommendation] = []
    # the path without blocks ("unnested"), by size, searched only as far as it is used: up to ``free_at``, with
    # its choice there to look back at (the same choices as one search of every size)
    free: dict[int, Recommendation] = {}
    free_at, free_prev = 0, None
    whole = sorted(set(sizes) | set(cuts))  # the sizes one search without blocks would be asked for (its plan)
    lo, chosen = 0, None  # the sizes above lo are searched from the choice at lo (None: from nothing)
    hold: tuple[str, tuple[int, ...]] | None = None  # "hold": the strategy and the benchmarks a held candidate keeps
    for hi in [*cuts, k_max]:
        asked = [k for k in sizes if lo < k <= hi]  # a block with no size asked still fixes the choice at hi
        if chosen is None and keep_blocks == "unnested":  # the sizes up to hi are those of the path without blocks
            if free_at < hi:  # search it on, to hi (to its end for the "nested" rule: its one strategy sees every size)
                upto = k_max if rule == "nested" else hi
                part = _search_path(train, k_max, strategies=strategies, ks=[k for k in whole if free_at < k <= upto],
                                    first=free_at + 1, previous=free_prev, plan_for=whole, **kw)
                free.update((r.k, r) for r in part)
                free_at, free_prev = upto, _as_previous(part[-1])
            out = [free[k] for k in sorted(free) if lo < k <= hi]
        else:
            cands: list[Selector] = listed
            errors: list[str] = []
            if chosen is not None:
                kept = tuple(labels[j] for j in chosen)
                cands = []
                for sel in listed:
                    try:
                        cands.append(replace(sel, initial=kept + tuple(b for b in sel.initial if b not in kept)))
                    except ValueError as exc:  # a mandatory benchmark it excludes
                        errors.append(f"{sel.label} left out above k={lo}: {exc}")
                if not cands:
                    raise ValueError(f"no candidate strategy can keep the choice at k={lo}: " + "; ".join(errors))
            last = hi == k_max  # the last search selects up to k_max, as the path without blocks does
            out = _search_path(train, hi, strategies=cands, ks=asked if last else sorted(set(asked) | {hi}),
                               first=max(lo, 1), hold=hold, **kw)
            if errors:
                for r in out:
                    r.note = "; ".join(([r.note] if r.note else []) + errors)
        recs += [r for r in out if r.k in asked]
        at = out[-1] if out else None  # the choice at hi (below the last block: at the block size)
        keep = at is not None and (keep_blocks != "unnested" or not nested.get(at.strategy, True))
        lo, chosen = hi, list(at.selection) if keep else None
        if keep and keep_blocks == "hold":  # a held choice at the block stays the candidate it was
            held = hold is not None and at.conditioned is not None
            hold = (hold[0], tuple(at.conditioned)) if held else (at.strategy, tuple(at.selection))
    return recs


def _as_previous(rec: Recommendation) -> dict[str, Any] | None:
    """The choice of ``rec`` as a look-back row for :func:`choose_candidate` (None where nothing was chosen)."""
    if not np.isfinite(rec.inner_r2):
        return None
    return dict(strategy=rec.strategy, predictor=rec.predictor, k=rec.k, r2=rec.inner_r2)


def _search_path(
    train: Any,
    k_max: int,
    *,
    cov: np.ndarray | None,
    strategies: Sequence[str | Selector],
    predictors: Sequence[str],
    stack: bool,
    n_folds: int,
    seed: int,
    names: Sequence[str] | None,
    levels: Sequence[float],
    fixed: Sequence[int] | None,
    ks: Sequence[int] | None,
    budget: float | str | None,
    rule: str,
    repeats: int,
    unconditioned: str,
    first: int = 1,
    previous: dict[str, Any] | None = None,
    plan_for: Sequence[int] | None = None,
    hold: tuple[str, Sequence[int]] | None = None,
) -> list[Recommendation]:
    """:func:`pipeline_path` without blocks, or one segment of it.

    A look-back rule scores the sizes from ``first`` (not 1) up, and at
    ``first`` looks back at ``previous`` (:func:`_as_previous` of the choice
    at ``first - 1``); ``plan_for``: the sizes asked of the whole path from
    size 1, for which the budget plan is made, so that a path searched in
    segments is planned, and chooses, as one search of every size.
    ``hold``: ``(strategy, columns)``, one more candidate strategy
    ``"strategy@b"`` (``b = len(columns)``) at every size above ``b``: the
    selection of ``strategy``, which keeps ``columns``, predicted from
    ``columns`` only (its scored entries are those of ``strategy``); left
    out when ``strategy`` is not a candidate here.
    """
    check_choice_rule(rule)
    tr = _check_train(train)
    m, N = tr.shape
    names = [str(j) for j in range(N)] if names is None else [str(b) for b in names]
    if len(names) != N:
        raise ValueError(f"names has {len(names)} entries for {N} benchmark columns")
    listed = [selector_named(s) for s in strategies]
    selectors = {sel.label: sel for sel in listed}
    if len(selectors) != len(listed):
        raise ValueError(f"strategies lists a selector twice: {[s.label for s in listed]}")
    strategies, predictors = tuple(selectors), tuple(predictors)
    for p in predictors:
        check_predictor_name(p)
    if not strategies or not predictors:
        raise ValueError("strategies and predictors must not be empty")
    # "stack" names the NNLS stack of the other predictors (of DEFAULT_PREDICTORS when it is named
    # alone, as in the fixed pipeline "mi+stack"); named alone, the stack is also the only choice
    only_stack = predictors == ("stack",)
    if "stack" in predictors:
        predictors = tuple(p for p in predictors if p != "stack") or DEFAULT_PREDICTORS
        stack = True
    if fixed is not None:
        fixed = [int(j) for j in fixed]
        if not fixed or len(set(fixed)) != len(fixed) or not all(0 <= j < N for j in fixed):
            raise ValueError(f"fixed must list distinct columns in 0..{N - 1}, got {fixed!r}")
        k_max, strategies = len(fixed), ("given",)
    k_max = check_int(k_max, "k")
    n_folds = check_int(n_folds, "n_folds", minimum=2)
    repeats = check_int(repeats, "repeats")
    check_unconditioned(unconditioned)
    R = inner_correlation(tr) if cov is None else as_correlation_matrix(cov)  # a wide matrix's stays low-rank
    levels = tuple(float(lv) for lv in levels)
    obs = ~np.isnan(tr)
    truth = np.where(obs, tr, 0.0)
    note = None
    search = len(strategies) * len(predictors) > 1 or stack
    too_few = m < 2 * n_folds  # no inner cross-validation at all (a strategy left out below does not stop it)
    if too_few:
        note = f"only {m} training models: too few for {n_folds}-fold inner cross-validation (need {2 * n_folds})"
        if search and fixed is not None:  # the given benchmarks stay; only the predictor falls back
            note += f"; using the default predictor {FALLBACK[1]}" + (", without intervals" if levels else "")
            predictors, stack, search = (FALLBACK[1],), False, False
        elif search:
            note += f"; using the default {FALLBACK[0]}+{FALLBACK[1]}" + (", without intervals" if levels else "")
            head = next(iter(selectors.values()))
            fallback = replace(selector_named(FALLBACK[0]), initial=head.initial, min_observed=head.min_observed)
            selectors = {fallback.label: fallback}
            strategies, predictors, stack, search = (fallback.label,), (FALLBACK[1],), False, False
        else:
            note += "; no intervals"
    plan = None
    # the monotone and nested rules score every size up to the largest (from ``first``)
    lookback = rule != "best" and search and fixed is None
    if budget is not None and not too_few and (search or levels):
        keep = list(fixed or [])
        for sel in selectors.values():
            keep += sel.resolve_initial(names, missing="skip")
        plan_ks = ks if plan_for is None else plan_for
        asked = 1 if fixed is not None else (k_max if plan_ks is None else len(set(plan_ks)))
        n_ks = k_max - (first if plan_for is None else 1) + 1 if lookback else asked

        def planned(n: int) -> SearchPlan:
            return plan_search(m, N, k=k_max, strategies=list(strategies) if fixed is not None else
                               list(selectors.values()), predictors=predictors, n_ks=n, n_folds=n_folds,
                               observed=float(obs.mean()), repeats=repeats, keep=keep, seed=seed,
                               budget=None if budget == "auto" else float(budget))

        plan = planned(n_ks)
        if not plan.full and n_ks != asked:
            # a search cut down to its budget scores only the sizes asked for (the monotone rule's look back
            # at every smaller size would multiply the work the plan cuts); each is then its best candidate
            lookback = False
            plan = planned(asked)
        if plan.full:
            plan = None
        else:
            _LOG.info(plan.note())
            if plan.left_out:
                strategies = tuple(s for s in strategies if s not in plan.left_out)
    # final selections on all training rows (these also check k against the filters): per strategy, the
    # selected benchmarks at every size scored and at k_max (prefixes of the one at k_max, unless the objective
    # is not nested)
    def choose(x: np.ndarray, s: str, c: np.ndarray, sel: Selector | None, given: Sequence[int] | None = None,
               labels: Sequence[str] | None = None) -> dict[int, list[int]]:
        sizes = sorted(set(scored) | {k_max})
        if s == "given":
            order = list(fixed if given is None else given)  # type: ignore[arg-type]
            return {k: order[:k] for k in sizes if k <= len(order)}
        counts = (~np.isnan(x)).sum(axis=0)
        return sel.select_sizes(c, sizes, names=names if labels is None else labels, counts=counts,
                                n_models=x.shape[0], train=x, seed=seed, missing_initial="skip")

    if fixed is not None:
        ks = [k_max]
    elif ks is None:
        ks = list(range(1, k_max + 1))
    else:
        ks = check_ks(ks, k_max)
    # a choice that looks back at k - 1 needs every size below the largest one asked for scored
    wanted = set(ks)
    scored = list(range(min(first, min(ks)), max(ks) + 1)) if lookback else list(ks)
    # the inner cross-validation's matrix: every row and column, or the plan's subsamples
    sub_rows = None if plan is None else plan.rows
    sub_cols = None if plan is None else plan.columns
    if sub_cols is None:
        given_s, names_s = fixed, names
        cv = tr if sub_rows is None else tr[sub_rows]
    else:
        pos = {int(j): i for i, j in enumerate(sub_cols)}
        given_s = None if fixed is None else [pos[j] for j in fixed]
        names_s = [names[j] for j in sub_cols]
        cv = (tr if sub_rows is None else tr[sub_rows])[:, sub_cols]
    m_s, N_s = cv.shape
    obs_s = obs if cv is tr else ~np.isnan(cv)
    truth_s = truth if cv is tr else np.where(obs_s, cv, 0.0)
    finals: dict[str, dict[int, list[int]]] = {}  # selections on every row and column, by size
    errors: list[str] = []
    if sub_cols is None:
        for s in strategies:
            try:
                finals[s] = choose(tr, s, R, selectors.get(s))
            except ValueError as exc:  # e.g. k larger than what this strategy's filter leaves
                if len(strategies) == 1:
                    raise
                errors.append(f"{s} left out: {exc}")
        if not finals:
            raise ValueError("no candidate strategy can select k benchmarks here: " + "; ".join(errors))
        fallback_orders = finals
    else:  # the fold fallbacks are selections on the subsample; the final ones are made once chosen
        R_s = R[np.ix_(sub_cols, sub_cols)]
        fallback_orders = {}
        for s in strategies:
            try:
                fallback_orders[s] = choose(cv, s, R_s, selectors.get(s), given_s, names_s)
            except ValueError as exc:
                if len(strategies) == 1:
                    raise
                errors.append(f"{s} left out: {exc}")
        if not fallback_orders:
            raise ValueError("no candidate strategy can select k benchmarks here: " + "; ".join(errors))
    if errors:
        strategies = tuple(s for s in strategies if s in fallback_orders)
        note = "; ".join(([note] if note else []) + errors)
    held = None  # a held candidate: (its label, its strategy, its columns in the inner matrix, its columns)
    if hold is not None and search and fixed is None and hold[0] in strategies:
        cols = [int(j) for j in hold[1]]
        cols_s = cols if sub_cols is None else [pos[j] for j in cols if j in pos]
        held = (f"{hold[0]}@{len(cols)}", hold[0], cols_s, cols)
    oof: dict[tuple[str, str, int], np.ndarray] = {}
    masks: dict[tuple[str, int], np.ndarray] = {}
    # repeat r's out-of-fold predictions fill rows r m_s .. (r + 1) m_s - 1 of the stacked arrays
    folds = ([(r * m_s, rows) for r in range(repeats) for rows in inner_folds(m_s, n_folds, seed, repeat=r)]
             if (search or levels) and not too_few else [])
    m_t = m_s * repeats
    truth_t = truth_s if repeats == 1 else np.tile(truth_s, (repeats, 1))
    fold_of = np.zeros(m_t, dtype=int)
    for f, (off, rows) in enumerate(folds):
        fold_of[off + rows] = f
    draw_of = np.repeat(np.arange(repeats), m_s)  # the draw of each stacked row
    for off, rows in folds:
        others = np.setdiff1d(np.arange(m_s), rows)
        keep_cols = obs_s[others].any(axis=0)
        if keep_cols.sum() < 2:
            continue
        fold_scaling = Scaling().fit(cv[others], empty="identity")  # the fold's own (no inner-validation rows)
        itr, zrows = fold_scaling.transform(cv[others]), fold_scaling.transform(cv[rows])
        ob = obs_s[rows]
        Ri = inner_correlation(itr)
        blocks: list[tuple[str, int, np.ndarray, np.ndarray]] = []  # (strategy, k, query, scored mask)
        for s in strategies:
            try:
                sel = selectors.get(s)
                sized = choose(itr, s, Ri, None if sel is None else sel.scaled(len(others), m_s), given_s, names_s)
            except ValueError:
                sized = fallback_orders[s]
            for k in scored:
                if k not in sized:
                    continue
                sel = np.asarray(sized[k])
                rev = np.zeros(N_s, dtype=bool)
                rev[sel] = True
                q = np.where(ob & rev[None, :], zrows, np.nan)
                mk = ob & ~rev[None, :]  # the protocol's scored entries (scored_entries)
                if unconditioned == "skip":
                    mk &= (ob & rev[None, :]).any(axis=1)[:, None]
                masks.setdefault((s, k), np.zeros((m_t, N_s), dtype=bool))[off + rows] = mk
                blocks.append((s, k, q, mk))
                if held is not None and s == held[1] and k > len(held[2]):  # same entries, fewer revealed
                    masks.setdefault((held[0], k), np.zeros((m_t, N_s), dtype=bool))[off + rows] = mk
                    blocks.append((held[0], k, held_query(q, held[2]), mk))
        for p in predictors:
            for (s, k, _, mk), out in zip(blocks, block_predictions(make_predictor(p), itr, blocks, Ri)):
                out = fold_scaling.inverse(np.where(np.isfinite(out), out, 0.0))  # back to the units of ``train``
                oof.setdefault((s, p, k), np.zeros((m_t, N_s)))[off + rows] = np.where(mk, out, 0.0)
    recs: list[Recommendation] = []
    score_rows: list[dict[str, Any]] = []

    def by_fold(pred: np.ndarray, mk: np.ndarray) -> dict[str, list[float]]:
        """The inner R^2 on each inner fold (NaN where it scores nothing), for the ``"shrunk"`` choice."""
        if rule != "shrunk":
            return {}
        out = []
        for off, rows in folds:
            at = off + rows
            m = mk[at]
            res = float(((pred[at] - truth_t[at])[m] ** 2).sum())
            out.append(r2_from_sums(res, float((truth_t[at][m] ** 2).sum())) if m.any() else float("nan"))
        return {"fold_r2": out}

    stack_w: dict[tuple[str, int], dict[str, float]] = {}
    stack_oof: dict[tuple[str, int], np.ndarray] = {}
    for (s, k), mk in masks.items():
        tot = float((truth_t[mk] ** 2).sum())
        for p in predictors:
            res = float(((oof[(s, p, k)] - truth_t)[mk] ** 2).sum())
            score_rows.append(dict(strategy=s, predictor=p, k=k, r2=r2_from_sums(res, tot),
                                   n_eval=int(mk.sum()), **by_fold(oof[(s, p, k)], mk)))
        if stack and len(predictors) > 1:
            cross = np.zeros((m_t, N_s))
            for f, (off, _) in enumerate(folds):  # weights from the other folds of the same draw
                inf = (fold_of == f)[:, None] & mk
                outf = mk & ~inf & (draw_of == off // m_s)[:, None]
                w = nnls_weights([oof[(s, p, k)][outf] for p in predictors], truth_t[outf])
                cross[inf] = sum(wb * oof[(s, p, k)][inf] for wb, p in zip(w, predictors))
            res = float(((cross - truth_t)[mk] ** 2).sum())
            score_rows.append(dict(strategy=s, predictor="stack", k=k, r2=r2_from_sums(res, tot),
                                   n_eval=int(mk.sum()), **by_fold(cross, mk)))
            w_all = nnls_weights([oof[(s, p, k)][mk] for p in predictors], truth_t[mk])
            stack_w[(s, k)] = dict(zip(predictors, w_all.tolist()))
            stack_oof[(s, k)] = cross
    scores = pd.DataFrame(score_rows, columns=["strategy", "predictor", "k", "r2", "n_eval"])
    rank_s = {s: i for i, s in enumerate(strategies)}
    if held is not None:  # ties go to the strategies that use every revealed benchmark
        rank_s[held[0]] = len(rank_s)
    rank_p = {p: i for i, p in enumerate(tuple(predictors) + ("stack",))}
    plan_note = None if plan is None else plan.note()

    def final(s: str) -> dict[int, list[int]] | None:
        """The selections of ``s`` on every row and column by size (None when its filter leaves too few)."""
        if held is not None and s == held[0]:
            return final(held[1])
        if s not in finals:
            try:
                finals[s] = choose(tr, s, R, selectors.get(s))
            except ValueError:
                finals[s] = None  # type: ignore[assignment]
        return finals[s]

    # the choice at the size scored before (at first - 1: the caller's), looked back at when that is k - 1
    usable = [r for r in score_rows
              if not np.isnan(r["r2"]) and not (only_stack and stack and r["predictor"] != "stack")]
    path_strategy = None  # the "nested" rule's one strategy (on a subsample: one that can select on every benchmark)
    pool = usable if rule == "nested" else []
    while pool:
        path_strategy = nested_strategy(pool, scored, order=rank_s.get)
        if sub_cols is None or final(path_strategy) is not None:
            break
        pool, path_strategy = [r for r in pool if r["strategy"] != path_strategy], None
    for k in scored:
        at = [r for r in usable if r["k"] == k and (path_strategy is None or r["strategy"] == path_strategy)]
        inner = float("nan")
        best = None
        prev = previous if previous is not None and previous["k"] == k - 1 else None
        while at:
            cand = choose_candidate(at, previous=prev, rule=rule,
                                    order=lambda r: (rank_s[r["strategy"]], rank_p[r["predictor"]]))
            # on a subsample, only a strategy that can select on every benchmark; its final selection (one per
            # strategy, on every row and column) is made only when it is chosen
            if sub_cols is None or final(cand["strategy"]) is not None:
                best = cand
                break
            at = [r for r in at if r["strategy"] != cand["strategy"]]
        if best is not None:
            previous = best
            s, p, inner = best["strategy"], best["predictor"], float(best["r2"])
        else:
            previous = None
            s, p = next((t for t in strategies if final(t) is not None), strategies[0]), predictors[0]
            if final(s) is None:
                raise ValueError(f"no candidate strategy can select k={k_max} benchmarks here")
        if k not in wanted:
            continue
        weights = stack_w.get((s, k), {}) if p == "stack" else {}
        mk = masks.get((s, k))
        if mk is not None and mk.any():
            pred = stack_oof[(s, k)] if p == "stack" else oof[(s, p, k)]
            res = pred - truth_t
            if sub_cols is not None:  # benchmarks outside the subsample get the pooled scale
                res_all, mk_all = np.zeros((m_t, N)), np.zeros((m_t, N), dtype=bool)
                res_all[:, sub_cols], mk_all[:, sub_cols] = res, mk
                res, mk = res_all, mk_all
            scale, scores_k = conformal_scores(res, mk)
            qs = {lv: conformal_quantile(scores_k, lv) for lv in levels}
        else:
            scale, scores_k, qs = np.ones(N), None, {lv: float("nan") for lv in levels}
        recs.append(Recommendation(k=k, strategy=s, predictor=p, selection=list(final(s).get(k, [])),
                                   scores=scores, weights=weights, scale=scale, quantiles=qs, note=note,
                                   seed=int(seed), inner_r2=inner, conformal=scores_k, plan=plan_note,
                                   conditioned=held[3] if held is not None and s == held[0] else None))
    return recs
