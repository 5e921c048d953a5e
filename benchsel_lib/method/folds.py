"""The out-of-fold engine of the library: splits of the rows and the loop over them.

Every fit on some rows that is scored on the others runs on it -- the protocol, a search, a fitted variance
inflation, the sparse objective's strength -- in the manner of scikit-learn's splitters and its
``_fit_and_score`` loop:

* a split of the rows is a :class:`Fold` (fit on ``train``, predict or score ``held``); a splitter's
  ``folds(m)`` gives the folds of ``m`` rows: :class:`InnerFolds` for a search, its stack and its conformal
  intervals (:func:`~benchsel_lib.method.oof.out_of_fold`) and for a fitted variance inflation
  (:func:`~benchsel_lib.method.calibration.inflation_factors`); :class:`InterleavedFolds` for the strength of
  the sparse objective (:func:`~benchsel_lib.method.sparse.sparse_order`); and
  :class:`~benchsel_lib.protocol.splits.CVSplits` for the paper's protocol (Section 5.1).  Each splitter also
  follows scikit-learn's splitter protocol (``split(X)`` and ``get_n_splits()``, as
  :class:`sklearn.model_selection.KFold`), so that it can be passed as ``cv=`` to scikit-learn;
* :func:`cross_fit` runs a unit of work on every fold, in this process (one fold at a time, as its result is
  asked for) or through a runner: the protocol passes its sweep, which runs the folds in parallel processes or
  on a Dask cluster and shares correlation estimates between the pipelines of a split
  (:func:`~benchsel_lib.protocol.cv.cross_validate`).

How a fold's held-out rows reveal their scores and which of their entries are scored is
:class:`~benchsel_lib.method.oof.HeldOut` (the protocol's rule).
"""
from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from .._checks import check_int
from .._random import balanced_folds, rng

__all__ = ["Fold", "Splitter", "InnerFolds", "InterleavedFolds", "cross_fit", "run_folds", "n_rows", "index_pairs"]

T = TypeVar("T")
#: a unit of work on one fold, and the fold it runs on
Job = tuple["Fold", Callable[["Fold"], T]]
#: a runner: executes jobs and returns their results in the jobs' order
Runner = Callable[[Sequence[Job]], Sequence[Any]]


@dataclass(frozen=True, eq=False)
class Fold:
    """One split of the rows: fit on ``train``, predict and score ``held``.

    A splitter's ``folds(m)`` gives these; its ``split(X)`` gives the
    ``(train, held)`` pairs of the same folds, as scikit-learn's splitters do.

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
    """The number of rows of ``X`` (``n_samples`` of scikit-learn's ``split(X)``). O(1).

    ``X`` is array-like (``shape[0]``, else ``len``) or a
    :class:`~benchsel_lib.data.matrix.ScoreMatrix`; a number of rows is
    refused, as are scalars, so that ``split(m)`` by mistake fails loudly
    (``folds(m)`` takes the number).

    Raises
    ------
    ValueError
        If ``X`` is a number or has no rows to count.
    """
    if isinstance(X, numbers.Number):
        raise ValueError(f"split(X) takes the rows to split (an array-like or a ScoreMatrix with n_samples rows), "
                         f"not their number: got {X!r}; call folds({X!r}) for the folds of {X!r} rows")
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) > 0 and isinstance(shape[0], numbers.Integral):
        return int(shape[0])
    try:
        return len(X)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"split(X) takes the rows to split (an array-like or a ScoreMatrix with n_samples rows), "
                         f"got {type(X).__name__}" + ("" if shape is None else f" of shape {shape}")) from None


def index_pairs(folds: Iterable[Fold]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(train, held)`` of every fold, in order (scikit-learn's ``(train, test)``). O(K)."""
    for fold in folds:
        yield fold.train, fold.held


class Splitter:
    """Splits rows into folds: :meth:`folds` for the library, scikit-learn's splitter protocol on top.

    A subclass (a frozen dataclass with ``n_folds``) implements ``folds(m) -> list[Fold]``; an instance can
    then be passed as ``cv=`` to scikit-learn (``cross_val_score(est, X, y, cv=InnerFolds(5))``).
    """

    n_folds: int

    def folds(self, m: int) -> list[Fold]:
        """The folds of ``m`` rows (what the library's out-of-fold engine runs on); the subclass's cost."""
        raise NotImplementedError

    def split(self, X: object, y: object = None, groups: object = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Generate the indices of the training and held-out rows of every fold (scikit-learn's splitter protocol).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or ScoreMatrix
            The rows to split; only their number is used (not a number itself: :meth:`folds` takes that).
        y, groups : object, optional
            Ignored; in the signature for compatibility with scikit-learn.

        Yields
        ------
        train, test : ndarray of int
            Sorted training and held-out row indices of the fold.

        Raises
        ------
        ValueError
            If ``X`` is a number or not array-like, or has fewer rows than ``n_folds``.

        Notes
        -----
        The pairs of :meth:`folds` in their order, with identical indices.  Cost: that of :meth:`folds`.
        """
        n = n_rows(X)
        if n < self.n_folds:  # a fold would hold out no row, refused as scikit-learn's ``KFold`` does
            raise ValueError(f"cannot split {n} rows into n_folds={self.n_folds} folds: every fold needs a "
                             "held-out row")
        return index_pairs(self.folds(n))

    def get_n_splits(self, X: object = None, y: object = None, groups: object = None) -> int:
        """The number of splits, ``n_folds`` (scikit-learn's splitter protocol; the arguments are ignored). O(1)."""
        return self.n_folds


@dataclass(frozen=True)
class InnerFolds(Splitter):
    """Seeded balanced folds of the training rows (the splitter of a search and of a fitted inflation).

    The rows are permuted by a random stream and cut into ``n_folds``
    chunks whose sizes differ by at most one; fold ``f`` holds out chunk
    ``f`` and trains on the others.

    Parameters
    ----------
    n_folds : int
        At least 2; a matrix with fewer than ``2 n_folds`` rows is too small
        to be split (:meth:`fits`).
    seed : int, tuple or SeedSequence
        Seed of the permutation.
    stream : tuple of int or None
        Spawn key of the permutation's stream ``SeedSequence(seed,
        spawn_key=stream)`` (default ``(11,)``, a search's inner folds); None
        draws from ``numpy.random.default_rng(seed)`` itself (a fitted
        variance inflation, whose seed is already a stream of its own).

    Notes
    -----
    :meth:`folds` gives the library's :class:`Fold` objects, :meth:`split` scikit-learn's splitter protocol.
    """

    n_folds: int = 5
    seed: Any = 0
    stream: tuple[int, ...] | None = (11,)

    def __post_init__(self) -> None:
        check_int(self.n_folds, "n_folds", minimum=2)

    def fits(self, m: int) -> bool:
        """Whether ``m`` rows are enough (two per fold). O(1)."""
        return m >= 2 * self.n_folds

    def held_out(self, m: int) -> list[np.ndarray]:
        """The held-out rows of every fold of ``m`` rows (sorted indices). O(m)."""
        draw = np.random.default_rng(self.seed) if self.stream is None else rng(int(self.seed), *self.stream)
        return [np.sort(c) for c in balanced_folds(draw.permutation(m), self.n_folds)]

    def folds(self, m: int) -> list[Fold]:
        """The folds of ``m`` rows (what the library's out-of-fold engine runs on). O(K m)."""
        return [Fold(np.setdiff1d(np.arange(m), rows), np.asarray(rows), f) for f, rows in enumerate(self.held_out(m))]


@dataclass(frozen=True)
class InterleavedFolds(Splitter):
    """Row ``i`` held out in fold ``i mod n_folds``: deterministic folds (the sparse objective's strength).

    Parameters
    ----------
    n_folds : int
        At least 2.

    Notes
    -----
    :meth:`folds` gives the library's :class:`Fold` objects, :meth:`split` scikit-learn's splitter protocol.
    """

    n_folds: int = 5

    def __post_init__(self) -> None:
        check_int(self.n_folds, "n_folds", minimum=2)

    def folds(self, m: int) -> list[Fold]:
        """The folds of ``m`` rows (what the library's out-of-fold engine runs on). O(K m)."""
        label = np.arange(m) % self.n_folds
        return [Fold(np.flatnonzero(label != f), np.flatnonzero(label == f), f) for f in range(self.n_folds)]


def run_folds(jobs: Sequence[Job[T]], *, run: Runner | None = None) -> Iterator[T]:
    """The result of every ``unit(fold)`` of ``jobs``, in their order.

    Without ``run`` the units run one after the other in this process, each
    when its result is asked for (so a caller that folds the results in as
    they come holds one fold's at a time); ``run`` executes them all and
    returns the results in the jobs' order (the protocol passes its sweep,
    :func:`~benchsel_lib.protocol.cv.cross_validate`).  O(the units' cost).
    """
    return (unit(fold) for fold, unit in jobs) if run is None else iter(run(jobs))


def cross_fit(folds: Sequence[Fold], unit: Callable[[Fold], T], *,
              run: Runner | None = None) -> Iterator[tuple[Fold, T]]:
    """``(fold, unit(fold))`` for every fold, in fold order (:func:`run_folds`). O(the units' cost)."""
    return zip(folds, run_folds([(fold, unit) for fold in folds], run=run))
