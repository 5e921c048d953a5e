"""Chapter 6: selection order and stability (Appendix F, Figures 9-11)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from ..prose import PageProse, bullets, code, count, label, paragraph, pct, run_line

__all__ = ["PAPER_NAMED", "figure_caption", "first_picks_table", "paper_named_table", "prose", "tolerance_table"]

#: Appendix F, MI selection: benchmarks the paper names, with what it says about them.
PAPER_NAMED: dict[str, dict[str, str]] = {
    "mmlu": {"miscellaneous": "first in 10/10"},
    "mteb": {"MassiveIntentClassification": "selected in 10/10"},
    "merged": {"arena_hard/score": "first in 10/10", "helm/NarrativeQA": "8/10", "open_llm/MUSR": "8/10",
               "open_llm/IFEval": "7/10"}}
METHODS = ("entropy", "mi")
METHOD_NAMES = {"entropy": "entropy", "mi": "MI"}


def first_picks_table(positions: Mapping[tuple[str, str], pd.DataFrame],
                      stability: Mapping[tuple[str, str], pd.DataFrame], *, n_folds: int, top: int) -> pd.DataFrame:
    """Per (matrix, method): the most common first pick, in how many folds, and the always-top benchmarks."""
    rows = []
    for (name, meth), p in positions.items():
        first = p[p["position"] == 1]["benchmark"].value_counts()
        st = stability[name, meth]
        always = st[st["folds_in_top"] == n_folds].index.tolist()
        rows.append({"matrix": label(name), "method": meth, "most common first pick": first.index[0],
                     "folds": int(first.iloc[0]), "of": n_folds, "distinct first picks": int(first.size),
                     f"in top {top} in every fold": len(always), "examples": ", ".join(always[:4])})
    return pd.DataFrame(rows)


def paper_named_table(positions: Mapping[tuple[str, str], pd.DataFrame],
                      stability: Mapping[tuple[str, str], pd.DataFrame], *, datasets: Sequence[str],
                      top: int) -> pd.DataFrame:
    """The benchmarks Appendix F names for MI: in how many folds they are first and among the first ``top``."""
    rows = []
    for name in datasets:
        st = stability[name, "mi"]
        firsts = positions[name, "mi"].query("position == 1")["benchmark"]
        for b, paper in PAPER_NAMED.get(name, {}).items():
            if b in st.index:
                rows.append({"matrix": label(name), "benchmark": b, "paper": paper,
                             "mean MI position": st.loc[b, "mean_position"], "first in folds": int((firsts == b).sum()),
                             f"folds in top {top}": int(st.loc[b, "folds_in_top"])})
    return pd.DataFrame(rows, columns=["matrix", "benchmark", "paper", "mean MI position", "first in folds",
                                       f"folds in top {top}"])


def tolerance_table(by_tol: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """MI's first pick per fold and tolerance (``selections_by_tolerance``), and the EM iterations per tolerance."""
    by_tol = by_tol.assign(first_pick=by_tol["selected"].map(lambda sel: sel[0]))
    picks = by_tol.pivot(index="fold", columns="tol", values="first_pick").sort_index(axis=1, ascending=False)
    iters = by_tol.groupby("tol")["em_iterations"].agg(["min", "max"])
    return picks, iters


def figure_caption(*, n_folds: int, top: int, holdout: float) -> str:
    """Caption of Figures 9-11 for this run."""
    return (f"Selection position of each benchmark in each of the {count(n_folds, 'fold')} at {pct(holdout)} holdout "
            f"(blue dots), its mean position (red diamond) and, in the right margin, the number of folds in which it "
            f"is among the first {top} picks (dotted line).")


def _tolerance_sentence(picks: pd.DataFrame, iters: pd.DataFrame, dataset: str) -> str:
    lines = []
    for t in picks.columns:
        counts = picks[t].value_counts()
        lo, hi = int(iters.loc[t, "min"]), int(iters.loc[t, "max"])
        lines.append(f"at tolerance {t:g} ({lo if lo == hi else f'{lo}-{hi}'} EM iterations) "
                     + ", ".join(f"{code(b)} in {c} of {len(picks)} folds" for b, c in counts.items()))
    return f"MI's first pick on {label(dataset)}: " + "; ".join(lines) + "."


def prose(
    *,
    first_picks: pd.DataFrame,
    named: pd.DataFrame,
    tolerance: tuple[pd.DataFrame, pd.DataFrame] | None,
    datasets: Sequence[str],
    tolerance_dataset: str,
    tie_break: str,
    holdout: float,
    k_max: int,
    n_folds: int,
    top: int,
    seed: int,
    quick: bool,
) -> PageProse:
    """The page's passages, written from the tables of this run.

    Parameters
    ----------
    first_picks, named : DataFrame
        :func:`first_picks_table` and :func:`paper_named_table`.
    tolerance : tuple of DataFrame or None
        :func:`tolerance_table` of the EM-tolerance comparison, None when it was not run.
    datasets, tolerance_dataset, tie_break, holdout, k_max, n_folds, top, seed, quick :
        The run's parameters.

    Returns
    -------
    PageProse
        Passages ``this_book``, ``differ``, ``named_md``, ``tolerance_md``, ``findings``.
    """
    fp = first_picks.set_index(["matrix", "method"])
    details = [f"{pct(holdout)} holdout", count(n_folds, "fold"), f"k = 1-{k_max}", f"top {top}", f"seed {seed}",
               f"entropy tie rule {code(tie_break)}"]

    def picks(name: str) -> str:
        parts = []
        for meth in METHODS:
            r = fp.loc[(label(name), meth)]
            parts.append(f"{METHOD_NAMES[meth]} picks {code(r['most common first pick'])} first in {r['folds']} of "
                         f"{n_folds} folds")
        return f"on {label(name)} " + " and ".join(parts)

    lead = "; ".join(picks(n) for n in datasets)
    lead = lead[:1].upper() + lead[1:] + "."
    tol_md = (_tolerance_sentence(*tolerance, tolerance_dataset) if tolerance is not None else
              "The tolerance comparison was not run with these parameters (`strict_tol`, `tolerance_dataset`).")

    nm = named.set_index(["matrix", "benchmark"]) if len(named) else named
    named_parts = []
    if "merged" in datasets:
        mrows = named[named["matrix"] == "Merged"].set_index("benchmark")
        if "arena_hard/score" in mrows.index:
            a = mrows.loc["arena_hard/score"]
            later = [f"{code(b)} {int(r[f'folds in top {top}'])}/{n_folds}" for b, r in mrows.iloc[1:].iterrows()]
            named_parts.append(
                f"On Merged MI picks `arena_hard/score` first in {int(a['first in folds'])} of {n_folds} folds "
                f"(paper: 10 of 10)" + (f"; the three benchmarks the paper sees frequently later are among the first "
                                        f"{top} picks in: {', '.join(later)} (paper: 8/10, 8/10, 7/10)." if later else "."))
    if "mteb" in datasets and ("MTEB", "MassiveIntentClassification") in getattr(nm, "index", []):
        r = nm.loc[("MTEB", "MassiveIntentClassification")]
        named_parts.append(f"On MTEB MI has `MassiveIntentClassification` among its first {top} picks in "
                           f"{int(r[f'folds in top {top}'])} of {n_folds} folds (paper: selected in 10/10, mean rank "
                           f"2.9; here mean position {r['mean MI position']:.1f}).")
    if "mmlu" in datasets and ("MMLU", "miscellaneous") in getattr(nm, "index", []):
        r = nm.loc[("MMLU", "miscellaneous")]
        named_parts.append(f"On MMLU MI picks `miscellaneous` first in {int(r['first in folds'])} of {n_folds} folds "
                           f"(paper: all 10).")
    named_md = paragraph(*named_parts) if named_parts else (
        "This run has no matrix for which Appendix F names benchmarks." if not len(named) else "")

    this_book = paragraph(run_line(datasets, described=("mmlu", "mteb", "merged"), details=details, quick=quick),
                          lead, named_md)
    differ = paragraph(
        "On Merged, MI's first pick depends on where EM stops in each training split, a threshold the paper's text "
        "leaves open: " + tol_md if tolerance is not None and tolerance_dataset == "merged" else
        (tol_md if tolerance is not None else ""),
        "Entropy's first pick is a tie, so its stability says as much about the tie rule as about the data.",
        "MMLU is the smaller matrix of chapter 1, so later positions can move more between folds than in the "
        "paper's Figure 9." if "mmlu" in datasets else "")

    found = []
    for name in datasets:
        head = {"mmlu": "**MMLU** (paper: MI picks `miscellaneous` first in all folds).",
                "mteb": "**MTEB** (paper: MI selects MassiveIntentClassification in 10/10 folds).",
                "merged": "**Merged** (paper, Appendix F: MI picks `arena_hard/score` first in all 10 folds, with "
                          "`helm/NarrativeQA`, `open_llm/MUSR` and `open_llm/IFEval` appearing frequently later).",
                "benchpress": "**BenchPress** (the paper shows no selection order for it)."}[name]
        text = paragraph(head, picks(name)[:1].upper() + picks(name)[1:] + ".")
        if name == "mmlu":
            text = paragraph(text, "Our MMLU matrix has far fewer models than the paper's 5,452, so fold-to-fold noise "
                                   "in the correlation estimate is larger.")
        if name == "merged":
            text = paragraph(text, *[p for p in named_parts if p.startswith("On Merged")],
                             "This depends on a detail that the paper's text leaves open and its public code fixes: "
                             "EM in each training split stops when the relative change of Σ falls below 5 × 10⁻⁴ "
                             "(Appendix G gives the criterion, not the threshold).",
                             tol_md if tolerance is not None and tolerance_dataset == "merged" else "")
        if name == "mteb":
            text = paragraph(text, *[p for p in named_parts if p.startswith("On MTEB")])
        found.append(text)
    ent = [f"{label(n)} {fp.loc[(label(n), 'entropy'), 'folds']} of {n_folds}" for n in datasets]
    found.append(paragraph(
        f"**Entropy's first pick is a tie.** With `tie_break=\"{tie_break}\"` the most common first pick is chosen "
        f"in: {'; '.join(ent)} folds.",
        "With `\"auto\"` the first pick is the most central benchmark of each fold's training correlation, so it "
        "changes only when the estimated correlation does; with `\"argmax\"` it is decided by rounding, so entropy's "
        "first position, and the order that follows, can change between folds for no statistical reason."))
    return PageProse(list(datasets), {"this_book": this_book, "differ": differ, "named_md": named_md,
                                      "figures_md": figure_caption(n_folds=n_folds, top=top, holdout=holdout),
                                      "tolerance_md": tol_md, "findings": bullets(found)})

