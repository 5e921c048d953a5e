"""Chapter 11: using benchsel on your own data (Section 6: cost-aware selection, mandatory benchmarks, the dual)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..prose import (
    PageProse,
    bullets,
    cap,
    code,
    count,
    label,
    num,
    paragraph,
    pct,
    run_line,
)

__all__ = ["coverage_summary", "prose"]

METHOD_NAMES = {"entropy": "entropy", "mi": "MI", "random": "random"}


def coverage_summary(calib: pd.DataFrame, *, k: int, level: float = 0.9) -> pd.DataFrame:
    """Per matrix: coverage of the nominal ``level`` interval at ``k`` (mean over methods), raw and inflated,
    and the largest absolute coverage gap over every (method, k, level) cell."""
    rows = []
    for name, d in calib.groupby("dataset", sort=False):
        at = d[np.isclose(d["nominal"], level) & (d["k"] == k)]
        rows.append({"matrix": name, "coverage": float(at["coverage"].mean()),
                     "coverage inflated": float(at["coverage_cal"].mean()) if "coverage_cal" in at else np.nan,
                     "largest gap": float(d["gap"].abs().max()),
                     "largest gap inflated": float(d["gap_cal"].abs().max()) if "gap_cal" in d else np.nan})
    return pd.DataFrame(rows).set_index("matrix")


def prose(
    *,
    selection: Any,
    budget: float,
    cost: float,
    mandatory: Sequence[str],
    demo: Mapping[str, Any],
    calib: pd.DataFrame,
    coverage: pd.DataFrame,
    k_cov: int,
    extrapolation: pd.DataFrame,
    dual: pd.DataFrame,
    k_dual: int,
    demo_dataset: str,
    calib_datasets: Sequence[str],
    extrapolation_dataset: str,
    extrapolation_quantile: float,
    dual_dataset: str,
    n_folds: int,
    holdout: float,
    seed: int,
    quick: bool,
) -> PageProse:
    """The page's passages, written from the results of the worked example.

    Parameters
    ----------
    selection : Selection
        The budgeted entropy selection (``strategy``, ``order``, ``residual_fraction``).
    budget, cost : float
        The budget and the total cost of the selection.
    mandatory : list of str
        Benchmarks selected first.
    demo : mapping
        ``{"inside": int, "n": int, "mae": float}`` of the single-model prediction.
    calib, coverage : DataFrame
        ``calibration_table`` rows of every calibration matrix (``dataset`` column) and :func:`coverage_summary`.
    k_cov : int
        Subset size of the quoted coverage.
    extrapolation : DataFrame
        ``extrapolation_check`` rows at k = 5.
    dual : DataFrame
        ``summarize_cv`` of the transposed matrix; ``k_dual`` the number of reference models quoted.
    demo_dataset, calib_datasets, extrapolation_dataset, extrapolation_quantile, dual_dataset, n_folds, holdout, seed,
    quick :
        The run's parameters.

    Returns
    -------
    PageProse
        Passages ``this_book``, ``differ``, ``demo_md``, ``calibration_md``, ``extrapolation_md``, ``dual_md``,
        ``findings``.
    """
    ran = list(dict.fromkeys([demo_dataset, *calib_datasets, extrapolation_dataset, dual_dataset]))
    k_sel = len(selection.order)
    resid = float(selection.residual_fraction[k_sel - 1])
    won = "the cost-effective greedy" if selection.strategy == "cost-effective" else "the best single benchmark"
    budget_text = (f"Under a budget of {num(budget, '.1f')} cost units, with {', '.join(code(b) for b in mandatory)} "
                   f"selected first, the modified greedy (entropy) picks {count(k_sel, 'benchmark')} (total cost "
                   f"{num(cost, '.1f')}) leaving {pct(resid, 1)} of the variance; {won} won.")
    demo_md = (f"{demo['inside']} of the {demo['n']} true scores fall inside the 90% intervals (mean absolute error "
               f"{num(demo['mae'], '.3f')} in the benchmarks' own units).")

    gap_all = float(calib["gap"].abs().mean())
    gap_cal = float(calib["gap_cal"].abs().mean()) if "gap_cal" in calib else float("nan")
    under = float((calib["gap"] < 0).mean())
    cov = coverage
    per = "; ".join(f"{m} {num(r['coverage'], '.3f')}" + (f" → {num(r['coverage inflated'], '.3f')}"
                                                          if np.isfinite(r["coverage inflated"]) else "")
                    for m, r in cov.iterrows())
    inflated = np.isfinite(gap_cal)
    calibration_md = paragraph(
        f"Mean absolute coverage gap over all (matrix, method, k, level) cells: {num(gap_all, '.3f')}"
        + (f" before and {num(gap_cal, '.3f')} after the variance inflation" if inflated else "")
        + f"; {pct(under)} of the raw cells cover less than their nominal level.",
        f"Coverage of the nominal 90% interval at k = {k_cov} (mean over the selection methods)"
        + (", raw → inflated" if inflated else "") + f": {per}.",
        "The largest gap per matrix" + (" (raw / inflated)" if inflated else "") + ": " + "; ".join(
            f"{m} {num(r['largest gap'], '.3f')}" + (f" / {num(r['largest gap inflated'], '.3f')}" if inflated else "")
            for m, r in cov.iterrows()) + ".")
    lo, hi = cov["coverage"].idxmin(), cov["coverage"].idxmax()
    cov_range = (f"ranges from {num(cov.loc[lo, 'coverage'])} ({lo}) to {num(cov.loc[hi, 'coverage'])} ({hi})"
                 if lo != hi else f"is {num(cov.loc[lo, 'coverage'])} ({lo})")

    ex = extrapolation.set_index(["method", "split"])
    top_pct = pct(1 - extrapolation_quantile)

    def ex_val(meth: str, split: str, col: str) -> str:
        return num(ex.loc[(meth, split), col])

    ex_methods = [m for m in ("mi", "entropy", "random") if (m, "top") in ex.index]
    ex_lead = ex_methods[0]
    extrapolation_md = paragraph(
        f"On {label(extrapolation_dataset)} with {METHOD_NAMES[ex_lead]} selection at k = 5, predicting the strongest "
        f"{top_pct} of the models gives R² = {ex_val(ex_lead, 'top', 'r2')} and 90% coverage "
        f"{ex_val(ex_lead, 'top', 'cov_90')}, against {ex_val(ex_lead, 'random', 'r2')} and "
        f"{ex_val(ex_lead, 'random', 'cov_90')} on a random split of the same size.",
        cap("; ".join(f"{METHOD_NAMES[m]}: {ex_val(m, 'top', 'r2')} vs {ex_val(m, 'random', 'r2')}"
                  for m in ex_methods[1:])) + "." if len(ex_methods) > 1 else "")

    d = dual[dual["k"] == k_dual].set_index("method")["r2_mean"]
    dual_methods = [m for m in ("mi", "entropy", "random") if m in d.index]
    dual_md = (f"With {count(k_dual, 'reference model')} of {label(dual_dataset)} the held-out benchmarks' scores on "
               f"all other models are predicted with R² = "
               + ", ".join(f"{num(d[m])} ({METHOD_NAMES[m]})" for m in dual_methods) + ".")

    details = [f"calibration on {', '.join(label(n) for n in calib_datasets)}", f"{pct(holdout)} holdout",
               count(n_folds, "fold"), f"seed {seed}"]
    this_book = paragraph(run_line(ran, details=details, quick=quick), budget_text,
                          f"The Gaussian intervals are checked under the paper's cross-validation protocol (mean "
                          f"absolute coverage gap {num(gap_all, '.3f')}"
                          + (f", {num(gap_cal, '.3f')} after a variance inflation fitted on the training folds)."
                             if inflated else ")."), dual_md)
    differ = paragraph(
        "Nothing here is a reproduction; it is what a practitioner needs on top of the paper.",
        f"The calibration check is this book's addition: the coverage of the nominal 90% interval at k = {k_cov} "
        f"{cov_range}" + (", and one inflation factor per (method, k) cannot fix intervals that are off for only "
                                 "some benchmarks." if inflated else "."))
    found = [
        paragraph(f"**Budgeted selection.** {budget_text}",
                  "The paper (Section 6) proposes exactly this knapsack variant and mandatory initial sets but gives "
                  "no numbers to compare with."),
        paragraph("**Calibration** (not in the paper, which reports no intervals).", calibration_md,
                  "Read the reliability plot for where the fix helps and where it does not: the inflation is one "
                  "factor per (method, k) and cannot repair intervals that are off for only some benchmarks"
                  + (" (for example Merged's thinly observed columns, whose correlations rest on a handful of "
                     "models)." if "merged" in calib_datasets else ".") if inflated else ""),
        paragraph(f"**Extrapolation.** {extrapolation_md}",
                  "Peer work reports that such predictors fail exactly at the frontier; compare the two splits before "
                  "trusting a prediction for a model stronger than everything in your matrix."),
        f"**Model-selection dual** (the paper's \"future work\", Section 6). {dual_md}",
    ]
    return PageProse(ran, {"this_book": this_book, "differ": differ, "demo_md": demo_md,
                           "calibration_md": calibration_md, "extrapolation_md": extrapolation_md,
                           "dual_md": dual_md, "findings": bullets(found)})
