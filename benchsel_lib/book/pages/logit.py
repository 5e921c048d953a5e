"""Chapter 10: logit-space score transformation (Appendix K, Figures 16-18, Table 5)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...method.scaling import logit_transform
from ..prose import (
    PageProse,
    bullets,
    count,
    label,
    labels,
    num,
    paragraph,
    pct,
    run_line,
)

__all__ = ["PAPER_K90", "PAPER_TABLE5", "clipping_table", "components_table", "prose", "table5"]

#: Appendix K: components for 90% explained variance, (raw, logit).
PAPER_K90: dict[str, tuple[int, int]] = {"mmlu": (2, 2), "mteb": (6, 8), "merged": (8, 10)}
#: Table 5: MI-selected R^2 at k = 5, 10% holdout, (raw, logit).
PAPER_TABLE5: dict[str, tuple[float, float]] = {"mmlu": (0.91, 0.91), "mteb": (0.76, 0.72), "merged": (0.51, 0.39),
                                                "benchpress": (-0.11, -0.22)}
PAPER_AT = (0.1, 5)


def clipping_table(matrices: Mapping[str, Any]) -> pd.DataFrame:
    """Per matrix: columns the logit transform cannot take, columns with negative scores, entries it clips."""
    rows = []
    for n, m in matrices.items():
        X = np.asarray(m.scores, dtype=float)
        neg = np.nanmin(X, axis=0) < 0
        _, smax = logit_transform(X)
        rows.append({"matrix": label(n), "columns with max <= 0": int((np.nanmax(X, axis=0) <= 0).sum()),
                     "columns with negative scores": int(neg.sum()),
                     "negative entries (clipped to eps)": int(np.nansum(X < 0)),
                     "entries clipped at 1 - eps (the maximum)": int(np.nansum(X / smax > 1 - 1e-3)),
                     "observed entries": int((~np.isnan(X)).sum()),
                     "negative columns": ", ".join(m.benchmarks[j] for j in np.flatnonzero(neg))})
    return pd.DataFrame(rows).set_index("matrix")


def components_table(spec_raw: Mapping[str, Any], spec_logit: Mapping[str, Any], levels: Sequence[float]) -> pd.DataFrame:
    """Components for each explained-variance level, raw against logit, beside the paper's 90% counts."""
    rows = []
    for n in spec_raw:
        row: dict[str, Any] = {"matrix": label(n)}
        for lvl in levels:
            row[f"raw k {100 * lvl:g}%"] = spec_raw[n].n_components(lvl)
            row[f"logit k {100 * lvl:g}%"] = spec_logit[n].n_components(lvl)
        pr = PAPER_K90.get(n)
        row["paper 90% (raw / logit)"] = f"{pr[0]} / {pr[1]}" if pr else "not given"
        rows.append(row)
    return pd.DataFrame(rows).set_index("matrix")


def _r2_at(s: pd.DataFrame, method: str, k: int) -> float:
    sel = s[(s["method"] == method) & (s["k"] == k)]
    return float(sel["r2_mean"].iloc[0]) if len(sel) else float("nan")


def table5(sum_raw: Mapping[str, pd.DataFrame], sum_logit: Mapping[str, pd.DataFrame], *, k: int,
           holdout: float) -> pd.DataFrame:
    """Table 5: MI-selected R^2 at ``k``, raw against logit, with the paper's values (at k = 5, 10% holdout)."""
    comparable = np.isclose(holdout, PAPER_AT[0]) and k == PAPER_AT[1]
    rows = [{"matrix": label(n), "raw (measured)": _r2_at(sum_raw[n], "mi", k),
             "logit (measured)": _r2_at(sum_logit[n], "mi", k),
             "raw (paper)": PAPER_TABLE5[n][0] if comparable else np.nan,
             "logit (paper)": PAPER_TABLE5[n][1] if comparable else np.nan} for n in sum_raw]
    return pd.DataFrame(rows, columns=["matrix", "raw (measured)", "logit (measured)", "raw (paper)",
                                       "logit (paper)"]).set_index("matrix")


def prose(
    *,
    clipping: pd.DataFrame,
    spec_raw: Mapping[str, Any],
    spec_logit: Mapping[str, Any],
    table: pd.DataFrame,
    sum_logit: Mapping[str, pd.DataFrame],
    datasets: Sequence[str],
    methods: Sequence[str],
    k: int,
    k_max: int,
    n_folds: int,
    holdout: float,
    seed: int,
    config: str,
    quick: bool,
) -> PageProse:
    """The page's passages, written from the run's spectra and cross-validation summaries.

    Parameters
    ----------
    clipping : DataFrame
        :func:`clipping_table`.
    spec_raw, spec_logit : mapping
        Eigenspectra of the raw and logit correlation per matrix.
    table : DataFrame
        :func:`table5` (MI at ``k``; empty values when MI was not run).
    sum_logit : mapping
        ``summarize_cv`` of the logit runs per matrix.
    datasets, methods, k, k_max, n_folds, holdout, seed, config, quick :
        The run's parameters (``k`` the subset size of Table 5).

    Returns
    -------
    PageProse
        Passages ``this_book``, ``differ``, ``components_md``, ``findings``.
    """
    comparable = bool(np.isclose(holdout, PAPER_AT[0]) and k == PAPER_AT[1])
    details = [f"{pct(holdout)} holdout", count(n_folds, "fold"), f"k = 1-{k_max}", f"seed {seed}",
               f"EM configuration `{config}`"]
    k90 = {n: (spec_raw[n].n_components(0.90), spec_logit[n].n_components(0.90)) for n in datasets}
    comp = "; ".join(f"{label(n)} {k90[n][0]} raw vs {k90[n][1]} logit"
                     + (f" (paper: {PAPER_K90[n][0]} vs {PAPER_K90[n][1]})" if n in PAPER_K90 else
                        " (not given in the paper)") for n in datasets)
    components_md = f"Components for 90% explained variance: {comp}."

    has_mi = "mi" in methods
    t5 = []
    lower = []
    if has_mi:
        for n in datasets:
            raw, lg = table.loc[label(n), "raw (measured)"], table.loc[label(n), "logit (measured)"]
            lower.append(lg < raw)
            t5.append(f"{label(n)} {num(raw)} vs {num(lg)}"
                      + (f" (paper {num(PAPER_TABLE5[n][0])} vs {num(PAPER_TABLE5[n][1])})" if comparable else ""))
    table_sentence = (f"MI at k = {k}, raw vs logit: " + "; ".join(t5) + f". The logit pipeline is lower than the raw "
                      f"one on {sum(lower)} of {len(lower)} matrices." if has_mi else
                      "MI was not run (parameter `methods`), so Table 5 is not computed.")

    agree = []
    if has_mi and comparable:
        for n, low in zip(datasets, lower):
            paper_low = PAPER_TABLE5[n][1] < PAPER_TABLE5[n][0]
            if n == "mmlu":
                agree.append(f"on MMLU the paper has the two equal ({num(PAPER_TABLE5[n][0])}) and this run "
                             f"{'lower' if low else 'not lower'} in logit space")
            else:
                agree.append(f"on {label(n)} the direction {'agrees' if low == paper_low else 'differs'}")
    bp = ""
    if has_mi and "benchpress" in datasets:
        raw, lg = table.loc["BenchPress", "raw (measured)"], table.loc["BenchPress", "logit (measured)"]
        bp = (f"On BenchPress the raw pipeline reaches {num(raw)} and the logit one {num(lg)}; on a matrix this sparse "
              f"the assignment of models to folds alone moves such values a lot (chapter 8), so the order of the two "
              f"is not robust.")

    neg = clipping["columns with negative scores"]
    negtext = "; ".join(f"{int(neg[label(n)])} on {label(n)}" for n in datasets if neg[label(n)] > 0)
    others = [(n, m) for n in datasets for m in methods if m != "mi"]
    logit_others = "; ".join(f"{label(n)} " + " / ".join(f"{m} {num(_r2_at(sum_logit[n], m, k))}"
                                                        for m in methods if m != "mi") for n in datasets)

    this_book = paragraph(run_line(datasets, described=tuple(PAPER_TABLE5), details=details, quick=quick),
                          components_md, table_sentence)
    differ = paragraph(
        ("Against the paper: " + "; ".join(agree) + ".") if agree else
        ("" if comparable else f"This run's Table 5 is at k = {k} and {pct(holdout)} holdout, not the paper's k = 5 "
                               f"and 10%, so it is not compared with the paper's values."),
        "The raw levels differ where earlier chapters explain it: " + "; ".join(
            x for x in ("the smaller MMLU matrix" if "mmlu" in datasets else "",
                        "the thinly observed columns of " + labels(n for n in ("merged", "benchpress") if n in datasets)
                        if {"merged", "benchpress"} & set(datasets) else "") if x) + "."
        if {"mmlu", "merged", "benchpress"} & set(datasets) else "",
        bp)

    found = [
        paragraph("**Table 5.**", table_sentence,
                  ("The paper has the logit pipeline " + "; ".join(
                      f"{'lower' if PAPER_TABLE5[n][1] < PAPER_TABLE5[n][0] else 'equal'} on {label(n)}"
                      for n in datasets) + " (\"the logit transform does not improve imputation\").")
                  if has_mi and comparable else "",
                  "The raw values differ from the paper's where earlier chapters explain it: "
                  + "; ".join(x for x in (
                      "MMLU is this project's smaller matrix" if "mmlu" in datasets else "",
                      "Merged's MI curve depends on the EM tolerance and the fold streams (chapter 5)"
                      if "merged" in datasets else "",
                      "the paper's BenchPress numbers come from its earlier EM configuration (chapter 8)"
                      if "benchpress" in datasets else "") if x) + "."
                  if has_mi and comparable and {"mmlu", "merged", "benchpress"} & set(datasets) else ""),
        paragraph("**Eigenspectrum.**", components_md),
        paragraph("**Columns the transform mishandles.** No column has a non-positive maximum (the transform would "
                  "refuse it with a `ValueError`)." if int(clipping["columns with max <= 0"].sum()) == 0 else
                  "**Columns the transform mishandles.**",
                  f"Columns with negative scores ({negtext}) are kept; their negative scores are all clipped to the "
                  f"same floor, which discards their ordering; together with the cap at the training maximum that "
                  f"the inverse map imposes on stronger validation models, this can cost R² wherever such columns "
                  f"matter." if negtext else "No column of this run has negative scores.",
                  (f"The paper's largest logit loss is on Merged (0.51 vs 0.39); in this run Merged reads "
                   f"{num(table.loc['Merged', 'raw (measured)'])} (raw) vs "
                   f"{num(table.loc['Merged', 'logit (measured)'])} (logit).") if has_mi and "merged" in datasets
                  else ""),
        paragraph(f"**Other methods in logit space** at k = {k}: {logit_others}.") if others else "",
    ]
    return PageProse(list(datasets), {"this_book": this_book, "differ": differ, "components_md": components_md,
                                      "findings": bullets(found)})

