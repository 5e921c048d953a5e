"""Shared input checks (benchsel_lib._checks) and in-process memos (benchsel_lib._memo)."""
from __future__ import annotations

import numpy as np
import pytest

from benchsel_lib._checks import check_int, check_ks, check_nonnegative
from benchsel_lib._memo import LRUMemo, array_key
from benchsel_lib.method.completion import BenchPressBlend
from benchsel_lib.method.gaussian import GaussianPredictor, conditional_impute
from benchsel_lib.method.scaling import Scaling
from benchsel_lib.method.inner_search import pipeline_path
from benchsel_lib.protocol.cv import CVProtocol


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


def test_check_ks_sorts_the_sizes_once_each_and_keeps_none():
    assert check_ks(None, 5) is None
    assert check_ks(3, 5) == (3,)
    assert check_ks([4, np.int64(2), 4, 5], 5) == (2, 4, 5)


@pytest.mark.parametrize("ks", [[], [0], [6], [True], [2.0], "3"])
def test_subset_sizes_are_refused_alike_by_the_protocol_and_the_search(ks):
    message = r"ks=.* is out of range: give subset sizes in 1..k_max=5"
    with pytest.raises(ValueError, match=message):
        check_ks(ks, 5)
    with pytest.raises(ValueError, match=message):
        CVProtocol(k_max=5, ks=ks)
    with pytest.raises(ValueError, match=message):
        pipeline_path(np.random.default_rng(0).standard_normal((20, 6)), 5, ks=ks)


@pytest.mark.parametrize("clip", [0, -1.0, np.inf, np.nan, True, "10"])
def test_the_clip_is_refused_alike_by_the_scaling_and_the_protocol(clip):
    for make in (lambda: Scaling(clip=clip), lambda: CVProtocol(clip=clip)):
        with pytest.raises(ValueError, match="clip must be a positive number"):
            make()


@pytest.mark.parametrize("ridge", ["0.1", None, True, -1e-3, np.inf, np.nan, [0.1]])
def test_a_ridge_that_is_not_a_non_negative_number_is_refused_by_name_everywhere(ridge):
    message = "ridge must be a non-negative number"
    for make in (lambda: check_nonnegative(ridge, "ridge"), lambda: GaussianPredictor(ridge=ridge),
                 lambda: BenchPressBlend(ridge=ridge),
                 lambda: conditional_impute(np.eye(3), np.zeros(3), np.zeros((1, 1)), [0], ridge=ridge)):
        with pytest.raises(ValueError, match=message):
            make()


def test_check_nonnegative_returns_a_plain_float():
    assert check_nonnegative(np.int64(0), "ridge") == 0.0 and type(check_nonnegative(2, "ridge")) is float


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
