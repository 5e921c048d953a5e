"""Chapter 7: normality diagnostics (Appendix H, Figure 12)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...studies.diagnostics import mardia_test, shapiro_wilk_table
from ..prose import (
    PageProse,
    bullets,
    code,
    count,
    label,
    labels,
    num,
    paragraph,
    run_line,
)

__all__ = ["MARDIA_COLUMNS", "PAPER", "PAPER_WORST", "mardia_table", "prose", "shapiro_summary",
           "threshold_sensitivity", "worst_table"]

#: Appendix H: rejected of tested benchmarks and median W (MMLU, MTEB; Merged: 60 of 114).
PAPER: dict[str, tuple[int, int, float | None]] = {"mmlu": (57, 57, 0.84), "mteb": (56, 56, 0.89),
                                                   "merged": (60, 114, None)}
#: Appendix H: the worst benchmarks the paper names, with their W.
PAPER_WORST: dict[str, dict[str, float]] = {
    "mmlu": {"marketing": 0.66, "world_religions": 0.70},
    "mteb": {"SprintDuplicateQuestions": 0.46, "STS17": 0.50},
    "merged": {"mmlu/world_religions": 0.71, "mmlu/marketing": 0.71, "mmlu/logical_fallacies": 0.74}}
#: Appendix H: Mardia's kurtosis on MMLU and its null expectation.
PAPER_MARDIA_MMLU = (6374, 3363)
MARDIA_COLUMNS = ["complete rows M", "dropped rows", "N (rank)", "skewness b1", "skew p", "kurtosis b2",
                  "null E[b2] = N(N+2)", "kurtosis z", "kurt p"]


def shapiro_summary(sw: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per matrix: benchmarks, tested, excluded, rejected and median W beside the paper's counts."""
    rows = []
    for n, t in sw.items():
        a = t.attrs
        pr, pn, pw = PAPER.get(n, (np.nan, np.nan, np.nan))
        rows.append({"matrix": label(n), "benchmarks": len(t), "tested": a["n_tested"],
                     "excluded (few obs.)": a["n_excluded"], "rejected": a["n_rejected"],
                     "median W": round(float(t.loc[t["tested"], "W"].median()), 3), "paper rejected": pr,
                     "paper of": pn, "paper median W": np.nan if pw is None else pw})
    return pd.DataFrame(rows).set_index("matrix")


def worst_table(sw: Mapping[str, pd.DataFrame], n_worst: int) -> pd.DataFrame:
    """The ``n_worst`` tested benchmarks with the smallest W per matrix."""
    return pd.concat({label(n): t[t["tested"]].nsmallest(n_worst, "W")[["n", "W", "p_adjusted", "reject"]]
                      for n, t in sw.items()}, names=["matrix", "benchmark"])


def threshold_sensitivity(matrix: Any, thresholds: Sequence[int], *, correction: str, alpha: float) -> pd.DataFrame:
    """Tested / excluded / rejected columns of ``matrix`` for each ``min_observed`` threshold."""
    rows = []
    for thr in thresholds:
        a = shapiro_wilk_table(matrix, correction=correction, alpha=alpha, min_observed=thr).attrs
        rows.append({"min_observed": a["min_observed"], "tested": a["n_tested"], "excluded": a["n_excluded"],
                     "rejected": a["n_rejected"], "not rejected": a["n_tested"] - a["n_rejected"]})
    return pd.DataFrame(rows).set_index("min_observed")


def mardia_table(matrices: Mapping[str, Any], *, alpha: float) -> tuple[pd.DataFrame, dict[str, str]]:
    """Mardia's skewness and kurtosis per matrix; matrices where the test is not defined go to the notes.

    Returns the table (columns :data:`MARDIA_COLUMNS`, empty when no matrix can be tested) and
    ``{matrix: reason}`` for those left out.
    """
    rows, notes = [], {}
    for n, m in matrices.items():
        try:
            r = mardia_test(m, alpha=alpha)
        except ValueError as err:
            notes[n] = str(err)
            continue
        rows.append({"matrix": label(n), "complete rows M": r.n_rows, "dropped rows": r.n_dropped, "N (rank)": r.rank,
                     "skewness b1": r.b1, "skew p": r.skew_p, "kurtosis b2": r.b2,
                     "null E[b2] = N(N+2)": r.kurt_expected, "kurtosis z": r.kurt_statistic, "kurt p": r.kurt_p})
    table = pd.DataFrame(rows, columns=["matrix", *MARDIA_COLUMNS]).set_index("matrix")
    return table, notes


def prose(
    *,
    sw: Mapping[str, pd.DataFrame],
    mardia: pd.DataFrame,
    mardia_notes: Mapping[str, str],
    sensitivity: pd.DataFrame | None,
    merged_counts: np.ndarray | None,
    datasets: Sequence[str],
    alpha: float,
    correction: str,
    min_observed: int,
    quick: bool,
) -> PageProse:
    """The page's passages, written from the tests of this run.

    Parameters
    ----------
    sw : mapping
        Per matrix the ``shapiro_wilk_table``.
    mardia, mardia_notes :
        :func:`mardia_table`.
    sensitivity : DataFrame or None
        :func:`threshold_sensitivity` of Merged (None when Merged was not run); ``merged_counts`` its
        observed models per column.
    datasets, alpha, correction, min_observed, quick :
        The run's parameters.

    Returns
    -------
    PageProse
        Passages ``this_book``, ``differ``, ``sw_md``, ``worst_md``, ``threshold_md``, ``mardia_md``, ``findings``.
    """
    corr = "Benjamini-Hochberg" if correction == "bh" else "Bonferroni"
    details = [f"Shapiro-Wilk with {corr} correction at α = {num(alpha, 'g')}",
               f"columns with fewer than {min_observed} observed models excluded"]

    def sw_sentence(n: str) -> str:
        t, a = sw[n], sw[n].attrs
        med = float(t.loc[t["tested"], "W"].median())
        pr, pn, pw = PAPER.get(n, (None, None, None))
        paper = f" (paper: {pr} of {pn}" + (f", median W {num(pw)})" if pw is not None else ")") if pr is not None else ""
        excl = f", {count(a['n_excluded'], 'column')} excluded" if a["n_excluded"] else ""
        return (f"{label(n)}: {a['n_rejected']} of {a['n_tested']} tested benchmarks reject{excl}, median W "
                f"{num(med)}{paper}")

    sw_md = "; ".join(sw_sentence(n) for n in datasets) + "."

    worst = []
    for n in datasets:
        t = sw[n]
        named = [f"{code(b)} W = {num(t.at[b, 'W'])} (paper {num(w)})" for b, w in PAPER_WORST.get(n, {}).items()
                 if b in t.index and bool(t.at[b, "tested"])]
        smallest = t[t["tested"]]["W"].idxmin() if t["tested"].any() else None
        worst.append(f"on {label(n)} " + (", ".join(named) + "; " if named else "")
                     + (f"the smallest W is {num(t.at[smallest, 'W'])} ({code(smallest)})" if smallest is not None
                        else "no column is tested"))
    worst_md = paragraph(worst[0][:1].upper() + "; ".join(worst)[1:] + ".",
                         "The MMLU matrix of chapter 1 is less extreme than the paper's 5,452 models, which include "
                         "many more weak and near-chance models whose accuracies pile up at a few values."
                         if "mmlu" in datasets else "")

    if sensitivity is not None and len(sensitivity):
        first = sensitivity.iloc[0]
        threshold_md = paragraph(
            f"Testing every Merged column that has at least {int(sensitivity.index[0])} values gives "
            f"{int(first['rejected'])} rejections among {int(first['tested'])} tested columns (the paper: 60 of 114)"
            + (f": the paper evidently tested every column, so its 54 \"passing\" benchmarks include the "
               f"{sw['merged'].attrs['n_excluded']} columns excluded here (observed for fewer than {min_observed} "
               f"models), where the test has essentially no power." if (int(first["rejected"]), int(first["tested"]))
               == (60, 114) else "."),
            f"In Merged, {int((merged_counts < 20).sum())} columns have fewer than 20 observed models and "
            f"{int(((merged_counts >= 20) & (merged_counts <= 50)).sum())} have 20-50, which is why the test has much "
            f"less power there." if merged_counts is not None else "")
    else:
        threshold_md = "Merged was not run (parameter `datasets`), so the threshold sensitivity is not computed."

    mardia_parts = []
    for n in datasets:
        if label(n) in mardia.index:
            r = mardia.loc[label(n)]
            mardia_parts.append(f"on {label(n)} ({int(r['complete rows M'])} complete rows) the kurtosis is "
                                f"β₂ = {num(r['kurtosis b2'], ',.0f')} against the null expectation N(N+2) = "
                                f"{num(r['null E[b2] = N(N+2)'], ',.0f')} (z = {num(r['kurtosis z'], '.1f')})"
                                + (f"; the paper reports {PAPER_MARDIA_MMLU[0]:,} vs {PAPER_MARDIA_MMLU[1]:,} on its "
                                   f"5,452 models" if n == "mmlu" else ""))
    untested = [n for n in datasets if n in mardia_notes]
    mardia_md = paragraph(
        (mardia_parts[0][:1].upper() + "; ".join(mardia_parts)[1:] + ".") if mardia_parts else "",
        f"{labels(untested)} {'has' if len(untested) == 1 else 'have'} too few complete rows for the test, which "
        f"needs every benchmark observed." if untested else "")

    tested_pairs = [n for n in datasets if sw[n].attrs["n_tested"] > 0]
    n_rej = sum(sw[n].attrs["n_rejected"] for n in tested_pairs)
    n_tst = sum(sw[n].attrs["n_tested"] for n in tested_pairs)
    this_book = paragraph(run_line(datasets, described=("mmlu", "mteb", "merged"), details=details, quick=quick),
                          sw_md,
                          (mardia_parts[0][:1].upper() + mardia_parts[0][1:] + ".") if mardia_parts else "")
    every = ""
    if sensitivity is not None and len(sensitivity):
        r0 = sensitivity.iloc[0]
        every = (" (testing every column reproduces the paper's 60 of 114)" if (int(r0["rejected"]), int(r0["tested"]))
                 == (60, 114) else f" (testing every column gives {int(r0['rejected'])} of {int(r0['tested'])}; the "
                 f"paper: 60 of 114)")
    excess = ""
    if "mmlu" in datasets and label("mmlu") in mardia.index:
        r = mardia.loc[label("mmlu")]
        ours, theirs = r["kurtosis b2"] - r["null E[b2] = N(N+2)"], PAPER_MARDIA_MMLU[0] - PAPER_MARDIA_MMLU[1]
        excess = (f"Mardia's excess kurtosis on this book's MMLU matrix ({num(ours, ',.0f')}) is "
                  f"{'smaller' if ours < theirs else 'larger'} than on the paper's 5,452 models ({theirs:,})"
                  + ("; the conclusion, strongly non-Gaussian, is the same." if r["kurt p"] < alpha else "."))
    differ = paragraph(
        f"{count(sw['merged'].attrs['n_excluded'], 'Merged column')} {'is' if sw['merged'].attrs['n_excluded'] == 1 else 'are'} "
        f"observed for fewer than {min_observed} models; the test has no power there, so they are excluded and "
        f"listed instead of being counted as \"passing\"{every}." if "merged" in datasets else "",
        excess,
        f"Across the matrices run, {n_rej} of {n_tst} tested benchmarks reject normality." if not
        {"merged", "mmlu"} & set(datasets) else "")

    found = [paragraph(f"**Shapiro-Wilk.** Normality is rejected for {n_rej} of the {n_tst} tested benchmarks: "
                       + sw_md)]
    if sensitivity is not None and len(sensitivity):
        found.append(paragraph(
            f"**Merged's thin columns.** {sw['merged'].attrs['n_excluded']} columns with fewer than {min_observed} "
            f"observed models are excluded and listed instead of being counted as \"passing\"; testing every column "
            f"with at least {int(sensitivity.index[0])} values gives {int(sensitivity.iloc[0]['rejected'])} of "
            f"{int(sensitivity.iloc[0]['tested'])} (the paper: 60 of 114)."))
    if mardia_parts or untested:
        found.append(paragraph("**Mardia.**", mardia_md,
                               excess + (" The difference presumably comes from the far fewer and more homogeneous "
                                         "models of this MMLU matrix." if excess else "")))
    found.append("As the paper argues, non-Gaussian marginals do not invalidate the method: the Gaussian conditional "
                 "mean is the best linear predictor whatever the marginals, and the cross-validated R² (chapter 4) "
                 "is the practical test.")
    return PageProse(list(datasets), {"this_book": this_book, "differ": differ, "sw_md": sw_md, "worst_md": worst_md,
                                      "threshold_md": threshold_md, "mardia_md": mardia_md or
                                      "No matrix of this run has complete rows for Mardia's test.",
                                      "findings": bullets(found)})
