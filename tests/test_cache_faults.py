"""Fault injection for the disk cache of training correlations.

Every fault (a damaged, changed or foreign entry, a lock held too long or by a
killed process, a folder where nothing can be written, a failed write) costs at
most a one-line report and a recomputation: the result is bit-identical to a
clean, uncached computation, and no test waits long (the lock timings are
shortened).
"""
from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from filelock import FileLock

from benchsel_lib.method import correlation as correlation_module
from benchsel_lib.method.correlation import Correlation
from benchsel_lib.protocol import cache
from benchsel_lib.protocol.cache import CACHE_ENV, CacheWarning, cached_correlation

EM = Correlation("em")


def _matrix(seed: int = 0, M: int = 40, N: int = 5) -> np.ndarray:
    """A small low-rank-plus-noise score matrix with missing entries (so that EM runs)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(M, 2)) @ rng.normal(size=(2, N)) + 0.5 * rng.normal(size=(M, N))
    mask = rng.random(X.shape) < 0.15
    mask[:, 0] = False
    X[mask] = np.nan
    return X


def _clean(X: np.ndarray) -> np.ndarray:
    """The estimate without any cache."""
    with cache.cache_root(None):
        return cached_correlation(EM, X)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """``tmp_path`` as the cache folder, with lock waits announced at once and bounded by 10 s."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(cache, "LOCK_NOTE_S", 0.0)
    monkeypatch.setattr(cache, "LOCK_WAIT_S", 10.0)
    return tmp_path


@pytest.fixture
def counted(monkeypatch):
    """The estimates actually computed."""
    calls = []
    real = correlation_module.estimate_correlation

    def spy(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(correlation_module, "estimate_correlation", spy)
    return calls


def _cached(X: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """``cached_correlation(EM, X)`` and the cache's messages (each checked to be one line)."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        R = cached_correlation(EM, X)
    messages = [str(w.message) for w in record if issubclass(w.category, CacheWarning)]
    assert all("\n" not in m for m in messages)
    return R, messages


def _same(R: np.ndarray, ref: np.ndarray) -> None:
    assert R.dtype == ref.dtype and R.shape == ref.shape and R.tobytes() == ref.tobytes()


def _leftovers(folder: Path) -> list[str]:
    """Files other than cache entries and their lock files (temporary files)."""
    return sorted(p.name for p in folder.iterdir() if p.suffix not in (".npy", ".lock"))


def _array_offset(path: Path) -> tuple[int, tuple[int, ...]]:
    """Where the array data of the ``.npy`` entry at ``path`` starts, and its shape."""
    with open(path, "rb") as fh:
        major, _ = np.lib.format.read_magic(fh)
        read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        shape, _, _ = read(fh)
        return fh.tell(), shape


def _change(path: Path, cells: list[tuple[int, int]], delta: float = 0.01) -> None:
    """Add ``delta`` to the entry's values at ``cells``, in place (the digest trailer is left as it was)."""
    data = bytearray(path.read_bytes())
    offset, shape = _array_offset(path)
    size = 8 * int(np.prod(shape))
    R = np.frombuffer(bytes(data[offset:offset + size]), dtype="<f8").reshape(shape).copy()
    for i, j in cells:
        R[i, j] += delta
    data[offset:offset + size] = R.tobytes()
    path.write_bytes(bytes(data))


def _entry(folder: Path, X: np.ndarray) -> Path:
    path = cache.disk_cache_path(X, EM)
    assert path is not None and path.parent == folder
    return path


# --------------------------------------------------------------------------- entries


def test_an_intact_entry_is_reused_silently_and_is_a_plain_npy(folder, counted):
    X = _matrix()
    ref = _clean(X)
    first, m1 = _cached(X)
    second, m2 = _cached(X)
    assert m1 == m2 == [] and len(counted) == 2  # the clean run and the first cached one
    _same(first, ref)
    _same(second, ref)
    path = _entry(folder, X)
    _same(np.load(path, allow_pickle=False), ref)  # the digest trailer does not hide the array from np.load
    _same(cache.cache_load(path, X.shape[1], key=cache.cache_key(X, EM)), ref)
    assert _leftovers(folder) == []


def _assert_recomputed(folder: Path, X: np.ndarray, ref: np.ndarray, counted: list, reason: str) -> None:
    """One run reports the damaged entry in one line, recomputes it bit for bit and replaces it."""
    path = _entry(folder, X)
    before = len(counted)
    R, messages = _cached(X)
    assert len(messages) == 1, messages
    assert messages[0].startswith(f"cache entry {path} is corrupt (") and messages[0].endswith("): recomputing")
    assert reason in messages[0]
    assert len(counted) == before + 1
    _same(R, ref)
    _same(cache.cache_load(path, X.shape[1]), ref)  # replaced by an intact entry
    again, messages = _cached(X)
    assert messages == [] and len(counted) == before + 1
    _same(again, ref)
    assert _leftovers(folder) == []


@pytest.mark.parametrize("keep, reason", [
    (0, "empty file"),
    (10, "truncated"),
    (0.5, "truncated"),
    (-1, "truncated"),  # the last byte of the trailer lost
])
def test_a_truncated_entry_is_reported_and_recomputed(folder, counted, keep, reason):
    X = _matrix()
    ref = _clean(X)
    _cached(X)
    path = _entry(folder, X)
    data = path.read_bytes()
    cut = {0.5: len(data) // 2, -1: len(data) - 1}.get(keep, keep)
    path.write_bytes(data[:cut])
    _assert_recomputed(folder, X, ref, counted, reason)


@pytest.mark.parametrize("cells", [[(1, 3)], [(1, 3), (3, 1)], [(2, 2)]], ids=["one-side", "both-sides", "diagonal"])
def test_a_changed_value_is_reported_and_recomputed(folder, counted, cells):
    X = _matrix()
    ref = _clean(X)
    _cached(X)
    _change(_entry(folder, X), cells)
    _assert_recomputed(folder, X, ref, counted, "content does not match its SHA-256 digest")


def test_a_changed_trailer_is_reported_and_recomputed(folder, counted):
    X = _matrix()
    ref = _clean(X)
    _cached(X)
    path = _entry(folder, X)
    data = bytearray(path.read_bytes())
    data[-2] = ord("0") if data[-2] != ord("0") else ord("1")  # one digit of the digest
    path.write_bytes(bytes(data))
    _assert_recomputed(folder, X, ref, counted, "content does not match its SHA-256 digest")


def test_an_entry_copied_from_another_key_is_reported_and_recomputed(folder, counted):
    X, Y = _matrix(seed=0), _matrix(seed=1)
    ref = _clean(Y)
    _cached(X)
    _cached(Y)
    shutil.copyfile(_entry(folder, X), _entry(folder, Y))
    _assert_recomputed(folder, Y, ref, counted, "written for another key")


def test_an_entry_that_is_not_an_array_file_is_reported_and_recomputed(folder, counted):
    X = _matrix()
    ref = _clean(X)
    _entry(folder, X).write_text("not an array")
    _assert_recomputed(folder, X, ref, counted, "truncated or not written by this cache")


class _Marker:
    """Unpickling this object would create the file ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def test_a_pickle_with_a_valid_digest_is_never_unpickled(folder, counted, monkeypatch):
    X = _matrix()
    ref = _clean(X)
    path = _entry(folder, X)
    marker = folder / "unpickled"
    real_save = np.save

    def save_a_pickle(fh, arr, allow_pickle=True):
        real_save(fh, np.array([_Marker(str(marker))], dtype=object), allow_pickle=True)

    with monkeypatch.context() as m:  # a forger who knows the format writes a pickle with a matching digest
        m.setattr(np, "save", save_a_pickle)
        cache.cache_store(path, ref, cache.cache_key(X, EM))
    _assert_recomputed(folder, X, ref, counted, "not a readable array")
    assert not marker.exists()


# --------------------------------------------------------------------------- writes


@pytest.mark.parametrize("where", ["np.save", "os.fsync", "os.replace"])
def test_a_failed_write_leaves_no_temporary_file(folder, counted, monkeypatch, where):
    X = _matrix()
    ref = _clean(X)

    def fail(*a, **kw):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "somewhere.tmp")

    module, name = where.split(".")
    with monkeypatch.context() as m:
        m.setattr(np if module == "np" else os, name, fail)
        R, messages = _cached(X)
    path = cache.disk_cache_path(X, EM)
    assert messages == [(f"cache entry {path} could not be written (OSError: {os.strerror(errno.ENOSPC)}): "
                        "the estimate is used but not stored")]
    _same(R, ref)
    assert not path.exists() and _leftovers(folder) == []  # no entry or temporary file


def test_an_unexpected_write_error_propagates_and_leaves_nothing(folder, monkeypatch):
    X = _matrix()

    def fail(*a, **kw):
        raise RuntimeError("boom")

    monkeypatch.setattr(np, "save", fail)
    with pytest.raises(RuntimeError, match="boom"):
        cached_correlation(EM, X)
    assert not _entry(folder, X).exists() and _leftovers(folder) == []


def test_a_failed_estimate_releases_its_lock(folder, monkeypatch):
    X = _matrix()

    def fail(*a, **kw):
        raise FloatingPointError("no convergence")

    monkeypatch.setattr(correlation_module, "estimate_correlation", fail)
    with pytest.raises(FloatingPointError):
        cached_correlation(EM, X)
    assert not _entry(folder, X).exists() and _leftovers(folder) == []
    with FileLock(_lock(folder, X)).acquire(timeout=0):  # free at once
        pass


# --------------------------------------------------------------------------- locks


def _lock(folder: Path, X: np.ndarray) -> Path:
    return _entry(folder, X).with_suffix(".lock")


#: another process: holds the lock ``argv[1]`` for ``argv[2]`` s, then renames the staged entry ``argv[3]`` (if any)
#: to ``argv[4]``
_HOLDER = """
import os, sys, time
from filelock import FileLock
lock, seconds, staged, entry = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
with FileLock(lock):
    print("held", flush=True)
    time.sleep(seconds)
    if staged:
        os.replace(staged, entry)
"""


@pytest.fixture
def holder():
    """Start another process that holds a lock: ``holder(lock, seconds, staged, entry)``; each is killed at the end."""
    started = []

    def start(lock: Path, seconds: float, staged: Path | None = None, entry: Path | None = None) -> subprocess.Popen:
        args = [str(lock), str(seconds), str(staged or ""), str(entry or "")]
        p = subprocess.Popen([sys.executable, "-c", _HOLDER, *args], stdout=subprocess.PIPE, text=True)
        started.append(p)
        assert p.stdout.readline() == "held\n"  # it holds the lock from now on
        return p

    yield start
    for p in started:
        p.kill()
        p.wait()
        p.stdout.close()


def _waiting(lock: Path, wait_s: str) -> str:
    return f"waiting for {lock}: another process is computing this estimate (at most {wait_s} s in all)"


@pytest.mark.parametrize("note_s, hold_s, announced", [(0.2, 1.5, True), (5.0, 0.3, False)],
                         ids=["longer-than-lock-note-s", "shorter"])
def test_a_waiter_reads_the_entry_of_the_process_holding_the_lock_and_announces_a_long_wait(
        folder, counted, holder, monkeypatch, tmp_path_factory, note_s, hold_s, announced):
    monkeypatch.setattr(cache, "LOCK_NOTE_S", note_s)
    X = _matrix()
    ref = _clean(X)
    staged = tmp_path_factory.mktemp("staged") / "entry.npy"
    cache.cache_store(staged, ref, cache.cache_key(X, EM))
    holder(_lock(folder, X), hold_s, staged, _entry(folder, X))
    R, messages = _cached(X)
    assert messages == ([_waiting(_lock(folder, X), "10")] if announced else [])
    assert len(counted) == 1  # the clean run only: the holder's entry is read
    _same(R, ref)
    assert _leftovers(folder) == []


def test_a_lock_holder_killed_with_sigkill_releases_the_lock_and_the_waiter_proceeds_promptly(
        folder, counted, holder, monkeypatch):
    monkeypatch.setattr(cache, "LOCK_WAIT_S", 60.0)
    X = _matrix()
    ref = _clean(X)
    lock = _lock(folder, X)
    p = holder(lock, 60.0)
    killer = threading.Timer(0.3, p.send_signal, (signal.SIGKILL,))
    t0 = time.monotonic()
    killer.start()
    R, messages = _cached(X)
    elapsed = time.monotonic() - t0
    killer.join()
    assert elapsed < 5.0  # the kernel released the lock of the killed holder, not yet reaped
    assert p.wait(timeout=5) == -signal.SIGKILL
    assert messages == [_waiting(lock, "60")]
    assert len(counted) == 2
    _same(R, ref)
    _same(cache.cache_load(_entry(folder, X), X.shape[1]), ref)
    assert _leftovers(folder) == []


def test_a_wait_longer_than_lock_wait_s_computes_without_the_lock(folder, counted, holder, monkeypatch):
    monkeypatch.setattr(cache, "LOCK_WAIT_S", 0.5)
    X = _matrix()
    ref = _clean(X)
    lock = _lock(folder, X)
    holder(lock, 60.0)
    t0 = time.monotonic()
    R, messages = _cached(X)
    assert time.monotonic() - t0 < 3.0
    assert messages == [_waiting(lock, "0.5"),
                        f"gave up waiting for {lock} after 0.5 s: computing the estimate here too"]
    assert len(counted) == 2
    _same(R, ref)
    _same(cache.cache_load(_entry(folder, X), X.shape[1]), ref)  # stored all the same, atomically


def test_a_read_only_folder_computes_without_a_lock_and_without_crashing(folder, counted, monkeypatch):
    X = _matrix()
    ref = _clean(X)
    real_open = os.open

    def read_only_open(path, flags, *args, **kwargs):
        """``os.open`` refusing writes in ``folder``, as the kernel does for all but root."""
        writes = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        if writes and os.path.realpath(os.path.dirname(path)) == os.path.realpath(folder):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return real_open(path, flags, *args, **kwargs)

    if os.geteuid() == 0:  # root ignores the folder's mode
        monkeypatch.setattr(os, "open", read_only_open)
    folder.chmod(0o555)
    try:
        R, messages = _cached(X)
    finally:
        folder.chmod(0o755)
    assert messages == [f"cache entry {_entry(folder, X)} could not be written "
                        f"(PermissionError: {os.strerror(errno.EACCES)}): the estimate is used but not stored"]
    assert len(counted) == 2
    _same(R, ref)
    assert list(folder.iterdir()) == []


def test_a_folder_where_no_lock_can_be_taken_computes_and_stores_without_one(folder, counted, monkeypatch):
    X = _matrix()
    ref = _clean(X)

    def no_lock(self, *args, **kwargs):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(FileLock, "acquire", no_lock)
    R, messages = _cached(X)
    assert messages == [] and len(counted) == 2
    _same(R, ref)
    _same(cache.cache_load(_entry(folder, X), X.shape[1]), ref)


def test_an_oversized_entry_is_reported_without_being_read(folder, counted):
    X = _matrix()
    ref = _clean(X)
    _cached(X)
    with open(_entry(folder, X), "ab") as fh:
        fh.write(b"\0" * (1 << 20))
    _assert_recomputed(folder, X, ref, counted, "far more than an (5, 5) array")


def test_a_cache_folder_that_is_a_file_is_named_once_and_costs_only_the_cache(tmp_path, monkeypatch, counted):
    path = tmp_path / "cache"
    path.write_text("not a folder\n")
    monkeypatch.setenv(CACHE_ENV, str(path))
    X = _matrix()
    R, messages = _cached(X)
    _same(R, _clean(X))
    assert messages == [f"the cache folder {path} ({CACHE_ENV}) is a file, not a folder: the disk cache is off "
                        "(estimates are computed, not stored); point it to a folder"]
    assert path.read_text() == "not a folder\n" and sorted(p.name for p in tmp_path.iterdir()) == ["cache"]
