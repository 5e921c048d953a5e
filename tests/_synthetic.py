"""Synthetic score matrices shared by the tests (imported like ``_book_build``)."""
from __future__ import annotations

import numpy as np

from benchsel_lib.data import ScoreMatrix


def low_rank_scores(seed: int = 0, m: int = 60, n: int = 10, *, noise: float = 0.5, missing: float = 0.0,
                    standardize: bool = False) -> np.ndarray:
    """Rank-2 scores plus ``noise`` x Gaussian noise (m models x n benchmarks), entries missing at random.

    ``standardize`` centres and scales every column before entries are removed.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 2)) @ rng.normal(size=(2, n)) + noise * rng.normal(size=(m, n))
    if standardize:
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    X[rng.random(X.shape) < missing] = np.nan
    return X


def as_matrix(X: np.ndarray) -> ScoreMatrix:
    """``X`` as a ScoreMatrix with models ``m0, m1, ...`` and benchmarks ``b0, b1, ...``."""
    return ScoreMatrix(scores=X, models=[f"m{i}" for i in range(X.shape[0])],
                       benchmarks=[f"b{j}" for j in range(X.shape[1])], source="synthetic")


def random_spd(n: int, seed: int, m: int | None = None) -> np.ndarray:
    """A random well-conditioned SPD matrix (sample covariance of m >> n draws, random scales)."""
    rng = np.random.default_rng(seed)
    m = m or 3 * n
    X = rng.standard_normal((m, n)) @ rng.standard_normal((n, n)) * 0.5
    X += rng.standard_normal((m, n))
    S = X.T @ X / m
    s = rng.uniform(0.5, 2.0, n)
    return S * np.outer(s, s)
