"""Out-of-fold predictions: held-out rows as the protocol scores them, and a search's candidate scores.

:class:`HeldOut` is a fold's held-out rows as the paper's protocol reveals and scores them (Section 5.1).
:func:`out_of_fold` predicts every candidate of a search on inner folds (clones of the search's estimator,
handed what the candidates share, :class:`Prepared`); :func:`score_candidates` turns the predictions into
the paper's R^2 per candidate, and the non-negative stack of the predictors into one more candidate.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone

from .correlation import inner_correlation
from .folds import Fold, cross_fit
from .predictors import nnls_weights, r2_from_sums, reveal_and_predict, scored_entries
from .scaling import Scaling

__all__ = ["HeldOut", "OutOfFold", "Prepared", "out_of_fold", "score_candidates", "stack_prediction", "STACK",
           "default_estimator", "use_default_estimator"]

#: the name of the stack of a grid's predictors in score tables
STACK = "stack"


@dataclass(frozen=True, eq=False)
class HeldOut:
    """A fold's held-out rows as the protocol reveals and scores them (Section 5.1, steps 5-6).

    Attributes
    ----------
    values : ndarray (v, N)
        The held-out rows in the space the predictions are made in (NaN missing).
    observed : ndarray (v, N) bool
    unreached : {"skip", "mean"}
        As :func:`~benchsel_lib.method.predictors.scored_entries`.
    """

    values: np.ndarray
    observed: np.ndarray
    unreached: str = "skip"

    @classmethod
    def of(cls, values: np.ndarray, *, unreached: str = "skip") -> HeldOut:
        """The held-out rows ``values`` (NaN missing). O(v N)."""
        return cls(values, ~np.isnan(values), unreached)

    def reached(self, sel: np.ndarray) -> np.ndarray:
        """The rows that observe at least one of the revealed benchmarks ``sel``. O(v |sel|)."""
        return self.observed[:, sel].any(axis=1)

    def scored(self, sel: np.ndarray, *, targets: np.ndarray | None = None) -> np.ndarray:
        """The scored entries: observed targets of the rows that ``unreached`` scores, over all ``N`` columns
        (``sel`` never scored) or the ``(v, |targets|)`` entries of ``targets``.  O(v N)."""
        if targets is not None:
            return scored_entries(self.observed, sel, targets, self.unreached)
        E = scored_entries(self.observed, sel, np.arange(self.observed.shape[1]), self.unreached)
        E[:, sel] = False  # a revealed benchmark is never a target
        return E

    def predict(self, fitted: Any, sel: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Predictions (and variances, or None) of ``targets`` from the revealed scores of ``sel``
        (:func:`~benchsel_lib.method.predictors.reveal_and_predict`); O(one prediction of the rows)."""
        return reveal_and_predict(fitted, self.values, self.observed, sel, targets)


#: what makes the estimator of a search that names none; set by :mod:`benchsel_lib.method.pipeline`
_ESTIMATOR: list[Callable[[], Any]] = []


def use_default_estimator(make: Callable[[], Any]) -> None:
    """Make ``make()`` the estimator of searches that name none (:mod:`benchsel_lib.method.pipeline` calls it). O(1)."""
    _ESTIMATOR[:] = [make]


def default_estimator() -> Any:
    """The estimator whose clones score a search's candidates when none is named: ``Pipeline(calibrator=None)``
    (registered by :mod:`benchsel_lib.method.pipeline`, which the package imports first). O(1)."""
    return _ESTIMATOR[0]()


@dataclass(frozen=True)
class Prepared:
    """What a fit is handed instead of computing it: an inner fold's cache, shared by every candidate's clone.

    Attributes
    ----------
    scaling : FittedScaling or None
        The standardization fit on the training rows.
    correlation : ndarray (N, N) or None
        The training correlation.
    selections : mapping of int to sequence of int, or None
        The selected columns at each size (no selector runs).
    """

    scaling: Any = None
    correlation: Any = None
    selections: Mapping[int, Sequence[int]] | None = None


@dataclass
class OutOfFold:
    """Out-of-fold predictions of a search's candidates on the training rows (in the units of the rows).

    Attributes
    ----------
    folds : list of Fold
    truth : ndarray (m, N)
        The training rows, 0 where missing.
    masks : dict (selector, k) -> (m, N) bool
        The scored entries of each selection.
    preds : dict (selector, predictor, k) -> (m, N)
        Out-of-fold predictions (0 outside the mask).
    """

    folds: list[Fold]
    truth: np.ndarray
    masks: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    preds: dict[tuple[str, str, int], np.ndarray] = field(default_factory=dict)


def out_of_fold(
    cv: np.ndarray,
    folds: Sequence[Fold],
    *,
    select: Callable[[str, np.ndarray, np.ndarray, int], dict[int, list[int]]],
    selectors: Sequence[str],
    predictors: Sequence[str],
    sizes: Sequence[int],
    unreached: str,
    estimator: Any = None,
    names: Sequence[str] | None = None,
) -> OutOfFold:
    """Out-of-fold predictions of every (selector, size, predictor) on the rows of ``cv``.

    Parameters
    ----------
    cv : ndarray (m, N)
        Training rows (NaN missing).
    folds : sequence of Fold
        The inner folds (rows of ``cv``; :meth:`InnerFolds.folds`).
    select : callable
        ``select(selector, rows, correlation, n_rows)`` -> selections by size on the other folds.
    selectors, predictors, sizes
        The candidates and the sizes scored.
    unreached : {"skip", "mean"}
    estimator : Pipeline, optional
        A fixed pipeline without intervals (default :func:`default_estimator`) cloned per candidate.
    names : sequence of str, optional
        Benchmark names of the columns of ``cv`` (default ``"0", "1", ...``).

    Returns
    -------
    OutOfFold

    Notes
    -----
    Cost: per fold one standardization and correlation of the other folds, one selection per selector, and
    per candidate the predictor's fit and predictions; memory O(S K P m N).  A fold whose other folds observe
    fewer than two benchmarks is skipped.
    """
    m, N = cv.shape
    out = OutOfFold(list(folds), np.where(np.isnan(cv), 0.0, cv))
    selectors, predictors, sizes = tuple(selectors), tuple(predictors), tuple(sizes)
    estimator = default_estimator() if estimator is None else estimator
    names = tuple(str(j) for j in range(N)) if names is None else tuple(names)

    def predict_fold(fold: Fold) -> tuple[list[tuple[tuple[str, int], np.ndarray]],
                                          list[tuple[tuple[str, str, int], np.ndarray]]] | None:
        """The fold's scored masks and predictions (None: fewer than two benchmarks observed)."""
        others = fold.train
        if (~np.isnan(cv[others])).any(axis=0).sum() < 2:
            return None
        fold_scaling = Scaling().fit(cv[others], empty="identity")  # the fold's own (no inner-validation rows)
        itr, zrows = fold_scaling.transform(cv[others]), fold_scaling.transform(cv[fold.held])
        Ri = inner_correlation(itr)
        held = HeldOut(zrows, ~np.isnan(cv[fold.held]), unreached)
        masks, preds = [], []
        for s in selectors:
            sized = select(s, itr, Ri, len(others))
            ks = [k for k in sizes if k in sized]
            if not ks:
                continue
            scored = {k: held.scored(np.asarray(sized[k])) for k in ks}
            masks += [((s, k), mk) for k, mk in scored.items()]
            prepared = Prepared(scaling=fold_scaling, correlation=Ri, selections=sized)
            for p in predictors:
                path = clone(estimator).set_params(predictor=p).fit_path(
                    cv[others], names=names, k_max=max(ks), ks=ks, prepared=prepared, intervals=False)
                for st, sp in zip(path.steps, path.predict(zrows)):
                    full = np.zeros(zrows.shape)
                    full[:, sp.targets] = sp.mean
                    pred = fold_scaling.inverse(np.where(np.isfinite(full), full, 0.0))  # back to the units of cv
                    preds.append(((s, p, st.k), np.where(scored[st.k], pred, 0.0)))
        return masks, preds

    for fold, found in cross_fit(folds, predict_fold):
        if found is None:
            continue
        masks, preds = found
        for key, mk in masks:
            out.masks.setdefault(key, np.zeros((m, N), dtype=bool))[fold.held] = mk
        for key, pred in preds:
            out.preds.setdefault(key, np.zeros((m, N)))[fold.held] = pred
    return out


def _cross_fit_stack(oof: OutOfFold, s: str, k: int, predictors: Sequence[str]) -> np.ndarray:
    """The stack's out-of-fold predictions: each fold's weights fit on the other folds' predictions. O(F n P^2)."""
    mk, truth = oof.masks[(s, k)], oof.truth
    fold_of = np.zeros(truth.shape[0], dtype=int)
    for f, fold in enumerate(oof.folds):
        fold_of[fold.held] = f
    cross = np.zeros(truth.shape)
    for f in range(len(oof.folds)):
        inf = (fold_of == f)[:, None] & mk
        outf = mk & ~inf
        w = nnls_weights([oof.preds[(s, p, k)][outf] for p in predictors], truth[outf])
        cross[inf] = stack_prediction(dict(zip(predictors, w)), lambda p: oof.preds[(s, p, k)][inf])  # noqa: B023
    return cross


def stack_prediction(weights: Mapping[str, float], predict: Callable[[str], np.ndarray]) -> Any:
    """The stack's prediction: ``sum(w * predict(name))`` over the predictors of positive weight, in order
    (0.0 when none). O(P n) for P predictors and n entries."""
    return sum((w * predict(name) for name, w in weights.items() if w > 0), 0.0)


def score_candidates(oof: OutOfFold, predictors: Sequence[str], *,
                     stack: bool) -> tuple[list[dict[str, Any]], dict[tuple[str, int], dict[str, float]]]:
    """The inner R^2 (Section 5.1) of every candidate, and the stack's weights per (selector, k).

    With ``stack`` (and two or more predictors) the stack is scored from its cross-fitted predictions (added
    to ``oof.preds``); its weights for use are fit on every scored entry.  O(S K P m N).
    """
    rows: list[dict[str, Any]] = []
    weights: dict[tuple[str, int], dict[str, float]] = {}
    truth = oof.truth
    for (s, k), mk in oof.masks.items():
        tot = float((truth[mk] ** 2).sum())
        cands = {p: oof.preds[(s, p, k)] for p in predictors}
        if stack and len(predictors) > 1:
            cands[STACK] = oof.preds[(s, STACK, k)] = _cross_fit_stack(oof, s, k, predictors)
            w_all = nnls_weights([cands[p][mk] for p in predictors], truth[mk])
            weights[(s, k)] = dict(zip(predictors, w_all.tolist()))
        for p, pred in cands.items():
            res = float(((pred - truth)[mk] ** 2).sum())
            rows.append(dict(selector=s, predictor=p, k=k, r2=r2_from_sums(res, tot), n_eval=int(mk.sum())))
    return rows, weights
