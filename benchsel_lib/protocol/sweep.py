"""Run a grid of independent cells on joblib: local processes or a Dask cluster.

Every experiment of the book is a grid of independent *cells* (one
cross-validation split of one matrix under one configuration, ...). A
:class:`Cell` names a picklable function and its arguments; :func:`run_sweep`
runs a list of them with :class:`joblib.Parallel` and returns the results in
the order of the list, whatever the backend and the number of workers:

* ``n_jobs=1`` (or no parallel configuration): serially, in this process;
* ``n_jobs=N``: ``N`` loky worker processes, each with one BLAS thread (the
  matrices are small, and several processes that each run a multi-threaded
  BLAS oversubscribe the cores);
* inside ``with joblib.parallel_config(backend="dask"):`` with a
  :class:`dask.distributed.Client` connected (or :func:`dask_backend`, which
  does both from a scheduler address): on the Dask cluster, one task per
  cell.

Results never depend on the backend: a cell's function must derive every
random stream from its arguments (the CV protocol keys them by seed, fold and
holdout), never from the worker. Cells are submitted largest first (their
``cost``), so a long cell does not start last and leave the other workers
idle; results are put back in the order of the list.

A cell that raises makes the sweep raise :class:`SweepError` naming the cell
(its ``label``), chained to the original exception; a worker that dies (killed,
out of memory) makes it raise :class:`SweepError` naming the cells that had not
finished. A sweep never returns a partial result.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import joblib
import numpy as np
from joblib.externals.loky.process_executor import TerminatedWorkerError
from joblib.parallel import get_active_backend
from threadpoolctl import threadpool_limits

from .._progress import progress as _progress

__all__ = ["Cell", "SweepError", "run_sweep", "dask_backend", "local_cluster"]


@dataclass(frozen=True)
class Cell:
    """One independent unit of work of a sweep.

    Attributes
    ----------
    label : str
        Human-readable name used in error messages (e.g. ``"cv MTEB holdout=0.1 fold=3"``).
    fn : callable
        A module-level (picklable) function; the cell runs ``fn(*args, **kwargs)``.
    args : tuple
    kwargs : dict
    cost : float
        Relative cost estimate; larger cells are submitted first. Only the
        order of submission depends on it, never the results.
    """

    label: str
    fn: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    cost: float = 1.0


class SweepError(RuntimeError):
    """A cell of a sweep failed, or a worker died; the message names the cell(s)."""


def _run_cell_args(label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one cell (in a worker); a failure is re-raised naming the cell.

    The cell's arguments are passed at top level so that joblib's Dask backend
    scatters large ones (the score matrix) to the workers once per sweep, not
    once per cell.
    """
    try:
        with threadpool_limits(limits=1, user_api="blas"):  # small matrices: one BLAS thread per cell is fastest
            return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 -- re-raised with the cell's name, chained
        raise SweepError(f"cell {label!r} failed: {type(exc).__name__}: {exc}") from exc


def _run_cell(cell: Cell) -> Any:
    return _run_cell_args(cell.label, cell.fn, *cell.args, **cell.kwargs)


def check_n_jobs(n_jobs: object) -> int | None:

    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer (or None: as joblib.parallel_config says), got {n_jobs!r}")
    return int(n_jobs)


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (worker-death messages run over several lines)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _worker_death_types() -> tuple[type[BaseException], ...]:
    """Exception types that mean a worker died rather than a cell raised."""
    types: list[type[BaseException]] = [BrokenProcessPool, TerminatedWorkerError]
    try:
        from distributed.scheduler import KilledWorker

        types.append(KilledWorker)
    except ImportError:
        pass
    return tuple(types)


def run_sweep(
    cells: Sequence[Cell],
    *,
    n_jobs: int | None = None,
    progress: bool | None = False,
    desc: str = "cells",
) -> list[Any]:
    """Run independent cells with joblib and return their results in the order of ``cells``.

    Parameters
    ----------
    cells : sequence of Cell
        The grid. Each cell's function must be picklable (module level) when
        run in other processes, and deterministic given its arguments.
    n_jobs : int or None
        ``1``: serially in this process. ``N > 1``: ``N`` workers of the
        active joblib backend (with the default loky backend: processes with
        one BLAS thread each; other backends as configured). ``None``: as the active
        ``joblib.parallel_config`` says (its ``n_jobs``; 1 when nothing is
        configured; a Dask backend uses every worker of the cluster).
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
        ``n_jobs`` is not a positive integer or None; an element of ``cells``
        is not a :class:`Cell`.
    SweepError
        A cell raised (the message names it; the original exception is the
        ``__cause__``), or a worker died (the message names the cells that had
        not finished).

    Notes
    -----
    Cells are submitted in decreasing ``cost`` (ties in list order): with
    ``W`` workers the wall time is close to ``max(sum(cost) / W, max(cost))``
    instead of ending on one long cell started last. Scheduling overhead is
    O(len(cells)); arguments are pickled once per cell (loky memory-maps
    arrays over 1 MB).
    """
    cells = list(cells)
    for c in cells:
        if not isinstance(c, Cell):
            raise ValueError(f"run_sweep takes Cell objects, got {type(c).__name__}")
    n = check_n_jobs(n_jobs)
    if not cells:
        return []
    backend, cfg_jobs = get_active_backend()
    loky = type(backend).__name__ == "LokyBackend"
    if n is None:
        n = cfg_jobs if loky else -1
        if n is None:
            n = 1
    order = sorted(range(len(cells)), key=lambda i: -float(cells[i].cost))
    if loky and (n == 1 or len(cells) == 1):
        # serially in this process (no pickling; exceptions keep their traceback)
        results: list[Any] = [None] * len(cells)
        for i in _progress(order, total=len(cells), desc=desc, enabled=progress):
            results[i] = _run_cell(cells[i])
        return results

    if not loky:
        cells = _broadcast_arrays(backend, cells)

    def gen() -> Iterator[Any]:
        par = joblib.Parallel(n_jobs=n, return_as="generator")
        return par(joblib.delayed(_run_cell_args)(cells[i].label, cells[i].fn, *cells[i].args, **cells[i].kwargs)
                   for i in order)

    done: list[Any] = []
    deaths = _worker_death_types()
    try:
        if loky:
            with joblib.parallel_config(backend="loky", inner_max_num_threads=1):
                it = gen()
                done.extend(_progress(it, total=len(cells), desc=desc, enabled=progress))
        else:
            it = gen()
            done.extend(_progress(it, total=len(cells), desc=desc, enabled=progress))
    except SweepError:
        raise
    except deaths as exc:
        pending = [cells[i].label for i in order[len(done):]]
        shown = ", ".join(repr(p) for p in pending[:5]) + (f" and {len(pending) - 5} more" if len(pending) > 5 else "")
        raise SweepError(
            f"a worker died while running the sweep ({type(exc).__name__}: {_first_line(exc)}); "
            f"{len(pending)} cell(s) had not finished: {shown}"
        ) from exc
    if len(done) != len(cells):  # pragma: no cover - joblib either returns everything or raises
        raise SweepError(f"the sweep returned {len(done)} results for {len(cells)} cells")
    results = [None] * len(cells)
    for i, r in zip(order, done):
        results[i] = r
    return results


def _broadcast_arrays(backend: Any, cells: list[Cell]) -> list[Cell]:
    """On a Dask backend, copy the large arrays of the cells' arguments to every worker once.

    joblib's Dask backend would scatter each large argument to one worker,
    and the scheduler then runs the cells that need it there first, leaving
    other workers idle; a broadcast copy gives every worker the data. Arrays
    are replaced by their futures (resolved on the worker); other backends
    are left alone.
    """
    client = getattr(backend, "client", None)
    if client is None or not hasattr(client, "scatter"):
        return cells

    big: dict[int, np.ndarray] = {}
    for c in cells:
        for a in c.args:
            if isinstance(a, np.ndarray) and a.nbytes > (1 << 16):
                big.setdefault(id(a), a)
    if not big:
        return cells
    futures = dict(zip(big, client.scatter(list(big.values()), broadcast=True, hash=False)))
    return [replace(c, args=tuple(futures.get(id(a), a) if isinstance(a, np.ndarray) else a for a in c.args))
            for c in cells]


@contextmanager
def dask_backend(address: str, *, timeout: float = 10.0) -> Iterator[Any]:
    """Connect to a Dask scheduler and run sweeps on it inside the ``with`` block.

    ``with dask_backend("tcp://host:8786"): cross_validate(matrix, ...)`` is
    ``Client(address)`` plus ``joblib.parallel_config(backend="dask")``; the
    client is closed at the end (the cluster keeps running).

    Parameters
    ----------
    address : str
        Scheduler address, e.g. ``"tcp://10.0.0.5:8786"``.
    timeout : float
        Seconds to wait for the scheduler.

    Yields
    ------
    dask.distributed.Client

    Raises
    ------
    ImportError
        ``dask.distributed`` is not installed (``pip install "benchsel[cluster]"``).
    ConnectionError
        No scheduler answered at ``address`` within ``timeout``.
    """
    try:
        from distributed import Client
    except ImportError as exc:
        raise ImportError(
            "running on a Dask cluster needs dask.distributed: pip install 'benchsel[cluster]'"
        ) from exc

    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"scheduler address must be a non-empty string like 'tcp://host:8786', got {address!r}")
    try:
        client = Client(address, timeout=f"{float(timeout)}s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ConnectionError(f"no Dask scheduler answered at {address!r} within {timeout:g} s ({exc})") from exc
    try:
        with joblib.parallel_config(backend="dask", client=client):
            yield client
    finally:
        client.close()


#: Dask's default for worker processes; it pins glibc's mmap threshold, so every large NumPy
#: temporary of the EM is mapped and zeroed afresh (the 2000 x 114 CV grid ran 1.4-1.8x slower)
_TRIM_KEY = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"


def local_cluster(n_workers: int = 2, **kwargs: Any) -> Any:
    """A Dask ``LocalCluster`` set up for sweeps on this machine.

    ``n_workers`` worker processes with one thread each (and one BLAS
    thread), listening on the loopback interface only, dashboard on a free
    loopback port, and without Dask's ``MALLOC_TRIM_THRESHOLD_`` for the
    workers, which slowed the EM of a CV grid 1.4-1.8x (on a cluster of your
    own, set ``distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_:
    null`` in the Dask configuration for the same effect). Use it as a
    context manager with :class:`dask.distributed.Client` and
    ``joblib.parallel_config(backend="dask")``, or pass its
    ``scheduler_address`` to :func:`dask_backend`.

    Raises
    ------
    ImportError
        ``dask.distributed`` is not installed (``pip install 'benchsel[cluster]'``).
    """
    try:
        import dask
        from distributed import LocalCluster
    except ImportError as exc:
        raise ImportError("a Dask cluster needs dask.distributed: pip install 'benchsel[cluster]'") from exc
    n = check_n_jobs(n_workers)
    opts = dict(threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0")
    opts.update(kwargs)
    with dask.config.set({_TRIM_KEY: None}):
        return LocalCluster(n_workers=n, **opts)
