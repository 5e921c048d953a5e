"""Run a grid of independent cells on joblib: local processes or a Dask cluster.

A :class:`Cell` names a picklable function and its arguments (one
cross-validation split of one matrix under one configuration, ...);
:func:`run_sweep` runs a list of them with :class:`joblib.Parallel` and
returns the results in the order of the list, whatever the backend:

* ``n_jobs=1`` (or no parallel configuration): serially, in this process;
* ``n_jobs=N``: ``N`` loky worker processes, each with one BLAS thread (so
  that several processes do not oversubscribe the cores);
* inside ``with joblib.parallel_config(backend="dask"):`` with a connected
  :class:`dask.distributed.Client` (or :func:`dask_backend`): one task per
  cell on the Dask cluster, every worker used whatever ``n_jobs`` says.

A cell's function must derive every random stream from its arguments, never
from the worker; cells are submitted largest ``cost`` first (:func:`run_sweep`).

Failures end the sweep with one :class:`SweepError` whose message is one
line (never a partial result): a cell that raises is named (the error is
chained to the original); a worker that dies, or a Dask scheduler that stops
or becomes unreachable, is reported with the cells whose results had not
reached this process (``3 of 30 cell(s) did not finish: ...``).

Warnings that a cell raises in a worker process travel back with its result
and are raised again in the caller, under its filters, each (text, place)
once per sweep: as if the cells had run here.
"""
from __future__ import annotations

import asyncio
import logging
import re
import signal
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing, contextmanager, nullcontext, suppress
from dataclasses import dataclass, field, replace
from typing import Any

import joblib
import numpy as np
from joblib.externals.loky.process_executor import TerminatedWorkerError
from joblib.parallel import get_active_backend
from threadpoolctl import threadpool_limits

from .._progress import progress as _progress

__all__ = ["Cell", "SweepError", "check_address", "dask_backend", "local_cluster", "run_sweep"]


@dataclass(frozen=True)
class Cell:
    """One independent unit of work of a sweep.

    Attributes
    ----------
    label : str
        Name used in error messages (e.g. ``"cv MTEB holdout=0.1 fold=3"``).
    fn, args, kwargs
        A module-level (picklable) function; the cell runs ``fn(*args, **kwargs)``.
    cost : float
        Relative cost; larger cells are submitted first (never changes the results).
    """

    label: str
    fn: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    cost: float = 1.0


class SweepError(RuntimeError):
    """A cell of a sweep failed, a worker died or the Dask scheduler was lost; the message names the cell(s)."""


def _run_cell_args(label: str, fn: Callable[..., Any], kwargs: dict[str, Any], *args: Any) -> Any:
    """Run one cell; a failure is re-raised naming the cell (``args`` at top level: Dask resolves their futures)."""
    try:
        with threadpool_limits(limits=1, user_api="blas"):  # small matrices: one BLAS thread per cell is fastest
            return fn(*args, **kwargs)
    except Exception as exc:  # re-raised with the cell's name, chained
        raise SweepError(f"cell {label!r} failed: {type(exc).__name__}: {exc}") from exc


#: a warning raised in a worker, as it travels back: (category, message, filename, line number)
_Said = tuple[type[Warning], str, str, int]


def _run_cell_reporting(number: int, label: str, fn: Callable[..., Any], kwargs: dict[str, Any],
                        *args: Any) -> tuple[int, Any, list[_Said]]:
    """Run cell ``number`` in a worker: ``(number, result, warnings)``, the warnings raised again by the caller."""
    with warnings.catch_warnings(record=True) as caught:
        value = _run_cell_args(label, fn, kwargs, *args)
    return number, value, [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def _ignore_sigint() -> None:
    """Initializer of the loky workers: SIGINT and SIGTERM (sent to the process group) are the parent's to handle.

    Else a worker prints its own ``KeyboardInterrupt`` traceback, or leaves
    its semaphores to be reported as leaked; joblib kills the workers.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def check_n_jobs(n_jobs: object) -> int | None:
    """Validate a number of workers: a positive integer, or None (as the active joblib configuration says). O(1).

    Raises
    ------
    ValueError
        ``n_jobs`` is not None and not an integer >= 1 (booleans are refused).
    """
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer (or None: as joblib.parallel_config says), got {n_jobs!r}")
    return int(n_jobs)


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (worker-death messages run over several lines)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _unfinished(cells: Sequence[Cell], order: Sequence[int], arrived: Sequence[bool]) -> str:
    """``"k of n cells did not finish: 'a', 'b' and 3 more"``, in the order of submission (running ones first)."""
    pending = [cells[i].label for i in order if not arrived[i]]
    shown = ", ".join(repr(p) for p in pending[:5]) + (f" and {len(pending) - 5} more" if len(pending) > 5 else "")
    return f"{len(pending)} of {len(cells)} cell(s) did not finish: {shown or 'none'}"


def run_sweep(cells: Sequence[Cell], *, n_jobs: int | None = None, progress: bool | None = False,
              desc: str = "cells") -> list[Any]:
    """Run independent cells with joblib and return their results in the order of ``cells``.

    Parameters
    ----------
    cells : sequence of Cell
        The grid; each function picklable (module level) and deterministic given its arguments.
    n_jobs : int or None
        ``1``: serially in this process; ``N > 1``: ``N`` workers (at most one
        per cell) of the active joblib backend; ``None``: as the active
        ``joblib.parallel_config`` says (1 when nothing is configured; Dask: every worker).
    progress : bool or None
        Progress bar over finished cells (None: only in a terminal or notebook).
    desc : str
        Label of the progress bar.

    Returns
    -------
    list
        ``[cell.fn(*cell.args, **cell.kwargs) for cell in cells]``, bit for bit
        whatever the backend and ``n_jobs``.

    Raises
    ------
    ValueError
        ``n_jobs`` is not a positive integer or None, or a cell is not a :class:`Cell`.
    SweepError
        A cell raised (the ``__cause__``), a worker died or the Dask scheduler was lost.

    Notes
    -----
    Cells are submitted in decreasing ``cost`` (ties in list order): with
    ``W`` workers the wall time is close to ``max(sum(cost) / W, max(cost))``.
    Overhead O(len(cells)); arguments are pickled once per cell (on Dask,
    arrays over 64 kB are sent to every worker once per sweep).
    """
    cells = list(cells)
    for c in cells:
        if not isinstance(c, Cell):
            raise ValueError(f"run_sweep takes Cell objects, got {type(c).__name__}")
    n = check_n_jobs(n_jobs)
    if not cells:
        return []
    backend, cfg_jobs = get_active_backend()
    order = sorted(range(len(cells)), key=lambda i: -float(cells[i].cost))
    results: list[Any] = [None] * len(cells)
    arrived = [False] * len(cells)  # the cells whose results reached this process, for the failure messages
    client = getattr(backend, "client", None)
    loky = type(backend).__name__ == "LokyBackend"
    if n is None:
        n = (1 if cfg_jobs is None else cfg_jobs) if loky else -1
    n = min(n, len(cells))  # never more workers than cells: n_jobs=10_000 must not start 10,000 processes
    if loky and (n == 1 or len(cells) == 1):  # serially here: no pickling, exceptions keep their traceback
        for i in _progress(order, total=len(cells), desc=desc, enabled=progress):
            results[i] = _run_cell_args(cells[i].label, cells[i].fn, cells[i].kwargs, *cells[i].args)
        return results
    stream = (_DaskSweep(client, cells, order, arrived).arrivals() if client is not None
              else _pool_arrivals(cells, order, arrived, n_jobs=n, loky=loky))
    registry: dict[Any, Any] = {}  # the warnings of the workers, raised again here: each (text, place) once
    with closing(stream):
        for i, value, said in _progress(stream, total=len(cells), desc=desc, enabled=progress):
            results[i] = value
            arrived[i] = True
            for category, message, filename, lineno in said:
                warnings.warn_explicit(message, category, filename, lineno, registry=registry)
    return results


def _pool_arrivals(cells: list[Cell], order: list[int], arrived: list[bool], *, n_jobs: int,
                   loky: bool) -> Iterator[tuple[int, Any, list[_Said]]]:
    """``(index, result, warnings)`` of each cell as a joblib worker finishes it; a dead worker raises SweepError."""
    jobs = (joblib.delayed(_run_cell_reporting)(i, cells[i].label, cells[i].fn, cells[i].kwargs, *cells[i].args)
            for i in order)
    try:
        # Parallel takes the active configuration when it is made, so it is made inside
        with (joblib.parallel_config(backend="loky", inner_max_num_threads=1, initializer=_ignore_sigint)
              if loky else nullcontext()):
            yield from joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs)
    except (BrokenProcessPool, TerminatedWorkerError) as exc:
        raise SweepError(f"a worker died while running the sweep ({type(exc).__name__}: {_first_line(exc)}); "
                         f"{_unfinished(cells, order, arrived)}") from exc


class _DaskSweep:
    """One sweep on a Dask cluster (:meth:`arrivals`): one task per cell, prioritized by its rank in ``order``."""

    def __init__(self, client: Any, cells: list[Cell], order: list[int], arrived: list[bool]) -> None:
        self.client, self.cells, self.order, self.arrived = client, cells, order, arrived
        address = getattr(getattr(client, "scheduler", None), "address", None)
        self.address = str(address) if address else "(unknown address)"
        self.labels: dict[Any, str] = {}  # task key -> label of its cell
        if client.status != "running":
            raise self.error(f"the Dask client is not connected to the scheduler at {self.address} (its status is "
                             f"{client.status!r})")

    def error(self, text: str, cause: BaseException | None = None) -> SweepError:
        """The sweep's one-line error: ``text``, then the cells whose results did not arrive; chained to ``cause``."""
        error = SweepError(f"{text}; {_unfinished(self.cells, self.order, self.arrived)}")
        error.__cause__ = cause
        return error

    def lost(self, exc: BaseException | None) -> SweepError:
        """The connection to the scheduler was lost (``exc``: what said so, if anything)."""
        # a cancellation says only that the client cancelled its tasks when it lost the scheduler
        named = exc is not None and not isinstance(exc, asyncio.CancelledError) and str(exc).strip()
        why = f" ({type(exc).__name__}: {_first_line(exc)})" if named else ""
        return self.error(f"lost the connection to the Dask scheduler at {self.address} while running the sweep "
                          f"(the scheduler stopped or cannot be reached){why}")

    def killed(self, exc: BaseException, key: Any) -> SweepError:
        """Every worker that ran the task ``key`` died (the error chained to ``exc``)."""
        label = self.labels.get(key, "(unknown)")
        last = getattr(getattr(exc, "last_worker", None), "address", None)
        where = f", the last at {last}" if last else ""
        tries = getattr(exc, "allowed_failures", 0) + 1
        return self.error(f"a Dask worker died while running cell {label!r} (KilledWorker: it was tried on "
                          f"{tries} worker(s){where}, and each died)", exc)

    def gather(self, finished: list[Any]) -> list[tuple[int, Any, list[_Said]]]:
        """The ``(index, result, warnings)`` of the ``finished`` futures."""
        from distributed import KilledWorker

        if not finished:
            return []
        try:
            return self.client.gather(finished, errors="raise")
        except KilledWorker as exc:  # a result was lost with its worker, and its recomputation failed
            raise self.killed(exc, getattr(exc, "task", None)) from exc

    def failure(self, future: Any) -> SweepError:
        """The error of a future that did not finish."""
        from distributed import KilledWorker

        label = self.labels[future.key]
        if future.status != "error":  # cancelled: the scheduler was lost, or someone cancelled the task
            if self.client.status != "running":
                return self.lost(None)
            return self.error(f"the task of cell {label!r} was cancelled on the Dask cluster")
        exc = future.exception()
        if isinstance(exc, SweepError):  # the cell raised: its message names it
            return exc
        if isinstance(exc, KilledWorker):
            return self.killed(exc, future.key)
        # e.g. the cell could not be unpickled on the worker
        return self.error(f"cell {label!r} failed on the Dask cluster: {type(exc).__name__}: {_first_line(exc)}", exc)

    def arrivals(self) -> Iterator[tuple[int, Any, list[_Said]]]:
        """Submit every cell; ``(index, result, warnings)`` of each as it arrives; the first failure raises."""
        from distributed import as_completed

        client, cells, order = self.client, self.cells, self.order
        pending = as_completed([], loop=client.loop)
        try:
            sent = _broadcast_arrays(client, cells)
            submitted = [client.submit(_run_cell_reporting, i, sent[i].label, sent[i].fn, sent[i].kwargs,
                                       *sent[i].args, pure=False, priority=len(order) - rank)
                         for rank, i in enumerate(order)]
            self.labels.update((f.key, cells[i].label) for f, i in zip(submitted, order))
            pending.update(submitted)
            del submitted, sent  # the queue holds the only references: clearing it releases the tasks
            for batch in pending.batches():
                failed = [f for f in batch if f.status != "finished"]
                yield from self.gather([f for f in batch if f.status == "finished"])
                if failed:
                    with suppress(Exception):  # count the results that are ready too; the sweep fails anyway
                        yield from self.gather([f for f in pending.next_batch(block=False) if f.status == "finished"])
                    raise self.failure(failed[0])
        except (OSError, TimeoutError, asyncio.CancelledError) as exc:  # the connection failed in a scatter or gather
            if client.status != "running" or isinstance(exc, asyncio.CancelledError):
                raise self.lost(exc) from exc
            raise self.error(f"the Dask cluster at {self.address} failed while running the sweep "
                             f"({type(exc).__name__}: {_first_line(exc)})") from exc
        finally:
            pending.clear()  # release the tasks still queued on the cluster


def _broadcast_arrays(client: Any, cells: list[Cell]) -> list[Cell]:
    """The cells with their large arrays replaced by futures of copies broadcast to every Dask worker once."""
    big = {id(a): a for c in cells for a in c.args if isinstance(a, np.ndarray) and a.nbytes > (1 << 16)}
    if not big:
        return cells
    futures = dict(zip(big, client.scatter(list(big.values()), broadcast=True, hash=False)))
    return [replace(c, args=tuple(futures.get(id(a), a) for a in c.args)) for c in cells]


#: the schemes a scheduler address may have (those of Dask's connection backends but its websockets)
SCHEMES = ("tcp", "tls", "ucx", "inproc")
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]")


def check_address(address: object) -> str:
    """Validate a Dask scheduler address without connecting to it. O(len(address)).

    Accepted: ``SCHEME://HOST:PORT`` with ``SCHEME`` one of :data:`SCHEMES`
    but ``inproc`` (``HOST`` a name, IPv4, or IPv6 in brackets; ``PORT`` in
    1..65535), ``HOST:PORT`` (Dask's default scheme), and ``inproc://IP/PID/N``.

    Returns
    -------
    str
        The address, without surrounding spaces.

    Raises
    ------
    ValueError
        Anything else; the message, one line, names the address and what is wrong.
    """
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"scheduler address must be a non-empty string like 'tcp://host:8786', got {address!r}")
    text = address.strip()

    def bad(why: str, expected: str = "expected tcp://HOST:PORT (or tls://, ucx://, inproc://)") -> ValueError:
        return ValueError(f"scheduler address {address!r} is not a Dask scheduler address: {why}; {expected}")

    if any(ch.isspace() for ch in text):
        raise bad("it contains spaces")
    scheme, sep, location = text.partition("://")
    if not sep:
        scheme, location = "", text
    elif scheme in ("http", "https"):
        raise bad(f"{scheme}:// is the protocol of Dask's dashboard",
                  "the scheduler listens on tcp://HOST:PORT (port 8786 by default)")
    elif scheme not in SCHEMES:
        raise bad(f"unknown scheme {scheme + '://'!r}")
    if scheme == "inproc":
        parts = location.split("/")
        if len(parts) != 3 or not all(parts):
            raise bad("an in-process address is inproc://IP/PID/N")
        return text
    host, colon, port = location.rpartition(":")
    if not colon or not port:
        raise bad("no port number (HOST:PORT)")
    if not _HOST.fullmatch(host):
        raise bad(f"{host!r} is not a host name or IP address" if host else "no host")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise bad(f"port {port!r} is not a number from 1 to 65535")
    return text


@contextmanager
def _quiet_logs(name: str) -> Iterator[None]:
    """Silence the logger ``name`` and its children (but for critical records) inside the block."""
    names = [name] + [n for n in list(logging.root.manager.loggerDict) if n.startswith(name + ".")]
    levels = {lg: lg.level for lg in map(logging.getLogger, names)}
    for lg in levels:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in levels.items():
            lg.setLevel(level)


def _close_client(client: Any, timeout: float) -> None:
    """Close a Dask client without raising, also one that failed to connect or lost its scheduler (logs silenced)."""
    lost = getattr(client, "status", None) != "running"
    with _quiet_logs("distributed") if lost else nullcontext(), suppress(Exception):
        client.close(timeout=timeout)
    # A client that failed to connect is marked closed without stopping the thread of its event
    # loop, and close() then leaves it running: stop it here (a client without one raises, suppressed).
    with suppress(Exception):
        client._loop_runner.stop()


@contextmanager
def dask_backend(address: str, *, timeout: float = 10.0) -> Iterator[Any]:
    """Connect to a Dask scheduler and run sweeps on it inside the ``with`` block.

    ``Client(address)`` plus ``joblib.parallel_config(backend="dask")``; the
    client is closed at the end (the cluster keeps running).

    Parameters
    ----------
    address : str
        Scheduler address, e.g. ``"tcp://10.0.0.5:8786"``, checked by :func:`check_address`.
    timeout : float
        Seconds to wait for the scheduler.

    Yields
    ------
    dask.distributed.Client

    Raises
    ------
    ImportError
        ``dask.distributed`` is not installed (``pip install "benchsel[cluster]"``).
    ValueError
        A bad ``address`` (no connection is tried) or ``timeout``.
    ConnectionError
        No scheduler answered within ``timeout``, or the connection failed.

    Notes
    -----
    A scheduler lost inside the block makes the sweeps raise :class:`SweepError`.
    """
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError("running on a Dask cluster needs dask.distributed: pip install 'benchsel[cluster]'") from exc

    address = check_address(address)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, np.integer, np.floating)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    timeout = float(timeout)
    # Made in two steps so that a client whose connection fails can still be closed here: left to
    # the garbage collector, it would try to close itself at exit, and fail with a traceback.
    client = Client.__new__(Client)
    try:
        client.__init__(address, timeout=f"{timeout}s", set_as_default=False)
    except BaseException as exc:
        _close_client(client, timeout)
        if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit: as they are
            raise
        raise ConnectionError(
            f"no Dask scheduler answered at {address!r} within {timeout:g} s ({_first_line(exc)})"
            if isinstance(exc, (OSError, TimeoutError)) else
            f"cannot connect to the Dask scheduler at {address!r}: {type(exc).__name__}: {_first_line(exc)}"
        ) from exc
    try:
        with joblib.parallel_config(backend="dask", client=client):
            yield client
    finally:
        _close_client(client, timeout)


#: Dask's default for worker processes: it pins glibc's mmap threshold, so every large NumPy temporary
#: of the EM is mapped and zeroed afresh (``python benchmarks/bench_scale.py --parts dask``: 1.7x slower)
_TRIM_KEY = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"


def local_cluster(*, n_workers: int = 2, **kwargs: Any) -> Any:
    """A Dask ``LocalCluster`` set up for sweeps on this machine.

    ``n_workers`` single-threaded worker processes on the loopback interface
    (dashboard on a free loopback port), without Dask's
    ``MALLOC_TRIM_THRESHOLD_`` (:data:`_TRIM_KEY`; set it to ``null`` on a
    cluster of your own). Pass its ``scheduler_address`` to :func:`dask_backend`.

    Raises
    ------
    ImportError
        ``dask.distributed`` is not installed (``pip install 'benchsel[cluster]'``).
    ValueError
        ``n_workers`` is not None and not a positive integer.

    Notes
    -----
    Complexity: O(n_workers) process start-ups, before it returns.
    """
    try:
        import dask
        from distributed import LocalCluster
    except ImportError as exc:
        raise ImportError("a Dask cluster needs dask.distributed: pip install 'benchsel[cluster]'") from exc
    n = check_n_jobs(n_workers)
    opts = {"threads_per_worker": 1, "processes": True, "host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}
    with dask.config.set({_TRIM_KEY: None}):
        return LocalCluster(n_workers=n, **{**opts, **kwargs})
