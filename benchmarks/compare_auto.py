"""The recommended pipeline's cross-validation tables, written to a file or compared with one written before.

A change that is meant to leave the numbers alone (a refactor, a swap of
home-made code for a library's) is checked by running this script on the code
before the change (``--write``) and on the code after it (``--against``):
every row of auto's cross-validation table on the four built-in matrices
(the paper's protocol, Section 5.1: seed 42, 10 folds, 10 % holdout,
k = 1..10, intervals at 50 / 80 / 90 %) must be identical.

Usage::

    python benchmarks/compare_auto.py --write before.csv        # on the old code (a git worktree)
    python benchmarks/compare_auto.py --against before.csv      # on the new code

Prints the wall time of each matrix's CV, and with ``--against`` the number of
rows and the largest absolute difference of every numeric column; exits 1
when any row differs (exactly, NaN equal to NaN) or is missing.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from benchsel_lib import Pipeline, cross_validate, load_matrix

DATASETS = ("mteb", "merged", "benchpress", "mmlu")
#: the EM configuration each matrix's chapter uses (BenchPress: the early-stopped one)
CONFIG = {"benchpress": "early"}
KEY = ["matrix", "fold", "k", "holdout", "pipeline"]


def auto_tables(datasets=DATASETS, *, n_jobs: int = 2) -> pd.DataFrame:
    """auto's CV rows on every matrix of ``datasets``, with a ``matrix`` column; prints each one's time."""
    frames = []
    for name in datasets:
        t = time.perf_counter()
        df = cross_validate(load_matrix(name), [Pipeline.from_name("auto", config=CONFIG.get(name, "released"))],
                            holdouts=(0.1,), k_max=10, n_folds=10, seed=42, scheme="paper",
                            levels=(0.5, 0.8, 0.9), progress=False, n_jobs=n_jobs)
        print(f"{name}: {len(df)} rows in {time.perf_counter() - t:.1f} s")
        frames.append(df.assign(matrix=name))
    return pd.concat(frames, ignore_index=True)


def differences(new: pd.DataFrame, old: pd.DataFrame) -> tuple[int, dict[str, float]]:
    """Rows of ``old`` missing from ``new`` (or the reverse), and the largest |new - old| of each numeric column."""
    key = [c for c in KEY if c in new.columns and c in old.columns]
    both = new.merge(old, on=key, how="outer", suffixes=("", "_old"), indicator=True)
    unmatched = int((both["_merge"] != "both").sum())
    both = both[both["_merge"] == "both"]
    out = {}
    for col in new.columns:
        if col in key or col + "_old" not in both or not pd.api.types.is_numeric_dtype(new[col]):
            continue
        a, b = both[col].to_numpy(dtype=float), both[col + "_old"].to_numpy(dtype=float)
        same_nan = np.isnan(a) & np.isnan(b)
        gap = np.where(same_nan, 0.0, np.abs(a - b))
        out[col] = float(np.nanmax(np.where(np.isnan(gap), np.inf, gap))) if gap.size else 0.0
    return unmatched, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", metavar="CSV", help="write the tables here")
    ap.add_argument("--against", metavar="CSV", help="compare with tables written before")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--n-jobs", type=int, default=2)
    args = ap.parse_args(argv)
    t = time.perf_counter()
    tables = auto_tables(args.datasets, n_jobs=args.n_jobs)
    print(f"auto's CV of {'+'.join(args.datasets)}: {time.perf_counter() - t:.1f} s with {args.n_jobs} workers")
    if args.write:
        tables.to_csv(args.write, index=False, float_format="%.17g")
    if not args.against:
        return 0
    old = pd.read_csv(args.against)
    new = pd.read_csv(args.write) if args.write else tables  # compared as written, when both are given
    unmatched, gaps = differences(new.astype({c: old[c].dtype for c in KEY if c in old and c in new}), old)
    worst = max(gaps.values(), default=0.0)
    print(f"{len(new)} rows against {len(old)}; unmatched rows: {unmatched}; largest difference: {worst:.3g}")
    for col, gap in gaps.items():
        if gap:
            print(f"  {col}: {gap:.3g}")
    same = unmatched == 0 and worst == 0.0
    print("identical" if same else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
