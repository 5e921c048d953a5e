"""In-process memos of per-training-matrix work (predictor states, fits, selections).

Cross-validation asks the same predictor or selector about the same training
rows many times (every method, subset size and pipeline of a split); these
memos key that work on the exact bytes of the arrays involved and keep the
most recently used entries only.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

import numpy as np


def array_key(a: np.ndarray, *extra: Hashable) -> tuple:
    """A hashable key for the exact contents of ``a`` (SHA-1 of its bytes and its shape), plus ``extra``."""
    return (hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest(), a.shape) + extra


class LRUMemo:
    """A mapping that keeps its ``size`` most recently used entries."""

    def __init__(self, size: int) -> None:
        self.size = int(size)
        self._items: OrderedDict[Hashable, Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> Any:
        """The value stored under ``key`` (now the most recent), or None."""
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> Any:
        """Store ``value`` under ``key``, dropping the least recently used entries beyond ``size``; return it."""
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)
        return value
