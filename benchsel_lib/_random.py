"""Random streams of the library: every random choice derives from a seed.

Streams are ``numpy.random.SeedSequence(seed, spawn_key=key)`` with fixed keys, so the
same seed always gives the same numbers, whatever the worker or the order of the work.
"""
from __future__ import annotations

import numpy as np

from ._checks import check_int

__all__ = [
    "check_seed",
    "rng",
    "int_seed",
]


def check_seed(seed: object) -> int:
    return check_int(seed, "seed", minimum=0)


def rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key)))


def int_seed(seed: int, *key: int) -> int:
    return int(np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key)).generate_state(1)[0])
