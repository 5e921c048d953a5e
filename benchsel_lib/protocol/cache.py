"""The cache of training correlations: an in-process memo and an on-disk store shared by processes and machines.

:func:`cached_correlation` (protocol step 4) puts two caches in front of the
estimator: the memo of :func:`correlation_cache` and, when
``BENCHSEL_CACHE_DIR`` names a folder, ``.npy`` files keyed by the training
matrix's bytes, the estimator, the EM configuration and a digest of the
estimation code. An OS file lock per entry (:class:`filelock.FileLock`) makes
a second process that needs the same estimate wait for the first.

What the disk cache guarantees
------------------------------
* **Results equal an uncached run, bit for bit.** Every entry ends with a
  SHA-256 of its key and of the array's bytes; an entry that is empty,
  truncated, changed, unreadable or written for another key is reported in one
  line (a :class:`CacheWarning`: ``cache entry <path> is corrupt (<reason>):
  recomputing``), recomputed and replaced. Entries are read with
  ``allow_pickle=False`` only. The digest detects corruption, not forgery:
  share the folder only with those you trust.
* **A file is not a folder.** When ``BENCHSEL_CACHE_DIR`` names a file, the
  disk cache is off and one line says so.
* **No partial files.** An entry is written to a temporary file in the same
  folder, flushed and renamed into place (``os.replace``); a failed write
  removes it and costs only the storage (reported in one line).
* **Bounded, announced lock waits.** The lock of ``corr-<key>.npy`` is an OS
  lock (``flock``) on ``corr-<key>.lock``, which the kernel releases when its
  holder ends, however it ends (the lock file itself stays in the folder). A
  wait is announced once it has lasted :data:`LOCK_NOTE_S`; after
  :data:`LOCK_WAIT_S` the run computes the estimate itself (one note). A
  folder that is not writable, or where no lock can be taken, costs only the
  lock: the estimate is computed without one.
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from .. import __version__
from ..method import correlation as _correlation_module
from ..method import covariance as _covariance_module
from ..method import em as _em_module
from ..method import scaling as _scaling_module
from ..method.correlation import Correlation

__all__ = ["CACHE_ENV", "LOCK_WAIT_S", "CacheWarning", "active_root", "cache_key", "cache_load", "cache_lock",
           "cache_root", "cache_store", "cached_correlation", "correlation_cache", "disk_cache_path"]

CACHE_ENV = "BENCHSEL_CACHE_DIR"

LOCK_WAIT_S = 900.0  # longest wait for another process computing the same entry (then compute here too)
LOCK_NOTE_S = 1.0  # a wait is announced once it has lasted this long (shorter waits stay quiet)

#: the entry format; part of the key, so entries of another format are never read
_FORMAT = "benchsel-cache-2"
#: the digest trailer that ends every entry: magic, the key (64 hex), the SHA-256 of (magic, key, array file)
_MAGIC = b"\nBENCHSEL-CACHE-2 "
_TRAILER_LEN = len(_MAGIC) + 64 + 1 + 64 + 1


class CacheWarning(UserWarning):
    """A one-line report of the disk cache: a corrupt entry, a failed write, a lock wait."""


def _note(message: str) -> None:
    """Report ``message`` (one line) as a :class:`CacheWarning`."""
    warnings.warn(message, CacheWarning, stacklevel=2)


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
    """The cache folder in use: the innermost :func:`cache_root`, else ``BENCHSEL_CACHE_DIR`` (None: none). O(1)."""
    return _CACHE_ROOT[-1] if _CACHE_ROOT else (os.environ.get(CACHE_ENV) or None)


@contextmanager
def cache_root(root: str | None) -> Iterator[None]:
    """Use ``root`` (None: no disk cache) as the cache folder inside the block."""
    _CACHE_ROOT.append(root)
    try:
        yield
    finally:
        _CACHE_ROOT.pop()


def cache_key(X: np.ndarray, correlation: Correlation) -> str:
    """The key of the training correlation of ``X``: a SHA-256 (64 hex digits). O(M N).

    It covers the entry format, the training matrix (shape, dtype, bytes), the
    estimator, the EM configuration and the fingerprint of the estimation code.
    """
    X = np.ascontiguousarray(X)
    h = hashlib.sha256(repr((_FORMAT, X.shape, str(X.dtype), correlation.estimator, correlation.config,
                             _code_fingerprint())).encode())
    h.update(X.tobytes())
    return h.hexdigest()


def disk_cache_path(X: np.ndarray, correlation: Correlation) -> Path | None:
    """``<root>/corr-<first 32 hex digits of cache_key(X, correlation)>.npy``, or None when the disk cache is off.

    Its lock is the same path with the suffix ``.lock``. Cost O(M N).
    """
    root = active_root()
    return Path(root) / f"corr-{cache_key(X, correlation)[:32]}.npy" if root else None


def cached_correlation(correlation: Correlation, X: np.ndarray, *,
                       standardized: np.ndarray | None = None) -> np.ndarray:
    """Training correlation of one split (protocol step 4): ``correlation.estimate`` with two caches in front.

    ``X``: the training rows in the pipeline's space; ``standardized``: the
    same rows standardized (read only by the ``"fast"`` estimator, which is
    not cached). The caches are the module docstring's, bit for bit. Cost:
    O(M N) for the key, plus O(N^2) to read a hit or the estimate on a miss.
    """
    if correlation.estimator == "fast":
        return correlation.estimate(X, standardized, context="cv")
    X = np.ascontiguousarray(X, dtype=float)
    if not _MEMO:
        return _disk_cached(correlation, X)
    key = (X.shape, X.tobytes(), correlation.estimator, correlation.config)
    if key not in _MEMO[-1]:
        _MEMO[-1][key] = _disk_cached(correlation, X)
    return _MEMO[-1][key].copy()


def _disk_cached(correlation: Correlation, X: np.ndarray) -> np.ndarray:
    """The estimate of ``X`` from the disk cache, or computed (and stored there)."""
    root = active_root()
    if root and os.path.exists(root) and not os.path.isdir(root):  # every entry would fail: say why, once
        _note(f"the cache folder {root} ({CACHE_ENV}) is a file, not a folder: the disk cache is off "
              "(estimates are computed, not stored); point it to a folder")
        root = None
    if not root:
        return correlation.estimate(X, X, context="cv")
    key, n = cache_key(X, correlation), X.shape[1]
    path = Path(root) / f"corr-{key[:32]}.npy"
    R, why = _read_entry(path, n, key)
    if R is not None:
        return R
    with cache_lock(path):
        R, why = _read_entry(path, n, key)  # written by the process that held the lock, or still as found
        if R is not None:
            return R
        if why is not None:
            _note(f"cache entry {path} is corrupt ({why}): recomputing")
        R = correlation.estimate(X, X, context="cv")
        try:
            cache_store(path, R, key)
        except OSError as exc:  # a read-only or full cache folder only costs the storage
            _note(f"cache entry {path} could not be written ({_describe(exc)}): the estimate is used but not stored")
        return R


def _describe(exc: BaseException) -> str:
    """``exc`` in a few words on one line (its class and message, without the file name)."""
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"{type(exc).__name__}: {' '.join(text.split())}" if text else type(exc).__name__


def _trailer(key: str, body: bytes) -> bytes:
    """The digest trailer of an entry whose array file is ``body``."""
    digest = hashlib.sha256(_MAGIC + key.encode() + body).hexdigest()
    return _MAGIC + key.encode() + b" " + digest.encode() + b"\n"


def cache_store(path: Path, R: np.ndarray, key: str) -> None:
    """Write the estimate ``R`` as the cache entry ``path`` of ``key`` (:func:`cache_key`), atomically. O(N^2).

    The entry is an ``.npy`` file of ``R`` (float64) followed by a trailer
    with ``key`` and the SHA-256 of (key, array file), which
    :func:`cache_load` verifies. Readers see the old entry, the new one or
    none, never a part (module docstring); a failed write raises.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w+b") as fh:
            np.save(fh, np.ascontiguousarray(R, dtype=np.float64), allow_pickle=False)
            fh.seek(0)
            fh.write(_trailer(key, fh.read()))
            fh.flush()
            os.fsync(fh.fileno())  # the rename must not reach the disk before the data
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_entry(path: Path, n: int, key: str | None) -> tuple[np.ndarray | None, str | None]:
    """The verified (n, n) estimate at ``path`` and None, or None and why it is unusable (None: absent)."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > 8 * n * n + _TRAILER_LEN + 4096:  # an (n, n) float64 .npy has a header of a few lines
                return None, f"{size} bytes, far more than an ({n}, {n}) array"
            data = fh.read()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"unreadable: {_describe(exc)}"
    if not data:
        return None, "empty file"
    if len(data) < _TRAILER_LEN or not data[-_TRAILER_LEN:].startswith(_MAGIC):
        return None, f"truncated or not written by this cache: {len(data)} bytes, no digest trailer"
    body, trailer = data[:-_TRAILER_LEN], data[-_TRAILER_LEN:]
    stored_key = trailer[len(_MAGIC):len(_MAGIC) + 64].decode("ascii", "replace")
    expected = key if key is not None else path.stem.removeprefix("corr-")
    if not stored_key.startswith(expected):
        return None, f"written for another key, {stored_key[:12]}..."
    if trailer != _trailer(stored_key, body):
        return None, "content does not match its SHA-256 digest"
    try:
        R = np.lib.format.read_array(io.BytesIO(body), allow_pickle=False)  # the .npy format only, no pickle
    except (OSError, ValueError, EOFError) as exc:
        return None, f"not a readable array: {_describe(exc)}"
    if R.dtype != np.float64 or R.shape != (n, n) or not np.isfinite(R).all():
        return None, f"unexpected array: {R.dtype}, shape {R.shape}, expected finite float64 of shape ({n}, {n})"
    return R, None


def cache_load(path: Path, n: int, *, key: str | None = None) -> np.ndarray | None:
    """The cached (n, n) correlation at ``path`` if it is intact, else None (silently). O(N^2).

    The entry's trailer must name ``key`` (None: a key that starts with the
    digits in the file name), its SHA-256 must match, and the array (read
    with ``allow_pickle=False``) must be finite float64 of shape (n, n).
    """
    return _read_entry(Path(path), n, key)[0]


def _acquire(lock: FileLock) -> bool:
    """Acquire ``lock``: announce a wait that lasts :data:`LOCK_NOTE_S`, give up (False) after :data:`LOCK_WAIT_S`."""
    quiet = min(LOCK_NOTE_S, LOCK_WAIT_S)
    seconds = f"{LOCK_WAIT_S:.0f}" if LOCK_WAIT_S >= 10 else f"{LOCK_WAIT_S:.1f}"  # whole seconds from 10 s
    with suppress(Timeout):
        lock.acquire(timeout=quiet)
        return True
    if quiet < LOCK_WAIT_S:
        _note(f"waiting for {lock.lock_file}: another process is computing this estimate (at most {seconds} s in all)")
        with suppress(Timeout):
            lock.acquire(timeout=LOCK_WAIT_S - quiet)
            return True
    _note(f"gave up waiting for {lock.lock_file} after {seconds} s: computing the estimate here too")
    return False


@contextmanager
def cache_lock(path: Path) -> Iterator[FileLock | None]:
    """Hold the lock of the cache entry ``path`` inside the block, across processes and machines sharing the folder.

    The lock, a :class:`filelock.FileLock` on ``path`` with the suffix ``.lock``,
    is released and its waits bounded as the module docstring says. Cost: one
    lock attempt per poll (every 0.05 s, filelock's default).

    Parameters
    ----------
    path : Path
        The cache entry (``corr-<key>.npy``).

    Yields
    ------
    FileLock or None
        The held lock (the caller then reads ``path`` again, and computes it
        if still absent), or None when no lock can be had (the module
        docstring's cases): the caller computes without one, and two processes
        that compute the same entry write identical bytes, renamed atomically.
    """
    path = Path(path)
    lock = FileLock(path.with_suffix(".lock"))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        held = _acquire(lock)
    except OSError:  # cannot create locks here (a read-only folder): compute without one
        held = False
    try:
        yield lock if held else None
    finally:
        if held:
            lock.release()


@contextmanager
def correlation_cache() -> Iterator[dict]:
    """Memoize the training correlations of :func:`~benchsel_lib.protocol.cv.cross_validate` inside the block.

    Keyed by the training matrix's bytes, the estimator and the EM
    configuration, so runs on the same splits pay for EM once, with identical
    results. Re-entrant (an inner block uses the outer cache); this process only.

    Yields
    ------
    dict
        The cache (key -> correlation matrix); memory O(splits * N^2).
    """
    _MEMO.append(_MEMO[-1] if _MEMO else {})
    try:
        yield _MEMO[-1]
    finally:
        _MEMO.pop()


#: the in-process memo of each open :func:`correlation_cache` block, inner ones sharing the outermost's
_MEMO: list[dict] = []
