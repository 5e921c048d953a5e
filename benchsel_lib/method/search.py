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
paper's R^2 (Section 5.1).  The best one is refit on all training models.
Held-out models are never seen.

Intervals are split-conformal (CV+ style) from the same inner-CV residuals of
the chosen pair (:func:`~benchsel_lib.method.calibration.conformal_scales`):
the interval at level ``L`` is ``pred +- q_L s_j``.  A
:class:`~benchsel_lib.method.pipeline.Pipeline` with several candidates or
conformal intervals fits through this function.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from .._checks import check_int
from .base import pass_through
from .calibration import conformal_quantile, conformal_scores
from .correlation import inner_correlation
from .predictors import PREDICTORS, inner_folds, make_predictor, nnls_weights
from .scaling import Scaling
from .selectors import Selector, selector_named

__all__ = [
    "Recommendation",
    "pipeline_path",
    "block_predictions",
    "DEFAULT_STRATEGIES",
    "DEFAULT_PREDICTORS",
    "FALLBACK",
]


#: candidates of the recommended pipeline (predictive greedy, soft-impute and the stack's
#: other members are left out of the default search for speed; name them to include them)
DEFAULT_STRATEGIES = ("mi", "entropy-obs", "lasso", "random")


DEFAULT_PREDICTORS = ("gaussian", "ridge", "knn", "blend")


#: the named default used when there are too few training models for the inner CV
FALLBACK = ("mi", "gaussian")


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
        Inner-CV R^2 of every candidate: ``strategy, predictor, k, r2, n_eval``.
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

    @property
    def name(self) -> str:
        return f"{self.strategy}+{self.predictor}"

    def predict(self, train: np.ndarray, query: np.ndarray, *, cov: np.ndarray | None = None) -> np.ndarray:
        """Predictions (standardized) of every entry of ``query`` by the chosen predictor, fit on ``train``."""
        return _fit_predict(self.predictor, self.weights, train, query, cov)

    @property
    def candidates(self) -> pd.DataFrame:
        """Inner-CV R^2 of every candidate at this ``k``, best first."""
        at = self.scores[self.scores["k"] == self.k]
        return at.sort_values("r2", ascending=False, kind="stable").reset_index(drop=True)

    def quantile(self, level: float) -> float:
        """The conformal multiplier ``q_level`` (NaN when no inner-CV residual was kept)."""
        if float(level) in self.quantiles:
            return self.quantiles[float(level)]
        if self.conformal is None:
            return float("nan")
        return conformal_quantile(self.conformal, level)

    def interval(self, pred: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
        """Conformal interval ``pred +- q_level * scale`` (columns of ``pred`` are benchmarks)."""
        q = self.quantile(level)
        if self.scale is None or not np.isfinite(q):
            raise ValueError(f"no interval at level {level!r}: the inner cross-validation kept no residuals")
        half = q * self.scale
        return pred - half, pred + half


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
    try:
        tr = np.array(train, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("train must be a numeric (models x benchmarks) array") from None
    if tr.ndim != 2 or tr.shape[0] < 1 or tr.shape[1] < 2:
        raise ValueError(f"train must be 2-D with at least one model and two benchmarks, got shape {tr.shape}")
    if np.isinf(tr).any():
        raise ValueError("train contains infinite values (use NaN for missing)")
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
    start = 0
    while start < len(blocks):
        stop, n = start, 0
        while stop < len(blocks) and (stop == start or n + len(blocks[stop][2]) <= _STACK_ROWS):
            n += len(blocks[stop][2])
            stop += 1
        stacked = np.asarray(pred.predict(np.vstack([b[2] for b in blocks[start:stop]])), dtype=float)
        bounds = np.cumsum([len(b[2]) for b in blocks[start:stop]])[:-1]
        out.extend(np.split(stacked, bounds))
        start = stop
    return out


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

    Returns
    -------
    list of Recommendation, one per ``k`` in increasing order: index ``k - 1``
    by default, one item with ``fixed``.

    Notes
    -----
    Cost: ``n_folds`` x (one pairwise correlation + one selection per
    strategy + ``k_max`` predictions per (strategy, predictor)), then one
    final selection and fit per ``k``.
    """
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
        if p not in PREDICTORS:
            raise ValueError(f"unknown predictor {p!r}: use one of {sorted(PREDICTORS)}")
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
    R = inner_correlation(tr) if cov is None else np.asarray(cov, dtype=float)
    levels = tuple(float(lv) for lv in levels)
    obs = ~np.isnan(tr)
    truth = np.where(obs, tr, 0.0)
    note = None
    search = len(strategies) * len(predictors) > 1 or stack
    if m < 2 * n_folds:
        note = f"only {m} training models: too few for {n_folds}-fold inner cross-validation (need {2 * n_folds})"
        if search:
            note += f"; using the default {FALLBACK[0]}+{FALLBACK[1]}"
            first = next(iter(selectors.values()))
            fallback = replace(selector_named(FALLBACK[0]), initial=first.initial, min_observed=first.min_observed)
            selectors = {fallback.label: fallback}
            strategies, predictors, stack, search = (fallback.label,), (FALLBACK[1],), False, False
        else:
            note += "; no intervals"
    # final selections on all training rows (these also check k against the filters)
    def choose(x: np.ndarray, s: str, c: np.ndarray, sel: Selector | None) -> list[int]:
        if s == "given":
            return list(fixed)  # type: ignore[arg-type]
        counts = (~np.isnan(x)).sum(axis=0)
        return [int(j) for j in sel.select(c, k_max, names=names, counts=counts, n_models=x.shape[0], train=x,
                                           seed=seed, missing_initial="skip").order]

    if fixed is not None:
        ks = [k_max]
    elif ks is None:
        ks = list(range(1, k_max + 1))
    else:
        given = list(ks)
        if not given or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 1 <= k <= k_max
                                for k in given):
            raise ValueError(f"ks={given!r} is out of range: give subset sizes in 1..k_max={k_max}")
        ks = sorted({int(k) for k in given})
    finals: dict[str, list[int]] = {}
    errors: list[str] = []
    for s in strategies:
        try:
            finals[s] = choose(tr, s, R, selectors.get(s))
        except ValueError as exc:  # e.g. k larger than what this strategy's filter leaves
            if len(strategies) == 1:
                raise
            errors.append(f"{s} left out: {exc}")
    if not finals:
        raise ValueError("no candidate strategy can select k benchmarks here: " + "; ".join(errors))
    if errors:
        strategies = tuple(s for s in strategies if s in finals)
        note = "; ".join(([note] if note else []) + errors)
    oof: dict[tuple[str, str, int], np.ndarray] = {}
    masks: dict[tuple[str, int], np.ndarray] = {}
    folds = inner_folds(m, n_folds, seed) if (search or levels) and note is None else []
    fold_of = np.zeros(m, dtype=int)
    for f, rows in enumerate(folds):
        fold_of[rows] = f
    for f, rows in enumerate(folds):
        others = np.setdiff1d(np.arange(m), rows)
        keep_cols = obs[others].any(axis=0)
        if keep_cols.sum() < 2:
            continue
        fold_scaling = Scaling().fit(tr[others], empty="identity")  # the fold's own (no inner-validation rows)
        itr, zrows = fold_scaling.transform(tr[others]), fold_scaling.transform(tr[rows])
        ob = obs[rows]
        Ri = inner_correlation(itr)
        blocks: list[tuple[str, int, np.ndarray, np.ndarray]] = []  # (strategy, k, query, scored mask)
        for s in strategies:
            try:
                sel = selectors.get(s)
                order = choose(itr, s, Ri, None if sel is None else sel.scaled(len(others), m))
            except ValueError:
                order = finals[s]
            for k in ks:
                if k > len(order):
                    continue
                sel = np.asarray(order[:k])
                rev = np.zeros(N, dtype=bool)
                rev[sel] = True
                q = np.where(ob & rev[None, :], zrows, np.nan)
                mk = ob & ~rev[None, :] & (ob & rev[None, :]).any(axis=1)[:, None]
                masks.setdefault((s, k), np.zeros((m, N), dtype=bool))[rows] = mk
                blocks.append((s, k, q, mk))
        for p in predictors:
            for (s, k, _, mk), out in zip(blocks, block_predictions(make_predictor(p), itr, blocks, Ri)):
                out = fold_scaling.inverse(np.where(np.isfinite(out), out, 0.0))  # back to the units of ``train``
                oof.setdefault((s, p, k), np.zeros((m, N)))[rows] = np.where(mk, out, 0.0)
    recs: list[Recommendation] = []
    score_rows: list[dict[str, Any]] = []
    stack_w: dict[tuple[str, int], dict[str, float]] = {}
    stack_oof: dict[tuple[str, int], np.ndarray] = {}
    for (s, k), mk in masks.items():
        tot = float((truth[mk] ** 2).sum())
        for p in predictors:
            res = float(((oof[(s, p, k)] - truth)[mk] ** 2).sum())
            score_rows.append(dict(strategy=s, predictor=p, k=k, r2=1.0 - res / tot if tot > 0 else np.nan,
                                   n_eval=int(mk.sum())))
        if stack and len(predictors) > 1:
            cross = np.zeros((m, N))
            for f in range(len(folds)):
                inf = (fold_of == f)[:, None] & mk
                outf = mk & ~inf
                w = nnls_weights([oof[(s, p, k)][outf] for p in predictors], truth[outf])
                cross[inf] = sum(wb * oof[(s, p, k)][inf] for wb, p in zip(w, predictors))
            res = float(((cross - truth)[mk] ** 2).sum())
            score_rows.append(dict(strategy=s, predictor="stack", k=k, r2=1.0 - res / tot if tot > 0 else np.nan,
                                   n_eval=int(mk.sum())))
            w_all = nnls_weights([oof[(s, p, k)][mk] for p in predictors], truth[mk])
            stack_w[(s, k)] = dict(zip(predictors, w_all.tolist()))
            stack_oof[(s, k)] = cross
    scores = pd.DataFrame(score_rows, columns=["strategy", "predictor", "k", "r2", "n_eval"])
    rank_s = {s: i for i, s in enumerate(strategies)}
    rank_p = {p: i for i, p in enumerate(tuple(predictors) + ("stack",))}
    for k in ks:
        # the highest inner R^2; ties go to the earlier strategy, then the earlier predictor (stack last)
        at = [r for r in score_rows if r["k"] == k and not np.isnan(r["r2"])
              and not (only_stack and stack and r["predictor"] != "stack")]
        inner = float("nan")
        if at:
            best = min(at, key=lambda r: (-r["r2"], rank_s[r["strategy"]], rank_p[r["predictor"]]))
            s, p, inner = best["strategy"], best["predictor"], float(best["r2"])
        else:
            s, p = strategies[0], predictors[0]
        weights = stack_w.get((s, k), {}) if p == "stack" else {}
        mk = masks.get((s, k))
        if mk is not None and mk.any():
            pred = stack_oof[(s, k)] if p == "stack" else oof[(s, p, k)]
            scale, scores_k = conformal_scores(pred - truth, mk)
            qs = {lv: conformal_quantile(scores_k, lv) for lv in levels}
        else:
            scale, scores_k, qs = np.ones(N), None, {lv: float("nan") for lv in levels}
        recs.append(Recommendation(k=k, strategy=s, predictor=p, selection=list(finals[s][:k]), scores=scores,
                                   weights=weights, scale=scale, quantiles=qs, note=note, seed=int(seed),
                                   inner_r2=inner, conformal=scores_k))
    return recs
