"""Faults of distributed sweeps: each ends in one line, and nothing is left behind.

A bad scheduler address is refused before a Dask client is made; a failed
connection closes what it opened (no traceback from a half-made client at
garbage collection or at exit); a worker or a scheduler that dies mid-sweep
raises :class:`SweepError` naming what happened and counting only the cells
whose results did not arrive. Servers started here listen on 127.0.0.1 only
and stop by themselves.
"""
from __future__ import annotations

import gc
import math
import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchsel_lib.cli import main
from benchsel_lib.protocol.sweep import (
    Cell,
    SweepError,
    check_address,
    dask_backend,
    local_cluster,
    run_sweep,
)

ROOT = Path(__file__).resolve().parents[1]

BAD_ADDRESSES = [
    ("not a url", "it contains spaces"),
    ("http://127.0.0.1:8787", "http:// is the protocol of Dask's dashboard"),
    ("https://scheduler.example.org:8786", "https:// is the protocol of Dask's dashboard"),
    ("ws://127.0.0.1:8786", "unknown scheme 'ws://'"),
    ("tcp://127.0.0.1", "no port number"),
    ("127.0.0.1", "no port number"),
    ("tcp://:8786", "no host"),
    ("tcp://127.0.0.1:0", "port '0' is not a number from 1 to 65535"),
    ("tcp://127.0.0.1:8786/", "port '8786/' is not a number"),
    ("tcp://[::1:8786", "'[::1' is not a host name or IP address"),
    ("inproc://scheduler", "an in-process address is inproc://IP/PID/N"),
]


# ---------------------------------------------------------------------- cells run in worker processes
def _touch(path: str, value: float) -> float:
    """A cell that leaves a marker file and returns ``value``."""
    Path(path).write_text("done")
    return value


def _exit_when_done(paths: list[str], delay: float) -> None:
    """A cell that waits for the marker files (at most 60 s), then ``delay`` s, then kills its worker process."""
    deadline = time.monotonic() + 60
    while not all(os.path.exists(p) for p in paths) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(delay)
    os._exit(3)


def _kill_own_process(delay: float) -> None:
    """A cell that kills the process it runs in after ``delay`` s (with a Dask worker thread: the scheduler's)."""
    time.sleep(delay)
    os.kill(os.getpid(), signal.SIGKILL)


# ---------------------------------------------------------------------- helpers
def _csv(tmp_path: Path) -> str:
    rng = np.random.default_rng(7)
    X = 50 + 10 * (rng.normal(size=(30, 2)) @ rng.normal(size=(2, 5)) + 0.4 * rng.normal(size=(30, 5)))
    path = tmp_path / "toy.csv"
    frame = pd.DataFrame(X, index=[f"m{i}" for i in range(30)], columns=[f"b{j}" for j in range(5)])
    frame.rename_axis("model").to_csv(path)
    return str(path)


CLI_CV = ("cv", "--pipelines", "entropy,random", "--holdouts", "0.1", "--folds", "3", "--k-max", "2",
          "--estimator", "pairwise", "--format", "csv")


def _threads() -> set[int]:
    return {t.ident for t in threading.enumerate()}


def _clients() -> list[object]:
    """The live Dask clients; by their type, since ``isinstance`` of a dead weak proxy among the objects raises."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return []
    return [o for o in gc.get_objects() if issubclass(type(o), distributed.Client)]


@pytest.fixture
def unraisable(monkeypatch) -> list[str]:
    """Collects what the interpreter reports as unraisable (e.g. an exception in ``__del__``)."""
    seen: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(f"{u.exc_type.__name__}: {u.exc_value}"))
    return seen


# ---------------------------------------------------------------------- addresses
@pytest.mark.parametrize("address, why", BAD_ADDRESSES)
def test_a_bad_address_is_refused_before_a_client_is_made(monkeypatch, address, why):
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed (the [cluster] extra)")

    class NoClient:
        def __new__(cls, *args, **kwargs):
            raise AssertionError("a Client was made for a bad address")

    monkeypatch.setattr(distributed, "Client", NoClient)
    expected = re.escape(f"scheduler address {address!r} is not a Dask scheduler address: {why}")
    with pytest.raises(ValueError, match=expected) as info, dask_backend(address):
        pass
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "  tls://scheduler.example.org:8786 ",
                                     "ucx://10.0.0.5:13337", "tcp://[::1]:8786", "127.0.0.1:8786",
                                     "inproc://127.0.0.1/4242/1"])
def test_the_addresses_dask_accepts_pass_the_check(address):
    assert check_address(address) == address.strip()


@pytest.mark.parametrize("bad", ["", "   ", None, 8786])
def test_an_address_that_is_not_a_string_is_refused(bad):
    with pytest.raises(ValueError, match="scheduler address must be a non-empty string"):
        check_address(bad)


def test_a_failed_connection_closes_what_it_opened(unraisable):
    """Refused (port 9) and failed inside the client (TLS without certificates): nothing is left open."""
    pytest.importorskip("distributed", reason="dask.distributed is not installed (the [cluster] extra)")
    before = _threads()
    refused = r"^no Dask scheduler answered at 'tcp://127.0.0.1:9' within 1 s"
    with pytest.raises(ConnectionError, match=refused), dask_backend("tcp://127.0.0.1:9", timeout=1):
        pass
    failed = r"^cannot connect to the Dask scheduler at 'tls://127.0.0.1:9': "
    with pytest.raises(ConnectionError, match=failed), dask_backend("tls://127.0.0.1:9", timeout=1):
        pass
    gc.collect()
    assert _threads() <= before  # the event-loop threads of the failed clients have stopped
    assert _clients() == []
    assert unraisable == []


# ---------------------------------------------------------------------- the command line
@pytest.mark.parametrize("address", ["not a url", "http://127.0.0.1:8787"])
def test_cli_bad_scheduler_is_one_line_exit_2_without_a_later_traceback(capfd, unraisable, tmp_path, address):
    pytest.importorskip("distributed", reason="dask.distributed is not installed (the [cluster] extra)")
    code = main([*CLI_CV, "--data", _csv(tmp_path), "--scheduler", address])
    gc.collect()
    out, err = capfd.readouterr()
    assert code == 2 and out == ""
    assert err.startswith(f"benchsel: error: scheduler address {address!r} is not a Dask scheduler address")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert _clients() == [] and unraisable == []


def test_cli_failed_connections_leave_nothing_for_the_exit(tmp_path):
    """A failed connection leaves no half-made client: nothing times out or prints a ``__del__`` traceback at exit."""
    pytest.importorskip("distributed", reason="dask.distributed is not installed (the [cluster] extra)")
    code = textwrap.dedent(f"""
        import sys
        from benchsel_lib.cli import main
        argv = {[*CLI_CV, "--data", _csv(tmp_path)]!r}
        codes = [main(argv + ["--scheduler", a]) for a in ("not a url", "http://127.0.0.1:8787", "tls://127.0.0.1:9")]
        sys.exit(0 if codes == [2, 2, 2] else 1)
    """)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, OPENBLAS_NUM_THREADS="1"), check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 3 and all(line.startswith("benchsel: error: ") for line in lines), proc.stderr
    assert "--scheduler: cannot connect to the Dask scheduler at 'tls://127.0.0.1:9'" in lines[2]
    assert time.monotonic() - start < 15


# ---------------------------------------------------------------------- workers and schedulers that die
def test_a_dying_local_worker_counts_only_the_cells_whose_results_did_not_arrive(tmp_path):
    marks = [str(tmp_path / f"ok{i}") for i in range(3)]
    cells = [Cell("dies", _exit_when_done, (marks, 0.5), cost=10.0)]
    cells += [Cell(f"ok{i}", _touch, (m, float(i))) for i, m in enumerate(marks)]
    with pytest.raises(SweepError) as info:
        run_sweep(cells, n_jobs=2)
    message = str(info.value)
    assert message.startswith("a worker died while running the sweep (TerminatedWorkerError")
    assert message.endswith("; 1 of 4 cell(s) did not finish: 'dies'") and "\n" not in message


def test_a_dask_worker_that_dies_or_a_failing_cell_fails_the_sweep_in_one_line(tmp_path):
    pytest.importorskip("distributed", reason="dask.distributed is not installed (the [cluster] extra)")
    dask = pytest.importorskip("dask", reason="dask is not installed (the [cluster] extra)")

    marks = [str(tmp_path / f"ok{i}") for i in range(3)]
    # the first death of a task's worker fails it (Dask's default retries it on three more workers)
    allowed = {"distributed.scheduler.allowed-failures": 0}
    with dask.config.set(allowed), local_cluster(n_workers=1) as cluster, dask_backend(cluster.scheduler_address):
        # one worker is enough to run on the cluster, not in this process
        assert run_sweep([Cell("pid", os.getpid)]) != [os.getpid()]
        with pytest.raises(SweepError, match=r"^cell 'bad' failed: ValueError: math domain error$"):
            run_sweep([Cell("fine", math.sqrt, (4.0,)), Cell("bad", math.sqrt, (-1.0,))])
        # one thread: the cells run in the order of their cost, the dying one last
        cells = [Cell(f"ok{i}", _touch, (m, float(i)), cost=10.0) for i, m in enumerate(marks)]
        cells.append(Cell("dies", _exit_when_done, (marks, 1.0), cost=1.0))
        with pytest.raises(SweepError) as info:
            run_sweep(cells)
    message = str(info.value)
    assert message.startswith("a Dask worker died while running cell 'dies' (KilledWorker: it was tried on 1 ")
    assert message.endswith("; 1 of 4 cell(s) did not finish: 'dies'") and "\n" not in message


SCHEDULER = """
import sys, time
from benchsel_lib.protocol.sweep import local_cluster
with local_cluster(n_workers=1, processes=False, protocol="tcp") as cluster:  # scheduler and worker in this process
    print(cluster.scheduler_address, flush=True)
    time.sleep(float(sys.argv[1]))  # then stop by itself
"""


def test_a_killed_scheduler_fails_the_sweep_in_one_line(capfd):
    pytest.importorskip("distributed", reason="dask.distributed is not installed (the [cluster] extra)")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", SCHEDULER, "90"], stdout=subprocess.PIPE, text=True, env=env,
                            cwd=ROOT)
    try:
        assert select.select([proc.stdout], [], [], 60)[0], "the scheduler did not start within 60 s"
        address = proc.stdout.readline().strip()
        assert address.startswith("tcp://127.0.0.1:")
        cells = [Cell(f"ok{i}", math.sqrt, (float(i),), cost=10.0) for i in range(3)]
        cells.append(Cell("killer", _kill_own_process, (1.0,), cost=1.0))  # runs last, kills the scheduler
        start = time.monotonic()
        with pytest.raises(SweepError) as info, dask_backend(address):
            run_sweep(cells)
        assert time.monotonic() - start < 30
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert str(info.value) == (f"lost the connection to the Dask scheduler at {address} while running the sweep "
                               "(the scheduler stopped or cannot be reached); 1 of 4 cell(s) did not finish: 'killer'")
    time.sleep(0.5)  # anything the closed client would still log
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ERROR" not in err, err


# ---------------------------------------------------------------------- warnings of the workers
def _warn_and_return(value: float) -> float:
    """A cell that warns (the same text from every cell) and returns ``value``."""
    import warnings

    warnings.warn("the estimate was floored", RuntimeWarning, stacklevel=1)
    return value


def test_warnings_of_worker_cells_reach_the_caller_once_as_if_run_here():
    import warnings

    cells = [Cell(f"w{i}", _warn_and_return, (float(i),)) for i in range(6)]
    for n_jobs in (1, 2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            assert run_sweep(cells, n_jobs=n_jobs) == [float(i) for i in range(6)]
        said = [(w.category, str(w.message)) for w in caught]
        assert said == [(RuntimeWarning, "the estimate was floored")], n_jobs


def test_warnings_of_cells_on_a_dask_cluster_reach_the_caller_once():
    import warnings

    pytest.importorskip("distributed", reason="dask.distributed is not installed (the [cluster] extra)")
    cells = [Cell(f"w{i}", _warn_and_return, (float(i),)) for i in range(4)]
    with local_cluster(n_workers=1) as cluster, dask_backend(cluster.scheduler_address):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            assert run_sweep(cells) == [0.0, 1.0, 2.0, 3.0]
    assert [(w.category, str(w.message)) for w in caught] == [(RuntimeWarning, "the estimate was floored")]


def test_the_command_says_a_workers_warning_once_as_a_benchsel_line(tmp_path):
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("")
    data = _csv(tmp_path)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "BENCHSEL_CACHE_DIR": str(not_a_folder)}
    res = subprocess.run([sys.executable, "-m", "benchsel_lib.cli", *CLI_CV, "--data", data, "--jobs", "2",
                          "--estimator", "em"], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == [
        f"benchsel: warning: the cache folder {not_a_folder} (BENCHSEL_CACHE_DIR) is a file, not a folder: the disk "
        "cache is off (estimates are computed, not stored); point it to a folder"]
    env.pop("BENCHSEL_CACHE_DIR")
    again = subprocess.run([sys.executable, "-m", "benchsel_lib.cli", *CLI_CV, "--data", data, "--jobs", "2",
                            "--estimator", "em"], capture_output=True, text=True, env=env, timeout=300, check=True)
    assert res.stdout == again.stdout  # the results of a run without the cache
