"""Shared input checks (benchsel_lib._validation) and in-process memos (benchsel_lib._memo)."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel_lib._checks import check_int
from benchsel_lib._memo import LRUMemo, array_key


@pytest.mark.parametrize("value, minimum, message", [
    (0, 1, "n must be a positive integer, got 0"),
    (True, 1, "n must be a positive integer, got True"),
    (2.0, 1, "n must be a positive integer, got 2.0"),
    (-1, 0, "n must be a non-negative integer, got -1"),
    (2, 3, "n must be an integer >= 3, got 2"),
])
def test_check_int_names_the_parameter_and_its_bound(value, minimum, message):
    with pytest.raises(ValueError, match=message):
        check_int(value, "n", minimum=minimum)


def test_check_int_returns_a_plain_int():
    out = check_int(np.int64(4), "n", minimum=2)
    assert out == 4 and type(out) is int


def test_lru_memo_keeps_the_most_recently_used_entries():
    memo = LRUMemo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # "a" is now the most recent
    memo.put("c", 3)  # drops "b"
    assert memo.get("b") is None and memo.get("a") == 1 and memo.get("c") == 3 and len(memo) == 2


def test_array_key_follows_contents_and_shape_not_identity():
    a = np.arange(6.0)
    assert array_key(a, "x") == array_key(a.copy(), "x")
    assert array_key(a) != array_key(a.reshape(2, 3))
    b = a.copy()
    b[0] = 1e-300
    assert array_key(a) != array_key(b)
    assert array_key(a, 1) != array_key(a, 2)
