"""Chapter 5: entropy versus mutual information (Section 5.4, Figures 5-7)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...protocol.summaries import top_residuals
from ...studies.bands import variant_range
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
    range_text,
    run_line,
)

__all__ = ["PAPER", "PAPER_MERGED", "crossover_table", "figure_captions", "first_pick_table", "gap_table", "merged_vs_paper",
           "min_observed_table", "prose", "trace_passage", "trace_table", "worst_fold"]

#: Section 5.4: MMLU at k = 1 (MI 0.83, entropy 0.65); Merged at k = 15 (MI 0.59, entropy 0.55).
PAPER: dict[tuple[str, int, str], float] = {("mmlu", 1, "mi"): 0.83, ("mmlu", 1, "entropy"): 0.65,
                                            ("merged", 15, "mi"): 0.59, ("merged", 15, "entropy"): 0.55}
#: Merged against the paper: Table 4 at k = 5 (Gaussian column), Section 5.4 at k = 15.
PAPER_MERGED: dict[int, dict[str, float]] = {5: {"entropy": 0.35, "mi": 0.51, "random": 0.53},
                                             15: {"entropy": 0.55, "mi": 0.59}}
PAPER_HOLDOUT = 0.1
METHOD_NAMES = {"entropy": "entropy", "mi": "MI", "random": "random"}
#: the subset sizes of the page's tables (those up to the run's ``k_max``)
TABLE_KS = (1, 3, 5, 10, 15)


def _at(s: pd.DataFrame, method: str, k: int, col: str = "r2_mean") -> float:
    return float(s[(s["method"] == method) & (s["k"] == k)][col].iloc[0])


def gap_table(summary: Mapping[str, pd.DataFrame], band: Mapping[str, pd.DataFrame], *, k_max: int,
              holdout: float) -> pd.DataFrame:
    """Per matrix and k: R^2 and residual variance of entropy and MI, the tie-break band, random, the paper's."""
    rows = []
    for name, s in summary.items():
        b = band[name].groupby("k")["r2_mean"].agg(["min", "max"])
        at_paper = np.isclose(holdout, PAPER_HOLDOUT)
        for k in [k for k in TABLE_KS if k <= k_max]:
            rows.append({"matrix": label(name), "k": k, "R2 entropy": _at(s, "entropy", k),
                         "band min": float(b.loc[k, "min"]), "band max": float(b.loc[k, "max"]),
                         "R2 MI": _at(s, "mi", k), "R2 random": _at(s, "random", k),
                         "resid. entropy": _at(s, "entropy", k, "residual_fraction_mean"),
                         "resid. MI": _at(s, "mi", k, "residual_fraction_mean"),
                         "paper entropy": PAPER.get((name, k, "entropy"), np.nan) if at_paper else np.nan,
                         "paper MI": PAPER.get((name, k, "mi"), np.nan) if at_paper else np.nan})
    return pd.DataFrame(rows)


def trace_table(summary: Mapping[str, pd.DataFrame], trace: Mapping[str, pd.DataFrame], *,
                k_max: int) -> pd.DataFrame:
    """Per matrix and k: mean R^2 and residual variance of entropy, MI and the greedy on the residual trace.

    ``trace`` maps each matrix of ``summary`` to the :func:`~benchsel_lib.summarize_cv` of the paper's
    pipeline with ``objective="trace"`` on the same folds.  The sizes are :data:`TABLE_KS` up to
    ``k_max``, as in :func:`gap_table`.  O(matrices x sizes x rows).
    """
    rows = []
    for name, s in summary.items():
        t = trace[name]
        for k in [k for k in TABLE_KS if k <= k_max]:
            rows.append({"matrix": label(name), "k": k, "R2 entropy": _at(s, "entropy", k), "R2 MI": _at(s, "mi", k),
                         "R2 trace": _at(t, "trace", k),
                         "resid. entropy": _at(s, "entropy", k, "residual_fraction_mean"),
                         "resid. MI": _at(s, "mi", k, "residual_fraction_mean"),
                         "resid. trace": _at(t, "trace", k, "residual_fraction_mean")})
    return pd.DataFrame(rows)


def trace_passage(table: pd.DataFrame) -> str:
    """What :func:`trace_table` shows, in counts over its (matrix, k) rows with k > 1. O(rows)."""
    rows = table[table["k"] > 1]
    if rows.empty:
        return "This run has no subset size above 1, so the three objectives are not compared."
    r2 = rows[["R2 entropy", "R2 MI", "R2 trace"]].to_numpy()
    res = rows[["resid. entropy", "resid. MI", "resid. trace"]].to_numpy()
    best = int((r2[:, 2] >= r2[:, :2].max(axis=1)).sum())
    above_mi = int((r2[:, 2] > r2[:, 1]).sum())
    lowest = int((res[:, 2] <= res[:, :2].min(axis=1)).sum())
    gain = (r2[:, 2] - r2[:, 1])[r2[:, 2] > r2[:, 1]]
    by = f" (by {range_text(float(gain.min()), float(gain.max()))})" if len(gain) else ""
    n = len(rows)
    return paragraph(
        f"Selecting with the total residual variance itself (objective `\"trace\"`) gives the highest mean R² of the "
        f"three objectives in {best} of the {n} (matrix, k) rows with k > 1, a higher one than MI in {above_mi}{by}, "
        f"and the lowest training residual variance in {lowest}.",
        "The paper's surrogate gap is then a gap between entropy and the objective it stands in for: the greedy on "
        "the residual trace both leaves less residual variance and predicts the held-out models better."
        if best == n and lowest == n else "")


def crossover_table(summary: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per matrix: the smallest k from which entropy's mean R^2 stays at or above MI's (NaN if never)."""
    def crossover(s: pd.DataFrame) -> float:
        e = s[s["method"] == "entropy"].set_index("k")["r2_mean"]
        m = s[s["method"] == "mi"].set_index("k")["r2_mean"]
        ahead = (e >= m.reindex(e.index)).to_numpy()
        for i, k in enumerate(e.index):
            if ahead[i:].all():
                return int(k)
        return np.nan

    return pd.DataFrame({"matrix": [label(n) for n in summary],
                         "crossover k (entropy >= MI from here on)": [crossover(s) for s in summary.values()]})


def merged_vs_paper(summary: pd.DataFrame, cv: pd.DataFrame, *, k_max: int, n_folds: int) -> dict[str, Any]:
    """Merged's mean R^2 and standard error at the paper's k (5, 15; those <= k_max) and MI's first picks."""
    out: dict[str, Any] = {"rows": []}
    for k, ref in PAPER_MERGED.items():
        if k > k_max:
            continue
        for meth, paper in ref.items():
            out["rows"].append({"k": k, "method": meth, "r2": _at(summary, meth, k),
                                "se": _at(summary, meth, k, "r2_sd") / np.sqrt(n_folds), "paper": paper})
    firsts = cv.query("method == 'mi' and k == 1")["selected"].map(lambda sel: sel[0]).value_counts()
    out["first_pick"], out["first_pick_folds"], out["n_folds"] = str(firsts.index[0]), int(firsts.iloc[0]), int(firsts.sum())
    return out


def first_pick_table(summary: Mapping[str, pd.DataFrame], first_pick: Mapping[str, pd.DataFrame],
                     first_pick_folds: Mapping[str, pd.DataFrame], *, k_max: int) -> pd.DataFrame:
    """The range of entropy's R^2 over forced first picks at k = min(5, k_max) and min(15, k_max)."""
    rows = []
    for name in first_pick:
        for k in dict.fromkeys((min(5, k_max), min(15, k_max))):
            mean_rng = variant_range(first_pick[name], k=k).iloc[0]
            fold_rng = variant_range(first_pick_folds[name], k=k).iloc[0]
            rows.append({"matrix": label(name), "k": k, "first picks": int(mean_rng["n_variants"]),
                         "R2 default rule": _at(summary[name], "entropy", k),
                         "mean R2 min": mean_rng["min"], "worst first pick": mean_rng["lo_variant"],
                         "mean R2 max": mean_rng["max"], "best first pick": mean_rng["hi_variant"],
                         "fold R2 min": fold_rng["min"], "fold R2 max": fold_rng["max"]})
    return pd.DataFrame(rows)


def worst_fold(cv: pd.DataFrame, matrix: Any) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """MI's worst fold at the largest k: its numbers, its largest residual entries and its selection's coverage."""
    last = cv[(cv["method"] == "mi") & (cv["k"] == cv["k"].max())]
    worst = int(last.loc[last["r2"].idxmin(), "fold"])
    counts = dict(zip(matrix.benchmarks, matrix.observed_counts(axis=0)))
    tops = top_residuals(cv)
    tops = tops[(tops["method"] == "mi") & (tops["fold"] == worst) & (tops["k"] == cv["k"].max())]
    tops = tops.assign(models_observing=tops["benchmark"].map(counts))
    sel = last.loc[last["fold"] == worst, "selected"].iloc[0]
    thin = pd.DataFrame({"pick": range(1, len(sel) + 1), "benchmark": sel,
                         "models observing (whole matrix)": [counts[b] for b in sel]})
    info = {"fold": worst, "k": int(cv["k"].max()), "r2": float(last["r2"].min()),
            "r2_without": float(last.loc[last["fold"] != worst, "r2"].mean()) if len(last) > 1 else np.nan,
            "thinnest_pick": int(min(counts[b] for b in sel))}
    return info, tops[["rank", "model", "benchmark", "sq_residual", "share", "models_observing"]], thin


def min_observed_table(base: pd.DataFrame, filtered: pd.DataFrame, *, k_max: int, min_observed: int) -> pd.DataFrame:
    """Mean R^2 of MI and entropy with and without the ``min_observed`` candidate filter."""
    rows = []
    for meth in ("mi", "entropy"):
        for k in [k for k in (1, 5, 10, 15) if k <= k_max]:
            b = filtered[(filtered["method"] == meth) & (filtered["k"] == k)]
            rows.append({"method": meth, "k": k, "R2 no filter": _at(base, meth, k),
                         "R2 sd no filter": _at(base, meth, k, "r2_sd"),
                         f"R2 min_observed={min_observed}": float(b["r2_mean"].iloc[0]) if len(b) else np.nan,
                         f"R2 sd min_observed={min_observed}": float(b["r2_sd"].iloc[0]) if len(b) else np.nan})
    return pd.DataFrame(rows)


def figure_captions(*, holdout: float, n_folds: int, tie_breaks: Sequence[str], first_pick: Mapping[str, pd.DataFrame],
                    n_first_picks: int | None, n_benchmarks: Mapping[str, int]) -> dict[str, str]:
    """Captions of Figures 5-7 and of the forced-first-pick figures for this run."""
    rules = ", ".join(f"`{t}`" for t in tie_breaks)
    figures = paragraph(
        f"At {pct(holdout)} holdout; shaded: ±1 sd across the {count(n_folds, 'fold')}.",
        f"Blue: greedy entropy (default tie rule; hatched: the range of its mean R² over the tie-break rules {rules}); "
        "red: greedy MI; gray dashed: random.")
    picks = "; ".join(f"{label(n)}: {int(b['variant'].nunique())} of its {n_benchmarks[n]} benchmarks"
                      for n, b in first_pick.items())
    which = ("every benchmark in turn" if n_first_picks is None else
             f"a seeded sample of {count(n_first_picks, 'benchmark')} (parameter `n_first_picks`)")
    first = paragraph(
        f"Here {which} is forced as the first pick" + (f" ({picks})" if picks else "") + ", and greedy entropy "
        "continues from it (`first_pick_band`, i.e. `cross_validate` of "
        "`Pipeline.paper(objective=\"entropy\", initial=(b,))`; the folds and training correlations are those of "
        "the runs above).",
        "Hatched: the min-max range, over forced first picks, of the mean R² across folds; blue: entropy with the "
        "default tie rule; red: MI; gray dashed: random.",
        "The table lists the range at two subset sizes, the first picks at its ends, and the range of the "
        "single-fold R² over all first picks and folds.")
    return {"figures_md": figures, "first_pick_caption_md": first}


def _merged_sentence(mv: Mapping[str, Any]) -> str:
    by_k: dict[int, list[str]] = {}
    for r in mv["rows"]:
        by_k.setdefault(r["k"], []).append(f"{METHOD_NAMES[r['method']]} {num(r['r2'])} ± {num(r['se'])} (paper {num(r['paper'])})")
    parts = [f"at k = {k}: " + ", ".join(v) for k, v in by_k.items()]
    text = "On Merged (mean R² ± standard error over folds) " + "; ".join(parts) + "." if parts else ""
    return paragraph(text, f"MI's first pick is {code(mv['first_pick'])} in {mv['first_pick_folds']} of "
                           f"{mv['n_folds']} folds.")


def prose(
    *,
    gap: pd.DataFrame,
    crossover: pd.DataFrame,
    first_picks: pd.DataFrame,
    merged: Mapping[str, Any] | None,
    worst: Mapping[str, Any],
    min_obs: pd.DataFrame,
    datasets: Sequence[str],
    perfold_dataset: str,
    first_pick_datasets: Sequence[str],
    holdout: float,
    k_max: int,
    n_folds: int,
    seed: int,
    min_observed: int,
    estimator: str,
    quick: bool,
    trace: pd.DataFrame | None = None,
) -> PageProse:
    """The page's passages, written from the tables of this run.

    Parameters
    ----------
    gap, crossover, first_picks, min_obs : DataFrame
        :func:`gap_table`, :func:`crossover_table`, :func:`first_pick_table`, :func:`min_observed_table`.
    merged : mapping or None
        :func:`merged_vs_paper` when Merged was run.
    worst : mapping
        The first item of :func:`worst_fold` (for ``perfold_dataset``).
    trace : DataFrame, optional
        :func:`trace_table`; its passage is ``trace_md`` and a finding.
    datasets : list of str
        Every matrix of the run (the per-fold and first-pick matrices included).
    perfold_dataset, first_pick_datasets, holdout, k_max, n_folds, seed, min_observed, estimator, quick :
        The run's parameters.

    Returns
    -------
    PageProse
        Passages ``this_book``, ``differ``, ``merged_md``, ``first_pick_md``, ``worst_md``, ``min_observed_md``,
        ``trace_md`` (with ``trace``), ``findings``.
    """
    h = pct(holdout)
    trace_md = trace_passage(trace) if trace is not None else ""
    details = [f"{h} holdout", count(n_folds, "fold"), f"k = 1-{k_max}", f"seed {seed}"]
    if estimator != "auto":
        details.append(f"correlation estimator {code(estimator)}")
    g = gap
    k1 = g[g["k"] == 1]
    at_paper = np.isclose(holdout, PAPER_HOLDOUT)
    lead = "; ".join(
        f"on {r['matrix']} MI reaches R² = {num(r['R2 MI'])} and entropy (default tie rule) {num(r['R2 entropy'])}"
        + (" (the paper: 0.83 vs 0.65)" if r["matrix"] == "MMLU" and at_paper else "")
        for _, r in k1.iterrows())
    lead = f"At {h} holdout and k = 1, {lead}."
    small = g[(g["k"] > 1) & (g["k"] <= 5)]
    mi_ahead = small["R2 MI"] > small["R2 entropy"]
    mi_lower = small["resid. MI"] < small["resid. entropy"]
    n_gap = int((mi_ahead & ~mi_lower).sum())
    gap_sentence = (f"Both halves of the surrogate-gap explanation (entropy with the lower training residual "
                    f"variance and MI with the higher held-out R²) hold in {n_gap} of the {len(small)} (matrix, k) rows "
                    f"with 1 < k ≤ 5; MI has the higher R² in {int(mi_ahead.sum())} of them and the lower residual "
                    f"variance in {int(mi_lower.sum())}." if len(small) else
                    "This run has no subset size between 2 and 5, so the surrogate gap is not tested.")
    cross = "; ".join(f"{r[0]} from k = {int(r[1])}" if np.isfinite(r[1]) else f"{r[0]} never within k ≤ {k_max}"
                      for r in crossover.itertuples(index=False))
    merged_md = _merged_sentence(merged) if merged is not None else ""

    fp = []
    for name in first_pick_datasets:
        rows = first_picks[first_picks["matrix"] == label(name)].sort_values("k")
        first, last = rows.iloc[0], rows.iloc[-1]
        text = (f"on {label(name)} ({count(int(first['first picks']), 'forced first pick')}) the mean R² at k = "
                f"{int(first['k'])} spans {range_text(first['mean R2 min'], first['mean R2 max'])} (default tie "
                f"rule {num(first['R2 default rule'])}) and single folds span "
                f"{range_text(first['fold R2 min'], first['fold R2 max'])}")
        if len(rows) > 1:
            w0, w1 = first["mean R2 max"] - first["mean R2 min"], last["mean R2 max"] - last["mean R2 min"]
            text += (f"; at k = {int(last['k'])} the mean spans {range_text(last['mean R2 min'], last['mean R2 max'])}, so the "
                     f"range {'narrows' if w1 < w0 else 'does not narrow'} with k ({num(w0)} to {num(w1)})")
        fp.append(text)
    first_pick_md = paragraph(cap("; ".join(fp)) + "." if fp else "")

    wk = worst
    worst_md = paragraph(
        f"On {label(perfold_dataset)} MI's worst fold at k = {wk['k']} is fold {wk['fold']}, at R² = {num(wk['r2'])}"
        + (f"; without it MI averages {num(wk['r2_without'])}." if np.isfinite(wk["r2_without"]) else "."),
        f"Its selection includes a benchmark observed for only {count(wk['thinnest_pick'], 'model')} in the whole "
        f"matrix." if wk["thinnest_pick"] < 20 else "")
    mo = min_obs[min_obs["method"] == "mi"].sort_values("k").iloc[-1]
    filt = mo[f"R2 min_observed={min_observed}"]
    min_observed_md = ((f"Requiring {min_observed} observing training models leaves MI's mean R² at k = {int(mo['k'])} "
                        f"on {label(perfold_dataset)} at {num(filt)}." if num(filt) == num(mo["R2 no filter"]) else
                        f"Requiring {min_observed} observing training models moves MI's mean R² at k = {int(mo['k'])} "
                        f"on {label(perfold_dataset)} from {num(mo['R2 no filter'])} to {num(filt)}.")
                       if np.isfinite(filt) else
                       f"With `min_observed` = {min_observed} no candidate is left at k = {int(mo['k'])} on "
                       f"{label(perfold_dataset)}.")

    this_book = paragraph(run_line(datasets, described=("mmlu", "mteb", "merged"), details=details, quick=quick),
                          lead, gap_sentence, merged_md)
    band1 = "; ".join(f"{r['matrix']} {range_text(r['band min'], r['band max'])}" for _, r in k1.iterrows())
    differ = paragraph(
        "Entropy's first pick is a tie on a correlation matrix: the paper's 0.65 is one arbitrary first pick, and "
        f"the gap at k = 1 depends on the tie rule (entropy's R² at k = 1 over the tie rules run: {band1}).",
        "Forcing each possible first pick moves entropy's whole curve (" + "; ".join(fp) + "), so a comparison of "
        "objectives at small k is only as good as the tie rule behind it." if fp else "",
        "MMLU is the smaller matrix of chapter 1." if "mmlu" in datasets else "")

    found = [
        paragraph(f"**The surrogate gap** depends on the tie. {gap_sentence}",
                  "Entropy's first step is a tie on a correlation matrix; the default tie rule (`\"auto\"`, the most "
                  "central benchmark) is one way out of it and the `\"argmax\"`/`\"index\"` rules (the paper's "
                  f"code path) are others: entropy's R² at k = 1 spans {band1} over the tie rules run.",
                  f"Entropy's mean R² stays at or above MI's from: {cross}."),
        paragraph("**The first pick alone** moves entropy's curve:", first_pick_md,
                  "A comparison of objectives at small k is therefore only as good as the tie rule behind it.")
        if fp else "",
        "**MMLU** here is the smaller matrix of chapter 1, not the paper's 5,452 models, so absolute values differ."
        if "mmlu" in datasets else "",
        paragraph("**Merged against the paper.**", merged_md,
                  "These numbers rest on details that the paper's text leaves open and its public code fixes: EM in "
                  "each training split stops when the relative change of Σ falls below 5 × 10⁻⁴ (Appendix G names "
                  "the criterion but not the threshold), standard deviations divide by n − 1, and a validation model "
                  "that has none of the selected benchmarks is not scored. Chapter 6 shows how MI's first pick "
                  "moves when EM runs to a tighter tolerance." if estimator in ("auto", "em") else
                  f"This run estimates the correlations with {code(estimator)}, not the paper's EM, so the "
                  f"comparison with the paper's values is only indicative.") if merged is not None else "",
        paragraph(f"**The worst fold** ({label(perfold_dataset)}). {worst_md}",
                  "A selected or predicted column that only a handful of models have run carries a correlation "
                  "estimated from those few, and a single validation model can then dominate a fold's residual."
                  if wk["thinnest_pick"] < 20 else ""),
        paragraph(f"**`min_observed`.** {min_observed_md}", "The paper uses no filter, which is the library's default."),
        paragraph(f"**A third objective.** {trace_md}") if trace_md else "",
    ]
    return PageProse(list(datasets), {"this_book": this_book, "differ": differ, "merged_md": merged_md or
                                      "Merged was not run (parameter `datasets`).", "first_pick_md": first_pick_md or
                                      "No forced-first-pick band was run (parameter `first_pick_datasets`).",
                                      "worst_md": worst_md, "min_observed_md": min_observed_md,
                                      **({"trace_md": trace_md} if trace_md else {}),
                                      "findings": paragraph(lead) + "\n\n" + bullets(found)})

