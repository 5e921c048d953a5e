"""The cache of training correlations: in-process memo and on-disk store shared by processes and machines.

:func:`cached_correlation` is step 4 of the protocol (the training split's
correlation) with two caches in front of the estimator: the in-process memo of
:func:`correlation_cache` and, when ``BENCHSEL_CACHE_DIR`` names a folder, a
disk store of ``.npy`` files keyed by the training matrix's bytes, the
estimator, the EM configuration and a digest of the estimation code. A lock
file per entry makes a second process that needs the same estimate wait for
the first.
"""
from __future__ import annotations

import functools
import hashlib
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .. import __version__
from ..method import correlation as _correlation_module
from ..method import covariance as _covariance_module
from ..method import em as _em_module
from ..method import scaling as _scaling_module
from ..method.correlation import Correlation

__all__ = [
    "CACHE_ENV",
    "cached_correlation",
    "correlation_cache",
    "cache_root",
    "disk_cache_path",
    "cache_lock",
    "cache_load",
    "lock_heartbeat",
]


CACHE_ENV = "BENCHSEL_CACHE_DIR"


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """Digest of the estimation code (scaling, covariance, EM, correlation): a change invalidates the disk cache."""
    h = hashlib.sha256(__version__.encode())
    for module in (_scaling_module, _covariance_module, _em_module, _correlation_module):
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:16]


#: the cache folder of the process that laid out a sweep, set in its workers while they run its cells
#: (empty: read ``BENCHSEL_CACHE_DIR``), so that workers started earlier or on other machines use it too
_CACHE_ROOT: list[str | None] = []


def active_root() -> str | None:
    """The cache folder in use: the innermost :func:`cache_root`, else ``BENCHSEL_CACHE_DIR`` (None: no disk cache)."""
    return _CACHE_ROOT[-1] if _CACHE_ROOT else (os.environ.get(CACHE_ENV) or None)


@contextmanager
def cache_root(root: str | None) -> Iterator[None]:
    """Use ``root`` (None: no disk cache) as the cache folder inside the block."""
    _CACHE_ROOT.append(root)
    try:
        yield
    finally:
        _CACHE_ROOT.pop()


def disk_cache_path(X: np.ndarray, correlation: Correlation) -> Path | None:
    """Cache file of one training correlation, or None when the disk cache is off.

    The key is a SHA-256 of the training matrix (shape and bytes, NaN
    pattern included), the estimator, the EM configuration and the
    fingerprint of the estimation code.
    """
    root = active_root()
    if not root:
        return None
    h = hashlib.sha256()
    h.update(repr((X.shape, str(X.dtype), correlation.estimator, correlation.config, _code_fingerprint())).encode())
    h.update(X.tobytes())
    return Path(root) / f"corr-{h.hexdigest()[:32]}.npy"


def cached_correlation(correlation: Correlation, X: np.ndarray, standardized: np.ndarray | None = None) -> np.ndarray:
    """Training correlation of one split (protocol step 4): ``correlation.estimate`` with two caches in front.

    ``X`` holds the training rows in the pipeline's space (not standardized),
    ``standardized`` the same rows as the pipeline standardized them (read
    only by the ``"fast"`` estimator, which is cheap and not cached).

    Inside :func:`correlation_cache` an estimate is memoized in the process.

    When the environment variable ``BENCHSEL_CACHE_DIR`` names a directory,
    each estimate is stored there (``.npy``, loaded with
    ``allow_pickle=False``) and reused by later runs and other processes
    (the book build sets it, so notebooks that repeat a split pay for EM
    once). Results are bit-identical to an uncached run; delete the
    directory to recompute.
    """

    if correlation.estimator == "fast":
        return correlation.estimate(X, standardized, context="cv")
    X = np.ascontiguousarray(X, dtype=float)
    memo = _MEMO[-1] if _MEMO else None
    key = (X.shape, X.tobytes(), correlation.estimator, correlation.config)
    if memo is not None and key in memo:
        return memo[key].copy()
    R = _disk_cached(correlation, X)
    if memo is not None:
        memo[key] = R
        return R.copy()
    return R


def _disk_cached(correlation: Correlation, X: np.ndarray) -> np.ndarray:
    """The estimate of ``X`` from the disk cache, or computed (and stored there)."""
    path = disk_cache_path(X, correlation)
    lock = None
    if path is not None:
        R = cache_load(path, X.shape[1])
        if R is not None:
            return R
        lock = cache_lock(path)
        if lock is None:  # another process computed it meanwhile
            R = cache_load(path, X.shape[1])
            if R is not None:
                return R
    try:
        with lock_heartbeat(lock):
            R = correlation.estimate(X, X, context="cv")
        if path is not None:
            try:
                fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
                with os.fdopen(fd, "wb") as fh:
                    np.save(fh, R, allow_pickle=False)
                os.replace(tmp, path)  # atomic: readers see a complete file or none
            except OSError:
                pass  # a read-only or full cache directory only costs the recomputation
    finally:
        if lock is not None:
            lock.unlink(missing_ok=True)
    return R


LOCK_WAIT_S = 900.0  # longest wait for another process's estimate (then compute it here)


def cache_load(path: Path, n: int) -> np.ndarray | None:
    """The cached (n, n) correlation at ``path``, or None (absent or unreadable)."""
    try:
        R = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    return R if R.shape == (n, n) and np.isfinite(R).all() else None


_LOCK_BEAT_S = 30.0  # a computing process touches its lock this often (other machines see it alive)


def _lock_owner() -> str:
    return f"{socket.gethostname()} {os.getpid()}"


def _lock_is_stale(lock: Path) -> bool:
    """A lock whose owner is a dead process on this machine, or not touched for ``LOCK_WAIT_S``."""
    try:
        age = time.time() - lock.stat().st_mtime
        owner = lock.read_text().split()
    except OSError:
        return False
    if age > LOCK_WAIT_S:
        return True
    if len(owner) == 2 and owner[0] == socket.gethostname() and owner[1].isdigit():
        try:
            os.kill(int(owner[1]), 0)
        except ProcessLookupError:
            return True
        except OSError:  # alive under another user
            return False
    return False


def cache_lock(path: Path) -> Path | None:
    """Claim the computation of ``path`` across processes and machines sharing the cache folder.

    Returns the lock file when this process should compute the estimate, or
    None after waiting for another process that held the lock (the caller
    then reads the file, or computes it if that process failed). The lock
    (created with ``O_EXCL``) names its owner (host and process id) and is
    touched every ``_LOCK_BEAT_S`` seconds while the estimate is computed
    (:func:`lock_heartbeat`); a lock whose owner died on this machine, or
    that nobody touched for ``LOCK_WAIT_S``, is stale and removed. Locks are
    held only while computing, so two processes cannot wait on each other;
    the estimate itself is written to a temporary file and renamed
    (``os.replace``), so a reader sees a complete file or none.
    """
    lock = path.with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            with os.fdopen(fd, "w") as fh:
                fh.write(_lock_owner())
            if path.exists():  # written by the process that held the lock before
                lock.unlink(missing_ok=True)
                return None
            return lock
        except FileExistsError:
            if _lock_is_stale(lock):  # a lock left behind by a killed process
                lock.unlink(missing_ok=True)
                continue
        except OSError:
            return None
        if path.exists() or time.monotonic() > deadline:
            return None
        time.sleep(0.05)


@contextmanager
def lock_heartbeat(lock: Path | None) -> Iterator[None]:
    """Touch ``lock`` every ``_LOCK_BEAT_S`` seconds inside the block (a long EM stays visibly alive)."""
    if lock is None:
        yield
        return

    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(_LOCK_BEAT_S):
            try:
                os.utime(lock)
            except OSError:
                return

    t = threading.Thread(target=beat, name="benchsel-cache-lock", daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


@contextmanager
def correlation_cache() -> Iterator[dict]:
    """Reuse the per-split training correlation across :func:`~benchsel_lib.protocol.cv.cross_validate` calls.

    Inside the ``with`` block every training correlation (step 4 of the
    protocol) is memoized by the bytes of the training matrix, the estimator
    and the EM configuration, so several CV runs on the same splits (other
    pipelines, tie-break rules, ``min_observed``) pay for EM once. Results
    are identical to uncached runs. Re-entrant (an inner block uses the outer
    cache). Only the calling process is cached, so it helps runs with
    ``n_jobs=1``; across processes and machines,
    :func:`~benchsel_lib.protocol.cv.cv_grid` puts the runs of one split in
    one cell and the disk cache (``BENCHSEL_CACHE_DIR``) shares estimates
    between cells.

    Yields
    ------
    dict
        The cache (key -> correlation matrix); memory O(splits * N^2).
    """
    if _MEMO:
        yield _MEMO[-1]
        return
    _MEMO.append({})
    try:
        yield _MEMO[-1]
    finally:
        _MEMO.pop()


#: the in-process memo of the innermost :func:`correlation_cache` block (empty: none)
_MEMO: list[dict] = []
