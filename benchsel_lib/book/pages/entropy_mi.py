"""Chapter 5: greedy entropy against greedy mutual information (MI) and random selection (Section 5.4, Figs. 5-7).

The paper's statements (:func:`claims`) and the page's tables: MI's gain per fold (:func:`gain_table`), the R² of
the three (:func:`r2_table`), the surrogate gap (:func:`gap_table`), forced first picks (:func:`first_pick_table`).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...studies.bands import variant_range
from ..claims import Claim, not_run, quantity, verdict
from ..prose import label, num, range_text, signed

__all__ = ["PAPER_HOLDOUT", "SMALL_K", "at", "claims", "crossover", "first_pick_table", "fold_gains", "gain_table",
           "gap_table", "r2_table", "random_gap"]

#: The holdout of Section 5.4.
PAPER_HOLDOUT = 0.1
#: The small subset sizes of "for small k".
SMALL_K = (1, 2, 3, 4, 5)


def at(s: pd.DataFrame, pipeline: str, k: int, *, col: str = "r2_mean") -> float:
    """One value of a one-holdout :func:`~benchsel_lib.summarize_cv` table (NaN when missing). O(rows)."""
    row = s[(s["pipeline"] == pipeline) & (s["k"] == k)]
    return float(row[col].iloc[0]) if len(row) else np.nan


def fold_gains(cv: pd.DataFrame) -> pd.DataFrame:
    """Per fold and k: MI's R² minus entropy's on the same fold (columns ``fold, k, gain``). O(rows)."""
    mi = cv[cv["pipeline"] == "mi"].set_index(["fold", "k"])["r2"]
    ent = cv[cv["pipeline"] == "entropy"].set_index(["fold", "k"])["r2"]
    return (mi - ent.reindex(mi.index)).rename("gain").reset_index()


def random_gap(s: pd.DataFrame) -> float:
    """The median over k of the best greedy method's mean R² minus random's. O(rows)."""
    w = s.pivot_table(index="k", columns="pipeline", values="r2_mean")
    return float((w[["entropy", "mi"]].max(axis=1) - w["random"]).median())


def crossover(s: pd.DataFrame) -> float:
    """The smallest k from which entropy's mean R² stays at or above MI's (NaN if it never does). O(rows)."""
    e = s[s["pipeline"] == "entropy"].set_index("k")["r2_mean"].sort_index()
    ahead = (e >= s[s["pipeline"] == "mi"].set_index("k")["r2_mean"].reindex(e.index)).to_numpy()
    return next((float(k) for i, k in enumerate(e.index) if ahead[i:].all()), np.nan)


def _missing(matrix: str, k: int, summary: Mapping[str, pd.DataFrame], k_max: int) -> str:
    return f"{label(matrix)} was not in this run" if matrix not in summary else f"this run stops at k = {k_max}"


def _level(matrix: str, pipeline: str, k: int, paper: float, summary: Mapping[str, pd.DataFrame], *, key: str,
           k_max: int) -> Claim:
    text, where = f"{label(matrix)}, k = {k}: {pipeline if pipeline == 'entropy' else 'MI'} R²", "§5.4"
    section = "small-k" if k <= 5 else "large-k"
    if matrix not in summary or k > k_max:
        return not_run(text, where, num(paper), _missing(matrix, k, summary, k_max), section=section, key=key)
    value = at(summary[matrix], pipeline, k)
    v = verdict(value, paper, kind="r2")
    return Claim(text, where, num(paper), num(value), v,
                 "within 0.03" if v == "reproduced" else f"{signed(value - paper)} from the paper", section, key)


def _mteb_gap(summary: Mapping[str, pd.DataFrame], *, k_max: int) -> Claim:
    text, where, paper = "MTEB, k ≤ 3: MI ahead of entropy by about 10 points", "Fig. 6", "+0.10"
    if "mteb" not in summary:
        return not_run(text, where, paper, "MTEB was not in this run", section="small-k")
    ks = [k for k in (1, 2, 3) if k <= k_max]
    gap = float(np.mean([at(summary["mteb"], "mi", k) - at(summary["mteb"], "entropy", k) for k in ks]))
    v, why = verdict(gap, 0.10, kind="r2"), "MI ahead by less" if gap < 0.1 else "MI ahead by more"
    return Claim(text, where, paper, f"{signed(gap)} (mean over k = 1-{ks[-1]})", v,
                 "within 0.03" if v == "reproduced" else why, "small-k")


def _crossover(matrix: str, paper_k: int, text: str, where: str, summary: Mapping[str, pd.DataFrame], *,
               k_max: int) -> Claim:
    paper = f"k = {paper_k}"
    if matrix not in summary or k_max < paper_k + 2:
        return not_run(text, where, paper, _missing(matrix, paper_k, summary, k_max), section="large-k")
    k = crossover(summary[matrix])
    if not np.isfinite(k):
        return Claim(text, where, paper, f"MI ahead at k = {k_max}", "not reproduced", "entropy never stays ahead",
                     "large-k")
    return Claim(text, where, paper, f"k = {int(k)}", verdict(k, paper_k, kind="count"),
                 "entropy at or above MI from there on", "large-k")


def _share(text: str, where: str, paper: str, wins: int, cells: int, why: str, section: str) -> Claim:
    if not cells:
        return not_run(text, where, paper, "none of the paper's matrices or sizes was in this run", section=section)
    return Claim(text, where, paper, f"{wins} of {cells} (matrix, k)", verdict(wins / cells, 1.0, kind="share"), why,
                 section)


def claims(summary: Mapping[str, pd.DataFrame], cv: Mapping[str, pd.DataFrame], gap: pd.DataFrame, *, k_max: int,
           holdout: float, settings: Mapping[str, object]) -> list[Claim]:
    """The rows of the claims table: Section 5.4 and the captions of Figures 5-7.

    Parameters
    ----------
    summary, cv, gap : mapping of str to DataFrame, DataFrame
        Per matrix: CV summary and per-fold rows of entropy, MI and random at ``holdout``; :func:`gap_table`.
    k_max, holdout, settings :
        The run's largest size, holdout (not the paper's 10%: every row ``not run``) and the fold settings
        (``folds``, ``seed``, ``scheme``, ``estimator`` when not the paper's) that key each R².

    Returns
    -------
    list of Claim
    """
    def key(matrix: str, pipeline: str, k: int) -> str:
        return quantity(f"{matrix}-{pipeline}-r2", k=k, holdout=holdout, **settings)

    level = dict(summary=summary, k_max=k_max)
    means = [g > 0 for df in cv.values() for k, g in fold_gains(df).groupby("k")["gain"].mean().items()
             if k in SMALL_K and k <= k_max]
    sur = (gap["resid. entropy"] < gap["resid. MI"]) & (gap["R² MI"] > gap["R² entropy"])
    ws = [s.pivot_table(index="k", columns="pipeline", values=["residual_fraction_mean", "mi_mean"]) for s in summary.values()]
    dom = [(w["residual_fraction_mean"]["random"] > w["residual_fraction_mean"][["entropy", "mi"]].min(axis=1))
           & (w["mi_mean"]["random"] < w["mi_mean"]["mi"]) for w in ws]
    gaps = {m: random_gap(s) for m, s in summary.items()}
    far = max(gaps, key=lambda m: abs(gaps[m])) if gaps else None
    random_row = (not_run("Random competitive in R²", "Figs. 5-7", "0.00", "none of the paper's matrices was run",
                          section="figures-5-7") if far is None else
                  Claim("Random competitive in R² (best greedy − random, median over k)", "Figs. 5-7", "0.00",
                        ", ".join(f"{label(m)} {signed(g)}" for m, g in gaps.items()), verdict(gaps[far], 0.0, kind="r2"),
                        f"largest on {label(far)}", "figures-5-7"))
    rows = [_level("mmlu", "mi", 1, 0.83, key=key("mmlu", "mi", 1), **level),
            _level("mmlu", "entropy", 1, 0.65, key=key("mmlu", "entropy", 1), **level),
            _mteb_gap(summary, k_max=k_max),
            _share("MI ahead of entropy at small k (k ≤ 5), every matrix", "§5.4", "every (matrix, k)", sum(means), len(means),
                   "mean over folds of MI − entropy", "small-k"),
            _crossover("mmlu", 7, "MMLU: entropy catches up near k = 7", "§5.4", summary, k_max=k_max),
            _crossover("mteb", 10, "MTEB: entropy overtakes for k ≥ 10", "Fig. 6", summary, k_max=k_max),
            _level("merged", "mi", 15, 0.59, key=key("merged", "mi", 15), **level),
            _level("merged", "entropy", 15, 0.55, key=key("merged", "entropy", 15), **level),
            _share("Surrogate gap: entropy less residual variance, MI better R²", "§5.4", "every (matrix, k ≤ 5)",
                   int(sur.sum()), len(gap), f"MI less residual variance in {int((gap['resid. MI'] < gap['resid. entropy']).sum())}",
                   "the-surrogate-gap"),
            random_row,
            _share("Random dominated in residual variance and MI", "Figs. 5-7", "every (matrix, k)", sum(int(d.sum()) for d in dom), sum(map(len, dom)),
                   "more residual variance than the best greedy, less MI than greedy MI", "figures-5-7")]
    why = "this run does not hold out 10% of the models"
    return rows if np.isclose(holdout, PAPER_HOLDOUT) else [r if r.verdict == "not run" else not_run(
        r.claim, r.where, r.paper, why, section=r.section, key=r.key) for r in rows]


def gain_table(cv: Mapping[str, pd.DataFrame], *, k_max: int) -> pd.DataFrame:
    """MI's gain over entropy at each small k: mean over folds, its range and the folds where MI is ahead. O(rows)."""
    return pd.DataFrame([{"matrix": label(n), "k": k, "MI − entropy": float(x.mean()),
                          "over folds": range_text(x.min(), x.max(), "+.2f"),
                          "folds MI ahead": f"{int((x > 0).sum())} of {len(x)}"}
                         for n, df in cv.items() for k, x in fold_gains(df).dropna().groupby("k")["gain"]
                         if k in SMALL_K and k <= k_max])


def r2_table(summary: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame], *, ks: list[int]) -> pd.DataFrame:
    """Mean R² of entropy (with its range over the tie rules), MI and random at ``ks``. O(rows)."""
    return pd.DataFrame([{"matrix": label(n), "k": k, "entropy": at(s, "entropy", k), "tie rules": range_text(
        *band[n][band[n]["k"] == k]["r2_mean"].agg(["min", "max"])), "MI": at(s, "mi", k), "random": at(s, "random", k)}
        for n, s in summary.items() for k in ks])


def gap_table(summary: Mapping[str, pd.DataFrame], trace: Mapping[str, pd.DataFrame], *, k_max: int) -> pd.DataFrame:
    """At each small k: training residual variance and held-out R² of entropy, MI and the trace greedy. O(rows)."""
    def cols(s: pd.DataFrame, t: pd.DataFrame, k: int, col: str, head: str) -> dict[str, float]:
        return {f"{head} {m}": at(d, o, k, col=col) for m, o, d in (("entropy", "entropy", s), ("MI", "mi", s),
                                                                  ("trace", "trace", t))}
    return pd.DataFrame([{"matrix": label(n), "k": k, **cols(s, trace[n], k, "residual_fraction_mean", "resid."),
                          **cols(s, trace[n], k, "r2_mean", "R²")}
                         for n, s in summary.items() for k in SMALL_K if k <= k_max])


def first_pick_table(summary: Mapping[str, pd.DataFrame], first_pick: Mapping[str, pd.DataFrame], *,
                     k_max: int) -> pd.DataFrame:
    """Entropy's mean R² at k = 1, ``min(5, k_max)`` and ``k_max``: default rule, range over forced first picks."""
    return pd.DataFrame([{"matrix": label(n), "k": k, "default rule": at(summary[n], "entropy", k),
                          "forced first picks": range_text(r["min"], r["max"]), "worst first pick": r["lo_variant"],
                          "MI": at(summary[n], "mi", k)}
                         for n, fp in first_pick.items() for k in dict.fromkeys((1, min(5, k_max), k_max))
                         for r in [variant_range(fp, k=k).iloc[0]]])
