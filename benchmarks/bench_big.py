"""Big and wide leaderboards through the ``benchsel`` command: wall time and peak memory against targets.

Two seeded synthetic matrices from the generator of ``bench_scale.py``
(low rank plus noise, every model and every benchmark with its own coverage
rate):

* ``big``: 20,000 models x 300 benchmarks, 70% missing (a leaderboard of many
  models), the first 20,000 rows of a 20,001-row draw; the last row is the
  new model of ``predict``;
* ``wide``: 50 models x 10,000 benchmarks, fully observed;
* ``wide30``: 50 models x 10,000 benchmarks, 30% missing (a wide matrix whose
  correlation is held as a diagonal plus a low-rank part,
  :mod:`benchsel_lib.method.lowrank`).

Commands, each run by ``benchsel_lib.cli.main`` in its own subprocess (one
BLAS thread, the command's default), with their targets:

1. ``select --data big.csv -k 5`` (the recommended pipeline): <= 120 s, <= 2 GB;
2. ``predict --data big.csv --scores ...`` (the recommended predictor, the new
   model's first five observed scores): <= 60 s;
3. ``select --data wide.csv -k 5`` (the recommended pipeline): <= 60 s;
4. ``select --data wide.csv -k 5 --pipeline paper`` (the paper's greedy): <= 60 s;
5. ``cv --data wide30.csv --k-max 3 --folds 3`` (the paper's methods entropy,
   mi, random): <= 120 s, <= 2 GB;
6. ``select --data wide30.csv -k 5`` (the recommended pipeline): <= 1 GB (no
   time target).

Wall time is that of the subprocess (interpreter start, imports and reading
the CSV included). Peak memory is the maximum resident set size of the
subprocess, read with ``resource.getrusage(RUSAGE_CHILDREN)`` in a runner
process whose only child it is (so each command is measured alone). The
``benchsel: ...`` lines each command printed on stderr (the path it chose for
the matrix's size) are shown under its result. Prints one ``VERDICT`` line per
target.

Usage::

    python benchmarks/bench_big.py [--out-dir DIR] [--only 1,2,3,4,5,6] [--timeout 600] [--json PATH]

``--json benchmarks/results/bench-big.json`` also writes the wall time and
peak memory of each command (``c1_wall_s``, ``c1_peak_mb`` ...) to the
result file the book's appendix on performance quotes (:mod:`result_file`).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
from bench_scale import synthetic  # noqa: E402

import result_file  # noqa: E402  (the result files the book quotes)

#: the command's subprocess: ``benchsel_lib.cli.main`` on the arguments after ``-c``
CHILD = "import sys; from benchsel_lib.cli import main; sys.exit(main(sys.argv[1:]))"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=None, help="folder for the CSV files (default: a temporary folder)")
    ap.add_argument("--only", default="1,2,3,4,5,6", help="comma-separated subset of the commands 1-6")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds after which a command is stopped")
    ap.add_argument("--json", default=None, metavar="PATH", help="also write each command's wall time and peak "
                    "memory to PATH (benchmarks/results/bench-big.json: the book quotes it)")
    ap.add_argument("--measure", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return ap


def measure(cli_args: list[str], timeout: float) -> dict:
    """Run ``benchsel cli_args`` in a child process; wall seconds, peak memory (MB), exit status and output."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, *cli_args], env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc = None
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0  # kilobytes on Linux
    return {"wall": wall, "peak_mb": peak_mb, "rc": rc, "stdout": out, "stderr": err}


def run_alone(cli_args: list[str], timeout: float) -> dict:
    """:func:`measure` in a fresh runner process, so that RUSAGE_CHILDREN sees this command only."""
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", str(timeout), *cli_args],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"wall": float("nan"), "peak_mb": float("nan"), "rc": -1, "stdout": proc.stdout,
                "stderr": proc.stderr}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def write_matrices(folder: str) -> tuple[str, str, str, str]:
    """Write big.csv, wide.csv and wide30.csv into ``folder``; return their paths and the new model's ``--scores``."""
    draw = synthetic(20001, 300, 0.70, seed=0)
    scores = np.asarray(draw.scores)
    big = scores[:-1]
    new = scores[-1]
    given = np.flatnonzero(~np.isnan(new))[:5]
    given_text = ",".join(f"{draw.benchmarks[j]}={new[j]:.4f}" for j in given)
    wide = np.asarray(synthetic(50, 10000, 0.0, seed=0).scores)
    wide30 = np.asarray(synthetic(50, 10000, 0.30, seed=0).scores)
    wide_models, wide_benchmarks = [f"m{i}" for i in range(50)], [f"b{j}" for j in range(10000)]
    paths = []
    for name, X, models, benchmarks in (("big", big, draw.models[:-1], draw.benchmarks),
                                        ("wide", wide, wide_models, wide_benchmarks),
                                        ("wide30", wide30, wide_models, wide_benchmarks)):
        path = os.path.join(folder, f"{name}.csv")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("model," + ",".join(benchmarks) + "\n")
            for i in range(X.shape[0]):
                cells = ["" if np.isnan(x) else f"{x:.4f}" for x in X[i]]
                fh.write(models[i] + "," + ",".join(cells) + "\n")
        paths.append(path)
        print(f"wrote {path}: {X.shape[0]:,} x {X.shape[1]:,}, {np.isnan(X).mean():.1%} missing", flush=True)
    return paths[0], paths[1], paths[2], given_text


def commands(big: str, wide: str, wide30: str, given: str
             ) -> list[tuple[int, str, list[str], float | None, float | None]]:
    """The measured commands: number, title, ``benchsel`` arguments, target seconds and target MB (None: none)."""
    return [
        (1, "select -k 5 on 20,000 x 300 (70% missing), default pipeline", ["select", "--data", big, "-k", "5"],
         120.0, 2048.0),
        (2, "predict on 20,000 x 300 (70% missing), default pipeline",
         ["predict", "--data", big, "--scores", given], 60.0, None),
        (3, "select -k 5 on 50 x 10,000 (full), default pipeline", ["select", "--data", wide, "-k", "5"],
         60.0, None),
        (4, "select -k 5 on 50 x 10,000 (full), --pipeline paper",
         ["select", "--data", wide, "-k", "5", "--pipeline", "paper"], 60.0, None),
        (5, "cv --k-max 3 --folds 3 on 50 x 10,000 (30% missing), paper's methods",
         ["cv", "--data", wide30, "--k-max", "3", "--folds", "3"], 120.0, 2048.0),
        (6, "select -k 5 on 50 x 10,000 (30% missing), default pipeline", ["select", "--data", wide30, "-k", "5"],
         None, 1024.0),
    ]


def report(number: int, title: str, r: dict, max_s: float | None, max_mb: float | None
           ) -> tuple[bool, str, dict[str, str]]:
    """Print one command's result; return whether it met its targets, a one-line detail and its result-file values."""
    status = "timed out" if r["rc"] is None else f"exit {r['rc']}"
    print(f"{title}: wall {r['wall']:.1f} s" + (f" (target <= {max_s:g} s)" if max_s else "")
          + f", peak memory {r['peak_mb']:.0f} MB" + (f" (target <= {max_mb:g} MB)" if max_mb else "")
          + f", {status}", flush=True)
    for line in r["stderr"].splitlines():
        print(f"  stderr| {line}")
    for line in r["stdout"].splitlines()[:4]:
        print(f"  stdout| {line}")
    ok = (r["rc"] == 0 and (max_s is None or r["wall"] <= max_s)
          and (max_mb is None or r["peak_mb"] <= max_mb))
    detail = f"{r['wall']:.1f} s" + (f", {r['peak_mb']:.0f} MB" if max_mb else "") + f", {status}"
    values = {f"c{number}_wall_s": f"{r['wall']:.1f}", f"c{number}_peak_mb": f"{r['peak_mb']:.0f}",
              f"c{number}_target_s": f"{max_s:g}" if max_s else "none", f"c{number}_status": status,
              f"c{number}_verdict": "met" if ok else "not met",
              f"c{number}_paths": "; ".join(line.removeprefix("benchsel: ").strip()
                                            for line in r["stderr"].splitlines()
                                            if line.startswith("benchsel:")) or "none printed"}
    if max_mb:
        values[f"c{number}_target_mb"] = f"{max_mb:g}"
    return ok, detail, values


def main() -> int:
    args = _parser().parse_args()
    if args.measure is not None:  # runner mode: one command, one child
        timeout, cli_args = float(args.measure[0]), list(args.measure[1:])
        print(json.dumps(measure(cli_args, timeout)))
        return 0
    only = {int(x) for x in args.only.split(",")}
    load = os.getloadavg()
    print(f"bench_big: cores={os.cpu_count()} load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
          flush=True)
    verdicts = []
    values: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.out_dir or tmp
        os.makedirs(folder, exist_ok=True)
        paths = write_matrices(folder)
        for number, title, cli_args, max_s, max_mb in commands(*paths):
            if number not in only:
                continue
            shown = " ".join(os.path.basename(a) if a in paths[:3] else a for a in cli_args)
            print(f"\n== {number}. benchsel {shown}", flush=True)
            ok, detail, found = report(number, title, run_alone(cli_args, args.timeout), max_s, max_mb)
            verdicts.append((title, ok, detail))
            values.update(found)
    print()
    for title, ok, detail in verdicts:
        print(f"VERDICT {title}: {'PASS' if ok else 'FAIL'} ({detail})")
    load_end = os.getloadavg()
    print(f"load average at end {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}")
    if args.json:
        result_file.write(args.json, values, load_start=load, load_end=load_end)
    return 0


if __name__ == "__main__":
    sys.exit(main())
