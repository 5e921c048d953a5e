"""Chapter 8: BenchPress (Appendix I, Figures 13-14, Table 4).

The paper's BenchPress numbers, the chapter's claims (:func:`claims`) and the tables
and checks its notebook shows (:func:`fold_table`, :func:`leads`, :func:`negative_folds`).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...studies.first_pick import PAPER_BENCHPRESS_ENTROPY
from ..claims import Claim, not_run, quantity, verdict
from ..prose import num, pct

__all__ = ["PAPER", "at", "claims", "first_pick_reference", "fold_table", "key", "leads", "negative_folds"]

#: Appendix I and Table 4 (10% holdout): (pipeline, k) -> the paper's mean R² in the "early" EM configuration.
PAPER: dict[tuple[str, int], float] = {("entropy", 5): 0.21, ("mi", 5): -0.11, ("random", 5): 0.24,
                                       ("entropy", 15): 0.25}
METHODS = {"entropy": "entropy", "mi": "MI", "random": "random"}


def at(summary: pd.DataFrame | None, pipeline: str, holdout: float, k: int) -> float | None:
    """Mean R² of ``pipeline`` at ``holdout`` and ``k`` in a ``summarize_cv`` table; None when not run. O(rows)."""
    if summary is None:
        return None
    s = summary[(summary["pipeline"] == pipeline) & np.isclose(summary["holdout"], holdout) & (summary["k"] == k)]
    return float(s["r2_mean"].iloc[0]) if len(s) and np.isfinite(s["r2_mean"].iloc[0]) else None


def key(pipeline: str, *, k: int, holdout: float, folds: int, seed: int, scheme: str) -> str:
    """The quantity key of BenchPress's mean R² (early EM configuration), shared with chapter 9. O(1)."""
    return quantity(f"benchpress-{pipeline}-r2", k=k, holdout=holdout, folds=folds, seed=seed, scheme=scheme,
                    config="early")


def fold_table(cv: pd.DataFrame, *, holdout: float, k: int) -> pd.DataFrame:
    """R² of each fold (counted from 1) at ``holdout`` and ``k``, one column per pipeline. O(rows of ``cv``)."""
    d = cv[np.isclose(cv["holdout"], holdout) & (cv["k"] == k)]
    t = d.pivot_table(index="fold", columns="pipeline", values="r2", aggfunc="first")
    t = t[[m for m in METHODS if m in t.columns]].rename(columns=METHODS)
    t.index = t.index + 1
    return t.rename_axis(columns=None).reset_index()


def negative_folds(cv: pd.DataFrame, *, holdout: float, k: int) -> dict[str, int]:
    """Per pipeline, the number of folds with a negative R² at ``holdout`` and ``k``. O(rows of ``cv``)."""
    d = cv[np.isclose(cv["holdout"], holdout) & (cv["k"] == k)]
    return {m: int((d.loc[d["pipeline"] == m, "r2"] < 0).sum()) for m in METHODS}


def leads(summary: pd.DataFrame) -> pd.Series:
    """Entropy's mean R² minus random's, averaged over k, per holdout (negative: random ahead). O(rows)."""
    piv = summary[summary["pipeline"].isin(["entropy", "random"])].pivot_table(
        index=["holdout", "k"], columns="pipeline", values="r2_mean")
    return (piv["entropy"] - piv["random"]).groupby(level="holdout").mean()


def first_pick_reference(*, k_max: int, holdout: float, seed: int, scheme: str, estimator: str,
                         n_folds: int) -> dict[int, float] | None:
    """The paper's entropy values for the first-pick study: only on its folds, 10% holdout, EM estimate."""
    if (seed, scheme, n_folds, estimator) != (42, "paper", 10, "auto") or not np.isclose(holdout, 0.1):
        return None
    return {kk: v for kk, v in PAPER_BENCHPRESS_ENTROPY.items() if kk <= k_max}


def _level(pipeline: str, k: int, s: pd.DataFrame | None, *, missing: str, settings: dict) -> Claim:
    claim, paper = f"{METHODS[pipeline][0].upper() + METHODS[pipeline][1:]} at k = {k}, 10% holdout", PAPER[(pipeline, k)]
    where, section = ("Fig. 13", "figure-13") if k == 15 else ("App. I, Table 4", "figure-14")
    value, qkey = at(s, pipeline, 0.1, k), key(pipeline, k=k, holdout=0.1, **settings)
    if value is None:
        return not_run(claim, where, f"{paper:.2f}", missing, section=section, key=qkey)
    v = verdict(value, paper, kind="r2")
    why = ("within 0.03 of the paper" if v == "reproduced" else
           "entropy's first pick is a tie, broken otherwise than by the paper's code" if pipeline == "entropy" else
           "8 or 9 validation models a fold: fold noise")
    return Claim(claim, where, f"{paper:.2f}", num(value), v, why, section, qkey)


def claims(summary: pd.DataFrame | None, cv: pd.DataFrame | None, *, holdouts: Sequence[float], k_max: int,
           n_folds: int, seed: int, scheme: str) -> list[Claim]:
    """The claims of Appendix I (Figures 13-14, Table 4), checked on the early configuration's run.

    Parameters
    ----------
    summary, cv : DataFrame or None
        ``summarize_cv`` and ``cross_validate`` output of the ``early`` configuration (None: not run).
    holdouts : list of float
        The run's holdouts.
    k_max, n_folds, seed, scheme
        The run's largest subset size, folds, fold seed and fold scheme.

    Returns
    -------
    list of Claim
        Nine rows; a row the run cannot check is ``not run`` with the reason.
    """
    has, settings = (lambda h: any(np.isclose(holdouts, h))), dict(folds=n_folds, seed=seed, scheme=scheme)

    def missing(h: float, k: int) -> str | None:
        return ("the early configuration, the paper's, was not run" if summary is None else
                f"no {pct(h)} holdout in this run" if not has(h) else f"this run stops at k = {k_max}" if k > k_max
                else None)

    rows = [_level(m, k, summary if not missing(0.1, k) else None, missing=missing(0.1, k) or "", settings=settings)
            for m, k in PAPER]
    ent, rnd = at(summary, "entropy", 0.1, 5), at(summary, "random", 0.1, 5)
    c, w = "MI unstable: negative R² on several folds, k = 5", "Fig. 14"
    neg = negative_folds(cv, holdout=0.1, k=5) if cv is not None else {}
    if missing(0.1, 5):
        rows.append(not_run(c, w, "several folds", missing(0.1, 5), section="figure-14"))
    else:
        rows.append(Claim(c, w, "several folds", f"{neg['mi']} of {n_folds} (entropy {neg['entropy']}, random "
                          f"{neg['random']})", verdict(neg["mi"], 3, kind="count", direction="at least"),
                          "several read as 3 or more", "figure-14"))
    c, w = "Entropy and random comparable at k = 5", "Fig. 14"
    rows.append(not_run(c, w, "both about 0.2", missing(0.1, 5), section="figure-14") if missing(0.1, 5) else Claim(
        c, w, "both about 0.2", f"entropy − random {num(ent - rnd)}", verdict(ent - rnd, 0.0, kind="r2"),
        "negative: random ahead", "figure-14"))
    for h, c, paper, direction in ((0.5, "50% holdout: negative R² at k = 15", "below 0", "at most"),
                                   (0.9, "90% holdout: essentially uninformative at k = 15", "about 0", "both")):
        e, r = at(summary, "entropy", h, 15), at(summary, "random", h, 15)
        if missing(h, 15) or e is None:
            rows.append(not_run(c, "App. I", paper, missing(h, 15) or "not scored", section="figure-13"))
            continue
        rows.append(Claim(c, "App. I", paper, f"entropy {num(e)}", verdict(e, 0.0, kind="r2", direction=direction),
                          f"random {num(r)} on the same splits" if r is not None else "random not scored",
                          "figure-13"))
    c, w = "Random competitive with entropy at every holdout", "Fig. 13"
    if summary is None:
        rows.append(not_run(c, w, "at every holdout", missing(0.1, 1), section="figure-13"))
    else:
        lead = leads(summary)
        rows.append(Claim(c, w, "at every holdout", "entropy − random, mean over k: " + ", ".join(
            f"{pct(h)} {num(v)}" for h, v in lead.items()), verdict(float(lead.max()), 0.0, kind="r2",
                                                                     direction="at most"),
            "entropy's largest lead counts", "figure-13"))
    return rows
