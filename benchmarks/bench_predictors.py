"""Speed of the BenchPress blend's ridge part against a plain implementation of its recipe.

Times ``BenchPressBlend`` (Appendix I: per query row and missing target, a ridge
regression on the most correlated observed benchmarks, blended 50/50 with a
rank-2 SVD completion) on the query blocks that an inner search hands it, and a
plain straightforward implementation written here (one ridge fit per (row,
target) pair, predictors ranked pair by pair) in the same process.  Both use the
library's SVD completion (``SoftImpute``), so the ratio is that of everything
else: the ranking of the predictors, the ridge fits and their predictions.
Also checks that both give the same predictions (to 1e-10).

Workload, per matrix (MTEB, Merged, BenchPress, MMLU, where the mirrored data
are available): ``--splits`` seeded splits of the models into 80 % training and
20 % query rows, and on each 40 query blocks, four reveal sets of each size k = 1
to 10 drawn among the benchmarks that at least five training models observe.
Each split's training rows are new to the library's memos, so every pass fits
from scratch.

Run: ``python benchmarks/bench_predictors.py [--splits 3] [--json PATH]``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchsel_lib import Scaling  # noqa: E402
from benchsel_lib.data import load_matrix  # noqa: E402
from benchsel_lib.method.completion import BenchPressBlend, SoftImpute  # noqa: E402
from benchsel_lib.method.correlation import inner_correlation  # noqa: E402

import result_file  # noqa: E402  (the result files the book quotes)


# ----------------------------------------------------------------------------- plain reference
def plain_blend(train: np.ndarray, query: np.ndarray, cov: np.ndarray, *, n_predictors: int = 5, ridge: float = 1.0,
                blend: float = 0.5, min_rows: int = 5, min_overlap: int = 5) -> np.ndarray:
    """The blend's recipe one (query row, missing target) pair at a time, with the library's SVD completion."""
    svd = SoftImpute(rank=2, shrinkage=0.0).fit(train).predict(query)
    observed = ~np.isnan(train)
    counts = observed.T.astype(int) @ observed.astype(int)
    d = np.sqrt(np.diag(cov))
    corr = np.where(counts >= min_overlap, cov / np.outer(d, d), np.nan)
    pred = svd.copy()
    for i in range(query.shape[0]):
        obs = [c for c in range(query.shape[1]) if not np.isnan(query[i, c])]
        for j in range(query.shape[1]):
            if not np.isnan(query[i, j]) or not obs:
                continue
            ranked = sorted((c for c in obs if np.isfinite(corr[j, c])), key=lambda c: (-abs(corr[j, c]), c))
            cols = ranked[:n_predictors]
            while cols:  # drop the weakest predictor while too few training models observe all of them and j
                rows = observed[:, j] & observed[:, cols].all(axis=1)
                if rows.sum() >= min_rows:
                    break
                cols = cols[:-1]
            if not cols:
                continue
            A, y = train[np.ix_(rows, cols)], train[rows, j]
            Ac = A - A.mean(axis=0)
            beta = np.linalg.solve(Ac.T @ Ac + ridge * np.eye(len(cols)), Ac.T @ (y - y.mean()))
            pred[i, j] = blend * (y.mean() + (query[i, cols] - A.mean(axis=0)) @ beta) + (1.0 - blend) * svd[i, j]
    return pred


def workload(name: str, split: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Standardized training rows, their correlation and the query blocks of one seeded split."""
    X = load_matrix(name).scores
    rng = np.random.default_rng(split)
    perm = rng.permutation(X.shape[0])
    n_train = int(0.8 * len(perm))
    train, query = X[perm[:n_train]], X[perm[n_train:]]
    keep = ~np.isnan(train).all(axis=0)
    train, query = train[:, keep], query[:, keep]
    scaling = Scaling().fit(train)
    train, query = scaling.transform(train), scaling.transform(query)
    candidates = np.flatnonzero((~np.isnan(train)).sum(axis=0) >= 5)
    blocks = []
    for k in range(1, 11):
        for _ in range(4):
            reveal = np.zeros(train.shape[1], dtype=bool)
            reveal[rng.choice(candidates, size=k, replace=False)] = True
            blocks.append(np.where(reveal[None, :], query, np.nan))
    return train, inner_correlation(train), blocks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--splits", type=int, default=3, help="seeded train/query splits per matrix (default 3)")
    ap.add_argument("--json", default=None, metavar="PATH",
                    help="also write the printed figures to PATH (benchmarks/results/bench-predictors.json: the book "
                         "quotes it)")
    args = ap.parse_args(argv)
    load_start = os.getloadavg()
    values: dict[str, str] = {"splits": str(args.splits)}
    print(f"BenchPress blend on 40 query blocks (k = 1..10) per split, {args.splits} splits per matrix; "
          "both with the library's SVD completion")
    print(f"{'matrix':<12}{'benchsel':>11}{'plain':>11}{'ratio':>8}  {'max |diff|':>10}")
    for name in ("mteb", "merged", "benchpress", "mmlu"):
        try:
            runs = [workload(name, split) for split in range(args.splits)]
        except (FileNotFoundError, OSError) as exc:
            print(f"{name:<12}skipped: {exc}")
            continue
        t_lib = t_plain = 0.0
        diff = 0.0
        for train, cov, blocks in runs:
            t0 = time.perf_counter()
            got = [BenchPressBlend().fit(train, cov=cov).predict(q) for q in blocks]
            t_lib += time.perf_counter() - t0
            t0 = time.perf_counter()
            ref = [plain_blend(train, q, cov) for q in blocks]
            t_plain += time.perf_counter() - t0
            diff = max(diff, max(float(np.nanmax(np.abs(a - b))) for a, b in zip(got, ref)))
        print(f"{name:<12}{t_lib:>10.2f}s{t_plain:>10.2f}s{t_plain / t_lib:>7.1f}x  {diff:>10.1e}")
        if diff > 1e-10:
            print(f"  the two differ on {name} by {diff:.1e}")
            return 1
        shape = load_matrix(name).scores.shape
        values.update({result_file.key(name, "shape"): f"{shape[0]} x {shape[1]}",
                       result_file.key(name, "s"): f"{t_lib:.2f}", result_file.key(name, "plain_s"): f"{t_plain:.2f}",
                       result_file.key(name, "ratio"): f"{t_plain / t_lib:.1f}",
                       result_file.key(name, "diff"): f"{diff:.1e}"})
    if args.json:
        result_file.write(args.json, values, load_start=load_start, argv=[__file__, *(argv or sys.argv[1:])])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
