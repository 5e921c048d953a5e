"""The folds of the cross-validation protocol (Section 5.1): who trains, who is validated.

Random streams derive from ``seed`` (their spawn keys: :mod:`benchsel_lib._random`); ``scheme="paper"``
replaces them by the streams of the paper's code release, so seed 42 gives the paper's own folds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import check_int
from .._random import balanced_folds, check_seed, fold_labels, int_seed, rng
from ..method.folds import Fold, Splitter
from ..method.pipeline import FitSeeds

__all__ = ["SCHEMES", "CVSplits", "fold_assignments", "cv_splits", "split_seeds"]


def fold_assignments(n_models: int, n_folds: int, seed: int) -> np.ndarray:
    """Assign models to ``n_folds`` balanced folds after a random permutation (Section 5.1).

    Parameters
    ----------
    n_models : int
        Number of models ``M`` (>= 2).
    n_folds : int
        Number of folds ``K``, ``2 <= K <= M``.
    seed : int
        Non-negative seed; the permutation uses the stream
        ``SeedSequence(seed, spawn_key=(0,))``.

    Returns
    -------
    ndarray of shape (M,)
        Fold label in ``0..K-1`` of each model: the permuted models cut into
        ``K`` contiguous chunks (:func:`numpy.array_split`). Cost O(M).
    """
    n = check_int(n_models, "n_models", minimum=2)
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) or not 2 <= n_folds <= n:
        raise ValueError(f"n_folds must be an integer between 2 and n_models={n_models}, got {n_folds!r}")
    return fold_labels(rng(check_seed(seed), 0).permutation(n), int(n_folds))


SCHEMES = ("nested", "paper")


def cv_splits(
    n_models: int, *, n_folds: int = 10, holdout: float = 0.1, seed: int = 0, scheme: str = "nested"
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The (fold, training indices, validation indices) triples used by :func:`cross_validate`.

    Both schemes follow Section 5.1 (``K`` balanced folds of a random
    permutation; from the pool of the other folds a training set of
    ``min(round((1 - holdout) M), pool size)`` models drawn by a second
    permutation) and differ only in the random streams:

    * ``"nested"`` (default) -- the folds of :func:`fold_assignments`; the
      training set is a prefix of one permutation of the pool per fold
      (stream ``SeedSequence(seed, spawn_key=(1, f))``), so training sets are
      nested across holdouts.
    * ``"paper"`` -- the paper's code release (seed 42 gives its folds): the
      folds are ``numpy.array_split(default_rng(seed).permutation(M), K)``,
      the training set ``default_rng((seed, f, int(holdout * 10000)))``'s
      permutation of the pool (other folds in fold order), truncated, or the
      whole pool when it is not larger than the target size.

    Both index arrays are sorted. Cost O(K M).

    Parameters
    ----------
    n_models, n_folds : int
        As in :func:`fold_assignments` (``n_folds`` default 10, Section 5.1).
    holdout : float
        Holdout fraction ``p`` in ``[0, 1)`` (default 0.1); ``round((1 - p)
        M)`` rounds halves up in ``"nested"``, to even in ``"paper"``.
    seed : int
        Non-negative seed of every stream.
    scheme : {"nested", "paper"}
        The layout of the random streams (above).

    Returns
    -------
    list of (int, ndarray, ndarray)
        One ``(fold, train, validation)`` triple of model positions per fold ``0..K-1``.

    Raises
    ------
    ValueError
        ``holdout`` outside ``[0, 1)``, an unknown ``scheme``, fewer than 2
        training models, or ``n_models``, ``n_folds`` or ``seed`` out of range.
    """
    seed = check_seed(seed)
    h = float(holdout)
    if not 0.0 <= h < 1.0:
        raise ValueError(f"holdout fractions must be in [0, 1), got {holdout!r}")
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}: use one of {SCHEMES}")
    labels = fold_assignments(n_models, n_folds, seed)  # also checks n_models and n_folds
    n, k = int(n_models), int(n_folds)
    target = int(np.floor((1.0 - h) * n + 0.5 + 1e-9))  # halves rounded up (the paper's nearest-integer bracket)
    if scheme == "paper":
        chunks = balanced_folds(np.random.default_rng(seed).permutation(n), k)
        labels = fold_labels(np.concatenate(chunks), k)
        target = round((1.0 - h) * n)  # the paper's code rounds with Python's round() (halves to even)
    out = []
    for f in range(k):
        n_tr = min(target, int((labels != f).sum()))
        if n_tr < 2:
            raise ValueError(f"holdout {h} leaves {n_tr} training model(s); at least 2 are needed")
        if scheme == "paper":
            train = np.concatenate([chunks[j] for j in range(k) if j != f])  # the pool, kept whole if not larger
            if n_tr < train.size:
                train = np.random.default_rng((seed, f, int(h * 10000))).permutation(train)[:n_tr]
        else:
            pool = np.flatnonzero(labels != f)
            train = pool[rng(seed, 1, f).permutation(pool.size)[:n_tr]]
        out.append((f, np.sort(train), np.flatnonzero(labels == f)))
    return out


@dataclass(frozen=True)
class CVSplits(Splitter):
    """The splitter of the protocol: every (holdout, fold) split of :func:`cv_splits`.

    :meth:`folds` gives them holdout by holdout, fold by fold (a fold's ``index`` the fold, its ``meta`` the
    holdout) to the out-of-fold engine and, as every :class:`~benchsel_lib.method.folds.Splitter`, to scikit-learn.

    Parameters
    ----------
    n_folds, seed, scheme
        As in :func:`cv_splits`.
    holdouts : tuple of float
        Its ``holdout`` fractions, one after the other.
    """

    n_folds: int = 10
    holdouts: tuple[float, ...] = (0.1,)
    seed: int = 0
    scheme: str = "nested"

    def folds(self, m: int) -> list[Fold]:
        """The folds of ``m`` models; the checks of :func:`cv_splits`. O(H K M) for H holdouts."""
        return [Fold(train, val, f, {"holdout": h}) for h in self.holdouts
                for f, train, val in cv_splits(m, n_folds=self.n_folds, holdout=h, seed=self.seed, scheme=self.scheme)]

    def get_n_splits(self, X: object = None, y: object = None, groups: object = None) -> int:
        """The number of splits, ``len(holdouts) * n_folds`` (scikit-learn's splitter protocol). O(1)."""
        return len(self.holdouts) * self.n_folds


def split_seeds(seed: int, fold: int, holdout: float, scheme: str) -> FitSeeds:
    """The random streams of the pipelines fit in one split: random selection ``(2, fold)``, inflation folds
    ``(3, fold)``, search ``(6, fold)``.  O(1).

    The random selection's seed (for ``numpy.random.default_rng``) is drawn from the stream ``(seed, 2, fold)``;
    with ``scheme="paper"`` it is ``(seed + 7, fold, int(holdout * 10000))``, as in the paper's code release.
    """
    selection = (seed + 7, int(fold), int(holdout * 10000)) if scheme == "paper" else int_seed(seed, 2, fold)
    return FitSeeds(selection=selection, inflation=np.random.SeedSequence(seed, spawn_key=(3, fold)),
                    search=int_seed(seed, 6, fold))
