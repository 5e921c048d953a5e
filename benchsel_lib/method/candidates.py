"""The candidate space of a search, declared as data: a :class:`CandidateSpace` of :class:`Grid` s (selectors x
predictors, and their stack), the first grid that applies to a training matrix's missing share searched.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_bool
from .predictors import check_predictor_name
from .selectors import Selector, selector_named

__all__ = ["Grid", "CandidateSpace", "auto_space", "with_options", "DEFAULT_SELECTORS", "DEFAULT_PREDICTORS",
           "SPARSE_SELECTORS", "SPARSE_PREDICTORS", "SPARSE_MISSING", "DEFAULT_MIN_OBSERVED"]

#: the recommended pipeline's selectors on a matrix missing at most :data:`SPARSE_MISSING` of its entries
#: (predictive greedy, soft-impute and the like are left out for speed; a grid can name them)
DEFAULT_SELECTORS = ("mi", "entropy-obs", "lasso", "random")
#: ... and its predictors there
DEFAULT_PREDICTORS = ("gaussian", "ridge", "knn", "blend")

#: the recommended pipeline's candidates on a matrix that misses more than :data:`SPARSE_MISSING` of its
#: entries (the imputed selections favour benchmarks that many models ran)
SPARSE_SELECTORS = ("entropy-obs", "lasso", "imputed-trace", "imputed-lasso")
SPARSE_PREDICTORS = ("knn", "blend", "imputed-ridge")

#: the share of missing entries above which the recommended pipeline searches its sparse grid (Merged and
#: BenchPress miss about two thirds of theirs, MTEB a quarter, MMLU none)
SPARSE_MISSING = 0.5

#: the recommended pipeline's candidates (those without a filter of their own) never reveal a
#: benchmark that fewer training models observe: its correlations would rest on two or three models
DEFAULT_MIN_OBSERVED = 5


@dataclass(frozen=True)
class Grid:
    """Selectors x predictors (and their stack), for training matrices missing at most ``max_missing``.

    Parameters
    ----------
    selectors : sequence of Selector or preset name
        The candidate selections (labels must differ).
    predictors : sequence of str
        Names of :data:`~benchsel_lib.method.predictors.PREDICTORS`.
    stack : bool
        Also score the NNLS stack of the predictors (with two or more).
    max_missing : float in [0, 1]

    Notes
    -----
    Validated on construction, O(S + P).
    """

    selectors: tuple[Selector, ...]
    predictors: tuple[str, ...]
    stack: bool = True
    max_missing: float = 1.0

    def __post_init__(self) -> None:
        sels = (self.selectors,) if isinstance(self.selectors, (str, Selector)) else self.selectors
        sels = tuple(selector_named(s) for s in sels)
        labels = [s.label for s in sels]
        if not sels or len(set(labels)) != len(labels):
            raise ValueError(f"a grid needs one or more selectors with distinct labels, got {labels}")
        preds = (self.predictors,) if isinstance(self.predictors, str) else tuple(self.predictors)
        if not preds or len(set(preds)) != len(preds):
            raise ValueError(f"a grid needs one or more distinct predictor names, got {list(preds)}")
        for p in preds:
            check_predictor_name(p)
        check_bool(self.stack, "stack")
        mm = self.max_missing
        if isinstance(mm, bool) or not isinstance(mm, (int, float, np.floating)) or not 0.0 <= float(mm) <= 1.0:
            raise ValueError(f"max_missing must be a share in [0, 1], got {mm!r}")
        object.__setattr__(self, "selectors", sels)
        object.__setattr__(self, "predictors", preds)
        object.__setattr__(self, "max_missing", float(mm))


class CandidateSpace(tuple):
    """A tuple of one or more :class:`Grid` s, the last with ``max_missing=1``; :meth:`for_missing` picks one."""

    def __new__(cls, grids: Sequence[Grid] | Grid) -> CandidateSpace:
        items = (grids,) if isinstance(grids, Grid) else tuple(grids)
        if not items or not all(isinstance(g, Grid) for g in items):
            raise ValueError(f"a candidate space is one or more Grid objects, got {grids!r}")
        if items[-1].max_missing < 1.0:
            raise ValueError("the last grid of a candidate space must apply to every matrix (max_missing=1)")
        return super().__new__(cls, items)

    def for_missing(self, share: float) -> Grid:
        """The first grid whose ``max_missing`` is at least ``share``. O(G)."""
        return next(g for g in self if share <= g.max_missing)

    def for_matrix(self, X: np.ndarray) -> Grid:
        """The grid for training scores ``X`` (NaN missing). O(M N)."""
        return self.for_missing(float(np.isnan(X).mean()) if np.size(X) else 0.0)

    def __repr__(self) -> str:
        return f"CandidateSpace({list(self)!r})"


def with_options(selector: str | Selector, *, min_observed: int | float | None,
                  initial: Sequence[str]) -> Selector:
    """The selector ``selector`` (a preset name or a selector) with the shared options of the recommended pipeline. O(1).

    ``initial`` replaces the selector's own; ``min_observed`` (None and 0: none) is set only where the
    selector has no filter of its own.  The label stays the preset's.
    """
    sel = selector_named(selector)
    changes: dict[str, Any] = {"name": sel.label}
    if min_observed and sel.min_observed is None:
        changes["min_observed"] = min_observed
    if initial:
        changes["initial"] = initial
    return dataclasses.replace(sel, **changes)


def auto_space(*, selectors: Sequence[str | Selector] | None = None, predictors: Sequence[str] | None = None,
               stack: bool = True, min_observed: int | float | None = DEFAULT_MIN_OBSERVED,
               initial: Sequence[str] = ()) -> CandidateSpace:
    """The recommended pipeline's candidate space, with its shared options.

    By default two grids: :data:`DEFAULT_SELECTORS` x :data:`DEFAULT_PREDICTORS` up to :data:`SPARSE_MISSING`,
    :data:`SPARSE_SELECTORS` x :data:`SPARSE_PREDICTORS` above.  Passing ``selectors`` or ``predictors`` gives
    one grid (the other from the first default grid); options as :func:`with_options`.  O(S + P).
    """
    def sels(names: Sequence[str | Selector] | str | Selector) -> tuple[Selector, ...]:
        names = (names,) if isinstance(names, (str, Selector)) else names
        return tuple(with_options(s, min_observed=min_observed, initial=initial) for s in names)

    if selectors is None and predictors is None:
        return CandidateSpace([
            Grid(sels(DEFAULT_SELECTORS), DEFAULT_PREDICTORS, stack=stack, max_missing=SPARSE_MISSING),
            Grid(sels(SPARSE_SELECTORS), SPARSE_PREDICTORS, stack=stack),
        ])
    preds = DEFAULT_PREDICTORS if predictors is None else predictors
    return CandidateSpace([Grid(sels(DEFAULT_SELECTORS if selectors is None else selectors), preds, stack=stack)])
