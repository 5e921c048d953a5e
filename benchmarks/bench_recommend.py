"""The recommended pipeline against every fixed (selection, predictor) pair, with verdicts.

Protocol: the paper's cross-validation (Section 5.1; ``scheme="paper"``, 10
folds, 10 % holdout), seeds 0 and 42, k = 1..10, on MTEB, Merged, BenchPress
(EM configuration "early", as the BenchPress chapter) and MMLU.  Every method
sees the same folds, so differences are paired by (seed, fold).

Prints, per matrix and k in (5, 10):

* mean R^2 of the recommended pipeline (``auto``), of the paper's Gaussian +
  MI, and of the best fixed pair; the paired difference auto - best fixed
  pair (mean and standard error over the 20 (seed, fold) cells);
* interval coverage of ``auto`` at 50 / 80 / 90 % (pooled over folds and k);
* how far the inner-CV R^2 of ``auto``'s choice exceeds its held-out R^2;
* wall time of the full CV (10 folds, k = 1..10, seed 42, ``n_jobs`` workers)
  of ``auto`` on all four matrices, and of one ``benchsel predict`` on Merged;
  and of one ``Pipeline.auto(k=5).fit`` per matrix, the median of
  :data:`FIT_RUNS` fresh processes (a process's first fit: no memo holds
  anything of the matrix yet);

* the peers table: auto against re-implementations, with the library, of
  published methods (:data:`benchsel_lib.studies.pipelines.PEERS`), at k = 5 and 10 for seed 42 (and pooled
  over the seeds when there are several): mean R^2 of each and the paired
  difference auto - peer with its standard error; with ``--quick`` (and held
  aside) the same on the held-out entries that both auto and the peer score
  (:func:`~benchsel_lib.studies.pipelines.shared_differences`: each method
  is scored on the entries its own selection leaves, and on a sparse matrix
  reaches, so a difference of protocol R^2 mixes prediction with what is
  scored);
* auto's gain from k = 5 to k = 10 (paired by fold), in the protocol's R^2 and
  on the entries every scored size scores (``r2_common``: the same entries at
  both sizes), and where the two differ: the R^2 pooled over folds on those
  entries and on the entries each size scores beyond them; at seed 42, the
  fold where it falls most (or gains least) and the held-out models that
  only k = 10 scores there, with the revealed benchmarks they observe and
  how many training models observe each
  (:func:`~benchsel_lib.studies.pipelines.newly_scored`);
* the same peers table and gain, seed 42, on the per-leaderboard sources kept
  aside (:data:`benchsel_lib.studies.pipelines.HELD_ASIDE`: BIG-bench,
  BigCode, WildBench), where no default was chosen; k = 5 and 10 capped to
  leave four benchmarks hidden (:func:`~benchsel_lib.studies.pipelines.compare_aside`);

and a verdict line (PASS / FAIL) per target.

Usage::

    python benchmarks/bench_recommend.py [--datasets mteb merged benchpress mmlu] [--seeds 0 42]
                                         [--n-jobs 2] [--greedy] [--anchors] [--skip-grid]
                                         [--skip-timing] [--quick] [--aside NAME ...]
                                         [--candidates SELECTOR ...] [--predictors PREDICTOR ...]
                                         [--drop SELECTOR ...]
                                         [--choice nested|best]
                                         [--min-observed N] [--blocks B ...]
                                         [--gain-seeds SEED ...] [--unreached skip|mean]
                                         [--dense] [--json PATH]

``--json PATH`` also writes the seed-42 figures it prints (the peers tables
and the same on the entries both score, with their counts and extremes, the
gain from k = 5 to 10, coverage, the inner score's optimism, auto's choices,
the timing) as text, with the command and the machine, to a result file
(``benchmarks/result_file.py``); the book's appendix on the recommended
pipeline quotes ``benchmarks/results/recommend.json`` (from ``--quick``) and
``recommend-cost.json`` (from ``--skip-grid --aside``, the timing alone).

``--dense`` runs auto, and each variant of it asked for below, with auto's
first candidate set on every matrix (:data:`~benchsel_lib.method.candidates.DEFAULT_SELECTORS`
and ``DEFAULT_PREDICTORS``; by default auto searches its sparse set,
``SPARSE_SELECTORS`` and ``SPARSE_PREDICTORS``, where the training matrix
misses more than half its entries: Merged and BenchPress) and without
blocks (``blocks=()``; auto's own, ``AUTO_BLOCKS``, keep a choice at five
whose selector is not nested, of which the first set has none, so they
matter only to the variants that add such a candidate).

``--quick``: seed 42 only, auto against the peers alone (no fixed grid), no
timing; with ``--datasets merged`` it runs one matrix; with ``--seeds 0 1 2``
those seeds, and the peers tables pooled over them too.  ``--aside`` names the
held-aside sources to check (default all three; ``--aside`` alone: none).

``--greedy`` adds the predictive-greedy selector to the fixed grid (slow);
``--anchors`` adds the anchor-point (k-medoids) selector.  Both are off by
default so that the default grid, and its verdicts, stay as they were.

``--candidates anchors`` (any selectors) also runs, on the
paper's folds with seed 42, the recommended pipeline with those selectors
added to its candidates, and prints its R^2 at k = 5 and 10 (the held-aside
sizes there) against auto's, paired by fold (with ``--quick`` also on the
entries both score): what the candidate would change, and the fold where the
two differ most, with the entries each scores there
and its choice.  ``--predictors imputed-ridge`` (any predictors) does the same
with predictors added to its candidates (with ``--candidates``, one variant
with both added).  ``--drop random`` (any of auto's own selectors) takes
those selectors out of that variant's candidates (alone: one variant of auto
without them).
``--choice nested`` (or ``best``) does the same for auto with that choice
rule (:data:`benchsel_lib.method.choice.CHOICE_RULES`), with its gain from
k = 5 to 10; with ``--candidates`` or ``--predictors`` too, also for one
variant with both.
``--min-observed 0`` does the same for auto with every benchmark a
candidate (``Pipeline.auto(min_observed=0)``; by default its candidates
without a filter of their own never reveal a benchmark that fewer than 5
training models observe), ``--min-observed 10`` for a floor of 10.
``--blocks 5 10`` does the same for auto whose search is fixed at those
sizes (where the choice there is not nested; auto's own is ``(5,)``), and
runs the variants asked for above with those blocks in place of their own.
With the timing, each of these variants' full CV is timed as auto's is, and
its interval coverage printed.

``--gain-seeds 0 1 2`` also runs auto, and the variants that ``--candidates`` (``--predictors``),
``--choice`` and ``--min-observed`` ask for, at k = 5 and 10 (capped on a
held-aside source as in its peers table) on the paper's folds drawn with
each of those seeds
(:func:`~benchsel_lib.studies.pipelines.seed_gains`), on the ``--datasets``
and the ``--aside`` sources: whether the gain from k = 5 to 10 holds beyond
the one seed of the peers table, and each variant's difference from auto
averaged over the seeds.  With ``--skip-grid --skip-timing --aside`` it runs
alone on the four matrices, with ``--datasets`` alone (and ``--skip-grid``)
on the held-aside sources::

    python benchmarks/bench_recommend.py --skip-grid --skip-timing --aside --choice nested --gain-seeds 0 1 2

``--unreached mean`` scores, in those runs and in the grid (not on the
held-aside sources), a held-out model that observes none of the revealed
benchmarks with the training mean instead of leaving it out (the paper's
rule, ``skip``): every held-out model is then scored at both sizes and by
every method, so what the gain and the peers table measure no longer depend
on which models each selection lets the protocol score (a diagnostic: the
verdicts it prints are tagged with the rule).  The peers table is followed by
the entries each method is scored on.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from benchsel_lib.book.notebook import and_join  # noqa: E402
from benchsel_lib.data import load_matrix, load_source  # noqa: E402
from benchsel_lib.method.candidates import (  # noqa: E402
    DEFAULT_MIN_OBSERVED,
    DEFAULT_PREDICTORS,
    DEFAULT_SELECTORS,
    SPARSE_MISSING,
    SPARSE_PREDICTORS,
    SPARSE_SELECTORS,
)
from benchsel_lib.method.choice import CHOICE_RULES, DEFAULT_RULE  # noqa: E402
from benchsel_lib.method.inner_search import AUTO_BLOCKS  # noqa: E402
from benchsel_lib.method.pipeline import Pipeline  # noqa: E402
from benchsel_lib.method.predictors import PREDICTORS  # noqa: E402
from benchsel_lib.method.selectors import SELECTORS  # noqa: E402
from benchsel_lib.protocol.cv import cross_validate  # noqa: E402
from benchsel_lib.studies.pipelines import (  # noqa: E402
    COMPARISON,
    HELD_ASIDE,
    PEERS,
    aside_ks,
    aside_tables,
    choice_counts,
    compare_aside,
    compare_pipelines,
    entries_scored,
    every_model_r2,
    fixed_pairs,
    inner_optimism,
    k_gain,
    newly_scored,
    paired_summary,
    peer_differences,
    peer_pairs,
    pooled_coverage,
    seed_gains,
    shared_differences,
)

import result_file  # noqa: E402  (benchmarks/result_file.py: the result files the book quotes)

CONFIG = {"benchpress": "early"}
TARGETS = {  # minimum mean R^2 of the recommended pipeline at k = 5 and 10
    "merged": {5: 0.58, 10: 0.62},
    "benchpress": {5: 0.40, 10: 0.40},
    "mteb": {5: 0.77, 10: 0.82},
}
LEVELS = (0.5, 0.8, 0.9)
SELS = ("mi", "entropy", "random", "mi-obs", "entropy-obs", "lasso")
PREDS = ("gaussian", "ridge", "lowrank", "knn", "blend")
PEER_SEED = 42
#: The sources held aside and the matrices, as the book names them (in the result file's summaries).
NAMES = {"mteb": "MTEB", "merged": "Merged", "benchpress": "BenchPress", "mmlu": "MMLU", **HELD_ASIDE}


class Results:
    """What a run prints, kept as the text it prints, for ``--json`` (:mod:`result_file`).

    The print helpers below hand their rows here (seed 42 only: the tables
    chapter 12 of the book computes); :meth:`values` adds the counts and
    extremes of the peers tables that the appendix quotes ("at or above the
    peer in ... of ... comparisons").  A comparison counts as clear where the
    paired difference exceeds two standard errors, as in chapter 12.
    """

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.peers: list[dict] = []
        self.shared: list[dict] = []
        self.every: list[dict] = []
        self.coverage_gaps: dict[str, list[float]] = {}

    def put(self, *parts, text) -> None:
        self.texts[result_file.key(*parts)] = str(text)

    def peer_rows(self, where: str, group: str, tab: pd.DataFrame) -> None:
        """The peers table (:func:`peer_differences`) of ``where`` (a matrix, or a source held aside)."""
        for r in tab.itertuples():
            self.peers.append(dict(where=where, group=group, k=int(r.k), peer=r.peer, auto=r.reference_r2,
                                   peer_r2=r.peer_r2, diff=r.diff, se=r.diff_se))
            self.put(where, f"k{r.k}", "auto", text=f"{r.reference_r2:.3f}")
            self.put(where, f"k{r.k}", r.peer, "r2", text=f"{r.peer_r2:.3f}")
            self.put(where, f"k{r.k}", r.peer, "diff", text=result_file.signed(r.diff))
            self.put(where, f"k{r.k}", r.peer, "se", text=f"{r.diff_se:.3f}")

    def every_rows(self, where: str, group: str, tab: pd.DataFrame, reach: pd.Series) -> None:
        """The peers table over every held-out model (:func:`_every_table`), with each pipeline's reach."""
        for r in tab.itertuples():
            self.every.append(dict(where=where, group=group, k=int(r.k), peer=r.peer, auto=r.reference_r2,
                                   peer_r2=r.peer_r2, diff=r.diff, se=r.diff_se))
            self.put(where, f"k{r.k}", "auto", "all", text=f"{r.reference_r2:.3f}")
            self.put(where, f"k{r.k}", "auto", "reach", text=f"{100 * reach.get((r.k, 'auto'), np.nan):.0f}")
            self.put(where, f"k{r.k}", r.peer, "all", text=f"{r.peer_r2:.3f}")
            self.put(where, f"k{r.k}", r.peer, "reach", text=f"{100 * reach.get((r.k, r.peer), np.nan):.0f}")
            self.put(where, f"k{r.k}", r.peer, "all_diff", text=result_file.signed(r.diff))
            self.put(where, f"k{r.k}", r.peer, "all_se", text=f"{r.diff_se:.3f}")

    def shared_rows(self, where: str, group: str, tab: pd.DataFrame) -> None:
        """The same on the entries both score (:func:`shared_differences`)."""
        for r in tab.itertuples():
            row = dict(where=where, group=group, k=int(r.k), peer=r.peer, auto=r.reference_r2, peer_r2=r.peer_r2,
                       diff=r.diff, se=r.diff_se, n_shared=int(r.n_shared), n_own=int(r.n_own))
            self.shared.append(row)
            at = (where, f"k{r.k}", r.peer, "shared")
            self.put(*at, "n", text=f"{int(r.n_shared):,}")
            self.put(*at, "own", text=f"{int(r.n_own):,}")
            if r.n_shared:
                self.put(*at, "auto", text=f"{r.reference_r2:.3f}")
                self.put(*at, "r2", text=f"{r.peer_r2:.3f}")
                self.put(*at, "diff", text=result_file.signed(r.diff))
                self.put(*at, "se", text=f"{r.diff_se:.3f}")

    @staticmethod
    def _counts(rows: list[dict], prefix: tuple) -> dict[str, str]:
        out = {}
        d = np.array([r["diff"] for r in rows], dtype=float)
        se = np.array([r["se"] for r in rows], dtype=float)
        clear = np.isfinite(se) & (np.abs(d) > 2 * se)
        out[result_file.key(*prefix, "n")] = str(len(rows))
        out[result_file.key(*prefix, "at_or_above")] = str(int((d >= 0).sum()))
        out[result_file.key(*prefix, "above_2se")] = str(int(((d > 0) & clear).sum()))
        out[result_file.key(*prefix, "below_2se")] = str(int(((d < 0) & clear).sum()))
        below = [r for r, c, x in zip(rows, clear, d) if c and x < 0]
        out[result_file.key(*prefix, "below_2se_where")] = (
            ", ".join(dict.fromkeys(NAMES.get(r["where"], r["where"]) for r in below)) or "none")
        return out

    def values(self) -> dict[str, str]:
        """Every printed figure kept, with the counts and extremes of the peers tables."""
        out = dict(self.texts)
        for group in ("matrices", "aside"):
            rows = [r for r in self.peers if r["group"] == group]
            if rows:
                out.update(self._counts(rows, (group, "peers")))
            rows = [r for r in self.every if r["group"] == group]
            if rows:
                out.update(self._counts(rows, (group, "every")))
            rows = [r for r in self.shared if r["group"] == group]
            if rows:
                scored = [r for r in rows if r["n_shared"]]
                out.update(self._counts(scored, (group, "shared")))
                out[result_file.key(group, "shared", "none")] = str(len(rows) - len(scored))
        for group, names in (("matrices", [n for n in NAMES if n not in HELD_ASIDE]), ("aside", list(HELD_ASIDE))):
            gaps = [g for n in names for g in self.coverage_gaps.get(n, [])]
            if gaps:  # the farthest coverage from nominal, in points
                out[result_file.key(group, "coverage_gap")] = f"{100 * max(gaps):.1f}"
        for table, what in ((self.peers, "closest"), ([r for r in self.shared if r["n_shared"]], "shared_worst")):
            cells: dict[tuple, list[dict]] = {}
            for r in table:
                cells.setdefault((r["where"], r["k"]), []).append(r)
            for (where, k), rows in cells.items():
                low = min(r["diff"] for r in rows)
                tied = [r for r in rows if abs(r["diff"] - low) < 5e-4]  # level to the printed third decimal
                first = tied[0]
                at = (where, f"k{k}", what)
                out[result_file.key(*at)] = ", ".join(r["peer"] for r in tied)
                out[result_file.key(*at, "r2")] = f"{first['peer_r2']:.3f}"
                out[result_file.key(*at, "auto")] = f"{first['auto']:.3f}"
                out[result_file.key(*at, "diff")] = result_file.signed(first["diff"])
                out[result_file.key(*at, "se")] = f"{first['se']:.3f}"
                if "n_shared" in first:
                    out[result_file.key(*at, "n")] = f"{first['n_shared']:,}"
                    out[result_file.key(*at, "own")] = f"{first['n_own']:,}"
        return out


RESULTS = Results()


def _cv(M, name: str, methods, seed: int, levels, n_jobs: int) -> pd.DataFrame:
    """The paper's CV (seed ``seed``, 10 % holdout, k = 1..10) of ``methods``: short names or pipelines."""
    pipelines = [Pipeline.from_name(m, config=CONFIG.get(name, "released")) if isinstance(m, str) else m
                 for m in methods]
    return cross_validate(M, pipelines, holdouts=(0.1,), k_max=10, n_folds=10, seed=seed, scheme="paper",
                          levels=tuple(levels), progress=False, n_jobs=n_jobs)


def _verdict(ok: bool, text: str) -> str:
    return f"{'PASS' if ok else 'FAIL'}  {text}"


def _peer_table(df: pd.DataFrame, label: str, tab: pd.DataFrame | None = None, where: str | None = None,
                group: str = "matrices") -> list[tuple]:
    """Print the peers table of ``df`` at k = 5 and 10 (or the given ``tab``) and return its rows; with ``where``
    (the matrix or source), keep them for ``--json`` in :data:`RESULTS` (``group``: matrices or aside)."""
    if tab is None:
        tab = peer_differences(df, list(PEERS), ks=(5, 10))
    if where is not None:
        RESULTS.peer_rows(where, group, tab)
    print(f"peers ({label}): auto - peer paired by fold")
    print(f"{'k':>3} {'peer':<16} {'auto':>6} {'peer':>6} {'auto-peer':>10} {'SE':>6}  what it stands for")
    for r in tab.itertuples():
        print(f"{r.k:>3} {r.peer:<16} {r.reference_r2:6.3f} {r.peer_r2:6.3f} {r.diff:+10.3f} {r.diff_se:6.3f}  "
              f"{PEERS[r.peer]}")
    return list(tab.itertuples())


def _every_table(df: pd.DataFrame, ks=(5, 10), label: str = "", where: str | None = None,
                 group: str = "matrices") -> None:
    """Print the peers table over every held-out model: each pipeline's R^2 on every held-out model's entries
    (``r2_all``: a model that ran none of its selected benchmarks is predicted by the training mean and
    counted) and its reach (the share of held-out models that ran a selected benchmark), paired by fold; with
    ``where``, keep it for ``--json``."""
    tab = peer_differences(df.assign(r2=df["r2_all"]), list(PEERS), ks=ks)
    reach = every_model_r2(df, ks=ks).set_index(["k", "pipeline"])["reach"]
    if where is not None:
        RESULTS.every_rows(where, group, tab, reach)
    print(f"every held-out model ({label}): auto - peer paired by fold, on the R^2 of every held-out model")
    print(f"{'k':>3} {'peer':<16} {'auto':>6} {'reach':>6} {'peer':>6} {'reach':>6} {'auto-peer':>10} {'SE':>6}")
    for r in tab.itertuples():
        print(f"{r.k:>3} {r.peer:<16} {r.reference_r2:6.3f} {reach.get((r.k, 'auto'), np.nan):6.0%} "
              f"{r.peer_r2:6.3f} {reach.get((r.k, r.peer), np.nan):6.0%} {r.diff:+10.3f} {r.diff_se:6.3f}")


def _shared_table(df: pd.DataFrame, ks=(5, 10), label: str = "", where: str | None = None,
                  group: str = "matrices") -> None:
    """Print auto against each peer on the held-out entries both score (:func:`shared_differences`); with
    ``where``, keep the rows for ``--json``."""
    tab = shared_differences(df, [p for p in PEERS if p in set(df["pipeline"])], ks=ks)
    if where is not None:
        RESULTS.shared_rows(where, group, tab)
    print(f"on the entries both score{f' ({label})' if label else ''} (each pair scored on the held-out entries that "
          "both auto and the peer score):")
    print(f"{'k':>3} {'peer':<28} {'auto':>6} {'peer':>6} {'auto-peer':>10} {'SE':>6} {'entries':>8} {'of auto':>8}")
    for r in tab.itertuples():
        if not r.n_shared:
            print(f"{r.k:>3} {r.peer:<28} no held-out entry is scored by both ({r.n_own} entries of auto)")
            continue
        print(f"{r.k:>3} {r.peer:<28} {r.reference_r2:6.3f} {r.peer_r2:6.3f} {r.diff:+10.3f} {r.diff_se:6.3f} "
              f"{r.n_shared:>8} {r.n_own:>8}")


def _gain_verdicts(where: str, g, key: str | None = None) -> list[str]:
    """Print auto's gain ``g`` (a :func:`k_gain` row) and return its two verdicts: in the protocol's R^2 and on
    the entries every size scores; with ``key`` (the matrix or source), keep the figures for ``--json``."""
    k0, k1 = g["k0"], g["k1"]
    if key is not None:
        RESULTS.put(key, "k0", text=k0)
        RESULTS.put(key, "k1", text=k1)
        RESULTS.put(key, "gain", text=result_file.signed(g["gain"]))
        RESULTS.put(key, "gain_se", text=f"{g['gain_se']:.3f}")
        RESULTS.put(key, "gain_common", text=result_file.signed(g["gain_common"]))
        RESULTS.put(key, "gain_common_se", text=f"{g['gain_common_se']:.3f}")
        for col in ("common_r2_k0", "common_r2_k1", "only_r2_k0", "only_r2_k1"):
            RESULTS.put(key, col, text=f"{g[col]:.3f}")
        RESULTS.put(key, "nested", text=f"{g['nested_cells']} of {g['n_cells']}")
    print(f"auto k={k1} - k={k0}: {g['gain']:+.3f} +- {g['gain_se']:.3f}; on the entries every size scores: "
          f"{g['gain_common']:+.3f} +- {g['gain_common_se']:.3f}")
    print(f"  R^2 pooled over folds: on the entries every size scores k={k0} {g['common_r2_k0']:.3f}, "
          f"k={k1} {g['common_r2_k1']:.3f}; on those k={k0} scores beyond them (the benchmarks larger sizes reveal, "
          f"among them) {g['only_r2_k0']:.3f}; on those k={k1} scores beyond them {g['only_r2_k1']:.3f}")
    print(f"  the k={k1} selection contains the k={k0} one in {g['nested_cells']} of {g['n_cells']} folds")
    return [_verdict(g["gain"] >= 0, f"{where}: auto at k={k1} - auto at k={k0} = {g['gain']:+.3f} +- "
                     f"{g['gain_se']:.3f} (target >= 0)"),
            _verdict(g["gain_common"] >= 0, f"{where}: the same on the entries every size scores = "
                     f"{g['gain_common']:+.3f} +- {g['gain_common_se']:.3f} (target >= 0)")]


def _variants(candidates=(), choice=None, min_observed=None, predictors=(),
              blocks=(), drop=(), base=None) -> list[tuple[Pipeline, str]]:
    """The variants of auto that ``--candidates`` and ``--predictors`` (one variant), ``--choice`` (with
    ``--candidates`` or ``--predictors`` also one variant with both) and
    ``--min-observed`` ask for, each with what it is; with ``--blocks``, auto with those block sizes and each
    variant with them in place of its own.  ``drop``: auto's selectors that the variant with
    ``--candidates`` and ``--predictors`` (or, alone, a variant of its own) leaves out of the candidates.
    ``base``: options of every variant of auto (``--dense``: its first candidate set on every matrix)."""
    base = dict(base or {})
    out = []
    if candidates or predictors or drop:
        kept = tuple(s for s in DEFAULT_SELECTORS if s not in drop)
        grown = dict(selectors=kept + tuple(s for s in candidates if s not in kept and s not in drop),
                     predictors=tuple(DEFAULT_PREDICTORS) + tuple(p for p in predictors if p not in DEFAULT_PREDICTORS),
                     **{key: base[key] for key in ("blocks",) if key in base})
        added = [*candidates, *predictors]
        label = "".join(f"-{s}" for s in drop) + "".join(f"+{a}" for a in added)
        what = ", ".join([f"with {', '.join(added)} among its candidates"] * bool(added)
                         + [f"without {', '.join(drop)}"] * bool(drop))
        out.append((Pipeline.auto(**grown, name="auto" + label), f"auto {what}"))
    if choice is not None:
        out.append((Pipeline.auto(**base, choice=choice, name=f"auto:{choice}"), f"auto with the {choice!r} choice"))
        if candidates or predictors or drop:
            out.append((Pipeline.auto(**grown, choice=choice, name="auto" + label + f":{choice}"),
                        f"auto {what}, with the {choice!r} choice"))
    if min_observed is not None:
        out.append((Pipeline.auto(**base, min_observed=min_observed, name=f"auto:m{min_observed}"),
                    f"auto revealing only benchmarks that at least {min_observed} training models observe"
                    if min_observed else "auto with every benchmark a candidate"))
    if blocks:
        at = "/b" + "-".join(str(b) for b in blocks)
        fixed = (f", each larger selection adding to the choice at k = {', '.join(str(b) for b in blocks)} "
                 "where that choice's selector is not nested")
        kw = dict(blocks=tuple(blocks))
        out = [(Pipeline.auto(**{**base, **kw}, name="auto" + at), "auto" + fixed)] + [
            (pipe.set_params(**kw, name=pipe.name + at), what + fixed) for pipe, what in out]
    return out


def _worst_fold(M, df: pd.DataFrame, g, seed: int, shown: int = 3, unreached: str = "skip",
                key: str | None = None) -> None:
    """Print the fold where auto's R^2 falls most from k0 to k1 (a :func:`k_gain` row ``g``) and the held-out
    models only k1 scores there (:func:`newly_scored`: those whose revealed benchmarks fewest training models
    observe first); with ``key``, keep the figures for ``--json``."""
    k0, k1, f = g["k0"], g["k1"], g["worst_fold"]
    new = newly_scored(M, df, fold=f, seed=seed, k0=k0, k1=k1, unreached=unreached)
    at = df[(df["pipeline"] == "auto") & (df["fold"] == f)].set_index("k")["r2"]
    how = "falls most" if g["worst_gain"] < 0 else "gains least"
    if key is not None:
        RESULTS.put(key, "worst_fold", text=f)
        RESULTS.put(key, "worst_how", text=how)
        RESULTS.put(key, "worst_r2_k0", text=f"{at[k0]:.3f}")
        RESULTS.put(key, "worst_r2_k1", text=f"{at[k1]:.3f}")
        RESULTS.put(key, "worst_gain", text=result_file.signed(g["worst_gain"]))
        RESULTS.put(key, "others_gain", text=result_file.signed(g["others_gain"]))
        RESULTS.put(key, "worst_new", text=len(new))
    print(f"  fold {f} {how}: R^2 {at[k0]:.3f} at k={k0}, {at[k1]:.3f} at k={k1} ({g['worst_gain']:+.3f}; "
          f"mean gain of the other {g['n_cells'] - 1} folds {g['others_gain']:+.3f}); k={k1} scores {len(new)} held-out "
          f"model{'s' * (len(new) != 1)} there that k={k0} does not")
    for r in new.head(shown).itertuples():
        seen = ", ".join(f"{b} ({c})" for b, c in zip(r.revealed, r.train_observed))
        print(f"    {r.model}: {r.targets} entries scored; the revealed benchmarks it observes (training models "
              f"observing them): {seen}")


def _entries_scored(df: pd.DataFrame, ks=(5, 10), key: str | None = None) -> None:
    """Print how many held-out entries the protocol scores for auto and each peer (:func:`entries_scored`)."""
    n = entries_scored(df, pipelines=[m for m in ["auto", *PEERS] if m in set(df["pipeline"])], ks=ks)
    if key is not None:
        for m, row in zip(n.index, n.to_numpy()):
            for k, v in zip(ks, row):
                RESULTS.put(key, f"k{k}", m, "entries", text=f"{int(v):,}")
    total = " / ".join(f"k={k}" for k in ks)
    print(f"entries scored ({total}, summed over the folds): " + ", ".join(
        f"{m} {' / '.join(str(v) for v in row)}" for m, row in zip(n.index, n.to_numpy())))


def _largest_fold_difference(df: pd.DataFrame, pipeline: str, k: int) -> None:
    """Print the fold where ``pipeline`` and auto differ most at ``k``, with the entries each scores there: on a
    sparse matrix a paired difference can hang on one fold where the two score different models."""
    cols = ["r2", "n_eval"] + (["choice"] if "choice" in df.columns else [])
    at = df[(df["k"] == k) & df["pipeline"].isin([pipeline, "auto"])].set_index(["fold", "pipeline"])[cols].unstack()
    d = (at["r2"][pipeline] - at["r2"]["auto"]).dropna()
    if not len(d) or d.abs().max() == 0:
        return
    f = d.abs().idxmax()

    def one(m: str) -> str:
        chose = f" ({at['choice'][m][f]})" if "choice" in cols and isinstance(at["choice"][m][f], str) else ""
        return f"{at['r2'][m][f]:.3f} on {int(at['n_eval'][m][f])} entries{chose}"
    print(f"  the folds differ most at fold {f}: {one(pipeline)} against auto's {one('auto')}")


def _against_auto(M, variants, ks, n_jobs: int, results: pd.DataFrame, unreached: str = "skip") -> None:
    """Print each variant of auto (:func:`_variants`) against auto's rows of ``results`` (seed 42, the same folds),
    paired by fold, at the sizes ``ks``, and its gain from the smallest to the largest."""
    auto = results[(results["pipeline"] == "auto") & (results["seed"] == PEER_SEED)]
    entries = "entries" in auto.columns  # auto's scored entries were kept (--quick): pair on the shared ones too
    for pipe, what in variants:
        df = cross_validate(M, [pipe], holdouts=(0.1,), k_max=max(ks), ks=tuple(ks), n_folds=10, seed=PEER_SEED,
                            scheme="paper", levels=(), progress=False, n_jobs=n_jobs, unreached=unreached,
                            keep_entries=entries).assign(seed=PEER_SEED)
        both = pd.concat([auto, df], ignore_index=True)
        shared = shared_differences(both, [pipe.name], ks=ks).set_index("k") if entries else None
        for r in peer_differences(both, [pipe.name], ks=ks).itertuples():
            print(f"{what}, k={r.k}: {r.peer_r2:.3f} against auto's {r.reference_r2:.3f} "
                  f"(paired diff {-r.diff:+.3f} +- {r.diff_se:.3f})")
            if shared is not None and shared.loc[r.k, "n_shared"]:
                s = shared.loc[r.k]
                print(f"  on the {int(s.n_shared)} entries both score: {s.peer_r2:.3f} against auto's "
                      f"{s.reference_r2:.3f} (paired diff {-s['diff']:+.3f} +- {s.diff_se:.3f})")
            _largest_fold_difference(both, pipe.name, r.k)
        g = k_gain(df, pipeline=pipe.name, k0=min(ks), k1=max(ks))
        print(f"{what}, k={g['k1']} - k={g['k0']}: {g['gain']:+.3f} +- {g['gain_se']:.3f}; on the entries both "
              f"sizes score: {g['gain_common']:+.3f} +- {g['gain_common_se']:.3f}; the k={g['k1']} selection "
              f"contains the k={g['k0']} one in {g['nested_cells']} of {g['n_cells']} folds")


def _keep_coverage(name: str | None, r) -> None:
    """Keep a row of :func:`pooled_coverage` (``cov50`` ...) for ``--json``; ``name`` None: nothing."""
    if name:
        RESULTS.put(name, f"cov{round(100 * r.nominal)}", text=f"{r.coverage:.3f}")
        RESULTS.coverage_gaps.setdefault(name, []).append(abs(r.gap))


def _keep_choices(name: str, choices: dict) -> None:
    """Keep auto's most frequent choice at each size (:func:`choice_counts`) for ``--json``."""
    for k, counts in choices.items():
        if counts:
            top, n = next(iter(counts.items()))
            RESULTS.put(name, f"k{k}", "choice", text=top)
            RESULTS.put(name, f"k{k}", "choice_n", text=n)


def _quick_summary(name: str, rule: str, df, seeds, keep) -> list[str]:
    """The quick grid's coverage verdicts, optimism and choices of one matrix (kept for --json at seed 42 alone)."""
    verdicts = []
    at42 = keep if set(seeds) == {PEER_SEED} else None  # pooled over the seeds: not the seed-42 figures
    for r in pooled_coverage(df, levels=LEVELS).itertuples():
        verdicts.append(_verdict(abs(r.gap) <= 0.03, f"{name}{rule}: coverage at {r.nominal:.0%} = "
                                 f"{r.coverage:.3f} (pooled over folds and k; target +-0.03)"))
        _keep_coverage(at42, r)
    opt = inner_optimism(df, ks=(5, 10))
    print("inner-CV R^2 of auto's choice minus its held-out R^2:",
          ", ".join(f"k={r.k} {r.inner_r2:.3f} - {r.r2:.3f} = {r.optimism:+.3f} +- {r.optimism_se:.3f}"
                    for r in opt.itertuples()))
    choices = choice_counts(df, ks=(5, 10))
    print("auto's choices (top 3):", choices)
    if at42:
        for r in opt.itertuples():
            RESULTS.put(name, f"k{r.k}", "inner", text=f"{r.inner_r2:.3f}")
            RESULTS.put(name, f"k{r.k}", "optimism", text=result_file.signed(r.optimism))
            RESULTS.put(name, f"k{r.k}", "optimism_se", text=f"{r.optimism_se:.3f}")
        _keep_choices(name, choices)
    return verdicts


def grid(datasets, seeds, n_jobs: int, greedy: bool, anchors: bool = False, quick: bool = False,
         variants=(), unreached: str = "skip", auto=None) -> list[str]:
    verdicts = []
    rule = "" if unreached == "skip" else f" [unreached {unreached}]"
    if quick:
        fixed = peer_pairs(PEERS)
    else:
        fixed = fixed_pairs(selectors=SELS + (("greedy",) if greedy else ()) + (("anchors",) if anchors else ()),
                            predictors=PREDS)
        fixed += [p for p in peer_pairs(PEERS) if p not in fixed]
    for name in datasets:
        M = load_matrix(name)
        t0 = time.perf_counter()
        df = compare_pipelines(M, fixed=fixed, seeds=seeds, config=CONFIG.get(name, "released"), n_jobs=n_jobs,
                               protocol=dataclasses.replace(COMPARISON, unreached=unreached, keep_entries=quick),
                               auto=auto)
        secs = time.perf_counter() - t0
        print(f"\n== {name} {M.shape}{rule}  ({secs:.0f} s, {len(seeds)} seeds x 10 folds)")
        keep = name if unreached == "skip" else None  # --json keeps the paper's rule only
        if keep:
            RESULTS.put(name, "shape", text=f"{M.shape[0]} x {M.shape[1]}")
            RESULTS.put(name, "observed_pct", text=f"{100 * M.observed_fraction:.0f}")
            RESULTS.put(name, "seconds", text=f"{secs:.0f}")
        if PEER_SEED in seeds:
            for r in _peer_table(df[df["seed"] == PEER_SEED], f"seed {PEER_SEED}", where=keep):
                verdicts.append(_verdict(r.diff >= 0, f"{name}{rule} k={r.k}: auto {r.reference_r2:.3f} vs {r.peer} "
                                         f"{r.peer_r2:.3f} (seed {PEER_SEED}, paired diff {r.diff:+.3f} +- "
                                         f"{r.diff_se:.3f}; target >= 0)"))
            _every_table(df[df["seed"] == PEER_SEED], label=f"seed {PEER_SEED}", where=keep)
            _entries_scored(df[df["seed"] == PEER_SEED], key=keep)
            if quick:  # the full grid keeps no entries (every fixed pair at every size would hold them)
                _shared_table(df[df["seed"] == PEER_SEED], where=keep)
        if len(seeds) > 1:
            _peer_table(df, f"seeds {' '.join(map(str, seeds))} pooled")
            if quick:
                _shared_table(df, label=f"seeds {' '.join(map(str, seeds))} pooled")
        if variants and PEER_SEED in seeds:
            _against_auto(M, variants, (5, 10), n_jobs, df, unreached)
        for sd in sorted(set(seeds)) + ([None] if len(seeds) > 1 else []):
            print("pooled:" if sd is None else f"seed {sd}:", end=" ")
            g = k_gain(df if sd is None else df[df["seed"] == sd])
            found = _gain_verdicts(f"{name}{rule} (seed {sd})", g, key=keep if sd == PEER_SEED else None)
            if sd == PEER_SEED:
                verdicts += found
                _worst_fold(M, df[df["seed"] == sd], g, sd, unreached=unreached, key=keep)
        if quick:
            verdicts += _quick_summary(name, rule, df, seeds, keep)
            continue
        summ = paired_summary(df, ks=(5, 10))
        print(f"{'k':>3} {'auto':>7} {'mi(paper)':>9} {'best fixed pair':>28} {'auto-best':>10} {'SE':>6}")
        for r in summ.itertuples():
            print(f"{r.k:>3} {r.reference:7.3f} {r.baseline:9.3f} {r.best_fixed:>20} {r.best_fixed_r2:7.3f} "
                  f"{r.diff:+10.3f} {r.diff_se:6.3f}")
            verdicts.append(_verdict(r.diff >= -0.01, f"{name} k={r.k}: auto {r.reference:.3f} vs best fixed pair "
                                     f"{r.best_fixed} {r.best_fixed_r2:.3f} (paired diff {r.diff:+.3f} +- "
                                     f"{r.diff_se:.3f}; target >= -0.01)"))
            verdicts.append(_verdict(r.reference >= r.baseline, f"{name} k={r.k}: auto {r.reference:.3f} >= "
                                     f"Gaussian+MI {r.baseline:.3f} (paired diff {r.diff_baseline:+.3f} +- "
                                     f"{r.diff_baseline_se:.3f})"))
            if name in TARGETS:
                tgt = TARGETS[name][r.k]
                verdicts.append(_verdict(r.reference >= tgt, f"{name} k={r.k}: auto {r.reference:.3f} >= {tgt}"))
        means = df[df["k"] == 10].groupby("pipeline")["r2"].mean().drop(["auto", "mi"])
        print("top fixed pairs at k=10:", ", ".join(f"{i} {v:.3f}" for i, v in
                                                      means.sort_values(ascending=False).head(5).items()))
        for r in pooled_coverage(df, levels=LEVELS).itertuples():
            verdicts.append(_verdict(abs(r.gap) <= 0.03, f"{name}: coverage at {r.nominal:.0%} = {r.coverage:.3f} "
                                     "(pooled over folds and k; target +-0.03)"))
        opt = inner_optimism(df, ks=(5, 10))
        print("inner-CV R^2 of auto's choice minus its held-out R^2:",
              ", ".join(f"k={r.k} {r.inner_r2:.3f} - {r.r2:.3f} = {r.optimism:+.3f} +- {r.optimism_se:.3f}"
                        for r in opt.itertuples()))
        print("auto's choices (top 3):", choice_counts(df, ks=(5, 10)))
    return verdicts


def aside(names, n_jobs: int, variants=(), seeds=(PEER_SEED,), auto=None) -> list[str]:
    """Auto against the peers (seed 42; with more ``seeds`` also pooled over them) on the held-aside sources;
    verdicts marked "held aside"."""
    verdicts = []
    pooled = f"seeds {' '.join(map(str, seeds))} pooled"
    for name in names:
        t0 = time.perf_counter()
        run = compare_aside(name, peers=list(PEERS), seeds=list(seeds), n_jobs=n_jobs,
                            protocol=dataclasses.replace(COMPARISON, keep_entries=True), auto=auto)
        print(f"\n== held aside: {name} {run.shape}  ({time.perf_counter() - t0:.0f} s, seed"
              f"{'s ' + ' '.join(map(str, seeds)) if len(seeds) > 1 else ' ' + str(seeds[0])} x 10 folds)")
        if PEER_SEED in seeds:
            at = dataclasses.replace(run, results=run.results[run.results["seed"] == PEER_SEED])
            peers, gains, coverage = aside_tables([at], list(PEERS), levels=LEVELS)
            RESULTS.put(name, "shape", text=f"{run.shape[0]} x {run.shape[1]}")
            RESULTS.put(name, "ks", text=", ".join(str(k) for k in run.ks))
            RESULTS.put(name, "observed_pct", text=f"{100 * load_source(name).observed_fraction:.0f}")
            for r in _peer_table(at.results, f"seed {PEER_SEED}", tab=peers, where=name, group="aside"):
                verdicts.append(_verdict(r.diff >= 0, f"held aside {name} k={r.k}: auto {r.reference_r2:.3f} vs "
                                         f"{r.peer} {r.peer_r2:.3f} (paired diff {r.diff:+.3f} +- {r.diff_se:.3f}; "
                                         "target >= 0)"))
            for g in gains.to_dict("records"):
                verdicts += _gain_verdicts(f"held aside {name}", g, key=name)
            for r in coverage.itertuples():
                verdicts.append(_verdict(abs(r.gap) <= 0.03, f"held aside {name}: coverage at {r.nominal:.0%} = "
                                         f"{r.coverage:.3f} (pooled over folds and k; target +-0.03)"))
                _keep_coverage(name, r)
            _shared_table(at.results, ks=run.ks, where=name, group="aside")
            _every_table(at.results, ks=run.ks, label=f"seed {PEER_SEED}", where=name, group="aside")
            choices = choice_counts(at.results, ks=run.ks)
            print("auto's choices (top 3):", choices)
            _keep_choices(name, choices)
            if variants:
                _against_auto(load_source(name), variants, run.ks, n_jobs, at.results)
        if len(seeds) > 1:
            _peer_table(run.results, pooled, tab=peer_differences(run.results, list(PEERS), ks=run.ks))
            _shared_table(run.results, ks=run.ks, label=pooled)
    return verdicts


def gain_seeds(datasets, aside_names, seeds, n_jobs: int, variants=(), unreached: str = "skip",
               auto=None) -> None:
    """Auto, and each variant of it (:func:`_variants`), at k = 5 and 10 (capped on a held-aside source as its peers
    table is, :func:`aside_ks`) on the paper's folds drawn with each of ``seeds``: the gain from the smaller size to
    the larger at every seed (:func:`seed_gains`), how many seeds it is negative at, and each variant's difference
    from auto, averaged over the seeds.  ``unreached``: the protocol's rule for a held-out model that observes
    none of the revealed benchmarks (:func:`cross_validate`)."""
    pipes = [Pipeline.auto() if auto is None else auto] + [pipe for pipe, _ in variants]
    runs = [(name, load_matrix(name), (5, 10)) for name in datasets]
    for name in aside_names:
        M = load_source(name)
        runs.append((f"held aside: {name}", M, aside_ks(M.shape[1])))
    for name, M, ks in runs:
        k0, k1 = min(ks), max(ks)
        if k0 == k1:
            print(f"\n== {name}: one size only (k={k0}), no gain to measure")
            continue
        t0 = time.perf_counter()
        df = pd.concat([cross_validate(M, pipes, holdouts=(0.1,), k_max=k1, ks=ks, n_folds=10, seed=sd,
                                       scheme="paper", levels=(), progress=False, n_jobs=n_jobs,
                                       unreached=unreached).assign(seed=sd)
                        for sd in seeds], ignore_index=True)
        tab = seed_gains(df, pipelines=[pipe.name for pipe in pipes], k0=k0, k1=k1)
        print(f"\n== {name}: the gain from k={k0} to k={k1} at each seed ({time.perf_counter() - t0:.0f} s, "
              f"{len(seeds)} seeds x 10 folds" + (", unscored models at the training mean)" if unreached == "mean"
                                                  else ")"))
        w = max([12] + [len(str(m)) for m in tab["pipeline"]])  # the pipeline column fits the longest variant name
        print(f"{'pipeline':<{w}} {'seed':>4} {f'k={k0}':>6} {f'k={k1}':>6} {'gain':>7} {'SE':>6} {'shared':>7} "
              f"{'SE':>6} {'nested':>6}")
        for r in tab.itertuples():
            print(f"{r.pipeline:<{w}} {r.seed:>4} {r.r2_k0:6.3f} {r.r2_k1:6.3f} {r.gain:+7.3f} {r.gain_se:6.3f} "
                  f"{r.gain_common:+7.3f} {r.gain_common_se:6.3f} {r.nested_cells:>3}/{r.n_cells}")
        for pipeline, t in tab.groupby("pipeline", sort=False):
            print(f"{pipeline}: R^2 falls from k={k0} to k={k1} at {int((t.gain < 0).sum())} of {len(t)} seeds, on the "
                  f"entries both sizes score ('shared') at {int((t.gain_common < 0).sum())}; mean gain "
                  f"{t.gain.mean():+.3f}")
        ref = tab[tab["pipeline"] == "auto"].set_index("seed")
        for pipe, what in variants:
            t = tab[tab["pipeline"] == pipe.name].set_index("seed")
            for col, k in (("r2_k0", k0), ("r2_k1", k1)):
                d = t[col] - ref[col]
                se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
                print(f"{what} - auto at k={k}, mean over the seeds: {d.mean():+.3f} +- {se:.3f} "
                      f"(above at {int((d > 0).sum())}, below at {int((d < 0).sum())} of {len(d)})")


#: the cost targets of the recommended pipeline on 2 cores: one fit at k = 5 per matrix, its full CV of the four
FIT_TARGET_S, CV_TARGET_S = 1.0, 60.0


def _before(key: str) -> str:
    """The figure ``key`` of the result file as it stood before this run ("-" when there is none)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "recommend-cost.json")
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)["values"].get(key, "-")
    except (OSError, ValueError, KeyError):
        return "-"


#: the fresh processes that time each matrix's fit (the median is the figure, the others show the spread)
FIT_RUNS = 5
#: what each of them runs: a process's first fit of the matrix named on its command line, timed
_FIT_PROGRAM = ("import sys, time\n"
                "from benchsel_lib import Pipeline, load_matrix\n"
                "M = load_matrix(sys.argv[1])\n"
                "t = time.perf_counter()\n"
                "Pipeline.auto(k=5).fit(M)\n"
                "print(time.perf_counter() - t)\n")


def _fit_seconds(name: str) -> float:
    """One ``Pipeline.auto(k=5).fit`` on ``name``, timed in a fresh process (one BLAS thread) that imports the
    library of this checkout (it starts in the repository's root)."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    res = subprocess.run([sys.executable, "-c", _FIT_PROGRAM, name], capture_output=True, text=True,
                         env=dict(os.environ), cwd=root, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"the timed fit on {name} failed:\n{res.stderr}")
    return float(res.stdout.split()[-1])


def fit_timing(datasets) -> list[str]:
    """``Pipeline.auto(k=5).fit`` on each matrix: the median of :data:`FIT_RUNS` fresh processes, beside the
    last figures; the file also keeps every run and which matrices meet the target."""
    out, met, missed = [], [], []
    for name in datasets:
        runs = [_fit_seconds(name) for _ in range(FIT_RUNS)]
        wall = float(np.median(runs))
        before = _before(f"fit_{name}_s")
        RESULTS.put("fit", name, "s", text=f"{wall:.2f}")
        RESULTS.put("fit", name, "runs", text=" / ".join(f"{r:.2f}" for r in runs))
        (met if wall <= FIT_TARGET_S else missed).append(NAMES.get(name, name))
        out.append(_verdict(wall <= FIT_TARGET_S, f"Pipeline.auto(k=5).fit on {name}: {wall:.2f} s, median of "
                            f"{FIT_RUNS} fresh processes ({', '.join(f'{r:.2f}' for r in runs)}; before: {before} s; "
                            f"target <= {FIT_TARGET_S:g} s)"))
    RESULTS.put("fit_target_s", text=f"{FIT_TARGET_S:g}")
    RESULTS.put("fit_runs", text=FIT_RUNS)
    RESULTS.put("fit_target", text="; ".join(part for part in (
        "met on " + and_join(met) if met else "", "not met on " + and_join(missed) if missed else "") if part))
    return out


def timing(datasets, n_jobs: int, variants=(), auto=None) -> list[str]:
    """The full CV of auto on ``datasets`` and one ``benchsel predict``, timed; each variant of auto
    (:func:`_variants`) is timed the same way, with its interval coverage, for comparison (no verdict)."""
    out = fit_timing(datasets)
    for pipe in [None] + [p for p, _ in variants]:
        label = "auto" if pipe is None else pipe.name
        t0 = time.perf_counter()
        for name in datasets:
            t = time.perf_counter()
            ref = "auto" if auto is None else auto
            df = _cv(load_matrix(name), name, (ref if pipe is None else pipe,), 42, LEVELS, n_jobs)
            if pipe is not None:
                cov = ", ".join(f"{r.coverage:.3f}" for r in pooled_coverage(df, pipeline=pipe.name,
                                                                                  levels=LEVELS).itertuples())
                print(f"{label} on {name}: coverage at {' / '.join(f'{v:.0%}' for v in LEVELS)} = {cov}")
            print(f"full CV of {label} on {name}: {time.perf_counter() - t:.1f} s")
            if pipe is None:
                RESULTS.put("cv", name, "s", text=f"{time.perf_counter() - t:.1f}")
        total = time.perf_counter() - t0
        text = (f"full CV of {label} (10 folds, k=1..10, levels) on {'+'.join(datasets)}: {total:.1f} s with "
                f"{n_jobs} workers")
        if pipe is None:
            before = _before("cv_total_s")
            RESULTS.put("cv_total_s", text=f"{total:.1f}")
            RESULTS.put("cv_jobs", text=n_jobs)
            RESULTS.put("cv_target", text="met" if total <= CV_TARGET_S else "not met")
            RESULTS.put("cv_target_s", text=f"{CV_TARGET_S:g}")
            out.append(_verdict(total <= CV_TARGET_S, text + f" (before: {before} s; target <= {CV_TARGET_S:g} s "
                                "on 2 cores)"))
        else:
            print(text)
    M = load_matrix("merged")
    counts = (~np.isnan(M.scores)).sum(axis=0)
    cols = np.argsort(-counts, kind="stable")[:5]
    row = int(np.flatnonzero((~np.isnan(M.scores[:, cols])).all(axis=1))[0])
    scores = ",".join(f"{M.benchmarks[j]}={M.scores[row, j]:.6g}" for j in cols)
    cmd = [sys.executable, "-m", "benchsel_lib.cli", "predict", "--data", "merged", "--scores", scores,
           "--format", "csv"]
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    wall = time.perf_counter() - t
    if res.returncode != 0:
        print(res.stderr)
    RESULTS.put("predict_s", text=f"{wall:.2f}")
    RESULTS.put("predict_target", text="met" if res.returncode == 0 and wall < 5.0 else "not met")
    RESULTS.put("predict_target_s", text="5")
    out.append(_verdict(res.returncode == 0 and wall < 5.0,
                        f"one `benchsel predict` on merged (5 given scores, recommended pipeline): {wall:.2f} s "
                        "(target < 5 s)"))
    return out


def _parser() -> argparse.ArgumentParser:
    """The command line of this benchmark."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="*", default=["mteb", "merged", "benchpress", "mmlu"],
                    help="the built-in matrices to compare on (default: all four; give the flag alone for none)")
    ap.add_argument("--seeds", nargs="+", type=int, default=None,
                    help=f"seeds of the paper's folds (default: 0 {PEER_SEED}; with --quick: {PEER_SEED})")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--greedy", action="store_true", help="add the predictive-greedy selector to the fixed grid")
    ap.add_argument("--anchors", action="store_true", help="add the anchor-point (k-medoids) selector to the fixed grid")
    ap.add_argument("--skip-grid", action="store_true")
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--aside", nargs="*", default=list(HELD_ASIDE), choices=list(HELD_ASIDE), metavar="NAME",
                    help="held-aside sources to check (default: all; give the flag alone for none)")
    ap.add_argument("--quick", action="store_true",
                    help="seed 42 only, auto against the peers alone (no fixed grid), no timing")
    ap.add_argument("--candidates", nargs="+", default=[], metavar="SELECTOR", choices=list(SELECTORS),
                    help="also run auto with these selectors among its candidates, against auto (seed 42)")
    ap.add_argument("--predictors", nargs="+", default=[], metavar="PREDICTOR",
                    choices=[p for p in PREDICTORS if p != "stack"],
                    help="also run auto with these predictors among its candidates (with --candidates: one variant "
                         "with both), against auto (seed 42)")
    ap.add_argument("--drop", nargs="+", default=[], metavar="SELECTOR", choices=list(DEFAULT_SELECTORS),
                    help="leave these of auto's selectors out of the variant's candidates (with --candidates or "
                         "--predictors: of that variant; alone: a variant of auto without them), against auto")
    ap.add_argument("--dense", action="store_true",
                    help="auto and its variants with auto's first candidate set on every matrix (Merged and "
                         "BenchPress included, where auto searches its sparse set) and without blocks")
    ap.add_argument("--choice", default=None, choices=[c for c in CHOICE_RULES if c != DEFAULT_RULE],
                    help="also run auto with this choice rule, against auto (seed 42)")
    ap.add_argument("--min-observed", type=int, default=None, metavar="N",
                    help="also run auto whose candidates (but entropy-obs, 30%%) reveal only benchmarks that at least "
                         f"N training models observe (auto's default: {DEFAULT_MIN_OBSERVED}; 0: every benchmark), "
                         "against auto (seed 42)")
    ap.add_argument("--blocks", nargs="+", type=int, default=[], metavar="B",
                    help="also run auto with these block sizes (Pipeline.auto(blocks=...): above B every candidate "
                         "keeps the choice at B where it is not nested), and the variants above with them in place "
                         "of their own")
    ap.add_argument("--gain-seeds", nargs="+", type=int, default=[], metavar="SEED",
                    help="also run auto (and the variants above) at k = 5 and 10 with each of these seeds")
    ap.add_argument("--json", default=None, metavar="PATH",
                    help="also write the figures printed for seed 42 (the peers tables, the same on the entries both "
                         "score, the gain from k = 5 to 10, coverage, the timing) with the command and the machine to "
                         "PATH (benchmarks/results/recommend.json is the one the book quotes)")
    ap.add_argument("--unreached", "--unconditioned", dest="unreached", default="skip", choices=["skip", "mean"],
                    help="in the --gain-seeds runs, leave out a held-out model that observes none of the revealed "
                         "benchmarks (skip: the paper) or score it with the training mean (mean)")
    return ap


def main() -> None:
    ap = _parser()
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.skip_timing = args.seeds or [PEER_SEED], True
    elif args.seeds is None:
        args.seeds = [0, PEER_SEED]
    load = load_start = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; cores: {os.cpu_count()}")
    verdicts = []
    if args.min_observed is not None and (args.min_observed < 0 or args.min_observed == DEFAULT_MIN_OBSERVED):
        ap.error(f"--min-observed must be >= 0 and not auto's own {DEFAULT_MIN_OBSERVED}, got {args.min_observed}")
    if args.drop and not args.candidates and set(args.drop) >= set(DEFAULT_SELECTORS):
        ap.error("--drop leaves auto without a candidate selector: add some with --candidates")
    # --dense: auto, and every variant, with auto's first candidate set on every matrix (no sparse set)
    base = dict(selectors=DEFAULT_SELECTORS, predictors=DEFAULT_PREDICTORS, blocks=()) if args.dense else {}
    auto = Pipeline.auto(**base, name="auto") if args.dense else None
    variants = _variants(args.candidates, args.choice, args.min_observed, args.predictors,
                         args.blocks, args.drop, base=base)
    if not args.skip_grid:
        verdicts += grid(args.datasets, args.seeds, args.n_jobs, args.greedy, args.anchors, args.quick, variants,
                         args.unreached, auto=auto)
    if args.aside:
        verdicts += aside(args.aside, args.n_jobs, variants, seeds=args.seeds if args.quick else (PEER_SEED,),
                          auto=auto)
    if args.gain_seeds:
        gain_seeds(args.datasets, args.aside, args.gain_seeds, args.n_jobs, variants, args.unreached, auto=auto)
    if not args.skip_timing and args.datasets:
        verdicts += timing(args.datasets, args.n_jobs, variants, auto=auto)
    print("\nverdicts:")
    for v in verdicts:
        print(v)
    load = os.getloadavg()
    print(f"load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json:
        write_json(args.json, verdicts, load_start=load_start, load_end=load)


def setup_values() -> dict[str, str]:
    """The protocol and auto's defaults, as the pages describe them (every result file carries them)."""
    return {"seed": str(PEER_SEED), "folds": "10", "holdout_pct": "10",
            "levels": " / ".join(f"{100 * v:.0f}" for v in LEVELS), "min_observed": str(DEFAULT_MIN_OBSERVED),
            "sparse_missing_pct": f"{100 * SPARSE_MISSING:.0f}",
            "selectors": ", ".join(DEFAULT_SELECTORS), "predictors": ", ".join(DEFAULT_PREDICTORS),
            "sparse_selectors": ", ".join(SPARSE_SELECTORS), "sparse_predictors": ", ".join(SPARSE_PREDICTORS),
            "n_peers": str(len(PEERS)), "blocks": ", ".join(str(b) for b in AUTO_BLOCKS)}


def write_json(path, verdicts, *, load_start, load_end=None, argv=None, results: Results | None = None) -> dict:
    """Write ``--json``: :data:`RESULTS` (or ``results``) and the verdict counts (:mod:`result_file`)."""
    values = (RESULTS if results is None else results).values()
    values.update(setup_values())
    values["verdicts"] = str(len(verdicts))
    values["verdicts_pass"] = str(sum(v.startswith("PASS") for v in verdicts))
    values["verdicts_fail"] = str(sum(v.startswith("FAIL") for v in verdicts))
    return result_file.write(path, values, load_start=load_start, load_end=load_end, argv=argv)


if __name__ == "__main__":
    main()
