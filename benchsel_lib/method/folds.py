"""The out-of-fold engine of the library: splits of the rows and the loop over them.

A split is a :class:`Fold`; a :class:`Splitter`'s ``folds(m)`` gives the folds of ``m`` rows (:class:`InnerFolds`
for a search and a fitted inflation, :class:`InterleavedFolds` for the sparse objective's strength,
:class:`~benchsel_lib.protocol.splits.CVSplits` for the protocol).  :func:`cross_fit` runs a unit of work on every
fold, in this process or through a runner (the protocol's sweep).
"""
from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from .._checks import check_int
from .._random import balanced_folds, rng

__all__ = ["Fold", "Splitter", "InnerFolds", "InterleavedFolds", "cross_fit", "run_folds", "n_rows"]

T = TypeVar("T")
#: a unit of work on one fold, and the fold it runs on
Job = tuple["Fold", Callable[["Fold"], T]]
#: a runner: executes jobs and returns their results in the jobs' order
Runner = Callable[[Sequence[Job]], Sequence[Any]]


@dataclass(frozen=True, eq=False)
class Fold:
    """One split of the rows: fit on ``train``, predict and score ``held``.

    Attributes
    ----------
    train, held : ndarray of int
        Sorted row indices; disjoint.
    index : int
        The fold's number (the protocol's ``fold`` column).
    meta : mapping
        What else names the split (the protocol's ``holdout``).
    """

    train: np.ndarray
    held: np.ndarray
    index: int = 0
    meta: Mapping[str, Any] = field(default_factory=dict)


def n_rows(X: object) -> int:
    """The number of rows of array-like ``X`` (``shape[0]``, else ``len``). O(1).

    ``ValueError`` for a number (``folds(m)`` takes that) or anything without rows to count.
    """
    what = "split(X) takes the rows to split (an array-like or a ScoreMatrix with n_samples rows)"
    if isinstance(X, numbers.Number):
        raise ValueError(f"{what}, not their number: got {X!r}; call folds({X!r}) for the folds of {X!r} rows")
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) > 0 and isinstance(shape[0], numbers.Integral):
        return int(shape[0])
    try:
        return len(X)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{what}, got {type(X).__name__}" + ("" if shape is None else f" of shape {shape}")) from None


class Splitter:
    """Splits rows into folds: a subclass (a frozen dataclass with ``n_folds``) implements ``held_out(m)`` (or
    ``folds(m)``); scikit-learn's splitter protocol comes on top (``cross_val_score(est, X, y, cv=InnerFolds(5))``)."""

    n_folds: int

    def __post_init__(self) -> None:  # every subclass's dataclass check: at least two folds
        check_int(self.n_folds, "n_folds", minimum=2)

    def folds(self, m: int) -> list[Fold]:
        """The folds of ``m`` rows (what the library's out-of-fold engine runs on): each fold's ``held_out(m)``
        rows, trained on the others. O(K m log m)."""
        return [Fold(np.setdiff1d(np.arange(m), rows), rows, f) for f, rows in enumerate(self.held_out(m))]

    def split(self, X: object, y: object = None, groups: object = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The ``(train, test)`` indices of every fold of :meth:`folds` (scikit-learn's splitter protocol), at its cost.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or ScoreMatrix
            The rows to split; only their number is used.
        y, groups : object, optional
            Ignored (scikit-learn's signature).

        Yields
        ------
        train, test : ndarray of int

        Raises
        ------
        ValueError
            If ``X`` is a number or not array-like, or has fewer rows than ``n_folds``.
        """
        n = n_rows(X)
        if n < self.n_folds:  # a fold would hold out no row, refused as scikit-learn's ``KFold`` does
            raise ValueError(f"cannot split {n} rows into n_folds={self.n_folds} folds: every fold needs a "
                             "held-out row")
        return ((fold.train, fold.held) for fold in self.folds(n))

    def get_n_splits(self, X: object = None, y: object = None, groups: object = None) -> int:
        """The number of splits, ``n_folds`` (scikit-learn's splitter protocol; the arguments are ignored). O(1)."""
        return self.n_folds


@dataclass(frozen=True)
class InnerFolds(Splitter):
    """Seeded balanced folds: the rows permuted and cut into ``n_folds`` chunks whose sizes differ by at most one.

    Parameters
    ----------
    n_folds : int
        At least 2; fewer than ``2 n_folds`` rows are too few (:meth:`fits`).
    seed : int, tuple or SeedSequence
        Seed of the permutation.
    stream : tuple of int or None
        Spawn key of the permutation's stream ``SeedSequence(seed, spawn_key=stream)`` (default ``(11,)``, a
        search's); None draws from ``numpy.random.default_rng(seed)`` (a fitted inflation's own stream).
    """

    n_folds: int = 5
    seed: Any = 0
    stream: tuple[int, ...] | None = (11,)

    def fits(self, m: int) -> bool:
        """Whether ``m`` rows are enough (two per fold). O(1)."""
        return m >= 2 * self.n_folds

    def held_out(self, m: int) -> list[np.ndarray]:
        """The held-out rows of every fold of ``m`` rows (sorted indices). O(m)."""
        draw = np.random.default_rng(self.seed) if self.stream is None else rng(int(self.seed), *self.stream)
        return [np.sort(c) for c in balanced_folds(draw.permutation(m), self.n_folds)]


@dataclass(frozen=True)
class InterleavedFolds(Splitter):
    """Row ``i`` held out in fold ``i mod n_folds`` (at least 2): deterministic folds."""

    n_folds: int = 5

    def held_out(self, m: int) -> list[np.ndarray]:
        """The held-out rows of every fold of ``m`` rows: ``f, f + n_folds, ...`` in fold ``f``. O(m)."""
        return [np.arange(f, m, self.n_folds) for f in range(self.n_folds)]


def run_folds(jobs: Sequence[Job[T]], *, run: Runner | None = None) -> Iterator[T]:
    """The result of every ``unit(fold)`` of ``jobs``, in their order: lazily in this process, or all by ``run``.

    O(the units' cost).
    """
    return (unit(fold) for fold, unit in jobs) if run is None else iter(run(jobs))


def cross_fit(folds: Sequence[Fold], unit: Callable[[Fold], T], *,
              run: Runner | None = None) -> Iterator[tuple[Fold, T]]:
    """``(fold, unit(fold))`` for every fold, in fold order (:func:`run_folds`). O(the units' cost)."""
    return zip(folds, run_folds([(fold, unit) for fold in folds], run=run))
