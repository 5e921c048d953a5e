"""Chapter 4: greedy entropy against random selection under cross-validation (Section 5.3, Figures 2-4).

The paper's numbers (:data:`LEVELS`), the claims table (:func:`claims`), the page's tables and the measures its
sentences are checked against (:func:`structure_wins`, :func:`r2_gaps`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..claims import Claim, not_run, quantity, verdict
from ..prose import label, num, pct, range_text, signed

__all__ = ["LEVELS", "PAPER_HOLDOUT", "Level", "at", "claims", "holdout_table", "r2_gaps", "r2_key", "r2_table",
           "structure_wins"]

#: The holdout of the paper's statements in Section 5.3 (other than the 90% one).
PAPER_HOLDOUT = 0.1


@dataclass(frozen=True)
class Level:
    """A mean R² that Section 5.3 states: matrix, subset size, holdout, paper's value, pipeline, direction."""
    matrix: str
    k: int
    holdout: float
    paper: float
    pipeline: str = "entropy"
    direction: str = "both"


#: The numbers of Section 5.3 (mean R² over the folds).
LEVELS = (Level("mmlu", 5, 0.1, 0.89), Level("mmlu", 10, 0.1, 0.92, direction="at least"),
          Level("mmlu", 15, 0.1, 0.95), Level("mmlu", 10, 0.9, 0.92), Level("mteb", 5, 0.1, 0.72),
          Level("mteb", 15, 0.1, 0.85), Level("merged", 15, 0.1, 0.55), Level("mmlu", 5, 0.1, 0.89, pipeline="random"))


def _sg(value: float) -> str:
    return "0.00" if float(signed(value)) == 0 else signed(value)  # never -0.00


def at(s: pd.DataFrame, pipeline: str, k: int, holdout: float, *, col: str = "r2_mean") -> float:
    """One value of a :func:`~benchsel_lib.summarize_cv` table (NaN when the run lacks it). O(rows)."""
    row = s[(s["pipeline"] == pipeline) & (s["k"] == k) & np.isclose(s["holdout"].astype(float), holdout)]
    return float(row[col].iloc[0]) if len(row) else np.nan


def r2_key(matrix: str, pipeline: str, *, k: int, holdout: float, folds: int, seed: int, scheme: str) -> str:
    """The quantity key of a pipeline's mean R² (shared with the other chapters that state it)."""
    return quantity(f"{matrix}-{pipeline}-r2", k=k, holdout=holdout, folds=folds, seed=seed, scheme=scheme)


def structure_wins(s: pd.DataFrame, holdout: float) -> tuple[int, int]:
    """Sizes k > 1 (at k = 1 every log det is 0) where entropy beats random in residual variance and log det; all k > 1."""
    s = s[np.isclose(s["holdout"].astype(float), holdout)]
    e = s[(s["pipeline"] == "entropy") & (s["k"] > 1)].set_index("k")
    r = s[s["pipeline"] == "random"].set_index("k").reindex(e.index)
    both = (e["residual_fraction_mean"] < r["residual_fraction_mean"]) & (e["logdet_mean"] > r["logdet_mean"])
    return int(both.sum()), len(both)


def r2_gaps(summary: Mapping[str, pd.DataFrame], holdout: float) -> dict[str, float]:
    """Per matrix: entropy's mean R² minus random's, averaged over every k (positive: entropy ahead). O(rows)."""
    ws = {n: s[np.isclose(s["holdout"].astype(float), holdout)].pivot_table(index="k", columns="pipeline",
                                                                             values="r2_mean")
          for n, s in summary.items()}
    return {n: float((w["entropy"] - w["random"]).mean()) for n, w in ws.items() if len(w)}


def _level_claim(lv: Level, summary: Mapping[str, pd.DataFrame], *, k_max: int, n_models: Mapping[str, int],
                 folds: int, seed: int, scheme: str) -> Claim:
    text = (f"{label(lv.matrix)}, k = {lv.k}: {lv.pipeline} R²" + (" above" if lv.direction == "at least" else "")
            + ("" if lv.holdout == PAPER_HOLDOUT else f", {pct(lv.holdout)} held out"))
    where, paper, key = "§5.3", num(lv.paper), r2_key(lv.matrix, lv.pipeline, k=lv.k, holdout=lv.holdout, folds=folds, seed=seed, scheme=scheme)
    section = "fewer-training-models" if lv.holdout > 0.5 else "against-the-paper"
    if lv.matrix not in summary:
        return not_run(text, where, paper, f"{label(lv.matrix)} was not in this run", section=section, key=key)
    value = at(summary[lv.matrix], lv.pipeline, lv.k, lv.holdout)
    if not np.isfinite(value):
        why = f"this run stops at k = {k_max}" if lv.k > k_max else f"the {pct(lv.holdout)} holdout was not run"
        return not_run(text, where, paper, why, section=section, key=key)
    v = verdict(value, lv.paper, kind="r2", direction=lv.direction)
    why = "within 0.03" if v == "reproduced" else f"{_sg(value - lv.paper)} from the paper"
    if v != "reproduced" and lv.matrix == "mmlu" and "mmlu" in n_models:
        why += f"; this MMLU matrix has {n_models['mmlu']:,} of the paper's 5,452 models"
    return Claim(text, where, paper, num(value), v, why, section, key)


def _structure_claim(summary: Mapping[str, pd.DataFrame], holdout: float) -> Claim:
    text = f"Entropy: less residual variance and more entropy than random, MTEB and Merged, {pct(holdout)} held out"
    where, paper = "§5.3, Figs. 3-4", "every k > 1"
    counts = {m: structure_wins(summary[m], holdout) for m in ("mteb", "merged") if m in summary}
    counts = {m: c for m, c in counts.items() if c[1]}
    if not counts:
        return not_run(text, where, paper, "neither MTEB nor Merged was in this run", section="figures-2-4")
    wins, cells = sum(w for w, _ in counts.values()), sum(n for _, n in counts.values())
    lost = [f"{label(m)} {n - w}" for m, (w, n) in counts.items() if w < n]
    why = "ahead in both at every size" if not lost else "sizes where random is ahead in one: " + ", ".join(lost)
    return Claim(text, where, paper, f"{wins} of {cells} sizes", verdict(wins / cells, 1.0, kind="share"), why,
                 "figures-2-4")


def _baseline_claim(summary: Mapping[str, pd.DataFrame], holdout: float) -> Claim:
    text = f"Random stays close to entropy in R² (mean over k), {pct(holdout)} held out"
    where, paper = "§5.3", "0.00"
    gaps = r2_gaps(summary, holdout)
    if not gaps:
        return not_run(text, where, paper, f"the {pct(holdout)} holdout was not run", section="figures-2-4")
    far = max(gaps, key=lambda m: abs(gaps[m]))
    run = "entropy − random: " + ", ".join(f"{label(m)} {_sg(g)}" for m, g in gaps.items())
    return Claim(text, where, paper, run, verdict(gaps[far], 0.0, kind="r2"), f"largest gap {label(far)}, "
                 f"{'entropy' if gaps[far] > 0 else 'random'} ahead by {num(abs(gaps[far]))}", "figures-2-4")


def claims(summary: Mapping[str, pd.DataFrame], *, k_max: int, n_models: Mapping[str, int], folds: int, seed: int,
           scheme: str, holdouts: Sequence[float]) -> list[Claim]:
    """The rows of the claims table: Section 5.3's R² levels and its statements about random selection.

    Parameters
    ----------
    summary : mapping of str to DataFrame
        :func:`~benchsel_lib.summarize_cv` of entropy and random per matrix of the run.
    k_max, folds, seed, scheme, holdouts :
        The run's settings (the fold settings are part of each R²'s key; the statements on random are
        checked at every holdout).
    n_models : mapping of str to int
        Models per matrix (this MMLU matrix is smaller than the paper's).

    Returns
    -------
    list of Claim
    """
    opts, hs = dict(k_max=k_max, n_models=n_models, folds=folds, seed=seed, scheme=scheme), sorted(holdouts)
    return [*(_level_claim(lv, summary, **opts) for lv in LEVELS), *(_structure_claim(summary, h) for h in hs),
            *(_baseline_claim(summary, h) for h in hs)]


def r2_table(summary: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame], *, holdout: float,
             ks: Sequence[int]) -> pd.DataFrame:
    """Mean R² of entropy, its range over the tie rules in ``band`` (``tie_break_band``), random, the paper's."""
    rows = []
    for name, s in summary.items():
        b = band[name][np.isclose(band[name]["holdout"].astype(float), holdout)].groupby("k")["r2_mean"]
        lo, hi = b.min(), b.max()
        for k in ks:
            paper = [lv.paper for lv in LEVELS if (lv.matrix, lv.k, lv.pipeline) == (name, k, "entropy")
                     and np.isclose(lv.holdout, holdout)]
            rows.append({"matrix": label(name), "k": k, "entropy": at(s, "entropy", k, holdout),
                         "tie rules": range_text(lo[k], hi[k]) if k in lo.index else "—",
                         "random": at(s, "random", k, holdout), "paper": paper[0] if paper else np.nan})
    return pd.DataFrame(rows)


def holdout_table(summary: Mapping[str, pd.DataFrame], *, ks: Sequence[int]) -> pd.DataFrame:
    """Entropy's mean R² per matrix and ``k`` (rows) at every holdout of the run (one column each). O(rows)."""
    return pd.DataFrame([{"matrix": label(n), "k": k, **{f"{pct(h)} held out": at(s, "entropy", k, float(h))
                                                         for h in sorted(s["holdout"].unique())}}
                         for n, s in summary.items() for k in ks])
