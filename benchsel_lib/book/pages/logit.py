"""Chapter 10: logit-space score transformation (Appendix K, Figures 16-18, Table 5).

The paper's numbers, the page's tables and its claims table: components for 90% of the variance in raw and logit
space (Figure 16) and MI's R² at k = 5, raw against logit on the same folds (Table 5).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..claims import TOLERANCES, VERDICTS, Claim, not_run, quantity, verdict
from ..prose import label, num, signed

__all__ = ["PAPER_AT", "PAPER_K90", "PAPER_TABLE5", "claims", "clipping_table", "components_table", "r2_at",
           "table5"]

#: Appendix K: components for 90% explained variance, (raw, logit).
PAPER_K90: dict[str, tuple[int, int]] = {"mmlu": (2, 2), "mteb": (6, 8), "merged": (8, 10)}
#: Table 5: MI-selected R² at k = 5, 10% holdout, 10 folds, (raw, logit).
PAPER_TABLE5: dict[str, tuple[float, float]] = {"mmlu": (0.91, 0.91), "mteb": (0.76, 0.72), "merged": (0.51, 0.39),
                                                "benchpress": (-0.11, -0.22)}
#: (holdout, k, folds) of Table 5.
PAPER_AT = (0.1, 5, 10)


def r2_at(summary: pd.DataFrame, name: str, space: str, pipeline: str, k: int) -> float:
    """Mean R² of ``pipeline`` at ``k`` in ``space`` on ``name`` (from ``summarize_cv`` rows; NaN when absent)."""
    s = summary.query("dataset == @name and space == @space and pipeline == @pipeline and k == @k")
    return float(s["r2_mean"].iloc[0]) if len(s) else float("nan")


def clipping_table(matrices: Mapping[str, Any], *, eps: float = 1e-3) -> pd.DataFrame:
    """Per matrix: columns with negative scores, entries the transform clips to its floor (below ``eps * max``,
    every negative score) and to its ceiling (above ``(1 - eps) * max``), observed entries."""
    rows = []
    for n, m in matrices.items():
        x = np.asarray(m.scores, dtype=float)
        ratio = x / np.nanmax(x, axis=0)
        rows.append({"Matrix": label(n), "Columns with negative scores": int((np.nanmin(x, axis=0) < 0).sum()),
                     "Entries at the floor": int(np.nansum(ratio < eps)),
                     "Entries at the ceiling": int(np.nansum(ratio > 1 - eps)),
                     "Observed entries": int((~np.isnan(x)).sum())})
    return pd.DataFrame(rows)


def components_table(spec_raw: Mapping[str, Any], spec_logit: Mapping[str, Any], levels: Sequence[float],
                     estimated: Mapping[str, str]) -> pd.DataFrame:
    """Components for each level, raw → logit, the paper's 90% counts and the estimate (name -> text)."""
    rows = []
    for n in spec_raw:
        row: dict[str, Any] = {"Matrix": label(n)}
        for lvl in levels:
            raw, lg = spec_raw[n].n_components(lvl), spec_logit[n].n_components(lvl)
            row[f"{100 * lvl:g}%, raw → logit"] = f"{raw} → {lg}"
        rows.append({**row, "Paper, 90%": "{} → {}".format(*PAPER_K90[n]) if n in PAPER_K90 else "not given",
                     "Estimate": estimated[n]})
    return pd.DataFrame(rows)


def table5(summary: pd.DataFrame, datasets: Sequence[str], *, k: int, paper: bool) -> pd.DataFrame:
    """Table 5: MI's R² at ``k``, raw and logit, with the paper's columns when ``paper`` (the run is at its
    k, holdout and folds)."""
    rows = []
    for n in datasets:
        raw, lg = r2_at(summary, n, "raw", "mi", k), r2_at(summary, n, "logit", "mi", k)
        row = dict(zip(("Raw, paper", "Logit, paper"), PAPER_TABLE5[n])) if paper else {}
        rows.append({"Matrix": label(n), **row, "Raw, here": raw, "Logit, here": lg, "Logit − raw": lg - raw})
    return pd.DataFrame(rows)


def _worse(*verdicts: str) -> str:
    return max(verdicts, key=VERDICTS.index)


def claims(summary: pd.DataFrame, *, spec_raw: Mapping[str, Any], spec_logit: Mapping[str, Any],
           settings: Mapping[str, Any], off: str | None = None) -> list[Claim]:
    """The claims table: Figure 16's counts, Table 5 per matrix, and "the transform improves no matrix".

    Parameters
    ----------
    summary : DataFrame
        ``summarize_cv`` rows of the raw and logit runs (``dataset``, ``space`` columns).
    spec_raw, spec_logit : mapping
        Eigenspectra of the raw and logit correlation per matrix run.
    settings : mapping
        ``k``, ``holdout``, ``folds``, ``seed``, ``scheme`` and ``configs`` (matrix -> EM configuration):
        the settings the numbers depend on (their keys).
    off : str, optional
        Why the run's R² is not comparable with Table 5 (its rows are then ``not run``).

    Returns
    -------
    list of Claim
        A pair counts as reproduced when both its numbers are (the worse verdict of the two).
    """
    cfg, k, rows, diffs = settings["configs"], settings["k"], [], {}
    cv = {s: settings[s] for s in ("k", "holdout", "folds", "seed", "scheme")}
    for n, (a, b) in PAPER_K90.items():
        what, where, paper = f"{label(n)}: components for 90%, raw → logit", "App. K, Fig. 16", f"{a} → {b}"
        key = quantity(f"{n}-components-raw-logit", level=0.9, config=cfg.get(n, "released"))
        if n not in spec_raw:
            rows.append(not_run(what, where, paper, f"{label(n)} was not in this run", section="figure-16", key=key))
            continue
        r, lg = spec_raw[n].n_components(0.9), spec_logit[n].n_components(0.9)
        why = "both as in the paper" if (r, lg) == (a, b) else "smaller MMLU matrix" if n == "mmlu" \
            else "counts differ"
        rows.append(Claim(what, where, paper, f"{r} → {lg}", _worse(verdict(r, a, kind="count"), verdict(
            lg, b, kind="count")), why, section="figure-16", key=key))
    for n, (a, b) in PAPER_TABLE5.items():
        what, paper = f"MI R² at k = {PAPER_AT[1]}, raw → logit: {label(n)}", f"{num(a)} → {num(b)}"
        key = quantity(f"{n}-mi-r2-raw-logit", **cv, config=cfg.get(n, "released"))
        if off or n not in spec_raw:
            rows.append(not_run(what, "Table 5", paper, off or f"{label(n)} was not in this run", section="table-5",
                                key=key))
            continue
        r, lg = r2_at(summary, n, "raw", "mi", k), r2_at(summary, n, "logit", "mi", k)
        diffs[n] = lg - r
        why = ("smaller MMLU; " if n == "mmlu" else "") + f"logit − raw {signed(lg - r)}, paper {signed(b - a)}"
        rows.append(Claim(what, "Table 5", paper, f"{num(r)} → {num(lg)}", _worse(verdict(r, a, kind="r2"), verdict(
            lg, b, kind="r2")), why, section="table-5", key=key))
    what = "The logit transform improves no matrix"
    if not diffs:
        return [*rows, not_run(what, "App. K", "0 of 4", off or "no matrix of Table 5 in this run", section="table-5")]
    better = [n for n, d in diffs.items() if verdict(d, 0.0, kind="r2", direction="at most") != "reproduced"]
    why = "logit higher on " + ", ".join(map(label, better)) if better else f"none by {TOLERANCES['r2'].reproduced}+"
    return [*rows, Claim(what, "App. K", "0 of 4", f"{len(better)} of {len(diffs)}",
                         verdict(len(better), 0, kind="count"), why, section="table-5")]
