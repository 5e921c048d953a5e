"""Random streams and folds: every random choice of the library derives from a seed.

Streams are ``numpy.random.SeedSequence(seed, spawn_key=key)`` with fixed keys,
so the same seed always gives the same numbers, whatever the worker or the
order of the work. Keys in use: ``(0,)`` fold permutation, ``(1, fold)``
training subsample, ``(2, fold)`` random selection and ``(3, fold)`` inner
folds of the variance inflation (the CV protocol), ``(4,)`` the random control
split of the extrapolation check, ``(5,)`` the sample of first picks,
``(6, fold)`` a pipeline's inner cross-validation in a CV split, ``(7,)`` the
rounding drawn at random by the first-pick study, ``(11,)`` the
inner folds of a pipeline's search (:class:`~benchsel_lib.method.folds.InnerFolds`), ``(12,)`` and ``(13,)`` the subsamples of
models and benchmarks of a search too big for its budget.

:func:`balanced_folds` is the one way the library cuts rows into folds.
"""
from __future__ import annotations

import numpy as np

from ._checks import check_int

__all__ = ["check_entropy", "check_seed", "rng", "int_seed", "balanced_folds", "fold_labels"]


def check_seed(seed: object) -> int:
    """``seed`` as a non-negative int; anything else raises ValueError naming it."""
    return check_int(seed, "seed", minimum=0)


def check_entropy(seed: object) -> object:
    """A seed for ``numpy.random.default_rng``: a Generator, None, an int >= 0 or a non-empty sequence of them.

    Returned as given, so the stream is numpy's own; anything else raises
    ValueError naming it (numpy's own message comes from deep inside it).
    """
    if seed is None or isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (tuple, list)) and seed and all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0 for s in seed):
        return seed
    try:
        return check_seed(seed)
    except ValueError:
        raise ValueError(f"seed must be a non-negative integer, a sequence of them or a numpy Generator, "
                         f"got {seed!r}") from None


def rng(seed: int, *key: int) -> np.random.Generator:
    """The generator of the stream ``SeedSequence(seed, spawn_key=key)``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key)))


def int_seed(seed: int, *key: int) -> int:
    """A 32-bit integer seed drawn from the stream ``SeedSequence(seed, spawn_key=key)``."""
    return int(np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key)).generate_state(1)[0])


def balanced_folds(permutation: np.ndarray, n_folds: int) -> list[np.ndarray]:
    """Cut a permutation of the rows into ``n_folds`` contiguous chunks whose sizes differ by at most one.

    The chunks keep the permutation's order (``numpy.array_split``). O(M).
    """
    return list(np.array_split(np.asarray(permutation), int(n_folds)))


def fold_labels(permutation: np.ndarray, n_folds: int) -> np.ndarray:
    """Fold label (0..K-1) of every row, for the chunks of :func:`balanced_folds`. O(M)."""
    perm = np.asarray(permutation)
    labels = np.empty(perm.size, dtype=int)
    for f, chunk in enumerate(balanced_folds(perm, n_folds)):
        labels[chunk] = f
    return labels
