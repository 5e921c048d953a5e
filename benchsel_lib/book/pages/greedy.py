"""Chapter 4: greedy selection under cross-validation (Section 5.3, Figures 2-4)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..prose import (
    PageProse,
    bullets,
    count,
    label,
    num,
    paragraph,
    pct,
    range_text,
    run_line,
    signed,
)

__all__ = ["PAPER", "figure_caption", "holdout_table", "prose", "r2_table", "table_holdout", "table_ks"]

#: Section 5.3 at 10% holdout: mean R^2 of greedy entropy, by (matrix, k).
PAPER: dict[tuple[str, int], float] = {("mmlu", 5): 0.89, ("mmlu", 10): 0.92, ("mmlu", 15): 0.95,
                                       ("mteb", 5): 0.72, ("mteb", 15): 0.85, ("merged", 15): 0.55}
#: The holdout of the paper's statements.
PAPER_HOLDOUT = 0.1


def table_holdout(holdouts: Sequence[float], band_holdout: float) -> float:
    """The holdout of the comparison table and of the tie-break band: the run's holdout nearest ``band_holdout``."""
    return float(min(holdouts, key=lambda h: abs(h - band_holdout)))


def table_ks(k_max: int) -> list[int]:
    """Subset sizes of the comparison table: 1, ``min(5, k_max)``, 10 and 15 where they do not exceed ``k_max``."""
    return sorted({k for k in (1, min(5, k_max), 10, 15) if k <= k_max})


def r2_table(summary: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame], *, holdout: float,
             k_max: int) -> pd.DataFrame:
    """Mean R^2 of entropy, the tie-break band and random at ``holdout``, beside the paper's values.

    ``band`` must hold the tie-break variants at the same ``holdout`` (the
    band compared with a curve is computed where the curve is).
    """
    rows = []
    for name, s in summary.items():
        s = s[np.isclose(s["holdout"], holdout)]
        b = band[name][np.isclose(band[name]["holdout"], holdout)]
        if b.empty:
            raise ValueError(f"the tie-break band of {name} has no rows at holdout {holdout}")
        b = b.groupby("k")["r2_mean"].agg(["min", "max"])
        for k in table_ks(k_max):
            ent = s[(s["method"] == "entropy") & (s["k"] == k)]
            rnd = s[(s["method"] == "random") & (s["k"] == k)]
            rows.append({"matrix": label(name), "k": k,
                         "entropy": float(ent["r2_mean"].iloc[0]), "entropy sd": float(ent["r2_sd"].iloc[0]),
                         "band min": float(b.loc[k, "min"]), "band max": float(b.loc[k, "max"]),
                         "random": float(rnd["r2_mean"].iloc[0]),
                         "paper": PAPER.get((name, k), np.nan) if np.isclose(holdout, PAPER_HOLDOUT) else np.nan})
    return pd.DataFrame(rows)


def holdout_table(summary: Mapping[str, pd.DataFrame], *, k: int) -> pd.DataFrame:
    """Entropy's mean R^2 at subset size ``k`` for every holdout of the run, per matrix."""
    return pd.concat(
        [s[(s["method"] == "entropy") & (s["k"] == k)].assign(matrix=label(n))
         [["matrix", "holdout", "r2_mean", "r2_sd", "residual_fraction_mean"]] for n, s in summary.items()],
        ignore_index=True)


def _holdout_sentence(ht: pd.DataFrame, k: int) -> str:
    """Entropy's R^2 at each holdout, with its change relative to the smallest holdout."""
    parts = []
    for m, g in ht.groupby("matrix", sort=False):
        g = g.sort_values("holdout")
        first = g.iloc[0]
        steps = [f"{num(first['r2_mean'], '.3f')} at {pct(first['holdout'])}"]
        for _, r in g.iloc[1:].iterrows():
            text = f"{num(r['r2_mean'], '.3f')} at {pct(r['holdout'])}"
            if first["r2_mean"] > 0:
                change = (r["r2_mean"] - first["r2_mean"]) / first["r2_mean"]
                text += " (unchanged)" if abs(change) < 0.005 else f" ({'+' if change > 0 else '−'}{pct(abs(change))})"
            steps.append(text)
        parts.append(f"{m} " + ", ".join(steps))
    if not parts:
        return ""
    if len(ht["holdout"].unique()) == 1:
        return f"This run has one holdout: entropy's mean R² at k = {k} is " + "; ".join(parts) + "."
    return (f"Larger holdouts (smaller training sets) change entropy's mean R² at k = {k} as follows (relative "
            f"change against the smallest holdout): " + "; ".join(parts) + ".")


def figure_caption(*, holdouts: Sequence[float], holdout: float, n_folds: int, tie_breaks: Sequence[str]) -> str:
    """Caption of Figures 2-4 for this run: what the panels, lines, bands and the hatched range show."""
    return paragraph(
        f"One row of panels per holdout ({', '.join(pct(h) for h in sorted(holdouts))}). Left: imputation R² of the "
        f"held-out models; middle: residual variance fraction (log scale); right: entropy of the selected set.",
        "Solid lines with markers: greedy entropy (default tie rule `\"auto\"`); dashed: random; shaded: ±1 sd "
        f"across the {count(n_folds, 'fold')}.",
        f"Hatched (at {pct(holdout)} holdout only): the range of entropy's mean R² over the tie-break rules "
        + ", ".join(f"`{t}`" for t in tie_breaks) + ".")


def prose(
    *,
    table: pd.DataFrame,
    holdouts_r2: pd.DataFrame,
    datasets: Sequence[str],
    holdout: float,
    band_holdout: float,
    holdouts: Sequence[float],
    k_max: int,
    n_folds: int,
    seed: int,
    quick: bool,
    tie_breaks: Sequence[str] = ("auto", "argmax", "index", "mi"),
) -> PageProse:
    """The page's passages, written from the comparison table (:func:`r2_table`) and :func:`holdout_table`.

    Parameters
    ----------
    table, holdouts_r2 : DataFrame
        The run's comparison table and entropy's R^2 per holdout at ``min(5, k_max)``.
    datasets : list of str
        Matrices of the run.
    holdout : float
        Holdout of the table and of the tie-break band (:func:`table_holdout`).
    band_holdout, holdouts, k_max, n_folds, seed, quick, tie_breaks :
        The run's parameters.

    Returns
    -------
    PageProse
        Passages ``this_book``, ``differ``, ``table_md``, ``figures_md``, ``findings``.
    """
    k_ref = min(5, k_max)
    h = pct(holdout)
    t = table
    details = [f"holdout{'s' if len(holdouts) > 1 else ''} {', '.join(pct(x) for x in holdouts)}",
               count(n_folds, "fold"), f"k = 1-{k_max}", f"seed {seed}"]
    above = int((t["entropy"] > t["random"]).sum())
    lead = []
    for name in datasets:
        r = t[(t["matrix"] == label(name)) & (t["k"] == k_ref)].iloc[0]
        paper = PAPER.get((name, k_ref)) if np.isclose(holdout, PAPER_HOLDOUT) else None
        lead.append(f"{label(name)} reaches R² = {num(r['entropy'], '.3f')} with entropy (range over tie-break rules "
                    f"{range_text(r['band min'], r['band max'], '.3f')}) against {num(r['random'], '.3f')} for random"
                    + (f"; the paper reports {num(paper)}" if paper is not None else ""))
    lead_text = f"At {h} holdout and k = {k_ref}, " + "; ".join(lead) + "."
    note_h = (f" The band is computed at {h}, the run's holdout nearest to `band_holdout` = {pct(band_holdout)}."
              if not np.isclose(holdout, band_holdout) else "")
    table_md = paragraph(
        f"The table is at {h} holdout, where the tie-break band is computed too.{note_h}",
        "Paper values are those Section 5.3 states for 10% holdout." if np.isclose(holdout, PAPER_HOLDOUT) else
        "Section 5.3 states values for 10% holdout only, so the `paper` column is empty.")

    margin = t.assign(m=t["entropy"] - t["random"]).groupby("k")["m"].mean()
    k_best = int(margin.idxmax())
    widths = t.assign(w=t["band max"] - t["band min"])
    w1 = widths[widths["k"] == 1].sort_values("w").iloc[-1]
    wk = widths[widths["k"] == k_ref].sort_values("w").iloc[-1]
    with_paper = t[t["paper"].notna()]
    near = ((with_paper["paper"] >= with_paper["band min"] - 0.01)
            & (with_paper["paper"] <= with_paper["band max"] + 0.01))

    this_book = paragraph(
        run_line(datasets, described=("mmlu", "mteb", "merged"), details=details, quick=quick),
        lead_text,
        f"Entropy is above random in {above} of the {len(t)} (matrix, k) rows of the table.")
    differ = paragraph(
        "On a correlation matrix every diagonal entry is 1, so entropy's first pick is a tie, broken in the "
        "paper's code by floating-point rounding.",
        f"The range over tie-break rules spans up to {num(w1['w'])} of R² at k = 1 ({w1['matrix']}), so a single "
        f"entropy number depends on the rule.",
        f"{len(near[near])} of the {len(with_paper)} paper values in the table lie within 0.01 of that range."
        if len(with_paper) else "",
        "MMLU's cannot be expected to: this book's MMLU is the smaller matrix of chapter 1." if "mmlu" in datasets
        and len(with_paper[with_paper["matrix"] == "MMLU"]) else "")

    found = [
        paragraph(f"**Shape.** At {h} holdout entropy is above random in {above} of the {len(t)} (matrix, k) rows of the table; entropy's R² "
                  f"minus random's, averaged over the matrices, is {signed(margin.loc[min(margin.index)])} at k = "
                  f"{min(margin.index)} and {signed(margin.loc[max(margin.index)])} at k = {max(margin.index)}"
                  + (f" (largest at k = {k_best})." if k_best not in (min(margin.index), max(margin.index)) else "."),
                  _holdout_sentence(holdouts_r2, k_ref)),
        paragraph(f"**Ties.** The first entropy pick is a tie on a correlation matrix. At k = 1 the band over "
                  f"tie-break rules spans up to {num(w1['w'])} of R² ({w1['matrix']})"
                  + (f", and at k = {k_ref} up to {num(wk['w'])} ({wk['matrix']})" if k_ref != 1 else "")
                  + ", so a single entropy curve depends on how the tie is broken, in the paper's code by "
                    "floating-point rounding.",
                  "The library's default (`tie_break=\"auto\"`: the most central benchmark, i.e. the largest total "
                  "squared correlation with the rest) is one deterministic choice; `\"argmax\"` reproduces plain "
                  "`numpy.argmax`."),
    ]
    if "mmlu" in datasets and np.isclose(holdout, PAPER_HOLDOUT):
        mm = t[(t["matrix"] == "MMLU") & t["paper"].notna()]
        if len(mm):
            found.append("**MMLU.** This book's MMLU matrix is the smaller one of chapter 1 (the public Open LLM "
                         "Leaderboard v1 results), so the correlation is estimated from far fewer models: entropy "
                         "reaches " + ", ".join(f"{num(r.entropy)} at k = {r.k} (paper {num(r.paper)})"
                                                 for r in mm.itertuples()) + ".")
    mg = t[(t["matrix"] == "Merged") & (t["k"] == 15) & t["paper"].notna()]
    if len(mg):
        r = mg.iloc[0]
        inside = r["band min"] - 0.01 <= r["paper"] <= r["band max"] + 0.01
        found.append(f"**Merged.** The paper's Merged value ({num(r['paper'])} at k = 15) lies "
                     f"{'within 0.01 of' if inside else 'outside'} the range spanned by the tie-break rules "
                     f"({range_text(r['band min'], r['band max'], '.3f')}).")
    return PageProse(list(datasets), {"this_book": this_book, "differ": differ, "table_md": table_md,
                                      "figures_md": figure_caption(holdouts=holdouts, holdout=holdout,
                                                                   n_folds=n_folds, tie_breaks=tie_breaks),
                                      "findings": paragraph(lead_text) + "\n\n" + bullets(found)})

