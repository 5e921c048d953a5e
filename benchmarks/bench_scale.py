"""The paper's CV grid on leaderboard-sized synthetic matrices: wall time, memory, growth, Dask vs local.

Matrices come from a low-rank-plus-noise model (rank 5, noise sd 0.5) with
realistic missingness: each model and each benchmark gets its own coverage
rate (Beta(2, 2)), so nearly every model has its own missingness pattern, and
every model observes at least one benchmark. Shapes (``--quick``: smaller):

* 5452 x 57 fully observed (the paper's MMLU), 4500 x 6 fully observed
  (Open LLM v2): pairwise correlations;
* 2000 x 114 at 69% missing (a Merged-like leaderboard), 10000 x 300 at
  70% missing: EM with one pattern per model.

Parts:

1. The paper's CV grid (entropy, MI, random; holdouts 10/20/50/90%; k = 1..15;
   10 folds; seed 0) on each matrix with ``n_jobs`` local worker processes
   (joblib/loky): wall time and peak resident memory of this process and its
   workers (this process included), after the workers have started and
   imported the library. The 10000 x 300 grid runs at the holdouts of ``--big-holdouts``
   (default 10% only) on a 2-worker Dask ``LocalCluster``.
2. Growth: the 10%-holdout grid's wall time against M (N fixed) and N (M
   fixed) on the sparse model, and one EM E-step's time and peak memory
   against M, with the fitted exponents (``time ~ M^a``).
3. Dask vs local: the 2000 x 114 10%-holdout grid on a 2-worker
   ``LocalCluster`` against loky with ``n_jobs=2``.

Prints one ``VERDICT`` line per target:

* 2000 x 114 (69% missing) grid at 10% holdout <= 60 s wall with 2 workers;
* 10000 x 300 (70% missing) grid at 10% holdout finishes on a 2-worker LocalCluster;
* E-step time per iteration linear in M (exponent <= 1.15) and memory linear in M (exponent <= 1.15);
* LocalCluster wall time within 1.3x of local joblib on the same grid.

Usage::

    python benchmarks/bench_scale.py [--quick] [--n-jobs 2] [--skip-big] [--big-holdouts 0.1,0.2,0.5,0.9]

Needs the [cluster] extra (dask.distributed) for the Dask parts (they are
reported as skipped without it) and psutil (installed with it) for memory.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small shapes (a smoke run of every part)")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--skip-big", action="store_true", help="leave out the 10000 x 300 grid")
    ap.add_argument("--big-holdouts", default="0.1", help="holdouts of the 10000 x 300 grid (default: 0.1)")
    ap.add_argument("--parts", default="grids,growth,dask", help="comma-separated subset of grids,growth,dask (big: only the 10000 x 300 grid)")
    ap.add_argument("--repeats", type=int, default=2, help="interleaved runs of the Dask-vs-local comparison")
    return ap


if __name__ == "__main__":
    # one BLAS thread per process, before NumPy is loaded (workers inherit it)
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = "1"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from benchsel_lib.data import ScoreMatrix  # noqa: E402
from benchsel_lib.method.pipeline import Pipeline  # noqa: E402
from benchsel_lib.protocol.cv import cross_validate  # noqa: E402
from benchsel_lib.protocol.summaries import summarize_cv  # noqa: E402

HOLDOUTS = (0.1, 0.2, 0.5, 0.9)
#: the paper's pipelines (Gaussian conditional mean, default estimator)
PIPELINES = tuple(Pipeline.paper(objective=o) for o in ("entropy", "mi", "random"))


def synthetic(M: int, N: int, missing: float, *, rank: int = 5, seed: int = 0) -> ScoreMatrix:
    """Low-rank-plus-noise scores with per-model and per-benchmark coverage rates (see module docstring)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(M, rank)) @ rng.normal(size=(rank, N)) / np.sqrt(rank) + 0.5 * rng.normal(size=(M, N))
    X = 50.0 + 10.0 * X
    if missing > 0:
        row, col = rng.beta(2, 2, size=M), rng.beta(2, 2, size=N)
        p_obs = np.clip(row[:, None] + col[None, :], 1e-3, None)
        p_obs = np.clip(p_obs * (1.0 - missing) / p_obs.mean(), 0.0, 1.0)
        mask = rng.random((M, N)) >= p_obs
        mask[np.arange(M), rng.integers(0, N, M)] = False  # every model observes a benchmark
        mask[rng.integers(0, M, N), np.arange(N)] = False  # every benchmark is observed
        X[mask] = np.nan
    return ScoreMatrix(X, [f"m{i}" for i in range(M)], [f"b{j}" for j in range(N)], f"synthetic {M}x{N}")


class PeakRSS:
    """Peak resident memory (MB) of this process plus all its descendants, sampled every 0.2 s."""

    def __init__(self) -> None:
        try:
            import psutil
        except ImportError:
            self.proc = None
        else:
            self.proc = psutil.Process()
        self.peak = 0.0
        self._stop = threading.Event()

    def _total(self) -> float:
        total = 0
        for p in [self.proc] + self.proc.children(recursive=True):
            try:
                total += p.memory_info().rss
            except Exception:  # noqa: BLE001 - a process that ended meanwhile
                pass
        return total / 1e6

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, self._total())

    def __enter__(self) -> PeakRSS:
        if self.proc is not None:
            self.peak = self._total()
            self._t = threading.Thread(target=self._run, daemon=True)
            self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self._stop.set()
            self._t.join()
            self.peak = max(self.peak, self._total())

    def text(self) -> str:
        return "n/a (psutil missing)" if self.proc is None else f"{self.peak:.0f} MB"


def _warm() -> None:
    """Import what a cell needs (run in each worker before timing, so start-up is not timed)."""
    import benchsel_lib.method.selection  # noqa: F401
    import benchsel_lib.protocol.cv  # noqa: F401


def warm_local(n_jobs: int) -> None:
    from benchsel_lib.protocol.sweep import Cell, run_sweep

    if n_jobs > 1:
        run_sweep([Cell(f"warm {i}", _warm) for i in range(2 * n_jobs)], n_jobs=n_jobs)


def grid(matrix: ScoreMatrix, *, holdouts, n_jobs, folds) -> tuple[float, str, object]:
    warm_local(n_jobs)
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        df = cross_validate(matrix, list(PIPELINES), holdouts=holdouts, k_max=15, n_folds=folds, seed=0,
                            n_jobs=n_jobs, progress=False)
        wall = time.perf_counter() - t0
    return wall, mem.text(), df


def local_cluster():
    from benchsel_lib.protocol.sweep import local_cluster as make

    return make(2)


def cluster_grid(matrix: ScoreMatrix, *, holdouts, folds) -> tuple[float, str, object]:
    import joblib
    from distributed import Client

    with PeakRSS() as mem, local_cluster() as cluster, Client(cluster) as client:
        client.run(_warm)  # worker start-up and imports are not timed (as for the warm loky pool)
        with joblib.parallel_config(backend="dask"):
            t0 = time.perf_counter()
            df = cross_validate(matrix, list(PIPELINES), holdouts=holdouts, k_max=15, n_folds=folds, seed=0,
                                progress=False)
            wall = time.perf_counter() - t0
    return wall, mem.text(), df


def have_dask() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def slope(x, y) -> float:
    """Least-squares exponent a of y ~ x^a."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def r2_line(df) -> str:
    s = summarize_cv(df)
    s = s[(s.holdout == 0.1) & (s.k.isin([5, 15]))]
    return "  ".join(f"{r.pipeline} k={r.k}: {r.r2_mean:.3f}" for r in s.itertuples())


def estep_cost(M: int, N: int, missing: float, reps: int = 5) -> tuple[float, float, int]:
    """Seconds (fastest of ``reps``: the least disturbed by other load) and peak traced MB of one E-step."""
    import tracemalloc

    from benchsel_lib.method import em as E

    X = np.asarray(synthetic(M, N, missing, seed=1).scores)
    X = (X - np.nanmean(X, axis=0)) / np.nanstd(X, axis=0)
    obs = ~np.isnan(X)
    X0 = np.where(obs, X, 0.0)
    plan = E._make_plan(obs)
    S = np.corrcoef(X0.T) * 0.5 + 0.5 * np.eye(N)
    mu = np.zeros(N)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        E._e_step(X0, obs, plan, mu, S)
        times.append(time.perf_counter() - t0)
    tracemalloc.start()
    E._e_step(X0, obs, plan, mu, S)
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return float(np.min(times)), peak, plan.n_patterns


def verdict(name: str, ok: bool | None, detail: str) -> None:
    tag = "SKIPPED" if ok is None else ("PASS" if ok else "FAIL")
    print(f"VERDICT {name}: {tag} ({detail})", flush=True)


def main() -> int:
    args = _parser().parse_args()
    parts = set(args.parts.split(","))
    q = args.quick
    big_h = tuple(float(h) for h in args.big_holdouts.split(","))
    load = os.getloadavg()
    print(f"bench_scale: quick={q} n_jobs={args.n_jobs} folds={args.folds} cores={os.cpu_count()} "
          f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    dask_ok = have_dask()
    if not dask_ok:
        print("dask.distributed is not installed: the LocalCluster parts are skipped "
              "(pip install 'benchsel[cluster]')")
    sparse_shape = (300, 40) if q else (2000, 114)
    big_shape = (1000, 60) if q else (10000, 300)

    if "grids" in parts:
        print("\n== 1. the paper's CV grid (entropy, MI, random; k = 1..15), local joblib workers ==")
        sparse_wall = np.nan
        for M, N, miss in ([(545, 57, 0.0), (450, 6, 0.0), (*sparse_shape, 0.69)] if q else
                           [(5452, 57, 0.0), (4500, 6, 0.0), (*sparse_shape, 0.69)]):
            m = synthetic(M, N, miss)
            for hs in ((0.1,), HOLDOUTS):
                wall, mem, df = grid(m, holdouts=hs, n_jobs=args.n_jobs, folds=args.folds)
                print(f"{M:>6} x {N:<4} missing {np.isnan(m.scores).mean():5.1%}  holdouts {','.join(f'{h:g}' for h in hs):<16}"
                      f" wall {wall:7.1f} s  peak memory {mem}  [{r2_line(df)}]", flush=True)
                if (M, N) == sparse_shape and hs == (0.1,):
                    sparse_wall = wall
        target = 60.0
        verdict(f"{sparse_shape[0]}x{sparse_shape[1]} (69% missing) 10%-holdout grid <= {target:g} s on "
                f"{args.n_jobs} workers", sparse_wall <= target, f"{sparse_wall:.1f} s")
    if "grids" in parts or "big" in parts:
        if args.skip_big:
            verdict(f"{big_shape[0]}x{big_shape[1]} (70% missing) grid finishes on a 2-worker LocalCluster", None,
                    "--skip-big")
        elif not dask_ok:
            verdict(f"{big_shape[0]}x{big_shape[1]} (70% missing) grid finishes on a 2-worker LocalCluster", None,
                    "dask.distributed not installed")
        else:
            m = synthetic(*big_shape, 0.70)
            try:
                wall, mem, df = cluster_grid(m, holdouts=big_h, folds=args.folds)
                ok, detail = True, f"wall {wall:.1f} s, peak memory {mem} (scheduler, 2 workers and this process)"
                print(f"{big_shape[0]:>6} x {big_shape[1]:<4} missing {np.isnan(m.scores).mean():5.1%}  holdouts "
                      f"{args.big_holdouts} on LocalCluster: wall {wall:.1f} s  peak memory {mem}  [{r2_line(df)}]")
            except Exception as exc:  # noqa: BLE001 - reported as the verdict
                ok, detail = False, f"{type(exc).__name__}: {exc}"
            verdict(f"{big_shape[0]}x{big_shape[1]} (70% missing) grid at holdouts {args.big_holdouts} finishes "
                    "on a 2-worker LocalCluster", ok, detail)

    if "growth" in parts:
        print("\n== 2. growth with M and N (sparse model, 69% missing) ==")
        Ms = (150, 300, 600) if q else (250, 500, 1000)
        Ns = (20, 40, 80) if q else (28, 57, 114)
        walls = []
        for M in Ms:
            wall, mem, _ = grid(synthetic(M, Ns[-1], 0.69), holdouts=(0.1,), n_jobs=args.n_jobs, folds=args.folds)
            walls.append(wall)
            print(f"grid 10% holdout  M={M:>5} N={Ns[-1]:<4} wall {wall:6.1f} s  peak memory {mem}", flush=True)
        print(f"grid wall time ~ M^{slope(Ms, walls):.2f} (EM iterations vary with M too)")
        walls = []
        for N in Ns:
            wall, mem, _ = grid(synthetic(Ms[0], N, 0.69), holdouts=(0.1,), n_jobs=args.n_jobs, folds=args.folds)
            walls.append(wall)
            print(f"grid 10% holdout  M={Ms[0]:>5} N={N:<4} wall {wall:6.1f} s  peak memory {mem}", flush=True)
        print(f"grid wall time ~ N^{slope(Ns, walls):.2f}")
        EMs = (500, 1000, 2000, 4000) if q else (1250, 2500, 5000, 10000)
        EN = 60 if q else 114
        costs = [estep_cost(M, EN, 0.69) for M in EMs]
        for M, (t, mb, P) in zip(EMs, costs):
            print(f"E-step M={M:>6} N={EN} patterns={P:>6}: {1e3 * t:8.1f} ms  peak {mb:7.1f} MB "
                  f"(an M x N x N stack would be {M * EN * EN * 8 / 1e6:.0f} MB)", flush=True)
        a_t = slope(EMs, [c[0] for c in costs])
        a_m = slope(EMs, [c[1] for c in costs])
        verdict("E-step time per iteration linear in M (exponent <= 1.15)", a_t <= 1.15, f"time ~ M^{a_t:.2f}")
        verdict("E-step memory linear in M (exponent <= 1.15, no M x N x N arrays)", a_m <= 1.15,
                f"peak ~ M^{a_m:.2f}, {costs[-1][1]:.0f} MB at M={EMs[-1]}")

    if "dask" in parts:
        print("\n== 3. Dask LocalCluster (2 workers) vs local joblib (2 workers) ==")
        if not dask_ok:
            verdict("LocalCluster within 1.3x of local joblib", None, "dask.distributed not installed")
        else:
            m = synthetic(*sparse_shape, 0.69)
            w_local, w_dask, same = np.inf, np.inf, True
            for rep in range(args.repeats):  # interleaved; the fastest of each (least disturbed by other load)
                wl, mem_l, a = grid(m, holdouts=(0.1,), n_jobs=2, folds=args.folds)
                wd, mem_d, b = cluster_grid(m, holdouts=(0.1,), folds=args.folds)
                same = same and a.equals(b)
                w_local, w_dask = min(w_local, wl), min(w_dask, wd)
                print(f"{sparse_shape[0]} x {sparse_shape[1]} 10% holdout, run {rep + 1}: loky {wl:.1f} s ({mem_l}), "
                      f"LocalCluster {wd:.1f} s ({mem_d})", flush=True)
            print(f"fastest of {args.repeats}: loky {w_local:.1f} s, LocalCluster {w_dask:.1f} s; "
                  f"identical frames: {same}")
            verdict("LocalCluster within 1.3x of local joblib", w_dask <= 1.3 * w_local,
                    f"ratio {w_dask / w_local:.2f}")
            verdict("LocalCluster frame identical to local joblib", same, "DataFrame.equals")
    load = os.getloadavg()
    print(f"\nload average at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
