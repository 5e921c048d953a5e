"""The on-disk cache of training correlations (``BENCHSEL_CACHE_DIR``)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib import estimation
from benchsel_lib.evaluation import CACHE_ENV, cross_validate
from benchsel_lib.matrix import ScoreMatrix


def _sparse_toy(M: int = 80, N: int = 5, seed: int = 0) -> ScoreMatrix:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(M, 2)) @ rng.normal(size=(2, N)) + 0.5 * rng.normal(size=(M, N))
    mask = rng.random(X.shape) < 0.1
    mask[:, 0] = False
    X[mask] = np.nan
    return ScoreMatrix(X, [f"m{i}" for i in range(M)], [f"b{j}" for j in range(N)], "toy")


def _cv(m: ScoreMatrix) -> pd.DataFrame:
    return cross_validate(m, methods=("entropy", "mi"), holdouts=(0.1, 0.5), k_max=3, n_folds=4, seed=1,
                          estimator="em", n_jobs=1, progress=False)


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = estimation.estimate_correlation

    def spy(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(estimation, "estimate_correlation", spy)
    return calls


def test_cached_run_reuses_every_estimate_and_gives_identical_results(tmp_path, monkeypatch, counted):
    m = _sparse_toy()
    monkeypatch.delenv(CACHE_ENV, raising=False)
    plain = _cv(m)
    n_splits = len(counted)
    assert n_splits == 8  # 2 holdouts x 4 folds
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    first = _cv(m)
    assert len(counted) == 2 * n_splits
    assert len(list(tmp_path.glob("corr-*.npy"))) == n_splits
    second = _cv(m)
    assert len(counted) == 2 * n_splits  # nothing recomputed
    cols = ["method", "holdout", "fold", "k", "r2", "mi", "logdet"]
    pd.testing.assert_frame_equal(plain[cols], first[cols])
    pd.testing.assert_frame_equal(plain[cols], second[cols])
    assert list(plain.selected) == list(second.selected)


def test_cache_key_depends_on_the_data_and_the_configuration(tmp_path, monkeypatch, counted):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    m = _sparse_toy()
    _cv(m)
    n = len(list(tmp_path.glob("corr-*.npy")))
    other = _sparse_toy(seed=5)
    _cv(other)
    assert len(list(tmp_path.glob("corr-*.npy"))) == 2 * n
    cross_validate(m, methods=("entropy",), holdouts=(0.1,), k_max=3, n_folds=4, seed=1, estimator="em",
                   config="early", n_jobs=1, progress=False)
    assert len(list(tmp_path.glob("corr-*.npy"))) == 2 * n + 4


def test_unreadable_cache_entry_is_recomputed(tmp_path, monkeypatch, counted):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    m = _sparse_toy()
    ref = _cv(m)
    for f in tmp_path.glob("corr-*.npy"):
        f.write_bytes(b"not an array")
    before = len(counted)
    again = _cv(m)
    assert len(counted) == before + 8
    np.testing.assert_array_equal(ref.r2.to_numpy(), again.r2.to_numpy())


def test_without_the_variable_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    _cv(_sparse_toy())
    assert list(tmp_path.iterdir()) == []


def test_a_process_waits_for_the_estimate_another_process_is_computing(tmp_path, monkeypatch, counted):
    import threading

    from benchsel_lib import evaluation

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    X = np.ascontiguousarray(_sparse_toy().scores, dtype=float)
    path = evaluation._disk_cache_path(X, "em", "released")
    lock = path.with_suffix(".lock")
    lock.touch()
    theirs = np.eye(X.shape[1])

    def other_process():
        tmp = tmp_path / "partial.tmp"
        with open(tmp, "wb") as fh:
            np.save(fh, theirs, allow_pickle=False)
        tmp.replace(path)
        lock.unlink()

    t = threading.Timer(0.3, other_process)
    t.start()
    R = evaluation._correlation(X, "em", "released")
    t.join()
    np.testing.assert_array_equal(R, theirs)
    assert counted == []  # not computed here


def test_a_stale_lock_does_not_block(tmp_path, monkeypatch, counted):
    import os

    from benchsel_lib import evaluation

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    X = np.ascontiguousarray(_sparse_toy().scores, dtype=float)
    lock = evaluation._disk_cache_path(X, "em", "released").with_suffix(".lock")
    lock.touch()
    old = lock.stat().st_mtime - 2 * evaluation._LOCK_WAIT_S
    os.utime(lock, (old, old))
    R = evaluation._correlation(X, "em", "released")
    assert len(counted) == 1 and np.isfinite(R).all()
    assert not lock.exists()
