"""The loky workers of a parallel cross-validation end with the interpreter, or the notebook kernel, that started them."""
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


def test_a_notebook_run_leaves_no_worker_of_its_kernel_alive(tmp_path):
    """The book's runner ends the kernel's loky workers and trackers with the kernel (no orphans)."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
    import build_book

    cells = [new_code_cell("quick = False", metadata={"tags": ["parameters"]}),
             new_code_cell(_CHILD.replace("print(json.dumps(", "print('children', json.dumps("))]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    src, dest = tmp_path / "workers.ipynb", tmp_path / "out" / "workers.ipynb"
    dest.parent.mkdir()
    nbformat.write(nb, src)
    build_book.ensure_kernel()
    result = build_book.execute_one(str(src), str(dest), {}, str(PROJECT_ROOT), 300)
    assert result["error"] is None, result["error"]
    text = "".join(o.get("text", "") for c in nbformat.read(dest, as_version=4).cells for o in c.get("outputs", []))
    children = json.loads(text.split("children", 1)[1].strip().splitlines()[0])
    assert children, "the notebook's cross-validation ran no worker process"
    survivors = [p for p in children if _alive(p)]
    assert not survivors, f"worker processes outlived the notebook's kernel: {survivors}"
