"""Fault injection for the disk cache of training correlations.

Every fault (a damaged, changed or foreign entry, a lock nobody will release,
a failed write) must be reported in one line and cost only a recomputation:
the result is bit-identical to a clean, uncached computation, and no test
waits long (the lock timings are shortened).
"""
from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

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
    """``tmp_path`` as the cache folder, with lock timings of a fraction of a second."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(cache, "LOCK_BEAT_S", 0.05)
    monkeypatch.setattr(cache, "LOCK_STALE_S", 0.4)
    monkeypatch.setattr(cache, "LOCK_GRACE_S", 0.2)
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
    """Files other than cache entries (locks, temporary files)."""
    return sorted(p.name for p in folder.iterdir() if p.suffix != ".npy")


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
    assert list(folder.iterdir()) == []  # no entry, lock or temporary file


def test_an_unexpected_write_error_propagates_and_leaves_nothing(folder, monkeypatch):
    X = _matrix()

    def fail(*a, **kw):
        raise RuntimeError("boom")

    monkeypatch.setattr(np, "save", fail)
    with pytest.raises(RuntimeError, match="boom"):
        cached_correlation(EM, X)
    assert list(folder.iterdir()) == []


def test_a_failed_estimate_removes_its_lock(folder, monkeypatch):
    X = _matrix()

    def fail(*a, **kw):
        raise FloatingPointError("no convergence")

    monkeypatch.setattr(correlation_module, "estimate_correlation", fail)
    with pytest.raises(FloatingPointError):
        cached_correlation(EM, X)
    assert list(folder.iterdir()) == []


# --------------------------------------------------------------------------- locks


def _lock(folder: Path, X: np.ndarray) -> Path:
    return _entry(folder, X).with_suffix(".lock")


def _owner_line(X: np.ndarray, host: str, pid: int, start: str = "-", entry: str | None = None) -> str:
    """A lock line as a benchsel process writes it (host, pid, process start, creation time, token, entry)."""
    name = entry if entry is not None else cache.disk_cache_path(X, EM).name
    return f"{host} {pid} {start} {time.time():.3f} 0123456789abcdef {name}\n"


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def _assert_taken_over(folder, X, ref, counted, *, reason, holder, waited, limit=5.0):
    """The run takes the lock over (after announcing its wait if ``waited``), computes, and leaves no lock."""
    lock = _lock(folder, X)
    before = len(counted)
    t0 = time.monotonic()
    R, messages = _cached(X)
    assert time.monotonic() - t0 < limit
    takeovers = [m for m in messages if m.startswith(f"taking over cache lock {lock} held by {holder}")]
    waits = [m for m in messages if m.startswith(f"waiting for {lock} held by {holder}")]
    assert len(takeovers) == 1 and reason in takeovers[0], messages
    assert len(waits) == (1 if waited else 0), messages
    assert len(messages) == len(takeovers) + len(waits)
    assert len(counted) == before + 1
    _same(R, ref)
    assert not lock.exists() and _leftovers(folder) == []


def test_a_stale_lock_from_another_host_is_taken_over_at_once(folder, counted):
    X = _matrix()
    ref = _clean(X)
    lock = _lock(folder, X)
    lock.write_text(_owner_line(X, "elsewhere.example", 4242))
    _age(lock, 60)
    _assert_taken_over(folder, X, ref, counted, reason="no heartbeat for 60 s", holder="elsewhere.example 4242 since ",
                       waited=False)


def test_a_lock_from_another_host_whose_heartbeat_stops_is_announced_then_taken_over(folder, counted):
    X = _matrix()
    ref = _clean(X)
    _lock(folder, X).write_text(_owner_line(X, "elsewhere.example", 4242))
    _assert_taken_over(folder, X, ref, counted, reason="no heartbeat", holder="elsewhere.example 4242 since ",
                       waited=True)


@pytest.mark.parametrize("content, reason", [
    ("", "the lock file is empty"),
    ("#!?", "the lock file is not a benchsel lock"),
])
def test_an_empty_or_unparsable_lock_is_taken_over_after_the_grace(folder, counted, content, reason):
    X = _matrix()
    ref = _clean(X)
    _lock(folder, X).write_text(content)
    _assert_taken_over(folder, X, ref, counted, reason=reason, holder="an unknown owner since ", waited=True)


@pytest.fixture
def sleeper():
    """A live process that is not computing anything."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield p
    p.kill()
    p.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process start times need /proc")
def test_a_lock_naming_a_live_process_that_did_not_create_it_is_taken_over_at_once(folder, counted, sleeper):
    X = _matrix()
    ref = _clean(X)
    # the lock records a process start that is not the sleeper's: its process id was reused
    _lock(folder, X).write_text(_owner_line(X, socket.gethostname(), sleeper.pid, start="1"))
    _assert_taken_over(folder, X, ref, counted, reason="did not create it (the process id was reused)",
                       holder=f"{socket.gethostname()} {sleeper.pid} since ", waited=False)


@pytest.mark.parametrize("line", ["legacy", "unverifiable"])
def test_a_lock_naming_a_live_unrelated_process_never_waits_longer_than_the_stale_bound(folder, counted, sleeper,
                                                                                        line):
    X = _matrix()
    ref = _clean(X)
    host = socket.gethostname()
    # neither the old "HOST PID" line nor a line without a process start can be checked: the missing heartbeat decides
    text = f"{host} {os.getppid()}" if line == "legacy" else _owner_line(X, host, sleeper.pid)
    pid = os.getppid() if line == "legacy" else sleeper.pid
    _lock(folder, X).write_text(text)
    _assert_taken_over(folder, X, ref, counted, reason="no heartbeat", holder=f"{host} {pid} since ", waited=True,
                       limit=cache.LOCK_STALE_S + 3.0)


def test_a_lock_naming_this_process_without_its_token_is_taken_over_at_once(folder, counted):
    X = _matrix()
    ref = _clean(X)
    host = socket.gethostname()
    _lock(folder, X).write_text(_owner_line(X, host, os.getpid()))
    _assert_taken_over(folder, X, ref, counted, reason="it names this process, which is not computing it",
                       holder=f"{host} {os.getpid()} since ", waited=False)


def test_a_lock_naming_another_entry_is_taken_over_at_once(folder, counted):
    X = _matrix()
    ref = _clean(X)
    _lock(folder, X).write_text(_owner_line(X, "elsewhere.example", 4242, entry="corr-0000.npy"))
    _assert_taken_over(folder, X, ref, counted, reason="it names another entry (corr-0000.npy)",
                       holder="elsewhere.example 4242 since ", waited=False)


def _live_owner(folder: Path, X: np.ndarray, stop: threading.Event, result: np.ndarray | None, after: float):
    """Another machine's process: beats its lock until ``stop`` (or ``after`` s), then stores ``result``."""
    lock = _lock(folder, X)
    lock.write_text(_owner_line(X, "elsewhere.example", 4242))

    def run():
        t0 = time.monotonic()
        while not stop.wait(0.05) and time.monotonic() - t0 < after:
            os.utime(lock)
        if result is not None:
            cache.cache_store(_entry(folder, X), result, cache.cache_key(X, EM))
        lock.unlink(missing_ok=True)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_a_live_owner_is_waited_for_announced_once_and_not_taken_over(folder, counted):
    X = _matrix()
    ref = _clean(X)
    stop = threading.Event()
    owner = _live_owner(folder, X, stop, ref, after=1.0)  # longer than LOCK_STALE_S, but it keeps beating
    R, messages = _cached(X)
    owner.join()
    assert len(messages) == 1
    assert messages[0].startswith(f"waiting for {_lock(folder, X)} held by elsewhere.example 4242 since ")
    assert len(counted) == 1  # the clean run only: the owner's estimate is read
    _same(R, ref)
    assert _leftovers(folder) == []


def test_a_wait_for_a_live_owner_is_bounded_by_lock_wait_s(folder, counted, monkeypatch):
    monkeypatch.setattr(cache, "LOCK_WAIT_S", 0.5)
    X = _matrix()
    ref = _clean(X)
    stop = threading.Event()
    owner = _live_owner(folder, X, stop, None, after=30.0)
    try:
        t0 = time.monotonic()
        R, messages = _cached(X)
        assert time.monotonic() - t0 < 3.0
    finally:
        stop.set()
        owner.join()
    lock = _lock(folder, X)
    assert [m.split(" held by")[0] for m in messages] == [f"waiting for {lock}", f"gave up waiting for {lock}"]
    assert messages[1].endswith("computing the estimate here too")
    assert len(counted) == 2
    _same(R, ref)


def test_an_owner_does_not_remove_a_lock_taken_over_by_another_process(folder, monkeypatch):
    X = _matrix()
    lock = _lock(folder, X)
    theirs = _owner_line(X, "elsewhere.example", 4242)
    real = correlation_module.estimate_correlation

    def taken_over_meanwhile(*a, **kw):
        lock.write_text(theirs)  # another process took the lock over while this one computed
        return real(*a, **kw)

    monkeypatch.setattr(correlation_module, "estimate_correlation", taken_over_meanwhile)
    cached_correlation(EM, X)
    assert lock.read_text() == theirs


def test_a_stale_lock_that_cannot_be_removed_costs_only_the_lock(folder, counted, monkeypatch):
    X = _matrix()
    ref = _clean(X)
    lock = _lock(folder, X)
    lock.write_text(_owner_line(X, "elsewhere.example", 4242))
    _age(lock, 60)
    real_unlink = Path.unlink

    def unlink(self, missing_ok=False):
        if self.suffix == ".lock":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    R, messages = _cached(X)
    assert len(messages) == 1 and messages[0].startswith(f"cannot take over stale cache lock {lock} held by ")
    assert messages[0].endswith("(no heartbeat for 60 s): computing the estimate without a lock")
    _same(R, ref)
    _same(cache.cache_load(_entry(folder, X), X.shape[1]), ref)


def test_an_oversized_entry_is_reported_without_being_read(folder, counted):
    X = _matrix()
    ref = _clean(X)
    _cached(X)
    with open(_entry(folder, X), "ab") as fh:
        fh.write(b"\0" * (1 << 20))
    _assert_recomputed(folder, X, ref, counted, "far more than an (5, 5) array")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process states need /proc")
def test_a_lock_of_a_killed_process_not_yet_reaped_is_taken_over_at_once(folder, counted, sleeper):
    X = _matrix()
    ref = _clean(X)
    host = socket.gethostname()
    _lock(folder, X).write_text(_owner_line(X, host, sleeper.pid))
    sleeper.kill()  # a zombie until its parent waits for it
    deadline = time.monotonic() + 5
    while Path(f"/proc/{sleeper.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    _assert_taken_over(folder, X, ref, counted, reason=f"process {sleeper.pid} is no longer running",
                       holder=f"{host} {sleeper.pid} since ", waited=False)


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
