"""The cache of training correlations: an in-process memo and an on-disk store shared by processes and machines.

:func:`cached_correlation` (protocol step 4) puts two caches in front of the
estimator: the memo of :func:`correlation_cache` and, when
``BENCHSEL_CACHE_DIR`` names a folder, ``.npy`` files keyed by the training
matrix's bytes, the estimator, the EM configuration and a digest of the
estimation code. A lock file per entry makes a second process that needs the
same estimate wait for the first.

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
* **Bounded, announced lock waits.** A wait is announced once it has lasted
  :data:`LOCK_NOTE_S`. A lock is taken over, with a one-line note, when its
  owner is a dead process on this host, a live process on this host that did
  not create it (a reused process id), or nobody refreshed it for
  :data:`LOCK_STALE_S` (its owner refreshes it every :data:`LOCK_BEAT_S`); an
  empty or unparsable lock file after :data:`LOCK_GRACE_S`. A run waits at
  most :data:`LOCK_WAIT_S` for a live, refreshing owner, then computes the estimate itself.
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
import secrets
import socket
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import __version__
from ..method import correlation as _correlation_module
from ..method import covariance as _covariance_module
from ..method import em as _em_module
from ..method import scaling as _scaling_module
from ..method.correlation import Correlation

__all__ = ["CACHE_ENV", "LOCK_BEAT_S", "LOCK_GRACE_S", "LOCK_STALE_S", "LOCK_WAIT_S", "CacheWarning", "active_root",
           "cache_key", "cache_load", "cache_lock", "cache_root", "cache_store", "cached_correlation",
           "correlation_cache", "disk_cache_path", "lock_heartbeat"]

CACHE_ENV = "BENCHSEL_CACHE_DIR"

LOCK_WAIT_S = 900.0  # longest wait for a live owner that keeps its lock fresh (then compute here too)
LOCK_BEAT_S = 30.0  # a computing process touches its lock this often (other machines see it alive)
LOCK_STALE_S = 4 * LOCK_BEAT_S  # a lock nobody touched for this long is taken over
LOCK_GRACE_S = 5.0  # an empty or unparsable lock file unchanged for this long is taken over
LOCK_NOTE_S = 1.0  # a wait is announced once it has lasted this long (shorter waits stay quiet)
_POLL_MAX_S = 0.5  # longest pause between two looks at a held lock

#: the entry format; part of the key, so entries of another format are never read
_FORMAT = "benchsel-cache-2"
#: the digest trailer that ends every entry: magic, the key (64 hex), the SHA-256 of (magic, key, array file)
_MAGIC = b"\nBENCHSEL-CACHE-2 "
_TRAILER_LEN = len(_MAGIC) + 64 + 1 + 64 + 1


class CacheWarning(UserWarning):
    """A one-line report of the disk cache: a corrupt entry, a failed write, a lock wait or take-over."""


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
    h = hashlib.sha256()
    h.update(repr((_FORMAT, X.shape, str(X.dtype), correlation.estimator, correlation.config,
                   _code_fingerprint())).encode())
    h.update(X.tobytes())
    return h.hexdigest()


def disk_cache_path(X: np.ndarray, correlation: Correlation) -> Path | None:
    """``<root>/corr-<first 32 hex digits of cache_key(X, correlation)>.npy``, or None when the disk cache is off.

    Its lock is the same path with the suffix ``.lock``. Cost O(M N).
    """
    root = active_root()
    return Path(root) / f"corr-{cache_key(X, correlation)[:32]}.npy" if root else None


def cached_correlation(
    correlation: Correlation, X: np.ndarray, *, standardized: np.ndarray | None = None
) -> np.ndarray:
    """Training correlation of one split (protocol step 4): ``correlation.estimate`` with two caches in front.

    ``X``: the training rows in the pipeline's space; ``standardized``: the
    same rows standardized (read only by the ``"fast"`` estimator, which is
    not cached). Inside :func:`correlation_cache` an estimate is memoized in
    the process; with a cache folder (:func:`active_root`) it is stored there
    and reused by later runs and other processes, bit for bit. Cost: O(M N)
    for the key, plus O(N^2) to read a hit or the estimate on a miss.
    """
    if correlation.estimator == "fast":
        return correlation.estimate(X, standardized, context="cv")
    X = np.ascontiguousarray(X, dtype=float)
    if not _MEMO:
        return _disk_cached(correlation, X)
    memo = _MEMO[-1]
    key = (X.shape, X.tobytes(), correlation.estimator, correlation.config)
    if key not in memo:
        memo[key] = _disk_cached(correlation, X)
    return memo[key].copy()


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
    lock = cache_lock(path)
    try:
        R, why = _read_entry(path, n, key)  # written by the process that held the lock, or still as found
        if R is not None:
            return R
        if why is not None:
            _note(f"cache entry {path} is corrupt ({why}): recomputing")
        with lock_heartbeat(lock):
            R = correlation.estimate(X, X, context="cv")
        try:
            cache_store(path, R, key)
        except OSError as exc:  # a read-only or full cache folder only costs the storage
            _note(f"cache entry {path} could not be written ({_describe(exc)}): the estimate is used but not stored")
        return R
    finally:
        if lock is not None:
            _release(lock)


def _describe(exc: BaseException) -> str:
    """``exc`` in a few words on one line (its class and message, without the file name)."""
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"{type(exc).__name__}: {' '.join(text.split())}" if text else type(exc).__name__


def _seconds(s: float) -> str:
    """A duration for messages: whole seconds from 10 s, one decimal below."""
    return f"{s:.0f}" if s >= 10 else f"{s:.1f}"


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
        tmp = None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


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
    expected = key if key is not None else Path(path).stem.removeprefix("corr-")
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


#: token of each lock this process holds (str path -> token), so that it removes only its own locks
_HELD: dict[str, str] = {}


def _process_state(pid: int) -> tuple[str, str]:
    """State letter and start time (clock ticks since boot) of process ``pid`` from Linux ``/proc``; "-" where unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], fields[19]
    except (OSError, IndexError, ValueError):
        return "-", "-"


@dataclass(frozen=True)
class _LockView:
    """One look at a lock file: its owner line (parsed where it can be) and its modification time."""

    text: str
    mtime: float
    signature: tuple
    host: str | None = None
    pid: int | None = None
    start: str | None = None
    created: float | None = None
    token: str | None = None
    entry: str | None = None
    unreadable: str | None = None

    @property
    def holder(self) -> str:
        """``HOST PID since HH:MM:SS`` (the creation time, else the last touch) for messages."""
        who = f"{self.host} {self.pid}" if self.host is not None else "an unknown owner"
        t = self.created if self.created is not None else self.mtime
        return f"{who} since {time.strftime('%H:%M:%S', time.localtime(t))}" if t else who


def _look(lock: Path) -> _LockView | None:
    """Read ``lock`` (None when it is gone). Accepts this cache's owner line and the older ``HOST PID``."""
    try:
        st = lock.stat()
        raw = lock.read_bytes()[:4096]
    except FileNotFoundError:
        return None
    except OSError as exc:
        return _LockView(text="", mtime=0.0, signature=("unreadable", _describe(exc)), unreadable=_describe(exc))
    text = raw.decode("utf-8", "replace")
    signature = (st.st_ino, st.st_mtime_ns, st.st_size, raw)
    fields = text.split()
    if len(fields) == 6 and fields[1].isdigit():
        pid = int(fields[1])
        with suppress(ValueError):  # a creation time that is not a number: not an owner line
            return _LockView(text, st.st_mtime, signature, fields[0], pid, fields[2], float(fields[3]), *fields[4:])
    if len(fields) == 2 and fields[1].isdigit():
        return _LockView(text, st.st_mtime, signature, fields[0], int(fields[1]))
    return _LockView(text, st.st_mtime, signature)


def _stale_reason(view: _LockView, lock: Path, entry: str, idle: float) -> str | None:
    """Why ``lock`` of ``entry``, seen as ``view`` and unchanged for ``idle`` s, no longer guards a computation."""
    if view.host is None:
        if idle < LOCK_GRACE_S:
            return None
        if view.unreadable is not None:
            return f"the lock file is unreadable ({view.unreadable})"
        if not view.text.strip():
            return "the lock file is empty"
        return f"the lock file is not a benchsel lock ({' '.join(view.text.split())[:40]!r})"
    if view.entry is not None and view.entry != entry:
        return f"it names another entry ({view.entry})"
    if view.host == socket.gethostname():
        if view.pid == os.getpid():
            if view.token is None or _HELD.get(str(lock)) != view.token:
                return "it names this process, which is not computing it"
        else:
            try:
                os.kill(view.pid, 0)
            except (ProcessLookupError, OverflowError):
                return f"process {view.pid} is no longer running"
            except OSError:  # alive under another user
                pass
            state, start = _process_state(view.pid)
            if state in ("Z", "X"):  # killed, not yet reaped by its parent
                return f"process {view.pid} is no longer running"
            if view.start not in (None, "-") and start not in ("-", view.start):
                return f"process {view.pid} on this host did not create it (the process id was reused)"
    if idle >= LOCK_STALE_S:
        return f"no heartbeat for {_seconds(idle)} s"
    return None


def _take_over(lock: Path, view: _LockView) -> bool | None:
    """Remove ``lock`` if it is still as seen in ``view``: True; None: it changed or went; False: cannot remove it."""
    again = _look(lock)
    if again is None or again.signature != view.signature:
        return None
    try:
        lock.unlink()
    except FileNotFoundError:
        return None
    except OSError:
        return False
    return True


def cache_lock(path: Path) -> Path | None:
    """Claim the computation of ``path`` across processes and machines sharing the cache folder.

    Returns the lock file once this process holds it (the caller then reads
    ``path`` again, and computes it if still absent), or None when no lock
    can be had: the folder is not writable, or a live owner kept its lock
    fresh for :data:`LOCK_WAIT_S` (the caller then computes without one).

    The lock, created with ``O_EXCL``, holds one line: host, process id and
    start time, creation time, a random token and the entry's name. Its owner
    touches it every :data:`LOCK_BEAT_S` (:func:`lock_heartbeat`) and removes
    it when done, if the token is still its own. A held lock is waited for
    and taken over as the module docstring says (also one that names another
    entry, or this process without the token); hosts sharing the folder are
    assumed to agree on the time to well within :data:`LOCK_STALE_S`. Two
    processes that take over the same stale lock at once may both compute
    (identical bytes, renamed atomically). Cost: one ``stat`` and read of the
    lock per poll (every 0.05 s at first, at most every 0.5 s).
    """
    path = Path(path)
    lock = path.with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    token = secrets.token_hex(8)
    t0 = time.monotonic()
    announced = False
    seen, seen_at = None, t0
    pause = 0.05
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            pass
        except OSError:  # cannot create locks here (a read-only folder): compute without one
            return None
        else:
            try:
                with os.fdopen(fd, "w") as fh:
                    fh.write(f"{socket.gethostname()} {os.getpid()} {_process_state(os.getpid())[1]} "
                             f"{time.time():.3f} {token} {path.name}\n")
            except OSError:
                lock.unlink(missing_ok=True)
                return None
            _HELD[str(lock)] = token
            return lock
        view = _look(lock)
        if view is None:
            continue  # released meanwhile: try again at once
        now = time.monotonic()
        if view.signature != seen:
            seen, seen_at = view.signature, now
        idle = max(now - seen_at, time.time() - view.mtime if view.mtime else 0.0)
        reason = _stale_reason(view, lock, path.name, idle)
        if reason is not None:
            removed = _take_over(lock, view)
            if removed is False:  # a stale lock this process may not remove: compute without one
                _note(f"cannot take over stale cache lock {lock} held by {view.holder} ({reason}): "
                      "computing the estimate without a lock")
                return None
            if removed:
                _note(f"taking over cache lock {lock} held by {view.holder}: {reason}")
            continue
        if now - t0 >= LOCK_WAIT_S:
            _note(f"gave up waiting for {lock} held by {view.holder} after {_seconds(LOCK_WAIT_S)} s: "
                  "computing the estimate here too")
            return None
        if not announced and now - t0 >= LOCK_NOTE_S:
            _note(f"waiting for {lock} held by {view.holder} (taken over after {_seconds(LOCK_STALE_S)} s "
                  f"without a heartbeat; at most {_seconds(LOCK_WAIT_S)} s in all)")
            announced = True
        time.sleep(pause)
        pause = min(_POLL_MAX_S, pause * 1.5)


def _owns(lock: Path, token: str) -> bool:
    """Whether ``lock`` still carries ``token`` (False when it is gone, unreadable or another owner's)."""
    view = _look(lock)
    return view is not None and view.token == token


def _release(lock: Path) -> None:
    """Remove ``lock`` if this process still owns it (a lock taken over by another process stays)."""
    token = _HELD.pop(str(lock), None)
    if token is None or _owns(lock, token):
        lock.unlink(missing_ok=True)


@contextmanager
def lock_heartbeat(lock: Path | None) -> Iterator[None]:
    """Touch ``lock`` every :data:`LOCK_BEAT_S` seconds inside the block, while it carries this process's token.

    ``None``: no-op.
    """
    if lock is None:
        yield
        return

    token = _HELD.get(str(lock))
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(LOCK_BEAT_S):
            if token is not None and not _owns(lock, token):
                return
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
    """Memoize the training correlations of :func:`~benchsel_lib.protocol.cv.cross_validate` inside the block.

    Keyed by the training matrix's bytes, the estimator and the EM
    configuration, so runs on the same splits pay for EM once, with identical
    results. Re-entrant (an inner block uses the outer cache). This process
    only; across processes the disk cache shares estimates.

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
