"""The library's splitters follow scikit-learn's splitter protocol, as ``KFold`` does.

``split(X)`` yields the ``(train, test)`` index pairs of the folds that
``folds(m)`` gives the library's out-of-fold engine, ``get_n_splits()``
counts them, and scikit-learn's model selection takes the splitters as ``cv``.
"""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.model_selection import check_cv, cross_val_score

from benchsel_lib.data.matrix import ScoreMatrix
from benchsel_lib.method.folds import InnerFolds, InterleavedFolds
from benchsel_lib.protocol.splits import CVSplits

M = 23
SPLITTERS = {
    "inner": InnerFolds(n_folds=4, seed=3),
    "inner-own-stream": InnerFolds(n_folds=3, seed=7, stream=None),
    "interleaved": InterleavedFolds(n_folds=5),
    "cv-nested": CVSplits(n_folds=5, holdouts=(0.1, 0.4), seed=2, scheme="nested"),
    "cv-paper": CVSplits(n_folds=4, holdouts=(0.0, 0.5), seed=42, scheme="paper"),
}
PARTITIONING = ("inner", "inner-own-stream", "interleaved")


def _rows(m: int = M) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(m, 3))


@pytest.mark.parametrize("name", SPLITTERS)
def test_split_yields_the_train_and_held_indices_of_folds(name):
    splitter = SPLITTERS[name]
    pairs = list(splitter.split(_rows()))
    folds = splitter.folds(M)
    assert len(pairs) == len(folds)
    for (train, test), fold in zip(pairs, folds):
        assert train.dtype.kind == "i" and test.dtype.kind == "i"
        np.testing.assert_array_equal(train, fold.train)
        np.testing.assert_array_equal(test, fold.held)


@pytest.mark.parametrize("name", SPLITTERS)
def test_get_n_splits_counts_the_pairs_with_or_without_the_rows(name):
    splitter = SPLITTERS[name]
    n = len(list(splitter.split(_rows())))
    assert splitter.get_n_splits() == n
    assert splitter.get_n_splits(_rows(), None, None) == n


def test_cvsplits_gives_one_split_per_holdout_and_fold():
    assert CVSplits(n_folds=5, holdouts=(0.1, 0.2, 0.4)).get_n_splits() == 15


@pytest.mark.parametrize("name", PARTITIONING)
def test_held_out_rows_partition_the_rows_and_train_on_the_rest(name):
    seen = []
    for train, test in SPLITTERS[name].split(_rows()):
        np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(M))
        seen.append(test)
    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.arange(M))


@pytest.mark.parametrize("name", SPLITTERS)
def test_split_accepts_a_score_matrix_and_a_list_of_rows(name):
    splitter = SPLITTERS[name]
    X = _rows()
    matrix = ScoreMatrix(X, tuple(f"m{i}" for i in range(M)), ("a", "b", "c"))
    expected = list(splitter.split(X))
    for rows in (matrix, X.tolist()):
        got = list(splitter.split(rows))
        assert len(got) == len(expected)
        assert all(np.array_equal(a, c) and np.array_equal(b, d) for (a, b), (c, d) in zip(got, expected))


@pytest.mark.parametrize("name", SPLITTERS)
@pytest.mark.parametrize("count", [M, np.int64(M), 23.0])
def test_split_refuses_a_number_of_rows_and_says_to_pass_the_rows(name, count):
    with pytest.raises(ValueError, match=r"split\(X\) takes the rows to split .* not their number"):
        SPLITTERS[name].split(count)


def test_split_refuses_a_scalar_array():
    with pytest.raises(ValueError, match=r"split\(X\) takes the rows to split"):
        InnerFolds(n_folds=3).split(np.array(5))


@pytest.mark.parametrize("splitter", [InnerFolds(n_folds=5), InterleavedFolds(n_folds=5)], ids=["inner", "interleaved"])
def test_split_refuses_fewer_rows_than_folds(splitter):
    with pytest.raises(ValueError, match="cannot split 4 rows into n_folds=5 folds"):
        splitter.split(_rows(4))


@pytest.mark.parametrize("name", SPLITTERS)
def test_check_cv_returns_the_splitter_itself(name):
    assert check_cv(SPLITTERS[name]) is SPLITTERS[name]


def test_cross_val_score_runs_on_inner_folds():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * rng.normal(size=40)
    scores = cross_val_score(Ridge(), X, y, cv=InnerFolds(n_folds=5, seed=0))
    assert scores.shape == (5,)
    assert np.isfinite(scores).all()
