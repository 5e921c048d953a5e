"""The on-disk cache of training correlations (``BENCHSEL_CACHE_DIR``)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.data import ScoreMatrix
from benchsel_lib.method import correlation as correlation_module
from benchsel_lib.method.correlation import Correlation
from benchsel_lib.method.pipeline import Pipeline
from benchsel_lib.protocol import cache
from benchsel_lib.protocol import cv as cv_module
from benchsel_lib.protocol.cache import CACHE_ENV
from benchsel_lib.protocol.cv import cross_validate


def _sparse_toy(M: int = 80, N: int = 5, seed: int = 0) -> ScoreMatrix:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(M, 2)) @ rng.normal(size=(2, N)) + 0.5 * rng.normal(size=(M, N))
    mask = rng.random(X.shape) < 0.1
    mask[:, 0] = False
    X[mask] = np.nan
    return ScoreMatrix(X, [f"m{i}" for i in range(M)], [f"b{j}" for j in range(N)], "toy")


def _em(*objectives: str, config: str = "released") -> list[Pipeline]:
    """The paper's pipelines for ``objectives`` with an EM correlation estimate."""
    return [Pipeline.paper(objective=o, estimator="em", config=config) for o in objectives]


EM = Correlation("em", "released")


def _cv(m: ScoreMatrix) -> pd.DataFrame:
    return cross_validate(m, _em("entropy", "mi"), holdouts=(0.1, 0.5), k_max=3, n_folds=4, seed=1, n_jobs=1,
                          progress=False)


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = correlation_module.estimate_correlation

    def spy(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(correlation_module, "estimate_correlation", spy)
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
    cols = ["pipeline", "holdout", "fold", "k", "r2", "mi", "logdet"]
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
    cross_validate(m, _em("entropy", config="early"), holdouts=(0.1,), k_max=3, n_folds=4, seed=1, n_jobs=1,
                   progress=False)
    assert len(list(tmp_path.glob("corr-*.npy"))) == 2 * n + 4


def test_unreadable_cache_entry_is_recomputed(tmp_path, monkeypatch, counted):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    m = _sparse_toy()
    ref = _cv(m)
    for f in tmp_path.glob("corr-*.npy"):
        f.write_bytes(b"not an array")
    before = len(counted)
    with pytest.warns(cache.CacheWarning, match="is corrupt .*: recomputing"):
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
    import time

    from filelock import FileLock

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    X = np.ascontiguousarray(_sparse_toy().scores, dtype=float)
    path = cache.disk_cache_path(X, EM)
    theirs = np.eye(X.shape[1])
    held = threading.Event()

    def other_process():  # a lock of its own on the file: flock excludes it like another process
        with FileLock(path.with_suffix(".lock")):
            held.set()
            time.sleep(0.3)
            cache.cache_store(path, theirs, cache.cache_key(X, EM))

    t = threading.Thread(target=other_process)
    t.start()
    held.wait()
    R = cache.cached_correlation(EM, X)
    t.join()
    np.testing.assert_array_equal(R, theirs)
    assert counted == []  # not computed here


def test_a_lock_file_left_behind_does_not_block(tmp_path, monkeypatch, counted):
    import time
    import warnings

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    X = np.ascontiguousarray(_sparse_toy().scores, dtype=float)
    lock = cache.disk_cache_path(X, EM).with_suffix(".lock")
    lock.write_text("host 4242\n")  # a lock file nobody holds (a finished run, or the former lock format)
    t0 = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error", cache.CacheWarning)
        R = cache.cached_correlation(EM, X)
    assert time.monotonic() - t0 < 5 and len(counted) == 1 and np.isfinite(R).all()


def test_worker_processes_share_the_cache_folder(tmp_path, monkeypatch):
    m = _sparse_toy()
    monkeypatch.delenv(CACHE_ENV, raising=False)
    plain = _cv(m)
    # workers started before the variable was set still use the folder of the process that runs the sweep
    cross_validate(m, Pipeline.paper(objective="entropy", estimator="pairwise"), holdouts=(0.1,), k_max=1, n_folds=4,
                   n_jobs=2, progress=False)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    kw = dict(pipelines=_em("entropy", "mi"), holdouts=(0.1, 0.5), k_max=3, n_folds=4, seed=1, progress=False)
    first = cross_validate(m, n_jobs=2, **kw)
    assert len(list(tmp_path.glob("corr-*.npy"))) == 8
    assert {p.suffix for p in tmp_path.iterdir()} == {".npy", ".lock"}  # no temporary file left
    second = cross_validate(m, n_jobs=2, **kw)
    pd.testing.assert_frame_equal(plain, first, check_exact=True)
    pd.testing.assert_frame_equal(plain, second, check_exact=True)


def test_two_workers_computing_the_same_estimate_leave_one_complete_file(tmp_path):
    from benchsel_lib.protocol.sweep import Cell, run_sweep

    m = _sparse_toy(M=300, N=8)
    plan = cv_module._cv_plan(m, _em("entropy"), cv_module.CVProtocol(k_max=2, n_folds=4, seed=3))
    args = (plan.X, plan.models, plan.benchmarks, [(plan.folds[0], plan.kw)], str(tmp_path))
    a, b = run_sweep([Cell("a", cv_module._run_split_group, args), Cell("b", cv_module._run_split_group, args)],
                     n_jobs=2)
    assert a[0][:2] == b[0][:2]  # rows and top residuals (not the timings)
    files = [p for p in tmp_path.iterdir() if p.suffix != ".lock"]
    assert len(files) == 1 and files[0].suffix == ".npy"
    R = np.load(files[0], allow_pickle=False)
    assert R.shape == (8, 8) and np.isfinite(R).all()
