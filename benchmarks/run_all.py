"""Run every speed benchmark in sequence and print its output.

Runs ``bench_em.py`` (EM speed vs a plain reference EM), ``bench_select.py``
(greedy selection speed), ``bench_predictors.py`` (the BenchPress blend vs a
plain implementation of its recipe), ``bench_cv.py`` (the paper's full CV grid) and
``bench_threads.py`` (the library's one-BLAS-thread limit against the BLAS
default; run without the thread variables the Makefile sets), each in its own
Python process, streaming their output. Extra arguments after
``--`` are passed to ``bench_cv.py``. Exit status is non-zero if any
benchmark failed (the others still run).

Each script also writes what it printed to ``benchmarks/results/bench-<name>.json``
(``bench-em.json`` ...; ``--json``, :mod:`result_file`), the files the book's
appendix on performance quotes; ``--no-json`` leaves them as they are.

Usage::

    python benchmarks/run_all.py [--no-json] [-- --n-jobs 2]
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = ("bench_em.py", "bench_select.py", "bench_predictors.py", "bench_cv.py", "bench_threads.py")
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


RESULTS_DIR = os.path.join(HERE, "results")


def result_path(script: str) -> str:
    """The result file of ``script`` (``bench_em.py`` -> ``benchmarks/results/bench-em.json``)."""
    return os.path.join(RESULTS_DIR, script[:-3].replace("_", "-") + ".json")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cv_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    write = "--no-json" not in own
    failed = []
    for script in SCRIPTS:
        path = os.path.join(HERE, script)
        print(f"===== {script} =====", flush=True)
        if not os.path.exists(path):
            print(f"(missing: {path})", flush=True)
            failed.append(script)
            continue
        t0 = time.perf_counter()
        cmd = [sys.executable, path] + (cv_args if script == "bench_cv.py" else [])
        if write:
            cmd += ["--json", os.path.relpath(result_path(script), os.path.dirname(HERE))]
        env = {k: v for k, v in os.environ.items() if script != "bench_threads.py" or k not in THREAD_VARS}
        rc = subprocess.call(cmd, cwd=os.path.dirname(HERE), env=env)
        print(f"===== {script}: exit {rc}, {time.perf_counter() - t0:.1f} s =====\n", flush=True)
        if rc != 0:
            failed.append(script)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
