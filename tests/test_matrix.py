"""Tests of the ScoreMatrix type."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.data import ScoreMatrix

NAN = np.nan


@pytest.fixture
def sm() -> ScoreMatrix:
    X = [[1.0, NAN, 3.0], [NAN, NAN, 6.0], [7.0, NAN, 9.0]]
    info = pd.DataFrame({"source": ["a", "b", "c"]}, index=["m1", "m2", "m3"])
    return ScoreMatrix(X, ["m1", "m2", "m3"], ["x", "y", "z"], "toy", info)


def test_shape_and_observed_fraction(sm):
    assert sm.shape == (3, 3)
    assert sm.observed.sum() == 5
    assert sm.observed_fraction == pytest.approx(5 / 9)
    assert sm.observed_counts(axis=0).to_dict() == {"x": 2, "y": 0, "z": 3}
    assert sm.observed_counts(axis=1).to_dict() == {"m1": 2, "m2": 1, "m3": 2}
    assert "3 models x 3 benchmarks" in repr(sm)


def test_scores_are_an_immutable_copy():
    X = np.ones((2, 2))
    m = ScoreMatrix(X, ["a", "b"], ["x", "y"])
    X[0, 0] = 5.0
    assert m.scores[0, 0] == 1.0
    with pytest.raises(ValueError):
        m.scores[0, 0] = 2.0


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"scores": [[1.0, 2.0]], "models": ["a", "a"], "benchmarks": ["x", "y"]}, "model names|duplicate"),
        ({"scores": [[1.0, 2.0]], "models": ["a"], "benchmarks": ["x", "x"]}, "duplicate benchmark"),
        ({"scores": np.empty((0, 2)), "models": [], "benchmarks": ["x", "y"]}, "empty"),
        ({"scores": [[1.0, np.inf]], "models": ["a"], "benchmarks": ["x", "y"]}, "infinite"),
        ({"scores": [1.0, 2.0], "models": ["a"], "benchmarks": ["x", "y"]}, "2-D"),
        ({"scores": [[1.0, 2.0]], "models": ["a", "b"], "benchmarks": ["x", "y"]}, "2 model names for 1 rows"),
        ({"scores": [[1.0, 2.0]], "models": ["a"], "benchmarks": ["x"]}, "1 benchmark names for 2 columns"),
        ({"scores": [["a", 2.0]], "models": ["a"], "benchmarks": ["x", "y"]}, "numeric"),
    ],
)
def test_invalid_construction_raises_value_error(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        ScoreMatrix(**kwargs)


def test_name_lookup_and_unknown_names(sm):
    assert sm.benchmark_index(["z", "x"]) == [2, 0]
    assert sm.model_index("m2") == [1]
    with pytest.raises(ValueError, match="unknown benchmark 'w'"):
        sm.benchmark_index(["w"])
    with pytest.raises(ValueError, match="unknown model '"):
        sm.model_index(["zz"])


def test_subset_by_name_keeps_order_and_row_info(sm):
    sub = sm.subset(models=["m3", "m1"], benchmarks=["z"])
    assert sub.models == ("m3", "m1") and sub.benchmarks == ("z",)
    np.testing.assert_array_equal(sub.scores, [[9.0], [3.0]])
    assert list(sub.row_info["source"]) == ["c", "a"]
    assert sub.source == "toy"


def test_take_by_position(sm):
    sub = sm.take(rows=[0, 2], cols=[0, 2])
    np.testing.assert_array_equal(sub.scores, [[1, 3], [7, 9]])


def test_drop_empty_and_require_observed(sm):
    with pytest.raises(ValueError, match="no observed score.*'y'"):
        sm.require_observed()
    clean = sm.drop_empty()
    assert clean.benchmarks == ("x", "z")
    assert clean.require_observed() is clean
    strict = sm.drop_empty(min_per_row=2)
    assert strict.models == ("m1", "m3")


def test_transpose_swaps_roles(sm):
    t = sm.transpose()
    assert t.models == sm.benchmarks and t.benchmarks == sm.models
    np.testing.assert_array_equal(t.scores, sm.scores.T)


def test_frame_round_trip(sm):
    df = sm.to_frame()
    assert list(df.index) == list(sm.models) and list(df.columns) == list(sm.benchmarks)
    back = ScoreMatrix.from_frame(df)
    np.testing.assert_array_equal(back.scores, sm.scores)
    assert back.models == sm.models


def test_from_frame_rejects_non_numeric_cell():
    df = pd.DataFrame({"x": [1.0, "bad"]}, index=["a", "b"])
    with pytest.raises(ValueError, match="non-numeric value 'bad' in row 'b', column 'x'"):
        ScoreMatrix.from_frame(df)
