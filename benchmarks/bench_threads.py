"""BLAS threads of a serial cross-validation: the library's one-thread limit against the BLAS default.

The library runs every sweep cell and every ``Pipeline.fit`` with one BLAS
thread (``threadpoolctl``): its matrices are small, and several BLAS threads
on a few cores spend their time synchronizing. This script times the same
serial ``cross_validate`` (a synthetic 2,000 x 114 matrix with 69% missing,
3 folds, greedy MI, k <= 5) twice in one process: with the library's limit,
and with the limit switched off (the BLAS default thread count), and prints
wall and CPU seconds and their ratio.

Run it without ``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` set (the Makefile
sets them to 1 for its targets), e.g.::

    env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS .venv/bin/python benchmarks/bench_threads.py
"""
from __future__ import annotations

import argparse
import contextlib
import os
import time

import sys

import numpy as np
from threadpoolctl import threadpool_info

from benchsel_lib import Pipeline, ScoreMatrix, cross_validate
from benchsel_lib.method import fitting as fitting_module  # where a fit limits BLAS threads
from benchsel_lib.protocol import sweep as sweep_module

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import result_file  # noqa: E402  (the result files the book quotes)


def synthetic(m: int, n: int, missing: float, seed: int = 0) -> ScoreMatrix:
    """Low-rank scores with per-model and per-benchmark coverage rates (almost every model its own pattern)."""
    rng = np.random.default_rng(seed)
    X = 50 + 10 * (rng.normal(size=(m, 5)) @ rng.normal(size=(5, n))) / np.sqrt(5) + rng.normal(size=(m, n))
    p = np.clip(rng.beta(2, 2, size=(m, 1)) * rng.beta(2, 2, size=(1, n)) * 4 * (1 - missing), 0.02, 1.0)
    X[rng.random((m, n)) > p] = np.nan
    X[np.arange(m), rng.integers(0, n, size=m)] = 50.0  # every model observes something
    return ScoreMatrix(X, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(n)], "synthetic")


def run(matrix: ScoreMatrix, *, limit: bool) -> tuple[float, float, float]:
    """Wall and CPU seconds of one serial cross_validate, and its mean R^2 at k = 5."""
    originals = (sweep_module.threadpool_limits, fitting_module.threadpool_limits)
    if not limit:  # the BLAS default: no limit anywhere
        sweep_module.threadpool_limits = fitting_module.threadpool_limits = lambda **kw: contextlib.nullcontext()
    try:
        w0, c0 = time.perf_counter(), time.process_time()
        df = cross_validate(matrix, [Pipeline.paper(objective="mi")], k_max=5, n_folds=3, seed=0, n_jobs=1,
                            progress=False)
        return time.perf_counter() - w0, time.process_time() - c0, float(df[df.k == 5].r2.mean())
    finally:
        sweep_module.threadpool_limits, fitting_module.threadpool_limits = originals


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=2000)
    ap.add_argument("--benchmarks", type=int, default=114)
    ap.add_argument("--missing", type=float, default=0.69)
    ap.add_argument("--json", default=None, metavar="PATH",
                    help="also write the printed figures to PATH (benchmarks/results/bench-threads.json: the book "
                         "quotes it)")
    args = ap.parse_args()
    load_start = os.getloadavg()
    m = synthetic(args.models, args.benchmarks, args.missing)
    blas = [(i["internal_api"], i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]
    print(f"matrix {m.shape[0]} x {m.shape[1]}, {100 * (1 - m.observed_fraction):.0f}% missing; BLAS {blas}; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, cores {os.cpu_count()}, "
          f"load {os.getloadavg()[0]:.1f}")
    default = run(m, limit=False)
    limited = run(m, limit=True)
    print(f"BLAS default : {default[0]:6.1f} s wall, {default[1]:6.1f} s CPU")
    print(f"one thread   : {limited[0]:6.1f} s wall, {limited[1]:6.1f} s CPU")
    print(f"ratio (default / one thread): {default[0] / limited[0]:.2f}x wall, {default[1] / limited[1]:.2f}x CPU; "
          f"mean R^2 at k = 5: {default[2]:.6f} / {limited[2]:.6f}")
    if args.json:
        threads = sorted({n for _, n in blas})
        result_file.write(args.json, {
            "shape": f"{m.shape[0]:,} x {m.shape[1]}", "missing_pct": f"{100 * (1 - m.observed_fraction):.0f}",
            "blas_threads": ", ".join(str(n) for n in threads) or "unknown",
            "default_wall_s": f"{default[0]:.1f}", "default_cpu_s": f"{default[1]:.1f}",
            "one_wall_s": f"{limited[0]:.1f}", "one_cpu_s": f"{limited[1]:.1f}",
            "ratio_wall": f"{default[0] / limited[0]:.2f}", "ratio_cpu": f"{default[1] / limited[1]:.2f}",
            "r2_default": f"{default[2]:.6f}", "r2_one": f"{limited[2]:.6f}"}, load_start=load_start)


if __name__ == "__main__":
    main()
