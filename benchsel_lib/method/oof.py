"""The out-of-fold engine of a search: inner folds, out-of-fold predictions, candidate scores, the stack.

A search scores each candidate -- a selection strategy at a size ``k`` with a
predictor -- by cross-validation *of the training models*: the training rows
are split into seeded :class:`InnerFolds`; for each fold, the other folds are
re-standardized on their own (:class:`~benchsel_lib.method.scaling.Scaling`),
their correlation estimated (:func:`~benchsel_lib.method.correlation.inner_correlation`),
each strategy selects on them, and every predictor, fit once on them,
predicts the fold's rows from the revealed benchmarks they observed
(:func:`out_of_fold`).  :func:`score_candidates` turns the out-of-fold
predictions into the paper's R^2 (Section 5.1) per candidate, and the
non-negative stack of the predictors, whose weights for each fold's rows are
fit on the other folds' predictions (cross-fitting), into one more candidate.
The conformal intervals read their residuals off the same predictions.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import check_int
from .base import size_runs
from .correlation import inner_correlation
from .predictors import inner_folds, make_predictor, nnls_weights, r2_from_sums
from .scaling import Scaling

__all__ = ["InnerFolds", "OutOfFold", "out_of_fold", "score_candidates", "block_predictions", "STACK"]

#: the name of the stack of a grid's predictors in score tables
STACK = "stack"
_STACK_ROWS = 2048  # most query rows handed to a row-wise predictor in one call


@dataclass(frozen=True)
class InnerFolds:
    """Seeded folds of the training rows (the splitter of a search).

    Parameters
    ----------
    n_folds : int
        At least 2; a matrix with fewer than ``2 n_folds`` rows is too small
        to be split (:meth:`fits`).
    seed : int
        The folds come from the stream ``(seed, 11)``.
    """

    n_folds: int = 5
    seed: int = 0

    def __post_init__(self) -> None:
        check_int(self.n_folds, "n_folds", minimum=2)

    def fits(self, m: int) -> bool:
        """Whether ``m`` rows are enough (two per fold). O(1)."""
        return m >= 2 * self.n_folds

    def split(self, m: int) -> list[np.ndarray]:
        """The folds of ``m`` rows (sorted indices). O(m)."""
        return inner_folds(m, self.n_folds, self.seed)


def block_predictions(pred: Any, train: np.ndarray, blocks: list, cov: np.ndarray | None) -> list[np.ndarray]:
    """Predictions of ``pred``, fit once on ``train``, for every query block (``blocks[i][2]``), in order.

    A row-wise predictor (``rowwise = True``: a row's prediction depends only
    on that row and ``train``) gets the blocks stacked, up to
    :data:`_STACK_ROWS` rows per call, which gives each row the prediction it
    gets alone at a fraction of the per-call cost; any other predictor (an
    SVD completion of ``[train; query]`` is transductive) gets one call per
    block, as if the blocks were separate queries.  Cost: one fit and the
    predictions of every block.
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


@dataclass
class OutOfFold:
    """Out-of-fold predictions of a search's candidates on the training rows (in the units of the rows).

    Attributes
    ----------
    folds : list of ndarray
        The inner folds.
    truth : ndarray (m, N)
        The training rows, 0 where missing.
    masks : dict (strategy, k) -> (m, N) bool
        The scored entries of each selection (the protocol's rule).
    preds : dict (strategy, predictor, k) -> (m, N)
        Out-of-fold predictions (0 outside the mask).
    """

    folds: list[np.ndarray]
    truth: np.ndarray
    masks: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    preds: dict[tuple[str, str, int], np.ndarray] = field(default_factory=dict)


def _fold_queries(sized: dict[int, list[int]], s: str, sizes: Sequence[int], z_rows: np.ndarray, ob: np.ndarray,
                  unconditioned: str) -> list[tuple[str, int, np.ndarray, np.ndarray]]:
    """The query block (revealed entries) and scored mask of each size of strategy ``s`` in one fold. O(K v N)."""
    blocks = []
    for k in sizes:
        if k not in sized:
            continue
        rev = np.zeros(ob.shape[1], dtype=bool)
        rev[np.asarray(sized[k])] = True
        q = np.where(ob & rev[None, :], z_rows, np.nan)
        mk = ob & ~rev[None, :]  # the protocol's scored entries (scored_entries)
        if unconditioned == "skip":
            mk &= (ob & rev[None, :]).any(axis=1)[:, None]
        blocks.append((s, k, q, mk))
    return blocks


def out_of_fold(
    cv: np.ndarray,
    folds: list[np.ndarray],
    *,
    select: Callable[[str, np.ndarray, np.ndarray, int], dict[int, list[int]]],
    strategies: Sequence[str],
    predictors: Sequence[str],
    sizes: Sequence[int],
    unconditioned: str,
) -> OutOfFold:
    """Out-of-fold predictions of every (strategy, size, predictor) on the rows of ``cv``.

    Parameters
    ----------
    cv : ndarray (m, N)
        Training rows (NaN missing).
    folds : list of ndarray
        The inner folds (rows of ``cv``).
    select : callable
        ``select(strategy, rows, correlation, n_rows)`` -> selections by size,
        made on the other folds' standardized rows and their correlation.
    strategies, predictors, sizes
        The candidates and the sizes scored.
    unconditioned : {"skip", "mean"}
        Whether a row that observes none of the revealed benchmarks is scored.

    Returns
    -------
    OutOfFold

    Notes
    -----
    Cost: per fold one standardization and correlation of the other folds,
    one selection per strategy, and one fit plus the predictions of every
    predictor (:func:`block_predictions`); memory O(S K P m N) for the
    predictions.  A fold whose other folds observe fewer than two benchmarks
    is skipped.
    """
    obs = ~np.isnan(cv)
    m, N = cv.shape
    out = OutOfFold(folds, np.where(obs, cv, 0.0))
    for rows in folds:
        others = np.setdiff1d(np.arange(m), rows)
        if obs[others].any(axis=0).sum() < 2:
            continue
        fold_scaling = Scaling().fit(cv[others], empty="identity")  # the fold's own (no inner-validation rows)
        itr, zrows = fold_scaling.transform(cv[others]), fold_scaling.transform(cv[rows])
        Ri = inner_correlation(itr)
        blocks = []
        for s in strategies:
            blocks += _fold_queries(select(s, itr, Ri, len(others)), s, sizes, zrows, obs[rows], unconditioned)
        for s, k, _, mk in blocks:
            out.masks.setdefault((s, k), np.zeros((m, N), dtype=bool))[rows] = mk
        for p in predictors:
            for (s, k, _, mk), pred in zip(blocks, block_predictions(make_predictor(p), itr, blocks, Ri)):
                pred = fold_scaling.inverse(np.where(np.isfinite(pred), pred, 0.0))  # back to the units of cv
                out.preds.setdefault((s, p, k), np.zeros((m, N)))[rows] = np.where(mk, pred, 0.0)
    return out


def _cross_fit_stack(oof: OutOfFold, s: str, k: int, predictors: Sequence[str]) -> np.ndarray:
    """The stack's out-of-fold predictions: each fold's weights fit on the other folds' predictions. O(F n P^2)."""
    mk, truth = oof.masks[(s, k)], oof.truth
    fold_of = np.zeros(truth.shape[0], dtype=int)
    for f, rows in enumerate(oof.folds):
        fold_of[rows] = f
    cross = np.zeros(truth.shape)
    for f in range(len(oof.folds)):
        inf = (fold_of == f)[:, None] & mk
        outf = mk & ~inf
        w = nnls_weights([oof.preds[(s, p, k)][outf] for p in predictors], truth[outf])
        cross[inf] = sum(wb * oof.preds[(s, p, k)][inf] for wb, p in zip(w, predictors))
    return cross


def score_candidates(oof: OutOfFold, predictors: Sequence[str], *,
                     stack: bool) -> tuple[list[dict[str, Any]], dict[tuple[str, int], dict[str, float]]]:
    """The inner R^2 of every candidate, and the stack's weights per (strategy, k).

    Each (strategy, k, predictor) is scored by the protocol's R^2 over its
    scored entries (Section 5.1); with ``stack`` (and two or more
    predictors) the stack ``"stack"`` too, from its cross-fitted
    predictions, which are added to ``oof.preds``; its weights for use are
    fit on every scored entry.  Rows: ``strategy, predictor, k, r2, n_eval``.
    O(S K P m N).
    """
    rows: list[dict[str, Any]] = []
    weights: dict[tuple[str, int], dict[str, float]] = {}
    truth = oof.truth
    for (s, k), mk in oof.masks.items():
        tot = float((truth[mk] ** 2).sum())
        for p in predictors:
            res = float(((oof.preds[(s, p, k)] - truth)[mk] ** 2).sum())
            rows.append(dict(strategy=s, predictor=p, k=k, r2=r2_from_sums(res, tot), n_eval=int(mk.sum())))
        if stack and len(predictors) > 1:
            cross = _cross_fit_stack(oof, s, k, predictors)
            res = float(((cross - truth)[mk] ** 2).sum())
            rows.append(dict(strategy=s, predictor=STACK, k=k, r2=r2_from_sums(res, tot), n_eval=int(mk.sum())))
            w_all = nnls_weights([oof.preds[(s, p, k)][mk] for p in predictors], truth[mk])
            weights[(s, k)] = dict(zip(predictors, w_all.tolist()))
            oof.preds[(s, STACK, k)] = cross
    return rows, weights
