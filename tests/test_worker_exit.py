"""The loky workers of a parallel cross-validation end with the interpreter that started them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

PROJECT_ROOT = Path(__file__).resolve().parents[1]

#: a small cross-validation on two loky workers; prints the process ids of every child before exiting
_CHILD = r"""
import json
import numpy as np
import psutil
from benchsel_lib import cross_validate
from benchsel_lib.data import ScoreMatrix

rng = np.random.default_rng(0)
X = rng.normal(size=(24, 2)) @ rng.normal(size=(2, 5)) + 0.5 * rng.normal(size=(24, 5))
m = ScoreMatrix(X, [f"m{i}" for i in range(24)], [f"b{j}" for j in range(5)], "synthetic")
cross_validate(m, ["entropy"], k_max=2, n_folds=4, n_jobs=2, progress=False)
print(json.dumps([p.pid for p in psutil.Process().children(recursive=True)]))
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie awaiting its parent counts as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_parallel_cross_validation_leaves_no_worker_alive_after_exit():
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=300, env=env,
                          cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    children = json.loads(done.stdout.strip().splitlines()[-1])
    assert children, "the cross-validation ran no worker process"
    deadline = time.monotonic() + 5.0
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [(p, " ".join(psutil.Process(p).cmdline()[:4])) for p in children if _alive(p)]
    assert not survivors, f"worker processes outlived the interpreter: {survivors}"


def test_sweep_registers_its_worker_shutdown_at_exit():
    from benchsel_lib.protocol import sweep
    from benchsel_lib.protocol.sweep import Cell, run_sweep

    assert run_sweep([Cell(f"c{i}", abs, (-i,)) for i in range(3)], n_jobs=2) == [0, 1, 2]
    assert sweep._STOP_AT_EXIT
    sweep._stop_workers_at_exit()  # idempotent, and a later sweep makes a new pool
    assert run_sweep([Cell(f"c{i}", abs, (-i,)) for i in range(3)], n_jobs=2) == [0, 1, 2]
